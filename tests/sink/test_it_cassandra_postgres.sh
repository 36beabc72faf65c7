#!/usr/bin/env bash
# test_it_cassandra_postgres.sh - Cassandra change events into the real
# PostgreSQL server with Cassandra's semantics (src/sink/cassandra.c), the
# PostgreSQL half of test_cassandra_sink.sh.
#
# Oracle: Cassandra's SELECT JSON at ALL (tests/data/cassandra/<case>/
# expected/*.jsonl) of the three-node Cassandra 5.0 cluster that wrote the
# rf3 fixtures. The sidecar (RF 3, QUORUM, --once) writes the events to a
# record file, cdc-sink (target postgres, a schema of this run's own) applies
# them: every table equals Cassandra's rows (collections and UDTs as jsonb);
# a redelivery of the whole file and the events shuffled in batches of 5
# leave the same rows. Then every CQL type (v8-lz4-rollover: all_types with
# collections, UDTs, tuples, vectors, decimal, varint, duration, inet,
# timeuuid clustering, static columns) equal to that node's SELECT JSON.
set -uo pipefail
CLI=${CF_CLI:?} ; TESTS=${CF_TESTS_DIR:?}
: "${CF_TEST_PG:?CF_TEST_PG not set: start the servers with scripts/servers start}"
DATA=$TESTS/data/cassandra
T=$(mktemp -d)
schema="it_cass_$$_$RANDOM"
psqlq() { psql "$CF_TEST_PG" -XAtq -v ON_ERROR_STOP=1 -c "$1"; }
trap 'psqlq "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1; psqlq "DROP SCHEMA IF EXISTS ${schema}_s CASCADE" >/dev/null 2>&1; psqlq "DROP SCHEMA IF EXISTS ${schema}_t CASCADE" >/dev/null 2>&1; rm -rf "$T"' EXIT
failed=0
ok() { echo "ok: $1"; }
fail() { echo "FAIL: $1"; failed=1; }
check() { if eval "$2"; then ok "$1"; else fail "$1"; fi; }
psqlq "CREATE SCHEMA $schema" && psqlq "CREATE SCHEMA ${schema}_s" && psqlq "CREATE SCHEMA ${schema}_t" || { echo "FAIL: cannot create the schemas"; exit 1; }

sink() { # sink NAME SCHEMA CASE FILE [extra json]
  printf '{"name":"%s","config":{"connector.class":"cdc-sink","target":"postgres","connection.url":"%s","postgres.schema":"%s","topics":"cdcks.users,cdcks.events","key.converter":"json","value.converter":"json","cassandra.schema.files":"%s"%s}}\n' \
    "$1" "$CF_TEST_PG" "$2" "$DATA/$3/schema.cql" "${5:-}" > "$T/$1.json"
  "$CLI" run "$T/$1.json" --input "$4" 2>"$T/$1.err"
}
rows() { # rows SCHEMA: the tables but the sequence column
  psqlq "SELECT id, age, email, home, name, prefs, score, tags, visits, work FROM $1.cdcks_users ORDER BY id" &&
    psqlq "SELECT p, seq, sub, note, n, v FROM $1.cdcks_events ORDER BY p, seq, sub"
}

c=rf3-one-down
mkdir -p "$T/$c"
for i in 1 2 3; do cp -r "$DATA/$c/node$i/cdc_raw" "$T/$c/n$i"; done
"$CLI" cassandra sidecar --schema "$DATA/$c/schema.cql" --replica "$T/$c/n1" --replica "$T/$c/n2" \
  --replica "$T/$c/n3" --rf 3 --consistency QUORUM --once --output "$T/ev.jsonl" --offsets "$T/ev.offsets" \
  2>"$T/sidecar.err"
check "sidecar: events written" "[[ -s '$T/ev.jsonl' ]]"
sink p1 "$schema" $c "$T/ev.jsonl"
rc=$?
check "cdc-sink into PostgreSQL: exit 0 (got $rc)" "[[ $rc -eq 0 ]] || { tail -5 '$T/p1.err'; false; }"
check "every table equals Cassandra's SELECT JSON at ALL" \
  "python3 $TESTS/sink/cassandra_tables.py pg:$schema $DATA/$c $T/ev.jsonl"
check "collections and UDTs are jsonb" \
  "[[ \$(psqlq \"SELECT string_agg(data_type, ',' ORDER BY column_name) FROM information_schema.columns WHERE table_schema = '$schema' AND table_name = 'cdcks_users' AND column_name IN ('home', 'prefs', 'tags', 'visits', 'work')\") == jsonb,jsonb,jsonb,jsonb,jsonb ]]"
rows "$schema" > "$T/rows"
sink p2 "$schema" $c "$T/ev.jsonl"
check "the file applied again (a redelivery) changes no row" "[[ \$? -eq 0 ]] && rows '$schema' | cmp -s - '$T/rows'"
python3 -c '
import random, sys
lines = open(sys.argv[1]).readlines()
random.Random(16).shuffle(lines)
open(sys.argv[2], "w").writelines(lines)' "$T/ev.jsonl" "$T/shuf.jsonl"
sink p3 "${schema}_s" $c "$T/shuf.jsonl" ',"batchMaxRecords":"5"'
check "shuffled, in batches of 5: the same rows" "[[ \$? -eq 0 ]] && rows '${schema}_s' | diff - '$T/rows'"

f=v8-lz4-rollover
cp -r "$DATA/$f/cdc_raw" "$T/$f"
"$CLI" cassandra sidecar --schema "$DATA/$f/schema.cql" --replica "$T/$f" --consistency ONE --once \
  --output "$T/$f.jsonl" --offsets "$T/$f.offsets" 2>"$T/$f.err"
printf '{"name":"types","config":{"connector.class":"cdc-sink","target":"postgres","connection.url":"%s","postgres.schema":"%s","topics.regex":"cdcks\\\\..*","key.converter":"json","value.converter":"json","cassandra.schema.files":"%s"}}\n' \
  "$CF_TEST_PG" "${schema}_t" "$DATA/$f/schema.cql" > "$T/types.json"
"$CLI" run "$T/types.json" --input "$T/$f.jsonl" 2>"$T/types.err"
rc=$?
check "$f: every type, every table equals Cassandra's SELECT JSON (sink exit $rc)" \
  "[[ $rc -eq 0 ]] && python3 $TESTS/sink/cassandra_tables.py pg:${schema}_t $DATA/$f $T/$f.jsonl"
exit $failed
