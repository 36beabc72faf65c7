#!/usr/bin/env bash
# test_run_cli.sh - `cdcflow run` as a user runs it: a real source (the
# stream connector on stdin) written to a record file, offsets in the
# default file, SIGTERM handling and the documented exit codes.
set -euo pipefail
CLI=${CF_CLI:?CF_CLI is the cdcflow binary}
T=$(mktemp -d /tmp/cf_run_cli.XXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$T"
fail() { echo "FAIL: $*" >&2; exit 1; }

cat > stream.json <<'J'
{"name": "lines", "config": {"connector.class": "stream", "topic": "lines", "stream.type": "stdin"}}
J

# 1. a bounded run: stdin to a record file (kcat -J lines), exit 0, offsets stored
printf 'a\nb\nc\n' | "$CLI" run --output out.jsonl stream.json 2>err.txt || fail "run exited $?: $(cat err.txt)"
[ "$(wc -l < out.jsonl)" = 3 ] || fail "expected 3 records, got: $(cat out.jsonl)"
grep -q '"topic":"lines"' out.jsonl || fail "no topic in record file"
grep -q '\\"payload\\":\\"b\\"' out.jsonl || fail "value b missing: $(cat out.jsonl)"
grep -q '"key":\["lines",{"stream":"lines"}\]' cdcflow.offsets.json || fail "offsets: $(cat cdcflow.offsets.json)"
grep -q '"recordCount":3' cdcflow.offsets.json || fail "offsets: $(cat cdcflow.offsets.json)"

# 2. SIGTERM while the source waits for input: clean stop, exit 0
rm -f out.jsonl
mkfifo fifo
sleep 20 > fifo &
HOLD=$!
"$CLI" run --output out.jsonl stream.json < fifo 2>err.txt &
P=$!
sleep 1
kill -TERM "$P"
rc=0; wait "$P" || rc=$?
kill "$HOLD" 2>/dev/null || true
[ "$rc" = 0 ] || fail "SIGTERM: exit $rc: $(cat err.txt)"
grep -q "stop requested" err.txt || fail "no stop line: $(cat err.txt)"

# 3. exit codes
rc=0; "$CLI" run 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "no connector: expected 2, got $rc"
echo '{"name":"x","config":{"connector.class":"no-such-connector"}}' > bad.json
rc=0; "$CLI" run bad.json 2>err.txt || rc=$?
[ "$rc" = 2 ] || fail "unknown class: expected 2, got $rc"
grep -q 'unknown connector.class "no-such-connector"' err.txt || fail "message: $(cat err.txt)"
printf 'transport=pigeon\n' > w.properties
rc=0; "$CLI" run --worker w.properties stream.json 2>err.txt || rc=$?
[ "$rc" = 2 ] || fail "bad worker config: expected 2, got $rc"
grep -q transport err.txt || fail "message: $(cat err.txt)"
# a record for a topic no sink reads in direct mode: a task failure (1), nothing dropped
printf 'z\n' | { rc=0; "$CLI" run stream.json 2>err.txt || rc=$?; [ "$rc" = 1 ] || fail "no sink: expected 1, got $rc"; }
grep -q 'no sink connector subscribes to topic "lines"' err.txt || fail "message: $(cat err.txt)"
"$CLI" run --help > help.txt || fail "help: exit $?" # whole, then grep: grep -q stopping early gave a SIGPIPE under pipefail
grep -q "Exit codes" help.txt || fail "help"
echo OK
