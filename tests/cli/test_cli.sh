#!/usr/bin/env bash
# test_cli.sh - the command line as a user meets it: help, version, exit codes
# (0 ok, 1 runtime failure, 2 usage/config error), `validate` on good and bad
# files, `<command> --help` for every command listed by `cdcflow --help`, and
# the log (levels, text and JSON formats, from options and the environment).
set -uo pipefail
CLI=${CF_CLI:?CF_CLI must point to the cdcflow binary}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# run CMD...: sets $out (stdout+stderr) and $rc
run() { out=$("$@" 2>&1); rc=$?; }
expect_rc() { [[ $rc -eq $1 ]] || fail "$2: exit $rc, expected $1; output:"$'\n'"$out"; }
expect_out() { grep -qF -- "$1" <<<"$out" || fail "$2: output lacks \"$1\"; output:"$'\n'"$out"; }

# ---- help, version, unknown commands ----
run "$CLI" --help;            expect_rc 0 "--help"; expect_out "Usage: cdcflow" "--help"; expect_out "validate" "--help"
run "$CLI" -h;                expect_rc 0 "-h"
run "$CLI" version;           expect_rc 0 "version"; expect_out "cdcflow " "version"; expect_out "librdkafka" "version"
# every linked library with a version API, each with a version number
for lib in librdkafka avro-c jansson libcurl libmicrohttpd sqlite3 libpq lz4 zstd zlib OpenSSL; do
  grep -qE "^  $lib +.*[0-9]+\.[0-9]+" <<<"$out" || fail "version: no version of $lib in:"$'\n'"$out"
done
run "$CLI" --version;         expect_rc 0 "--version"
run "$CLI" no-such-command;   expect_rc 2 "unknown command"; expect_out 'unknown command "no-such-command"' "unknown command"
run "$CLI";                   expect_rc 2 "no command"
# `cdcflow help` and `cdcflow help COMMAND` (as git's); a typo suggests the command
run "$CLI" help;              expect_rc 0 "help"; expect_out "Usage: cdcflow" "help"; expect_out "validate" "help"
run "$CLI" help run;          expect_rc 0 "help run"; expect_out "Usage: cdcflow run" "help run"
run "$CLI" help valdate;      expect_rc 2 "help typo"; expect_out 'Did you mean "validate"?' "help typo"
run "$CLI" vaildate x.json;   expect_rc 2 "typo"; expect_out 'Did you mean "validate"?' "typo"
# a JSON array of one connector is that connector; of two, a clear error
printf '[{"name": "arr", "config": {"connector.class": "cdc-sink", "topics": "t"}}]\n' > "$T/arr.json"
run "$CLI" validate "$T/arr.json"; expect_rc 0 "json array"; expect_out 'OK (connector "arr", cdc-sink sink)' "json array"
printf '  [{"name": "a"}, {"name": "b"}]' > "$T/arr2.json"
run "$CLI" validate "$T/arr2.json"; expect_rc 2 "json array of 2"
expect_out "connector configuration is a JSON array of 2 elements" "json array of 2"
# a misspelt connector class suggests the closest (validate and run)
printf '{"name": "t", "config": {"connector.class": "io.debezium.connector.jdbc.JdbcSinkConector", "topics": "t"}}' \
  > "$T/typo.json"
run "$CLI" validate "$T/typo.json"; expect_rc 2 "class typo"
expect_out 'did you mean "io.debezium.connector.jdbc.JdbcSinkConnector"?' "class typo"
run "$CLI" run "$T/typo.json" --input /dev/null; expect_rc 2 "run class typo"
expect_out 'Did you mean "io.debezium.connector.jdbc.JdbcSinkConnector"?' "run class typo"
run "$CLI" --bogus-option;    expect_rc 2 "unknown global option"

# ---- every command's --help: exit 0 and a usage line ----
cmds=$("$CLI" --help | awk '/^Commands:/{on=1; next} on && /^  [a-z]/{print $1} on && /^$/{on=0}')
[[ -n $cmds ]] || fail "no commands parsed from --help"
for c in $cmds; do
  run "$CLI" "$c" --help; expect_rc 0 "$c --help"; expect_out "Usage: cdcflow $c" "$c --help"
  run "$CLI" "$c" -h;     expect_rc 0 "$c -h"
done

# ---- config ----
run "$CLI" config;            expect_rc 2 "config without subcommand"
run "$CLI" config nope;       expect_rc 2 "config nope"
run "$CLI" config docs;       expect_rc 0 "config docs"; expect_out "# Configuration reference" "config docs"
expect_out '#### `tasks.max`' "config docs"

# ---- validate: good files ----
mkdir -p "$T/in"
cat > "$T/good.properties" <<PROPS
# a files source, as Kafka Connect's connect-file-source.properties is written
name = files-1
connector.class: files
tasks.max 2
files.path=$T/in
errors.tolerance=ALL
transforms=route
transforms.route.type=org.apache.kafka.connect.transforms.RegexRouter
transforms.route.regex=(.*)
transforms.route.replacement=\$1-copy
PROPS
cat > "$T/good.json" <<JSON
{"name": "files-2", "config": {"connector.class": "files", "files.path": "$T/in", "tasks.max": 1,
 "errors.log.enable": true}}
JSON
run "$CLI" validate "$T/good.properties"; expect_rc 0 "validate good.properties"; expect_out "$T/good.properties: OK" "validate good.properties"
run "$CLI" validate "$T/good.json";       expect_rc 0 "validate good.json"; expect_out 'OK (connector "files-2"' "validate good.json"
run "$CLI" validate "$T/good.properties" "$T/good.json"; expect_rc 0 "validate two good files"

# ---- validate: bad files (every problem, with file:line) ----
cat > "$T/bad.properties" <<PROPS
name=files-3
connector.class=files
files.path=$T/in
taks.max=2
errors.tolerance=sometimes
tasks.max=0
PROPS
run "$CLI" validate "$T/bad.properties"; expect_rc 2 "validate bad.properties"
expect_out "$T/bad.properties: INVALID (3 problems)" "bad.properties"
expect_out "$T/bad.properties:4: taks.max: unknown configuration \"taks.max\"" "bad.properties typo"
expect_out 'did you mean "tasks.max"' "bad.properties typo hint"
expect_out "$T/bad.properties:5: errors.tolerance: " "bad.properties enum"
expect_out "none, all" "bad.properties enum values"
expect_out "$T/bad.properties:6: tasks.max: " "bad.properties range"
expect_out "Value must be at least 1" "bad.properties range"

printf '{"name": "x",\n "config": {"connector.class": "files", "files.path": "/tmp",\n  "taks.max": 1}}\n' > "$T/typo.json"
run "$CLI" validate "$T/typo.json"; expect_rc 2 "typo in JSON"
expect_out "$T/typo.json:3: taks.max: unknown configuration" "typo in JSON names the line"

printf '{"name": "x", "config": {"files.path": "/tmp"}}\n' > "$T/noclass.json"
run "$CLI" validate "$T/noclass.json"; expect_rc 2 "missing connector.class"
expect_out 'missing required configuration "connector.class"' "missing connector.class"
expect_out "known connectors: " "missing connector.class"; expect_out "files (source)" "missing connector.class"

printf 'name=x\nconnector.class=com.example.Nope\nwhatever=1\n' > "$T/unknown.properties"
run "$CLI" validate "$T/unknown.properties"; expect_rc 2 "unknown connector.class"
expect_out "$T/unknown.properties:2: connector.class: unknown connector \"com.example.Nope\"" "unknown class"
expect_out "files (source)" "unknown class lists connectors"
grep -qF "whatever" <<<"$out" && fail "unknown class: other keys must not be reported as unknown"

printf '{"name": "x",\n "config": {"connector.class": "files",}}\n' > "$T/broken.json"
run "$CLI" validate "$T/broken.json"; expect_rc 2 "broken JSON"; expect_out "$T/broken.json:2:" "broken JSON names line"

printf 'name=x\nconnector.class=files\nbad=\\u12\n' > "$T/escape.properties"
run "$CLI" validate "$T/escape.properties"; expect_rc 2 "bad escape"; expect_out "$T/escape.properties:3" "bad escape line"

cat > "$T/conv.properties" <<PROPS
name=x
connector.class=files
files.path=$T/in
key.converter=org.apache.kafka.connect.json.JsonConverter
key.converter.schemas.enable=maybe
value.converter=avrox
PROPS
run "$CLI" validate "$T/conv.properties"; expect_rc 2 "converters"
expect_out "$T/conv.properties:5: key.converter.schemas.enable: " "converter setting"
expect_out "Expected value to be either true or false" "converter setting"
expect_out "$T/conv.properties:6: value.converter: unknown converter \"avrox\"; known converters: json" "unknown converter"
printf 'name=x\nconnector.class=files\nfiles.path=%s\nvalue.converter=json\nvalue.converter.schemas.enable=false\n' "$T/in" > "$T/conv-ok.properties"
run "$CLI" validate "$T/conv-ok.properties"; expect_rc 0 "converter settings ok"

# transforms: known type, the transform's own settings, what the chain refuses
cat > "$T/smt.properties" <<PROPS
name=x
connector.class=files
files.path=$T/in
transforms=route,u
transforms.route.type=RegexRouter
transforms.route.regexx=a
transforms.u.type=com.example.Nope
PROPS
run "$CLI" validate "$T/smt.properties"; expect_rc 2 "transforms"
expect_out "$T/smt.properties:6: transforms.route.regexx: unknown configuration" "transform setting typo"
expect_out 'did you mean "regex"' "transform setting typo"
expect_out "transforms.route.replacement: missing required configuration" "transform required setting"
expect_out "$T/smt.properties:7: transforms.u.type: unknown transform \"com.example.Nope\"; known transforms: " "unknown transform"

# sinks: exactly one of topics / topics.regex (SinkConnectorConfig.validate)
run "$CLI" validate "$T/noclass.json"
sink=$(grep -o 'known connectors: .*' <<<"$out" | tr ',' '\n' | sed -n 's/^ *\(known connectors: \)\{0,1\}\([^ ]*\) (sink).*/\2/p' | head -1)
if [[ -n $sink ]]; then
  printf 'name=s\nconnector.class=%s\n' "$sink" > "$T/sink0.properties"
  run "$CLI" validate "$T/sink0.properties"; expect_rc 2 "sink without topics"
  expect_out "must configure one of topics or topics.regex" "sink without topics"
  printf 'name=s\nconnector.class=%s\ntopics=a\ntopics.regex=b.*\n' "$sink" > "$T/sink2.properties"
  run "$CLI" validate "$T/sink2.properties"; expect_rc 2 "sink with both"
  expect_out "$T/sink2.properties:3: topics: topics and topics.regex are mutually exclusive" "sink with both"
else
  echo "note: no sink connector registered; sink checks not run"
fi

run "$CLI" validate "$T/good.json" "$T/bad.properties"; expect_rc 2 "good + bad"
expect_out "1 of 2 file(s) invalid" "good + bad summary"
run "$CLI" validate "$T/does-not-exist.json"; expect_rc 2 "missing file"; expect_out "cannot open" "missing file"
run "$CLI" validate;                          expect_rc 2 "validate without files"

# ---- logging: levels, text and JSON formats; a runtime failure exits 1 ----
# A files source with errors.tolerance=none on a malformed CSV row logs at
# INFO, WARN and ERROR and fails its task: exit code 1.
mkdir -p "$T/logsrc"
printf 'a,b\n1,"say ""hi"""\n"x"y,3\n' > "$T/logsrc/bad.csv"
printf 'transport=direct\noffset.storage.file.filename=%s/log-offsets.json\n' "$T" > "$T/log-worker.properties"
cat > "$T/logsrc.json" <<JSON
{"name": "logs", "config": {"connector.class": "files", "files.path": "$T/logsrc", "topic": "t", "input.format": "csv",
 "files.min.age.ms": "0", "errors.tolerance": "none", "key.converter": "string", "value.converter": "json"}}
JSON
# logrun ARGS...: run the failing connector with the given global options; $log is its stderr
logrun() {
  rm -f "$T/log-offsets.json"
  timeout 30 "$CLI" "$@" run --worker "$T/log-worker.properties" --output "$T/log-out.jsonl" "$T/logsrc.json" \
    2>"$T/stderr" >/dev/null
  rc=$?; log=$(cat "$T/stderr"); out=$log
}
# check_json_log WHAT: every stderr line is one JSON object {ts, level, component, msg} in
# that order (the command's final error included); the bad row's WARN names object, line
# and byte; the task failure is an ERROR
check_json_log() {
  python3 - "$T/stderr" <<'PY' || fail "$1: JSON log lines:"$'\n'"$log"
import json, re, sys
lines = [l for l in open(sys.argv[1]).read().splitlines() if l.strip()]
assert lines, "no log lines"
levels = set()
for l in lines:
    o = json.loads(l)
    assert list(o) == ["ts", "level", "component", "msg"], list(o)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", o["ts"]), o["ts"]
    assert o["level"] in ("TRACE", "DEBUG", "INFO", "WARN", "ERROR"), o["level"]
    assert isinstance(o["component"], str) and isinstance(o["msg"], str)
    levels.add(o["level"])
warn = [json.loads(l)["msg"] for l in lines if json.loads(l)["level"] == "WARN"]
assert any('bad.csv: line 3, byte 19' in m and '"' in m for m in warn), warn
assert {"INFO", "WARN", "ERROR"} <= levels, levels
# the command's final error is a log line too (component "cli")
assert any(json.loads(l)["component"] == "cli" and json.loads(l)["level"] == "ERROR" for l in lines), lines[-3:]
PY
}
logrun --log-format json;         expect_rc 1 "--log-format json run (task fails)"; check_json_log "--log-format json"
logrun --log-format=json;         expect_rc 1 "--log-format=json run"; check_json_log "--log-format=json"
CDCFLOW_LOG_FORMAT=json logrun;   expect_rc 1 "CDCFLOW_LOG_FORMAT=json run"; check_json_log "CDCFLOW_LOG_FORMAT=json"
run "$CLI" --log-format json run "$T/no-such-connector.json"; expect_rc 2 "--log-format json, missing file"
python3 -c 'import json, sys; o = json.loads(sys.argv[1]); assert o["level"] == "ERROR" and "cannot open" in o["msg"], o' "$out" \
  || fail "--log-format json: a usage error is not one JSON line: $out"
logrun --log-format json --log-level error; expect_rc 1 "--log-level error run"
grep -q '"level":"INFO"\|"level":"WARN"' <<<"$log" && fail "--log-level error still logs INFO/WARN: $log"
grep -q '"level":"ERROR"' <<<"$log" || fail "--log-level error: no ERROR line: $log"
logrun;                           expect_rc 1 "text log run"
grep -qE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{12}Z WARN  \[source\] .*bad.csv: line 3, byte 19' <<<"$log" \
  || fail "text log line format: $log"
logrun --log-format xml;          expect_rc 2 "invalid --log-format"; expect_out "Use text or json" "invalid --log-format"
CDCFLOW_LOG_FORMAT=xml logrun;    expect_rc 2 "invalid CDCFLOW_LOG_FORMAT"; expect_out "CDCFLOW_LOG_FORMAT" "invalid CDCFLOW_LOG_FORMAT"
logrun --log-level loud;          expect_rc 2 "invalid --log-level"
CDCFLOW_LOG_LEVEL=loud logrun;    expect_rc 2 "invalid CDCFLOW_LOG_LEVEL"

if (( fails )); then echo "$fails failure(s)"; exit 1; fi
echo "all CLI checks passed"
