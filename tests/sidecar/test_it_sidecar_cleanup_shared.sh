#!/usr/bin/env bash
# test_it_sidecar_cleanup_shared.sh - segment cleanup with two sidecars over
# one cdc_raw, their state in the live Cassandra node of scripts/servers
# (state.store=cassandra, this test's keyspace, a job of this run only; the node's own
# cdc_raw is not touched: the fixture v8-lz4-rollover, four completed
# segments of a real Cassandra 5.0 node, is copied to a temp dir).
#   A owns the lower half of the ring, B the upper half; A runs live with
#   cdc_raw.cleanup=delete over the copy, B with --once (over the copy with
#   cleanup none: whatever leaves it, A removed it):
#   1. B has stored no state: A reads everything, deletes nothing (half of
#      the ring is in no state row);
#   2. B reads only the first segment (a copy holding just that one, with
#      cleanup delete: removed at the end of its run, both rows being past
#      it): A's state is past every segment, B's only past the first: the
#      other three stay in A's copy;
#   3. B reads the whole copy: every row is past every segment: A deletes
#      them all (asked again while held back, without a new change).
# Oracles: the files in the directory; the events A and B published,
# replayed, equal Cassandra's SELECT JSON of the fixture (expected/).
# Fails without the servers (CF_TEST_CASSANDRA).
set -uo pipefail
CLI=${CF_CLI:?} ; TESTS=${CF_TESTS_DIR:?}
if [[ -z ${CF_TEST_CASSANDRA:-} ]]; then
  envf=$("$TESTS/../scripts/servers" envfile 2>/dev/null)
  [[ -f $envf ]] && { set -a; source "$envf"; set +a; }
fi
: "${CF_TEST_CASSANDRA:?start the servers: scripts/servers start}"
R=$TESTS/data/cassandra/v8-lz4-rollover
T=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; wait; [[ -n ${CF_TEST_KEEP:-} ]] || rm -rf "$T"' EXIT
failed=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; failed=1; fi; }
logs() { ls "$1"/*.log 2>/dev/null | wc -l; }
ks=cf_it_cleanup_shared # this test's keyspace (one for every run: no CQL client here to drop one)
job=job_$$_$RANDOM     # this run's rows (they expire with the 30-day TTL)
cp -r "$R/cdc_raw" "$T/raw"
mkdir "$T/first"
first=$(ls "$R/cdc_raw"/*.log | sort | head -1)
cp "$first" "${first%.log}_cdc.idx" "$T/first/"

conf() { # NAME RANGES: the state store settings of a sidecar
  cat >"$T/$1.json" <<JSON
{"state.store": "cassandra", "cql.host": "$CF_TEST_CASSANDRA", "state.keyspace": "$ks", "job.id": "$job",
 "token.ranges": "$2", "state.checkpoint.interval.ms": 100, "poll.interval.ms": 200}
JSON
}
conf a '(-9223372036854775808,0]'
conf b '(0,-9223372036854775808]'
common=(--schema "$R/schema.cql" --replica-name n1 --rf 1 --consistency ONE)

"$CLI" cassandra sidecar --config "$T/a.json" "${common[@]}" --replica "$T/raw" --cleanup delete \
  --output "$T/a.jsonl" --offsets "$T/a.offsets" 2>"$T/a.err" &
apid=$!
waitlog() { local i; for i in $(seq 300); do grep -q "$1" "$T/a.err" && return 0; sleep 0.1; done; return 1; }
check "1. A has read everything, and says why nothing leaves cdc_raw" \
  "waitlog 'some token range is in none of the 1 state row'"
sleep 2
check "1. B has no state: every segment stays ($(logs "$T/raw") of 4)" "[[ \$(logs '$T/raw') -eq 4 ]]"

"$CLI" cassandra sidecar --config "$T/b.json" "${common[@]}" --replica "$T/first" --cleanup delete --once \
  --output "$T/b1.jsonl" --offsets "$T/b.offsets" 2>"$T/b1.err"
check "2. B --once over the first segment: exit 0" "[[ $? -eq 0 ]]"
check "2. B's own copy: the segment both rows are past is deleted at the end of its --once run" \
  "[[ \$(find '$T/first' -type f | wc -l) -eq 0 ]]"
check "2. A holds back what B has not finished" "waitlog 'stay in cdc_raw until the state rows of every sidecar'"
sleep 6 # A asks again every 5 s
later=$(ls "$R/cdc_raw"/*.log | sort | tail -3 | xargs -n1 basename)
check "2. the three segments B has not read stay, with their index" \
  "for f in $(echo $later); do [[ -f '$T/raw/'\$f && -f '$T/raw/'\${f%.log}_cdc.idx ]] || exit 1; done"
check "2. A ran on (alive)" "kill -0 $apid"

"$CLI" cassandra sidecar --config "$T/b.json" "${common[@]}" --replica "$T/raw" --cleanup none --once \
  --output "$T/b2.jsonl" --offsets "$T/b.offsets" 2>"$T/b2.err"
check "3. B --once over the whole copy: exit 0" "[[ $? -eq 0 ]]"
gone() { local i; for i in $(seq 150); do [[ $(find "$T/raw" -type f | wc -l) -eq 0 ]] && return 0; sleep 0.1; done; return 1; }
check "3. both finished: A deleted every segment and index" gone
kill -TERM $apid; wait $apid
check "A stopped cleanly" "[[ $? -eq 0 ]]"
# the changes: each published once by its owner (A and B together: Cassandra's rows)
cat "$T/a.jsonl" "$T/b1.jsonl" "$T/b2.jsonl" >"$T/all.jsonl"
check "A's and B's events replayed equal Cassandra's SELECT JSON" \
  "python3 '$TESTS/sidecar/events_replay.py' '$T/all.jsonl' '$R' >'$T/replay' 2>&1 || { cat '$T/replay'; false; }"
if [[ $failed -ne 0 ]]; then
  for f in a b1 b2; do echo "--- $f.err"; tail -20 "$T/$f.err"; done
fi
exit $failed
