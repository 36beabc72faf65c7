#!/usr/bin/env bash
# test_it_bq_emulator_sink.sh - the BigQuery target against the public BigQuery emulator
# (goccy/bigquery-emulator v0.8.1, started by scripts/servers: REST CF_TEST_BQ_EMULATOR_HTTP,
# gRPC CF_TEST_BQ_EMULATOR_GRPC): `cdcflow run` with the seed's kcbq-style configuration
# creates the table over REST and writes through the Storage Write API (GetWriteStream, then
# AppendRows with our writer schema and rows, decoded by the emulator's Go protobuf code).
#
# The emulator applies no CDC rules (tests/bigquery/README.md): every row we send is
# appended, so the oracle is the rows we sent, not the source table. emulator_records.py
# makes two record files in which each key changes at most once, so what the target sends
# is known whatever the batching: run 1 creates N rows, run 2 updates some and deletes
# others; the table must then hold exactly N + N/2 rows: the creates, the updates, and one
# row per delete with the key alone (a DELETE row carries only the key). Read back with
# tabledata.list and compared value by value; tables.get must show the primary key,
# clustering, maxStaleness and label, and no _CHANGE_TYPE / _CHANGE_SEQUENCE_NUMBER column.
# Run 3 adds a field: the emulator takes the column over REST but its write stream never
# shows it, and the target must stop with its clear error instead of sending rows.
#
# The emulator does not check credentials, but the target needs some: Application Default
# Credentials from the metadata server of the BigQuery TEST DOUBLE (--no-auth, used for
# nothing else). Tables are named per run (emu_<random>_items), so reruns never collide on
# the shared emulator.
set -euo pipefail
CLI=${CF_CLI:?CF_CLI not set}
PY=${CF_TEST_PYTHON:?CF_TEST_PYTHON not set: start the servers with scripts/servers start}
: "${CF_TEST_BQ_EMULATOR_HTTP:?CF_TEST_BQ_EMULATOR_HTTP not set: start the servers with scripts/servers start (bigquery-emulator)}"
: "${CF_TEST_BQ_EMULATOR_GRPC:?}" "${CF_TEST_BQ_EMULATOR_PROJECT:?}" "${CF_TEST_BQ_EMULATOR_DATASET:?}"
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/bq_double.bash"
fail() {
  echo "FAIL: $*" >&2
  for f in run*.log; do [[ -f $f ]] && { echo "--- $f" >&2; tail -15 "$f" >&2; }; done
  if grep -qs "GetWriteStream.*DEADLINE_EXCEEDED" run*.log; then
    echo "HINT: the emulator's GetWriteStream hangs after an AppendRows it could not place" \
         "(tests/bigquery/README.md); restart it: scripts/servers restart bigquery-emulator" >&2
  fi
  exit 1
}

RUN=$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')
TOPIC=emu_${RUN}_items
N=3000
"$PY" "$HERE/emulator_records.py" . "$TOPIC" "$N"

bqd_start --no-auth

# The seed's settings (kcbq names, Debezium unwrap, version1 order) with the emulator's
# endpoints; small batches and requests so that one AppendRows connection carries many
# requests over several flushes; few, short retries so that a broken emulator fails fast.
"$PY" - "$TOPIC" <<'EOF'
import json, os, sys
ready = json.load(open("ready.json"))
e = os.environ
conf = {"connector.class": "com.wepay.kafka.connect.bigquery.BigQuerySinkConnector", "topics": sys.argv[1],
        "project": e["CF_TEST_BQ_EMULATOR_PROJECT"], "datasets": ".*=" + e["CF_TEST_BQ_EMULATOR_DATASET"],
        "keySource": "APPLICATION_DEFAULT", "bigquery.metadata.url": ready["http"],
        "bigquery.storage.endpoint": "http://" + e["CF_TEST_BQ_EMULATOR_GRPC"],
        "bigquery.api.endpoint": e["CF_TEST_BQ_EMULATOR_HTTP"],
        "autoCreateTables": "true", "sanitizeFieldNames": "true", "useStorageWriteApi": "true",
        "cdcEnabled": "true", "cdcChangeSequenceNumberField": "version1", "tableMaxStaleness": 15,
        "mediateConcurrentSchemaUpdates": "true", "allowNewBigQueryFields": "true",
        "transforms": "unwrap", "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
        "transforms.unwrap.delete.handling.mode": "rewrite", "transforms.unwrap.drop.tombstones": "false",
        "batchMaxRecords": "700", "bigquery.request.max.bytes": "65536",
        "bigQueryRetry": "2", "bigQueryRetryWait": "100", "bigquery.timeout.ms": "15000"}
json.dump({"name": "emu", "config": conf}, open("conf.json", "w"), indent=1)
EOF

# ADC: no key file anywhere, so the metadata server
mkdir home
run() { env -u GOOGLE_APPLICATION_CREDENTIALS HOME="$W/home" timeout 120 "$CLI" run conf.json --input "$1" 2> "$2"; }
rc=0; run run1.jsonl run1.log || rc=$?
[[ $rc == 0 ]] || fail "run 1 exited $rc"
rc=0; run run2.jsonl run2.log || rc=$?
[[ $rc == 0 ]] || fail "run 2 exited $rc"
grep -q "created table $CF_TEST_BQ_EMULATOR_PROJECT.$CF_TEST_BQ_EMULATOR_DATASET.$TOPIC" run1.log ||
  fail "run 1 did not create the table"

"$PY" - "$TOPIC" "$N" <<'EOF' || fail "the emulator's table is not what the target sent"
import base64, decimal, json, os, sys
import requests
topic, n = sys.argv[1], int(sys.argv[2])
e = os.environ
base = "%s/bigquery/v2/projects/%s/datasets/%s/tables/%s" % (e["CF_TEST_BQ_EMULATOR_HTTP"],
                                                           e["CF_TEST_BQ_EMULATOR_PROJECT"],
                                                           e["CF_TEST_BQ_EMULATOR_DATASET"], topic)
t = requests.get(base, timeout=30).json()
cols = ["id", "name", "qty", "score", "active", "born", "seen", "blob", "price", "version1"]
types = ["INT64", "STRING", "INT64", "FLOAT64", "BOOL", "DATE", "TIMESTAMP", "BYTES", "BIGNUMERIC", "INT64"]
fields = t["schema"]["fields"]
got_cols = [(f["name"], f["type"], f.get("mode")) for f in fields]
want_cols = [(c, ty, "REQUIRED" if c == "id" else "NULLABLE") for c, ty in zip(cols, types)]
assert got_cols == want_cols, "columns: %s" % got_cols   # no _CHANGE_TYPE / _CHANGE_SEQUENCE_NUMBER
assert t["tableConstraints"] == {"primaryKey": {"columns": ["id"]}}, t.get("tableConstraints")
assert t["clustering"] == {"fields": ["id"]}, t.get("clustering")
assert t["maxStaleness"] == "0-0 0 0:0:15", t.get("maxStaleness")
assert t["labels"] == {"cdcflow_seq_sections": "2"}, t.get("labels")

rows, token = [], None
while True:   # v0.8.1 answers with every row at once; follow pageToken should it page
    d = requests.get(base + "/data", params={"pageToken": token} if token else {}, timeout=60).json()
    rows += [[c["v"] for c in r["f"]] for r in d.get("rows", [])]
    token = d.get("pageToken")
    if not token:
        break


def canon(col, v):
    """One value, from tabledata.list's text or from the source model, in one form."""
    if v is None:
        return None
    if col in ("id", "qty", "version1"):
        return int(v)
    if col == "score":
        return float(v)
    if col == "active":
        return v if isinstance(v, bool) else {"true": True, "false": False}[v]
    if col == "seen":   # the model: epoch ms; tabledata.list: "seconds.micros"
        if isinstance(v, int):
            return v * 1000
        s, _, f = v.partition(".")
        return int(s) * 10 ** 6 + int((f + "000000")[:6])
    if col == "price":
        return decimal.Decimal(v)
    if col == "blob":
        return base64.b64decode(v)
    return v


def key(r):
    return json.dumps([str(x) for x in r])


want = [[canon(c, w[c]) for c in cols] for w in map(json.loads, open("want.jsonl"))]
got = [[canon(c, v) for c, v in zip(cols, r)] for r in rows]
assert all(len(r) == len(cols) for r in rows), "a row has another cell count"
assert len(want) == n + n // 2, len(want)
gs, ws = sorted(got, key=key), sorted(want, key=key)
if gs != ws:
    missing = [r for r in ws if r not in gs][:5]
    extra = [r for r in gs if r not in ws][:5]
    sys.exit("landed %d rows, sent %d; not landed (first 5): %s; landed but not sent (first 5): %s"
             % (len(got), len(want), missing, extra))
print("# %d rows landed, exactly the %d sent (%d creates, %d updates, %d deletes)"
      % (len(got), len(want), n, n // 3, n // 2 - n // 3))
EOF

# Run 3: a new field. The target adds the column over REST (the emulator takes it), then
# GetWriteStream's table_schema (the emulator's stream keeps the schema it was set up with)
# lacks it: the target must retry, then stop with its message, having sent nothing.
"$PY" - "$TOPIC" <<'EOF'
import json, sys
recs = [json.loads(l) for l in open("run2.jsonl")]
r = recs[0]
v = json.loads(r["payload"])
for part in v["schema"]["fields"][:2]:
    part["fields"].append({"type": "string", "optional": True, "field": "dept"})
v["payload"]["after"]["dept"] = "x"
v["payload"]["before"]["dept"] = None
r["payload"] = json.dumps(v)
r["offset"] = 100000
open("run3.jsonl", "w").write(json.dumps(r) + "\n")
EOF
rc=0; run run3.jsonl run3.log || rc=$?
[[ $rc != 0 ]] || fail "run 3 succeeded: does the emulator write added columns now? (then expect the row)"
grep -q "Sanitizer" run3.log && fail "run 3 failed in a sanitizer, not with the target's error"
grep -q "adding column dept" run3.log || fail "run 3 did not add the column"
grep -q "the Storage Write API does not show column(s) dept of table" run3.log ||
  fail "run 3 did not stop with the missing-column error"
"$PY" - "$TOPIC" "$N" <<'EOF' || fail "run 3 wrote rows"
import os, sys, requests
e = os.environ
d = requests.get("%s/bigquery/v2/projects/%s/datasets/%s/tables/%s/data" % (
    e["CF_TEST_BQ_EMULATOR_HTTP"], e["CF_TEST_BQ_EMULATOR_PROJECT"], e["CF_TEST_BQ_EMULATOR_DATASET"], sys.argv[1]),
    timeout=60).json()
n = int(sys.argv[2])
assert len(d.get("rows", [])) == n + n // 2, len(d.get("rows", []))
EOF
echo "1 passed, 0 failed"
