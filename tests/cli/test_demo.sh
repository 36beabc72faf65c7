#!/usr/bin/env bash
# test_demo.sh - `make demo` (scripts/demo) on the embedded defaults: it
# exits 0, its Cassandra tables equal Cassandra's SELECT JSON at ALL of the
# rf3-all-up fixtures (the demo's own comparison, cassandra_tables.py,
# decides its exit code; checked again here on the database it leaves), the
# counts add up (three copies read of each change, one published, all
# applied), the Debezium table has its three rows, and it takes well under
# a minute.
set -uo pipefail
CLI=${CF_CLI:?} ; TESTS=${CF_TESTS_DIR:?}
ROOT=$(cd "$TESTS/.." && pwd)
T=$(mktemp -d) ; trap 'rm -rf "$T"' EXIT
failed=0
ok() { echo "ok: $1"; }
fail() { echo "FAIL: $1"; failed=1; }
check() { if eval "$2"; then ok "$1"; else fail "$1"; fi; }
# the demo runs build/cdcflow of its tree: a tree of its own pointing at CF_CLI
mkdir -p "$T/tree/build"
ln -s "$CLI" "$T/tree/build/cdcflow"
cp -r "$ROOT/scripts" "$ROOT/examples" "$T/tree/"
ln -s "$TESTS" "$T/tree/tests"
start=$(date +%s)
DEMO_DIR=$T/work "$T/tree/scripts/demo" > "$T/out.txt" 2>&1
rc=$?
secs=$(( $(date +%s) - start ))
check "scripts/demo exits 0 (got $rc)" "[[ $rc -eq 0 ]] || { tail -20 '$T/out.txt'; false; }"
check "it says every table equals Cassandra's rows" "grep -q \"every table equals Cassandra's rows\" '$T/out.txt'"
check "its database equals Cassandra's rows" \
  "python3 '$TESTS/sink/cassandra_tables.py' sqlite:$T/work/cassandra.db '$TESTS/data/cassandra/rf3-all-up' '$T/work/cassandra-events.jsonl'"
copies=$(sed -n 's/^copies read (3 replicas): *\([0-9]*\)/\1/p' "$T/out.txt")
pub=$(sed -n 's/^changes published (once each): *\([0-9]*\)/\1/p' "$T/out.txt")
dups=$(sed -n 's/^duplicates dropped: *\([0-9]*\)/\1/p' "$T/out.txt")
app=$(sed -n 's/^events applied by cdc-sink: *\([0-9]*\).*/\1/p' "$T/out.txt")
check "counts: $copies copies = 3 x $pub published, $dups duplicates, $app applied" \
  "[[ -n '$pub' && $pub -gt 200 && $copies -eq \$((3 * pub)) && $dups -eq $pub && $app -eq $pub ]]"
check "it names the database file to open with sqlite3" "grep -q 'sqlite3 $T/work/cassandra.db' '$T/out.txt'"
check "the Debezium path: three rows" "[[ \$(sqlite3 '$T/work/demo.db' 'SELECT count(*) FROM dbserver1_public_customers') -eq 3 ]]"
check "under a minute ($secs s)" "[[ $secs -lt 60 ]]"
exit $failed
