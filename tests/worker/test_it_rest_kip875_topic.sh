#!/usr/bin/env bash
# test_it_rest_kip875_topic.sh - KIP-875's DELETE and PATCH of a stopped
# source's offsets when they live in the offsets topic (Connect's format), on
# the shared broker: the changes are written to the topic as Connect writes
# them (a removed partition is a tombstone: its key with a null value, read
# with kcat, not our code), so a new worker on that topic does not find them
# and the files are read again; the records go to Kafka and the active
# topics name the one they went to.
set -euo pipefail
: "${CF_TEST_KAFKA:?CF_TEST_KAFKA not set: start the servers with scripts/servers start}"
T=$(mktemp -d /tmp/cf_it_kip875.XXXXXX)
source "$(dirname "$0")/rest_lib.sh"
J='Content-Type: application/json'
OT="cdcflow-it-kip875-offsets-$$-$RANDOM"
TOPIC="cdcflow-it-kip875-rows-$$-$RANDOM"
mkdir -p "$T/in"
printf '{"n":1}\n{"n":2}\n' > "$T/in/a.jsonl"
printf '{"n":3}\n' > "$T/in/b.jsonl"

# start_worker DIR: a worker on the broker, offsets in $OT (rest_start always
# sets a file), REST on a free port
start_worker() {
    local dir=$1
    mkdir -p "$dir"
    printf 'bootstrap.servers=%s\noffset.storage.topic=%s\noffset.storage.partitions=3\noffset.flush.interval.ms=100\nlisteners=http://127.0.0.1:0\n' \
        "$CF_TEST_KAFKA" "$OT" > "$dir/w.properties"
    (cd "$dir" && exec "$CLI" run --rest --worker w.properties < /dev/null > "$dir/out.txt" 2> "$dir/err.txt") &
    WPID=$!
    PORT=
    for _ in $(seq 200); do
        PORT=$(grep -o 'REST API on http://[^ ]*:[0-9]*' "$dir/err.txt" 2>/dev/null | grep -o '[0-9]*$' || true)
        [ -n "$PORT" ] && break
        kill -0 "$WPID" 2>/dev/null || fail "worker exited: $(cat "$dir/err.txt")"
        sleep 0.1
    done
    [ -n "$PORT" ] || fail "no REST port: $(cat "$dir/err.txt")"
    BASE=http://127.0.0.1:$PORT
}
create_src() {
    local c
    c=$(code POST /connectors -H "$J" --data "{\"name\":\"src\",\"config\":{\"connector.class\":\"files\",\"files.path\":\"$T/in\",\"topic\":\"$TOPIC\",\"input.format\":\"jsonl\",\"files.min.age.ms\":\"0\",\"key.converter\":\"string\",\"value.converter\":\"json\",\"value.converter.schemas.enable\":\"false\"}}")
    [ "$c" = 201 ] || fail "create src: $c $(cat "$T/body")"
}
# records in $TOPIC (kcat)
count() { kcat -C -b "$CF_TEST_KAFKA" -t "$TOPIC" -e -q -f '%s\n' 2>/dev/null | grep -c '"n"' || true; }
wait_count() {
    for _ in $(seq 150); do
        [ "$(count)" = "$1" ] && return 0
        sleep 0.2
    done
    fail "$TOPIC holds $(count) records, expected $1"
}

start_worker "$T/w1"
create_src
wait_count 3
curl -s "$BASE/connectors/src/topics" > "$T/topics.json"
python3 -c 'import json,sys; assert json.load(open(sys.argv[1])) == {"src": {"topics": [sys.argv[2]]}}' "$T/topics.json" "$TOPIC" ||
    fail "active topics: $(cat "$T/topics.json")"
c=$(code PUT /connectors/src/stop)
[ "$c" = 204 ] || fail "stop: $c $(cat "$T/body")"
c=$(code GET /connectors/src/offsets)
python3 -c 'import json,sys; b=json.load(open(sys.argv[1])); assert len(b["offsets"]) == 2, b' "$T/body" || fail "offsets before: $(cat "$T/body")"
# PATCH: b.jsonl removed; then DELETE: everything
c=$(code PATCH /connectors/src/offsets -H "$J" --data '{"offsets":[{"partition":{"path":"b.jsonl"},"offset":null}]}')
[ "$c" = 200 ] || fail "PATCH: $c $(cat "$T/body")"
c=$(code GET /connectors/src/offsets)
python3 -c 'import json,sys; b=json.load(open(sys.argv[1])); assert [o["partition"] for o in b["offsets"]] == [{"path": "a.jsonl"}], b' "$T/body" ||
    fail "offsets after PATCH: $(cat "$T/body")"
c=$(code DELETE /connectors/src/offsets)
[ "$c" = 200 ] || fail "DELETE: $c $(cat "$T/body")"
grep -q '"message":"The offsets for this connector have been reset successfully"' "$T/body" || fail "DELETE body: $(cat "$T/body")"
rest_stop
# the offsets topic, as kcat reads it: the last value of each src key is null (%S: -1)
kcat -C -b "$CF_TEST_KAFKA" -t "$OT" -e -q -f '%k\t%S\n' > "$T/ot.tsv" 2> "$T/kcat.err" || fail "kcat: $(cat "$T/kcat.err")"
python3 - "$T/ot.tsv" <<'PY' || fail "offsets topic: $(cat "$T/ot.tsv")"
import json, sys
last = {}
for line in open(sys.argv[1]):
    k, size = line.rstrip("\n").rsplit("\t", 1)
    last[k] = int(size)
src = {k: v for k, v in last.items() if json.loads(k)[0] == "src"}
assert set(json.loads(k)[1]["path"] for k in src) == {"a.jsonl", "b.jsonl"}, src
assert all(v == -1 for v in src.values()), src   # tombstones
PY
# a new worker on that offsets topic: no offsets for src, both files read again
start_worker "$T/w2"
create_src
wait_count 6
rest_stop
echo OK
