#!/usr/bin/env bash
# test_sidecar_rf3.sh - `cdcflow cassandra sidecar` over the RF=3 fixtures:
# each node's own cdc_raw of a real three-node Cassandra 5.0 cluster
# (tests/data/cassandra/rf3-all-up, rf3-one-down: QUORUM writes through
# node1; in rf3-one-down node3 was down for phase B, statements 167-206).
#
# Oracles, all from the cluster: Cassandra's SELECT JSON at ALL
# (expected/*.jsonl, replayed by events_replay.py), case.json (which
# statements' timestamps node3 never received), tokens.jsonl (each
# partition's token as Cassandra computed it) and ring.json (the nodes'
# tokens).
#  - all up: QUORUM and ALL publish every change once (replay equals
#    Cassandra), every node wrote a copy of each (copies = 3 x changes), the
#    copies past the level are counted as duplicates, nothing pending;
#  - one down: QUORUM publishes everything; ALL publishes exactly the changes
#    whose timestamps are outside phase B, keeps phase B's pending, and a run
#    after the timeout drops them (logged with keyspace, table and token,
#    counted);
#  - token ranges: three sidecars, one per node's primary range of ring.json,
#    publish disjoint sets, none empty, whose tokens are in their range (by
#    tokens.jsonl; ranges_check.py), together the QUORUM run's changes, which
#    replay to Cassandra's rows.
set -uo pipefail
CLI=${CF_CLI:?} ; TESTS=${CF_TESTS_DIR:?}
DATA=$TESTS/data/cassandra
REPLAY="python3 $TESTS/sidecar/events_replay.py"
T=$(mktemp -d) ; trap 'rm -rf "$T"' EXIT
failed=0
ok() { echo "ok: $1"; }
fail() { echo "FAIL: $1"; failed=1; }
check() { if eval "$2"; then ok "$1"; else fail "$1"; fi; }

# copy CASE: the three nodes' cdc_raw (a --once run without --cleanup keeps
# them, but a copy keeps the fixture safe from any bug)
copy() {
  rm -rf "$T/$1"; mkdir -p "$T/$1"
  for i in 1 2 3; do cp -r "$DATA/$1/node$i/cdc_raw" "$T/$1/n$i"; done
}
# run CASE NAME LEVEL [flags]: one --once run over the three nodes
run() {
  local c=$1 n=$2 cl=$3; shift 3
  "$CLI" cassandra sidecar --schema "$DATA/$c/schema.cql" --replica "$T/$c/n1" --replica "$T/$c/n2" \
    --replica "$T/$c/n3" --rf 3 --consistency "$cl" --once --output "$T/$n.jsonl" --offsets "$T/$n.offsets" "$@" \
    2>"$T/$n.err"
}
# figure NAME WORD: the number before WORD in the run's last progress line
figure() { grep 'everything present is read' "$T/$1.err" | tail -1 | sed -n "s/.* \([0-9]*\) $2.*/\1/p"; }
# timestamps FILE: every event's timestampMicros, one a line
timestamps() {
  python3 -c '
import json, sys
for line in open(sys.argv[1]):
    if line.strip():
        print(json.loads(json.loads(line)["payload"])["payload"]["timestampMicros"])' "$1"
}

for c in rf3-all-up rf3-one-down; do
  copy $c
  run $c $c.q QUORUM
  rc=$?
  check "$c QUORUM: exit 0 (got $rc)" "[[ $rc -eq 0 ]]"
  check "$c QUORUM: the events replayed equal Cassandra's SELECT JSON at ALL" \
    "$REPLAY '$T/$c.q.jsonl' '$DATA/$c' >'$T/$c.q.check' 2>&1 || { cat '$T/$c.q.check'; false; }"
done
check "rf3-all-up QUORUM: nothing pending" "[[ \$(figure rf3-all-up.q pending) -eq 0 ]]"

# all up: every node has a copy of every change
c=rf3-all-up
n=$(wc -l < "$T/$c.q.jsonl")
copies=$(figure $c.q 'copies read'); dups=$(figure $c.q duplicates)
check "$c: $n changes, three copies of each read ($copies)" "[[ $n -gt 200 && $copies -eq $((3 * n)) ]]"
check "$c QUORUM: the third copy of each is a duplicate ($dups)" "[[ $dups -eq $n ]]"
run $c $c.all ALL
check "$c ALL: the same $n events, nothing pending" \
  "[[ \$(wc -l < '$T/$c.all.jsonl') -eq $n && \$(figure $c.all pending) -eq 0 ]]"
check "$c ALL: the events replayed equal Cassandra's" \
  "$REPLAY '$T/$c.all.jsonl' '$DATA/$c' >'$T/$c.all.check' 2>&1 || { cat '$T/$c.all.check'; false; }"
# --output appends to the record file of earlier runs: nothing again means
# no line added
n0=$(wc -l < "$T/$c.q.jsonl")
check "$c: a second QUORUM run resumes from its state (nothing again)" \
  "run $c $c.q QUORUM && [[ \$(wc -l < '$T/$c.q.jsonl') -eq $n0 ]]"

# one down: phase B reached node1 and node2 only
c=rf3-one-down
read -r b0 b1 < <(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["down"]; print(*d["timestamps"])' \
  "$DATA/$c/case.json")
timestamps "$T/$c.q.jsonl" | sort -n > "$T/q.ts"
awk -v a="$b0" -v b="$b1" '$1 >= a && $1 <= b' "$T/q.ts" > "$T/q.down.ts"
awk -v a="$b0" -v b="$b1" '$1 < a || $1 > b' "$T/q.ts" > "$T/q.up.ts"
nb=$(wc -l < "$T/q.down.ts")
check "$c QUORUM: phase B's changes are published too ($nb)" "[[ $nb -ge 40 ]]"
check "$c QUORUM: they are pending only for node3's late copy (nothing unpublished)" \
  "grep 'everything present is read' '$T/$c.q.err' | grep -q ' $nb pending ($nb published, awaiting late copies), 0 dropped'"
run $c $c.all ALL --timeout-ms 1000
timestamps "$T/$c.all.jsonl" | sort -n > "$T/all.ts"
check "$c ALL: exactly the changes outside phase B are published" "cmp -s '$T/all.ts' '$T/q.up.ts'"
check "$c ALL: phase B's $nb changes wait for node3's copy, unpublished" \
  "grep 'everything present is read' '$T/$c.all.err' | grep -q ' $nb pending, 0 dropped'"
sleep 1.2
n0=$(wc -l < "$T/$c.all.jsonl")
run $c $c.all ALL --timeout-ms 1000
check "$c ALL, after the timeout: nothing more published" "[[ \$(wc -l < '$T/$c.all.jsonl') -eq $n0 ]]"
check "$c ALL, after the timeout: the $nb changes are dropped and counted" \
  "[[ \$(figure $c.all dropped) -eq $nb && \$(figure $c.all pending) -eq 0 ]]"
check "$c ALL: a dropped change is logged with keyspace, table, token and its two replicas" \
  "grep -Eq 'change dropped: cdcks\.(users|events|probe) token -?[0-9]+: 2 of the replicas wrote it within 1000 ms, ALL needs more' '$T/$c.all.err'"
# node3 alone at ONE: what it received, i.e. no phase B
rm -f "$T/n3.offsets"
"$CLI" cassandra sidecar --schema "$DATA/$c/schema.cql" --replica "$T/$c/n3" --consistency ONE --once \
  --output "$T/n3.jsonl" --offsets "$T/n3.offsets" 2>/dev/null
timestamps "$T/n3.jsonl" | sort -n > "$T/n3.ts"
check "$c: node3 alone at ONE has every change but phase B's" "cmp -s '$T/n3.ts' '$T/q.up.ts'"

# token ranges: each node's primary range of ring.json
mapfile -t R < <(python3 - "$DATA/$c/ring.json" <<'EOF'
import json, sys
toks = sorted(int(n["tokens"][0]) for n in json.load(open(sys.argv[1])))
for i, t in enumerate(toks):
    print(f"({toks[i - 1]},{t}]")
EOF
)
check "three primary ranges from ring.json" "[[ \${#R[@]} -eq 3 ]]"
rm -f "$T"/r[012].jsonl
for i in 0 1 2; do
  run $c r$i QUORUM --ranges "${R[$i]}"
done
python3 "$TESTS/sidecar/ranges_check.py" "$DATA/$c/tokens.jsonl" "${R[@]}" "$T/r0.jsonl" "$T/r1.jsonl" "$T/r2.jsonl" \
  "$T/$c.q.jsonl" >"$T/ranges.check" 2>&1
prc=$?
check "token ranges: each sidecar publishes only partitions whose token is in its range, none empty, none twice, together the QUORUM run's events" \
  "cat '$T/ranges.check'; [[ $prc -eq 0 ]] && grep -q '^range 2' '$T/ranges.check'"
cat "$T/r0.jsonl" "$T/r1.jsonl" "$T/r2.jsonl" > "$T/r.jsonl"
check "token ranges: together they replay to Cassandra's rows" \
  "$REPLAY '$T/r.jsonl' '$DATA/$c' >'$T/r.check' 2>&1 || { cat '$T/r.check'; false; }"
exit $failed
