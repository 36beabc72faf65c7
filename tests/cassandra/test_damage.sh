#!/usr/bin/env bash
# test_damage.sh - the commit log reader against ~2,000 damaged copies of the
# Cassandra 5.0 fixtures (tests/data/cassandra/v7-*, v8-*): truncations at
# every kind of boundary, bit flips, zeroed ranges, index lies. Every damaged
# input is reported (exit 3, the damaged file's path and a byte offset) or
# decoded whole (exit 0, equal to the undamaged decode); nothing in between.
# damage.py says how; SEED=n changes the damage drawn.
set -euo pipefail
CLI=${CF_CLI:?} ; TESTS=${CF_TESTS_DIR:?}
tmp=$(mktemp -d) ; trap 'rm -rf "$tmp"' EXIT
python3 "$TESTS/cassandra/damage.py" "$CLI" "$TESTS/data/cassandra" "$tmp" --seed "${SEED:-15}"
