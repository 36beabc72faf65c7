#!/usr/bin/python3
"""CQL workload of the RF=3 fixtures (scripts/make-cassandra-rf3-fixtures) and of
the cluster test (tests/cassandra/test_cluster_cdc_raw.sh), on a live three-node
cluster (scripts/cassandra-cluster), through Debian's python3-cassandra driver.

  workload_rf3.py OUTDIR
  environment:
    CF_RF3_HOSTS      the nodes, "addr:port,addr:port,addr:port" (node1 first)
    CF_RF3_KEYSPACE   default cdcks
    CF_RF3_DOWN       a node number: that node is stopped during phase B
                      (before its first statement, started again after its last)
    CF_RF3_STOP_NODE, CF_RF3_START_NODE   commands to which the node number is
                      appended (scripts/cassandra-cluster stop-node|start-node DIR)

Keyspace: NetworkTopologyStrategy {'datacenter1': 3}. Tables `users` (a UDT, a
frozen UDT, set, map, list, TTLs; `age` added mid-run by ALTER TABLE ADD) and
`events` (clustering columns, a static column, range/row/partition deletes),
both `cdc = true`, and `probe` (cdc = false: the writes at ALL that prove every
replica is up). Every table has read_repair = 'NONE': the reads at ALL that make
expected/ must not write repairs into a node that missed writes (a repair is a
mutation of its own and would land in that node's cdc_raw).

Every data statement is written at QUORUM through node1 (the coordinator; it
stays up) and carries USING TIMESTAMP TS + n * 1000, n its statement number, so
a node's copies can be told apart by timestamp. Phases:
  A  schema, inserts, partial updates, collections, UDT, TTLs, deletes, a logged
     batch putting `users` and `events` into one mutation, ALTER TABLE ADD, then
     writes of the new column, 100 small rows
  B  35 statements of every kind (the down window: CF_RF3_DOWN's node misses them)
  C  20 statements, several on rows phase B wrote
Writes (OUTDIR): workload.cql (one statement a line, `--` comments where a node
stops or starts), phases.json (first/last statement number and timestamp of each
phase, which node was down), ring.json (each node's address, token, host id,
data centre, rack), and the oracle files of oracle.py: schema.cql,
system_schema.json, expected/<table>.jsonl, tokens.jsonl, all read at ALL.
"""
import json
import os
import shlex
import subprocess
import sys
import time

from cassandra import ConsistencyLevel
from cassandra.cluster import Cluster, ExecutionProfile, EXEC_PROFILE_DEFAULT
from cassandra.policies import WhiteListRoundRobinPolicy
from cassandra.query import SimpleStatement

from oracle import Recorder, write_oracle

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
hosts = [h.rsplit(":", 1) for h in os.environ["CF_RF3_HOSTS"].split(",")]
KS = os.environ.get("CF_RF3_KEYSPACE", "cdcks")
DOWN = int(os.environ.get("CF_RF3_DOWN", "0") or 0)
if DOWN == 1:
    sys.exit("workload_rf3.py: node1 is the coordinator; CF_RF3_DOWN must be another node")
coord, port = hosts[0][0], int(hosts[0][1])
# node1 coordinates everything: a fixed coordinator keeps the run repeatable and
# never needs the driver to notice a stopped node
prof = ExecutionProfile(load_balancing_policy=WhiteListRoundRobinPolicy([coord]), request_timeout=60)
cluster = Cluster([coord], port=port, execution_profiles={EXEC_PROFILE_DEFAULT: prof}, connect_timeout=30,
                  control_connection_timeout=30, max_schema_agreement_wait=60)
session = cluster.connect()
rec = Recorder(session, os.path.join(out, "workload.cql"), ConsistencyLevel.QUORUM, one_line=True)

TS = 1700000000000000  # microseconds; statement n writes at TS + n * 1000


def w(cql):
    """a data statement: numbered, USING TIMESTAMP of its number ({ts} in cql)"""
    n = rec.count + 1
    rec.run(cql.replace("{ts}", str(TS + n * 1000)))
    return n


def ddl(cql):
    rec.run(cql)


def bulk(keys, partition, label):
    """small rows of events: row k in partition partition(k), v = label + k"""
    for k in keys:
        w(f"INSERT INTO {KS}.events (p, seq, sub, v, n) VALUES ({partition(k)}, {k}, 's', '{label}{k}', {k}) "
          "USING TIMESTAMP {ts}")


def probe_all(what):
    """a write at ALL through node1 succeeds only when node1 sends to and hears
    from every replica: proof that every node is up as node1 sees it"""
    rec.comment(f"probe ({what}): INSERT INTO {KS}.probe (k, v) VALUES (1, 1) at ALL, server timestamp, "
                "retried until it succeeds")
    deadline = time.time() + 120
    while True:
        try:
            session.execute(SimpleStatement(f"INSERT INTO {KS}.probe (k, v) VALUES (1, 1)",
                                            consistency_level=ConsistencyLevel.ALL))
            return
        except Exception as e:  # Unavailable or WriteTimeout while a node joins
            if time.time() > deadline:
                sys.exit(f"workload_rf3.py: {what}: a write at ALL still fails after 120 s: {e}")
            time.sleep(1)


def node_cmd(var, node):
    cmd = shlex.split(os.environ[var]) + [str(node)]
    subprocess.run(cmd, check=True)


phases = {}

# ---------------------------------------------------------------- phase A
a0 = rec.count + 1
ddl(f"CREATE KEYSPACE {KS} WITH replication = {{'class': 'NetworkTopologyStrategy', 'datacenter1': 3}}")
ddl(f"CREATE TYPE {KS}.address (street text, city text, zip int)")
ddl(f"""CREATE TABLE {KS}.users (id int PRIMARY KEY, name text, email text, score bigint, tags set<text>,
    prefs map<text, text>, visits list<text>, home address, work frozen<address>)
    WITH cdc = true AND read_repair = 'NONE'""")
ddl(f"""CREATE TABLE {KS}.events (p int, seq int, sub text, v text, n int, note text static,
    PRIMARY KEY (p, seq, sub)) WITH cdc = true AND read_repair = 'NONE'""")
ddl(f"CREATE TABLE {KS}.probe (k int PRIMARY KEY, v int) WITH read_repair = 'NONE'")
probe_all("before the workload")

U = f"{KS}.users"
E = f"{KS}.events"
for i in range(1, 11):
    w(f"""INSERT INTO {U} (id, name, email, score, tags, prefs, visits, home, work)
      VALUES ({i}, 'user {i}', 'u{i}@example.com', {i * 100}, {{'t{i}', 'common'}}, {{'lang': 'en', 'k{i}': 'v{i}'}},
      ['2024-01-0{i % 9 + 1}'], {{street: 'Street {i}', city: 'City', zip: {10000 + i}}},
      {{street: 'Office {i}', city: 'Town', zip: {20000 + i}}}) USING TIMESTAMP {{ts}}""")
w(f"UPDATE {U} USING TIMESTAMP {{ts}} SET name = 'renamed 1' WHERE id = 1")
w(f"UPDATE {U} USING TIMESTAMP {{ts}} SET score = 1001, email = 'one@example.com' WHERE id = 1")
w(f"UPDATE {U} USING TIMESTAMP {{ts}} SET tags = tags + {{'added'}} WHERE id = 2")
w(f"UPDATE {U} USING TIMESTAMP {{ts}} SET tags = tags - {{'common'}} WHERE id = 2")
w(f"UPDATE {U} USING TIMESTAMP {{ts}} SET prefs['theme'] = 'dark' WHERE id = 3")
w(f"DELETE prefs['lang'] FROM {U} USING TIMESTAMP {{ts}} WHERE id = 3")
w(f"UPDATE {U} USING TIMESTAMP {{ts}} SET visits = visits + ['2024-02-01'] WHERE id = 4")
w(f"UPDATE {U} USING TIMESTAMP {{ts}} SET visits = ['2023-12-31'] + visits WHERE id = 4")
w(f"UPDATE {U} USING TIMESTAMP {{ts}} SET home.city = 'Moved' WHERE id = 5")
w(f"UPDATE {U} USING TIMESTAMP {{ts}} SET work = {{street: 'HQ', city: 'Capital', zip: 1}} WHERE id = 5")
w(f"UPDATE {U} USING TIMESTAMP {{ts}} SET prefs = {{'only': 'this'}} WHERE id = 6")
w(f"INSERT INTO {U} (id, name, email) VALUES (11, 'expiring', 'ttl@example.com') USING TTL 86400 AND TIMESTAMP {{ts}}")
w(f"UPDATE {U} USING TTL 3600 AND TIMESTAMP {{ts}} SET email = 'short@example.com' WHERE id = 7")
w(f"DELETE email FROM {U} USING TIMESTAMP {{ts}} WHERE id = 8")
w(f"DELETE FROM {U} USING TIMESTAMP {{ts}} WHERE id = 9")
w(f"INSERT INTO {U} (id, name, tags) VALUES (12, null, {{'x'}}) USING TIMESTAMP {{ts}}")
for p in (1, 2):
    for seq in range(1, 7):
        for sub in ("a", "b"):
            w(f"INSERT INTO {E} (p, seq, sub, v, n) VALUES ({p}, {seq}, '{sub}', 'v{p}{seq}{sub}', {seq}) USING TIMESTAMP {{ts}}")
w(f"UPDATE {E} USING TIMESTAMP {{ts}} SET note = 'static of p1' WHERE p = 1")
w(f"UPDATE {E} USING TIMESTAMP {{ts}} SET v = 'changed', n = 99 WHERE p = 1 AND seq = 1 AND sub = 'a'")
w(f"DELETE FROM {E} USING TIMESTAMP {{ts}} WHERE p = 1 AND seq >= 2 AND seq < 4")
w(f"DELETE FROM {E} USING TIMESTAMP {{ts}} WHERE p = 1 AND seq = 5 AND sub = 'a'")
w(f"DELETE FROM {E} USING TIMESTAMP {{ts}} WHERE p = 1 AND seq = 6 AND sub > 'a'")
w(f"DELETE FROM {E} USING TIMESTAMP {{ts}} WHERE p = 2")
w(f"INSERT INTO {E} (p, seq, sub, v) VALUES (2, 1, 'a', 'after partition delete') USING TIMESTAMP {{ts}}")
# users id 5 and events p 5 have the same partition key bytes (int 5): the batch
# is one Mutation holding two partition updates
w(f"""BEGIN BATCH USING TIMESTAMP {{ts}}
  UPDATE {U} SET score = 555 WHERE id = 5;
  INSERT INTO {E} (p, seq, sub, v) VALUES (5, 1, 'a', 'batched with user 5');
APPLY BATCH""")
ddl(f"ALTER TABLE {U} ADD age int")
w(f"UPDATE {U} USING TIMESTAMP {{ts}} SET age = 31 WHERE id = 1")
w(f"INSERT INTO {U} (id, name, age) VALUES (13, 'after alter', 42) USING TIMESTAMP {{ts}}")
bulk(range(100), lambda k: 100 + k % 20, "bulk ")
phases["A"] = [a0, rec.count]

# ---------------------------------------------------------------- phase B
if DOWN:
    rec.comment(f"node{DOWN} stopped: it misses the statements up to the next comment")
    node_cmd("CF_RF3_STOP_NODE", DOWN)
b0 = rec.count + 1
for i in range(20, 30):
    w(f"""INSERT INTO {U} (id, name, email, score, tags, home, age)
      VALUES ({i}, 'user {i}', 'u{i}@example.com', {i}, {{'b'}}, {{street: 'B {i}', city: 'Bee', zip: {i}}}, {i})
      USING TIMESTAMP {{ts}}""")
w(f"UPDATE {U} USING TIMESTAMP {{ts}} SET name = 'renamed in B' WHERE id = 2")
w(f"UPDATE {U} USING TIMESTAMP {{ts}} SET tags = tags + {{'b1', 'b2'}} WHERE id = 3")
w(f"UPDATE {U} USING TIMESTAMP {{ts}} SET prefs['b'] = 'bee' WHERE id = 4")
w(f"UPDATE {U} USING TIMESTAMP {{ts}} SET home.zip = 99999 WHERE id = 6")
w(f"UPDATE {U} USING TIMESTAMP {{ts}} SET visits = visits - ['2024-02-01'] WHERE id = 4")
w(f"INSERT INTO {U} (id, name) VALUES (30, 'ttl in B') USING TTL 86400 AND TIMESTAMP {{ts}}")
w(f"DELETE tags FROM {U} USING TIMESTAMP {{ts}} WHERE id = 10")
w(f"DELETE FROM {U} USING TIMESTAMP {{ts}} WHERE id = 8")
w(f"UPDATE {U} USING TIMESTAMP {{ts}} SET age = 50 WHERE id = 13")
for seq in range(1, 6):
    w(f"INSERT INTO {E} (p, seq, sub, v, n) VALUES (3, {seq}, 'a', 'p3 {seq}', {seq}) USING TIMESTAMP {{ts}}")
w(f"UPDATE {E} USING TIMESTAMP {{ts}} SET note = 'static of p3' WHERE p = 3")
w(f"DELETE FROM {E} USING TIMESTAMP {{ts}} WHERE p = 3 AND seq > 3")
w(f"DELETE FROM {E} USING TIMESTAMP {{ts}} WHERE p = 1 AND seq = 1 AND sub = 'b'")
w(f"DELETE FROM {E} USING TIMESTAMP {{ts}} WHERE p = 100")
w(f"UPDATE {E} USING TIMESTAMP {{ts}} SET v = 'bulk changed in B' WHERE p = 101 AND seq = 1 AND sub = 's'")
w(f"""BEGIN UNLOGGED BATCH USING TIMESTAMP {{ts}}
  UPDATE {U} SET email = 'batch@example.com' WHERE id = 21;
  INSERT INTO {E} (p, seq, sub, v) VALUES (21, 1, 'a', 'batched with user 21');
APPLY BATCH""")
bulk(range(100, 110), lambda k: 102, "bulk ")
phases["B"] = [b0, rec.count]
if DOWN:
    node_cmd("CF_RF3_START_NODE", DOWN)
    probe_all(f"after node{DOWN} started again")
    rec.comment(f"node{DOWN} started again: it has the statements from here on")

# ---------------------------------------------------------------- phase C
c0 = rec.count + 1
w(f"UPDATE {U} USING TIMESTAMP {{ts}} SET name = 'renamed in C' WHERE id = 20")
w(f"UPDATE {U} USING TIMESTAMP {{ts}} SET tags = tags + {{'c'}} WHERE id = 21")
w(f"DELETE FROM {U} USING TIMESTAMP {{ts}} WHERE id = 22")
w(f"UPDATE {U} USING TIMESTAMP {{ts}} SET prefs['c'] = 'sea' WHERE id = 4")
w(f"UPDATE {U} USING TIMESTAMP {{ts}} SET age = 60, score = 6000 WHERE id = 23")
w(f"INSERT INTO {U} (id, name, age) VALUES (40, 'written in C', 40) USING TIMESTAMP {{ts}}")
w(f"DELETE home.city FROM {U} USING TIMESTAMP {{ts}} WHERE id = 24")
w(f"UPDATE {E} USING TIMESTAMP {{ts}} SET v = 'changed in C' WHERE p = 3 AND seq = 1 AND sub = 'a'")
w(f"DELETE FROM {E} USING TIMESTAMP {{ts}} WHERE p = 3 AND seq = 2")
w(f"INSERT INTO {E} (p, seq, sub, v, n) VALUES (4, 1, 'a', 'p4', 1) USING TIMESTAMP {{ts}}")
bulk(range(10), lambda k: 103, "bulk C ")
phases["C"] = [c0, rec.count]
probe_all("after the workload")
rec.close()

# ---------------------------------------------------------------- what Cassandra says
ts_of = {k: [TS + v[0] * 1000, TS + v[1] * 1000] for k, v in phases.items()}
with open(os.path.join(out, "phases.json"), "w") as f:
    json.dump({"statements": phases, "timestamps": ts_of, "down_node": DOWN or None,
               "down_phase": "B" if DOWN else None, "write_consistency": "QUORUM",
               "timestamp_rule": "statement n (n-th non-comment line of workload.cql) writes at "
                                 f"{TS} + n * 1000 (DDL lines carry no timestamp)"},
              f, indent=1, sort_keys=True)
    f.write("\n")
ring = []
loc = session.execute(SimpleStatement("SELECT broadcast_address, host_id, tokens, data_center, rack FROM system.local"))
for r in list(loc) + list(session.execute("SELECT peer AS broadcast_address, host_id, tokens, data_center, rack "
                                          "FROM system.peers")):
    ring.append({"address": r.broadcast_address, "host_id": str(r.host_id), "tokens": sorted(r.tokens, key=int),
                 "data_center": r.data_center, "rack": r.rack})
ring.sort(key=lambda n: [int(x) for x in n["address"].split(".")])
for i, n in enumerate(ring):
    n["node"] = i + 1
with open(os.path.join(out, "ring.json"), "w") as f:
    json.dump(ring, f, indent=1, sort_keys=True)
    f.write("\n")
write_oracle(session, out, KS, {"users": "id", "events": "p", "probe": "k"}, ConsistencyLevel.ALL)
cluster.shutdown()
