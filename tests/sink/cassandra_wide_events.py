#!/usr/bin/env python3
"""cassandra_wide_events.py - a wide partition for test_cassandra_sink.sh,
made from a real INSERT event of cdcks.events (p int, seq int, sub text;
v8-lz4-rollover) with new values:

  cassandra_wide_events.py EVENTS.jsonl N > OUT.jsonl

Partition p = 7000: N rows INSERTed (seq 0..N-1, sub 's'), in shuffled
order, then DELETE FROM events WHERE p = 7000 AND seq >= N/2 (written at a
timestamp newer than every insert) and one insert (seq N, newer still).
Cassandra then returns N/2 + 1 rows: seq 0..N/2-1 and N. Printed on stderr:
that count.
"""
import json
import random
import sys

n = int(sys.argv[2])
tmpl = None
for line in open(sys.argv[1]):
    m = json.loads(line)
    env = json.loads(m["payload"])
    if env["payload"]["sourceTable"] == "events" and env["payload"]["operationType"] == "INSERT":
        tmpl = (m, env)
        break
m, env = tmpl
key = json.loads(m["key"])
key["payload"] = {"p": 7000}
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
    out.append(r)


base = 1900000000000000
for i in range(n):
    event("INSERT", base + i, ["p", "seq", "sub", "v"], {"p": 7000, "seq": i, "sub": "s", "v": "row %d" % i})
random.Random(5).shuffle(out)
event("DELETE_RANGE", base + n, ["p"], {"p": 7000},
      [{"field": "seq", "rangePredicateType": "GTE", "value": {"seq": n // 2, "sub": None}}])
event("INSERT", base + n + 1, ["p", "seq", "sub", "v"], {"p": 7000, "seq": n, "sub": "s", "v": "after"})
for i, r in enumerate(out):
    r["offset"] = i
    print(json.dumps(r))
print(n // 2 + 1, file=sys.stderr)
