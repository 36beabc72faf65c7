#!/usr/bin/env bash
# test_rest_names.sh - connector names the REST paths can carry (issue 15):
# a name with '/', NUL, a control character, or empty / only whitespace is
# refused at creation (400 naming the character), over REST and in a `cdcflow
# run` connector file (exit 2 as other configuration errors); a path whose
# name segment holds %00 or %2F never reaches another connector (today
# `DELETE /connectors/x%00` deleted x).
set -euo pipefail
T=$(mktemp -d /tmp/cf_rest_names.XXXXXX)
source "$(dirname "$0")/rest_lib.sh"
J='Content-Type: application/json'

rest_start "$T/w"
c=$(code POST /connectors -H "$J" --data '{"name":"x","config":{"connector.class":"stream","topic":"t"}}')
[ "$c" = 201 ] || fail "create x: $c $(cat "$T/body")"

# 1. refused at creation, with which character and what to do
refused() { # DESCRIPTION JSON-NAME EXPECTED-TEXT
    local c
    c=$(code POST /connectors -H "$J" --data "{\"name\":$2,\"config\":{\"connector.class\":\"stream\",\"topic\":\"t\"}}")
    [ "$c" = 400 ] || fail "$1: expected 400, got $c: $(cat "$T/body")"
    grep -q "$3" "$T/body" || fail "$1: message lacks '$3': $(cat "$T/body")"
    python3 -c 'import json,sys; b=json.load(open(sys.argv[1])); assert b["error_code"]==400' "$T/body" ||
        fail "$1: not Connect's error body"
}
refused "slash" '"a/b"' "'/'"
refused "slash hint" '"a/b"' "name"
refused "NUL" '"x\u0000"' "NUL"
refused "control character" '"a\u0001b"' "U+0001"
refused "newline" '"a\nb"' "U+000A"
refused "DEL" '"a\u007fb"' "U+007F"
refused "empty" '""' "empty"
refused "whitespace" '"   "' "whitespace"
c=$(code PUT /connectors/a%2Fb/config -H "$J" --data '{"connector.class":"stream","topic":"t"}')
[ "$c" = 400 ] || fail "PUT a%2Fb/config: expected 400, got $c: $(cat "$T/body")"
grep -q "'/'" "$T/body" || fail "PUT a%2Fb: $(cat "$T/body")"
c=$(code PUT /connectors/a%01b/config -H "$J" --data '{"connector.class":"stream","topic":"t"}')
[ "$c" = 400 ] || fail "PUT a%01b/config: expected 400, got $c: $(cat "$T/body")"
[ "$(curl -s "$BASE/connectors")" = '["x"]' ] || fail "connectors: $(curl -s "$BASE/connectors")"

# 2. %00 and %2F in the name segment match nothing
for p in 'x%00' 'x%00/restart' 'x%00y' 'x%2F' 'x%2f' 'x%2Fconfig' '%78%00'; do
    c=$(code DELETE "/connectors/$p")
    [ "$c" = 404 ] || [ "$c" = 405 ] || fail "DELETE /connectors/$p: expected 404, got $c: $(cat "$T/body")"
done
for p in 'x%00/restart' 'x%2F/restart' 'x%00/tasks/0/restart'; do
    c=$(code POST "/connectors/$p")
    [ "$c" = 404 ] || fail "POST /connectors/$p: expected 404, got $c: $(cat "$T/body")"
done
for p in 'x%00' 'x%00/config' 'x%2F' 'x%2Fstatus'; do
    c=$(code GET "/connectors/$p")
    [ "$c" = 404 ] || fail "GET /connectors/$p: expected 404, got $c: $(cat "$T/body")"
done
c=$(code PUT "/connectors/x%00/pause")
[ "$c" = 404 ] || fail "PUT x%00/pause: expected 404, got $c"
[ "$(curl -s "$BASE/connectors")" = '["x"]' ] || fail "x was touched: $(curl -s "$BASE/connectors")"
c=$(code GET /connectors/x/status)
grep -q '"state":"RUNNING"\|"state":"FINISHED"\|"state":"UNASSIGNED"' "$T/body" || fail "x paused or gone: $(cat "$T/body")"
# an escaped ordinary name still works (%78 is x)
c=$(code GET /connectors/%78)
[ "$c" = 200 ] || fail "GET /connectors/%78: expected 200, got $c: $(cat "$T/body")"
c=$(code GET '/connectors?expand=status')
[ "$c" = 200 ] || fail "expand=status: $c"
grep -q '"x":{"status"' "$T/body" || fail "expand=status: $(cat "$T/body")"
c=$(code DELETE /connectors/x)
[ "$c" = 204 ] || fail "DELETE x: $c"
rest_stop

# 3. the same rule for a connector file of `cdcflow run`
cd "$T"
printf '{"name": "a/b", "config": {"connector.class": "stream", "topic": "t"}}\n' > slash.json
rc=0; "$CLI" run slash.json < /dev/null 2> err.txt || rc=$?
[ "$rc" = 2 ] || fail "run with name a/b: expected exit 2, got $rc: $(cat err.txt)"
grep -q "'/'" err.txt || fail "run a/b: message: $(cat err.txt)"
grep -q 'slash.json' err.txt || fail "run a/b: the file is not named: $(cat err.txt)"
printf 'name=\nconnector.class=stream\ntopic=t\n' > empty.properties
rc=0; "$CLI" run empty.properties < /dev/null 2> err.txt || rc=$?
[ "$rc" = 2 ] || fail "run with empty name: expected exit 2, got $rc: $(cat err.txt)"
printf 'name=a\\tb\nconnector.class=stream\ntopic=t\n' > tab.properties
rc=0; "$CLI" run tab.properties < /dev/null 2> err.txt || rc=$?
[ "$rc" = 2 ] || fail "run with a tab in the name: expected exit 2, got $rc: $(cat err.txt)"
grep -q 'U+0009' err.txt || fail "run tab: message: $(cat err.txt)"
echo OK
