#!/usr/bin/env bash
# test_cluster_cdc_raw.sh - a live three-node Cassandra 5.0 cluster (make
# test-cluster: scripts/run-cluster-tests starts it, hinted handoff off) takes the
# RF=3 workload (scripts/cassandra-fixtures/workload_rf3.py, in a keyspace of its
# own, QUORUM through node1, node3 stopped for phase B and started again), and
# every node's cdc_raw fills with what it received:
#  - each node's cdc_raw gains CDC data (its _cdc.idx offsets grow);
#  - `cdcflow cassandra dump` reads each node's live cdc_raw without error;
#  - rf3_check.py: node1 and node2 hold every statement's write, node3 all but
#    phase B's, and the copies decode identically;
#  - the three nodes' updates together replay to Cassandra's SELECT JSON at ALL
#    (replay_check.py), and so do node1's alone;
#  - every node runs at the end (node3 came back).
# The idx files of a running node lag its writes by up to commitlog_sync_period
# (1 s): the checks are retried for up to 30 s.
set -uo pipefail
CLI=${CF_CLI:?} ; TESTS=${CF_TESTS_DIR:?}
ROOT=$(cd "$TESTS/.." && pwd)
for v in CF_TEST_CLUSTER_HOSTS CF_TEST_CLUSTER_STOP_NODE CF_TEST_CLUSTER_START_NODE CF_TEST_CLUSTER_DIR \
         CF_TEST_CLUSTER_NODE1_CDC_RAW CF_TEST_CLUSTER_NODE2_CDC_RAW CF_TEST_CLUSTER_NODE3_CDC_RAW; do
  if [[ -z ${!v:-} ]]; then
    echo "test_cluster_cdc_raw: $v is not set; run \`make test-cluster\` (scripts/run-cluster-tests starts the cluster)" >&2
    exit 1
  fi
done
[[ ${CF_TEST_CLUSTER_NODES:-} == 3 ]] || { echo "test_cluster_cdc_raw: needs a 3-node cluster (CF_TEST_CLUSTER_NODES=${CF_TEST_CLUSTER_NODES:-})" >&2; exit 1; }
tmp=$(mktemp -d) ; trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; else echo "ok: $1"; fi; }
raw() { local v=CF_TEST_CLUSTER_NODE${1}_CDC_RAW; echo "${!v}"; }
# the sum of a cdc_raw's idx offsets: how much CDC data Cassandra says it synced
synced() { local s=0 f; for f in "$(raw "$1")"/*_cdc.idx; do [[ -f $f ]] && s=$((s + $(head -1 "$f"))); done; echo $s; }

ks=cl_$(date +%s)_$$
declare -A before
for i in 1 2 3; do before[$i]=$(synced "$i"); done
t0=$SECONDS
CF_RF3_HOSTS=$CF_TEST_CLUSTER_HOSTS CF_RF3_KEYSPACE=$ks CF_RF3_DOWN=3 CF_RF3_STOP_NODE=$CF_TEST_CLUSTER_STOP_NODE \
  CF_RF3_START_NODE=$CF_TEST_CLUSTER_START_NODE \
  /usr/bin/python3 "$ROOT/scripts/cassandra-fixtures/workload_rf3.py" "$tmp/out" >"$tmp/workload.log" 2>&1
rc=$?
check "workload (keyspace $ks, node3 down for phase B) ran (exit $rc, $((SECONDS - t0)) s)" \
  "[[ $rc -eq 0 ]] || cat '$tmp/workload.log'"
check "every node runs again" "'$ROOT/scripts/cassandra-cluster' status '$CF_TEST_CLUSTER_DIR'"

attempt() { # dump every node and run the checks once; 0 when all pass
  local i ok=0
  for i in 1 2 3; do
    "$CLI" cassandra dump --schema "$tmp/out/schema.cql" --stats "$(raw "$i")" >"$tmp/n$i.jsonl" 2>"$tmp/n$i.err"
    echo $? >"$tmp/n$i.rc"
  done
  cat "$tmp"/n[123].jsonl >"$tmp/all.jsonl"
  python3 "$TESTS/cassandra/rf3_check.py" "$tmp/out" "$tmp/n1.jsonl" "$tmp/n2.jsonl" "$tmp/n3.jsonl" >"$tmp/rf3.out" 2>&1
  echo $? >"$tmp/rf3.rc"
  python3 "$TESTS/cassandra/replay_check.py" "$tmp/all.jsonl" "$tmp/out" >"$tmp/replay.out" 2>&1
  echo $? >"$tmp/replay.rc"
  python3 "$TESTS/cassandra/replay_check.py" "$tmp/n1.jsonl" "$tmp/out" >"$tmp/replay1.out" 2>&1
  echo $? >"$tmp/replay1.rc"
  for f in n1 n2 n3 rf3 replay replay1; do [[ $(cat "$tmp/$f.rc") == 0 ]] || ok=1; done
  return $ok
}
deadline=$((SECONDS + 30))
until attempt; do ((SECONDS < deadline)) || break; sleep 1; done
passed() { [[ $(cat "$tmp/$1.rc") == 0 ]] || { cat "$tmp/$2"; false; }; }
for i in 1 2 3; do
  after=$(synced "$i")
  check "node$i: cdc_raw filled (idx offsets ${before[$i]} -> $after)" "(( after > ${before[$i]} ))"
  check "node$i: dump exit 0 (got $(cat "$tmp/n$i.rc"))" "passed n$i n$i.err"
  check "node$i: corrupt=0 schema_errors=0" "grep -q 'corrupt=0 schema_errors=0' '$tmp/n$i.err'"
done
check "each node holds the writes it received, node3 lacks phase B, copies identical (rf3_check.py)" "passed rf3 rf3.out"
check "the three nodes together replay to Cassandra's SELECT JSON at ALL" "passed replay replay.out"
check "node1 alone replays to Cassandra's SELECT JSON at ALL" "passed replay1 replay1.out"
exit $fail
