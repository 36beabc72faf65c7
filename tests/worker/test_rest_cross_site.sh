#!/usr/bin/env bash
# test_rest_cross_site.sh - a web page must not drive the REST API (issue 15):
# request bodies must be JSON (415 with Connect's error body otherwise, as
# Jersey answers a resource that @Consumes application/json), a foreign
# Origin is refused unless access.control.allow.origin allows it (Connect's
# setting), and a loopback listener accepts only a loopback Host (DNS
# rebinding: a page of evil.example resolved to 127.0.0.1 sends
# "Host: evil.example"). A listener beyond loopback without rest.auth.token
# logs a WARN.
set -euo pipefail
T=$(mktemp -d /tmp/cf_rest_xs.XXXXXX)
source "$(dirname "$0")/rest_lib.sh"

SRC='{"name":"s1","config":{"connector.class":"stream","topic":"t"}}'
json_error() { # STATUS: the body is Connect's error JSON with that code
    python3 - "$T/body" "$1" <<'P' || fail "not Connect's error body for $1: $(cat "$T/body")"
import json, sys
b = json.load(open(sys.argv[1]))
assert b["error_code"] == int(sys.argv[2]) and isinstance(b["message"], str) and b["message"], b
P
}

rest_start "$T/w1"
# 1. Content-Type: a cross-site form or fetch() without preflight sends text/plain
c=$(code POST /connectors -H 'Content-Type: text/plain' --data "$SRC")
[ "$c" = 415 ] || fail "text/plain body: expected 415, got $c: $(cat "$T/body")"
json_error 415
grep -qi 'application/json' "$T/body" || fail "415 message does not say what to send: $(cat "$T/body")"
c=$(code POST /connectors -H 'Content-Type: application/x-www-form-urlencoded' --data "$SRC")
[ "$c" = 415 ] || fail "form body: expected 415, got $c"
c=$(code POST /connectors -H 'Content-Type:' --data "$SRC")
[ "$c" = 415 ] || fail "body without Content-Type: expected 415, got $c"
c=$(code POST /connectors -H 'Content-Type: application/jsonx' --data "$SRC")
[ "$c" = 415 ] || fail "application/jsonx: expected 415, got $c"
[ "$(curl -s "$BASE/connectors")" = "[]" ] || fail "a refused request created a connector: $(curl -s "$BASE/connectors")"
c=$(code PUT /connectors/s2/config -H 'Content-Type: text/plain' --data '{"connector.class":"stream","topic":"t"}')
[ "$c" = 415 ] || fail "PUT config text/plain: expected 415, got $c"
c=$(code POST /connectors -H 'Content-Type: application/json; charset=utf-8' --data "$SRC")
[ "$c" = 201 ] || fail "application/json; charset=utf-8: expected 201, got $c: $(cat "$T/body")"
c=$(code PUT /connectors/s2/config -H 'Content-Type: Application/JSON' --data '{"connector.class":"stream","topic":"t"}')
[ "$c" = 201 ] || fail "PUT config Application/JSON: expected 201, got $c: $(cat "$T/body")"
# no body, no Content-Type: fine (restart, pause)
c=$(code PUT /connectors/s1/pause)
[ "$c" = 202 ] || fail "pause without body: expected 202, got $c: $(cat "$T/body")"

# 2. Origin: a page elsewhere is refused, the listener's own origin is not
c=$(code GET /connectors -H 'Origin: http://evil.example')
[ "$c" = 403 ] || fail "foreign Origin GET: expected 403, got $c"
json_error 403
grep -q 'access.control.allow.origin' "$T/body" || fail "403 does not name the setting: $(cat "$T/body")"
c=$(code POST /connectors -H 'Origin: http://evil.example' -H 'Content-Type: application/json' \
    --data '{"name":"evil","config":{"connector.class":"stream","topic":"t"}}')
[ "$c" = 403 ] || fail "foreign Origin POST: expected 403, got $c"
c=$(code DELETE /connectors/s1 -H 'Origin: null')
[ "$c" = 403 ] || fail "Origin null: expected 403, got $c"
c=$(code GET /connectors -H "Origin: http://127.0.0.1:$PORT")
[ "$c" = 200 ] || fail "own Origin: expected 200, got $c: $(cat "$T/body")"
c=$(code GET /connectors -H "Origin: http://localhost:$PORT" -H "Host: localhost:$PORT")
[ "$c" = 200 ] || fail "own Origin (localhost): expected 200, got $c: $(cat "$T/body")"
c=$(code GET /connectors -H "Origin: http://127.0.0.1:1$PORT")
[ "$c" = 403 ] || fail "Origin on another port: expected 403, got $c"
[ "$(curl -s "$BASE/connectors")" = '["s1","s2"]' ] || fail "connectors: $(curl -s "$BASE/connectors")"

# 3. Host: DNS rebinding
c=$(code GET /connectors -H 'Host: evil.example')
[ "$c" = 421 ] || fail "foreign Host: expected 421, got $c"
json_error 421
c=$(code POST /connectors -H "Host: evil.example:$PORT" -H 'Content-Type: application/json' \
    --data '{"name":"evil","config":{"connector.class":"stream","topic":"t"}}')
[ "$c" = 421 ] || fail "foreign Host POST: expected 421, got $c"
c=$(code GET /connectors -H 'Host: localhost.evil.example')
[ "$c" = 421 ] || fail "Host localhost.evil.example: expected 421, got $c"
c=$(code GET /connectors -H 'Host: 127.0.0.1.evil.example')
[ "$c" = 421 ] || fail "Host 127.0.0.1.evil.example: expected 421, got $c"
for h in 127.0.0.1 "127.0.0.1:$PORT" localhost "localhost:$PORT" LOCALHOST '[::1]' "[::1]:$PORT"; do
    c=$(code GET /connectors -H "Host: $h")
    [ "$c" = 200 ] || fail "Host $h: expected 200, got $c: $(cat "$T/body")"
done
[ "$(curl -s "$BASE/connectors")" = '["s1","s2"]' ] || fail "connectors: $(curl -s "$BASE/connectors")"
grep -q 'WARN.*rest.auth.token' "$T/w1/err.txt" && fail "WARN on a loopback listener: $(cat "$T/w1/err.txt")"
rest_stop

# 4. access.control.allow.origin: a list, or *
rest_start "$T/w2" 'access.control.allow.origin=http://ui.example, https://ops.example:8443'
c=$(code GET /connectors -H 'Origin: http://ui.example')
[ "$c" = 200 ] || fail "allowed Origin: expected 200, got $c: $(cat "$T/body")"
curl -s -D - -o /dev/null -H 'Origin: https://ops.example:8443' "$BASE/connectors" |
    grep -qi '^Access-Control-Allow-Origin: https://ops.example:8443' || fail "no Access-Control-Allow-Origin"
c=$(code GET /connectors -H 'Origin: http://evil.example')
[ "$c" = 403 ] || fail "Origin not in the list: expected 403, got $c"
# the preflight of an allowed origin (Jetty's CrossOriginFilter answers it)
curl -s -D - -o /dev/null -X OPTIONS -H 'Origin: http://ui.example' -H 'Access-Control-Request-Method: POST' \
    "$BASE/connectors" > "$T/pre"
grep -q '^HTTP/1.1 20[04]' "$T/pre" || fail "preflight: $(cat "$T/pre")"
grep -qi '^Access-Control-Allow-Methods:.*POST' "$T/pre" || fail "preflight methods: $(cat "$T/pre")"
rest_stop
rest_start "$T/w3" 'access.control.allow.origin=*'
c=$(code GET /connectors -H 'Origin: http://anything.example')
[ "$c" = 200 ] || fail "Origin with *: expected 200, got $c"
rest_stop

# 5. beyond loopback without a token: a WARN; any Host then (the name is not known)
rest_start "$T/w4" 'rest.host.name=0.0.0.0' 'rest.port=0'
grep -q 'WARN.*0\.0\.0\.0.*rest.auth.token' "$T/w4/err.txt" || fail "no WARN for 0.0.0.0 without token: $(cat "$T/w4/err.txt")"
c=$(code GET /connectors -H 'Host: worker7.example:8083')
[ "$c" = 200 ] || fail "0.0.0.0 listener, Host name: expected 200, got $c"
rest_stop
rest_start "$T/w5" 'rest.host.name=0.0.0.0' 'rest.port=0' 'rest.auth.token=tok-5bd1'
grep -q 'WARN.*rest.auth.token' "$T/w5/err.txt" && fail "WARN with a token: $(cat "$T/w5/err.txt")"
grep -q 'tok-5bd1' "$T/w5/err.txt" && fail "token in the log"
c=$(code GET /connectors -H 'Authorization: Bearer tok-5bd1')
[ "$c" = 200 ] || fail "token: expected 200, got $c"
rest_stop
echo OK
