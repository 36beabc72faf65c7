#!/usr/bin/env python3
"""emulator_records.py - Debezium PostgreSQL change events for the BigQuery target's run
against goccy/bigquery-emulator (test_it_bq_emulator_sink.sh), in two record files of the
kcat -J form `cdcflow run --input` reads, and the rows the emulator must then hold.

The emulator applies no CDC rules: it appends every row the target sends. So that what the
target sends is known exactly, each key has at most one change in each file (the sink's
compaction by key then has nothing to merge, however the records fall into batches):

  run1.jsonl  creates of ids 0..N-1
  run2.jsonl  updates of ids 0..N/3-1, deletes of ids N/3..N/2-1 (each followed by the
              tombstone Debezium sends, which the seed's configuration skips: it orders by
              version1, and a tombstone has none)

public.items(id int4 PK, name text, qty int8, score float8, active bool, born date,
seen timestamp(3), blob bytea, price numeric(12,2), version1 int8 NOT NULL), JsonConverter
with schemas: Connect's Date, Timestamp and Decimal logical types.

WANT_FILE gets one JSON object per row that must land, column -> value as the source has
it (null for NULL; born as "YYYY-MM-DD", seen as epoch milliseconds, blob base64, price a
decimal string), in the order sent; a DELETE lands as the key with every other column NULL
(the target sends only the key of a deleted row).

Usage: emulator_records.py DIR TOPIC N     (writes DIR/run1.jsonl, DIR/run2.jsonl, DIR/want.jsonl)
"""
import base64
import datetime
import json
import sys

COLS = ["id", "name", "qty", "score", "active", "born", "seen", "blob", "price", "version1"]


def opt(t, **kw):
    return dict({"type": t, "optional": True}, **kw)


ROW_FIELDS = [
    {"type": "int32", "optional": False, "field": "id"},
    dict(opt("string"), field="name"),
    dict(opt("int64"), field="qty"),
    dict(opt("double"), field="score"),
    dict(opt("boolean"), field="active"),
    dict(opt("int32", name="org.apache.kafka.connect.data.Date", version=1), field="born"),
    dict(opt("int64", name="org.apache.kafka.connect.data.Timestamp", version=1), field="seen"),
    dict(opt("bytes"), field="blob"),
    dict(opt("bytes", name="org.apache.kafka.connect.data.Decimal", version=1, parameters={"scale": "2"}),
         field="price"),
    {"type": "int64", "optional": False, "field": "version1"},
]
ROW = {"type": "struct", "optional": True, "name": "cdc_postgres.public.items.Value", "fields": ROW_FIELDS}
ENV = {"type": "struct", "optional": False, "name": "cdc_postgres.public.items.Envelope", "fields": [
    dict(ROW, field="before"), dict(ROW, field="after"), {"type": "string", "optional": False, "field": "op"},
    {"type": "int64", "optional": True, "field": "ts_ms"}]}
KEY = {"type": "struct", "optional": False, "name": "cdc_postgres.public.items.Key",
       "fields": [{"type": "int32", "optional": False, "field": "id"}]}
EPOCH = datetime.date(1970, 1, 1)


def decimal_bytes(cents):
    """Connect's Decimal: the unscaled value, big-endian two's complement, base64 in JSON."""
    n = max(1, (cents.bit_length() + 8) // 8)
    return base64.b64encode(cents.to_bytes(n, "big", signed=True)).decode()


def row(i, phase):
    """The source row of id i after phase 1 (create) or 2 (update): (wire payload, want)."""
    k = i * 7 + phase
    born = EPOCH + datetime.timedelta(days=(k * 37) % 40000 - 3000)  # 1961..2071
    seen_ms = 1700000000000 + k * 86400123
    blob = bytes((k + j) % 256 for j in range(i % 5))
    cents = (k * 1234567) % 10 ** 11 - 4 * 10 ** 10
    wire = {"id": i, "name": None if i % 11 == 0 else "n%d.%d ü" % (i, phase), "qty": k * 1000003 - 5 * 10 ** 6,
            "score": None if i % 13 == 0 else k / 8.0 - 100, "active": (k % 3 == 0), "born": (born - EPOCH).days,
            "seen": seen_ms, "blob": base64.b64encode(blob).decode(), "price": decimal_bytes(cents),
            "version1": phase}
    sign = "-" if cents < 0 else ""
    want = dict(wire, born=born.isoformat(), price="%s%d.%02d" % (sign, abs(cents) // 100, abs(cents) % 100))
    return wire, want


def main():
    out_dir, topic, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    want = []
    files = {1: [], 2: []}

    def emit(phase, i, before, after, op):
        recs = files[phase]
        base = len(files[1]) if phase == 2 else 0  # one partition: run 2 goes on where run 1 stopped
        k = json.dumps({"schema": KEY, "payload": {"id": i}})
        v = json.dumps({"schema": ENV, "payload": {"before": before, "after": after, "op": op, "ts_ms": 1}})
        for value in (v, None) if op == "d" else (v,):
            recs.append({"topic": topic, "partition": 0, "offset": base + len(recs), "broker": -1, "key": k,
                         "payload": value})

    for i in range(n):
        wire, w = row(i, 1)
        emit(1, i, None, wire, "c")
        want.append(w)
    for i in range(n // 2):
        before, _ = row(i, 1)
        if i < n // 3:
            wire, w = row(i, 2)
            emit(2, i, before, wire, "u")
            want.append(w)
        else:
            # rewrite mode keeps the before image; version1 orders it after the create
            emit(2, i, dict(before, version1=2), None, "d")
            want.append(dict({c: None for c in COLS}, id=i))
    for phase, recs in files.items():
        with open("%s/run%d.jsonl" % (out_dir, phase), "w") as f:
            for r in recs:
                f.write(json.dumps(r) + "\n")
    with open("%s/want.jsonl" % out_dir, "w") as f:
        for w in want:
            f.write(json.dumps(w, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
