#!/usr/bin/env bash
# test_sidecar_stop.sh - issue 19: the stop of the cassandra-cdc source is
# bounded when the node it reads the schema from (--cql) accepts connections
# and never answers (a frozen node: a listener of this test that sends
# nothing). The CQL client would wait its request timeout (30 s); a stop ends
# the wait at once, and the entry that asked for the schema is not taken as
# "unknown table" (that would skip its changes for good): it is read again at
# the next start.
#
#   1 SIGTERM while the start waits for the schema over CQL: exits within
#     task.shutdown.graceful.timeout.ms (2 s) + slack, exit 0, the refresh
#     logged as abandoned (not ended by the worker's bound)
#   2 the node down at start (the schema given is kept, without the table
#     cdcks.bulk), then frozen; the segments arrive (live tailing): the first
#     bulk entry asks for a refresh, which waits on the frozen node; SIGTERM
#     exits within the bound. A run with the whole schema from the stored
#     state then publishes the rest: the events of both runs, replayed, equal
#     Cassandra's SELECT JSON (fixture v8-lz4-rollover): nothing lost
set -uo pipefail
CLI=${CF_CLI:?} ; TESTS=${CF_TESTS_DIR:?}
DATA=$TESTS/data/cassandra
R=v8-lz4-rollover
T=$(mktemp -d) ; trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$T"' EXIT
failed=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; failed=1; fi; }
now_ms() { date +%s%3N; }
STOP_MS=2000 SLACK_MS=2500

sed '/^CREATE TABLE cdcks.bulk (/,/^$/d' "$DATA/$R/schema.cql" >"$T/nobulk.cql"
grep -q 'cdcks.bulk' "$T/nobulk.cql" && { echo "FAIL: nobulk.cql still has cdcks.bulk"; exit 1; }
echo "{\"worker.task.shutdown.graceful.timeout.ms\": \"$STOP_MS\"}" >"$T/sc.json"
# frozen PORT: accept connections on PORT (0: any, printed) and answer nothing
frozen() {
  exec python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(16)
print(s.getsockname()[1], flush=True)
held = []
while True:
    held.append(s.accept()[0])
' "$1"
}
# stop PID LOG: SIGTERM, wait; sets RC and TOOK (ms)
stop() {
  local t0; t0=$(now_ms)
  kill -TERM "$1"
  wait "$1"; RC=$?
  TOOK=$(( $(now_ms) - t0 ))
}

# ---- 1: the start waits for the frozen node
frozen 0 >"$T/port1" & F1=$!
for i in $(seq 50); do [[ -s $T/port1 ]] && break; sleep 0.1; done
mkdir -p "$T/s1"
"$CLI" cassandra sidecar --config "$T/sc.json" --schema "$T/nobulk.cql" --cql "127.0.0.1:$(cat "$T/port1")" \
  --replica "$T/s1" --consistency ONE --output "$T/s1.jsonl" --offsets "$T/s1.offsets" --cleanup none 2>"$T/s1.err" &
pid=$!
sleep 1.5
stop $pid
kill $F1 2>/dev/null
check "1: SIGTERM during the schema read at start: exit 0 within $STOP_MS + $SLACK_MS ms (exit $RC after $TOOK ms)" \
  "[[ $RC -eq 0 && $TOOK -le $(( STOP_MS + SLACK_MS )) ]] || { tail -5 '$T/s1.err'; false; }"
check "1: the schema read is abandoned by the stop, not ended by the worker's bound" \
  "grep -q 'schema refresh (start) abandoned: the task is stopping' '$T/s1.err' && ! grep -q 'the stop did not end' '$T/s1.err'"

# ---- 2: a refresh in the middle of the run waits for the frozen node
P=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$T/n1"
"$CLI" cassandra sidecar --config "$T/sc.json" --schema "$T/nobulk.cql" --cql "127.0.0.1:$P" \
  --replica "$T/n1" --consistency ONE --output "$T/run.jsonl" --offsets "$T/run.offsets" --cleanup none 2>"$T/run1.err" &
pid=$!
for i in $(seq 100); do grep -q 'schema refresh (start) failed' "$T/run1.err" && break; sleep 0.1; done
check "2: the node down at start: the schema given is kept" "grep -q 'schema refresh (start) failed' '$T/run1.err'"
frozen "$P" >"$T/port2" & F2=$!
for i in $(seq 50); do [[ -s $T/port2 ]] && break; sleep 0.1; done
sleep 1.1 # refreshes come at most once a second
for s in "$DATA/$R"/cdc_raw/*.log; do cp "$s" "${s%.log}_cdc.idx" "$T/n1/"; done
sleep 2 # the first bulk entry asks for the schema: the refresh waits on the frozen node
stop $pid
kill $F2 2>/dev/null
before=$(wc -l <"$T/run.jsonl")
check "2: SIGTERM during a refresh: exit 0 within the bound (exit $RC after $TOOK ms, $before events out)" \
  "[[ $RC -eq 0 && $TOOK -le $(( STOP_MS + SLACK_MS )) ]] || { tail -5 '$T/run1.err'; false; }"
check "2: the refresh for the unknown table id is abandoned, the table not taken as unknown" \
  "grep -q 'schema refresh (unknown table id) abandoned' '$T/run1.err' && ! grep -q 'are skipped: not in the schema' '$T/run1.err'"
"$CLI" cassandra sidecar --schema "$DATA/$R/schema.cql" --replica "$T/n1" --consistency ONE --once \
  --output "$T/run.jsonl" --offsets "$T/run.offsets" 2>"$T/run2.err"
rc=$?
check "2: the run after it: exit 0 (got $rc)" "[[ $rc -eq 0 ]] || { tail -5 '$T/run2.err'; false; }"
check "2: the events of both runs, replayed, equal Cassandra's SELECT JSON ($before, then $(( $(wc -l <"$T/run.jsonl") - before )) lines)" \
  "python3 '$TESTS/sidecar/events_replay.py' '$T/run.jsonl' '$DATA/$R' >'$T/replay' 2>&1 || { cat '$T/replay'; false; }"
exit $failed
