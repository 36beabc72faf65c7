#!/usr/bin/env bash
# test_it_debezium_replica_default_pg.sh - issue 18, never silently wrong, on the
# PostgreSQL target (test_sink_replica_default.sh is the same on SQLite): the
# stored sequence of REPLICA IDENTITY DEFAULT deletes (their before image holds
# only the key; Debezium gives the other required fields their defaults:
# version1 0) with cdcChangeSequenceNumberField=version1, through
# `cdcflow run --input` into the real PostgreSQL server:
#   - a delete whose key's last version is in the same batch deletes the row;
#   - a delete whose key's last version is in the table (an earlier run)
#     deletes the row;
#   - a delete of a key nothing knows is an error (exit 1, errors.tolerance
#     none) whose hint names REPLICA IDENTITY FULL, and with
#     errors.tolerance=all a reported record (exit 3): never a kept row and a
#     clean exit;
#   - ordered by offset (no sequence field) the same files give the same table;
#   - a primary-key change whose create holds a TOASTed placeholder (below) is
#     an error, on SQLite and PostgreSQL.
set -euo pipefail
CLI=${CF_CLI:?CF_CLI not set}
: "${CF_TEST_PG:?CF_TEST_PG not set: start the servers with scripts/servers start}"
HERE=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d)
schema="it_rd_$$_$RANDOM"
psqlq() { psql "$CF_TEST_PG" -XAtq -v ON_ERROR_STOP=1 -c "$1"; }
trap 'psqlq "DROP SCHEMA IF EXISTS ${schema}_field CASCADE; DROP SCHEMA IF EXISTS ${schema}_offset CASCADE" >/dev/null 2>&1 || true; rm -rf "$W"' EXIT
cd "$W"
fail() { echo "FAIL: $*" >&2; exit 1; }
for r in 1 2 3; do python3 "$HERE/replica_default_vectors.py" $r >"rd$r.jsonl"; done
conf() { # conf FILE NAME SCHEMA [extra json members]
    printf '{"name":"%s","config":{"connector.class":"cdc-sink","topics":"dbserver1.public.items","connection.url":"%s","postgres.schema":"%s","key.converter":"json","value.converter":"json"%s}}\n' \
        "$2" "$CF_TEST_PG" "$3" "${4:-}" >"$1"
}
rows() { psqlq "SELECT id || ':' || version1 || ':' || name FROM $1.dbserver1_public_items ORDER BY id" | tr '\n' ' '; }

for mode in field offset; do
    extra=',"cdcChangeSequenceNumberField":"version1"'
    [[ $mode == offset ]] && extra=
    psqlq "CREATE SCHEMA ${schema}_$mode"
    conf "$mode.json" "rd-$mode" "${schema}_$mode" "$extra"
    "$CLI" run "$mode.json" --input rd1.jsonl 2>"$mode-1.log" || { cat "$mode-1.log"; fail "$mode: run 1 exited $?"; }
    got=$(rows "${schema}_$mode")
    [[ $got == "2:5:c 3:1:d " ]] || fail "$mode: after run 1 the table is '$got', want '2:5:c 3:1:d ' (id 1 was deleted)"
    "$CLI" run "$mode.json" --input rd2.jsonl 2>"$mode-2.log" || { cat "$mode-2.log"; fail "$mode: run 2 exited $?"; }
    got=$(rows "${schema}_$mode")
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
[[ $(rows "${schema}_field") == "4:1:e " ]] || fail "the refused run changed the table: $(rows "${schema}_field")"
conf all.json rd-all "${schema}_field" ',"cdcChangeSequenceNumberField":"version1","errors.tolerance":"all","errors.log.enable":"true"'
set +e
"$CLI" run all.json --input rd3.jsonl 2>all-3.log
rc=$?
set -e
[[ $rc == 3 ]] || { cat all-3.log; fail "unknown delete, errors.tolerance=all: exit $rc, want 3"; }
[[ $(rows "${schema}_field") == "4:1:e " ]] || fail "errors.tolerance=all: the table is $(rows "${schema}_field")"

# A primary-key change under REPLICA IDENTITY DEFAULT of a row with a TOASTed
# value the UPDATE left alone, as Debezium 3.6.1 sends it (seen in
# test_it_debezium_pipeline.sh's topics): the delete of id 1 (header
# __debezium.newkey), its tombstone, the create of id 2 (header
# __debezium.oldkey={"id":1}) with note = the placeholder. The value was in id
# 1's row, which the delete removed: an error (exit 1, hint REPLICA IDENTITY
# FULL) or, with errors.tolerance=all, a reported record (exit 3); never id 2
# with a NULL note and a clean exit. An update of id 3 with the placeholder
# (no key change) keeps its stored note, on both targets.
python3 - >mv.jsonl <<'PY'
import json
KS = {"type": "struct", "fields": [{"type": "int32", "optional": False, "field": "id"}], "optional": False,
      "name": "cdc_postgres.public.docs.Key"}
RS = {"type": "struct", "fields": [{"type": "int32", "optional": False, "field": "id"},
                                   {"type": "int64", "optional": False, "field": "version1"},
                                   {"type": "string", "optional": True, "field": "note"}],
      "optional": True, "name": "cdc_postgres.public.docs.Value"}
ES = {"type": "struct", "optional": False, "name": "cdc_postgres.public.docs.Envelope",
      "fields": [dict(RS, field="before"), dict(RS, field="after"),
                 {"type": "string", "optional": False, "field": "op"}]}
PH = "__debezium_unavailable_value"
recs = [(3, None, {"id": 3, "version1": 1, "note": "long note 3"}, "c", []),
        (1, None, {"id": 1, "version1": 1, "note": "long note 1"}, "c", []),
        (3, None, {"id": 3, "version1": 2, "note": PH}, "u", []),
        (1, {"id": 1, "version1": 0, "note": None}, None, "d", ["__debezium.newkey", '{"id":2}']),
        (1, "tombstone", None, None, []),
        (2, None, {"id": 2, "version1": 2, "note": PH}, "c", ["__debezium.oldkey", '{"id":1}'])]
for off, (i, before, after, op, hdr) in enumerate(recs):
    k = json.dumps({"schema": KS, "payload": {"id": i}}, separators=(",", ":"))
    v = None if before == "tombstone" else json.dumps(
        {"schema": ES, "payload": {"before": before, "after": after, "op": op}}, separators=(",", ":"))
    r = {"topic": "cdc_postgres.public.docs", "partition": 0, "offset": off, "broker": -1, "key": k, "payload": v}
    if hdr:
        r["headers"] = hdr
    print(json.dumps(r, separators=(",", ":")))
PY
mvconf() { # mvconf FILE NAME TARGET-MEMBERS [extra]
    printf '{"name":"%s","config":{"connector.class":"cdc-sink","topics":"cdc_postgres.public.docs",%s,"key.converter":"json","value.converter":"json"%s}}\n' \
        "$2" "$3" "${4:-}" >"$1"
}
psqlq "CREATE SCHEMA ${schema}_mv"
trap 'psqlq "DROP SCHEMA IF EXISTS ${schema}_field CASCADE; DROP SCHEMA IF EXISTS ${schema}_offset CASCADE; DROP SCHEMA IF EXISTS ${schema}_mv CASCADE" >/dev/null 2>&1 || true; rm -rf "$W"' EXIT
for tgt in sqlite pg; do
    if [[ $tgt == sqlite ]]; then m="\"sqlite.path\":\"$W/mv.db\""; else m="\"connection.url\":\"$CF_TEST_PG\",\"postgres.schema\":\"${schema}_mv\""; fi
    mvconf "mv-$tgt.json" "mv-$tgt" "$m"
    set +e
    "$CLI" run "mv-$tgt.json" --input mv.jsonl 2>"mv-$tgt.log"
    rc=$?
    set -e
    [[ $rc == 1 ]] || { cat "mv-$tgt.log"; fail "$tgt: key change with a placeholder: exit $rc, want 1"; }
    grep -q '__debezium.oldkey' "mv-$tgt.log" && grep -q 'REPLICA IDENTITY FULL' "mv-$tgt.log" ||
        { cat "mv-$tgt.log"; fail "$tgt: the error does not name the key change and REPLICA IDENTITY FULL"; }
    mvconf "mva-$tgt.json" "mva-$tgt" "$m" ',"errors.tolerance":"all","errors.log.enable":"true"'
    set +e
    "$CLI" run "mva-$tgt.json" --input mv.jsonl 2>"mva-$tgt.log"
    rc=$?
    set -e
    [[ $rc == 3 ]] || { cat "mva-$tgt.log"; fail "$tgt: errors.tolerance=all: exit $rc, want 3"; }
    q="SELECT id || ':' || coalesce(note, 'NULL') FROM cdc_postgres_public_docs ORDER BY id"
    if [[ $tgt == sqlite ]]; then got=$(sqlite3 mv.db "$q" | tr '\n' ' '); else got=$(psqlq "SET search_path = ${schema}_mv; $q" | tr '\n' ' '); fi
    [[ $got == "3:long note 3 " ]] || fail "$tgt: errors.tolerance=all: the table is '$got', want '3:long note 3 ' (id 1 deleted, id 2 refused, id 3's note kept)"
done
echo "1 passed, 0 failed"
