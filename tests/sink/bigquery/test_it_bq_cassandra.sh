#!/usr/bin/env bash
# test_it_bq_cassandra.sh - Cassandra change events into BigQuery tables (target=bigquery,
# src/sink/cassandra.c with the partition states in cassandra.state.file, bq_target.c).
#
# Against the BigQuery TEST DOUBLE (tests/bigquery/bq_test_server.py), which applies BigQuery's
# documented CDC rules (UPSERT / DELETE by primary key, _CHANGE_SEQUENCE_NUMBER order); the
# public emulator applies none (every row appended, tests/bigquery/README.md), so it cannot
# tell what a BigQuery table would hold. Oracles:
#  - Cassandra's SELECT JSON at ALL (tests/data/cassandra/<case>/expected, from the real
#    cluster that wrote the fixtures), compared by cassandra_tables.py as for SQLite;
#  - the SQLite target's tables for the same input (bq_vs_sqlite.py), list cells included.
# Cases (fixture rf3-all-up through the sidecar at QUORUM: inserts, updates, row, range and
# partition deletions, collections, UDTs):
#  1. in order;
#  2. the same file again into the same tables and state file (a full redelivery): no row
#     changes;
#  3. shuffled, in batches of 5 records (the state read back from the file between flushes);
#  4. all three replicas' copies at ONE (three of each);
#  5. a flush that fails after BigQuery acknowledged part of its rows (the double refuses the
#     second table's AppendRows with PERMISSION_DENIED once): the run fails, the first table's
#     rows are in BigQuery and the state file holds no state (committed only after every
#     row of the flush was acknowledged); the run again from the start gives the exact tables.
#     The same with the process killed (SIGKILL) while the second table's answer is held back.
#  6. every CQL type (v8-lz4-rollover, table all_types: collections, UDTs, tuples, vectors,
#     statics) and the timeuuid range deletion of cassandra_order_events.py;
#  7. the same every-type events into the public emulator (its own decoding of our rows; it
#     appends every row, so the check is that every row written landed).
set -euo pipefail
CLI=${CF_CLI:?CF_CLI not set}
PY=${CF_TEST_PYTHON:?CF_TEST_PYTHON not set: start the servers with scripts/servers start}
TESTS=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$TESTS/sink/bigquery
DATA=$TESTS/data/cassandra
source "$HERE/bq_double.bash"
failed=0
fail() { echo "FAIL: $*" >&2; [[ -f double.log ]] && tail -20 double.log >&2; exit 1; }
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; failed=1; fi; }

DS="ds1 ds2 ds3 ds4 ds5 ds6 ds7 ds8"
bqd_start --no-auth $(for d in $DS; do printf -- '--dataset cdcflow-test.%s ' "$d"; done)
HTTP=$("$PY" -c 'import json; print(json.load(open("ready.json"))["http"])')

# conf NAME DATASET STATE SCHEMA [extra JSON]: a cdc-sink connector into the double
conf() {
  "$PY" - "$@" <<'EOF'
import json, sys
name, ds, state, schema = sys.argv[1:5]
ready = json.load(open("ready.json"))
c = {"connector.class": "cdc-sink", "target": "bigquery", "topics.regex": "cdcks\\..*",
     "key.converter": "json", "value.converter": "json", "cassandra.schema.files": schema,
     "project": "cdcflow-test", "defaultDataset": ds, "keySource": "APPLICATION_DEFAULT",
     "bigquery.metadata.url": ready["http"], "bigquery.storage.endpoint": "http://" + ready["grpc"],
     "bigquery.api.endpoint": ready["http"], "cassandra.state.file": state,
     "bigQueryRetry": "2", "bigQueryRetryWait": "50"}
c.update(json.loads(sys.argv[5]) if len(sys.argv) > 5 else {})
json.dump({"name": name, "config": c}, open(name + ".json", "w"), indent=1)
EOF
}
mkdir home
run() { env -u GOOGLE_APPLICATION_CREDENTIALS HOME="$W/home" timeout 120 "$CLI" run "$1.json" --input "$2" 2> "$1.err"; }
sqlite_run() {
  printf '{"name":"%s","config":{"connector.class":"cdc-sink","topics.regex":"cdcks\\\\..*","sqlite.path":"%s","key.converter":"json","value.converter":"json","cassandra.schema.files":"%s"}}\n' \
    "$1" "$1.db" "$3" > "$1.json"
  "$CLI" run "$1.json" --input "$2" 2> "$1.err"
}
dump() { for t in "${@:2}"; do curl -sf "$HTTP/_test/rows?table=cdcflow-test.$1.$t" | "$PY" -c \
  'import json,sys; print("\n".join(sorted(json.dumps(r, sort_keys=True) for r in json.load(sys.stdin)["rows"])))'; done; }
cass() { "$PY" "$TESTS/sink/cassandra_tables.py" "bq:$HTTP,cdcflow-test.$1" "$DATA/$2" "$3" > "$1.cmp" 2>&1 || { cat "$1.cmp"; false; }; }
vs_sqlite() { "$PY" "$HERE/bq_vs_sqlite.py" "$HTTP" "cdcflow-test.$1" "$2" "${@:3}" > "$1.vs" 2>&1 || { cat "$1.vs"; false; }; }

c=rf3-all-up
SCHEMA=$DATA/$c/schema.cql
for i in 1 2 3; do cp -r "$DATA/$c/node$i/cdc_raw" "n$i"; done
"$CLI" cassandra sidecar --schema "$SCHEMA" --replica n1 --replica n2 --replica n3 --rf 3 --consistency QUORUM \
  --once --output q.jsonl --offsets q.offsets 2> q.err || fail "the sidecar failed"
grep -q 'DELETE_RANGE' q.jsonl && grep -q 'DELETE_PARTITION' q.jsonl || fail "the fixture lost its range/partition deletions"
sqlite_run lite q.jsonl "$SCHEMA" || fail "the SQLite run failed"
TABLES="cdcks_users cdcks_events"

# 1. in order
conf a ds1 a.state "$SCHEMA"
check "in order: cdcflow run exit 0" "run a q.jsonl || { tail -5 a.err; false; }"
check "in order: every table equals Cassandra's SELECT JSON at ALL" "cass ds1 $c q.jsonl"
check "in order: every table equals the SQLite target's" "vs_sqlite ds1 lite.db $TABLES"
check "the partition states are in cassandra.state.file" \
  "[[ \$(sqlite3 a.state 'SELECT count(*) FROM _cdc_cassandra_state') -gt 0 ]]"
dump ds1 $TABLES > ds1.rows
# no cassandra.state.file: one file per connector in the working directory
conf dflt ds8 "" "$SCHEMA"
check "no cassandra.state.file: exit 0" "run dflt q.jsonl || { tail -5 dflt.err; false; }"
check "... the states are in ./cdcflow-cassandra-state-dflt.db" \
  "[[ \$(sqlite3 cdcflow-cassandra-state-dflt.db 'SELECT count(*) FROM _cdc_cassandra_state') -gt 0 ]]"
check "... and the tables equal the in-order run's" "dump ds8 $TABLES | diff - ds1.rows"

# 2. a full redelivery (another connector name: read from the start) into the same tables and state
sed 's/"name": "a"/"name": "a2"/' a.json > a2.json
check "redelivered: exit 0" "run a2 q.jsonl"
check "redelivered: no row changes" "dump ds1 $TABLES | cmp -s - ds1.rows"

# 3. shuffled, in batches of 5
"$PY" - q.jsonl shuf.jsonl <<'EOF'
import random, sys
lines = open(sys.argv[1]).readlines()
random.Random(16).shuffle(lines)
open(sys.argv[2], "w").writelines(lines)
EOF
conf b ds2 b.state "$SCHEMA" '{"batchMaxRecords": "5"}'
check "shuffled, batches of 5: exit 0" "run b shuf.jsonl || { tail -5 b.err; false; }"
check "shuffled, batches of 5: the same rows as in order (list cells included)" "dump ds2 $TABLES | diff - ds1.rows"

# 4. every replica's copy at ONE
: > one.jsonl
for i in 1 2 3; do
  "$CLI" cassandra sidecar --schema "$SCHEMA" --replica "n$i" --consistency ONE --once --output "one$i.jsonl" \
    --offsets "one$i.offsets" 2> "one$i.err" || fail "sidecar ONE $i"
  cat "one$i.jsonl" >> one.jsonl
done
conf d ds3 d.state "$SCHEMA"
check "three copies of each ($(wc -l < one.jsonl) events): exit 0" "run d one.jsonl"
check "three copies of each: the same rows" "dump ds3 $TABLES | diff - ds1.rows"

# 5. a flush that fails after part of its rows were acknowledged (tables go in name order:
# cdcks_events, then cdcks_users, which the double refuses once); one flush for the whole file
curl -sf -X POST "$HTTP/_test/faults" -H 'Content-Type: application/json' -d \
  '{"rpc": "AppendRows", "table": "cdcflow-test.ds4.cdcks_users", "action": "status", "code": "PERMISSION_DENIED", "how": "response", "times": 1}' \
  > /dev/null || fail "fault rule"
conf e ds4 e.state "$SCHEMA" '{"batchMaxRecords": "100000", "mergeIntervalMs": "-1"}'
rc=0; run e q.jsonl || rc=$?
check "the refused flush fails the run (exit $rc)" "[[ $rc -ne 0 ]] && grep -q PERMISSION_DENIED e.err"
n_ev=$(dump ds4 cdcks_events | wc -l)
check "... after BigQuery had acknowledged the first table's rows ($n_ev rows)" "[[ $n_ev -gt 0 ]]"
n_st=$(sqlite3 e.state 'SELECT count(*) FROM _cdc_cassandra_state' 2>/dev/null || echo 0)
check "... and no partition state was committed ($n_st)" "[[ $n_st -eq 0 ]]"
check "run again from the start: exit 0" "run e q.jsonl || { tail -5 e.err; false; }"
check "... every table equals Cassandra's" "cass ds4 $c q.jsonl"
check "... and the in-order run's rows" "dump ds4 $TABLES | diff - ds1.rows"

# 5b. the same with SIGKILL: the double holds the second table's AppendRows answer for 6 s;
# once the first table's rows are in, the process is killed
curl -sf -X POST "$HTTP/_test/faults" -H 'Content-Type: application/json' -d \
  '{"rpc": "AppendRows", "table": "cdcflow-test.ds7.cdcks_users", "action": "delay", "seconds": 6, "times": 1}' \
  > /dev/null || fail "fault rule"
conf k ds7 k.state "$SCHEMA" '{"batchMaxRecords": "100000", "mergeIntervalMs": "-1"}'
env -u GOOGLE_APPLICATION_CREDENTIALS HOME="$W/home" "$CLI" run k.json --input q.jsonl 2> k.err &
KPID=$!
for _ in $(seq 200); do
  [[ $(dump ds7 cdcks_events 2>/dev/null | wc -l) -gt 0 ]] && break
  sleep 0.1
done
kill -9 "$KPID"; wait "$KPID" 2>/dev/null || true
n_ev=$(dump ds7 cdcks_events | wc -l)
n_st=$(sqlite3 k.state 'SELECT count(*) FROM _cdc_cassandra_state' 2>/dev/null || echo 0)
check "SIGKILL after the first table's rows were acknowledged ($n_ev rows): no state committed ($n_st)" \
  "[[ $n_ev -gt 0 && $n_st -eq 0 ]]"
check "run again from the start: exit 0" "run k q.jsonl || { tail -5 k.err; false; }"
check "... every table equals Cassandra's" "cass ds7 $c q.jsonl"
check "... and the in-order run's rows" "dump ds7 $TABLES | diff - ds1.rows"

# 6. every CQL type, and a range deletion on a timeuuid clustering column
f=v8-lz4-rollover
cp -r "$DATA/$f/cdc_raw" "$f"
"$CLI" cassandra sidecar --schema "$DATA/$f/schema.cql" --replica "$f" --consistency ONE --once --output "$f.jsonl" \
  --offsets "$f.offsets" 2> "$f.err" || fail "sidecar $f"
conf g ds5 g.state "$DATA/$f/schema.cql"
check "$f (every CQL type): exit 0" "run g $f.jsonl || { tail -5 g.err; false; }"
check "$f: every table equals Cassandra's SELECT JSON" "cass ds5 $f $f.jsonl"
"$PY" "$TESTS/sink/cassandra_order_events.py" "$f.jsonl" > order.jsonl 2> order.want
conf o ds6 o.state "$DATA/$f/schema.cql"
check "timeuuid range deletion: exit 0" "run o order.jsonl || { tail -5 o.err; false; }"
got=$(curl -sf "$HTTP/_test/rows?table=cdcflow-test.ds6.cdcks_all_types" | "$PY" -c '
import json, sys
rows = [r for r in json.load(sys.stdin)["rows"] if r["id"] == 90]
print(json.dumps(sorted(r["ck1"] for r in rows), separators=(",", ":")))')
want=$("$PY" -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["remain"], separators=(",", ":")))' order.want)
check "a range deletion on a timeuuid column covers by time: $got" "[[ '$got' == '$want' ]]"

# 7. the public emulator (goccy/bigquery-emulator, scripts/servers) decodes our writer schema and
# rows for every CQL type with its own Go protobuf code; it applies no CDC rules (every row is
# appended), so what is checked is that every row the sink wrote landed: the counts.
if [[ -n ${CF_TEST_BQ_EMULATOR_HTTP:-} ]]; then
  RUN=$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')
  conf emu x "$W/emu.state" "$DATA/$f/schema.cql" "$("$PY" -c '
import json, os, sys
e = os.environ
print(json.dumps({"project": e["CF_TEST_BQ_EMULATOR_PROJECT"], "defaultDataset": e["CF_TEST_BQ_EMULATOR_DATASET"],
                  "bigquery.storage.endpoint": "http://" + e["CF_TEST_BQ_EMULATOR_GRPC"],
                  "bigquery.api.endpoint": e["CF_TEST_BQ_EMULATOR_HTTP"], "bigquery.timeout.ms": "15000",
                  "table.name.format": "emu_%s_${topic}" % sys.argv[1]}))' "$RUN")"
  check "the emulator, every CQL type: exit 0" "run emu $f.jsonl || { tail -5 emu.err; false; }"
  wrote=$(sed -n 's/.*cdc-sink stopping:.* \([0-9]*\) written.*/\1/p' emu.err)
  landed=0
  for t in all_types events simple bulk; do
    n=$(curl -sf "$CF_TEST_BQ_EMULATOR_HTTP/bigquery/v2/projects/$CF_TEST_BQ_EMULATOR_PROJECT/datasets/$CF_TEST_BQ_EMULATOR_DATASET/tables/emu_${RUN}_cdcks_$t/data?maxResults=100000" |
      "$PY" -c 'import json, sys; print(len(json.load(sys.stdin).get("rows", [])))')
    landed=$((landed + n))
  done
  check "the emulator: every row the sink wrote landed ($landed of ${wrote:-?})" "[[ -n '$wrote' && $landed -eq $wrote ]]"
else
  echo "# the BigQuery emulator is not started (CF_TEST_BQ_EMULATOR_HTTP): its case left out"
fi
exit $failed
