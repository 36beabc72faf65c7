#!/usr/bin/env bash
# test_cassandra_added_column.sh - a set column added by ALTER TABLE ADD
# after the cdc-sink was configured: its cassandra.schema.files has the table
# without the column, so only the events tell a set from a list (both are
# Connect arrays). The sidecar puts each column's CQL type in the payload
# field's parameters ("cassandra.type", docs/formats.md); the sink must use
# it. Found by test_it_cassandra_e2e.sh (a set column added mid-run came out
# as a list: duplicates, elements in write order).
# Oracle: Cassandra's set semantics (CQL docs: a set holds each value once,
# SELECT returns it sorted). The writes, as the sidecar publishes them:
#   INSERT INTO ks.users (id, badges) VALUES (19, {8, 19})   ts 1000
#   UPDATE ks.users SET badges = badges + {8} WHERE id = 19   ts 2000
#   UPDATE ks.users SET badges = badges + {1} WHERE id = 19   ts 3000
#   UPDATE ks.users SET badges = badges - {19} WHERE id = 19  ts 4000
# SELECT badges FROM ks.users WHERE id = 19 returns {1, 8}.
set -uo pipefail
CLI=${CF_CLI:?} ; TESTS=${CF_TESTS_DIR:?}
T=$(mktemp -d) ; trap 'rm -rf "$T"' EXIT
failed=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; failed=1; fi; }
cat > "$T/schema.cql" <<'CQL'
CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': '1'}  AND durable_writes = true;

CREATE TABLE ks.users (
    id int PRIMARY KEY,
    name text
) WITH cdc = true;
CQL
python3 - "$T/events.jsonl" <<'PY'
import json, sys
def field(name, t, **kw):
    return dict({"type": t, "optional": True, "field": name}, **kw)
row = {"type": "struct", "optional": False, "name": "cassandra.ks.users.Row", "field": "payload", "fields": [
    field("id", "int32", parameters={"cassandra.type": "int"}),
    field("badges", "array", items={"type": "int32", "optional": False}, parameters={"cassandra.type": "set<int>"}),
    field("name", "string", parameters={"cassandra.type": "text"})]}
strs = {"type": "array", "items": {"type": "string", "optional": False}}
env = {"type": "struct", "optional": False, "name": "cassandra.ks.users.Envelope", "fields": [
    {"type": "string", "optional": False, "field": "operationType"},
    {"type": "int64", "optional": False, "field": "timestampMicros"},
    {"type": "string", "optional": False, "field": "sourceKeyspace"},
    {"type": "string", "optional": False, "field": "sourceTable"},
    {"type": "string", "optional": False, "field": "schemaUuid"},
    {"type": "boolean", "optional": False, "field": "isPartial"},
    dict(strs, optional=False, field="updateFields"), dict(strs, optional=True, field="elementFields"),
    dict(strs, optional=True, field="range"), row]}
key = json.dumps({"schema": {"type": "struct", "optional": False, "name": "cassandra.ks.users.Key",
                             "fields": [{"type": "int32", "optional": False, "field": "id"}]}, "payload": {"id": 19}})
with open(sys.argv[1], "w") as f:
    for i, (op, ts, badges, elem) in enumerate([("INSERT", 1000, [8, 19], None), ("UPDATE", 2000, [8], ["badges"]),
                                                ("UPDATE", 3000, [1], ["badges"]),
                                                ("COMPLEX_ELEMENT_DELETE", 4000, [19], ["badges"])]):
        p = {"operationType": op, "timestampMicros": ts, "sourceKeyspace": "ks", "sourceTable": "users",
             "schemaUuid": "00000000-0000-3000-8000-000000000000", "isPartial": True,
             "updateFields": ["id", "badges"], "elementFields": elem, "range": None,
             "payload": {"id": 19, "badges": badges, "name": None}}
        f.write(json.dumps({"topic": "ks.users", "partition": 0, "offset": i, "key": key,
                            "payload": json.dumps({"schema": env, "payload": p})}) + "\n")
PY
printf '{"name":"s","config":{"connector.class":"cdc-sink","topics":"ks.users","sqlite.path":"%s","key.converter":"json","value.converter":"json","cassandra.schema.files":"%s"}}\n' \
  "$T/t.db" "$T/schema.cql" > "$T/s.json"
"$CLI" run "$T/s.json" --input "$T/events.jsonl" 2>"$T/err"
rc=$?
check "cdc-sink: exit 0 (got $rc)" "[[ $rc -eq 0 ]] || { tail -5 '$T/err'; false; }"
got=$(sqlite3 "$T/t.db" "SELECT badges FROM ks_users WHERE id = 19")
check "a set column the schema file does not know is a set (its cassandra.type): {1, 8}, got $got" "[[ '$got' == '[1,8]' ]]"
# no schema file at all: the events' types alone
printf '{"name":"s2","config":{"connector.class":"cdc-sink","topics":"ks.users","sqlite.path":"%s","key.converter":"json","value.converter":"json"}}\n' \
  "$T/t2.db" > "$T/s2.json"
"$CLI" run "$T/s2.json" --input "$T/events.jsonl" 2>"$T/err2"
got=$(sqlite3 "$T/t2.db" "SELECT badges FROM ks_users WHERE id = 19")
check "without cassandra.schema.files too: {1, 8}, got $got" "[[ '$got' == '[1,8]' ]]"
exit $failed
