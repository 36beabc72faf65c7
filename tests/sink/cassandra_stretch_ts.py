#!/usr/bin/env python3
"""cassandra_stretch_ts.py IN OUT FACTOR - the record file of Cassandra change events with every
timestampMicros stretched FACTOR times around the first one. The order of all timestamps (and
ties) is kept, so Cassandra's reconciliation, hence its SELECT, is unchanged; only the distances
grow (tests of cassandra.gc.grace.seconds, whose unit is seconds)."""
import json
import sys

src, dst, factor = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = [json.loads(line) for line in open(src) if line.strip()]
t0 = min(json.loads(r["payload"])["payload"]["timestampMicros"] for r in lines)
with open(dst, "w") as out:
    for r in lines:
        env = json.loads(r["payload"])
        env["payload"]["timestampMicros"] = t0 + (env["payload"]["timestampMicros"] - t0) * factor
        r["payload"] = json.dumps(env)
        out.write(json.dumps(r) + "\n")
