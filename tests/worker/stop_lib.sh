# stop_lib.sh - what the bounded-stop tests (test_it_stop_*.sh, issue 19)
# share: a worker started in the background with its REST API on a free port,
# waits on its metrics, a timed stop (SIGTERM, DELETE) checked against
# task.shutdown.graceful.timeout.ms, and the records they write and expect.
#
# The bound: the tests run with STOP_MS=2000 and accept a stop that takes
# STOP_MS + SLACK_MS; the worker itself promises STOP_MS + 1 s (docs/
# operations.md), the rest is slack for a loaded machine (sanitizer builds).
# Sourced; needs CLI (the cdcflow binary) and T (the test's directory).

# on_exit_restore SERVER...: at exit, kill what the test started and bring
# the spare SERVERs (KAFKA, PG, REGISTRY) back up (thawed, started), for the
# next test.
restore_spare() {
    local s thaw start
    kill -9 $(jobs -p) 2>/dev/null || true
    for s in $RESTORE; do
        thaw=CF_TEST_SPARE_${s}_THAW start=CF_TEST_SPARE_${s}_START
        [[ -n ${!thaw:-} ]] && { eval "${!thaw}" >/dev/null 2>&1 || true; }
        eval "${!start}" >/dev/null 2>&1 || true
    done
    [[ -n ${KEEP:-} ]] || rm -rf "$T"
}
on_exit_restore() {
    RESTORE="$*"
    trap restore_spare EXIT
}

STOP_MS=2000
SLACK_MS=2500
fail() { echo "FAIL: $*" >&2; exit 1; }
now_ms() { date +%s%3N; }
need_env() { # need_env NAME...: fail (never skip) when a server's variable is missing
    local v
    for v in "$@"; do
        [[ -n ${!v:-} ]] || fail "$v is not set: scripts/run-tests starts the spare servers (CF_TEST_SPARE_*) and the shared ones; see scripts/servers"
    done
}

# wait_until SECONDS WHAT COMMAND...: poll every 0.2 s
wait_until() {
    local t=$1 what=$2 end
    shift 2
    end=$(( $(now_ms) + t * 1000 ))
    until "$@" >/dev/null 2>&1; do
        (( $(now_ms) < end )) || fail "timed out after ${t}s waiting for $what"
        sleep 0.2
    done
}

# A worker file: worker_props FILE BOOTSTRAP [extra lines...]; the shutdown
# timeout is $STOP_TIMEOUT when set, else STOP_MS; source offsets go to the
# topic $OFFSETS_TOPIC when set, else to a file
worker_props() {
    local f=$1 bs=$2
    shift 2
    {
        echo "bootstrap.servers=$bs"
        if [[ -n ${OFFSETS_TOPIC:-} ]]; then
            printf 'offset.storage.topic=%s\noffset.storage.partitions=1\noffset.storage.replication.factor=1\n' "$OFFSETS_TOPIC"
        else
            echo "offset.storage.file.filename=$T/$(basename "$f" .properties).offsets.json"
        fi
        echo "key.converter=json"
        echo "value.converter=json"
        echo "rest.port=0"
        echo "task.shutdown.graceful.timeout.ms=${STOP_TIMEOUT:-$STOP_MS}"
        local l
        for l in "$@"; do echo "$l"; done
    } >"$f"
}

# start_worker NAME ARGS...: `cdcflow run ARGS` in the background; NAME.pid,
# NAME.log, and NAME.port once its REST API listens
start_worker() {
    local name=$1
    shift
    start_cmd "$name" "$CLI" run "$@"
}
# start_cmd NAME COMMAND...: the same for any command that logs the worker's
# "REST API on" line (cdcflow cassandra sidecar --rest 0)
start_cmd() {
    local name=$1
    shift
    "$@" 2>"$T/$name.log" &
    echo $! >"$T/$name.pid"
    wait_until 30 "the REST API of $name" grep -q "REST API on" "$T/$name.log"
    sed -n 's/.*REST API on http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$T/$name.log" | head -1 >"$T/$name.port"
}

# metric NAME METRIC CONNECTOR: the value of a task metric (task 0)
metric() {
    curl -s -m 2 "http://127.0.0.1:$(cat "$T/$1.port")/metrics" |
        sed -n "s/^$2{connector=\"$3\",task=\"0\"[^}]*} \([0-9]*\).*/\1/p" | head -1
}
metric_at_least() { local v; v=$(metric "$1" "$2" "$3"); [[ -n $v && $v -ge $4 ]]; }

# timed_stop NAME [SIGNAL]: signal the worker, wait for its exit; sets
# STOP_RC and STOP_TOOK (ms). Waits at most 60 s, then SIGKILLs it and fails.
timed_stop() {
    local name=$1 sig=${2:-TERM} pid t0 i
    pid=$(cat "$T/$name.pid")
    t0=$(now_ms)
    kill -"$sig" "$pid"
    for ((i = 0; i < 600; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        fail "$name still ran 60 s after SIGTERM (killed); log: $(tail -5 "$T/$name.log")"
    fi
    STOP_RC=0
    wait "$pid" || STOP_RC=$?
    STOP_TOOK=$(( $(now_ms) - t0 ))
    echo "$name: SIG$sig -> exit $STOP_RC after $STOP_TOOK ms" >&2
}

# assert_bounded NAME [RC]: the last timed_stop took at most STOP_MS +
# SLACK_MS and exited RC (default 4: the stop was not clean)
assert_bounded() {
    local name=$1 rc=${2:-4}
    (( STOP_TOOK <= STOP_MS + SLACK_MS )) ||
        fail "$name: the stop took $STOP_TOOK ms, more than task.shutdown.graceful.timeout.ms=$STOP_MS + $SLACK_MS ms; log: $(tail -8 "$T/$name.log")"
    [[ $STOP_RC == "$rc" ]] || fail "$name: exit $STOP_RC, want $rc; log: $(tail -8 "$T/$name.log")"
}

# Debezium-flattened rows as the JsonConverter writes them (schemas.enable):
# key {id}, value {id, name}; rows N: ids 1..N named nI, then ids 1..N/2
# renamed uI (so the table must end with the last version of each).
json_rows() {
    local n=$1 i
    local k='{"schema":{"type":"struct","fields":[{"field":"id","type":"int32","optional":false}]},"payload":{"id":%d}}'
    local v='{"schema":{"type":"struct","fields":[{"field":"id","type":"int32","optional":false},{"field":"name","type":"string","optional":true}]},"payload":{"id":%d,"name":"%s%d"}}'
    for ((i = 1; i <= n; i++)); do printf "$k|$v\n" "$i" "$i" n "$i"; done
    for ((i = 1; i <= n / 2; i++)); do printf "$k|$v\n" "$i" "$i" u "$i"; done
}
# the table they must give: "id|name" lines ordered by id
expected_rows() {
    local n=$1 i
    for ((i = 1; i <= n; i++)); do
        if ((i <= n / 2)); then echo "$i|u$i"; else echo "$i|n$i"; fi
    done
}
json_count() { echo $(( $1 + $1 / 2 )); } # messages json_rows writes

# produce BOOTSTRAP TOPIC N: json_rows into the topic (one partition, created first)
produce() {
    kcat -P -b "$1" -t "$2" -K '|' -X topic.partitioner=murmur2_random < <(json_rows "$3") ||
        fail "kcat could not produce to $2 at $1"
}

# sink_json FILE NAME TOPIC EXTRA_JSON_MEMBERS: a cdc-sink connector file.
# Its own flush interval (mergeIntervalMs) is $MERGE_MS when set: the stop
# tests set -1, so that what was read is still unflushed when the stop comes.
sink_json() {
    local merge=
    [[ -n ${MERGE_MS:-} ]] && merge=",\"mergeIntervalMs\":\"$MERGE_MS\""
    printf '{"name":"%s","config":{"connector.class":"cdc-sink","topics":"%s"%s%s}}\n' "$2" "$3" "$merge" "${4:-}" >"$1"
}
