#!/usr/bin/env bash
# test_rest_secrets.sh - secrets never leave the worker (issue 15): every
# PASSWORD-type setting (Connect's notion: *.password, *.basic.auth.user.info,
# *.ssl.key.password, sasl.jaas.config, secrets, tokens) and the password of
# a URL is shown as [hidden] (a URL keeps its user) in GET /connectors/{name},
# /config, /tasks and ?expand=info, in the log, in error answers and in
# `cdcflow validate`. The worker still uses the real values.
set -euo pipefail
T=$(mktemp -d /tmp/cf_rest_secrets.XXXXXX)
source "$(dirname "$0")/rest_lib.sh"
J='Content-Type: application/json'
# every secret of this test contains "S3CR" (and nothing else does)
SECRETS='S3CR'

rest_start "$T/w" 'rest.auth.token=tokS3CR0'
A='Authorization: Bearer tokS3CR0'
cat > "$T/sink.json" <<'JSON'
{"name": "pg", "config": {
  "connector.class": "cdc-sink", "topics": "t",
  "connection.url": "postgres://alice:pwS3CR1@127.0.0.1:1/db?sslmode=disable",
  "connection.password": "pwS3CR2",
  "key.converter": "avro",
  "key.converter.schema.registry.url": "http://bob:pwS3CR3@127.0.0.1:1",
  "key.converter.basic.auth.user.info": "bob:pwS3CR4",
  "value.converter": "avro",
  "value.converter.schema.registry.url": "http://127.0.0.1:1,https://carol:pwS3CR5@127.0.0.1:2/apis",
  "value.converter.schema.registry.basic.auth.user.info": "carol:pwS3CR6",
  "value.converter.schema.registry.ssl.key.password": "pwS3CR7",
  "value.converter.schema.registry.ssl.keystore.password": "pwS3CR8",
  "value.converter.schema.registry.ssl.truststore.password": "pwS3CR9",
  "key.converter.sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"pwS3CRa\";",
  "key.converter.bearer.auth.token": "pwS3CRb",
  "key.converter.client.secret": "pwS3CRc"
}}
JSON
c=$(code POST /connectors -H "$A" -H "$J" --data @"$T/sink.json")
[ "$c" = 201 ] || fail "create: $c $(cat "$T/body")"
grep -q "$SECRETS" "$T/body" && fail "POST answer shows a secret: $(cat "$T/body")"
for p in /connectors/pg /connectors/pg/config /connectors/pg/tasks '/connectors?expand=info' \
    '/connectors?expand=info&expand=status' /connectors/pg/status; do
    c=$(code GET "$p" -H "$A")
    [ "$c" = 200 ] || fail "GET $p: $c"
    grep -q "$SECRETS" "$T/body" && fail "GET $p shows a secret: $(cat "$T/body")"
done
code GET /connectors/pg/config -H "$A" > /dev/null
python3 - "$T/body" <<'P' || fail "config as shown: $(cat "$T/body")"
import json, sys
c = json.load(open(sys.argv[1]))
H = "[hidden]"
assert c["connection.url"] == "postgres://alice:[hidden]@127.0.0.1:1/db?sslmode=disable", c["connection.url"]
assert c["connection.password"] == H
assert c["key.converter.schema.registry.url"] == "http://bob:[hidden]@127.0.0.1:1"
assert c["key.converter.basic.auth.user.info"] == H
assert c["value.converter.schema.registry.url"] == "http://127.0.0.1:1,https://carol:[hidden]@127.0.0.1:2/apis"
for k in ("value.converter.schema.registry.basic.auth.user.info", "value.converter.schema.registry.ssl.key.password",
          "value.converter.schema.registry.ssl.keystore.password",
          "value.converter.schema.registry.ssl.truststore.password", "key.converter.sasl.jaas.config",
          "key.converter.bearer.auth.token", "key.converter.client.secret"):
    assert c[k] == H, (k, c[k])
assert c["topics"] == "t" and c["connector.class"] == "cdc-sink"
P
# the stored config keeps the real values: PUT it back unchanged is no change
# of what the task uses, and the hidden view stays the same
c=$(code PUT /connectors/pg/config -H "$A" -H "$J" --data "$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["config"]))' "$T/sink.json")")
[ "$c" = 200 ] || fail "PUT config: $c $(cat "$T/body")"
grep -q "$SECRETS" "$T/body" && fail "PUT answer shows a secret: $(cat "$T/body")"

# error answers: a bad value, an unknown key, a misspelt password key
c=$(code PUT /connectors/e1/config -H "$A" -H "$J" \
    --data '{"connector.class":"cdc-sink","topics":"t","tasks.max":"postgres://u:pwS3CRd@h/db"}')
[ "$c" = 400 ] || fail "bad value: $c $(cat "$T/body")"
grep -q "$SECRETS" "$T/body" && fail "bad value answer shows a secret: $(cat "$T/body")"
grep -q 'postgres://u:\[hidden\]@h/db' "$T/body" || fail "bad value answer: $(cat "$T/body")"
c=$(code PUT /connectors/e2/config -H "$A" -H "$J" \
    --data '{"connector.class":"cdc-sink","topics":"t","target.url":"http://u:pwS3CRe@h/"}')
[ "$c" = 400 ] || fail "unknown key: $c $(cat "$T/body")"
grep -q "$SECRETS" "$T/body" && fail "unknown key answer shows a secret: $(cat "$T/body")"
c=$(code PUT /connectors/e3/config -H "$A" -H "$J" \
    --data '{"connector.class":"cdc-sink","topics":"t","connection.pasword":"pwS3CRf"}')
[ "$c" = 400 ] || fail "misspelt key: $c $(cat "$T/body")"
grep -q "$SECRETS" "$T/body" && fail "misspelt key answer shows a secret: $(cat "$T/body")"
c=$(code PUT /connectors/e4/config -H "$A" -H "$J" \
    --data '{"connector.class":"cdc-sink","topics":"t","key.converter":"avro","key.converter.basic.auth.user.inf":"u:pwS3CRg"}')
grep -q "$SECRETS" "$T/body" && fail "converter key answer shows a secret: $(cat "$T/body")"

# the task tried the real URL (it fails: nothing listens on port 1); give it time to log
for _ in $(seq 50); do
    curl -s -H "$A" "$BASE/connectors/pg/status" | grep -q FAILED && break
    sleep 0.1
done
rest_stop
grep -q "$SECRETS" "$T/w/err.txt" && fail "the log shows a secret: $(grep "$SECRETS" "$T/w/err.txt")"

# cdcflow validate: problems are reported without the secrets
cat > "$T/bad.json" <<'JSON'
{"name": "v", "config": {"connector.class": "cdc-sink", "topics": "t",
  "tasks.max": "postgres://u:pwS3CRh@h/db",
  "connection.pasword": "pwS3CRi",
  "target.url": "http://u:pwS3CRj@h/",
  "key.converter": "avro", "key.converter.basic.auth.user.info": "pwS3CRk", "key.converter.bogus": "http://u:pwS3CRl@h"}}
JSON
rc=0; "$CLI" validate "$T/bad.json" > "$T/v.txt" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "validate: exit $rc: $(cat "$T/v.txt")"
grep -q 'tasks.max' "$T/v.txt" || fail "validate did not report tasks.max: $(cat "$T/v.txt")"
grep -q "$SECRETS" "$T/v.txt" && fail "validate shows a secret: $(cat "$T/v.txt")"
# and `cdcflow run` with a bad connector file
rc=0; "$CLI" run "$T/bad.json" < /dev/null > "$T/r.txt" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "run: exit $rc: $(cat "$T/r.txt")"
grep -q "$SECRETS" "$T/r.txt" && fail "run shows a secret: $(cat "$T/r.txt")"
echo OK
