#!/usr/bin/env python3
"""rf3_check.py - check what `cdcflow cassandra dump` decodes from each replica of an
RF=3 run (tests/data/cassandra/rf3-*, or a live cluster run of workload_rf3.py)
against what the workload sent and which node was down. An oracle check of the
replicas' data, not of any dedup.

  rf3_check.py CASE_DIR DUMP_NODE1.jsonl DUMP_NODE2.jsonl DUMP_NODE3.jsonl

CASE_DIR has workload.cql (one statement a line, `--` comments), schema.cql, and
case.json (fixtures) or phases.json (live runs) naming the down node and the
statements it missed. The oracles are the statements themselves (each carries
USING TIMESTAMP TS + n * 1000, n its line number among the non-comment lines) and
Cassandra's replication: every replica that was up receives the same mutation.
Checks, for the tables with cdc = true:
  1. each statement's timestamp is TS + n * 1000 (the rule the fixtures document);
  2. a node that was up throughout holds exactly the timestamps of every data
     statement; the down node exactly those outside its down window: nothing the
     workload did not write, nothing missing;
  3. the copies are the same: the nodes up throughout decode to the same multiset
     of partition updates (segment and position aside); the down node's multiset
     is theirs minus exactly the updates written in its down window.
That every row of expected/ is covered is replay_check.py's job (run it on the
concatenated dumps). Exit 0 when all hold; each failure is printed.
"""
import json
import re
import sys
from collections import Counter

TS = 1700000000000000


def load_case(case):
    try:
        c = json.load(open(case + "/case.json"))
        if c.get("down"):
            return c["down"]["node"], tuple(c["down"]["statements"])
        return None, None
    except FileNotFoundError:
        p = json.load(open(case + "/phases.json"))
        if p.get("down_node"):
            return p["down_node"], tuple(p["statements"][p["down_phase"]])
        return None, None


def cdc_tables(case):
    text = open(case + "/schema.cql").read()
    out = set()
    for m in re.finditer(r"CREATE TABLE (\S+)\.(\S+) \(.*?\n\) WITH (.*?);", text, re.S):
        if re.search(r"\bcdc = true\b", m.group(3)):
            out.add(m.group(2).strip('"'))
    return out


def stamps(ev):
    """every write timestamp an update carries: partition, row and range
    deletions, row liveness, collection deletions, cells"""
    out = set()
    if ev["partition_deletion"]:
        out.add(int(ev["partition_deletion"]["ts"]))
    for r in ev["rows"]:
        for k in ("deletion", "start_deletion"):
            if r.get(k):
                out.add(int(r[k]["ts"]))
        if r.get("ts") is not None:
            out.add(int(r["ts"]))
        for d in (r.get("complex_deletions") or {}).values():
            # a collection or UDT set whole (INSERT, SET c = {...}) first deletes the
            # old value at the write's timestamp - 1 (Cassandra's
            # UpdateParameters.setComplexDeletionTimeForOverwrite); DELETE c
            # deletes at the timestamp itself
            ts = int(d["ts"])
            out.add(ts + 1 if ts % 1000 == 999 else ts)
        for cell in (r.get("cells") or {}).values():
            for c in cell if isinstance(cell, list) else [cell]:
                out.add(int(c["ts"]))
    return out


def main():
    case, dumps = sys.argv[1], sys.argv[2:]
    if len(dumps) != 3:
        sys.exit("usage: rf3_check.py CASE_DIR DUMP1 DUMP2 DUMP3")
    down, window = load_case(case)
    tables = cdc_tables(case)
    failures = []

    # 1. the statements and their timestamps
    want_all, in_window = set(), set()
    n = 0
    for line in open(case + "/workload.cql"):
        if line.startswith("--") or not line.strip():
            continue
        n += 1
        m = re.search(r"\bTIMESTAMP (\d+)", line)
        if not m:
            continue
        ts = int(m.group(1))
        if ts != TS + n * 1000:
            failures.append("statement %d: USING TIMESTAMP %d, the rule says %d" % (n, ts, TS + n * 1000))
        want_all.add(ts)
        if window and window[0] <= n <= window[1]:
            in_window.add(ts)
    if window and not in_window:
        failures.append("the down window %s holds no data statement" % (window,))

    # 2. timestamps per node
    multis = []
    for i, path in enumerate(dumps, 1):
        got, multi = set(), Counter()
        for line in open(path):
            ev = json.loads(line)
            if ev["table"] not in tables:
                continue
            got |= stamps(ev)
            ev.pop("segment")
            ev.pop("position")
            multi[json.dumps(ev, sort_keys=True)] += 1
        multis.append(multi)
        want = want_all - in_window if i == down else want_all
        if got - want:
            failures.append("node%d: %d timestamps no statement it received wrote, e.g. %s"
                            % (i, len(got - want), sorted(got - want)[:5]))
        if want - got:
            failures.append("node%d: no copy of %d statements, e.g. timestamps %s"
                            % (i, len(want - got), sorted(want - got)[:5]))
        print("node%d: %d partition updates of cdc tables, %d statement timestamps%s"
              % (i, sum(multi.values()), len(got), " (down for statements %d-%d)" % window if i == down else ""))

    # 3. the copies
    up = [i for i in (1, 2, 3) if i != down]
    ref = multis[up[0] - 1]
    for i in up[1:]:
        if multis[i - 1] != ref:
            failures.append("node%d and node%d decode to different partition updates (%d and %d differ)"
                            % (up[0], i, sum((ref - multis[i - 1]).values()), sum((multis[i - 1] - ref).values())))
    if down:
        missing = ref - multis[down - 1]
        extra = multis[down - 1] - ref
        if extra:
            failures.append("node%d has %d partition updates the others lack" % (down, sum(extra.values())))
        for k in missing:
            if not stamps(json.loads(k)) <= in_window:
                failures.append("node%d lacks an update written outside its down window: %s" % (down, k[:200]))
        print("node%d lacks %d partition updates, all written in its down window" % (down, sum(missing.values())))
    for f in failures:
        print("FAIL: " + f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
