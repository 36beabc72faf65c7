#!/usr/bin/env bash
# test_sink_replica_default.sh - issue 18, never silently wrong: deletes of a
# table with REPLICA IDENTITY DEFAULT (their before image holds only the key;
# Debezium gives the other required fields their defaults: version1 0) with
# cdcChangeSequenceNumberField=version1, through `cdcflow run --input`:
#   - a delete whose key's last version is in the same batch deletes the row;
#   - a delete whose key's last version is in the table (an earlier run)
#     deletes the row;
#   - a delete of a key nothing knows is an error (exit 1, errors.tolerance
#     none) whose hint names REPLICA IDENTITY FULL, and with
#     errors.tolerance=all a reported record (exit 3): never a kept row and a
#     clean exit;
#   - ordered by offset (no sequence field) the same files give the same table.
set -euo pipefail
CLI=${CF_CLI:?CF_CLI not set}
HERE=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cd "$W"
fail() { echo "FAIL: $*" >&2; exit 1; }
for r in 1 2 3; do python3 "$HERE/replica_default_vectors.py" $r >"rd$r.jsonl"; done
conf() { # conf FILE DB [extra json members]
    printf '{"name":"rd","config":{"connector.class":"cdc-sink","topics":"dbserver1.public.items","sqlite.path":"%s","key.converter":"json","value.converter":"json"%s}}\n' "$2" "${3:-}" >"$1"
}
rows() { sqlite3 "$1" "SELECT id || ':' || version1 || ':' || name FROM dbserver1_public_items ORDER BY id" | tr '\n' ' '; }

for mode in field offset; do
    extra=',"cdcChangeSequenceNumberField":"version1"'
    [[ $mode == offset ]] && extra=
    conf "$mode.json" "$W/$mode.db" "$extra"
    rm -f cdcflow.offsets.json
    "$CLI" run "$mode.json" --input rd1.jsonl 2>"$mode-1.log" || { cat "$mode-1.log"; fail "$mode: run 1 exited $?"; }
    got=$(rows "$mode.db")
    [[ $got == "2:5:c 3:1:d " ]] || fail "$mode: after run 1 the table is '$got', want '2:5:c 3:1:d ' (id 1 was deleted)"
    "$CLI" run "$mode.json" --input rd2.jsonl 2>"$mode-2.log" || { cat "$mode-2.log"; fail "$mode: run 2 exited $?"; }
    got=$(rows "$mode.db")
    [[ $got == "4:1:e " ]] || fail "$mode: after run 2 the table is '$got', want '4:1:e ' (ids 2 and 3 were deleted)"
done

# a delete nothing can order: an error, not a kept row and a clean exit
set +e
"$CLI" run field.json --input rd3.jsonl 2>field-3.log
rc=$?
set -e
[[ $rc == 1 ]] || { cat field-3.log; fail "unknown delete: exit $rc, want 1"; }
grep -q 'no usable value in the sequence field "version1"' field-3.log || { cat field-3.log; fail "message"; }
grep -q 'REPLICA IDENTITY FULL' field-3.log || { cat field-3.log; fail "the hint does not name REPLICA IDENTITY FULL"; }
conf all.json "$W/field.db" ',"cdcChangeSequenceNumberField":"version1","errors.tolerance":"all","errors.log.enable":"true"'
set +e
"$CLI" run all.json --input rd3.jsonl 2>all-3.log
rc=$?
set -e
[[ $rc == 3 ]] || { cat all-3.log; fail "unknown delete, errors.tolerance=all: exit $rc, want 3"; }
echo "1 passed, 0 failed"
