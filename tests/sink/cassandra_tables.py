#!/usr/bin/env python3
"""cassandra_tables.py - compare the tables the cdc-sink wrote from Cassandra
change events with what Cassandra's `SELECT JSON * FROM t` returned at ALL
(tests/data/cassandra/<case>/expected/<table>.jsonl, taken from the cluster
that wrote the segments: the oracle).

  cassandra_tables.py DB CASE_DIR RECORDS [--show] [--prefix P]

DB: sqlite:PATH, or pg:SCHEMA (psql with $CF_TEST_PG; tables are
<keyspace>_<table> in SCHEMA), or bq:HTTP,PROJECT.DATASET (the BigQuery TEST
DOUBLE's table dump, GET HTTP/_test/rows, after BigQuery's CDC rules: BYTES
columns come base64, JSON columns as canonical JSON text). RECORDS: the record file the sink read; from
it the script takes which tables have events and which list cells got
element-level writes (appended/prepended/removed elements come without
their position or value: those cells are not comparable, as in
tests/sidecar/events_replay.py, and are counted). Every other column of
every row must be equal, no row missing, no row extra. --show prints each
table next to Cassandra's rows. Exit 0 when all match.
"""
import base64
import json
import os
import re
import subprocess
import sys
from decimal import Decimal

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "sidecar"))
sys.path.insert(0, os.path.join(HERE, "..", "cassandra"))
import events_replay as er  # noqa: E402  (Connect JSON -> comparable values, the replay's rules)
import replay_check as rc  # noqa: E402  (the schema reader)


def cql_tables(schema_path):
    """table -> (partition key, clustering, {column: type}, cdc)"""
    text = open(schema_path).read()
    out = {}
    for m in re.finditer(r"CREATE TABLE (\S+)\.(\S+) \((.*?)\n\) WITH(.*?);", text, re.S):
        name, body = m.group(2).strip('"'), m.group(3)
        cols = {}
        for line in body.split("\n"):
            line = line.strip().rstrip(",")
            cm = re.match(r'("[^"]+"|\w+) (.+?)( static)?( PRIMARY KEY)?$', line)
            if cm and not line.startswith("PRIMARY KEY"):
                cols[cm.group(1).strip('"')] = cm.group(2)
        km = re.search(r"PRIMARY KEY \((.*)\)", body)
        if km:
            parts = km.group(1)
            if parts.startswith("("):
                pk = [x.strip().strip('"') for x in parts[1:parts.index(")")].split(",")]
                ck = [x.strip().strip('"') for x in parts[parts.index(")") + 1:].split(",") if x.strip()]
            else:
                allc = [x.strip().strip('"') for x in parts.split(",")]
                pk, ck = allc[:1], allc[1:]
        else:
            single = re.search(r'\n\s*("[^"]+"|\S+) \S+ PRIMARY KEY', body)
            pk, ck = [single.group(1).strip('"')], []
        out[name] = (m.group(1), pk, ck, cols, bool(re.search(r"\bcdc = true", m.group(4))))
    return out


def rows_sqlite(path, table):
    import sqlite3
    db = sqlite3.connect(path)
    db.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in db.execute('SELECT * FROM "%s"' % table)]
    except sqlite3.OperationalError:
        return None


def rows_pg(schema, table):
    q = 'SELECT row_to_json(t) FROM "%s"."%s" t' % (schema, table)
    r = subprocess.run(["psql", os.environ["CF_TEST_PG"], "-XAtq", "-c", q], capture_output=True, text=True)
    if r.returncode:
        return None
    return [json.loads(line, parse_float=Decimal) for line in r.stdout.splitlines() if line.strip()]


def rows_bq(spec, table):
    import urllib.request
    http, ds = spec.split(",", 1)
    try:
        with urllib.request.urlopen("%s/_test/rows?table=%s.%s" % (http, ds, table), timeout=60) as r:
            d = json.load(r)
        proj, dataset = ds.split(".", 1)
        url = "%s/bigquery/v2/projects/%s/datasets/%s/tables/%s" % (http, proj, dataset, table)
        with urllib.request.urlopen(url, timeout=60) as r:
            schema = json.load(r)["schema"]["fields"]
    except Exception:  # noqa: BLE001  (no table)
        return None
    blobs = [f["name"] for f in schema if f["type"] == "BYTES"]
    rows = d["rows"]
    for r in rows:
        for c in blobs:
            if r.get(c) is not None:
                r[c] = base64.b64decode(r[c])
    return rows


def norm(v):
    """a comparable form for display: JSON text parsed, numbers as Decimal"""
    if isinstance(v, str) and v[:1] in "[{":
        try:
            v = json.loads(v, parse_float=Decimal)
        except ValueError:
            return v
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float, Decimal)):
        return Decimal(str(v))
    if isinstance(v, (bytes, memoryview)):
        return "0x" + bytes(v).hex()
    if isinstance(v, list):
        return [norm(x) for x in v]
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items()}
    return v


def shown(v):
    """a cell for people: numbers without quotes, JSON otherwise"""
    v = norm(v)
    if isinstance(v, Decimal):
        return str(v)
    return json.dumps(v, default=lambda x: int(x) if x == x.to_integral_value() else float(x), ensure_ascii=False)


def raw_bytes(v):
    if isinstance(v, str) and v.startswith("\\x"):  # PostgreSQL's bytea text
        return bytes.fromhex(v[2:])
    return bytes(v)


class Typed:
    """a target cell and a SELECT JSON value of one CQL type -> one comparable form"""

    def __init__(self, types):
        self.conv = er.Conv(types)

    def got(self, t, v, fs):
        if v is None:
            return None
        k = er.kind(t)
        if k in ("int", "bigint", "smallint", "tinyint", "counter"):
            return int(v)
        if k == "varint":
            return int(Decimal(str(v)))
        if k in ("float", "double"):
            return float(v)
        if k == "decimal":
            return Decimal(str(v))
        if k == "boolean":
            return bool(v)
        if k == "blob":
            return "0x" + raw_bytes(v).hex()
        if k == "duration":
            return er.duration_text(raw_bytes(v))
        if k == "timestamp":
            m = re.match(r"(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)(\.\d+)?", str(v))
            frac = (m.group(3) or ".")[1:].ljust(3, "0")[:3]
            return "%s %s.%sZ" % (m.group(1), m.group(2), frac)
        if k == "time":
            return "%02d:%02d:%02d.%09d" % (v // (3600 * 10**9), v // (60 * 10**9) % 60, v // 10**9 % 60, v % 10**9)
        if k in ("list", "set", "vector", "map", "tuple") or self.conv.types.get(er.base(t).split(".")[-1].strip('"')):
            if isinstance(v, str):
                v = json.loads(v)
            return self.conv.ours(t, v, fs)
        return v

    def expected(self, t, v):
        return self.conv.expected(t, v)


def fetch(db, name):
    if db.startswith("bq:"):
        return rows_bq(db[3:], name)
    return rows_sqlite(db[7:], name) if db.startswith("sqlite:") else rows_pg(db[3:], name)


def main():
    db, case, records = sys.argv[1:4]
    show = "--show" in sys.argv
    prefix = sys.argv[sys.argv.index("--prefix") + 1] if "--prefix" in sys.argv else ""
    limit = int(os.environ.get("CF_SHOW_ROWS", "15"))
    tables = cql_tables(case + "/schema.cql")
    ctables, types = rc.load_schema(case + "/schema.cql")
    typed = Typed(types)
    # per table: the payload fields (column name in the target, field schema), and the list
    # cells that got element-level writes (not comparable: no positions in the events)
    fields, unknown = {}, set()
    for line in open(records):
        if not line.strip():
            continue
        env = json.loads(json.loads(line)["payload"])
        ev = env["payload"]
        t = ev["sourceTable"]
        # every event's schema: a column added by ALTER TABLE ADD is only in the later events'
        ps = next(f for f in env["schema"]["fields"] if f["field"] == "payload")
        fields.setdefault(t, {}).update(
            {f.get("parameters", {}).get("cassandra.column", f["field"]): f for f in ps["fields"]})
        ks, pk, ck, cols, cdc = tables[t]
        by_field = {f["field"]: c for c, f in fields[t].items()}
        for f in ev.get("elementFields") or []:
            c = by_field.get(f)
            if c and re.match(r"(frozen<)?list<", cols[c]):
                unknown.add((t, json.dumps([ev["payload"].get(fields[t][x]["field"]) for x in pk + ck]), c))
    failures = skipped = 0
    for t in sorted(fields):
        ks, pk, ck, cols, cdc = tables[t]
        ctypes = ctables[t]["cols"]
        name = "%s%s_%s" % (prefix, ks, t)
        got = fetch(db, name)
        if got is None:
            print("%s: table %s missing" % (t, name))
            failures += 1
            continue
        fm = fields[t]

        def g_val(r, c):
            return typed.got(ctypes[c], r.get(fm[c]["field"]), fm[c])

        def e_val(r, c):
            return typed.expected(ctypes[c], r.get(rc.col_key(c)))

        expected = [json.loads(line, parse_float=Decimal) for line in open("%s/expected/%s.jsonl" % (case, t))
                    if line.strip()]
        gmap = {json.dumps([g_val(r, c) for c in pk + ck], default=str): r for r in got}
        emap = {json.dumps([e_val(r, c) for c in pk + ck], default=str): r for r in expected}
        compared = [c for c in cols if c in fm]

        def raw_key(e):
            return json.dumps([e.get(rc.col_key(c)) for c in pk + ck])

        def differs(g, e):
            out = []
            for c in compared:
                if rc.col_key(c) not in e:
                    continue  # some fixtures keep a few columns only
                if g_val(g, c) != e_val(e, c):
                    out.append(c)
            return out

        for k, e in sorted(emap.items()):
            g = gmap.get(k)
            if g is None:
                print("%s: missing row %s" % (t, k))
                failures += 1
                continue
            for c in differs(g, e):
                if (t, raw_key(e), c) in unknown:
                    skipped += 1
                    continue
                print("%s %s: column %s: table has %.200r, Cassandra says %.200r" % (
                    t, k, c, g.get(fm[c]["field"]), e.get(rc.col_key(c))))
                failures += 1
        for k in gmap:
            if k not in emap:
                print("%s: extra row %s" % (t, k))
                failures += 1
        print("%s: %d rows in Cassandra, %d in table %s" % (t, len(emap), len(gmap), name))
        if show:
            print("  table %s, each row as the table has it; = : Cassandra returned the same row" % name)
            listed = 0
            keys = sorted(set(emap) | set(gmap), key=lambda x: [v if isinstance(v, int) else str(v)
                                                                for v in json.loads(x)])
            for k in keys:
                g, e = gmap.get(k), emap.get(k)
                d = differs(g, e) if g is not None and e is not None else None
                if d == [] and listed >= limit:
                    continue
                listed += 1
                if g is None:
                    print("  (missing)  Cassandra: %s" % json.dumps(e, default=str))
                    continue
                cells = " ".join("%s=%s" % (fm[c]["field"], shown(g.get(fm[c]["field"]))) for c in compared)
                if e is None:
                    print("  %s  <- not in Cassandra" % cells)
                    continue
                notes = []
                for c in d:
                    why = " (list with element writes: not comparable)" if (t, raw_key(e), c) in unknown else ""
                    notes.append("Cassandra %s=%s%s" % (c, shown(e.get(rc.col_key(c))), why))
                print("  %s  %s" % (cells, "; ".join(notes) if notes else "="))
            if len(keys) > listed:
                print("  ... and %d more rows, each equal to Cassandra's" % (len(keys) - listed))
    print("%d list cells not comparable (element positions are not in the events)" % skipped)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
