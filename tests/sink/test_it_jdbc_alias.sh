#!/usr/bin/env bash
# test_it_jdbc_alias.sh - a Debezium JDBC sink configuration, as its users
# write it (connector.class io.debezium.connector.jdbc.JdbcSinkConnector,
# connection.url jdbc:postgresql://..., no `target`), run unchanged with
# `cdcflow run --input` over raw Debezium envelopes: the rows land in the
# real PostgreSQL server and nothing is written to ./cdcflow.db (before the
# alias, the same file wrote to SQLite and exited 0). Then what the alias
# maps: delete.enabled (default false: deletes skipped), add.fields `__`
# columns kept as the Debezium JDBC sink keeps them, table.name.format,
# schema.evolution none, the log line naming target and place, and the
# configuration errors: a target that contradicts the URL, insert.mode=insert,
# primary.key.mode=none, record_value without fields, an unknown scheme.
set -euo pipefail
CLI=${CF_CLI:?CF_CLI not set}
: "${CF_TEST_PG:?CF_TEST_PG not set: start the servers with scripts/servers start}"
HERE=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d)
schema="it_jdbc_$$_$RANDOM"
psqlq() { psql "$CF_TEST_PG" -XAtq -v ON_ERROR_STOP=1 -c "$1"; }
trap 'psqlq "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1 || true; rm -rf "$W"' EXIT
cd "$W"
fail() { echo "FAIL: $*" >&2; exit 1; }
pg_kv() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$CF_TEST_PG"; }
host=$(pg_kv host) port=$(pg_kv port) user=$(pg_kv user) db=$(pg_kv dbname)
url="jdbc:postgresql://$host:$port/$db"
psqlq "CREATE SCHEMA $schema"
python3 "$HERE/debezium_envelopes.py" > in.jsonl

# 1. The Debezium documentation's JDBC sink example, pointed at our server.
cat > jdbc.json <<J
{
  "name": "jdbc-connector",
  "config": {
    "connector.class": "io.debezium.connector.jdbc.JdbcSinkConnector",
    "tasks.max": "1",
    "connection.url": "$url",
    "connection.username": "$user",
    "connection.password": "",
    "insert.mode": "upsert",
    "delete.enabled": "true",
    "primary.key.mode": "record_key",
    "schema.evolution": "basic",
    "database.time_zone": "UTC",
    "topics": "dbserver1.public.customers",
    "postgres.schema": "$schema",
    "key.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter"
  }
}
J
out=$("$CLI" validate jdbc.json) || fail "validate: $out"
grep -q "OK (connector \"jdbc-connector\", cdc-sink sink)" <<<"$out" || fail "validate: $out"
"$CLI" run jdbc.json --input in.jsonl 2> run.log || { cat run.log; fail "run exited $?"; }
[[ ! -e cdcflow.db ]] || fail "wrote ./cdcflow.db although connection.url names PostgreSQL"
got=$(psqlq "SELECT id, email FROM $schema.dbserver1_public_customers ORDER BY id" | tr '\n' ' ')
[[ $got == "2|c@x 3|d@x " ]] || { cat run.log; fail "rows: got '$got'"; }
grep -q "target postgres, writing to $host:$port, database $db, schema $schema" run.log ||
  { cat run.log; fail "no log line naming target and place"; }

# 2. delete.enabled unset (the Debezium default false): the delete is skipped;
#    table.name.format with ${topic}; primary.key.mode unset is logged
#    (each run is a connector of its own name: the sink stores how far it read
#    in.jsonl under its name, and a connector that already applied the file
#    skips it, as a Kafka Connect sink goes on from its group's offsets)
sed -e 's/"delete.enabled": "true",//' -e 's/"primary.key.mode": "record_key",/"table.name.format": "sink_${topic}",/' \
  -e 's/"jdbc-connector"/"jdbc-nodel"/' jdbc.json > nodel.json
"$CLI" run nodel.json --input in.jsonl 2> nodel.log || { cat nodel.log; fail "nodel run"; }
got=$(psqlq "SELECT id, email FROM $schema.sink_dbserver1_public_customers ORDER BY id" | tr '\n' ' ')
[[ $got == "1|b@x 2|c@x 3|d@x " ]] || { cat nodel.log; fail "delete.enabled unset: got '$got'"; }
grep -q "deletes are skipped (delete.enabled=false)" nodel.log || { cat nodel.log; fail "skip log"; }
grep -q "primary.key.mode is not set" nodel.log || { cat nodel.log; fail "pk log"; }

# 3. add.fields beside the unwrap: the Debezium JDBC sink writes every field, so
#    __op and __table are columns; with connector.class=cdc-sink they are kept
#    out and the log says so once per table
add=',"transforms":"unwrap","transforms.unwrap.type":"io.debezium.transforms.ExtractNewRecordState","transforms.unwrap.add.fields":"op,table"'
sed -e "s|\"table.name.format\": \"sink_\${topic}\",|\"table.name.format\": \"meta_\${topic}\",|" \
    -e "s|\"topics\"|${add#,}, \"topics\"|" -e 's/"jdbc-nodel"/"jdbc-meta"/' nodel.json > meta.json
"$CLI" run meta.json --input in.jsonl 2> meta.log || { cat meta.log; fail "meta run"; }
cols=$(psqlq "SELECT string_agg(column_name, ',' ORDER BY ordinal_position) FROM information_schema.columns WHERE table_schema='$schema' AND table_name='meta_dbserver1_public_customers'")
[[ $cols == "id,email,__op,__table,_change_sequence_number" ]] || { cat meta.log; fail "columns: $cols"; }
sed -e 's/io.debezium.connector.jdbc.JdbcSinkConnector/cdc-sink/' -e 's/meta_/own_/' -e 's/"jdbc-meta"/"jdbc-own"/' \
  meta.json > own.json
"$CLI" run own.json --input in.jsonl 2> own.log || { cat own.log; fail "own run"; }
[[ $(grep -c "fields __op, __table are not written" own.log) == 1 ]] || { cat own.log; fail "kept-out log"; }

# 4. schema.evolution unset with the Debezium class: none, as Debezium: a missing table is an error
sed -e 's/"schema.evolution": "basic",//' -e 's/sink_/none_/' -e 's/"jdbc-nodel"/"jdbc-evo"/' nodel.json > evo.json
set +e
"$CLI" run evo.json --input in.jsonl 2> evo.log
rc=$?
set -e
[[ $rc != 0 ]] || { cat evo.log; fail "schema.evolution none created a table"; }
[[ -z $(psqlq "SELECT 1 FROM information_schema.tables WHERE table_schema='$schema' AND table_name='none_dbserver1_public_customers'") ]] ||
  fail "table created with schema.evolution none"

# 5. configuration errors: validate and run both refuse, before anything is written
bad() { # bad NAME SED-EXPRESSION EXPECTED-TEXT
  sed -e "$2" jdbc.json > "$1.json"
  set +e
  out=$("$CLI" validate "$1.json" 2>&1); rc=$?
  "$CLI" run "$1.json" --input in.jsonl > "$1.log" 2>&1; rrc=$?
  set -e
  [[ $rc == 2 && $rrc == 2 ]] || { echo "$out"; cat "$1.log"; fail "$1: validate exit $rc, run exit $rrc, want 2 and 2"; }
  grep -qF -- "$3" <<<"$out" || { echo "$out"; fail "$1: no '$3'"; }
  grep -qF -- "$3" "$1.log" || { cat "$1.log"; fail "$1: run says no '$3'"; }
  [[ ! -e cdcflow.db ]] || fail "$1: wrote ./cdcflow.db"
}
bad contradict 's/"tasks.max": "1",/"tasks.max": "1", "target": "sqlite",/' \
  "target=sqlite contradicts connection.url, which names a PostgreSQL database"
bad insert 's/"insert.mode": "upsert"/"insert.mode": "insert"/' "insert.mode=insert is not supported by cdc-sink"
bad pknone 's/"record_key"/"none"/' "primary.key.mode=none is not supported by cdc-sink"
bad pkvalue 's/"record_key"/"record_value"/' "At least one primary.key.fields field name should be specified"
bad mysql "s|$url|jdbc:mysql://127.0.0.1:3306/db|" "names a database cdc-sink cannot write to"
bad nourl "s|\"connection.url\": \"$url\",||" 'missing required configuration "connection.url"'
bad fields 's/"insert.mode"/"field.exclude.list": "email", "insert.mode"/' "use the transform ReplaceField\$Value with exclude"
echo "1 passed, 0 failed"
