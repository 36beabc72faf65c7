#!/usr/bin/env python3
"""cassandra_random_workload.py - a random (seeded) CQL workload on the live
Cassandra node of scripts/servers, for test_it_cassandra_e2e.sh, and the
oracle of it: Cassandra's own SELECT JSON at ALL.

  cassandra_random_workload.py create HOST:PORT KS OUT
      creates keyspace KS (SimpleStrategy, RF 1: the shared node is one node)
      and its two CDC tables; OUT/schema0.cql is DESCRIBE KEYSPACE KS WITH
      INTERNALS before the workload (what a sink configured before the run
      knows: without the columns the ALTER adds later).
  cassandra_random_workload.py run HOST:PORT KS OUT SEED [N]
      N (default 600; the test gives 2000) random statements, each one single-partition mutation
      (so one change event each), ALTER TABLE ... ADD of two columns at the
      middle, and then writes to them. Prints "statements S" (the events the
      sidecar must publish at most), the last two the markers: a row
      p = 1000 in wide, id = 1000 in users. OUT/workload.cql: every statement in order.
      Run by tests/crash/kill_schedule.py, each of the N statements waits at its gate first.
      Then the oracle (scripts/cassandra-fixtures/oracle.py write_oracle, at
      ALL): OUT/schema.cql, OUT/expected/<table>.jsonl: the case directory
      that tests/sink/cassandra_tables.py compares a target with.
  cassandra_random_workload.py drop HOST:PORT KS

The workload: inserts (every column, some given as null), partial updates (a
random subset of the columns), updates setting a column to null, column
deletes, row deletes, range deletes on the clustering columns (c1 range, c1
prefix with a c2 range on the DESC column, open-ended ones, c1 equality),
partition deletes, single-partition UNLOGGED BATCHes of 2-4 of those (one
mutation; a tombstone and a write at one timestamp), sets/maps (element additions and removals, whole
overwrites), lists (appends, prepends, overwrites, element removals by
value), a frozen list, a non-frozen UDT (fields set one by one, to null too), a
frozen tuple, and some writes USING TIMESTAMP in the past (a
write older than what is already there: Cassandra keeps the newer one).
Statement timestamps otherwise come from the driver's monotonic generator.
"""
import os
import random
import sys
import time

from cassandra import ConsistencyLevel
from cassandra.cluster import Cluster
from cassandra.query import SimpleStatement

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts", "cassandra-fixtures"))
import oracle  # noqa: E402  (write_oracle: the fixtures' oracle files)
sys.path.insert(0, os.path.join(HERE, "..", "crash"))
from kill_schedule import Gate  # noqa: E402  (the kill mode of test_it_cassandra_e2e.sh)

ADDR = "CREATE TYPE {ks}.addr (street text, zip int)"
WIDE = ("CREATE TABLE {ks}.wide (p int, c1 int, c2 text, a text, b bigint, f double, s set<text>, "
        "l list<int>, m map<text, int>, fr frozen<list<text>>, u addr, tp frozen<tuple<int, text>>, "
        "PRIMARY KEY (p, c1, c2)) "
        "WITH CLUSTERING ORDER BY (c1 ASC, c2 DESC) AND cdc = true")
USERS = ("CREATE TABLE {ks}.users (id int PRIMARY KEY, name text, age int, score double, tags set<int>, "
         "props map<text, text>, hist list<text>, active boolean) WITH cdc = true")
ADDED = {"wide": [("extra", "text"), ("em", "map<text, int>")], "users": [("nick", "text"), ("badges", "set<int>")]}


def connect(hp):
    host, port = hp.rsplit(":", 1)
    cluster = Cluster([host], port=int(port), connect_timeout=30)
    s = cluster.connect()
    s.default_timeout = 60
    return cluster, s


def describe(s, ks, path):
    with open(path, "w") as f:
        for r in s.execute(SimpleStatement("DESCRIBE KEYSPACE %s WITH INTERNALS" % ks,
                                           consistency_level=ConsistencyLevel.ALL)):
            f.write(r.create_statement.strip() + "\n\n")


class Gen:
    def __init__(self, rnd, ks):
        self.r, self.ks = rnd, ks
        self.added = False

    def txt(self):
        return "'%s'" % self.r.choice(["alpha", "beta", "gamma", "delta", "eps", "it''s", "zeta", "", "ñandú"])

    def val(self, typ):
        r = self.r
        if typ == "text":
            return self.txt()
        if typ in ("int", "bigint"):
            return str(r.randint(-1000, 10**6) if typ == "int" else r.randint(-2**40, 2**40))
        if typ == "double":
            return repr(round(r.uniform(-1e4, 1e4), r.randint(0, 6)))
        if typ == "addr":
            return "{street: %s, zip: %s}" % (self.txt(), r.choice(["null", str(r.randint(0, 99999))]))
        if typ == "frozen<tuple<int, text>>":
            return "(%d, %s)" % (r.randint(-9, 9), r.choice(["null", self.txt()]))
        if typ == "boolean":
            return r.choice(["true", "false"])
        if typ == "set<text>":
            return "{%s}" % ", ".join(sorted({self.txt() for _ in range(r.randint(1, 3))}))
        if typ == "set<int>":
            return "{%s}" % ", ".join(str(x) for x in sorted({r.randint(0, 20) for _ in range(r.randint(1, 3))}))
        if typ in ("list<int>",):
            return "[%s]" % ", ".join(str(r.randint(0, 9)) for _ in range(r.randint(1, 3)))
        if typ in ("list<text>", "frozen<list<text>>"):
            return "[%s]" % ", ".join(self.txt() for _ in range(r.randint(0 if typ.startswith("frozen") else 1, 3)))
        if typ == "map<text, int>":
            return "{%s}" % ", ".join("%s: %d" % (k, r.randint(0, 99)) for k in
                                      sorted({self.txt() for _ in range(r.randint(1, 3))}))
        if typ == "map<text, text>":
            return "{%s}" % ", ".join("%s: %s" % (k, self.txt()) for k in
                                      sorted({self.txt() for _ in range(r.randint(1, 3))}))
        raise ValueError(typ)

    def cols(self, table):
        c = {"wide": [("a", "text"), ("b", "bigint"), ("f", "double"), ("s", "set<text>"), ("l", "list<int>"),
                      ("m", "map<text, int>"), ("fr", "frozen<list<text>>"), ("u", "addr"),
                      ("tp", "frozen<tuple<int, text>>")],
             "users": [("name", "text"), ("age", "int"), ("score", "double"), ("tags", "set<int>"),
                       ("props", "map<text, text>"), ("hist", "list<text>"), ("active", "boolean")]}[table]
        return c + (ADDED[table] if self.added else [])

    def key(self, table):
        r = self.r
        if table == "wide":
            return {"p": str(r.randint(0, 9)), "c1": str(r.randint(0, 5)), "c2": "'%s'" % r.choice("abcde")}
        return {"id": str(r.randint(0, 29))}

    def where(self, k):
        return " AND ".join("%s = %s" % kv for kv in k.items())

    def using(self):
        # now and then a write from the past (older than what is there: it loses where it overlaps)
        if self.r.random() < 0.08:
            return " USING TIMESTAMP %d" % (int(time.time() * 1e6) - self.r.randint(1, 30) * 10**6)
        return ""

    def collection_op(self, name, typ):
        r = self.r
        if typ.startswith("set"):
            v = self.val(typ)
            return r.choice(["%s = %s + %s" % (name, name, v), "%s = %s - %s" % (name, name, v), "%s = %s" % (name, v)])
        if typ.startswith("map"):
            k = self.txt()
            vt = "int" if typ.endswith("int>") else "text"
            return r.choice(["%s[%s] = %s" % (name, k, self.val(vt)), "%s = %s + %s" % (name, name, self.val(typ)),
                             "%s = %s - {%s}" % (name, name, k), "%s = %s" % (name, self.val(typ))])
        if typ.startswith("list"):
            v = self.val(typ)
            # removal by value: Cassandra reads the list and deletes the matching cells
            return r.choice(["%s = %s + %s" % (name, name, v), "%s = %s + %s" % (name, v, name),
                             "%s = %s" % (name, v), "%s = %s - %s" % (name, name, v)])
        if typ == "addr":  # one field of the non-frozen UDT, or all of it
            return r.choice(["%s.street = %s" % (name, r.choice(["null", self.txt()])),
                             "%s.zip = %s" % (name, r.choice(["null", str(r.randint(0, 99999))])),
                             "%s = %s" % (name, self.val(typ))])
        return "%s = %s" % (name, self.val(typ))

    def batch(self):
        """statements on one partition of wide in an UNLOGGED BATCH: one mutation (a tombstone and a
        write at the same timestamp: the tombstone wins, as Cassandra reconciles)"""
        p = str(self.r.randint(0, 9))
        parts = []
        for _ in range(self.r.randint(2, 4)):
            st = self.statement("wide", p)
            while " USING TIMESTAMP " in st:  # one mutation takes one timestamp in the events (docs/formats.md)
                st = self.statement("wide", p)
            parts.append(st)
        return "BEGIN UNLOGGED BATCH %s; APPLY BATCH" % "; ".join(parts)

    def statement(self, table=None, p=None):
        r = self.r
        table = table or r.choice(["wide", "wide", "users"])
        k = self.key(table)
        if p is not None:
            k["p"] = p
        cols = self.cols(table)
        ks = self.ks
        op = r.choices(["insert", "update", "null", "coldel", "rowdel", "range", "partdel", "coll", "mapdel"],
                       [22, 22, 8, 5, 6, 8 if table == "wide" else 0, 2, 20, 4])[0]
        if op == "insert":
            chosen = [c for c in cols if r.random() < 0.7] or [cols[0]]
            names = list(k) + [c for c, _ in chosen]
            vals = list(k.values()) + ["null" if r.random() < 0.1 else self.val(t) for _, t in chosen]
            return "INSERT INTO %s.%s (%s) VALUES (%s)%s" % (ks, table, ", ".join(names), ", ".join(vals), self.using())
        if op == "update":
            chosen = r.sample(cols, r.randint(1, 3))
            return "UPDATE %s.%s%s SET %s WHERE %s" % (ks, table, self.using(),
                                                       ", ".join("%s = %s" % (c, self.val(t)) for c, t in chosen),
                                                       self.where(k))
        if op == "null":
            chosen = r.sample(cols, r.randint(1, 2))
            return "UPDATE %s.%s SET %s WHERE %s" % (ks, table, ", ".join("%s = null" % c for c, _ in chosen),
                                                     self.where(k))
        if op == "coldel":
            chosen = r.sample(cols, r.randint(1, 2))
            return "DELETE %s FROM %s.%s%s WHERE %s" % (", ".join(c for c, _ in chosen), ks, table, self.using(),
                                                        self.where(k))
        if op == "rowdel":
            return "DELETE FROM %s.%s%s WHERE %s" % (ks, table, self.using(), self.where(k))
        if op == "range":
            p = k["p"]
            lo, hi = sorted(r.sample(range(0, 7), 2))
            c2lo, c2hi = sorted(r.sample("abcdef", 2))
            pred = r.choice([
                "c1 >= %d AND c1 < %d" % (lo, hi),
                "c1 > %d AND c1 <= %d" % (lo, hi),
                "c1 > %d" % lo,
                "c1 < %d" % hi,
                "c1 = %d" % lo,
                "c1 = %d AND c2 > '%s'" % (lo, c2lo),
                "c1 = %d AND c2 >= '%s' AND c2 < '%s'" % (lo, c2lo, c2hi),
                "c1 = %d AND c2 <= '%s'" % (lo, c2hi),
            ])
            return "DELETE FROM %s.wide%s WHERE p = %s AND %s" % (ks, self.using(), p, pred)
        if op == "partdel":
            if table == "wide":
                return "DELETE FROM %s.wide%s WHERE p = %s" % (ks, self.using(), k["p"])
            return "DELETE FROM %s.users%s WHERE id = %s" % (ks, self.using(), k["id"])
        multi = [(c, t) for c, t in cols if t[:3] in ("set", "map", "lis", "add")]
        if op == "mapdel":
            c = r.choice([c for c, t in multi if t.startswith("map")])
            return "DELETE %s[%s] FROM %s.%s WHERE %s" % (c, self.txt(), ks, table, self.where(k))
        chosen = r.sample(multi, r.randint(1, 2))
        return "UPDATE %s.%s%s SET %s WHERE %s" % (ks, table, self.using(),
                                                   ", ".join(self.collection_op(c, t) for c, t in chosen),
                                                   self.where(k))


def main():
    cmd, hp, ks = sys.argv[1:4]
    cluster, s = connect(hp)
    try:
        if cmd == "create":
            out = sys.argv[4]
            os.makedirs(out, exist_ok=True)
            s.execute("CREATE KEYSPACE %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}" % ks)
            s.execute(ADDR.format(ks=ks))
            s.execute(WIDE.format(ks=ks))
            s.execute(USERS.format(ks=ks))
            describe(s, ks, os.path.join(out, "schema0.cql"))
        elif cmd == "run":
            out, seed = sys.argv[4], int(sys.argv[5])
            n = int(sys.argv[6]) if len(sys.argv) > 6 else 600
            rec = oracle.Recorder(s, os.path.join(out, "workload.cql"), ConsistencyLevel.ALL, one_line=True)
            g = Gen(random.Random(seed), ks)
            dml = 0
            gate = Gate(n)  # without tests/crash/kill_schedule.py around it: nothing
            for i in range(n):
                gate.step(i)
                if i == n // 2:
                    for t, cols in ADDED.items():
                        rec.run("ALTER TABLE %s.%s ADD (%s)" % (ks, t, ", ".join("%s %s" % c for c in cols)))
                    g.added = True
                rec.run(g.batch() if g.r.random() < 0.05 else g.statement())
                dml += 1
            gate.done()
            # the markers: the last change of each table (the test waits for them in the targets)
            rec.run("INSERT INTO %s.wide (p, c1, c2, a) VALUES (1000, 0, 'end', 'end')" % ks)
            rec.run("INSERT INTO %s.users (id, name) VALUES (1000, 'end')" % ks)
            dml += 2
            rec.close()
            oracle.write_oracle(s, out, ks, {"wide": "p", "users": "id"}, ConsistencyLevel.ALL, tokens=False)
            print("statements %d" % dml)
        elif cmd == "drop":
            s.execute("DROP KEYSPACE IF EXISTS %s" % ks)
        else:
            sys.exit("usage: see the docstring")
    finally:
        cluster.shutdown()


if __name__ == "__main__":
    main()
