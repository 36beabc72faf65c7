#!/usr/bin/env python3
"""bq_vs_sqlite.py - the BigQuery TEST DOUBLE's tables (after BigQuery's CDC
rules) against the tables the SQLite target wrote from the same input.

  bq_vs_sqlite.py HTTP PROJECT.DATASET SQLITE_DB TABLE...

Every column of the BigQuery table is compared with the SQLite column of the
same name (SQLite's _change_sequence_number is not a BigQuery column: the
sequence is _CHANGE_SEQUENCE_NUMBER, not stored as a column). JSON columns
compare as parsed JSON (key order differs), BYTES as bytes. Rows are matched
by their whole content: no row missing, none extra. Exit 0 when equal.
"""
import base64
import json
import sqlite3
import sys
import urllib.request
from decimal import Decimal


def get(url):
    with urllib.request.urlopen(url, timeout=60) as r:
        return json.load(r)


def main():
    http, ds, db, tables = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    proj, dataset = ds.split(".", 1)
    con = sqlite3.connect(db)
    failures = 0
    for t in tables:
        schema = get("%s/bigquery/v2/projects/%s/datasets/%s/tables/%s" % (http, proj, dataset, t))["schema"]["fields"]
        kinds = {f["name"]: f["type"] for f in schema}
        names = [f["name"] for f in schema]

        def canon(c, v, from_bq):
            if v is None:
                return None
            k = kinds[c]
            if k == "JSON":
                return json.dumps(json.loads(v, parse_float=Decimal), sort_keys=True, default=str)
            if k == "BYTES":
                return (base64.b64decode(v) if from_bq else bytes(v)).hex()
            if k in ("INTEGER", "INT64"):
                return int(v)
            if k in ("FLOAT", "FLOAT64"):
                return float(v)
            if k in ("NUMERIC", "BIGNUMERIC"):
                return str(Decimal(str(v)).normalize())
            return v

        got = sorted(json.dumps([canon(c, r.get(c), True) for c in names], default=str)
                     for r in get("%s/_test/rows?table=%s.%s" % (http, ds, t))["rows"])
        q = 'SELECT %s FROM "%s"' % (", ".join('"%s"' % c for c in names), t)
        want = sorted(json.dumps([canon(c, v, False) for c, v in zip(names, r)], default=str) for r in con.execute(q))
        missing = [r for r in want if r not in set(got)]
        extra = [r for r in got if r not in set(want)]
        print("%s: %d rows in BigQuery, %d in SQLite" % (t, len(got), len(want)))
        for r in missing[:5]:
            print("  missing in BigQuery: %s" % r)
        for r in extra[:5]:
            print("  not in SQLite: %s" % r)
        if missing or extra or len(got) != len(want):
            failures += 1
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
