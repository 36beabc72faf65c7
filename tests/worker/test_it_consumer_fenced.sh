#!/usr/bin/env bash
# test_it_consumer_fenced.sh - a fatal error of a sink's Kafka consumer fails
# its task (as it fails a Connect task), with what happened and what to do,
# instead of leaving it RUNNING while it reads nothing (found by the kill
# schedules of issue 16: a restarted static member fenced after a broker
# restart logged one ERROR line and then read nothing, still RUNNING).
#
# Provoked as Kafka documents it (KIP-345, static membership): two workers
# whose sink consumers join one group with the same group.instance.id. The
# second join replaces the first member; the first one's next request is
# answered FENCED_INSTANCE_ID, which librdkafka makes a fatal error. The
# first worker's task must then be FAILED, its trace naming
# FENCED_INSTANCE_ID and the group.instance.id, while the second one reads on:
# a record produced after the fence is in the second worker's table.
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
wait_until 60 "worker a's task to fail once its member was replaced" task_is a FAILED
status a > "$T/a.status"
python3 - "$T/a.status" <<'P' || fail "worker a's failed task does not say what happened: $(cat "$T/a.status")"
import json, sys
t = json.load(open(sys.argv[1]))["tasks"][0]
trace = t.get("trace", "")
assert "FENCED_INSTANCE_ID" in trace, trace
assert "group.instance.id" in trace, trace
assert "restart" in trace, trace  # what to do
P
echo "ok: worker a's task FAILED: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tasks"][0]["trace"].splitlines()[0])' "$T/a.status")"
task_is b RUNNING || fail "worker b's task is not RUNNING: $(status b)"
grep -q "ERROR.*fatal" "$T/a.log" || fail "worker a logged no ERROR for the fatal error: $(tail -5 "$T/a.log")"
# the replacing member reads on: a record produced after the fence reaches its table
before=$(rows b)
json_rows 1 | head -1 | sed 's/"id":1\([,}]\)/"id":900\1/g' | kcat -P -b "$BS" -t "$TOPIC" -K '|'
wait_until 30 "worker b to apply a record produced after the fence" has_rows b "id = 900"
echo "ok: worker b read on (its rows: ${before:-none} before, $(rows b) after)"
