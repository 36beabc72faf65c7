#!/usr/bin/env bash
# test_rf3_fixtures.sh - the RF=3 fixtures (tests/data/cassandra/rf3-*, captured
# from a real three-node cluster by scripts/make-cassandra-rf3-fixtures) agree
# with what the landed reader decodes, so that tests built on them (replica
# dedup) stand on real data:
#  - every node's cdc_raw decodes with `cdcflow cassandra dump`: exit 0, no
#    corruption, no schema errors; every segment's idx says COMPLETED and the
#    idx copied while the node ran names an offset no larger;
#  - the three nodes' partition updates together replay (replay_check.py:
#    Cassandra's reconcile rules) to Cassandra's own SELECT JSON at ALL, and so
#    does each node that was up throughout; the node that was down does not;
#  - rf3_check.py: each node holds exactly the timestamps of the statements it
#    received (workload.cql, case.json's down window), and the copies of one
#    write decode identically on every node.
set -uo pipefail
CLI=${CF_CLI:?} ; TESTS=${CF_TESTS_DIR:?}
DATA=$TESTS/data/cassandra
tmp=$(mktemp -d) ; trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; else echo "ok: $1"; fi; }

ncases=0
for dir in "$DATA"/rf3-*; do
  [[ -f $dir/case.json ]] || continue
  ncases=$((ncases + 1))
  c=$(basename "$dir")
  down=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["down"]; print(d["node"] if d else "")' "$dir/case.json")
  for i in 1 2 3; do
    n=$dir/node$i
    "$CLI" cassandra dump --schema "$dir/schema.cql" --stats "$n/cdc_raw" >"$tmp/$c-$i.jsonl" 2>"$tmp/$c-$i.err"
    rc=$?
    check "$c node$i: exit 0 (got $rc)" "[[ $rc -eq 0 ]] || cat '$tmp/$c-$i.err'"
    check "$c node$i: corrupt=0 schema_errors=0" "grep -q 'corrupt=0 schema_errors=0' '$tmp/$c-$i.err'"
    nseg=$(ls "$n"/cdc_raw/*.log | wc -l)
    check "$c node$i: segments=$nseg read" "grep -q 'segments=$nseg ' '$tmp/$c-$i.err'"
    for seg in "$n"/cdc_raw/*.log; do
      b=$(basename "$seg" .log)
      idx=$n/cdc_raw/${b}_cdc.idx live=$n/cdc_raw_live/${b}_cdc.idx
      check "$c node$i $b: idx COMPLETED" "[[ \$(sed -n 2p '$idx') == COMPLETED ]]"
      if [[ -f $live ]]; then
        check "$c node$i $b: live idx offset <= final" "(( \$(head -1 '$live') <= \$(head -1 '$idx') ))"
      fi
    done
  done
  cat "$tmp/$c"-[123].jsonl >"$tmp/$c-all.jsonl"
  check "$c: the three nodes together replay to Cassandra's SELECT JSON at ALL and tokens" \
    "python3 '$TESTS/cassandra/replay_check.py' '$tmp/$c-all.jsonl' '$dir' >'$tmp/$c.check' 2>&1 || { cat '$tmp/$c.check'; false; }"
  for i in 1 2 3; do
    if [[ $i == "$down" ]]; then
      check "$c node$i (down for a part): alone it misses rows Cassandra returns" \
        "! python3 '$TESTS/cassandra/replay_check.py' '$tmp/$c-$i.jsonl' '$dir' >'$tmp/$c-$i.check' 2>&1 && grep -q 'Cassandra says\|missing row' '$tmp/$c-$i.check'"
    else
      check "$c node$i (up throughout): alone it replays to Cassandra's SELECT JSON" \
        "python3 '$TESTS/cassandra/replay_check.py' '$tmp/$c-$i.jsonl' '$dir' >'$tmp/$c-$i.check' 2>&1 || { cat '$tmp/$c-$i.check'; false; }"
    fi
  done
  check "$c: each node holds the writes it received, copies identical (rf3_check.py)" \
    "python3 '$TESTS/cassandra/rf3_check.py' '$dir' '$tmp/$c-1.jsonl' '$tmp/$c-2.jsonl' '$tmp/$c-3.jsonl' >'$tmp/$c.rf3' 2>&1 || { cat '$tmp/$c.rf3'; false; }"
  if [[ -n $down ]]; then
    # the checker itself: with the down node's dump in node1's place it must fail
    check "$c: rf3_check.py fails when node1 and node$down are swapped" \
      "! python3 '$TESTS/cassandra/rf3_check.py' '$dir' '$tmp/$c-$down.jsonl' '$tmp/$c-2.jsonl' '$tmp/$c-1.jsonl' >/dev/null 2>&1"
  fi
done
check "two RF=3 cases found (got $ncases)" "[[ $ncases -eq 2 ]]"
exit $fail
