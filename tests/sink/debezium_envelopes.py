"""Raw Debezium change events (no SMT), as the Debezium JDBC sink consumes them, as a kcat -J record file.

The event shape is Debezium's PostgreSQL connector's documented one: key {id}, value the envelope
{before, after, source, op, ts_ms} (JsonConverter, schemas.enable=true) for
public.customers(id int4 PK, email text NOT NULL). Events: create 1, update 1, create 2, delete 1 (op d)
and its tombstone, create 3. With delete.enabled=true the table ends with rows 2 and 3.
"""
import json
T = "dbserver1.public.customers"
KS = {"type": "struct", "fields": [{"type": "int32", "optional": False, "field": "id"}], "optional": False,
      "name": "dbserver1.public.customers.Key"}
ROW = {"type": "struct", "fields": [{"type": "int32", "optional": False, "field": "id"},
                                    {"type": "string", "optional": False, "field": "email"}],
       "optional": True, "name": "dbserver1.public.customers.Value"}
SRC = {"type": "struct", "fields": [{"type": "string", "optional": False, "field": "connector"},
                                    {"type": "string", "optional": False, "field": "db"},
                                    {"type": "string", "optional": False, "field": "schema"},
                                    {"type": "string", "optional": False, "field": "table"},
                                    {"type": "int64", "optional": True, "field": "lsn"}],
       "optional": False, "name": "io.debezium.connector.postgresql.Source"}
ENV = {"type": "struct", "optional": False, "name": "dbserver1.public.customers.Envelope", "fields": [
    dict(ROW, field="before"), dict(ROW, field="after"), dict(SRC, field="source"),
    {"type": "string", "optional": False, "field": "op"}, {"type": "int64", "optional": True, "field": "ts_ms"}]}


def key(i):
    return json.dumps({"schema": KS, "payload": {"id": i}}, separators=(",", ":"))


def env(op, before, after, lsn):
    src = {"connector": "postgresql", "db": "shop", "schema": "public", "table": "customers", "lsn": lsn}
    return json.dumps({"schema": ENV, "payload": {"before": before, "after": after, "source": src, "op": op,
                                                   "ts_ms": 1700000000000 + lsn}}, separators=(",", ":"))


recs = [(0, key(1), env("c", None, {"id": 1, "email": "a@x"}, 100)),
        (1, key(1), env("u", {"id": 1, "email": "a@x"}, {"id": 1, "email": "b@x"}, 101)),
        (2, key(2), env("c", None, {"id": 2, "email": "c@x"}, 102)),
        (3, key(1), env("d", {"id": 1, "email": "b@x"}, None, 103)),
        (4, key(1), None),
        (5, key(3), env("r", None, {"id": 3, "email": "d@x"}, 104))]
for off, k, v in recs:
    print(json.dumps({"topic": T, "partition": 0, "offset": off, "broker": -1, "key": k, "payload": v},
                     separators=(",", ":")))
