#!/usr/bin/env python3
"""check_avro.py - an outside reader (and writer) for cdcflow's Avro converter.

Reader mode (default): consume a topic from the start with confluent-kafka's Consumer,
deserialize keys and values with confluent_kafka.schema_registry.avro.AvroDeserializer
(fastavro underneath, schemas fetched from the registry by the id in each message), and
compare field for field with the expected records in a JSON file.

  check_avro.py --bootstrap HOST:PORT --registry URL --topic T --expected FILE [--timeout S]

Writer mode: produce the records of a JSON file with AvroSerializer under a given Avro schema,
so that cdcflow's converter can be checked on bytes it did not write.

  check_avro.py --produce --bootstrap ... --registry ... --topic T --schema FILE --records FILE

Expected file: a JSON list of {"key": K, "value": V}, in partition order. Plain JSON values
compare as they are; tagged objects stand for types JSON lacks:
  {"$decimal": "12.34"}        decimal.Decimal (fastavro's decimal logical type)
  {"$bytes": "<base64>"}       bytes
  {"$date": "2024-02-29"}      datetime.date (date logical type)
  {"$time_ms": 3723004}        datetime.time (time-millis), compared in milliseconds of the day
  {"$timestamp_ms": 17000..}   datetime.datetime, UTC (timestamp-millis)
  {"$float32": 12.2}           a float that was written as Avro float (compared after rounding
                               the expectation to 32 bits)
Exit status 0 when every record matches, 1 with a report otherwise, 2 on usage errors.
"""
import argparse
import base64
import datetime
import decimal
import json
import struct
import sys
import time

from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def expect_equal(path, exp, got, problems):
    """Compare an expectation (JSON with tags) with a deserialized Python value."""
    if isinstance(exp, dict) and len(exp) == 1 and next(iter(exp)).startswith("$"):
        tag, arg = next(iter(exp.items()))
        if tag == "$decimal":
            ok = isinstance(got, decimal.Decimal) and got == decimal.Decimal(arg) and \
                got.as_tuple().exponent == decimal.Decimal(arg).as_tuple().exponent
        elif tag == "$bytes":
            ok = isinstance(got, (bytes, bytearray)) and bytes(got) == base64.b64decode(arg)
        elif tag == "$date":
            ok = isinstance(got, datetime.date) and got.isoformat() == arg
        elif tag == "$time_ms":
            ok = isinstance(got, datetime.time) and \
                ((got.hour * 60 + got.minute) * 60 + got.second) * 1000 + got.microsecond // 1000 == arg
        elif tag == "$timestamp_ms":
            ok = isinstance(got, datetime.datetime) and got.tzinfo is not None and \
                round((got - EPOCH).total_seconds() * 1000) == arg
        elif tag == "$float32":
            ok = isinstance(got, float) and got == struct.unpack("f", struct.pack("f", arg))[0]
        else:
            problems.append(f"{path}: unknown tag {tag}")
            return
        if not ok:
            problems.append(f"{path}: expected {tag} {arg!r}, got {got!r}")
        return
    if isinstance(exp, dict):
        if not isinstance(got, dict):
            problems.append(f"{path}: expected an object, got {got!r}")
            return
        if set(exp) != set(got):
            problems.append(f"{path}: fields differ: expected {sorted(exp)}, got {sorted(got)}")
        for k in exp:
            if k in got:
                expect_equal(f"{path}.{k}", exp[k], got[k], problems)
        return
    if isinstance(exp, list):
        if not isinstance(got, list) or len(got) != len(exp):
            problems.append(f"{path}: expected a list of {len(exp)}, got {got!r}")
            return
        for i, (e, g) in enumerate(zip(exp, got)):
            expect_equal(f"{path}[{i}]", e, g, problems)
        return
    if isinstance(exp, bool) or exp is None:
        if got is not exp:
            problems.append(f"{path}: expected {exp!r}, got {got!r}")
        return
    if type(exp) is not type(got) or exp != got:
        problems.append(f"{path}: expected {exp!r} ({type(exp).__name__}), got {got!r} ({type(got).__name__})")


def read(args):
    with open(args.expected) as f:
        expected = json.load(f)
    sr = SchemaRegistryClient({"url": args.registry, "timeout": 10})  # no answer: asked again (max.retries)
    de = AvroDeserializer(schema_registry_client=sr)
    c = Consumer({"bootstrap.servers": args.bootstrap, "group.id": f"check-avro-{time.time()}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([args.topic])
    got = []
    deadline = time.time() + args.timeout
    try:
        while len(got) < len(expected) and time.time() < deadline:
            m = c.poll(1.0)
            if m is None:
                continue
            if m.error():
                print(f"consumer error: {m.error()}", file=sys.stderr)
                continue
            k = de(m.key(), SerializationContext(m.topic(), MessageField.KEY)) if m.key() is not None else None
            v = de(m.value(), SerializationContext(m.topic(), MessageField.VALUE)) if m.value() is not None else None
            got.append({"key": k, "value": v, "offset": m.offset()})
    finally:
        c.close()
    problems = []
    if len(got) != len(expected):
        problems.append(f"expected {len(expected)} records, consumed {len(got)} within {args.timeout}s")
    for i, (e, g) in enumerate(zip(expected, got)):
        expect_equal(f"record[{i}].key", e["key"], g["key"], problems)
        expect_equal(f"record[{i}].value", e["value"], g["value"], problems)
    if problems:
        print("check_avro: MISMATCH", file=sys.stderr)
        for p in problems:
            print("  " + p, file=sys.stderr)
        return 1
    print(f"check_avro: {len(got)} records match (topic {args.topic})")
    return 0


def untag(v):
    """Expectation-style tags -> Python values for the serializer."""
    if isinstance(v, dict) and len(v) == 1 and next(iter(v)).startswith("$"):
        tag, arg = next(iter(v.items()))
        return {
            "$decimal": lambda a: decimal.Decimal(a),
            "$bytes": lambda a: base64.b64decode(a),
            "$date": lambda a: datetime.date.fromisoformat(a),
            "$timestamp_ms": lambda a: EPOCH + datetime.timedelta(milliseconds=a),
            "$time_ms": lambda a: (datetime.datetime.min + datetime.timedelta(milliseconds=a)).time(),
            "$float32": lambda a: a,
        }[tag](arg)
    if isinstance(v, dict):
        return {k: untag(x) for k, x in v.items()}
    if isinstance(v, list):
        return [untag(x) for x in v]
    return v


def produce(args):
    with open(args.schema) as f:
        schema = f.read()
    with open(args.records) as f:
        records = json.load(f)
    sr = SchemaRegistryClient({"url": args.registry, "timeout": 10})  # no answer: asked again (max.retries)
    ser = AvroSerializer(schema_registry_client=sr, schema_str=schema)
    p = Producer({"bootstrap.servers": args.bootstrap})
    for r in records:
        v = ser(untag(r), SerializationContext(args.topic, MessageField.VALUE))
        p.produce(args.topic, value=v)
    left = p.flush(30)
    if left:
        print(f"check_avro: {left} records not delivered", file=sys.stderr)
        return 1
    print(f"check_avro: produced {len(records)} records to {args.topic}")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--registry", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--expected")
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--produce", action="store_true")
    ap.add_argument("--schema")
    ap.add_argument("--records")
    args = ap.parse_args()
    if args.produce:
        if not args.schema or not args.records:
            ap.error("--produce needs --schema and --records")
        return produce(args)
    if not args.expected:
        ap.error("--expected is required")
    return read(args)


if __name__ == "__main__":
    sys.exit(main())
