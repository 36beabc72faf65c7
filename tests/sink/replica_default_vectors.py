"""Deletes of a table with REPLICA IDENTITY DEFAULT, as a kcat -J record file.

public.items(id int4 PK, version1 int8 NOT NULL, name text NOT NULL) after
ExtractNewRecordState (delete.handling.mode=rewrite), JsonConverter with schemas.
With REPLICA IDENTITY DEFAULT PostgreSQL logs only the key of a deleted row, and
Debezium fills the before image's other required fields with their type's
default (version1 0, name ""), as shared/specs/bigquery-cdc.md §3 V3 shows for
email and as measured in issue 18 (version1: 0, name: "").

  replica_default_vectors.py 1|2|3   the file of run 1, 2 or 3 (offsets go on)
run 1: id 1 inserted, updated, deleted (one batch); ids 2, 3 inserted
run 2: ids 2 and 3 deleted (their last versions are in the table), id 4 inserted
run 3: id 9, never seen, deleted
"""
import json, sys
KS = {"type": "struct", "fields": [{"type": "int32", "optional": False, "field": "id"}], "optional": False,
      "name": "dbserver1.public.items.Key"}
VS = {"type": "struct", "fields": [{"type": "int32", "optional": False, "field": "id"},
                                   {"type": "int64", "optional": False, "field": "version1"},
                                   {"type": "string", "optional": False, "field": "name"},
                                   {"type": "string", "optional": True, "field": "__deleted"}],
      "optional": False, "name": "dbserver1.public.items.Value"}
T = "dbserver1.public.items"
def row(i, v, n): return {"id": i, "version1": v, "name": n, "__deleted": "false"}
def gone(i): return {"id": i, "version1": 0, "name": "", "__deleted": "true"}  # Debezium's defaults
runs = {
    "1": [(0, 1, row(1, 1, "a")), (1, 1, row(1, 2, "b")), (2, 1, gone(1)), (3, 2, row(2, 5, "c")),
          (4, 3, row(3, 1, "d"))],
    "2": [(5, 2, gone(2)), (6, 3, gone(3)), (7, 4, row(4, 1, "e"))],
    "3": [(8, 9, gone(9))],
}
for off, i, p in runs[sys.argv[1]]:
    k = json.dumps({"schema": KS, "payload": {"id": i}}, separators=(",", ":"))
    v = json.dumps({"schema": VS, "payload": p}, separators=(",", ":"))
    print(json.dumps({"topic": T, "partition": 0, "offset": off, "broker": -1, "key": k, "payload": v},
                     separators=(",", ":")))
