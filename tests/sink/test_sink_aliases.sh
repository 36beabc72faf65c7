#!/usr/bin/env bash
# test_sink_aliases.sh - the connector classes cdc-sink answers to, with the
# configs their users write: kcbq's BigQuerySinkConnector (target=bigquery,
# its keys accepted; another target contradicts the class; the BigQuery
# target itself is tested in tests/sink/bigquery),
# and the Debezium JDBC sink with a SQLite connection.url (the rows land in
# that file, the log names it); a target contradicting the URL is refused.
# The PostgreSQL side is test_it_jdbc_alias.sh.
set -euo pipefail
CLI=${CF_CLI:?CF_CLI not set}
HERE=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cd "$W"
fail() { echo "FAIL: $*" >&2; exit 1; }
python3 "$HERE/debezium_envelopes.py" > in.jsonl

# 1. kcbq's quickstart-style config, unchanged
cat > kcbq.properties <<'P'
name=kcbq-sink
connector.class=com.wepay.kafka.connect.bigquery.BigQuerySinkConnector
tasks.max=1
topics=dbserver1.public.customers
project=my-project
defaultDataset=cdc
keyfile=/secrets/key.json
keySource=FILE
useStorageWriteApi=true
autoCreateTables=true
sanitizeTopics=true
key.converter=org.apache.kafka.connect.json.JsonConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
P
out=$("$CLI" validate kcbq.properties 2>&1) || { echo "$out"; fail "kcbq: validate"; }
grep -q 'OK (connector "kcbq-sink", cdc-sink sink)' <<<"$out" || { echo "$out"; fail "kcbq: validate output"; }
# a target other than bigquery contradicts the class
printf 'target=sqlite\n' >> kcbq.properties
set +e; out=$("$CLI" validate kcbq.properties 2>&1); set -e
grep -q "target=sqlite contradicts connector.class" <<<"$out" || { echo "$out"; fail "kcbq target"; }

# 2. the Debezium JDBC sink with a SQLite URL: the rows go to that file
cat > sq.json <<J
{"name": "jdbc-sqlite", "config": {"connector.class": "io.debezium.connector.jdbc.JdbcSinkConnector",
 "connection.url": "jdbc:sqlite:$W/rows.db", "insert.mode": "upsert", "delete.enabled": "true",
 "primary.key.mode": "record_key", "schema.evolution": "basic", "topics": "dbserver1.public.customers",
 "key.converter": "json", "value.converter": "json"}}
J
"$CLI" run sq.json --input in.jsonl 2> sq.log || { cat sq.log; fail "sqlite run"; }
[[ ! -e cdcflow.db ]] || fail "wrote ./cdcflow.db"
got=$(sqlite3 rows.db "SELECT id, email FROM dbserver1_public_customers ORDER BY id" | tr '\n' ' ')
[[ $got == "2|c@x 3|d@x " ]] || fail "sqlite rows: '$got'"
grep -q "target sqlite, writing to file $W/rows.db" sq.log || { cat sq.log; fail "log line"; }
# sqlite:/// and a bare path name the same file
for u in "sqlite://$W/rows2.db" "$W/rows2.db"; do
  sed "s|jdbc:sqlite:$W/rows.db|$u|" sq.json > sq2.json
  rm -f rows2.db cdcflow.offsets.json
  "$CLI" run sq2.json --input in.jsonl 2> sq2.log || { cat sq2.log; fail "sqlite $u"; }
  [[ $(sqlite3 rows2.db "SELECT count(*) FROM dbserver1_public_customers") == 2 ]] || fail "sqlite $u rows"
done
# target=postgres contradicts a SQLite URL; sqlite.path contradicting it too
for extra in '"target": "postgres",' '"sqlite.path": "other.db",'; do
  sed "s|\"insert.mode\"|$extra \"insert.mode\"|" sq.json > c.json
  set +e; out=$("$CLI" validate c.json 2>&1); rc=$?; set -e
  [[ $rc == 2 ]] || { echo "$out"; fail "contradiction $extra: exit $rc"; }
  grep -q "contradicts connection.url" <<<"$out" || { echo "$out"; fail "contradiction $extra"; }
done

# 3. primary.key.mode=record_value: the key is the value's primary.key.fields,
#    read from the envelope's `after` (deletes need record_key: skipped here)
sed -e 's|rows.db|pkv.db|' -e 's|"delete.enabled": "true"|"delete.enabled": "false"|' \
    -e 's|"record_key"|"record_value", "primary.key.fields": "email"|' sq.json > pkv.json
rm -f cdcflow.offsets.json
"$CLI" run pkv.json --input in.jsonl 2> pkv.log || { cat pkv.log; fail "record_value run"; }
got=$(sqlite3 pkv.db "SELECT email, id FROM dbserver1_public_customers ORDER BY email" | tr '\n' ' ')
[[ $got == "a@x|1 b@x|1 c@x|2 d@x|3 " ]] || { cat pkv.log; fail "record_value rows: '$got'"; }
pk=$(sqlite3 pkv.db "SELECT group_concat(name) FROM pragma_table_info('dbserver1_public_customers') WHERE pk > 0")
[[ $pk == "email" ]] || fail "record_value primary key: $pk"
sed 's|"delete.enabled": "false"|"delete.enabled": "true"|' pkv.json > pkvd.json
set +e; out=$("$CLI" validate pkvd.json 2>&1); set -e
grep -q "delete.enabled=true requires primary.key.mode=record_key" <<<"$out" || { echo "$out"; fail "record_value delete"; }
echo "1 passed, 0 failed"
