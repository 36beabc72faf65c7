#!/usr/bin/env bash
# test_it_consumer_fenced.sh - a sink whose Kafka consumer is fenced
# (FENCED_INSTANCE_ID, a fatal librdkafka error: its static member,
# group.instance.id, was replaced) writes what it had, joins the group again
# with a new consumer and reads on; and when the fences go on (another
# member really uses the id), its task fails, saying so, instead of staying
# RUNNING while it reads nothing (found by the kill schedules of issue 16:
# after a broker restart a lone static member was fenced, logged one ERROR
# line and read nothing more, still RUNNING).
#
# Provoked as Kafka documents it (KIP-345, static membership): two workers
# whose sink consumers join one group with the same group.instance.id. Each
# join replaces the other member; the replaced one's next request is
# answered FENCED_INSTANCE_ID. Each rejoins (a WARN saying so), up to 3
# times in 10 minutes; the 4th fence fails its task: then one worker's task
# is FAILED, its trace naming FENCED_INSTANCE_ID, the id and what to do, no
# ERROR but that failure in its log, and the other one is RUNNING and reads
# on: a record produced after that is in its table.
set -euo pipefail
CLI=${CF_CLI:?CF_CLI is the cdcflow binary}
T=$(mktemp -d /tmp/cf_fenced.XXXXXX)
trap 'kill -9 $(jobs -p) 2>/dev/null || true; [[ -n ${KEEP:-} ]] || rm -rf "$T"' EXIT
source "$(dirname "$0")/stop_lib.sh"
need_env CF_TEST_KAFKA
BS=$CF_TEST_KAFKA
TOPIC=fenced-$$-$(date +%s)
TABLE=${TOPIC//-/_}
NAME=fenced$$ # the group connect-$NAME is this run's
produce "$BS" "$TOPIC" 2
for w in a b; do
    worker_props "$T/$w.properties" "$BS" "consumer.group.instance.id=fenced_$$" "consumer.session.timeout.ms=10000"
    sink_json "$T/$w.json" $NAME "$TOPIC" ",\"sqlite.path\":\"$T/$w.db\""
done
status() { curl -s "http://127.0.0.1:$(cat "$T/$1.port")/connectors/$NAME/status"; }
task_is() { status "$1" | python3 -c "import json,sys; sys.exit(json.load(sys.stdin)['tasks'][0]['state'] != '$2')"; }
assigned() { grep -q "partitions assigned" "$T/$1.log"; }
rows() { sqlite3 "$T/$1.db" "SELECT count(*) FROM \"$TABLE\"${2:+ WHERE $2}" 2>/dev/null || true; }
has_rows() { local n; n=$(rows "$@"); [[ -n $n && $n -gt 0 ]]; } # has_rows WORKER [WHERE]
start_worker a --worker "$T/a.properties" "$T/a.json"
wait_until 60 "worker a's consumer to get its partition" assigned a
wait_until 30 "worker a to apply the first records" has_rows a
start_worker b --worker "$T/b.properties" "$T/b.json"
wait_until 60 "worker b's consumer to get the partition" assigned b
one_failed() { task_is a FAILED || task_is b FAILED; }
wait_until 150 "one of the two tasks to fail after its fences" one_failed
if task_is a FAILED; then f=a ok=b; else f=b ok=a; fi
status $f > "$T/f.status"
python3 - "$T/f.status" <<'P' || fail "the failed task does not say what happened: $(cat "$T/f.status")"
import json, sys
t = json.load(open(sys.argv[1]))["tasks"][0]
trace = t.get("trace", "")
assert "FENCED_INSTANCE_ID" in trace, trace
assert "another consumer uses this group.instance.id" in trace, trace
assert "restart" in trace, trace  # what to do
P
echo "ok: worker $f's task FAILED: $(python3 -c 'import json,sys; print(" / ".join(json.load(open(sys.argv[1]))["tasks"][0]["trace"].splitlines()[:2]))' "$T/f.status")"
n=$(grep -c "a new consumer joins the group" "$T/$f.log" || true)
[[ $n == 3 ]] || fail "worker $f rejoined $n times before it failed (3 expected): $(grep -i fence "$T/$f.log" | tail -5)"
echo "ok: worker $f joined again 3 times, then failed"
errs=$(grep " ERROR " "$T/$f.log" | grep -v "task .* failed\|HINT" || true)
[[ -z $errs ]] || fail "worker $f logged other ERRORs: $errs"
task_is $ok RUNNING || fail "worker $ok's task is not RUNNING: $(status $ok)"
# the member left reads on: a record produced now reaches its table
before=$(rows $ok)
json_rows 1 | head -1 | sed 's/"id":1\([,}]\)/"id":900\1/g' | kcat -P -b "$BS" -t "$TOPIC" -K '|'
wait_until 60 "worker $ok to apply a record produced after that" has_rows $ok "id = 900"
echo "ok: worker $ok read on (its rows: ${before:-none} before, $(rows $ok) after)"
