# check_lib.sh - sourced by tests/worker/ shell tests that report each check
# and go on (ok/fail), then exit with $failed: CLI, a temporary folder T
# removed at exit (with the test's background jobs killed), ok, fail.
set -uo pipefail
CLI=${CF_CLI:?CF_CLI not set}
T=$(mktemp -d)
trap 'kill -9 $(jobs -p) 2>/dev/null || true; rm -rf "$T"' EXIT
failed=0
ok() { echo "ok: $1"; }
fail() { echo "FAIL: $1"; failed=1; }
