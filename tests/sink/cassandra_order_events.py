#!/usr/bin/env python3
"""cassandra_order_events.py - change events for test_cassandra_sink.sh's
ordering case, made from a real event of the v8-lz4-rollover fixture (its
envelope, key and schema as the sidecar wrote them) with new values:

  cassandra_order_events.py EVENTS.jsonl > OUT.jsonl

In partition (id 90, bucket 'order') of cdcks.all_types, three rows whose
ck1 timeuuids sort one way as text and another by time, then
DELETE FROM all_types WHERE id = 90 AND bucket = 'order' AND ck1 < B.
Cassandra orders a timeuuid column by the UUID's timestamp (TimeUUIDType,
CQL documentation "timeuuid ... sorted by time"), so the deletion covers A
(time 0x0000000000000001... older than B) and not C (newer), although as
text A sorts after B. Printed last: the ck1 values expected to remain.
"""
import json
import sys

A = "ffffffff-ffff-1000-8000-000000000001"  # time_hi 0: the oldest, the greatest as text
B = "00000000-0000-1001-8000-000000000002"  # time_hi 1
C = "00000000-0000-1002-8000-000000000003"  # time_hi 2: the newest
tmpl = None
for line in open(sys.argv[1]):
    m = json.loads(line)
    env = json.loads(m["payload"])
    if env["payload"]["sourceTable"] == "all_types":
        tmpl = (m, env)
        break
m, env = tmpl
key = json.loads(m["key"])
key["payload"] = {"id": 90, "bucket": "order"}
out = []


def event(op, ts, upd, payload, rng=None):
    e = json.loads(json.dumps(env))
    p = e["payload"]
    p.update({"operationType": op, "timestampMicros": ts, "updateFields": upd, "elementFields": None,
              "range": rng, "ttl": None})
    p["payload"] = {k: None for k in p["payload"]}
    p["payload"].update(payload)
    r = dict(m)
    r["key"] = json.dumps(key)
    r["payload"] = json.dumps(e)
    r["offset"] = len(out)
    out.append(json.dumps(r))


for i, u in enumerate([A, B, C]):
    event("INSERT", 1800000000000000 + i, ["id", "bucket", "ck1", "ck2", "c_int"],
          {"id": 90, "bucket": "order", "ck1": u, "ck2": "k", "c_int": i})
event("DELETE_RANGE", 1800000000000010, ["id", "bucket"], {"id": 90, "bucket": "order"},
      [{"field": "ck1", "rangePredicateType": "LT", "value": {"ck1": B, "ck2": None}}])
print("\n".join(out))
print(json.dumps({"remain": sorted([B, C])}), file=sys.stderr)
