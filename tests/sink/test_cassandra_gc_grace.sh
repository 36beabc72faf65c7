#!/usr/bin/env bash
# test_cassandra_gc_grace.sh - cassandra.gc.grace.seconds: the partition states drop deletions
# older than the grace before the newest event timestamp seen, with the data they shadow, as
# Cassandra's compaction does past gc_grace_seconds (src/sink/cassandra.c, part_purge).
#
# Oracle: Cassandra's SELECT JSON at ALL of the rf3-all-up fixture (cassandra_tables.py). The
# fixture's writes span 0.22 s; the test stretches every timestamp 10,000 times around the
# first (2,200 s; the order of all timestamps, hence Cassandra's reconciliation, is unchanged),
# so a grace of 1,000 s falls between its deletions: users id 9's partition deletion (the last
# write of that partition, at 300 s) is past it, users id 22's (at 2,030 s, newest 2,200 s) not.
#  - grace 1000: every table still equals Cassandra's (dropping what is shadowed changes no
#    row); fewer partition states than with -1 (never); id 9's state is gone, id 22's kept.
#  - the default (864000 s) keeps as many states as -1.
#  - the caveat, Cassandra's zombie: late copies of id 9's writes older than its deletion (a
#    replica that missed the deletion, later than the grace) bring id 9's state back (its
#    deletion is forgotten); with -1 the deletion kept in the state shadows them.
set -uo pipefail
CLI=${CF_CLI:?} ; TESTS=${CF_TESTS_DIR:?}
DATA=$TESTS/data/cassandra
c=rf3-all-up
T=$(mktemp -d) ; trap 'rm -rf "$T"' EXIT
failed=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; failed=1; fi; }

for i in 1 2 3; do cp -r "$DATA/$c/node$i/cdc_raw" "$T/n$i"; done
"$CLI" cassandra sidecar --schema "$DATA/$c/schema.cql" --replica "$T/n1" --replica "$T/n2" --replica "$T/n3" \
  --rf 3 --consistency QUORUM --once --output "$T/q.jsonl" --offsets "$T/q.offsets" 2> "$T/q.err" ||
  { cat "$T/q.err"; exit 1; }
python3 "$TESTS/sink/cassandra_stretch_ts.py" "$T/q.jsonl" "$T/s.jsonl" 10000
# sink NAME GRACE [FILE]: one flush for the whole file (the newest timestamp is the file's)
sink() {
  printf '{"name":"%s","config":{"connector.class":"cdc-sink","topics":"cdcks.users,cdcks.events","sqlite.path":"%s","key.converter":"json","value.converter":"json","cassandra.schema.files":"%s","batchMaxRecords":"100000","mergeIntervalMs":"-1"%s}}\n' \
    "$1" "$T/$3.db" "$DATA/$c/schema.cql" "${2:+,\"cassandra.gc.grace.seconds\":\"$2\"}" > "$T/$1.json"
  "$CLI" run "$T/$1.json" --input "$T/s.jsonl" 2> "$T/$1.err" || { tail -3 "$T/$1.err"; false; }
}
states() { sqlite3 "$T/$1.db" 'SELECT count(*) FROM _cdc_cassandra_state'; }
CMP="python3 $TESTS/sink/cassandra_tables.py"

check "never (-1): exit 0" "sink never -1 never"
check "never: every table equals Cassandra's" "$CMP sqlite:$T/never.db $DATA/$c $T/s.jsonl > $T/never.cmp || { cat $T/never.cmp; false; }"
check "grace 1000 s: exit 0" "sink g1000 1000 g1000"
check "grace 1000 s: every table still equals Cassandra's" \
  "$CMP sqlite:$T/g1000.db $DATA/$c $T/s.jsonl > $T/g.cmp || { cat $T/g.cmp; false; }"
check "the default: exit 0" "sink dflt '' dflt"
n_never=$(states never) n_g=$(states g1000) n_d=$(states dflt)
check "fewer partition states with grace 1000 s ($n_g) than never ($n_never); the default keeps all ($n_d)" \
  "[[ $n_g -lt $n_never && $n_d -eq $n_never ]]"
# which partitions lost their state: the users keys are the encoded id cells; compare the sets
keys() { sqlite3 "$T/$1.db" "SELECT table_name || ':' || hex(partition_key) FROM _cdc_cassandra_state ORDER BY 1"; }
gone=$(comm -23 <(keys never) <(keys g1000) | tr '\n' ' ')
# the encoded partition key cell of users id N (kind INT, little-endian int64: cassandra.c w_cell)
key_of() { python3 -c 'import struct,sys; print("cdcks_users:" + (bytes([1]) + struct.pack("<q", int(sys.argv[1]))).hex().upper())' "$1"; }
k9=$(key_of 9) k22=$(key_of 22)
check "id 9's state is gone (its deletion is past the grace), id 22's kept: gone = $gone" \
  "[[ ' $gone' == *' $k9 '* && ' $gone' != *' $k22 '* ]] && keys g1000 | grep -qx '$k22'"
# the zombie caveat: a late copy of id 9's writes older than its dropped deletion (without
# the deletion: a replica that missed it)
python3 - "$T/s.jsonl" "$T/z.jsonl" <<'EOF'
import json, sys
with open(sys.argv[2], "w") as out:
    for l in open(sys.argv[1]):
        r = json.loads(l)
        env = json.loads(r["payload"])["payload"]
        if r["topic"] == "cdcks.users" and json.loads(r["key"])["payload"]["id"] == 9 \
                and env["operationType"] != "DELETE_PARTITION":
            out.write(l)
EOF
zsink() { sed "s/\"name\":\"$1\"/\"name\":\"$1z\"/" "$T/$1.json" > "$T/$1z.json"
          "$CLI" run "$T/$1z.json" --input "$T/z.jsonl" 2> "$T/$1z.err"; }
rows() { sqlite3 "$T/$1.db" "SELECT * FROM cdcks_users ORDER BY id; SELECT * FROM cdcks_events ORDER BY 1, 2, 3"; }
blob9() { sqlite3 "$T/$1.db" "SELECT hex(state) FROM _cdc_cassandra_state WHERE table_name || ':' || hex(partition_key) = '$k9'"; }
rows never > "$T/never.rows"; b9=$(blob9 never)
check "late old copies ($(wc -l < "$T/z.jsonl") events of id 9), grace -1: exit 0" "zsink never"
check "... the deletion in the state shadows them: no row changes, id 9's state unchanged" \
  "rows never | cmp -s - $T/never.rows && [[ -n '$b9' && \"\$(blob9 never)\" == '$b9' ]]"
check "late old copies, grace 1000 s: exit 0" "zsink g1000"
check "... id 9's state is back from its old writes (the deletion was forgotten: Cassandra's zombie)" \
  "keys g1000 | grep -qx '$k9'"
# the row itself stays deleted while the SQLite target keeps its delete tombstone (a higher
# sequence number, cdcDeleteRetentionSeconds of wall clock): printed, not asserted
echo "# id 9 in the table after the zombie copies: $(sqlite3 "$T/g1000.db" 'SELECT count(*) FROM cdcks_users WHERE id = 9') row(s)"
exit $failed
