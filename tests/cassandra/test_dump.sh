#!/usr/bin/env bash
# test_dump.sh - `cdcflow cassandra dump` end to end:
#  - Cassandra 5.0 fixtures (tests/data/cassandra/v7-*, v8-*: plain and every
#    compressor): exit 0, no corruption, and the replayed events equal
#    Cassandra's own SELECT JSON of every table and its token(pk) (replay_check.py);
#    the live index (no COMPLETED) stops reading at its offset;
#  - CommitLogUpgradeTest segments: --stats counts, encrypted with --key-file;
#  - exit codes: 2 for usage errors, 3 when corruption was reported (with
#    file@offset), 0 otherwise.
set -uo pipefail
CLI=${CF_CLI:?} ; TESTS=${CF_TESTS_DIR:?} ; SHARED=${CF_SHARED_DIR:?}
DATA=$TESTS/data/cassandra
LEGACY=$SHARED/testdata/cassandra/legacy-commitlog
tmp=$(mktemp -d) ; trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; else echo "ok: $1"; fi; }

for dir in "$DATA"/v7-* "$DATA"/v8-*; do
  [[ -d $dir/cdc_raw ]] || continue
  c=$(basename "$dir")
  "$CLI" cassandra dump --schema "$dir/schema.cql" --stats "$dir/cdc_raw" >"$tmp/$c.jsonl" 2>"$tmp/$c.err"
  rc=$?
  check "$c: exit 0 (got $rc)" "[[ $rc -eq 0 ]]"
  check "$c: corrupt=0 schema_errors=0" "grep -q 'corrupt=0 schema_errors=0' '$tmp/$c.err'"
  check "$c: replay equals Cassandra's SELECT JSON and tokens" \
    "python3 '$TESTS/cassandra/replay_check.py' '$tmp/$c.jsonl' '$dir' >'$tmp/$c.check' 2>&1 || { cat '$tmp/$c.check'; false; }"
  # the index copied while the node ran: offset only, reading stops there
  seg=$(ls "$dir"/cdc_raw/*.log | head -1)
  live=$(ls "$dir"/cdc_raw_live/*_cdc.idx 2>/dev/null | head -1)
  if [[ -n $live ]]; then
    mkdir -p "$tmp/live-$c"
    b=$(basename "$live" _cdc.idx)
    cp "$dir/cdc_raw/$b.log" "$tmp/live-$c/" && cp "$live" "$tmp/live-$c/"
    "$CLI" cassandra dump --schema "$dir/schema.cql" --stats "$tmp/live-$c" >"$tmp/live-$c.jsonl" 2>"$tmp/live-$c.err"
    rc=$?
    off=$(head -1 "$live")
    check "$c: live index: exit 0 (got $rc)" "[[ $rc -eq 0 ]]"
    check "$c: live index: every position below $off" \
      "python3 -c 'import json,sys; sys.exit(any(json.loads(l)[\"position\"] >= $off for l in open(\"$tmp/live-$c.jsonl\")))'"
    check "$c: live index: fewer or equal updates than the completed segment" \
      "[[ \$(wc -l <'$tmp/live-$c.jsonl') -le \$(wc -l <'$tmp/$c.jsonl') ]]"
  fi
done

# --follow: the index first says an early offset (no COMPLETED), then grows and completes
fdir=$DATA/v8-lz4
mkdir -p "$tmp/follow"
fseg=$(ls "$fdir"/cdc_raw/*.log | head -1)
fb=$(basename "$fseg" .log)
cp "$fseg" "$tmp/follow/"
printf '%s' "$(head -1 "$fdir/cdc_raw_live/${fb}_cdc.idx")" >"$tmp/follow/${fb}_cdc.idx"
"$CLI" cassandra dump --schema "$fdir/schema.cql" --follow --poll-ms 100 "$tmp/follow" >"$tmp/follow.jsonl" 2>"$tmp/follow.err" &
fpid=$!
sleep 1
check "--follow: still waiting for COMPLETED" "kill -0 $fpid 2>/dev/null"
cp "$fdir/cdc_raw/${fb}_cdc.idx" "$tmp/follow/${fb}_cdc.idx"
for _ in $(seq 50); do kill -0 $fpid 2>/dev/null || break; sleep 0.2; done
check "--follow: ends once the index says COMPLETED" "! kill -0 $fpid 2>/dev/null"
kill $fpid 2>/dev/null; wait $fpid
check "--follow: exit 0" "[[ $? -eq 0 ]]"
check "--follow: same events as reading the completed segment" "cmp -s '$tmp/follow.jsonl' '$tmp/v8-lz4.jsonl'"

# a batch mixing a table of the schema (simple) with one left out (plain, cdc=false):
# reported (exit 3), and the update of the known table is still printed
python3 -c "import re,sys; s=open(sys.argv[1]).read(); print(re.sub(r'CREATE TABLE cdcks\.plain \(.*?;\n', '', s, flags=re.S))" \
  "$DATA/v7-plain/schema.cql" >"$tmp/noplain.cql"
"$CLI" cassandra dump --schema "$tmp/noplain.cql" "$DATA/v7-plain/cdc_raw" >"$tmp/np.jsonl" 2>"$tmp/np.err"
check "mixed batch: exit 3" "[[ $? -eq 3 ]]"
check "mixed batch: reported" "grep -q 'mutation mixes known tables and unknown table id' '$tmp/np.err'"
check "mixed batch: the known update is kept" \
  "grep -q '\"table\": \"simple\".*\"key\": {\"k\": \"both\"}.*\"v\": {\"value\": 10' '$tmp/np.jsonl'"

# legacy CommitLogUpgradeTest data
"$CLI" cassandra dump --schema "$DATA/legacy_standard1_40.cql" --stats "$LEGACY/4.0.11-encrypted" >"$tmp/l40" 2>"$tmp/l40.err"
check "legacy 4.0.11: exit 0" "[[ $? -eq 0 ]]"
check "legacy 4.0.11: stats" "grep -q 'segments=1 sections=4 mutations=358 partition_updates=355 skipped=3 corrupt=0' '$tmp/l40.err'"
check "legacy 4.0.11: 355 lines" "[[ \$(wc -l <'$tmp/l40') -eq 355 ]]"
"$CLI" cassandra dump --schema "$DATA/legacy_standard1_34.cql" --key-file "$LEGACY/3.4-encrypted/key.hex" --stats \
  "$LEGACY/3.4-encrypted" >/dev/null 2>"$tmp/l34.err"
check "legacy 3.4 encrypted: exit 0" "[[ $? -eq 0 ]]"
check "legacy 3.4 encrypted: stats" "grep -q 'mutations=14562 partition_updates=14561 skipped=1 corrupt=0' '$tmp/l34.err'"

# usage errors: exit 2
"$CLI" cassandra dump >/dev/null 2>&1;                         check "no path: exit 2" "[[ $? -eq 2 ]]"
"$CLI" cassandra dump --bogus x >/dev/null 2>&1;               check "unknown option: exit 2" "[[ $? -eq 2 ]]"
"$CLI" cassandra dump /nonexistent/x.log >/dev/null 2>&1;      check "missing path: exit 2" "[[ $? -eq 2 ]]"
"$CLI" cassandra dump "$LEGACY/3.4-encrypted" >/dev/null 2>"$tmp/nokey.err"
check "encrypted without key: exit 2" "[[ $? -eq 2 ]]"
check "encrypted without key: hint names the alias" "grep -q 'testing:1' '$tmp/nokey.err'"
"$CLI" cassandra --help >"$tmp/help.txt"
check "--help documents the output" "grep -q range_tombstone_boundary '$tmp/help.txt' && grep -q -- '--follow' '$tmp/help.txt'"

# corruption: exit 3 with file@offset, the rest still printed
cp "$LEGACY/4.0.11-encrypted/CommitLog-7-1699285478684.log" "$tmp/"
printf '\xff' | dd of="$tmp/CommitLog-7-1699285478684.log" bs=1 seek=5000 conv=notrunc status=none
"$CLI" cassandra dump --schema "$DATA/legacy_standard1_40.cql" --stats "$tmp/CommitLog-7-1699285478684.log" >"$tmp/c.out" 2>"$tmp/c.err"
check "corrupt: exit 3" "[[ $? -eq 3 ]]"
check "corrupt: error names path@offset" "grep -q 'WHERE:  $tmp/CommitLog-7-1699285478684.log@' '$tmp/c.err'"
check "corrupt: the other mutations are printed" "[[ \$(wc -l <'$tmp/c.out') -eq 354 ]]"
# a truncated copy with its COMPLETED index (it was read as complete: 0 of 57
# updates, exit 0): reported with the segment's path and byte offset
mkdir -p "$tmp/cut"
zseg=$(ls "$DATA"/v7-zstd/cdc_raw/*.log)
cp "$DATA"/v7-zstd/cdc_raw/* "$tmp/cut/"
head -c 10336 "$zseg" >"$tmp/cut/$(basename "$zseg")"
"$CLI" cassandra dump --schema "$DATA/v7-zstd/schema.cql" "$tmp/cut" >"$tmp/cut.out" 2>"$tmp/cut.err"
check "truncated with COMPLETED index: exit 3" "[[ $? -eq 3 ]]"
check "truncated with COMPLETED index: path@offset" \
  "grep -q 'WHERE:  $tmp/cut/$(basename "$zseg")@10336' '$tmp/cut.err'"
check "truncated with COMPLETED index: says why" "grep -q 'ends before the offset its cdc index names' '$tmp/cut.err'"

# non-regular files: a FIFO named like a segment does not block; a directory in
# a segment's place is reported (exit 3, what was found); an empty directory
# and a FIFO given as PATH are refused (exit 2)
mkdir -p "$tmp/odd" "$tmp/empty"
cp "$DATA"/v7-zstd/cdc_raw/* "$tmp/odd/"
mkfifo "$tmp/odd/CommitLog-7-1795979249815.log"
mkdir "$tmp/odd/CommitLog-7-1795979249816.log"
# with an index beside each, as Cassandra's segments have in cdc_raw (so they are read)
cp "$DATA"/v7-zstd/cdc_raw/*_cdc.idx "$tmp/odd/CommitLog-7-1795979249815_cdc.idx"
cp "$DATA"/v7-zstd/cdc_raw/*_cdc.idx "$tmp/odd/CommitLog-7-1795979249816_cdc.idx"
timeout 20 "$CLI" cassandra dump --schema "$DATA/v7-zstd/schema.cql" "$tmp/odd" >"$tmp/odd.out" 2>"$tmp/odd.err"
rc=$?
check "FIFO and directory named like segments: exit 3, no hang (got $rc)" "[[ $rc -eq 3 ]]"
check "FIFO: said what it is" "grep -q 'found a FIFO' '$tmp/odd.err'"
check "directory: said what it is" "grep -q 'found a directory' '$tmp/odd.err'"
check "the real segment is still read" "cmp -s '$tmp/odd.out' '$tmp/v7-zstd.jsonl'"
timeout 20 "$CLI" cassandra dump "$tmp/empty" >/dev/null 2>"$tmp/empty.err"
check "empty directory: exit 2" "[[ $? -eq 2 ]]"
check "empty directory: says so" "grep -q 'holds no commit log segments' '$tmp/empty.err'"
timeout 20 "$CLI" cassandra dump "$tmp/odd/CommitLog-7-1795979249815.log" >/dev/null 2>"$tmp/fifo.err"
check "FIFO as PATH: exit 2" "[[ $? -eq 2 ]]"
check "FIFO as PATH: says what it is" "grep -q 'it is a FIFO' '$tmp/fifo.err'"
exit $fail
