#!/usr/bin/env python3
"""replay_check.py - replay `cdcflow cassandra dump` output the way Cassandra
reconciles data and compare the result with `SELECT JSON * FROM t` taken from
the node that wrote the segments (tests/data/cassandra/<case>/expected/).

  replay_check.py DUMP.jsonl CASE_DIR

The oracle is Cassandra's answer; this script only merges our events with
Cassandra's documented rules (Cell.reconcile, DeletionTime.deletes):
  - per cell: highest timestamp wins; at equal timestamps a tombstone wins;
  - partition deletions, row deletions, range tombstones (bound pairs and
    boundaries) and collection (complex) deletions shadow everything with a
    timestamp <= theirs;
  - counters: the last counter cell in commit log order carries the total;
  - a row is returned if its primary key liveness or any cell is live; TTLs
    of the workload are far longer than the fixture's life, so none expired.
Columns are compared as parsed JSON with exact number text.
Exit 0 when every expected row matches and no extra live row exists.
"""
import json
import re
import sys
from collections import defaultdict

LIVE = None


def load_schema(path):
    text = open(path).read()
    types = {}
    for m in re.finditer(r"CREATE TYPE (\S+)\.(\S+) \((.*?)\n\);", text, re.S):
        fields = []
        for line in m.group(3).strip().split("\n"):
            line = line.strip().rstrip(",")
            fm = re.match(r'("[^"]+"|\S+) (.+)', line)
            fields.append((fm.group(1).strip('"'), fm.group(2)))
        types[m.group(2).strip('"')] = fields
    tables = {}
    for m in re.finditer(r"CREATE TABLE (\S+)\.(\S+) \((.*?)\n\) WITH (.*?);", text, re.S):
        name = m.group(2).strip('"')
        cols = {}
        for line in m.group(3).strip().split("\n"):
            line = line.strip().rstrip(",")
            if line.startswith("PRIMARY KEY"):
                continue
            cm = re.match(r'("[^"]+"|\S+) (.+?)( PRIMARY KEY)?( static)?$', line)
            cols[cm.group(1).strip('"')] = cm.group(2)
        order = {}
        om = re.search(r"CLUSTERING ORDER BY \((.*?)\)", m.group(4))
        if om:
            for part in om.group(1).split(","):
                c, d = part.strip().rsplit(" ", 1)
                order[c.strip('"')] = d == "DESC"
        tables[name] = {"cols": cols, "desc": order}
    return tables, types


def jload(s):
    return json.loads(s, parse_int=str, parse_float=str)


def col_key(name):
    return name if name == name.lower() else '"%s"' % name


def uuid_time_key(u):
    h = u.replace("-", "")
    t = int(h[13:16], 16) << 48 | int(h[8:12], 16) << 32 | int(h[0:8], 16)
    lsb = bytes.fromhex(h[16:])
    return (t, tuple(b - 256 if b > 127 else b for b in lsb))


def elem_key(typ, v):
    base = re.sub(r"frozen<(.*)>", r"\1", typ)
    if base in ("int", "bigint", "smallint", "tinyint", "varint", "counter"):
        return (0, int(v), "")
    if base in ("float", "double", "decimal"):
        return (0, float(v), "")
    if isinstance(v, str):
        return (1, 0, v.encode())
    return (2, 0, json.dumps(v))


def split_params(t):
    inner = t[t.index("<") + 1:t.rindex(">")]
    out, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    out.append(cur.strip())
    return out


def clustering_cmp(table, names, a, b):
    """compare two clustering prefixes (lists of JSON values); shorter = prefix"""
    for i in range(min(len(a), len(b))):
        t = table["cols"][names[i]]
        ka, kb = elem_key(t, a[i]), elem_key(t, b[i])
        if t.startswith("timeuuid"):
            ka, kb = uuid_time_key(a[i]), uuid_time_key(b[i])
        if ka != kb:
            r = -1 if ka < kb else 1
            return -r if table["desc"].get(names[i]) else r
    return 0


def covers(table, names, start, end, ck):
    """range tombstone [start, end] (bound kind, prefix) covers clustering ck?"""
    skind, sp = start
    ekind, ep = end
    c = clustering_cmp(table, names, ck[:len(sp)], sp) if sp else 0
    if c < 0 or (c == 0 and sp and skind.startswith("EXCL")):
        return False
    c = clustering_cmp(table, names, ck[:len(ep)], ep) if ep else 0
    if c > 0 or (c == 0 and ep and ekind.startswith("EXCL")):
        return False
    return True


def main():
    dump, case = sys.argv[1], sys.argv[2]
    tables, types = load_schema(case + "/schema.cql")
    # state[table][pk] = {"pdel": ts, "rts": [...], "rows": {ck_tuple: row}, "static": row}
    state = defaultdict(lambda: defaultdict(lambda: {"pdel": None, "rts": [], "rows": {}, "static": None}))
    names_of = {}
    order = 0
    for line in open(dump):
        ev = jload(line)
        t = ev["table"]
        pk = json.dumps(ev["key"], sort_keys=True)
        p = state[t][pk]
        p["key"] = ev["key"]
        if ev["partition_deletion"]:
            ts = int(ev["partition_deletion"]["ts"])
            p["pdel"] = max(p["pdel"] or ts, ts)
        open_rt = None
        for r in ev["rows"]:
            order += 1
            kind = r["kind"]
            names = list(r["clustering"].keys())
            if names and t not in names_of:
                names_of[t] = names
            ck = tuple(r["clustering"].values())
            if kind == "range_tombstone_bound":
                if r["bound"].endswith("START_BOUND"):
                    open_rt = ((r["bound"], list(ck)), int(r["deletion"]["ts"]))
                else:
                    p["rts"].append((open_rt[0], (r["bound"], list(ck)), open_rt[1]))
                    open_rt = None
                continue
            if kind == "range_tombstone_boundary":
                end_kind = "INCL_END_BOUND" if r["bound"].startswith("INCL_END") else "EXCL_END_BOUND"
                start_kind = "EXCL_START_BOUND" if r["bound"].startswith("INCL_END") else "INCL_START_BOUND"
                p["rts"].append((open_rt[0], (end_kind, list(ck)), open_rt[1]))
                open_rt = ((start_kind, list(ck)), int(r["start_deletion"]["ts"]))
                continue
            if kind == "static":
                row = p["static"] = p["static"] or {"live": None, "del": None, "cells": {}, "cdel": {}}
            else:
                row = p["rows"].setdefault(ck, {"live": None, "del": None, "cells": {}, "cdel": {}, "ck": ck})
            if r["ts"] is not None:
                ts = int(r["ts"])
                row["live"] = max(row["live"] or ts, ts)
            if r["deletion"]:
                ts = int(r["deletion"]["ts"])
                row["del"] = max(row["del"] or ts, ts)
            for col, d in (r.get("complex_deletions") or {}).items():
                ts = int(d["ts"])
                row["cdel"][col] = max(row["cdel"].get(col, ts), ts)
            for col, cell in r["cells"].items():
                typ = tables[t]["cols"].get(col, "")
                cells = cell if isinstance(cell, list) else [cell]
                for c in cells:
                    path = json.dumps(c.get("path"))
                    k = (col, path)
                    new = (int(c["ts"]), c["deleted"], c["value"], c.get("path"), order)
                    old = row["cells"].get(k)
                    if typ == "counter":
                        row["cells"][k] = new  # last in commit log order
                    elif old is None or (new[0], new[1]) > (old[0], old[1]):
                        row["cells"][k] = new
    failures = 0
    # tokens: Cassandra's token(pk) for every partition key it knows
    tokens = {}
    for l in open(case + "/tokens.jsonl"):
        if l.strip():
            tk = jload(l)
            tokens[(tk["table"], json.dumps(tk["key"], sort_keys=True))] = tk["token"]
    ntok = 0
    for line in open(dump):
        ev = jload(line)
        want = tokens.get((ev["table"], json.dumps(ev["key"], sort_keys=True)))
        if want is not None:
            ntok += 1
            if want != ev["token"]:
                print("%s %s: token %s, Cassandra says %s" % (ev["table"], ev["key"], ev["token"], want))
                failures += 1
    print("tokens: %d partition updates checked against token(pk)" % ntok)
    for t, info in tables.items():
        expected = [jload(l) for l in open("%s/expected/%s.jsonl" % (case, t)) if l.strip()]
        cols = info["cols"]
        got = []
        for pk, p in state.get(t, {}).items():
            static_vals = {}
            if p["static"]:
                static_vals = assemble(p["static"], p, None, t, tables, types, names_of)
            for ck, row in p["rows"].items():
                vals, live = assemble(row, p, ck, t, tables, types, names_of, with_live=True)
                if not live:
                    continue
                full = {}
                full.update({col_key(k): v for k, v in p["key"].items()})
                full.update({col_key(k): v for k, v in zip(names_of.get(t, []), ck)})
                for c in cols:
                    if col_key(c) not in full:
                        full[col_key(c)] = None
                full.update(static_vals)
                full.update(vals)
                got.append(full)
        pkc = [col_key(x) for x in PK[t]]

        def ident(r):
            return json.dumps({k: r.get(k) for k in pkc}, sort_keys=True)
        gmap = {ident(r): r for r in got}
        emap = {ident(r): r for r in expected}
        for k, e in emap.items():
            g = gmap.get(k)
            if g is None:
                print("%s: missing row %s" % (t, k))
                failures += 1
                continue
            for c, v in e.items():
                if g.get(c) != v:
                    print("%s %s: column %s: got %s, Cassandra says %s" % (t, k, c, json.dumps(g.get(c)), json.dumps(v)))
                    failures += 1
        for k in gmap:
            if k not in emap:
                print("%s: extra live row %s" % (t, k))
                failures += 1
        print("%s: %d rows expected, %d replayed" % (t, len(emap), len(gmap)))
    sys.exit(1 if failures else 0)


PK = {}


def assemble(row, p, ck, t, tables, types, names_of, with_live=False):
    table = tables[t]
    names = names_of.get(t, [])
    shadow = p["pdel"]
    if row.get("del") is not None:
        shadow = max(shadow or row["del"], row["del"])
    if ck is not None:
        for start, end, ts in p["rts"]:
            if covers(table, names, start, end, list(ck)):
                shadow = max(shadow or ts, ts)
    live = row["live"] is not None and (shadow is None or row["live"] > shadow)
    by_col = defaultdict(list)
    for (col, path), c in row["cells"].items():
        lim = shadow
        if col in row["cdel"]:
            lim = max(lim or row["cdel"][col], row["cdel"][col])
        if c[1] or (lim is not None and c[0] <= lim):
            continue
        by_col[col].append(c)
    vals = {}
    for col, cells in by_col.items():
        typ = table["cols"].get(col)
        if typ is None:  # dropped column
            continue
        live = True
        if cells[0][3] is None:
            vals[col_key(col)] = cells[0][2]
        elif typ.startswith("list"):
            cells.sort(key=lambda c: uuid_time_key(c[3]))
            vals[col_key(col)] = [c[2] for c in cells]
        elif typ.startswith("set"):
            et = split_params(typ)[0]
            vals[col_key(col)] = sorted((c[3] for c in cells), key=lambda v: elem_key(et, v))
        elif typ.startswith("map"):
            kt = split_params(typ)[0]
            cells.sort(key=lambda c: elem_key(kt, c[3]))
            vals[col_key(col)] = {(c[3] if isinstance(c[3], str) else json.dumps(c[3])): c[2] for c in cells}
        else:  # non-frozen UDT
            fields = types[typ.split(".")[-1].strip('"')]
            byname = {c[3]: c[2] for c in cells}
            vals[col_key(col)] = {col_key(f): byname.get(f) for f, _ in fields}
    if with_live:
        return vals, live
    return vals


if __name__ == "__main__":
    # primary key columns per table, from the schema text
    case = sys.argv[2]
    text = open(case + "/schema.cql").read()
    for m in re.finditer(r"CREATE TABLE (\S+)\.(\S+) \((.*?)\n\) WITH", text, re.S):
        name = m.group(2).strip('"')
        body = m.group(3)
        km = re.search(r"PRIMARY KEY \((.*)\)", body)
        if km:
            PK[name] = [x.strip().strip('"') for x in km.group(1).replace("(", "").replace(")", "").split(",")]
        else:
            single = re.search(r'\n\s*("[^"]+"|\S+) \S+ PRIMARY KEY', body)
            PK[name] = [single.group(1).strip('"')]
    main()
