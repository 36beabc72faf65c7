#!/usr/bin/env bash
# test_cluster_sidecar_ring.sh - token.ranges=ring on the live three-node
# Cassandra 5.0 cluster of `make test-cluster` (scripts/run-cluster-tests
# starts it): three sidecars, one per node, each connected over CQL to its
# own node (--cql nodeI --ranges ring: that node's primary ranges), each
# reading all three nodes' cdc_raw, publish each change exactly once in total.
#
# Workload: scripts/cassandra-fixtures/workload_rf3.py in a keyspace of its
# own, every node up (RF=3, QUORUM through node1). Oracles, all Cassandra's:
# its SELECT JSON at ALL after the workload (expected/, replayed by
# events_replay.py), its ring (ring.json, read by the Python driver) and the
# tokens it computed (tokens.jsonl, which murmur3.py must agree with).
#  - each sidecar logs the primary range of its own node, as ring.json gives it;
#  - each publishes only partitions whose token is in that range, none empty;
#  - no change is published by two of them, and together they are the events
#    of one sidecar with token.ranges=all over the same folders;
#  - together they replay to Cassandra's rows;
#  - token.ranges.node: node2's ranges, read through node1, are node2's.
# The idx files of a running node lag its writes by up to commitlog_sync_period
# (1 s): the runs are retried for up to 60 s.
set -uo pipefail
CLI=${CF_CLI:?} ; TESTS=${CF_TESTS_DIR:?}
ROOT=$(cd "$TESTS/.." && pwd)
for v in CF_TEST_CLUSTER_HOSTS CF_TEST_CLUSTER_NODE1 CF_TEST_CLUSTER_NODE2 CF_TEST_CLUSTER_NODE3 \
         CF_TEST_CLUSTER_NODE1_CDC_RAW CF_TEST_CLUSTER_NODE2_CDC_RAW CF_TEST_CLUSTER_NODE3_CDC_RAW; do
  if [[ -z ${!v:-} ]]; then
    echo "test_cluster_sidecar_ring: $v is not set; run \`make test-cluster\` (scripts/run-cluster-tests starts the cluster)" >&2
    exit 1
  fi
done
[[ ${CF_TEST_CLUSTER_NODES:-} == 3 ]] || { echo "test_cluster_sidecar_ring: needs a 3-node cluster (CF_TEST_CLUSTER_NODES=${CF_TEST_CLUSTER_NODES:-})" >&2; exit 1; }
T=$(mktemp -d) ; trap 'rm -rf "$T"' EXIT
failed=0
ok() { echo "ok: $1"; }
fail() { echo "FAIL: $1"; failed=1; }
check() { if eval "$2"; then ok "$1"; else fail "$1"; fi; }
REPLAY="python3 $TESTS/sidecar/events_replay.py"

ks=ring_$(date +%s)_$$
t0=$SECONDS
CF_RF3_HOSTS=$CF_TEST_CLUSTER_HOSTS CF_RF3_KEYSPACE=$ks CF_RF3_DOWN=0 \
  /usr/bin/python3 "$ROOT/scripts/cassandra-fixtures/workload_rf3.py" "$T/out" >"$T/workload.log" 2>&1
rc=$?
check "workload (keyspace $ks, every node up) ran (exit $rc, $((SECONDS - t0)) s)" \
  "[[ $rc -eq 0 ]] || cat '$T/workload.log'"
[[ $rc -eq 0 ]] || exit 1

reps=()
for i in 1 2 3; do v=CF_TEST_CLUSTER_NODE${i}_CDC_RAW; reps+=(--replica "${!v}" --replica-name "node$i"); done
# sidecar NAME FLAGS...: one --once run over the three live folders, nothing deleted
sidecar() {
  local n=$1; shift
  "$CLI" cassandra sidecar "${reps[@]}" --rf 3 --consistency QUORUM --once --cleanup none \
    --tables "$ks.users,$ks.events" --output "$A/$n.jsonl" --offsets "$A/$n.off" "$@" 2>"$A/$n.err"
  echo $? >"$A/$n.rc"
}
attempt() { # the four runs and the replay of the ring runs; 0 when all exited 0 and the replay passes
  A=$T/a$1; mkdir -p "$A"
  for i in 1 2 3; do v=CF_TEST_CLUSTER_NODE$i; sidecar r$i --cql "${!v}" --ranges ring; done
  sidecar all --cql "$CF_TEST_CLUSTER_NODE1" --ranges all
  sidecar n2 --cql "$CF_TEST_CLUSTER_NODE1" --ranges ring --ranges-node "${CF_TEST_CLUSTER_NODE2%:*}"
  cat "$A"/r[123].jsonl >"$A/r.jsonl" 2>/dev/null
  $REPLAY "$A/r.jsonl" "$T/out" >"$A/replay.out" 2>&1
  echo $? >"$A/replay.rc"
  local f; for f in r1 r2 r3 all n2 replay; do [[ $(cat "$A/$f.rc") == 0 ]] || return 1; done
}
deadline=$((SECONDS + 60)); try=0
until attempt $try; do ((SECONDS < deadline)) || break; try=$((try + 1)); sleep 2; done
echo "runs: $((try + 1)) attempt(s)"
for n in r1 r2 r3 all n2; do
  check "sidecar $n: exit 0 (got $(cat "$A/$n.rc"))" "[[ \$(cat '$A/$n.rc') == 0 ]] || tail -5 '$A/$n.err'"
done
# the primary range of each node (one token each), from Cassandra's ring.json
mapfile -t R < <(python3 - "$T/out/ring.json" <<'PY'
import json, sys
nodes = sorted(json.load(open(sys.argv[1])), key=lambda n: n["node"])
toks = sorted(int(n["tokens"][0]) for n in nodes)
for n in nodes:
    t = int(n["tokens"][0])
    i = toks.index(t)
    print(f"{n['address']} ({toks[i - 1]},{t}]")
PY
)
check "ring.json: three nodes, one token each" "[[ \${#R[@]} -eq 3 ]]"
for i in 1 2 3; do
  addr=${R[$((i - 1))]%% *}; range=${R[$((i - 1))]#* }
  check "sidecar r$i logs the primary range of node $addr: $range" \
    "grep -qF 'the primary ranges of $addr (the node connected to): $range' '$A/r$i.err' || grep 'token ranges' '$A/r$i.err'"
done
python3 "$TESTS/sidecar/ranges_check.py" "$T/out/tokens.jsonl" "${R[@]#* }" "$A/r1.jsonl" "$A/r2.jsonl" "$A/r3.jsonl" \
  "$A/all.jsonl" >"$T/ranges.check" 2>&1
prc=$?
check "each sidecar publishes only partitions in its node's primary range, none empty, none twice, together the all run's events" \
  "cat '$T/ranges.check'; [[ $prc -eq 0 ]] && grep -q '^range 2' '$T/ranges.check'"
check "token.ranges.node: node2's ranges read through node1 give what node2's own sidecar published" \
  "grep -qF \"the primary ranges of ${CF_TEST_CLUSTER_NODE2%:*}: \${R[1]#* }\" '$A/n2.err' && cmp -s '$A/n2.jsonl' '$A/r2.jsonl'"
check "together they replay to Cassandra's rows (SELECT JSON at ALL)" \
  "[[ \$(cat '$A/replay.rc') == 0 ]] || cat '$A/replay.out'"
exit $failed
