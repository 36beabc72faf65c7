#!/usr/bin/env python3
"""avro_events.py - read the sidecar's change events from Kafka as an outside
consumer does: confluent-kafka's Consumer and AvroDeserializer (fastavro),
writer schemas fetched from the Schema Registry by the id in each message
(Confluent wire format). Writes every event, in the JsonConverter's
{"schema", "payload"} form, as the "payload" of a record-file line, so that
events_replay.py can apply them and compare with Cassandra's rows.

  avro_events.py --bootstrap HOST:PORT --registry URL --topics T1,T2 --count N --out FILE [--timeout S]

Exit 0 when N messages were read (and every key and value decoded), 1 otherwise.
"""
import argparse
import base64
import datetime
import decimal
import json
import sys
import time

from confluent_kafka import Consumer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
decimal.getcontext().prec = 1000  # varints and decimals are exact, whatever their digits


def full_name(name, ns):
    return name if "." in name or not ns else ns + "." + name


def connect_schema(a, names, ns=""):
    """An Avro writer schema (parsed JSON) as the Connect JSON schema events_replay reads:
    fields/field/parameters, items, keys/values. ns: the enclosing namespace (Avro names
    without a dot are relative to it)."""
    if isinstance(a, list):  # ["null", X]: an optional X
        return connect_schema(next(x for x in a if x != "null"), names, ns)
    if isinstance(a, str):
        return names.get(full_name(a, ns), {"type": a})
    t = a["type"]
    out = {"type": t, "parameters": dict(a.get("connect.parameters", {}))}
    if a.get("logicalType"):
        out["logical"] = a["logicalType"]
        if "scale" in a:
            out["parameters"]["scale"] = str(a["scale"])
    if t == "record":
        fn = full_name(a["name"], a.get("namespace", ns))
        ns = fn.rsplit(".", 1)[0] if "." in fn else ""
        out["name"] = fn
        names[fn] = out
        out["fields"] = []
        for f in a["fields"]:
            fs = dict(connect_schema(f["type"], names, ns))
            fs["field"] = f["name"]
            out["fields"].append(fs)
    elif t == "array":
        out["items"] = connect_schema(a["items"], names, ns)
        it = a["items"]
        if isinstance(it, dict) and it.get("type") == "record" and it.get("name") == "MapEntry":
            out = {"type": "map", "entries": True, "keys": out["items"]["fields"][0], "values": out["items"]["fields"][1]}
    elif t == "map":
        out["keys"] = {"type": "string"}
        out["values"] = connect_schema(a["values"], names, ns)
    elif isinstance(t, (dict, list)):
        return connect_schema(t, names, ns)
    return out


def to_connect_json(v, s):
    """A fastavro-decoded value as the JsonConverter writes it."""
    if v is None:
        return None
    if s.get("type") == "record":
        return {f["field"]: to_connect_json(v.get(f["field"]), f) for f in s["fields"]}
    if s.get("type") == "array":
        return [to_connect_json(x, s["items"]) for x in v]
    if s.get("type") == "map":
        if s.get("entries"):
            return [[to_connect_json(e["key"], s["keys"]), to_connect_json(e["value"], s["values"])] for e in v]
        return {k: to_connect_json(x, s["values"]) for k, x in v.items()}
    if isinstance(v, decimal.Decimal):
        scale = int(s["parameters"].get("scale", "0"))
        unscaled = int(v.scaleb(scale))
        n = (unscaled.bit_length() + 8) // 8 or 1
        return base64.b64encode(unscaled.to_bytes(n, "big", signed=True)).decode()
    if isinstance(v, datetime.datetime):
        return int((v - EPOCH).total_seconds() * 1000)
    if isinstance(v, datetime.date):
        return (v - EPOCH.date()).days
    if isinstance(v, bytes):
        return base64.b64encode(v).decode()
    return v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--registry", required=True)
    ap.add_argument("--topics", required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--timeout", type=float, default=60)
    a = ap.parse_args()
    sr = SchemaRegistryClient({"url": a.registry, "timeout": 10})
    deser = AvroDeserializer(sr)
    c = Consumer({"bootstrap.servers": a.bootstrap, "group.id": "avro-events-%d" % time.time(),
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe(a.topics.split(","))
    schemas = {}
    n = 0
    bad = 0
    deadline = time.time() + a.timeout
    with open(a.out, "w") as out:
        while n < a.count and time.time() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                print("consumer error:", m.error(), file=sys.stderr)
                continue
            raw = m.value()
            if not raw or raw[0] != 0:
                print("message at %s-%d@%d is not in the Confluent wire format" % (m.topic(), m.partition(),
                                                                                  m.offset()), file=sys.stderr)
                bad += 1
                continue
            sid = int.from_bytes(raw[1:5], "big")
            if sid not in schemas:
                schemas[sid] = connect_schema(json.loads(sr.get_schema(sid).schema_str), {})
            key = deser(m.key(), SerializationContext(m.topic(), MessageField.KEY))
            val = deser(raw, SerializationContext(m.topic(), MessageField.VALUE))
            if key is None or val is None:
                bad += 1
                continue
            env = {"schema": schemas[sid], "payload": to_connect_json(val, schemas[sid])}
            out.write(json.dumps({"topic": m.topic(), "payload": json.dumps(env)}) + "\n")
            n += 1
            if n % 1000 == 0:  # where it is when a timeout kills it (stdout is a buffered file)
                print("%d messages read" % n, file=sys.stderr, flush=True)
    print("%d of %d messages read in %.0f s" % (n, a.count, time.time() + a.timeout - deadline), file=sys.stderr,
          flush=True)
    c.close()
    print("%d messages read, %d not decodable, %d schema(s)" % (n, bad, len(schemas)))
    sys.exit(0 if n >= a.count and bad == 0 else 1)


if __name__ == "__main__":
    main()
