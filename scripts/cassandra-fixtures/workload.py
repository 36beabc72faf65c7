#!/usr/bin/python3
"""CQL workload for the Cassandra CDC fixtures (run by scripts/make-cassandra-fixtures).

Writes, through Debian's python3-cassandra driver, every CQL type and every kind
of change the commit log can hold into keyspace `cdcks` of a live node, then
records what Cassandra itself says about the result, as the oracle for the
commit log reader:
  schema.cql            DESCRIBE KEYSPACE cdcks WITH INTERNALS (with table ids,
                        dropped columns as ALTER TABLE ... DROP ... USING TIMESTAMP)
  system_schema.json    the rows of system_schema.{keyspaces,tables,columns,
                        dropped_columns,types} for cdcks, as SELECT JSON returns them
  expected/<table>.jsonl  SELECT JSON * of every table after the workload
  tokens.jsonl          SELECT token(...) per partition key (Murmur3 oracle)
  workload.cql          every statement executed, in order (literal CQL)

Statements are literal CQL (no bound values) so that the driver's own type
support (it predates vector) does not matter, and carry USING TIMESTAMP where
CQL allows it so write times are known.
usage: workload.py HOST PORT OUTDIR
"""
import os
import sys
import time

from cassandra.cluster import Cluster
from cassandra import ConsistencyLevel

from oracle import Recorder, write_oracle

host, port, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
os.makedirs(out, exist_ok=True)
cluster = Cluster([host], port=port, connect_timeout=30, control_connection_timeout=30)
session = cluster.connect()
session.default_timeout = 60
rec = Recorder(session, os.path.join(out, "workload.cql"), ConsistencyLevel.ONE)
run = rec.run


TS = 1700000000000000  # microseconds; every USING TIMESTAMP is TS + n


def ts(n):
    return TS + n * 1000


# ---------------------------------------------------------------- schema
run("CREATE KEYSPACE cdcks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
run("CREATE TYPE cdcks.address (street text, \"Zip Code\" int, tags frozen<set<text>>)")
run("CREATE TYPE cdcks.person (name text, home frozen<address>, phones frozen<list<text>>)")
run("""CREATE TABLE cdcks.all_types (
    id int, bucket text, ck1 timeuuid, ck2 text,
    s_note text static,
    s_count int static,
    c_ascii ascii, c_bigint bigint, c_blob blob, c_boolean boolean, c_date date,
    c_decimal decimal, c_double double, c_duration duration, c_float float, c_inet inet,
    c_int int, c_smallint smallint, c_text text, c_time time, c_timestamp timestamp,
    c_timeuuid timeuuid, c_tinyint tinyint, c_uuid uuid, c_varchar varchar, c_varint varint,
    c_list list<text>, c_set set<int>, c_map map<text, int>,
    c_frozen_list frozen<list<int>>, c_frozen_map frozen<map<int, text>>,
    c_nested map<text, frozen<list<int>>>,
    c_tuple tuple<int, text, frozen<list<int>>>,
    c_udt address, c_frozen_udt frozen<person>, c_udt_list list<frozen<address>>,
    c_vector vector<float, 3>, c_vector_text vector<text, 2>,
    "Quoted Col" text,
    PRIMARY KEY ((id, bucket), ck1, ck2)
) WITH CLUSTERING ORDER BY (ck1 DESC, ck2 ASC) AND cdc = true""")
run("""CREATE TABLE cdcks.events (
    p int, seq int, sub text, v text, PRIMARY KEY (p, seq, sub)
) WITH cdc = true""")
run("CREATE TABLE cdcks.simple (k text PRIMARY KEY, v int, m map<int, text>, dropme text) WITH cdc = true")
run("CREATE TABLE cdcks.counters (k text, b int, c1 counter, c2 counter, PRIMARY KEY (k, b)) WITH cdc = true")
run("CREATE TABLE cdcks.plain (k text PRIMARY KEY, v text)")  # cdc = false: shares batches with simple
time.sleep(1)

U1 = "50554d6e-29bb-11e5-b345-feff819cdc9f"
U2 = "50554d6e-29bb-11e5-b345-feff819cdc9e"
UUID = "123e4567-e89b-12d3-a456-426614174000"

# ---------------------------------------------------------------- all_types
run(f"""INSERT INTO cdcks.all_types (id, bucket, ck1, ck2, s_note, s_count, c_ascii, c_bigint, c_blob,
    c_boolean, c_date, c_decimal, c_double, c_duration, c_float, c_inet, c_int, c_smallint, c_text,
    c_time, c_timestamp, c_timeuuid, c_tinyint, c_uuid, c_varchar, c_varint, c_list, c_set, c_map,
    c_frozen_list, c_frozen_map, c_nested, c_tuple, c_udt, c_frozen_udt, c_udt_list, c_vector,
    c_vector_text, "Quoted Col")
  VALUES (1, 'a', {U1}, 'x', 'static note', 7, 'ascii text', -9223372036854775808, 0xcafebabe00ff,
    true, '2024-02-29', -12345.6789, 3.141592653589793, 1y2mo3w4d5h6m7s8ms9us10ns, -1.5,
    '2001:db8::ff00:42:8329', -2147483648, -32768, 'héllo wörld ✓', '13:14:15.123456789',
    '2024-02-29 12:34:56.789+0000', {U2}, -128, {UUID}, 'varchar text',
    123456789012345678901234567890, ['l1', 'l2', 'l3'], {{3, 1, 2}}, {{'a': 1, 'b': 2}},
    [1, 2, 3], {{1: 'one', 2: 'two'}}, {{'n1': [1, 2], 'n2': []}}, (42, 'tuple text', [7, 8]),
    {{street: 'Main St 1', "Zip Code": 12345, tags: {{'home', 'work'}}}},
    {{name: 'Ann', home: {{street: 'Elm', "Zip Code": 1, tags: {{}}}}, phones: ['+1', '+2']}},
    [{{street: 'S1', "Zip Code": 1, tags: {{'t'}}}}], [1.0, -2.5, 3.25], ['v1', 'v2'], 'quoted value')
  USING TIMESTAMP {ts(1)}""")
# a second row in the same partition, and a row with a TTL
run(f"""INSERT INTO cdcks.all_types (id, bucket, ck1, ck2, c_int, c_text) VALUES (1, 'a', {U1}, 'y', 5, 'second')
  USING TIMESTAMP {ts(2)}""")
run(f"""INSERT INTO cdcks.all_types (id, bucket, ck1, ck2, c_int, c_text, c_list) VALUES (2, 'b', {U2}, 'z', 6, 'with ttl', ['t'])
  USING TTL 86400 AND TIMESTAMP {ts(3)}""")
# UPDATE (no row liveness), cell-level TTL
run(f"UPDATE cdcks.all_types USING TIMESTAMP {ts(4)} SET c_bigint = 9223372036854775807, c_boolean = false WHERE id = 1 AND bucket = 'a' AND ck1 = {U1} AND ck2 = 'x'")
run(f"UPDATE cdcks.all_types USING TTL 3600 AND TIMESTAMP {ts(5)} SET c_varchar = 'expiring' WHERE id = 1 AND bucket = 'a' AND ck1 = {U1} AND ck2 = 'y'")
# collections: append, prepend, add, remove, put, element delete, overwrite
run(f"UPDATE cdcks.all_types USING TIMESTAMP {ts(6)} SET c_list = c_list + ['l4'], c_set = c_set + {{9}}, c_map['c'] = 3 WHERE id = 1 AND bucket = 'a' AND ck1 = {U1} AND ck2 = 'x'")
run(f"UPDATE cdcks.all_types USING TIMESTAMP {ts(7)} SET c_list = ['l0'] + c_list, c_set = c_set - {{1}} WHERE id = 1 AND bucket = 'a' AND ck1 = {U1} AND ck2 = 'x'")
run(f"DELETE c_map['a'] FROM cdcks.all_types USING TIMESTAMP {ts(8)} WHERE id = 1 AND bucket = 'a' AND ck1 = {U1} AND ck2 = 'x'")
run(f"UPDATE cdcks.all_types USING TIMESTAMP {ts(9)} SET c_list = c_list - ['l2'] WHERE id = 1 AND bucket = 'a' AND ck1 = {U1} AND ck2 = 'x'")
run(f"UPDATE cdcks.all_types USING TIMESTAMP {ts(10)} SET c_nested = {{'only': [9]}} WHERE id = 1 AND bucket = 'a' AND ck1 = {U1} AND ck2 = 'y'")
# non-frozen UDT: one field, the whole value
run(f"UPDATE cdcks.all_types USING TIMESTAMP {ts(11)} SET c_udt.street = 'Main St 2' WHERE id = 1 AND bucket = 'a' AND ck1 = {U1} AND ck2 = 'x'")
run(f"UPDATE cdcks.all_types USING TIMESTAMP {ts(12)} SET c_udt = {{street: 'Other', \"Zip Code\": 99}} WHERE id = 1 AND bucket = 'a' AND ck1 = {U1} AND ck2 = 'y'")
# static column only
run(f"UPDATE cdcks.all_types USING TIMESTAMP {ts(13)} SET s_note = 'static 2', s_count = 8 WHERE id = 1 AND bucket = 'a'")
# cell deletes and a null written by INSERT (a tombstone cell)
run(f"DELETE c_text, c_blob FROM cdcks.all_types USING TIMESTAMP {ts(14)} WHERE id = 1 AND bucket = 'a' AND ck1 = {U1} AND ck2 = 'x'")
run(f"INSERT INTO cdcks.all_types (id, bucket, ck1, ck2, c_int, c_text) VALUES (1, 'a', {U2}, 'n', 1, null) USING TIMESTAMP {ts(15)}")
# row delete, partition delete
run(f"DELETE FROM cdcks.all_types USING TIMESTAMP {ts(16)} WHERE id = 1 AND bucket = 'a' AND ck1 = {U2} AND ck2 = 'n'")
run(f"INSERT INTO cdcks.all_types (id, bucket, ck1, ck2, c_int) VALUES (3, 'c', {U1}, 'gone', 3) USING TIMESTAMP {ts(17)}")
run(f"DELETE FROM cdcks.all_types USING TIMESTAMP {ts(18)} WHERE id = 3 AND bucket = 'c'")
# empty values: an empty text and an empty blob
run(f"INSERT INTO cdcks.all_types (id, bucket, ck1, ck2, c_text, c_blob, c_ascii) VALUES (4, '', {U1}, '', '', 0x, '') USING TIMESTAMP {ts(19)}")

# ---------------------------------------------------------------- events: range tombstones
for seq in range(1, 10):
    for sub in ("a", "b"):
        run(f"INSERT INTO cdcks.events (p, seq, sub, v) VALUES (1, {seq}, '{sub}', 'v{seq}{sub}') USING TIMESTAMP {ts(100 + seq)}")
run(f"DELETE FROM cdcks.events USING TIMESTAMP {ts(120)} WHERE p = 1 AND seq >= 3 AND seq < 5")
run(f"DELETE FROM cdcks.events USING TIMESTAMP {ts(121)} WHERE p = 1 AND seq = 7")
run(f"DELETE FROM cdcks.events USING TIMESTAMP {ts(122)} WHERE p = 1 AND seq = 8 AND sub > 'a'")
run(f"DELETE FROM cdcks.events USING TIMESTAMP {ts(123)} WHERE p = 1 AND seq > 8")
run(f"INSERT INTO cdcks.events (p, seq, sub, v) VALUES (2, 1, 'a', 'p2') USING TIMESTAMP {ts(124)}")
run(f"DELETE FROM cdcks.events USING TIMESTAMP {ts(125)} WHERE p = 2")

# ---------------------------------------------------------------- simple, plain, batches, ALTER
run(f"INSERT INTO cdcks.simple (k, v, m, dropme) VALUES ('k1', 1, {{1: 'a', 2: 'b'}}, 'soon dropped') USING TIMESTAMP {ts(200)}")
run(f"INSERT INTO cdcks.simple (k, v) VALUES ('ttl', 2) USING TTL 100000 AND TIMESTAMP {ts(201)}")
run(f"UPDATE cdcks.simple USING TIMESTAMP {ts(202)} SET m = {{3: 'c'}} WHERE k = 'k1'")
# a logged batch mixing the CDC table `simple` and the non-CDC table `plain` on one
# partition key: one Mutation with two PartitionUpdates (Debezium's dbz#2388 case)
run(f"""BEGIN BATCH USING TIMESTAMP {ts(203)}
  INSERT INTO cdcks.simple (k, v) VALUES ('both', 10);
  INSERT INTO cdcks.plain (k, v) VALUES ('both', 'not captured');
APPLY BATCH""")
run(f"""BEGIN UNLOGGED BATCH USING TIMESTAMP {ts(204)}
  UPDATE cdcks.simple SET v = 11 WHERE k = 'both';
  INSERT INTO cdcks.simple (k, v) VALUES ('other', 12);
APPLY BATCH""")
run(f"INSERT INTO cdcks.plain (k, v) VALUES ('alone', 'not captured') USING TIMESTAMP {ts(205)}")
run("ALTER TABLE cdcks.simple ADD added bigint")
time.sleep(1)
run(f"INSERT INTO cdcks.simple (k, v, added) VALUES ('after_add', 13, 77) USING TIMESTAMP {ts(206)}")
run("ALTER TABLE cdcks.simple DROP dropme")
time.sleep(1)
run(f"INSERT INTO cdcks.simple (k, v) VALUES ('after_drop', 14) USING TIMESTAMP {ts(207)}")

# ---------------------------------------------------------------- counters
run("UPDATE cdcks.counters SET c1 = c1 + 5, c2 = c2 - 3 WHERE k = 'c' AND b = 1")
run("UPDATE cdcks.counters SET c1 = c1 + 1 WHERE k = 'c' AND b = 1")
run("UPDATE cdcks.counters SET c2 = c2 + 100 WHERE k = 'c' AND b = 2")
run("BEGIN COUNTER BATCH UPDATE cdcks.counters SET c1 = c1 + 2 WHERE k = 'd' AND b = 1; APPLY BATCH")
# ---------------------------------------------------------------- bulk (rollover cases)
# CF_WORKLOAD_BULK=N adds N rows of ~1 KiB to cdcks.bulk so the CDC data spans
# several 1 MiB segments (v = n repeated as 'v<n>' then 'x' * 1000).
BULK = int(os.environ.get("CF_WORKLOAD_BULK", "0"))
if BULK:
    run("CREATE TABLE cdcks.bulk (k int PRIMARY KEY, n int, v text) WITH cdc = true")
    time.sleep(1)
    for i in range(BULK):
        session.execute(f"INSERT INTO cdcks.bulk (k, n, v) VALUES ({i}, {i}, 'v{i}{'x' * 1000}') USING TIMESTAMP {ts(1000 + i)}")
    rec.comment(f"{BULK} x INSERT INTO cdcks.bulk (k, n, v) VALUES (i, i, 'v<i>' || 1000 * 'x') USING TIMESTAMP {ts(1000)} + i*1000;")
rec.close()

# ---------------------------------------------------------------- what Cassandra says
pk = {"all_types": "id, bucket", "events": "p", "simple": "k", "counters": "k", "plain": "k"}
if BULK:
    pk["bulk"] = "k"
# bulk: k and n only (v is 'v<n>' followed by 1000 'x')
write_oracle(session, out, "cdcks", pk, ConsistencyLevel.ONE, select={"bulk": "k, n"})
cluster.shutdown()
