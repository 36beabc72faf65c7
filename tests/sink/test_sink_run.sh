#!/usr/bin/env bash
# test_sink_run.sh - `cdcflow run SINK.json --input FILE` with the cdc-sink
# connector on SQLite: Debezium's documented event shapes (V1..V5 of
# shared/specs/bigquery-cdc.md §3) through the JsonConverter, a redelivery,
# an unchanged TOAST column; then bad records under errors.tolerance none/all,
# and target=bigquery without a dataset as a configuration error.
set -euo pipefail
CLI=${CF_CLI:?CF_CLI not set}
HERE=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cd "$W"
fail() { echo "FAIL: $*" >&2; exit 1; }

python3 "$HERE/debezium_vectors.py" > in.jsonl
python3 "$HERE/debezium_vectors.py" bad > bad.jsonl
run_rc() { # run_rc LOG ARGS...: `cdcflow run ARGS` with stderr to LOG, its exit code in rc
  local log=$1
  shift
  set +e
  "$CLI" run "$@" 2> "$log"
  rc=$?
  set -e
}
conf() { # conf FILE DB [extra json members]
  printf '{"name":"cdc","config":{"connector.class":"cdc-sink","topics":"dbserver1.public.customers","sqlite.path":"%s","key.converter":"json","value.converter":"json"%s}}\n' "$2" "${3:-}" > "$1"
}

# 1. the vectors: id 1 inserted, updated, deleted (rewrite) + tombstone, then
#    replayed (offsets 10, 11 again): stays deleted; id 2 deleted by a
#    null payload; id 3 updated with name unavailable: name kept.
conf sink.json "$W/out.db"
"$CLI" run sink.json --input in.jsonl 2> run.log || { cat run.log; fail "run exited $?"; }
got=$(sqlite3 out.db "SELECT id, email, coalesce(name, 'NULL'), _change_sequence_number FROM dbserver1_public_customers ORDER BY id")
want="3|c2@x|C|0000000000000011"
[[ $got == "$want" ]] || fail "table: got '$got', want '$want'"
tomb=$(sqlite3 out.db "SELECT id, _change_sequence_number FROM _cdc_tombstones_dbserver1_public_customers ORDER BY id" | tr '\n' ' ')
[[ $tomb == "1|000000000000000d 2|000000000000000f " ]] || fail "tombstones: got '$tomb'"
# __deleted never becomes a column; the primary key is the key's id
cols=$(sqlite3 out.db "SELECT group_concat(name || ':' || pk) FROM pragma_table_info('dbserver1_public_customers')")
[[ $cols == "id:1,email:0,name:0,_change_sequence_number:0" ]] || fail "columns: $cols"
# a second run over the same file (a full redelivery) changes nothing
rm -f cdcflow.offsets.json
"$CLI" run sink.json --input in.jsonl 2> run2.log || { cat run2.log; fail "second run"; }
got2=$(sqlite3 out.db "SELECT id, email, coalesce(name, 'NULL'), _change_sequence_number FROM dbserver1_public_customers ORDER BY id")
[[ $got2 == "$want" ]] || fail "after redelivery: got '$got2'"

# 2. a bad record with errors.tolerance=none: the task fails (exit 1) and
#    the message says what, where and why
conf bad.json "$W/bad.db"
rm -f cdcflow.offsets.json
set +e
"$CLI" run bad.json --input bad.jsonl 2> bad.log
rc=$?
set -e
[[ $rc == 1 ]] || { cat bad.log; fail "bad record: exit $rc, want 1"; }
grep -q '__deleted is "TRUE"' bad.log || { cat bad.log; fail "message"; }
grep -q 'dbserver1.public.customers/0@18' bad.log || { cat bad.log; fail "where"; }

# 3. errors.tolerance=all: the rest is applied, exit 3
conf all.json "$W/all.db" ',"errors.tolerance":"all","errors.log.enable":"true"'
rm -f cdcflow.offsets.json
run_rc all.log all.json --input bad.jsonl
[[ $rc == 3 ]] || { cat all.log; fail "tolerance all: exit $rc, want 3"; }
got=$(sqlite3 all.db "SELECT id FROM dbserver1_public_customers ORDER BY id")
[[ $got == "3" ]] || fail "tolerance all: rows '$got'"

# 3b. a damaged line of the record file under errors.tolerance=all: skipped,
#     and the log names the file, the line and the byte offset (it said
#     "record --1@-1" before)
{ head -3 in.jsonl; echo '{"topic":"dbserver1.public.customers","partition":0,"offset":x}'; tail -n +4 in.jsonl; } > mixed.jsonl
off=$(head -3 in.jsonl | wc -c)
conf mixed.json "$W/mixed.db" ',"errors.tolerance":"all","errors.log.enable":"true"'
rm -f cdcflow.offsets.json
run_rc mixed.log mixed.json --input mixed.jsonl
[[ $rc == 3 ]] || { cat mixed.log; fail "bad line: exit $rc, want 3"; }
grep -q "record at mixed.jsonl:4:62 (byte offset $((off + 61))) skipped (errors.tolerance=all)" mixed.log ||
  { cat mixed.log; fail "the skip does not name file, line and byte offset"; }
grep -q -- '--1@-1' mixed.log && { cat mixed.log; fail "the skip names no place"; }
got=$(sqlite3 mixed.db "SELECT id, email, coalesce(name, 'NULL'), _change_sequence_number FROM dbserver1_public_customers ORDER BY id")
[[ $got == "$want" ]] || fail "bad line skipped: got '$got', want '$want'"

# 4. target=bigquery without a dataset: the task fails at start (exit 1)
#    naming the setting, before any credentials are looked for (tests/sink/bigquery runs it
#    against the BigQuery test double)
conf bq.json "$W/bq.db" ',"target":"bigquery","project":"p1"'
set +e
"$CLI" run bq.json --input in.jsonl 2> bq.log
rc=$?
set -e
[[ $rc == 1 ]] || { cat bq.log; fail "bigquery: exit $rc, want 1"; }
grep -q 'missing required configuration "defaultDataset"' bq.log || { cat bq.log; fail "bigquery message"; }
echo "1 passed, 0 failed"
