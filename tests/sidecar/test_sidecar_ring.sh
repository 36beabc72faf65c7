#!/usr/bin/env bash
# test_sidecar_ring.sh - `cdcflow cassandra sidecar --ranges ring`: the
# configuration errors and a node that cannot be reached, without a server
# (the live node: test_it_sidecar_ring.c). Each must fail at start (exit 1)
# with an error naming the settings or the address, and what to do.
set -uo pipefail
CLI=${CF_CLI:?} ; TESTS=${CF_TESTS_DIR:?}
DATA=$TESTS/data/cassandra/rf3-all-up
T=$(mktemp -d) ; trap 'rm -rf "$T"' EXIT
failed=0
ok() { echo "ok: $1"; }
fail() { echo "FAIL: $1"; failed=1; }
check() { if eval "$2"; then ok "$1"; else fail "$1"; fi; }
cp -r "$DATA/node1/cdc_raw" "$T/n1"
run() {
  "$CLI" cassandra sidecar --schema "$DATA/schema.cql" --replica "$T/n1" --once --output "$T/o.jsonl" \
    --offsets "$T/off" "$@" >"$T/out" 2>"$T/err"
}
# ring without a node to read it from: both settings named
run --ranges ring ; rc=$?
check "ring without --cql: exit 1 (got $rc)" "[[ $rc -eq 1 ]]"
check "ring without --cql: the error names token.ranges and cql.host" \
  "grep -q 'ERROR:  token.ranges=ring needs cql.host' '$T/err'"
check "ring without --cql: nothing published" "[[ ! -s '$T/o.jsonl' ]]"
# a node address without ring
run --ranges-node 127.0.0.2 ; rc=$?
check "--ranges-node without ring: exit 1 (got $rc)" "[[ $rc -eq 1 ]]"
check "--ranges-node without ring: the error says so" \
  "grep -q 'ERROR:  token.ranges.node is set but token.ranges is not ring' '$T/err'"
# a port nobody listens on
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
run --ranges ring --cql "127.0.0.1:$port" ; rc=$?
check "ring, node unreachable: exit 1 (got $rc)" "[[ $rc -eq 1 ]]"
check "ring, node unreachable: the error names the node" \
  "grep -q \"ERROR:  cannot read the token ring (system.local, system.peers) over CQL from 127.0.0.1:$port\" '$T/err'"
check "ring, node unreachable: the connect failure as detail, what to do as hint" \
  "grep -q '^DETAIL:  cannot connect' '$T/err' && grep -q '^HINT:  token.ranges=ring reads the ring at start' '$T/err'"
check "ring, node unreachable: nothing published" "[[ ! -s '$T/o.jsonl' ]]"
exit $failed
