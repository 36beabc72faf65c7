# sidecar_rest_lib.sh - sourced by the tests of `cdcflow cassandra sidecar
# --rest` (test_sidecar_rest.sh, test_sidecar_statements.sh,
# test_it_sidecar_statements.sh; not a test itself: tests/CMakeLists.txt
# registers only test_*.sh): the fixture v8-lz4-rollover (a real Cassandra
# 5.0 node) copied as three replicas, a sidecar in the background with its
# REST API on a free port (--rest 0, the port read from its "REST API on"
# log line), requests to it, its stop. At exit, what the test started is
# killed and $T removed.
# The caller sets CLI (the cdcflow binary), TESTS (tests/) and T (its work
# directory).
#
#   R                        the fixture's directory (schema.cql, cdc_raw)
#   sc_replicas              its cdc_raw copied to $T/n1, $T/n2, $T/n3
#   sc_start ARGS...         the sidecar with ARGS (stderr to $T/log); with
#                            TOKEN set, behind that worker.rest.auth.token;
#                            sets pid, port and url once the API answers
#   api METHOD PATH [BODY]   prints the HTTP status, the body goes to
#                            $T/body; Content-Type $CT (application/json)
#   sc_stop                  SIGTERM, wait; returns the sidecar's exit code

R=$TESTS/data/cassandra/v8-lz4-rollover
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$T"' EXIT

sc_replicas() {
  local i
  for i in 1 2 3; do cp -r "$R/cdc_raw" "$T/n$i"; done
}

sc_start() {
  local auth=()
  if [[ -n ${TOKEN:-} ]]; then
    echo "{\"worker.rest.auth.token\": \"$TOKEN\"}" >"$T/auth.json"
    auth=(--config "$T/auth.json")
  fi
  "$CLI" cassandra sidecar "${auth[@]}" --rest 0 "$@" 2>"$T/log" &
  pid=$!
  port=
  local i
  for i in $(seq 300); do
    port=$(sed -n 's/.*REST API on http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$T/log" | head -1)
    [[ -n $port ]] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.1
  done
  if [[ -z $port ]]; then
    echo "FAIL: the sidecar's REST API did not start: $(tail -5 "$T/log")"
    exit 1
  fi
  url=http://127.0.0.1:$port
  for i in $(seq 100); do [[ $(api GET /connectors 2>/dev/null) == 200 ]] && break; sleep 0.1; done
}

api() {
  local auth=()
  [[ -n ${TOKEN:-} ]] && auth=(-H "Authorization: Bearer $TOKEN")
  curl -s -o "$T/body" -w '%{http_code}' -X "$1" "${auth[@]}" -H "Content-Type: ${CT:-application/json}" \
    ${3:+--data-binary "$3"} "$url$2"
}

sc_stop() {
  kill -TERM $pid
  wait $pid
}
