#!/usr/bin/env python3
"""seed_records.py - Debezium PostgreSQL change events for the seed's example
configuration (topic cdc_postgres_public_customers, ordered by version1), as
a kcat -J record file, and the source table they leave.

public.customers(id int4 PK, email text NOT NULL, version1 int8 NOT NULL):
raw envelopes (JsonConverter with schemas) with creates, updates, deletes
followed by their tombstones, and re-inserts; the seed's
ExtractNewRecordState transform unwraps them.

Usage: seed_records.py RECORDS_FILE WANT_FILE [TOPIC]
WANT_FILE gets one line per source row: id|email|version1, sorted by id.
"""
import json
import sys

row = {"type": "struct", "optional": True, "name": "cdc_postgres.public.customers.Value", "fields": [
    {"type": "int32", "optional": False, "field": "id"}, {"type": "string", "optional": False, "field": "email"},
    {"type": "int64", "optional": False, "field": "version1"}]}
env = {"type": "struct", "optional": False, "name": "cdc_postgres.public.customers.Envelope", "fields": [
    dict(row, field="before"), dict(row, field="after"), {"type": "string", "optional": False, "field": "op"},
    {"type": "int64", "optional": True, "field": "ts_ms"}]}
ks = {"type": "struct", "optional": False, "name": "cdc_postgres.public.customers.Key",
      "fields": [{"type": "int32", "optional": False, "field": "id"}]}


def main():
    records, want = sys.argv[1], sys.argv[2]
    topic = sys.argv[3] if len(sys.argv) > 3 else "cdc_postgres_public_customers"
    out, model, ver = [], {}, {}

    def emit(i, before, after, op):
        k = json.dumps({"schema": ks, "payload": {"id": i}})
        v = json.dumps({"schema": env, "payload": {"before": before, "after": after, "op": op, "ts_ms": 1}})
        out.append({"topic": topic, "partition": 0, "offset": len(out), "broker": -1, "key": k, "payload": v})
        if op == "d":  # the tombstone Debezium sends after a delete
            out.append({"topic": topic, "partition": 0, "offset": len(out), "broker": -1, "key": k, "payload": None})

    for step in range(60):
        i = step % 7
        cur = model.get(i)
        ver[i] = ver.get(i, 0) + 1
        if cur is not None and step % 5 == 0:
            emit(i, cur, None, "d")
            del model[i]
            continue
        new = {"id": i, "email": "u%d.%d@x" % (i, step), "version1": ver[i]}
        emit(i, cur, new, "u" if cur else "c")
        model[i] = new
    with open(records, "w") as f:
        for r in out:
            f.write(json.dumps(r) + "\n")
    with open(want, "w") as f:
        for i in sorted(model):
            f.write("%d|%s|%d\n" % (i, model[i]["email"], model[i]["version1"]))


if __name__ == "__main__":
    main()
