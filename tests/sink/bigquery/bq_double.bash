# bq_double.bash - sourced by the shell tests of the BigQuery target (after set -euo pipefail,
# with PY = the test venv's python): a work directory W, current from here on and removed at
# exit, and bqd_start, which starts the BigQuery TEST DOUBLE (tests/bigquery/bq_test_server.py)
# in it on free loopback ports with the options given, logging to double.log, and waits for its
# ready.json (its addresses, see tests/bigquery/README.md). The double is stopped at exit.
# The caller defines fail MESSAGE (exits), which bqd_start calls.
BQD_SERVER=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../bigquery" && pwd)/bq_test_server.py
W=$(mktemp -d)
BQD_PID=
bqd_cleanup() {
  if [[ -n $BQD_PID ]]; then kill "$BQD_PID" 2>/dev/null || true; wait "$BQD_PID" 2>/dev/null || true; fi
  rm -rf "$W"
}
trap bqd_cleanup EXIT
cd "$W"

bqd_start() {
  "$PY" "$BQD_SERVER" --grpc-port 0 --http-port 0 --ready-file ready.json "$@" > double.log 2>&1 &
  BQD_PID=$!
  local _
  for _ in $(seq 600); do   # up to 60 s: Python imports grpc and protobuf
    [[ -f ready.json ]] && return 0
    kill -0 "$BQD_PID" 2>/dev/null || fail "the BigQuery test double exited"
    sleep 0.1
  done
  fail "the BigQuery test double is not ready after 60 s"
}
