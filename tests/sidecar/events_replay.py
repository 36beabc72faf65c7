#!/usr/bin/env python3
"""events_replay.py - apply the change events `cdcflow cassandra sidecar`
wrote to a record file (JsonConverter with schemas) the way a consumer would,
and compare the result with `SELECT JSON * FROM t` taken from the node that
wrote the segments (tests/data/cassandra/<case>/expected/).

  events_replay.py RECORDS.jsonl CASE_DIR

The oracle is Cassandra's answer. A consumer knows only what the events say:
operationType, timestampMicros, updateFields (written columns; null = set to
null), elementFields (collection/UDT elements added or removed), range
predicates, the payload. It reconciles by timestamp as Cassandra does (the
highest wins, a deletion wins ties; deletions shadow what is not newer).

What events cannot say, by design (Sidecar CDC reads such values back from
Cassandra): where a list element went (prepend/append) and which list
element a removal took. A list column that got such element updates is not
compared for that row; the script prints how many such cells it skipped.
Exit 0 when every expected row and column matches and no extra row exists.
"""
import base64
import datetime
import json
import os
import sys
from decimal import Decimal

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cassandra"))
import replay_check as rc  # noqa: E402  (the schema reader and clustering order of the dump replay)


def base(t):
    t = t.strip()
    while t.startswith("frozen<"):
        t = t[len("frozen<"):-1].strip()
    return t


def kind(t):
    b = base(t)
    return b.split("<", 1)[0].strip() if "<" in b else b


def unvint(data, pos):
    first = data[pos]
    extra = 0
    while extra < 8 and first & (0x80 >> extra):
        extra += 1
    v = first & (0xFF >> extra) if extra < 8 else 0
    for i in range(extra):
        v = v << 8 | data[pos + 1 + i]
    return v, pos + 1 + extra


def zigzag(v):
    return (v >> 1) ^ -(v & 1)


def duration_text(b):
    months, p = unvint(b, 0)
    days, p = unvint(b, p)
    nanos, p = unvint(b, p)
    months, days, nanos = zigzag(months), zigzag(days), zigzag(nanos)
    neg = months < 0 or days < 0 or nanos < 0
    months, days, nanos = abs(months), abs(days), abs(nanos)
    out = "-" if neg else ""
    for div, unit in ((12, "y"), (1, "mo")):
        q = months // div
        months -= q * div
        if q:
            out += "%d%s" % (q, unit)
    if days:
        out += "%dd" % days
    for div, unit in ((3600 * 10**9, "h"), (60 * 10**9, "m"), (10**9, "s"), (10**6, "ms"), (10**3, "us"), (1, "ns")):
        q = nanos // div
        nanos -= q * div
        if q:
            out += "%d%s" % (q, unit)
    return out


def twos(b):
    return int.from_bytes(b, "big", signed=True) if b else 0


class Conv:
    def __init__(self, types):
        self.types = types

    def expected(self, t, v):
        """Cassandra's SELECT JSON value -> a comparable Python value"""
        if v is None:
            return None
        k = kind(t)
        if k in ("int", "bigint", "smallint", "tinyint", "varint", "counter"):
            return int(v)
        if k in ("float", "double"):
            return float(v)
        if k == "decimal":
            return Decimal(str(v))
        if k in ("list", "set", "vector"):
            et = rc.split_params(base(t))[0]
            return [self.expected(et, x) for x in v]
        if k == "map":
            kt, vt = rc.split_params(base(t))
            return sorted((self.expected(kt, json.loads(x) if kind(kt) not in ("text", "ascii", "varchar", "uuid",
                                                                               "timeuuid", "inet", "date", "time",
                                                                               "timestamp", "duration", "blob")
                                         else x), self.expected(vt, y)) for x, y in v.items())
        if k == "tuple":
            return [self.expected(ft, x) for ft, x in zip(rc.split_params(base(t)), v)]
        udt = self.types.get(base(t).split(".")[-1].strip('"'))
        if udt is not None:
            return [self.expected(ft, v.get(rc.col_key(f))) for f, ft in udt]
        return v

    def ours(self, t, v, s):
        """a Connect JSON value (schema s) -> the same comparable form"""
        if v is None:
            return None
        k = kind(t)
        if k in ("int", "bigint", "smallint", "tinyint", "counter"):
            return int(v)
        if k == "varint":
            return twos(base64.b64decode(v))
        if k == "decimal":
            scale = int(s.get("parameters", {}).get("scale", "0"))
            return Decimal(twos(base64.b64decode(v))).scaleb(-scale)
        if k in ("float", "double"):
            return float(v)
        if k == "blob":
            return "0x" + base64.b64decode(v).hex()
        if k == "duration":
            return duration_text(base64.b64decode(v))
        if k == "timestamp":
            d = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(milliseconds=v)
            return d.strftime("%Y-%m-%d %H:%M:%S.") + "%03dZ" % (d.microsecond // 1000)
        if k == "date":
            return (datetime.date(1970, 1, 1) + datetime.timedelta(days=v)).isoformat()
        if k == "time":
            return "%02d:%02d:%02d.%09d" % (v // (3600 * 10**9), v // (60 * 10**9) % 60, v // 10**9 % 60, v % 10**9)
        if k in ("list", "set", "vector"):
            et = rc.split_params(base(t))[0]
            return [self.ours(et, x, s["items"]) for x in v]
        if k == "map":
            kt, vt = rc.split_params(base(t))
            pairs = v.items() if isinstance(v, dict) else v  # non-string keys: [[k, v], ...]
            return sorted((self.ours(kt, x, s["keys"]), self.ours(vt, y, s["values"])) for x, y in pairs)
        if k == "tuple":
            fts = rc.split_params(base(t))
            return [self.ours(ft, v.get("f%d" % i), s["fields"][i]) for i, ft in enumerate(fts)]
        udt = self.types.get(base(t).split(".")[-1].strip('"'))
        if udt is not None:
            return [self.ours(ft, v.get(fs["field"]), fs) for (f, ft), fs in zip(udt, s["fields"])]
        return v


def field_schemas(schema):
    """payload field name -> (cql column name, field schema)"""
    out = {}
    for f in schema["fields"]:
        col = f.get("parameters", {}).get("cassandra.column", f["field"])
        out[f["field"]] = (col, f)
    return out


def main():
    records, case = sys.argv[1], sys.argv[2]
    tables, types = rc.load_schema(case + "/schema.cql")
    conv = Conv(types)
    pks = {}
    text = open(case + "/schema.cql").read()
    import re
    cdc = set()
    for m in re.finditer(r"CREATE TABLE (\S+)\.(\S+) \((.*?)\n\) WITH(.*?);", text, re.S):
        name = m.group(2).strip('"')
        if re.search(r"\bcdc = true", m.group(4)):
            cdc.add(name)
        km = re.search(r"PRIMARY KEY \((.*)\)", m.group(3))
        if km:
            parts = km.group(1)
            if parts.startswith("("):
                pk = [x.strip().strip('"') for x in parts[1:parts.index(")")].split(",")]
                ck = [x.strip().strip('"') for x in parts[parts.index(")") + 1:].split(",") if x.strip()]
            else:
                allc = [x.strip().strip('"') for x in parts.split(",")]
                pk, ck = allc[:1], allc[1:]
        else:
            single = re.search(r'\n\s*("[^"]+"|\S+) \S+ PRIMARY KEY', m.group(3))
            pk, ck = [single.group(1).strip('"')], []
        pks[name] = (pk, ck)
    # state[table][pk] = {"pdel", "ranges": [(preds, ts)], "rows": {ck: row}, "static": row}
    state = {}
    ops = {}
    skipped_lists = 0
    nrec = 0
    for line in open(records):
        if not line.strip():
            continue
        msg = json.loads(line)
        env = json.loads(msg["payload"])
        schema, ev = env["schema"], env["payload"]
        nrec += 1
        t = ev["sourceTable"]
        if t not in tables:
            continue
        ops[ev["operationType"]] = ops.get(ev["operationType"], 0) + 1
        pschema = next(f for f in schema["fields"] if f["field"] == "payload")
        fmap = field_schemas(pschema)
        cols = tables[t]["cols"]
        pay = ev["payload"]

        def val(field):
            col, fs = fmap[field]
            return conv.ours(cols[col], pay.get(field), fs)

        pk_cols, ck_cols = pks[t]
        by_col = {fmap[f][0]: f for f in fmap}
        key = json.dumps([val(by_col[c]) for c in pk_cols], default=str)
        p = state.setdefault(t, {}).setdefault(key, {"pdel": None, "ranges": [], "rows": {}, "static": None,
                                                     "pk": {c: val(by_col[c]) for c in pk_cols}})
        ts = ev["timestampMicros"]
        op = ev["operationType"]
        upd = set(ev["updateFields"])
        elem = set(ev.get("elementFields") or [])
        if op == "DELETE_PARTITION":
            p["pdel"] = max(p["pdel"] or ts, ts)
            continue
        if op == "DELETE_RANGE":
            preds = []
            for pr in ev["range"] or []:
                col = fmap[pr["field"]][0]
                cs = next(f for f in schema["fields"] if f["field"] == "range")["items"]["fields"][2]
                cfs = next(f for f in cs["fields"] if f["field"] == pr["field"])
                preds.append((col, pr["rangePredicateType"], conv.ours(cols[col], pr["value"][pr["field"]], cfs)))
            p["ranges"].append((preds, ts))
            continue
        ckv = [val(by_col[c]) for c in ck_cols]
        is_static = all(v is None for v in ckv) and ck_cols and all(by_col[c] not in upd for c in ck_cols)
        if is_static:
            row = p["static"] = p["static"] or {"live": None, "del": None, "cells": {}, "elems": {}, "cdel": {},
                                                "unknown": set()}
        else:
            row = p["rows"].setdefault(json.dumps(ckv, default=str),
                                       {"live": None, "del": None, "cells": {}, "elems": {}, "cdel": {},
                                        "unknown": set(), "ck": ckv})
        written = [f for f in ev["updateFields"] if fmap[f][0] not in pk_cols and fmap[f][0] not in ck_cols]
        if op == "INSERT":
            row["live"] = max(row["live"] or ts, ts)
        if op == "DELETE" and not written:
            row["del"] = max(row["del"] or ts, ts)
            continue
        for f in written:
            col, fs = fmap[f]
            typ = cols[col]
            k = kind(typ)
            multicell = not typ.startswith("frozen") and (k in ("list", "set", "map") or
                                                           base(typ).split(".")[-1].strip('"') in types)
            v = pay.get(f)
            if not multicell:
                old = row["cells"].get(col)
                new = (ts, v is None, conv.ours(typ, v, fs))
                if old is None or (new[0], new[1]) > (old[0], old[1]):
                    row["cells"][col] = new
                continue
            els = row["elems"].setdefault(col, {})
            removed = [x.split(".", 1)[1] for x in elem if x.startswith(f + ".")]
            if removed:  # UDT fields set to null, by name
                udt = types[base(typ).split(".")[-1].strip('"')]
                for i, ffs in enumerate(fs["fields"]):
                    if ffs["field"] in removed:
                        old = els.get(i)
                        if old is None or ts >= old[0]:
                            els[i] = (ts, True, None)
                continue
            if k == "list" and (f in elem):
                row["unknown"].add(col)  # position or removed element unknown
                if op != "COMPLEX_ELEMENT_DELETE":
                    for x in conv.ours(typ, v, fs) or []:
                        els[("l", len(els), ts)] = (ts, False, x)
                continue
            if f not in elem:  # the whole value replaced (or set to null): older elements go
                lim = ts - 1 if v is not None else ts
                row["cdel"][col] = max(row["cdel"].get(col, lim), lim)
                if k == "list":
                    row["unknown"].discard(col)
                    # the list is this value now: a replayed copy of the same write must not add it twice
                    for ek in [ek for ek, e in els.items() if e[0] <= ts]:
                        del els[ek]
            if v is None:
                continue
            if k == "list":
                for x in conv.ours(typ, v, fs):
                    els[("l", len(els), ts)] = (ts, False, x)
            elif k == "set":
                for x in conv.ours(typ, v, fs):
                    ek = json.dumps(x, default=str)
                    old = els.get(ek)
                    new = (ts, op == "COMPLEX_ELEMENT_DELETE", x)
                    if old is None or (new[0], new[1]) > (old[0], old[1]):
                        els[ek] = new
            elif k == "map":
                kt, vt = rc.split_params(base(typ))
                pairs = v.items() if isinstance(v, dict) else v
                for x, y in pairs:
                    kx = conv.ours(kt, x, fs["keys"])
                    ek = json.dumps(kx, default=str)
                    old = els.get(ek)
                    new = (ts, op == "COMPLEX_ELEMENT_DELETE", (kx, conv.ours(vt, y, fs["values"])))
                    if old is None or (new[0], new[1]) > (old[0], old[1]):
                        els[ek] = new
            else:  # a non-frozen UDT: fields written one by one
                udt = types[base(typ).split(".")[-1].strip('"')]
                for i, ((fname, ft), ffs) in enumerate(zip(udt, fs["fields"])):
                    if ffs["field"] not in v or (f in elem and v.get(ffs["field"]) is None):
                        continue  # not written
                    old = els.get(i)
                    new = (ts, False, conv.ours(ft, v.get(ffs["field"]), ffs))
                    if old is None or new[0] >= old[0]:
                        els[i] = new
    # assemble and compare
    failures = 0
    for t, info in tables.items():
        path = "%s/expected/%s.jsonl" % (case, t)
        if not os.path.exists(path) or t not in cdc:
            continue  # tables without cdc = true are never published
        expected = [json.loads(l, parse_float=Decimal) for l in open(path) if l.strip()]
        if info["cols"] and any(kind(c) == "counter" for c in info["cols"].values()):
            continue  # counter tables are not published
        pk_cols, ck_cols = pks[t]
        names = ck_cols
        got = {}
        for key, p in state.get(t, {}).items():
            static_vals, slive = {}, False
            if p["static"]:
                static_vals, slive, _ = assemble(p["static"], p, None, t, tables, types, names)
            for ckk, row in p["rows"].items():
                vals, live, unk = assemble(row, p, row["ck"], t, tables, types, names)
                if not live:
                    continue
                full = dict(p["pk"])
                full.update(dict(zip(ck_cols, row["ck"])))
                full.update(static_vals)
                full.update(vals)
                for c in info["cols"]:
                    full.setdefault(c, None)
                full["__unknown"] = unk
                got[json.dumps([full[c] for c in pk_cols + ck_cols], default=str)] = full
        emap = {}
        for e in expected:
            ee = {}
            for c, typ in info["cols"].items():
                if rc.col_key(c) in e:  # some fixtures keep a few columns only
                    ee[c] = conv.expected(typ, e[rc.col_key(c)])
            emap[json.dumps([ee.get(c) for c in pk_cols + ck_cols], default=str)] = ee
        for k, e in emap.items():
            g = got.get(k)
            if g is None:
                print("%s: missing row %s" % (t, k))
                failures += 1
                continue
            for c, v in e.items():
                if c in g["__unknown"]:
                    skipped_lists += 1
                    continue
                if g.get(c) != v:
                    print("%s %s: column %s: got %r, Cassandra says %r" % (t, k, c, g.get(c), v))
                    failures += 1
        for k in got:
            if k not in emap:
                print("%s: extra live row %s" % (t, k))
                failures += 1
        print("%s: %d rows expected, %d replayed" % (t, len(emap), len(got)))
    print("%d events: %s" % (nrec, ", ".join("%s %d" % kv for kv in sorted(ops.items()))))
    print("%d list cells not comparable (element positions are not in the events)" % skipped_lists)
    sys.exit(1 if failures else 0)


def covered(preds, ckv, table, names):
    for col, op, v in preds:
        i = names.index(col)
        typ = table["cols"][col]
        a, b = rc.elem_key(typ, ckv[i]), rc.elem_key(typ, v)
        if typ.startswith("timeuuid"):
            a, b = rc.uuid_time_key(ckv[i]), rc.uuid_time_key(v)
        c = (a > b) - (a < b)
        if not {"LT": c < 0, "LTE": c <= 0, "EQ": c == 0, "GTE": c >= 0, "GT": c > 0}[op]:
            return False
    return True


def assemble(row, p, ckv, t, tables, types, names):
    table = tables[t]
    shadow = p["pdel"]
    if row.get("del") is not None:
        shadow = max(shadow or row["del"], row["del"])
    if ckv is not None:
        for preds, ts in p["ranges"]:
            if covered(preds, ckv, table, names):
                shadow = max(shadow or ts, ts)
    live = row["live"] is not None and (shadow is None or row["live"] > shadow)
    vals = {}
    for col, (ts, dead, v) in row["cells"].items():
        if dead or (shadow is not None and ts <= shadow):
            continue
        if col not in table["cols"]:
            continue
        vals[col] = v
        live = True
    for col, els in row["elems"].items():
        if col not in table["cols"]:
            continue
        lim = shadow
        if col in row["cdel"]:
            lim = max(lim or row["cdel"][col], row["cdel"][col])
        alive = [(k, e) for k, e in els.items() if not e[1] and (lim is None or e[0] > lim)]
        if not alive:
            continue
        live = True
        typ = table["cols"][col]
        k = kind(typ)
        if k == "list":
            vals[col] = [e[2] for _, e in sorted(alive, key=lambda x: (x[0][2], x[0][1]))]
        elif k == "set":
            et = rc.split_params(base(typ))[0]
            vals[col] = sorted((e[2] for _, e in alive), key=lambda x: rc.elem_key(et, x))
        elif k == "map":
            vals[col] = sorted(e[2] for _, e in alive)
        else:
            udt = types[base(typ).split(".")[-1].strip('"')]
            vals[col] = [dict(alive).get(i, (0, False, None))[2] for i in range(len(udt))]
    return vals, live, row.get("unknown", set())


if __name__ == "__main__":
    main()
