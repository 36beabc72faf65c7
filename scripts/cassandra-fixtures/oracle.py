"""What a live Cassandra says about a fixture workload: the oracle files the tests
compare our decoding with (used by workload.py and workload_rf3.py).

  Recorder(session, path, cl, one_line)   runs literal CQL and logs it to workload.cql
  write_oracle(session, out, ks, pk, cl)  writes, for keyspace ks:
      schema.cql            DESCRIBE KEYSPACE ks WITH INTERNALS (table ids, dropped columns)
      system_schema.json    system_schema.{keyspaces,tables,columns,dropped_columns,types} rows
      expected/<t>.jsonl    SELECT JSON * of every table t of `pk` (or the columns `select` names)
      tokens.jsonl          SELECT DISTINCT pk, token(pk) per table
  every read at consistency level cl (ALL for a cluster: every replica's data merged).
"""
import json
import os

from cassandra.query import SimpleStatement


class Recorder:
    """Executes literal CQL at one consistency level and appends it to the log.
    one_line: each statement on one line (whitespace runs collapsed, so no
    string literal of the workload may hold two spaces), so that a statement's
    number is its line number among the non-comment lines."""

    def __init__(self, session, path, cl, one_line=False):
        self.session, self.cl, self.one_line = session, cl, one_line
        self.log = open(path, "w")
        self.count = 0

    def run(self, cql):
        text = " ".join(cql.split()) if self.one_line else cql.strip()
        self.log.write(text + ";\n")
        self.log.flush()
        self.count += 1
        return self.session.execute(SimpleStatement(cql, consistency_level=self.cl))

    def comment(self, text):
        self.log.write("-- " + text + "\n")
        self.log.flush()

    def close(self):
        self.log.close()


def write_oracle(session, out, ks, pk, cl, select=None, tokens=True):
    """pk: table -> its partition key columns ("a, b"); select: table -> the
    columns of expected/<table>.jsonl when not all (default *). tokens=False:
    no tokens.jsonl (Cassandra 5.0.5 run with -ea, as scripts/cassandra-node
    does, can fail the SELECT DISTINCT on a table after many partition
    deletions: "The UnfilteredRowIterator returned by the last call to next()
    was initialized", a ReadFailure)."""
    select = select or {}
    os.makedirs(os.path.join(out, "expected"), exist_ok=True)

    def q(cql):
        return session.execute(SimpleStatement(cql, consistency_level=cl))

    with open(os.path.join(out, "schema.cql"), "w") as f:
        for r in q(f"DESCRIBE KEYSPACE {ks} WITH INTERNALS"):
            f.write(r.create_statement.strip() + "\n\n")
    schema = {}
    for t in ("keyspaces", "tables", "columns", "dropped_columns", "types"):
        rows = q(f"SELECT JSON * FROM system_schema.{t} WHERE keyspace_name = '{ks}'")
        schema[t] = [json.loads(r[0]) for r in rows]
    with open(os.path.join(out, "system_schema.json"), "w") as f:
        json.dump(schema, f, indent=1, sort_keys=True)
        f.write("\n")
    with open(os.path.join(out, "tokens.jsonl"), "w") as tf:
        for table, cols in pk.items():
            with open(os.path.join(out, "expected", table + ".jsonl"), "w") as f:
                for r in q(f"SELECT JSON {select.get(table, '*')} FROM {ks}.{table}"):
                    f.write(r[0] + "\n")
            for r in q(f"SELECT DISTINCT {cols}, token({cols}) AS t FROM {ks}.{table}") if tokens else []:
                d = r._asdict()
                tf.write(json.dumps({"table": table, "key": {k: d[k] for k in cols.split(", ")}, "token": d["t"]},
                                    sort_keys=True) + "\n")
