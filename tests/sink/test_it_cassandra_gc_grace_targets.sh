#!/usr/bin/env bash
# test_it_cassandra_gc_grace_targets.sh - cassandra.gc.grace.seconds on the other targets that
# keep partition states: PostgreSQL (the shared server, a schema per run) and BigQuery (the TEST
# DOUBLE, states in cassandra.state.file). The same case as test_cassandra_gc_grace.sh: the
# rf3-all-up events stretched 10,000 times (cassandra_stretch_ts.py), one flush, grace 1000 s
# against -1: every table equals Cassandra's SELECT JSON either way, and exactly users id 9's
# state (its partition deletion past the grace, the last write of the partition) is removed.
set -uo pipefail
CLI=${CF_CLI:?} ; TESTS=${CF_TESTS_DIR:?}
: "${CF_TEST_PG:?CF_TEST_PG not set: start the servers with scripts/servers start}"
PY=${CF_TEST_PYTHON:?CF_TEST_PYTHON not set: start the servers with scripts/servers start}
DATA=$TESTS/data/cassandra
c=rf3-all-up
schema="it_gc_$$_$RANDOM"
psqlq() { psql "$CF_TEST_PG" -XAtq -v ON_ERROR_STOP=1 -c "$1"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
source "$TESTS/sink/bigquery/bq_double.bash"   # cd's into a work directory W, removed at exit
trap 'psqlq "DROP SCHEMA IF EXISTS ${schema}_n CASCADE" >/dev/null 2>&1; psqlq "DROP SCHEMA IF EXISTS ${schema}_g CASCADE" >/dev/null 2>&1; bqd_cleanup' EXIT
failed=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; failed=1; fi; }
psqlq "CREATE SCHEMA ${schema}_n" && psqlq "CREATE SCHEMA ${schema}_g" || fail "cannot create the schemas"

for i in 1 2 3; do cp -r "$DATA/$c/node$i/cdc_raw" "n$i"; done
"$CLI" cassandra sidecar --schema "$DATA/$c/schema.cql" --replica n1 --replica n2 --replica n3 \
  --rf 3 --consistency QUORUM --once --output q.jsonl --offsets q.offsets 2> q.err || { cat q.err; exit 1; }
python3 "$TESTS/sink/cassandra_stretch_ts.py" q.jsonl s.jsonl 10000
k9=$(python3 -c 'import struct; print((bytes([1]) + struct.pack("<q", 9)).hex().upper())')
CMP="python3 $TESTS/sink/cassandra_tables.py"
common='"topics":"cdcks.users,cdcks.events","key.converter":"json","value.converter":"json","batchMaxRecords":"100000","mergeIntervalMs":"-1","cassandra.schema.files":"'$DATA/$c/schema.cql'"'

# PostgreSQL
pg() { # pg NAME SCHEMA GRACE
  printf '{"name":"%s","config":{"connector.class":"cdc-sink","target":"postgres","connection.url":"%s","postgres.schema":"%s","cassandra.gc.grace.seconds":"%s",%s}}\n' \
    "$1" "$CF_TEST_PG" "$2" "$3" "$common" > "$1.json"
  "$CLI" run "$1.json" --input s.jsonl 2> "$1.err" || { tail -3 "$1.err"; false; }
}
pgkeys() { psqlq "SELECT table_name || ':' || upper(encode(partition_key, 'hex')) FROM $1._cdc_cassandra_state ORDER BY 1"; }
check "postgres, -1: exit 0" "pg pn ${schema}_n -1"
check "postgres, 1000 s: exit 0" "pg pg ${schema}_g 1000"
check "postgres, 1000 s: every table equals Cassandra's" "$CMP pg:${schema}_g $DATA/$c s.jsonl > pg.cmp || { cat pg.cmp; false; }"
gone=$(comm -23 <(pgkeys ${schema}_n) <(pgkeys ${schema}_g) | tr '\n' ' ')
check "postgres: exactly id 9's state removed: $gone" "[[ '$gone' == 'cdcks_users:$k9 ' ]]"

# BigQuery (the test double)
bqd_start --no-auth --dataset cdcflow-test.gn --dataset cdcflow-test.gg
HTTP=$("$PY" -c 'import json; print(json.load(open("ready.json"))["http"])')
GRPC=$("$PY" -c 'import json; print(json.load(open("ready.json"))["grpc"])')
bq() { # bq NAME DATASET GRACE
  printf '{"name":"%s","config":{"connector.class":"cdc-sink","target":"bigquery","project":"cdcflow-test","defaultDataset":"%s","keySource":"APPLICATION_DEFAULT","bigquery.metadata.url":"%s","bigquery.storage.endpoint":"http://%s","bigquery.api.endpoint":"%s","cassandra.state.file":"%s.state","cassandra.gc.grace.seconds":"%s",%s}}\n' \
    "$1" "$2" "$HTTP" "$GRPC" "$HTTP" "$1" "$3" "$common" > "$1.json"
  env -u GOOGLE_APPLICATION_CREDENTIALS HOME="$W" timeout 120 "$CLI" run "$1.json" --input s.jsonl 2> "$1.err" ||
    { tail -3 "$1.err"; false; }
}
bqkeys() { sqlite3 "$1.state" "SELECT table_name || ':' || hex(partition_key) FROM _cdc_cassandra_state ORDER BY 1"; }
check "bigquery, -1: exit 0" "bq bn gn -1"
check "bigquery, 1000 s: exit 0" "bq bg gg 1000"
check "bigquery, 1000 s: every table equals Cassandra's" \
  "$CMP bq:$HTTP,cdcflow-test.gg $DATA/$c s.jsonl > bq.cmp || { cat bq.cmp; false; }"
gone=$(comm -23 <(bqkeys bn) <(bqkeys bg) | tr '\n' ' ')
check "bigquery: exactly id 9's state removed: $gone" "[[ '$gone' == 'cdcks_users:$k9 ' ]]"
exit $failed
