# rest_lib.sh - sourced by tests/worker/test_rest_*.sh: start a private
# `cdcflow run --rest` worker on a free port (rest.port=0, the port read
# from its "REST API on" log line) and stop it. Nothing shared: each worker
# runs in its own folder with its own offsets file.
#
#   rest_start DIR [worker.properties lines...]   sets WPID, PORT, BASE
#   rest_stop                                     SIGTERM, wait
#   code METHOD PATH [curl args...]               prints the HTTP status; body in $T/body
#   py FILE EXPR...                               assert each python expression about b (the JSON in FILE)
CLI=${CF_CLI:?CF_CLI is the cdcflow binary}
fail() { echo "FAIL: $*" >&2; exit 1; }
WPID=

rest_start() {
    local dir=$1
    shift
    mkdir -p "$dir"
    : > "$dir/w.properties"
    local have_listener=0 l
    for l in "$@"; do
        printf '%s\n' "$l" >> "$dir/w.properties"
        case $l in listeners=* | rest.port=* | rest.host.name=*) have_listener=1 ;; esac
    done
    [ "$have_listener" = 1 ] || printf 'listeners=http://127.0.0.1:0\n' >> "$dir/w.properties"
    printf 'offset.storage.file.filename=%s/offsets.json\n' "$dir" >> "$dir/w.properties"
    (cd "$dir" && exec "$CLI" run --rest --worker w.properties < /dev/null > "$dir/out.txt" 2> "$dir/err.txt") &
    WPID=$!
    RDIR=$dir
    PORT=
    for _ in $(seq 100); do
        PORT=$(grep -o 'REST API on https\?://[^ ]*:[0-9]*' "$dir/err.txt" 2>/dev/null | grep -o '[0-9]*$' || true)
        [ -n "$PORT" ] && break
        kill -0 "$WPID" 2>/dev/null || fail "worker exited: $(cat "$dir/err.txt")"
        sleep 0.1
    done
    [ -n "$PORT" ] || fail "no REST port in the log: $(cat "$dir/err.txt")"
    BASE=http://127.0.0.1:$PORT
}

rest_stop() {
    [ -n "$WPID" ] || return 0
    kill -TERM "$WPID" 2>/dev/null || true
    wait "$WPID" 2>/dev/null || true
    WPID=
}
trap 'rest_stop; [ -n "${CF_KEEP:-}" ] || rm -rf "$T"' EXIT

# code METHOD PATH [curl args...]: the status code; the body is in $T/body
code() {
    local m=$1 p=$2
    shift 2
    curl -s -o "$T/body" -w '%{http_code}' -X "$m" "$@" "$BASE$p"
}

py() {
    local f=$1
    shift
    python3 - "$f" "$@" <<'PY' || fail "JSON check failed on $(cat "$f")"
import json, sys
b = json.load(open(sys.argv[1]))
for e in sys.argv[2:]:
    if not eval(e):
        sys.stderr.write("not true: %s\n" % e)
        sys.exit(1)
PY
}
