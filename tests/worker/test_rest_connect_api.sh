#!/usr/bin/env bash
# test_rest_connect_api.sh - Kafka Connect REST endpoints beyond the basic
# ones (issue 14, "Their REST API"), with Connect's paths, methods, status
# codes and JSON shapes (Connect's REST reference and its resources):
#   GET  /connectors/{name}/tasks/{id}/status   {"id","state","worker_id"} (+ "trace" when FAILED)
#   POST /connectors/{name}/tasks/{id}/restart  204; 404 + Connect's error body for an unknown task
#   GET  /connectors?expand=status&expand=info  both members per connector
#   GET  /admin/loggers, GET|PUT /admin/loggers/{name}  (KIP-495, KIP-976): the
#        levels of cdcflow's components (the [name] of a log line)
#   PUT  /connector-plugins/{plugin}/config/validate  Connect's ConfigInfos,
#        every problem listed, the same problems as `cdcflow validate`
#   GET  /connectors/{name}/offsets  (KIP-875) a source's stored offsets
#   a 400 for an invalid config lists every problem (Connect's "contains the
#   following N error(s)"), none cut
# Every body is sent with Content-Type: application/json, as Connect's clients do.
set -euo pipefail
T=$(mktemp -d /tmp/cf_rest_connect_api.XXXXXX)
source "$(dirname "$0")/rest_lib.sh"
J='Content-Type: application/json'

# offsets stored before the start (Connect's key ["<connector>",{partition}]):
# one of "ok", one of a connector that is not there
mkdir -p "$T/w"
cat > "$T/w/offsets.json" <<'JSON'
{"format":"cdcflow.offsets","version":1,"offsets":[
{"key":["ok",{"stream":"earlier"}],"value":{"ulid":"01JDZZZZZZZZZZZZZZZZZZZZZZ","recordCount":7}},
{"key":["gone",{"stream":"gone"}],"value":{"ulid":"01JDYYYYYYYYYYYYYYYYYYYYYY","recordCount":1}}
]}
JSON
rest_start "$T/w"
# "ok": a stream source reading a FIFO (RUNNING while it waits for writers);
# "bad": its stream.path is a regular file, so its task FAILS at start
mkfifo "$T/ok.fifo"
: > "$T/notafifo"
c=$(code POST /connectors -H "$J" --data "{\"name\":\"ok\",\"config\":{\"connector.class\":\"stream\",\"topic\":\"t\",\"stream.type\":\"fifo\",\"stream.path\":\"$T/ok.fifo\",\"tasks.max\":\"1\"}}")
[ "$c" = 201 ] || fail "create ok: $c $(cat "$T/body")"
c=$(code POST /connectors -H "$J" --data "{\"name\":\"bad\",\"config\":{\"connector.class\":\"stream\",\"topic\":\"t\",\"stream.type\":\"fifo\",\"stream.path\":\"$T/notafifo\"}}")
[ "$c" = 201 ] || fail "create bad: $c $(cat "$T/body")"
for _ in $(seq 100); do
    curl -s "$BASE/connectors/bad/status" | grep -q FAILED && curl -s "$BASE/connectors/ok/status" | grep -q RUNNING && break
    sleep 0.1
done

# 1. task status, as Connect's TaskState
c=$(code GET /connectors/ok/tasks/0/status)
[ "$c" = 200 ] || fail "ok task 0 status: $c $(cat "$T/body")"
py "$T/body" 'b["id"] == 0' 'b["state"] == "RUNNING"' "b[\"worker_id\"] == \"127.0.0.1:$PORT\"" '"trace" not in b'
c=$(code GET /connectors/bad/tasks/0/status)
[ "$c" = 200 ] || fail "bad task 0 status: $c $(cat "$T/body")"
py "$T/body" 'b["id"] == 0' 'b["state"] == "FAILED"' 'isinstance(b["trace"], str) and "FIFO" in b["trace"]'
# the same document as the task's entry in the connector's status
curl -s "$BASE/connectors/bad/status" > "$T/cs"
python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2])); assert a["tasks"][0]==b, (a,b)' \
    "$T/cs" "$T/body" || fail "task status differs from the connector status entry"
for p in /connectors/ok/tasks/1/status /connectors/nope/tasks/0/status; do
    c=$(code GET "$p")
    [ "$c" = 404 ] || fail "GET $p: expected 404, got $c $(cat "$T/body")"
    py "$T/body" 'b["error_code"] == 404' '"No status found for task" in b["message"]'
done
for p in /connectors/ok/tasks/x/status /connectors/ok/tasks/-1/status; do
    c=$(code GET "$p")
    [ "$c" = 404 ] || fail "GET $p: expected 404, got $c $(cat "$T/body")"
done
c=$(code POST /connectors/ok/tasks/0/status)
[ "$c" = 405 ] || fail "POST task status: expected 405, got $c"

# 2. restart one task: 204; the failed task runs again (and fails again, its
# stream.path is still not a FIFO); once a FIFO is there it runs
c=$(code POST /connectors/ok/tasks/0/restart)
[ "$c" = 204 ] || fail "restart ok task 0: $c $(cat "$T/body")"
[ ! -s "$T/body" ] || fail "204 with a body: $(cat "$T/body")"
grep -q 'connector ok: task 0 restarted' "$T/w/err.txt" || fail "no restart line: $(cat "$T/w/err.txt")"
rm "$T/notafifo"
mkfifo "$T/notafifo"
c=$(code POST /connectors/bad/tasks/0/restart)
[ "$c" = 204 ] || fail "restart bad task 0: $c $(cat "$T/body")"
for _ in $(seq 100); do
    curl -s "$BASE/connectors/bad/tasks/0/status" | grep -q '"RUNNING"' && break
    sleep 0.1
done
c=$(code GET /connectors/bad/tasks/0/status)
py "$T/body" 'b["state"] == "RUNNING"' '"trace" not in b'
c=$(code POST /connectors/ok/tasks/3/restart)
[ "$c" = 404 ] || fail "restart ok task 3: expected 404, got $c $(cat "$T/body")"
py "$T/body" 'b["error_code"] == 404' '"Task ok-3 not found" in b["message"]'
c=$(code POST /connectors/nope/tasks/0/restart)
[ "$c" = 404 ] || fail "restart nope task 0: expected 404, got $c $(cat "$T/body")"
py "$T/body" 'b["error_code"] == 404' '"nope" in b["message"]'
c=$(code GET /connectors/ok/tasks/0/restart)
[ "$c" = 405 ] || fail "GET task restart: expected 405, got $c"

# 3. ?expand=status&expand=info: both members for each connector
c=$(code GET '/connectors?expand=status&expand=info')
[ "$c" = 200 ] || fail "expand both: $c"
py "$T/body" 'sorted(b) == ["bad", "ok"]' \
    'all(set(v) == {"status", "info"} for v in b.values())' \
    'b["ok"]["status"]["name"] == "ok" and b["ok"]["status"]["tasks"][0]["state"] == "RUNNING"' \
    'b["ok"]["info"]["name"] == "ok" and b["ok"]["info"]["type"] == "source"' \
    'b["ok"]["info"]["config"]["connector.class"] == "stream"' \
    'b["ok"]["info"]["tasks"] == [{"connector": "ok", "task": 0}]'
c=$(code GET '/connectors?expand=info')
py "$T/body" 'all(set(v) == {"info"} for v in b.values())'
c=$(code GET '/connectors?expand=status')
py "$T/body" 'all(set(v) == {"status"} for v in b.values())'
c=$(code GET '/connectors?expand=info&expand=status')
py "$T/body" 'all(set(v) == {"status", "info"} for v in b.values())'
c=$(code GET '/connectors')
py "$T/body" 'sorted(b) == ["bad", "ok"]'

# 4. loggers: root only at start (no logger has a level of its own)
c=$(code GET /admin/loggers)
[ "$c" = 200 ] || fail "GET /admin/loggers: $c $(cat "$T/body")"
py "$T/body" 'b == {"root": {"level": "INFO", "last_modified": None}}'
c=$(code GET /admin/loggers/rest)   # "rest" wrote "REST API on ..."
[ "$c" = 200 ] || fail "GET /admin/loggers/rest: $c $(cat "$T/body")"
py "$T/body" 'b == {"level": "INFO", "last_modified": None}'
c=$(code GET /admin/loggers/root)
py "$T/body" 'b["level"] == "INFO"'
c=$(code GET /admin/loggers/no.such.logger)
[ "$c" = 404 ] || fail "GET unknown logger: expected 404, got $c"
py "$T/body" 'b["error_code"] == 404' 'b["message"] == "Logger no.such.logger not found."'
! grep -q 'DEBUG \[rest\]' "$T/w/err.txt" || fail "DEBUG lines before any level was set"
# rest to DEBUG: its lines (one per request) appear, no other component's
before=$(date +%s%3N)
c=$(code PUT /admin/loggers/rest -H "$J" --data '{"level":"DEBUG"}')
[ "$c" = 200 ] || fail "PUT rest DEBUG: $c $(cat "$T/body")"
py "$T/body" 'b == ["rest"]'
curl -s "$BASE/connectors/ok" > /dev/null
sleep 0.2
grep -q 'DEBUG \[rest\] GET /connectors/ok' "$T/w/err.txt" || fail "no DEBUG [rest] line: $(tail -5 "$T/w/err.txt")"
if grep 'DEBUG' "$T/w/err.txt" | grep -v '\[rest\]'; then fail "another component logs at DEBUG"; fi
c=$(code GET /admin/loggers/rest)
py "$T/body" 'b["level"] == "DEBUG"' 'isinstance(b["last_modified"], int) and b["last_modified"] >= '"$before"
c=$(code GET /admin/loggers)
py "$T/body" 'sorted(b) == ["rest", "root"]' 'b["rest"]["level"] == "DEBUG"' 'b["root"]["level"] == "INFO"'
# back to WARN: no more DEBUG lines of rest
c=$(code PUT /admin/loggers/rest -H "$J" --data '{"level":"warn"}')
[ "$c" = 200 ] || fail "PUT rest warn: $c $(cat "$T/body")"
n1=$(grep -c 'DEBUG \[rest\]' "$T/w/err.txt")
curl -s "$BASE/connectors/ok" > /dev/null
sleep 0.2
n2=$(grep -c 'DEBUG \[rest\]' "$T/w/err.txt")
[ "$n1" = "$n2" ] || fail "rest still logs DEBUG at WARN"
# a logger not seen yet can be set (Connect creates it), with ?scope=cluster: 204
c=$(code PUT '/admin/loggers/sink?scope=cluster' -H "$J" --data '{"level":"TRACE"}')
[ "$c" = 204 ] || fail "PUT sink scope=cluster: $c $(cat "$T/body")"
c=$(code GET /admin/loggers/sink)
py "$T/body" 'b["level"] == "TRACE"'
# Connect's errors: no level 400, unknown level 404, not JSON 415
c=$(code PUT /admin/loggers/rest -H "$J" --data '{"lvl":"DEBUG"}')
[ "$c" = 400 ] || fail "PUT without level: expected 400, got $c"
py "$T/body" 'b["error_code"] == 400' '"level" in b["message"]'
c=$(code PUT /admin/loggers/rest -H "$J" --data '{"level":"LOUD"}')
[ "$c" = 404 ] || fail "PUT level LOUD: expected 404, got $c"
py "$T/body" 'b["message"] == "invalid log level '"'"'LOUD'"'"'."'
c=$(code PUT /admin/loggers/rest --data '{"level":"DEBUG"}')
[ "$c" = 415 ] || fail "PUT without Content-Type: expected 415, got $c"
c=$(code DELETE /admin/loggers/rest)
[ "$c" = 405 ] || fail "DELETE logger: expected 405, got $c"
# root sets every logger, and answers their names
c=$(code PUT /admin/loggers/root -H "$J" --data '{"level":"ERROR"}')
[ "$c" = 200 ] || fail "PUT root: $c $(cat "$T/body")"
py "$T/body" '"root" in b and "rest" in b and "sink" in b and b == sorted(b)'
c=$(code GET /admin/loggers)
py "$T/body" 'all(v["level"] == "ERROR" for v in b.values())' '"worker" in b'

# 5. validate: a config with several problems, under the plugin name
# GET /connector-plugins gives; each problem in Connect's ConfigInfos, the
# same ones `cdcflow validate` prints for that config as a file
c=$(code PUT /admin/loggers/root -H "$J" --data '{"level":"INFO"}')
curl -s "$BASE/connector-plugins" > "$T/plugins"
SINK=$(python3 -c 'import json,sys; print([p["class"] for p in json.load(open(sys.argv[1])) if p["type"]=="sink"][0])' "$T/plugins")
BAD='{"connector.class":"cdc-sink","name":"v","topics":"t","tasks.max":"x","batch.sizee":"3","transforms":"u","transforms.u.type":"Nope","key.converter":"avroo","connection.password":"pwS3CR"}'
c=$(code PUT "/connector-plugins/$SINK/config/validate" -H "$J" --data "$BAD")
[ "$c" = 200 ] || fail "validate at $SINK: $c $(cat "$T/body")"
cp "$T/body" "$T/ci.json"
py "$T/body" "b['name'] == '$SINK'" 'set(b) == {"name", "error_count", "groups", "configs"}'     '"Common" in b["groups"]'     'all(set(c) == {"definition", "value"} for c in b["configs"])'     'all(set(c["value"]) == {"name", "value", "recommended_values", "errors", "visible"} for c in b["configs"])'     'all({"name", "type", "required", "default_value", "importance", "documentation", "group", "width", "display_name", "dependents", "order"} <= set(c["definition"]) for c in b["configs"])'     'b["error_count"] == sum(len(c["value"]["errors"]) for c in b["configs"])'     'b["error_count"] == 4'     '{c["value"]["name"] for c in b["configs"] if c["value"]["errors"]} == {"tasks.max", "batch.sizee", "transforms.u.type", "key.converter"}'     '[c for c in b["configs"] if c["definition"]["name"] == "tasks.max"][0]["definition"]["type"] == "INT"'     '[c for c in b["configs"] if c["definition"]["name"] == "tasks.max"][0]["value"]["value"] == "x"'     '"batch.size" in [c for c in b["configs"] if c["value"]["name"] == "batch.sizee"][0]["value"]["errors"][0]'     '[c for c in b["configs"] if c["value"]["name"] == "connection.password"][0]["value"]["value"] == "[hidden]"'
grep -q pwS3CR "$T/body" && fail "validate shows the password"
# not cut: the long "known transforms" list is there to its end
py "$T/body" '[c for c in b["configs"] if c["value"]["name"] == "transforms.u.type"][0]["value"]["errors"][0].endswith("SetSchemaMetadata$Key")'
# the same problems as the command line's
printf '%s\n' "$BAD" > "$T/bad.json"
"$CLI" validate "$T/bad.json" > "$T/cli.txt" || true
python3 - "$T/ci.json" "$T/cli.txt" <<'PY' || fail "REST and CLI problems differ: $(cat "$T/cli.txt")"
import json, sys
b = json.load(open(sys.argv[1]))
cli = open(sys.argv[2]).read()
errs = [(c["value"]["name"], e) for c in b["configs"] for e in c["value"]["errors"]]
assert ("INVALID (%d problems)" % len(errs)) in cli, cli
for k, e in errs:
    assert ("%s: %s" % (k, e)) in cli, (k, e)
PY
# a valid config: no errors; the short name and the alias name one plugin
c=$(code PUT /connector-plugins/stream/config/validate -H "$J" --data '{"connector.class":"stream","name":"s","topic":"t"}')
[ "$c" = 200 ] || fail "validate stream: $c $(cat "$T/body")"
py "$T/body" 'b["error_count"] == 0' 'b["name"] == "StreamSource"' '"Stream" in b["groups"]'
c=$(code PUT /connector-plugins/StreamSource/config/validate -H "$J" --data '{"connector.class":"stream","name":"s","topic":"t"}')
[ "$c" = 200 ] || fail "validate StreamSource: $c $(cat "$T/body")"
# Connect's 400s: another plugin's class, no connector.class; 415 without JSON
c=$(code PUT /connector-plugins/files/config/validate -H "$J" --data '{"connector.class":"stream","name":"s"}')
[ "$c" = 400 ] || fail "validate mismatch: expected 400, got $c"
py "$T/body" 'b["message"] == "Included connector type stream does not match request type files"'
c=$(code PUT /connector-plugins/files/config/validate -H "$J" --data '{"name":"s"}')
[ "$c" = 400 ] || fail "validate without connector.class: expected 400, got $c"
py "$T/body" '"no connector type" in b["message"]'
c=$(code PUT /connector-plugins/files/config/validate --data '{"connector.class":"files"}')
[ "$c" = 415 ] || fail "validate without Content-Type: expected 415, got $c"
c=$(code GET /connector-plugins/files/config/validate)
[ "$c" = 405 ] || fail "GET validate: expected 405, got $c"
# an unknown plugin: 200 with the error on connector.class, as our create says
c=$(code PUT /connector-plugins/Nope/config/validate -H "$J" --data '{"connector.class":"Nope","name":"s"}')
[ "$c" = 200 ] || fail "validate Nope: $c $(cat "$T/body")"
py "$T/body" 'b["error_count"] == 1' '"unknown connector" in [c for c in b["configs"] if c["value"]["name"] == "connector.class"][0]["value"]["errors"][0]'

# 5b. creating or configuring with that config: a 400 that lists the same problems, not cut
for how in post put; do
    if [ $how = post ]; then
        c=$(code POST /connectors -H "$J" --data "{\"name\":\"v\",\"config\":$BAD}")
    else
        c=$(code PUT /connectors/v/config -H "$J" --data "$BAD")
    fi
    [ "$c" = 400 ] || fail "$how invalid config: expected 400, got $c $(cat "$T/body")"
    python3 - "$T/ci.json" "$T/body" <<'PY' || fail "$how: the 400 does not list every problem: $(cat "$T/body")"
import json, sys
ci = json.load(open(sys.argv[1]))
m = json.load(open(sys.argv[2]))["message"]
errs = [(c["value"]["name"], e) for c in ci["configs"] for e in c["value"]["errors"]]
assert m.startswith("Connector configuration is invalid and contains the following %d error(s):\n" % len(errs)), m[:200]
for k, e in errs:
    assert ("%s: %s\n" % (k, e)) in m, (k, e)
assert "/connector-plugins/{connectorType}/config/validate" in m
assert len(m) > 1500  # the transforms list alone is longer than the old cut
PY
    grep -q pwS3CR "$T/body" && fail "$how: the 400 shows the password"
done
[ "$(curl -s "$BASE/connectors" | python3 -c 'import json,sys; print("v" in json.load(sys.stdin))')" = False ] ||
    fail "the invalid connector was created"

# 6. offsets (KIP-875): what the store holds for this connector only
c=$(code GET /connectors/ok/offsets)
[ "$c" = 200 ] || fail "GET ok/offsets: $c $(cat "$T/body")"
py "$T/body" 'list(b) == ["offsets"]'     '{"partition": {"stream": "earlier"}, "offset": {"ulid": "01JDZZZZZZZZZZZZZZZZZZZZZZ", "recordCount": 7}} in b["offsets"]'     'all(set(o) == {"partition", "offset"} for o in b["offsets"])'     'not any(o["partition"] == {"stream": "gone"} for o in b["offsets"])'
c=$(code GET /connectors/nope/offsets)
[ "$c" = 404 ] || fail "GET nope/offsets: expected 404, got $c"
py "$T/body" 'b["error_code"] == 404'
# changing them needs the connector STOPPED (KIP-875; test_rest_kip875.sh does the rest)
c=$(code DELETE /connectors/ok/offsets)
[ "$c" = 400 ] || fail "DELETE offsets of a running connector: expected 400, got $c $(cat "$T/body")"
py "$T/body" '"must be in the STOPPED state" in b["message"]'
c=$(code POST /connectors/ok/offsets)
[ "$c" = 405 ] || fail "POST offsets: expected 405, got $c"

rest_stop
echo OK
