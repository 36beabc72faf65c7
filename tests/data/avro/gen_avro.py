#!/usr/bin/env python3
"""Writes the Avro object container files the avro extractor is tested on,
with a real Avro implementation (fastavro), and the values fastavro wrote as
Kafka's JsonConverter prints them (schemas.enable=false, decimal.format=NUMERIC):
that is the oracle, not our own output.

    python3 -m venv /tmp/avenv && /tmp/avenv/bin/pip install fastavro cramjam zstandard
    /tmp/avenv/bin/python tests/data/avro/gen_avro.py tests/data/avro

Files: types-<codec>.avro (the same 40 records, several blocks each, codecs
null, deflate, snappy, zstandard), types.expected.jsonl, strings-null.avro (a
top-level "string" schema), empty-null.avro (a header and no block), and
fastavro's own read-back per block (types-<codec>.blocks.json: block start
offsets and datum counts, for the resume tests).
"""
import base64, datetime, decimal, io, json, os, sys
import fastavro
from fastavro.read import reader as avro_reader

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))

ADDRESS = {"type": "record", "name": "Address", "fields": [
    {"name": "street", "type": "string"}, {"name": "zip", "type": ["null", "int"]}]}
SCHEMA = {"type": "record", "name": "Order", "namespace": "cdcflow.test", "fields": [
    {"name": "id", "type": "long"},
    {"name": "count", "type": "int"},
    {"name": "name", "type": "string"},
    {"name": "active", "type": "boolean"},
    {"name": "score", "type": "float"},
    {"name": "ratio", "type": "double"},
    {"name": "data", "type": "bytes"},
    {"name": "note", "type": ["null", "string"], "default": None},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "attrs", "type": {"type": "map", "values": "long"}},
    {"name": "address", "type": ADDRESS},
    {"name": "lines", "type": {"type": "array", "items": {"type": "record", "name": "Line", "fields": [
        {"name": "sku", "type": "string"}, {"name": "qty", "type": "int"},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}}]}}},
    {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "SHIPPED"]}},
    {"name": "hash", "type": {"type": "fixed", "name": "Hash4", "size": 4}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "tod", "type": {"type": "int", "logicalType": "time-millis"}},
    {"name": "choice", "type": ["null", "int", "string"]},
    {"name": "maybe_addr", "type": ["null", "Address"]},
]}

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def record(i):
    return {
        "id": 1000000000000 + i * 7919 - (5 if i % 3 else 0),
        "count": -i if i % 2 else i * 1000,
        "name": "order %d \u00e9\u4e2d\U0001F600" % i if i % 5 == 0 else "order %d" % i,
        "active": i % 2 == 0,
        "score": i * 0.25,
        "ratio": i / 8.0 + 0.1,
        "data": bytes((i * 37 + k) % 256 for k in range(i % 7)),
        "note": None if i % 3 == 0 else "note %d" % i,
        "tags": ["t%d" % k for k in range(i % 4)],
        "attrs": {"k%d" % k: k * i for k in range(i % 3)},
        "address": {"street": "%d Main St" % i, "zip": None if i % 4 == 0 else 8000 + i},
        "lines": [{"sku": "S-%d-%d" % (i, k), "qty": k + 1,
                   "price": decimal.Decimal("%d.%02d" % (i * 3 + k, (i * 7 + k) % 100)) * (-1 if k == 2 else 1)}
                  for k in range(i % 3 + (1 if i % 5 else 0))],
        "status": ["NEW", "PAID", "SHIPPED"][i % 3],
        "hash": bytes([(i * 13 + k) % 256 for k in range(4)]),
        "day": datetime.date(2024, 2, 29) + datetime.timedelta(days=i * 11 - 200),
        "at": EPOCH + datetime.timedelta(milliseconds=1732900000123 + i * 86400321),
        "tod": datetime.time(i % 24, (i * 7) % 60, (i * 13) % 60, ((i * 17) % 1000) * 1000),
        "choice": [None, i, "c%d" % i][i % 3],
        "maybe_addr": None if i % 2 else {"street": "alt %d" % i, "zip": i},
    }


def b64(b):
    return base64.b64encode(b).decode()


def num(d):
    # JsonConverter decimal.format=NUMERIC writes the BigDecimal as a JSON number
    return float(d)


def address_json(a):
    return None if a is None else {"street": a["street"], "zip": a["zip"]}


def expected(r):
    """The record as Kafka's JsonConverter (schemas off) prints its Connect value
    under Confluent's AvroData mapping: bytes/fixed base64, enum string, date days,
    timestamp/time millis, decimal a number, general union a Union struct."""
    ch = r["choice"]
    return {
        "id": r["id"], "count": r["count"], "name": r["name"], "active": r["active"],
        "score": r["score"], "ratio": r["ratio"], "data": b64(r["data"]), "note": r["note"],
        "tags": r["tags"], "attrs": r["attrs"], "address": address_json(r["address"]),
        "lines": [{"sku": l["sku"], "qty": l["qty"], "price": num(l["price"])} for l in r["lines"]],
        "status": r["status"], "hash": b64(r["hash"]),
        "day": (r["day"] - datetime.date(1970, 1, 1)).days,
        "at": int((r["at"] - EPOCH) / datetime.timedelta(milliseconds=1)),
        "tod": ((r["tod"].hour * 60 + r["tod"].minute) * 60 + r["tod"].second) * 1000 + r["tod"].microsecond // 1000,
        "choice": None if ch is None else {"int": ch if isinstance(ch, int) else None,
                                           "string": ch if isinstance(ch, str) else None},
        "maybe_addr": address_json(r["maybe_addr"]),
    }


def blocks(path):
    """Block start offsets and datum counts, as fastavro's block reader sees them."""
    out = []
    with open(path, "rb") as f:
        for b in fastavro.block_reader(f):
            out.append({"count": b.num_records, "offset": b.offset})
    return out


def main():
    recs = [record(i) for i in range(40)]
    parsed = fastavro.parse_schema(SCHEMA)
    for codec in ("null", "deflate", "snappy", "zstandard"):
        path = os.path.join(OUT, "types-%s.avro" % codec)
        with open(path, "wb") as f:
            fastavro.writer(f, parsed, recs, codec=codec, sync_interval=700, sync_marker=bytes(range(16)) if codec == "null" else None)
        # read back with fastavro: what was written is what we expect
        with open(path, "rb") as f:
            back = list(avro_reader(f))
        assert back == recs, codec
        with open(os.path.join(OUT, "types-%s.blocks.json" % codec), "w") as f:
            json.dump(blocks(path), f)
    with open(os.path.join(OUT, "types.expected.jsonl"), "w") as f:
        for r in recs:
            f.write(json.dumps(expected(r), ensure_ascii=False, sort_keys=True) + "\n")
    with open(os.path.join(OUT, "strings-null.avro"), "wb") as f:
        fastavro.writer(f, fastavro.parse_schema("string"), ["a", "", "z" * 300, "\u00fcber"], codec="null")
    with open(os.path.join(OUT, "empty-null.avro"), "wb") as f:
        fastavro.writer(f, parsed, [], codec="null")


if __name__ == "__main__":
    main()
