#!/usr/bin/env bash
# test_cassandra_sink.sh - Cassandra change events into SQLite tables with
# Cassandra's semantics (src/sink/cassandra.c).
#
# Oracle: Cassandra's SELECT JSON at ALL (tests/data/cassandra/<case>/
# expected/*.jsonl) from the real three-node Cassandra 5.0 cluster that wrote
# the fixtures' cdc_raw segments. For rf3-all-up and rf3-one-down:
# `cdcflow cassandra sidecar` (RF 3, QUORUM, --once) writes the change
# events to a record file, `cdcflow run` with the cdc-sink applies them to
# SQLite, and every table must equal Cassandra's rows (cassandra_tables.py;
# list cells that got element-level writes are not comparable, counted).
# Then the order and the number of copies must not matter:
#  - the file applied a second time (another connector name: a new consumer
#    that reads it from the start, a full redelivery) changes no row;
#  - the events in a shuffled order, applied in batches of 5 records (the
#    state goes through the database between batches), give the same rows
#    as in order, the list cells included;
#  - the events of all three replicas at consistency ONE (every copy
#    published: three of each) give the same rows.
# A range deletion on a timeuuid clustering column covers the rows older
# than its bound by the UUIDs' time (Cassandra's TimeUUIDType order), not by
# their text (cassandra_order_events.py), with the CQL schema or, without
# it, with the events' cassandra.type parameters.
# A wide partition (20,000 rows, shuffled, then a range deletion of half and
# one newer row: cassandra_wide_events.py) applies in seconds (the rows are
# indexed) and leaves Cassandra's rows.
# And every type: the single-node fixtures v7-* and v8-* (commit log
# versions 7 and 8, every compression; table all_types has every CQL type,
# frozen and non-frozen collections, UDTs, tuples, vectors, a timeuuid
# clustering column, static columns, a quoted column name) through the
# sidecar at ONE into SQLite, each table equal to that node's SELECT JSON.
set -uo pipefail
CLI=${CF_CLI:?} ; TESTS=${CF_TESTS_DIR:?}
DATA=$TESTS/data/cassandra
CMP="python3 $TESTS/sink/cassandra_tables.py"
T=$(mktemp -d) ; trap 'rm -rf "$T"' EXIT
failed=0
ok() { echo "ok: $1"; }
fail() { echo "FAIL: $1"; failed=1; }
check() { if eval "$2"; then ok "$1"; else fail "$1"; fi; }

# sidecar CASE NAME LEVEL: the three nodes' cdc_raw (copied) -> NAME.jsonl
sidecar() {
  local c=$1 n=$2 cl=$3
  rm -rf "$T/$c"; mkdir -p "$T/$c"
  for i in 1 2 3; do cp -r "$DATA/$c/node$i/cdc_raw" "$T/$c/n$i"; done
  rm -f "$T/$n.jsonl" "$T/$n.offsets"
  "$CLI" cassandra sidecar --schema "$DATA/$c/schema.cql" --replica "$T/$c/n1" --replica "$T/$c/n2" \
    --replica "$T/$c/n3" --rf 3 --consistency "$cl" --once --output "$T/$n.jsonl" --offsets "$T/$n.offsets" \
    2>"$T/$n.sidecar.err"
}
# sink NAME DB CASE FILE [extra json]: cdc-sink connector NAME reads FILE into DB
sink() {
  printf '{"name":"%s","config":{"connector.class":"cdc-sink","topics":"cdcks.users,cdcks.events","sqlite.path":"%s","key.converter":"json","value.converter":"json","cassandra.schema.files":"%s"%s}}\n' \
    "$1" "$2" "$DATA/$3/schema.cql" "${5:-}" > "$T/$1.json"
  "$CLI" run "$T/$1.json" --input "$4" 2>"$T/$1.err"
}
# rows DB: every table's rows but the sequence column (it is the partition's
# newest timestamp when the row was last written, so it depends on the order)
rows() {
  sqlite3 "$1" "SELECT id, age, email, home, name, prefs, score, tags, visits, work FROM cdcks_users ORDER BY id;
                SELECT p, seq, sub, note, n, v FROM cdcks_events ORDER BY p, seq, sub"
}

for c in rf3-all-up rf3-one-down; do
  sidecar $c $c QUORUM
  check "$c: the sidecar ran (exit 0)" "[[ \$? -eq 0 && -s '$T/$c.jsonl' ]]"
  sink s1-$c "$T/$c.db" $c "$T/$c.jsonl"
  rc=$?
  check "$c: cdc-sink exit 0 (got $rc)" "[[ $rc -eq 0 ]] || { tail -5 '$T/s1-$c.err'; false; }"
  check "$c: every table equals Cassandra's SELECT JSON at ALL" \
    "$CMP sqlite:$T/$c.db $DATA/$c $T/$c.jsonl >'$T/$c.cmp' 2>&1; r=\$?; cat '$T/$c.cmp'; [[ \$r -eq 0 ]]"
  check "$c: the stored state is next to the tables" \
    "[[ \$(sqlite3 '$T/$c.db' 'SELECT count(*) FROM _cdc_cassandra_state') -gt 0 ]]"
  rows "$T/$c.db" > "$T/$c.rows"

  # a full redelivery of the file
  sink s2-$c "$T/$c.db" $c "$T/$c.jsonl"
  check "$c: the file applied again (a redelivery) changes no row" \
    "[[ \$? -eq 0 ]] && rows '$T/$c.db' | cmp -s - '$T/$c.rows'"

  # shuffled, in batches of 5 (state read back from the database each time)
  python3 - "$T/$c.jsonl" "$T/$c.shuf.jsonl" <<'EOF'
import random, sys
lines = open(sys.argv[1]).readlines()
random.Random(16).shuffle(lines)
open(sys.argv[2], "w").writelines(lines)
EOF
  sink s3-$c "$T/$c.shuf.db" $c "$T/$c.shuf.jsonl" ',"batchMaxRecords":"5"'
  check "$c: shuffled, in batches of 5: the same rows as in order" \
    "[[ \$? -eq 0 ]] && rows '$T/$c.shuf.db' | diff - '$T/$c.rows'"
done

# every copy of every replica: one sidecar per node at ONE (each publishes
# its node's copy), the three files one after the other: three of each
c=rf3-all-up
: > "$T/one.jsonl"
for i in 1 2 3; do
  "$CLI" cassandra sidecar --schema "$DATA/$c/schema.cql" --replica "$T/$c/n$i" --consistency ONE --once \
    --output "$T/n$i.jsonl" --offsets "$T/n$i.offsets" 2>"$T/n$i.err"
  cat "$T/n$i.jsonl" >> "$T/one.jsonl"
done
n1=$(wc -l < "$T/one.jsonl"); nq=$(wc -l < "$T/$c.jsonl")
check "$c: three nodes' copies ($n1 events, $nq at QUORUM)" "[[ $n1 -eq \$((3 * nq)) ]]"
sink s4 "$T/one.db" $c "$T/one.jsonl"
check "$c: three copies of each change give the same rows" \
  "[[ \$? -eq 0 ]] && rows '$T/one.db' | diff - '$T/$c.rows'"

# every type, every single-node fixture
for d in "$DATA"/v7-* "$DATA"/v8-*; do
  [[ -d $d/expected ]] || continue
  f=$(basename "$d")
  rm -rf "$T/$f"; cp -r "$d/cdc_raw" "$T/$f"
  "$CLI" cassandra sidecar --schema "$d/schema.cql" --replica "$T/$f" --consistency ONE --once \
    --output "$T/$f.jsonl" --offsets "$T/$f.offsets" 2>"$T/$f.sidecar.err"
  printf '{"name":"t-%s","config":{"connector.class":"cdc-sink","topics.regex":"cdcks\\\\..*","sqlite.path":"%s","key.converter":"json","value.converter":"json","cassandra.schema.files":"%s"}}\n' \
    "$f" "$T/$f.db" "$d/schema.cql" > "$T/t-$f.json"
  "$CLI" run "$T/t-$f.json" --input "$T/$f.jsonl" 2>"$T/t-$f.err"
  rc=$?
  check "$f: every table equals Cassandra's SELECT JSON (sink exit $rc)" \
    "[[ $rc -eq 0 ]] && $CMP sqlite:$T/$f.db $d $T/$f.jsonl >'$T/$f.cmp' 2>&1 || { cat '$T/$f.cmp'; tail -3 '$T/t-$f.err'; false; }"
done

# timeuuid order of a range deletion
f=v8-lz4-rollover
python3 "$TESTS/sink/cassandra_order_events.py" "$T/$f.jsonl" > "$T/order.jsonl" 2>"$T/order.want"
printf '{"name":"order","config":{"connector.class":"cdc-sink","topics":"cdcks.all_types","sqlite.path":"%s","key.converter":"json","value.converter":"json","cassandra.schema.files":"%s"}}\n' \
  "$T/order.db" "$DATA/$f/schema.cql" > "$T/order.json"
"$CLI" run "$T/order.json" --input "$T/order.jsonl" 2>"$T/order.err"
got=$(sqlite3 "$T/order.db" "SELECT json_group_array(ck1) FROM (SELECT ck1 FROM cdcks_all_types WHERE id = 90 ORDER BY ck1)")
want=$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["remain"], separators=(",", ":")))' "$T/order.want")
check "a range deletion on a timeuuid column covers by time: $got" "[[ '$got' == '$want' ]]"
# the same without cassandra.schema.files: the events' cassandra.type parameters give the order
sed 's/"order"/"order2"/; s#order.db#order2.db#; s#,"cassandra.schema.files":"[^"]*"##' "$T/order.json" > "$T/order2.json"
"$CLI" run "$T/order2.json" --input "$T/order.jsonl" 2>"$T/order2.err"
got=$(sqlite3 "$T/order2.db" "SELECT json_group_array(ck1) FROM (SELECT ck1 FROM cdcks_all_types WHERE id = 90 ORDER BY ck1)")
check "... and without cassandra.schema.files (the events' CQL types): $got" "[[ '$got' == '$want' ]]"

# a wide partition
python3 "$TESTS/sink/cassandra_wide_events.py" "$T/$f.jsonl" 20000 > "$T/wide.jsonl" 2>"$T/wide.want"
sed 's/"order"/"wide"/; s#order.db#wide.db#; s/cdcks.all_types/cdcks.events/' "$T/order.json" > "$T/wide.json"
start=$(date +%s%N)
"$CLI" run "$T/wide.json" --input "$T/wide.jsonl" 2>"$T/wide.err"
rc=$? ms=$(( ($(date +%s%N) - start) / 1000000 ))
got=$(sqlite3 "$T/wide.db" "SELECT count(*), max(seq), sum(seq < 10000) FROM cdcks_events WHERE p = 7000")
check "a wide partition: 20,000 rows, half range-deleted, one newer: $got (want $(cat "$T/wide.want") rows) in $ms ms" \
  "[[ $rc -eq 0 && '$got' == \"\$(cat '$T/wide.want')|20000|10000\" && $ms -lt 30000 ]]"
exit $failed
