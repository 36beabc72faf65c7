"""The source side and the oracle of test_it_debezium_pipeline.sh.

  debezium_pipeline.py ddl SCHEMA TABLE default|full       CREATE TABLE ... (SQL on stdout)
  debezium_pipeline.py workload SCHEMA TABLE SEED N default|full
                                    N random operations, then the seed's 32-operation sequence,
                                    then the fence row
  debezium_pipeline.py feed CONNINFO SEED FILE...   the streamed parts of the workloads (FILE: SQL of
                                    `workload` after the snapshot mark), one transaction after the other on
                                    one connection, the files interleaved at random; each transaction passes
                                    tests/crash/kill_schedule.py's Gate first (the kill mode of the test)
  debezium_pipeline.py applied CONNINFO TARGET...   the fewest records one of the targets' sinks applied
  debezium_pipeline.py compare CONNINFO SCHEMA.TABLE (sqlite:DB:TABLE | pg:SCHEMA.TABLE)...
      every target table equals the source table (exit 0), or the differences (exit 1)

The source table: PostgreSQL's own types as the Debezium PostgreSQL connector sends them with its
defaults (decimal.handling.mode=precise, binary.handling.mode=bytes, jsonb as io.debezium.data.Json):
  id int4 PK, email text NOT NULL, name text, version1 int8 NOT NULL (the seed's
  cdcChangeSequenceNumberField), score float8 (-0 among the values), active bool NOT NULL,
  qty int4, tag text (quotes), amount numeric(12,3), and five TOASTable columns stored EXTERNAL
  (out of line, uncompressed, once a row passes ~2 kB): note text, blob bytea, doc jsonb,
  labels text[], ints int4[]. An UPDATE that leaves them alone sends them, under REPLICA IDENTITY
  DEFAULT, as Debezium's placeholder (__debezium_unavailable_value; bytes of it for bytea, a
  one-element list for text[], the placeholder's bytes as numbers for int4[]).

version1 never decreases for a key over its life, re-inserts and primary-key changes included,
and is sometimes kept (updates and re-inserts that repeat it): the rule the seed's sequence field
needs. The oracle is the source table itself, read back with psql at the end, never a model.
"""
import json
import os
import random
import sqlite3
import subprocess
import sys
from decimal import Decimal

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crash"))
from kill_schedule import Gate  # noqa: E402

COLS = ["id", "email", "name", "version1", "score", "active", "qty", "tag", "amount",
        "note", "blob", "doc", "labels", "ints"]
TOAST = ["note", "blob", "doc", "labels", "ints"]
SNAPSHOT_MARK = "-- the snapshot ends here"
FENCE = 999999  # written last: once a target has it, it has read the whole topic


def ddl(schema, table, ident):
    t = f"{schema}.{table}"
    print(f"""CREATE TABLE {t} (id int4 PRIMARY KEY, email text NOT NULL, name text, version1 int8 NOT NULL,
  score float8, active bool NOT NULL, qty int4, tag text, amount numeric(12,3),
  note text, blob bytea, doc jsonb, labels text[], ints int4[]);""")
    print(f"ALTER TABLE {t} " + ", ".join(f"ALTER {c} SET STORAGE EXTERNAL" for c in TOAST) + ";")
    if ident == "full":
        print(f"ALTER TABLE {t} REPLICA IDENTITY FULL;")


def q(s):
    return "'" + s.replace("'", "''") + "'"


class Work:
    def __init__(self, schema, table, seed, ident):
        self.t = f"{schema}.{table}"
        self.default_ident = ident == "default"
        self.big = {}  # per key: its columns stored out of line (TOASTed)
        self.r = random.Random(seed)
        self.present = {}
        self.last_ver = {}
        self.out = []

    def next_ver(self, i, keep):
        v = self.last_ver.get(i, 0)
        if not keep or v == 0:
            v += 1 + self.r.randrange(3)
        self.last_ver[i] = v
        return v

    def toast_vals(self, small=False):
        """SQL literals of the five TOASTable columns: null, small or big (out of line);
        self.last_big: the columns given big values."""
        r = self.r
        out = {}
        self.last_big = set()
        for c in TOAST:
            k = r.randrange(5)
            if k == 0:
                out[c] = "NULL"
                continue
            big = k >= 2 and not small
            if big:
                self.last_big.add(c)
            if c == "note":
                out[c] = q("note " + "".join(r.choice("0123456789abcdef") for _ in range(3000 if big else 20)))
            elif c == "blob":
                out[c] = "'\\x" + bytes(r.randrange(256) for _ in range(2600 if big else 8)).hex() + "'::bytea"
            elif c == "doc":
                d = {"k": r.randrange(1000), "s": "".join(r.choice("xyz\"'\\") for _ in range(8)),
                     "pad": "".join(r.choice("0123456789") for _ in range(2600 if big else 4)), "n": None}
                out[c] = q(json.dumps(d)) + "::jsonb"
            elif c == "labels":
                n = 90 if big else 2
                out[c] = "ARRAY[" + ",".join(q("L%d-%s" % (j, "".join(r.choice("abc,{}\" ") for _ in range(28))))
                                             for j in range(n)) + "]::text[]"
            else:
                n = 800 if big else 3
                out[c] = "ARRAY[" + ",".join(str(r.randrange(-10**6, 10**6)) for _ in range(n)) + "]::int4[]"
        return out

    def plain_vals(self):
        r = self.r
        sc = r.choice(["NULL", "'-0'::float8", str(r.randrange(-50000, 50000) / 8.0), "1e300"])
        return {
            "email": q("u%d@x.org" % r.randrange(1000)),
            "name": "NULL" if r.randrange(4) == 0 else q("N%d" % r.randrange(100000)),
            "score": sc,
            "active": r.choice(["true", "false"]),
            "qty": "NULL" if r.randrange(2) else str(r.randrange(-1000, 1000)),
            "tag": "NULL" if r.randrange(2) else q("t\"'%d" % r.randrange(50)),
            "amount": "NULL" if r.randrange(4) == 0 else "%d.%03d" % (r.randrange(-10**8, 10**8), r.randrange(1000)),
        }

    def insert(self, i, keep=False):
        v = {"id": str(i), "version1": str(self.next_ver(i, keep))}
        v.update(self.plain_vals())
        v.update(self.toast_vals())
        self.big[i] = set(self.last_big)
        self.out.append(f"INSERT INTO {self.t} ({','.join(COLS)}) VALUES ({','.join(v[c] for c in COLS)});")
        self.present[i] = True

    def update(self, i, keep=False, keep_toast=True):
        v = self.plain_vals()
        v["version1"] = str(self.next_ver(i, keep))
        if not keep_toast:  # some of the TOASTable columns change, the others stay
            tv = self.toast_vals()
            for c in self.r.sample(TOAST, self.r.randrange(1, len(TOAST) + 1)):
                v[c] = tv[c]
                self.big[i].discard(c)
                if c in self.last_big:
                    self.big[i].add(c)
        self.out.append(f"UPDATE {self.t} SET " + ", ".join(f"{c} = {x}" for c, x in v.items()) + f" WHERE id = {i};")

    def toast(self, i):  # only qty and the version: every TOASTed column unchanged
        self.out.append(f"UPDATE {self.t} SET qty = {self.r.randrange(-1000, 1000)}, "
                        f"version1 = {self.next_ver(i, False)} WHERE id = {i};")

    def delete(self, i):
        self.out.append(f"DELETE FROM {self.t} WHERE id = {i};")
        self.present[i] = False

    def keychange(self, i, n):  # Debezium: delete of i, its tombstone, create of n
        v = max(self.next_ver(n, False), self.last_ver.get(i, 0))
        self.last_ver[n] = v
        sets = f"id = {n}, version1 = {v}"
        if self.default_ident and self.big.get(i):
            # Under REPLICA IDENTITY DEFAULT the create of the new key carries the
            # placeholder for a TOASTed column the UPDATE left alone, and the stored
            # row it stands for is the old key's, which the delete before it removed
            # (only the __debezium.oldkey header names it): cdc-sink refuses such a
            # create (an error; docs/operations.md). So such a key change here also
            # writes those columns (small values, sent in full); the FULL table moves
            # TOASTed rows as they are.
            tv = self.toast_vals(small=True)
            sets += "".join(f", {c} = {tv[c]}" for c in sorted(self.big[i]))
        self.big[n] = set() if self.default_ident else self.big.get(i, set())
        self.out.append(f"UPDATE {self.t} SET {sets} WHERE id = {i};")
        self.present[i], self.present[n] = False, True

    def step(self, nkeys):
        r = self.r
        i = r.randrange(nkeys)
        d = r.randrange(100)
        if not self.present.get(i):
            self.insert(i, keep=i in self.last_ver and d < 20)  # a re-insert may repeat the version
        elif d < 18:
            self.delete(i)
        elif d < 23:
            n = r.randrange(nkeys)
            if not self.present.get(n):
                self.keychange(i, n)
        elif d < 38:
            self.toast(i)
        else:
            self.update(i, keep=d < 55, keep_toast=d % 2 == 0)

    def seed32(self, b):
        """The seed's 32-operation sequence (tests/sink/sqlite/test_sink_sqlite.c seed32):
        INSERT, UPDATE, DELETE, RE-INSERT and deletes that repeat the version, on keys b+1..b+6."""
        I, U, D, T, K = self.insert, self.update, self.delete, self.toast, self.keychange
        I(b + 1); I(b + 2); U(b + 1, False, False); U(b + 1, True, True); D(b + 2)
        I(b + 2, True); U(b + 2, False, False); D(b + 1); I(b + 1, True); U(b + 1, True, False)
        I(b + 3); D(b + 3); I(b + 3); U(b + 3, True, False); U(b + 3, True, True)
        D(b + 3); I(b + 4); T(b + 4); K(b + 4, b + 5); U(b + 5, False, False)
        D(b + 2); I(b + 2); D(b + 2); I(b + 2, True); U(b + 1, False, True)
        D(b + 1); I(b + 6); U(b + 6, True, False); K(b + 6, b + 4); T(b + 4)
        U(b + 2, True, True); D(b + 5)


def workload(schema, table, seed, n, ident):
    w = Work(schema, table, seed, ident)
    nkeys = 40
    i, marked = 0, False
    while i < n:  # mostly one operation per transaction, sometimes several in one
        k = 1 if w.r.randrange(4) else w.r.randrange(2, 6)
        if k > 1:
            w.out.append("BEGIN;")
        for _ in range(min(k, n - i)):
            w.step(nkeys)
        i += k
        if k > 1:
            w.out.append("COMMIT;")
        if not marked and i >= n // 10:  # what the connector's initial snapshot reads
            w.out.append(SNAPSHOT_MARK)
            marked = True
    w.seed32(1000)
    w.insert(FENCE)
    print("\n".join(w.out))


def transactions(path):
    """the statements of a workload file, a BEGIN ... COMMIT block as one"""
    out, block = [], None
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("--"):
                continue
            if line == "BEGIN;":
                block = [line]
            elif block is not None:
                block.append(line)
                if line == "COMMIT;":
                    out.append("\n".join(block))
                    block = None
            else:
                out.append(line)
    return out


def feed(conninfo, seed, paths):
    queues = [transactions(p) for p in paths]
    r = random.Random(seed)
    order = [i for i, q in enumerate(queues) for _ in q]
    r.shuffle(order)  # the files interleaved; each file's own order kept
    gate = Gate(len(order))
    psql = subprocess.Popen(["psql", conninfo, "-XAtq", "-v", "ON_ERROR_STOP=1"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    pos = [0] * len(queues)
    for n, i in enumerate(order):
        gate.step(n)
        psql.stdin.write(queues[i][pos[i]] + "\n\\echo fed\n")
        psql.stdin.flush()
        pos[i] += 1
        if psql.stdout.readline().strip() != "fed":
            sys.exit(f"feed: psql failed at transaction {n} ({paths[i]})")
    gate.done()
    psql.stdin.close()
    sys.exit(psql.wait())


# ---------------------------------------------------------------- the comparison

def norm(c, v):
    """One cell in one form whatever the database stored it as."""
    if v is None:
        return None
    if c in ("id", "version1", "qty"):
        return int(v)
    if c == "score":
        return float(v)
    if c == "active":
        return v in (True, 1, "1", "t", "true")
    if c == "amount":
        return Decimal(str(v))
    if c == "blob":
        return v.hex() if isinstance(v, (bytes, memoryview)) else str(v)
    if c in ("doc", "labels", "ints"):
        return json.loads(v) if isinstance(v, str) else v
    return str(v)


def psql_json(conninfo, sql):
    out = subprocess.run(["psql", conninfo, "-XAtq", "-v", "ON_ERROR_STOP=1", "-c", sql],
                         check=True, capture_output=True, text=True).stdout
    return [json.loads(l, parse_float=Decimal) for l in out.splitlines() if l.strip()]


def pg_rows(conninfo, qual):
    schema, table = qual.split(".", 1)
    types = dict((r["column_name"], r["data_type"]) for r in psql_json(conninfo,
                 "SELECT row_to_json(c) FROM (SELECT column_name, data_type FROM information_schema.columns "
                 f"WHERE table_schema = '{schema}' AND table_name = '{table}') c"))
    if not types:
        return None
    exprs = []
    for c in COLS:
        if c not in types:
            exprs.append(f"NULL AS {c}")  # a missing column: a difference below unless every value is null
        elif types[c] == "bytea":
            exprs.append(f"encode(\"{c}\", 'hex') AS {c}")
        else:
            exprs.append(f"\"{c}\" AS {c}")
    rows = psql_json(conninfo, f"SELECT row_to_json(t) FROM (SELECT {', '.join(exprs)} FROM \"{schema}\".\"{table}\") t")
    return {int(r["id"]): {c: norm(c, r[c]) for c in COLS} for r in rows}


def sqlite_rows(db, table):
    con = sqlite3.connect(db, timeout=10)
    try:
        have = [r[1] for r in con.execute(f'PRAGMA table_info("{table}")')]
        if not have:
            return None
        sel = ", ".join(f'"{c}"' if c in have else "NULL" for c in COLS)
        return {int(r[0]): {c: norm(c, x) for c, x in zip(COLS, r)}
                for r in con.execute(f'SELECT {sel} FROM "{table}"')}
    finally:
        con.close()


def compare(conninfo, source, targets):
    want = pg_rows(conninfo, source)
    bad = 0
    for tgt in targets:
        kind, rest = tgt.split(":", 1)
        got = sqlite_rows(*rest.rsplit(":", 1)) if kind == "sqlite" else pg_rows(conninfo, rest)
        if got is None:
            print(f"{tgt}: no such table")
            bad += 1
            continue
        diffs = []
        for i in sorted(set(want) | set(got)):
            if i not in got:
                diffs.append(f"id {i}: missing")
            elif i not in want:
                diffs.append(f"id {i}: kept although the source deleted it")
            elif got[i] != want[i]:
                cs = [c for c in COLS if got[i][c] != want[i][c]]
                diffs.append(f"id {i}: columns {', '.join(cs)} differ (" +
                             "; ".join(f"{c} {str(got[i][c])[:60]!s} want {str(want[i][c])[:60]!s}" for c in cs) + ")")
        if diffs:
            bad += 1
            print(f"{tgt}: {len(diffs)} of {len(want)} rows differ from {source}:")
            for d in diffs[:15]:
                print("   ", d)
        else:
            print(f"{tgt}: {len(got)} rows, equal to {source}")
    return 1 if bad else 0


def has_fence(conninfo, target):
    kind, rest = target.split(":", 1)
    try:
        if kind == "sqlite":
            db, table = rest.rsplit(":", 1)
            con = sqlite3.connect(db, timeout=10)
            try:
                return con.execute(f'SELECT 1 FROM "{table}" WHERE id = {FENCE}').fetchone() is not None
            finally:
                con.close()
        schema, table = rest.split(".", 1)
        out = subprocess.run(["psql", conninfo, "-XAtq", "-c", f'SELECT 1 FROM "{schema}"."{table}" WHERE id = {FENCE}'],
                             capture_output=True, text=True).stdout
        return out.strip() == "1"
    except sqlite3.Error:
        return False


def applied(conninfo, targets):
    """the fewest records any of the targets' sinks applied (their _cdcflow_positions)"""
    counts = []
    for tgt in targets:
        kind, rest = tgt.split(":", 1)
        try:
            if kind == "sqlite":
                con = sqlite3.connect(rest.rsplit(":", 1)[0], timeout=10)
                try:
                    counts.append(con.execute("SELECT coalesce(sum(next_offset), 0) FROM _cdcflow_positions")
                                  .fetchone()[0])
                finally:
                    con.close()
            else:
                out = subprocess.run(["psql", conninfo, "-XAtq", "-c", "SELECT coalesce(sum(next_offset), 0) FROM "
                                      f'"{rest.split(".", 1)[0]}"._cdcflow_positions'],
                                     capture_output=True, text=True).stdout.strip()
                counts.append(int(out) if out.isdigit() else 0)
        except sqlite3.Error:
            counts.append(0)
    return min(counts)


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[0] == "ddl":
        ddl(a[1], a[2], a[3])
    elif a[0] == "workload":
        workload(a[1], a[2], int(a[3]), int(a[4]), a[5])
    elif a[0] == "applied":  # applied CONNINFO TARGET...: the fewest records a target's sink applied
        print(applied(a[1], sorted(set(a[2:]))))
    elif a[0] == "feed":
        feed(a[1], int(a[2]), a[3:])
    elif a[0] == "compare":
        sys.exit(compare(a[1], a[2], a[3:]))
    elif a[0] == "fenced":  # fenced CONNINFO TARGET...: exit 0 when every target has the fence row
        sys.exit(0 if all(has_fence(a[1], t) for t in a[2:]) else 1)
    else:
        sys.exit("unknown command " + a[0])
