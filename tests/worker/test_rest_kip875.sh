#!/usr/bin/env bash
# test_rest_kip875.sh - Kafka Connect's KIP-875 endpoints and the active
# topics ones (issue 14, "Their REST API"), driven through curl with
# Connect's request shapes against a real `cdcflow run --rest --worker`.
# The oracle is Connect's ConnectorsResource, StandaloneHerder and Worker:
#   PUT    /connectors/{name}/stop      204 (a void resource method); status then
#          {"connector":{"state":"STOPPED"},"tasks":[]}, config kept; idempotent;
#          PUT .../resume starts it again (202), PUT .../pause starts it paused
#   PATCH  /connectors/{name}/offsets   {"offsets":[{"partition":{..},"offset":{..}|null}]}
#          -> 200 {"message": "The offsets for this connector have been altered successfully"}
#   DELETE /connectors/{name}/offsets   -> 200 {"message": "... have been reset successfully"}
#          both only when STOPPED: else 400 "Connectors must be in the STOPPED state
#          before their offsets can be modified. This can be done for the specified
#          connector by issuing a 'PUT' request to the '/connectors/{name}/stop' endpoint";
#          an empty list 400 "Partitions / offsets need to be provided for an alter
#          offsets request"; an offset of null removes that partition
#   GET    /connectors/{name}/topics    {"<name>": {"topics": [...]}}: the topics a source
#          produced to / a sink consumed from since its start or the last reset
#   PUT    /connectors/{name}/topics/reset  202, empty body (Response.accepted())
#          both 403 "Topic tracking is disabled." with topic.tracking.enable=false, the
#          reset 403 "Topic tracking reset is disabled." with topic.tracking.allow.reset=false
# The files source shows the offsets at work: after DELETE its files are read
# again from the start; after PATCH a file continues where the offset says.
# Sinks: their positions (consumer group, the target's _cdcflow_positions) are
# not altered over REST: 501 naming why, never a silent success.
set -euo pipefail
T=$(mktemp -d /tmp/cf_rest_kip875.XXXXXX)
source "$(dirname "$0")/rest_lib.sh"
J='Content-Type: application/json'
# values of n in the record file, in order ("1 2 3 10 11")
ns() {
    python3 - "$1" <<'PY'
import json, sys
out = []
for l in open(sys.argv[1]):
    v = json.loads(json.loads(l)["payload"])["payload"]
    out.append(str(v["n"]))
print(" ".join(out))
PY
}
# wait_ns FILE WANT: until the record file holds exactly WANT
wait_ns() {
    for _ in $(seq 100); do
        [ "$(ns "$1" 2>/dev/null)" = "$2" ] && return 0
        sleep 0.1
    done
    fail "record file holds '$(ns "$1")', expected '$2'"
}
wait_state() { # wait_state NAME STATE
    for _ in $(seq 100); do
        curl -s "$BASE/connectors/$1/status" | grep -q "\"state\":\"$2\"" && return 0
        sleep 0.1
    done
    fail "connector $1 not $2: $(curl -s "$BASE/connectors/$1/status")"
}
STOPMSG="Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/src/stop' endpoint"

# ---- part 1: a files source writing a record file ----
mkdir -p "$T/w" "$T/in"
printf '{"n":1}\n{"n":2}\n{"n":3}\n' > "$T/in/a.jsonl"
printf '{"n":10}\n{"n":11}\n' > "$T/in/b.jsonl"
CLI_REAL=$CLI
# rest_start runs `cdcflow run --rest --worker`; the record file comes through
# a wrapper that adds --output (the worker's sources write it)
cat > "$T/cli.sh" <<EOF
#!/bin/sh
exec "$CLI_REAL" "\$@" --output "$T/out.jsonl"
EOF
chmod +x "$T/cli.sh"
CLI=$T/cli.sh
rest_start "$T/w" offset.flush.interval.ms=100
CLI=$CLI_REAL
c=$(code POST /connectors -H "$J" --data "{\"name\":\"src\",\"config\":{\"connector.class\":\"files\",\"files.path\":\"$T/in\",\"topic\":\"t\",\"input.format\":\"jsonl\",\"files.min.age.ms\":\"0\"}}")
[ "$c" = 201 ] || fail "create src: $c $(cat "$T/body")"
wait_ns "$T/out.jsonl" "1 2 3 10 11"
wait_state src RUNNING

# 1. active topics: the one topic its records went to
c=$(code GET /connectors/src/topics)
[ "$c" = 200 ] || fail "GET src/topics: $c $(cat "$T/body")"
py "$T/body" 'b == {"src": {"topics": ["t"]}}'
c=$(code PUT /connectors/src/topics/reset)
[ "$c" = 202 ] || fail "PUT src/topics/reset: expected 202, got $c $(cat "$T/body")"
[ ! -s "$T/body" ] || fail "topics/reset with a body: $(cat "$T/body")"
c=$(code GET /connectors/src/topics)
py "$T/body" 'b == {"src": {"topics": []}}'
c=$(code GET /connectors/nope/topics)
[ "$c" = 404 ] || fail "GET nope/topics: expected 404, got $c"
py "$T/body" 'b["error_code"] == 404' 'b["message"] == "Connector nope not found"'
c=$(code PUT /connectors/nope/topics/reset)
[ "$c" = 404 ] || fail "PUT nope/topics/reset: expected 404, got $c"
c=$(code POST /connectors/src/topics)
[ "$c" = 405 ] || fail "POST topics: expected 405, got $c"
c=$(code GET /connectors/src/topics/reset)
[ "$c" = 405 ] || fail "GET topics/reset: expected 405, got $c"

# 2. offsets may be changed only when STOPPED (Connect's 400 and message)
for m in PATCH DELETE; do
    if [ $m = PATCH ]; then
        c=$(code PATCH /connectors/src/offsets -H "$J" --data '{"offsets":[{"partition":{"path":"a.jsonl"},"offset":null}]}')
    else
        c=$(code DELETE /connectors/src/offsets)
    fi
    [ "$c" = 400 ] || fail "$m offsets of a running connector: expected 400, got $c $(cat "$T/body")"
    py "$T/body" 'b["error_code"] == 400' "b['message'] == \"$STOPMSG\""
done
c=$(code DELETE /connectors/nope/offsets)
[ "$c" = 404 ] || fail "DELETE nope/offsets: expected 404, got $c"
py "$T/body" 'b["message"] == "Connector nope not found"'

# 3. stop: 204, STOPPED with no tasks, config kept; idempotent
c=$(code PUT /connectors/src/stop)
[ "$c" = 204 ] || fail "PUT src/stop: expected 204, got $c $(cat "$T/body")"
[ ! -s "$T/body" ] || fail "stop with a body: $(cat "$T/body")"
c=$(code GET /connectors/src/status)
py "$T/body" 'b["name"] == "src"' 'b["connector"]["state"] == "STOPPED"' 'b["tasks"] == []' 'b["type"] == "source"'
c=$(code GET /connectors/src)
py "$T/body" 'b["tasks"] == []' 'b["config"]["files.path"].endswith("/in")'
c=$(code GET /connectors/src/tasks)
py "$T/body" 'b == []'
c=$(code GET /connectors/src/config)
[ "$c" = 200 ] || fail "config of a stopped connector: $c"
c=$(code PUT /connectors/src/stop)
[ "$c" = 204 ] || fail "stop again: expected 204, got $c"
c=$(code PUT /connectors/nope/stop)
[ "$c" = 404 ] || fail "stop nope: expected 404, got $c"
py "$T/body" 'b["message"] == "Connector nope not found"'
c=$(code GET /connectors/src/stop)
[ "$c" = 405 ] || fail "GET stop: expected 405, got $c"
grep -q 'connector src stopped' "$T/w/err.txt" || fail "no stop line: $(tail -5 "$T/w/err.txt")"
# the stop stored the offsets: GET shows both files done
c=$(code GET /connectors/src/offsets)
py "$T/body" 'len(b["offsets"]) == 2' 'all(o["offset"]["done"] for o in b["offsets"])'
cp "$T/body" "$T/offsets1.json"

# 4. bad PATCH bodies: 400, nothing changed
for body in '{"offsets":[]}' '{}' '{"offsets":null}'; do
    c=$(code PATCH /connectors/src/offsets -H "$J" --data "$body")
    [ "$c" = 400 ] || fail "PATCH $body: expected 400, got $c $(cat "$T/body")"
    py "$T/body" 'b["message"] == "Partitions / offsets need to be provided for an alter offsets request"'
done
for body in '[1]' '{"offsets":[{"partition":{"path":"a.jsonl"},"offset":{"x":{"nested":1}}}]}' \
    '{"offsets":[{"partition":"a.jsonl","offset":{}}]}' '{"offsets":[{"offset":{"done":false}}]}' \
    '{"offsets":[{"partition":{"path":["a"]},"offset":null}]}' 'not json' \
    '{"offsets":[{"partition":{"path":"a.jsonl"},"offset":{}}],"more":1}' \
    '{"offsets":[{"partition":{"path":"a.jsonl"},"offset":{},"x":1}]}' \
    '{"offsets":[{"partition":{"path":"a.jsonl"}}]}'; do
    c=$(code PATCH /connectors/src/offsets -H "$J" --data "$body")
    [ "$c" = 400 ] || fail "PATCH $body: expected 400, got $c $(cat "$T/body")"
    py "$T/body" 'b["error_code"] == 400'
done
c=$(code PATCH /connectors/src/offsets -H "$J" --data '{"offsets":[{"partition":{"path":"a.jsonl"},"offset":{"x":{"nested":1}}}]}')
py "$T/body" '"Offsets may only contain primitive types as values" in b["message"]'
c=$(code PATCH /connectors/src/offsets --data '{"offsets":[]}')
[ "$c" = 415 ] || fail "PATCH without Content-Type: expected 415, got $c"
c=$(code GET /connectors/src/offsets)
python3 -c 'import json,sys; assert json.load(open(sys.argv[1])) == json.load(open(sys.argv[2]))' "$T/body" "$T/offsets1.json" ||
    fail "a refused PATCH changed the offsets: $(cat "$T/body")"

# 5. DELETE: every offset of src gone; resumed, both files are read again
c=$(code DELETE /connectors/src/offsets)
[ "$c" = 200 ] || fail "DELETE src/offsets: $c $(cat "$T/body")"
py "$T/body" 'b == {"message": "The offsets for this connector have been reset successfully"}'
c=$(code GET /connectors/src/offsets)
py "$T/body" 'b == {"offsets": []}'
grep -q '"src"' "$T/w/offsets.json" && fail "the offsets file still holds src: $(cat "$T/w/offsets.json")"
# a reset of nothing is a success too (Connect: idempotent)
c=$(code DELETE /connectors/src/offsets)
[ "$c" = 200 ] || fail "DELETE again: $c $(cat "$T/body")"
c=$(code PUT /connectors/src/resume)
[ "$c" = 202 ] || fail "resume: expected 202, got $c $(cat "$T/body")"
wait_state src RUNNING
c=$(code GET /connectors/src/status)
py "$T/body" 'b["connector"]["state"] == "RUNNING"' 'len(b["tasks"]) == 1'
wait_ns "$T/out.jsonl" "1 2 3 10 11 1 2 3 10 11"
c=$(code GET /connectors/src/topics)
py "$T/body" 'b == {"src": {"topics": ["t"]}}'

# 6. PATCH: a.jsonl to after its first record (not done), b.jsonl removed
# (null): resumed, a.jsonl continues with 2 and 3, b.jsonl is read whole
c=$(code PUT /connectors/src/stop)
[ "$c" = 204 ] || fail "stop 2: $c"
# a new config keeps the target state (no tasks start) and the active topics
c=$(code PUT /connectors/src/config -H "$J" --data "{\"connector.class\":\"files\",\"files.path\":\"$T/in\",\"topic\":\"t\",\"input.format\":\"jsonl\",\"files.min.age.ms\":\"0\",\"tasks.max\":\"1\"}")
[ "$c" = 200 ] || fail "PUT config of a stopped connector: $c $(cat "$T/body")"
py "$T/body" 'b["tasks"] == []' 'b["config"]["tasks.max"] == "1"'
c=$(code GET /connectors/src/status)
py "$T/body" 'b["connector"]["state"] == "STOPPED"' 'b["tasks"] == []'
c=$(code GET /connectors/src/topics)
py "$T/body" 'b == {"src": {"topics": ["t"]}}'
# a restart leaves it stopped; its task is not there (Connect: no task configs)
c=$(code POST /connectors/src/restart)
[ "$c" = 204 ] || fail "restart a stopped connector: $c $(cat "$T/body")"
c=$(code POST /connectors/src/tasks/0/restart)
[ "$c" = 404 ] || fail "restart task 0 of a stopped connector: expected 404, got $c"
py "$T/body" 'b["message"].startswith("Task src-0 not found")'
c=$(code GET /connectors/src/status)
py "$T/body" 'b["connector"]["state"] == "STOPPED"' 'b["tasks"] == []'
curl -s "$BASE/connectors/src/offsets" > "$T/offsets2.json"
python3 - "$T/offsets2.json" "$T/patch.json" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))
a = [o for o in b["offsets"] if o["partition"] == {"path": "a.jsonl"}][0]["offset"]
a.update({"recordCount": 1, "position": 8, "line": 2, "done": False})
json.dump({"offsets": [{"partition": {"path": "a.jsonl"}, "offset": a},
                       {"partition": {"path": "b.jsonl"}, "offset": None}]}, open(sys.argv[2], "w"))
PY
c=$(code PATCH /connectors/src/offsets -H "$J" --data @"$T/patch.json")
[ "$c" = 200 ] || fail "PATCH src/offsets: $c $(cat "$T/body")"
py "$T/body" 'b == {"message": "The offsets for this connector have been altered successfully"}'
c=$(code GET /connectors/src/offsets)
py "$T/body" 'len(b["offsets"]) == 1' 'b["offsets"][0]["partition"] == {"path": "a.jsonl"}' \
    'b["offsets"][0]["offset"]["position"] == 8 and b["offsets"][0]["offset"]["done"] is False'
# pause of a stopped connector starts it paused (Connect: target state PAUSED)
c=$(code PUT /connectors/src/pause)
[ "$c" = 202 ] || fail "pause a stopped connector: $c"
wait_state src PAUSED
c=$(code GET /connectors/src/status)
py "$T/body" 'b["connector"]["state"] == "PAUSED"' 'len(b["tasks"]) == 1'
sleep 0.3
[ "$(ns "$T/out.jsonl")" = "1 2 3 10 11 1 2 3 10 11" ] || fail "a paused source wrote: $(ns "$T/out.jsonl")"
c=$(code PUT /connectors/src/resume)
[ "$c" = 202 ] || fail "resume 2: $c"
wait_ns "$T/out.jsonl" "1 2 3 10 11 1 2 3 10 11 2 3 10 11"
c=$(code GET /connectors/src/offsets)
py "$T/body" 'len(b["offsets"]) == 2'
rest_stop

# ---- part 2: a sink (transport=direct, cdc-sink into SQLite) ----
rm -rf "$T/w2"
mkdir -p "$T/w2" "$T/in2"
printf 'id,name\n1,apple\n2,pear\n' > "$T/in2/a.csv"
rest_start "$T/w2" transport=direct offset.flush.interval.ms=100
c=$(code POST /connectors -H "$J" --data "{\"name\":\"snk\",\"config\":{\"connector.class\":\"cdc-sink\",\"topics\":\"orders,other\",\"connection.url\":\"sqlite:$T/w2/o.db\"}}")
[ "$c" = 201 ] || fail "create snk: $c $(cat "$T/body")"
c=$(code POST /connectors -H "$J" --data "{\"name\":\"src\",\"config\":{\"connector.class\":\"files\",\"files.path\":\"$T/in2\",\"topic\":\"orders\",\"input.format\":\"csv\",\"files.min.age.ms\":\"0\",\"transforms\":\"cast,key\",\"transforms.cast.type\":\"org.apache.kafka.connect.transforms.Cast\$Value\",\"transforms.cast.spec\":\"id:int64\",\"transforms.key.type\":\"org.apache.kafka.connect.transforms.ValueToKey\",\"transforms.key.fields\":\"id\"}}")
[ "$c" = 201 ] || fail "create src (direct): $c $(cat "$T/body")"
for _ in $(seq 100); do
    [ "$(sqlite3 "$T/w2/o.db" 'SELECT count(*) FROM orders' 2>/dev/null)" = 2 ] && break
    sleep 0.1
done
[ "$(sqlite3 "$T/w2/o.db" 'SELECT count(*) FROM orders' 2>/dev/null)" = 2 ] || fail "rows not in SQLite: $(tail "$T/w2/err.txt")"
# 7. a sink's active topics: what it consumed from, not all it subscribes to
c=$(code GET /connectors/snk/topics)
[ "$c" = 200 ] || fail "GET snk/topics: $c $(cat "$T/body")"
py "$T/body" 'b == {"snk": {"topics": ["orders"]}}'
c=$(code PUT /connectors/snk/topics/reset)
[ "$c" = 202 ] || fail "PUT snk/topics/reset: $c"
c=$(code GET /connectors/snk/topics)
py "$T/body" 'b == {"snk": {"topics": []}}'
# 8. a sink's offsets: stopped, still not altered over REST: 501 saying why
c=$(code PUT /connectors/snk/stop)
[ "$c" = 204 ] || fail "stop snk: $c $(cat "$T/body")"
c=$(code GET /connectors/snk/status)
py "$T/body" 'b["connector"]["state"] == "STOPPED"' 'b["tasks"] == []' 'b["type"] == "sink"'
for m in PATCH DELETE; do
    if [ $m = PATCH ]; then
        c=$(code PATCH /connectors/snk/offsets -H "$J" --data '{"offsets":[{"partition":{"kafka_topic":"orders","kafka_partition":0},"offset":{"kafka_offset":0}}]}')
    else
        c=$(code DELETE /connectors/snk/offsets)
    fi
    [ "$c" = 501 ] || fail "$m sink offsets: expected 501, got $c $(cat "$T/body")"
    py "$T/body" 'b["error_code"] == 501' '"sink" in b["message"]' '"_cdcflow_positions" in b["message"]'
done
c=$(code PUT /connectors/snk/resume)
[ "$c" = 202 ] || fail "resume snk: $c"
wait_state snk RUNNING
rest_stop

# ---- part 3: Connect's topic.tracking.* worker settings (403s) ----
mkdir -p "$T/in3"
for setting in topic.tracking.allow.reset=false topic.tracking.enable=false; do
    rm -rf "$T/w3"
    rest_start "$T/w3" "$setting"
    c=$(code POST /connectors -H "$J" --data "{\"name\":\"x\",\"config\":{\"connector.class\":\"files\",\"files.path\":\"$T/in3\",\"topic\":\"t\"}}")
    [ "$c" = 201 ] || fail "$setting: create x: $c $(cat "$T/body")"
    c=$(code PUT /connectors/x/topics/reset)
    [ "$c" = 403 ] || fail "$setting: reset: expected 403, got $c $(cat "$T/body")"
    if [ "$setting" = topic.tracking.enable=false ]; then
        py "$T/body" 'b == {"error_code": 403, "message": "Topic tracking is disabled."}'
        c=$(code GET /connectors/x/topics)
        [ "$c" = 403 ] || fail "$setting: GET topics: expected 403, got $c"
        py "$T/body" 'b["message"] == "Topic tracking is disabled."'
    else
        py "$T/body" 'b == {"error_code": 403, "message": "Topic tracking reset is disabled."}'
        c=$(code GET /connectors/x/topics)
        [ "$c" = 200 ] || fail "$setting: GET topics: $c $(cat "$T/body")"
        py "$T/body" 'b == {"x": {"topics": []}}'
    fi
    rest_stop
done
echo OK
