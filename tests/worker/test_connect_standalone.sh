#!/usr/bin/env bash
# test_connect_standalone.sh - a connect-standalone.properties as Kafka's
# distribution ships it (config/connect-standalone.properties: converters with
# schemas, the internal converters of Connect 1.x, offsets file, flush
# interval) plus the plugin.path line every plugin install adds, runs
# unchanged as `cdcflow run --worker`: the keys that mean nothing here
# (plugin.path, internal.*) are accepted with one INFO line each, and
# `cdcflow validate --worker FILE` checks it as a worker file (issue 14).
source "$(dirname "$0")/check_lib.sh"
cat > "$T/connect-standalone.properties" <<P
# These are defaults. This file just demonstrates how to override some settings.
bootstrap.servers=embedded

key.converter=org.apache.kafka.connect.json.JsonConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
key.converter.schemas.enable=true
value.converter.schemas.enable=true

internal.key.converter=org.apache.kafka.connect.json.JsonConverter
internal.value.converter=org.apache.kafka.connect.json.JsonConverter
internal.key.converter.schemas.enable=false
internal.value.converter.schemas.enable=false

offset.storage.file.filename=$T/connect.offsets
offset.flush.interval.ms=10000
plugin.path=/usr/share/java,/usr/local/share/kafka/plugins
P
printf 'name=t-sink\nconnector.class=cdc-sink\ntopics=orders\nsqlite.path=%s/t.db\n' "$T" > "$T/sink.properties"

"$CLI" validate --worker "$T/connect-standalone.properties" "$T/sink.properties" > "$T/validate.out" 2>&1
rc=$?
[[ $rc -eq 0 ]] && ok "validate --worker: exit 0" || fail "validate --worker: exit $rc: $(head -5 "$T/validate.out")"
grep -q "connect-standalone.properties: OK (worker file)" "$T/validate.out" && grep -q "sink.properties: OK" "$T/validate.out" &&
  ok "validate --worker names the worker file as valid" || fail "validate output: $(head -5 "$T/validate.out")"
# a worker key that is wrong is found by validate --worker
printf 'offset.flush.interval.ms=soon\n' >> "$T/bad.properties"
"$CLI" validate --worker "$T/bad.properties" "$T/sink.properties" > "$T/bad.out" 2>&1
rc=$?
[[ $rc -ne 0 ]] && grep -q "offset.flush.interval.ms" "$T/bad.out" && ok "validate --worker: a bad worker key is reported (exit $rc)" ||
  fail "bad worker key: exit $rc: $(head -5 "$T/bad.out")"

"$CLI" run --worker "$T/connect-standalone.properties" "$T/sink.properties" 2>"$T/log" &
pid=$!
for _ in $(seq 1 100); do grep -q "task 0 started" "$T/log" && break; kill -0 $pid 2>/dev/null || break; sleep 0.1; done
grep -q "task 0 started" "$T/log" && ok "run --worker connect-standalone.properties: the sink task runs" ||
  fail "the worker did not start: $(tail -5 "$T/log")"
kill -TERM $pid 2>/dev/null; wait $pid
[[ $(grep -c "INFO.*plugin.path=.*ignored" "$T/log") -eq 1 ]] && ok "one INFO line: plugin.path ignored" ||
  fail "plugin.path INFO lines: $(grep -c plugin.path "$T/log")"
[[ $(grep -c "INFO.*internal.key.converter.*ignored" "$T/log") -eq 1 ]] && ok "one INFO line: internal converters ignored" ||
  fail "internal converter INFO lines: $(grep -c internal "$T/log")"
! grep -q "WARN\|ERROR" "$T/log" && ok "no WARN or ERROR" || fail "$(grep "WARN\|ERROR" "$T/log")"
grep -q "connector t-sink task 0 stopped (STOPPED)" "$T/log" && ok "a clean stop leaves the task STOPPED (not UNASSIGNED)" ||
  fail "end state: $(grep 'stopped (' "$T/log")"

# every problem is listed, each whole (a DETAIL of 512 bytes cut them: worker
# errors near 1,000 characters, connector errors near 500)
printf 'a.b=1\nc.d=2\noffset.flush.interval.ms=x\ntransport=pigeon\nrest.port=-5\n' > "$T/bad5.properties"
"$CLI" run --worker "$T/bad5.properties" "$T/sink.properties" 2>"$T/bad5.err"
rc=$?
n=$(grep -c "^  worker configuration: " "$T/bad5.err")
[[ $rc -eq 2 && $n -eq 5 ]] && ok "run: the worker file's 5 problems, one line each (exit 2)" || fail "run: exit $rc, $n problem lines: $(head -c 600 "$T/bad5.err")"
[[ $(grep "^  worker configuration: a.b:" "$T/bad5.err" | grep -c 'internal.value.converter.\*$') -eq 1 ]] &&
  ok "run: a problem line is whole (ends with the last allowed key)" || fail "cut line: $(grep 'a.b:' "$T/bad5.err" | tail -c 200)"
printf 'name=s2\nconnector.class=cdc-sink\ntopics=t\nsqlite.path=%s/s2.db\nfoo.one=1\nfoo.two=2\nfoo.three=3\n' "$T" > "$T/bad-sink.properties"
"$CLI" run --worker "$T/connect-standalone.properties" "$T/bad-sink.properties" 2>"$T/badc.err"
rc=$?
n=$(grep -c "^  .*bad-sink.properties: foo\.[a-z]*: unknown configuration.*hibernate\.\*$" "$T/badc.err")
[[ $rc -eq 2 && $n -eq 3 ]] && ok "run: the connector file's 3 problems, each whole (exit 2)" || fail "run: exit $rc, $n whole lines: $(head -c 600 "$T/badc.err")"

# connect-standalone starts with a worker file alone (connectors come over
# REST): a worker file with rest.port and no connector file
printf 'rest.port=0\noffset.storage.file.filename=%s/r.offsets\n' "$T" > "$T/rest.properties"
"$CLI" run --worker "$T/rest.properties" 2>"$T/rlog" &
pid=$!
for _ in $(seq 1 100); do grep -q "REST API on" "$T/rlog" && break; kill -0 $pid 2>/dev/null || break; sleep 0.1; done
port=$(sed -n 's/.*REST API on http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$T/rlog" | head -1)
if [[ -n $port ]]; then
  ok "a worker file with rest.port and no connector starts its REST API"
  mkdir -p "$T/in"; printf 'a\n1\n' > "$T/in/x.csv"
  code=$(curl -s -o "$T/post.out" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
    --data "{\"name\":\"f\",\"config\":{\"connector.class\":\"files\",\"files.path\":\"$T/in\",\"topic\":\"t\",\"input.format\":\"csv\",\"files.min.age.ms\":\"0\"}}" \
    "http://127.0.0.1:$port/connectors")
  [[ $code == 201 ]] && ok "POST /connectors on it: 201" || fail "POST /connectors: $code $(cat "$T/post.out")"
  curl -s "http://127.0.0.1:$port/connectors" | grep -q '"f"' && ok "GET /connectors lists it" || fail "GET /connectors"
else
  fail "no REST API without a connector: $(tail -3 "$T/rlog")"
fi
kill -TERM $pid 2>/dev/null; wait $pid
exit $failed
