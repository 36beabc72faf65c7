#!/usr/bin/env python3
"""ranges_check.py - three sidecars, one per node's primary token range,
checked against Cassandra's tokens: test_sidecar_rf3.sh (the rf3 fixture)
and test_cluster_sidecar_ring.sh (the live cluster).

  ranges_check.py TOKENS.jsonl RANGE0 RANGE1 RANGE2 RECORDS0 RECORDS1 RECORDS2 [ALL]

TOKENS.jsonl: the partitions' tokens as Cassandra computed them (murmur3.py
must agree with every one); RANGEi: "(a,b]" (wrapping when a >= b);
RECORDSi: the record file of the sidecar of range i (JsonConverter with
schemas; every key of the tables is one int column). Each sidecar must
publish only partitions whose token is in its range, at least one, and no
change may be published twice (by two sidecars or by one). ALL: the record
file of one run over the whole ring; the three together must be its
changes. Prints a line a range ("range I (A, B): N events") and what is
wrong; exit 0 when nothing is.
"""
import json
import struct
import sys

from murmur3 import token


def key_token(key):
    return token(struct.pack(">i", list(key.values())[0]))


def inside(t, r):
    a, b = r
    return a < t <= b if a < b else (t > a or t <= b)


def ident(line):  # the change: table, key, write time, what it wrote
    rec = json.loads(line)
    v = json.loads(rec["payload"])["payload"]
    return (rec["topic"], rec["key"], v["timestampMicros"], json.dumps(v, sort_keys=True))


def main(argv):
    if len(argv) not in (8, 9):
        sys.exit(__doc__)
    known = [json.loads(line) for line in open(argv[1])]
    wrong = [d for d in known if key_token(d["key"]) != d["token"]]
    print(f"murmur3.py agrees with Cassandra's token() on {len(known) - len(wrong)} of {len(known)} keys")
    ranges = [tuple(int(x) for x in r.strip("(]").split(",")) for r in argv[2:5]]
    bad = len(wrong)
    seen = {}
    for i, f in enumerate(argv[5:8]):
        n = 0
        for line in open(f):
            rec = json.loads(line)
            key = json.loads(rec["key"])["payload"]
            t = key_token(key)
            n += 1
            if not inside(t, ranges[i]):
                print("range", ranges[i], "has", rec["topic"], key, "token", t)
                bad += 1
            c = ident(line)
            if c in seen:
                print("published twice: by", seen[c], "and", i, c[:3])
                bad += 1
            seen[c] = i
        print(f"range {i} {ranges[i]}: {n} events")
        if n == 0:
            print("range", i, "published nothing")
            bad += 1
    if len(argv) == 9:
        allc = [ident(line) for line in open(argv[8])]
        print(f"the whole ring: {len(allc)} events, the three range sidecars {len(seen)}")
        if sorted(allc) != sorted(seen):
            print("the range sidecars' events differ from the whole ring's")
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
