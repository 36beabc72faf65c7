#!/usr/bin/env bash
# test_it_bq_seed.sh - the seed's example kcbq configuration
# (../shared/seeds/000_0266fa648c44b0aa.txt, read from the file, not copied)
# runs as written, only credentials and the endpoints of the BigQuery TEST
# DOUBLE added: `cdcflow run` with Debezium envelopes for
# cdc_postgres_public_customers (unwrapped by the seed's transform, ordered
# by version1), then the double's table is compared with the source rows.
set -euo pipefail
CLI=${CF_CLI:?CF_CLI not set}
PY=${CF_TEST_PYTHON:?CF_TEST_PYTHON not set: start the servers with scripts/servers start}
HERE=$(cd "$(dirname "$0")" && pwd)
SEED=${CF_SHARED_DIR:?}/seeds/000_0266fa648c44b0aa.txt
source "$HERE/bq_double.bash"
fail() { echo "FAIL: $*" >&2; [[ -f double.log ]] && tail -20 double.log >&2; exit 1; }

openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out key.pem 2>/dev/null
"$PY" - <<'EOF'
import json
pem = open("key.pem").read()
json.dump({"type": "service_account", "project_id": "cdcflow-test", "private_key_id": "k1", "private_key": pem,
           "client_email": "seed@cdcflow-test.iam.gserviceaccount.com", "client_id": "1",
           "token_uri": "https://oauth2.googleapis.com/token"}, open("key.json", "w"))
EOF
bqd_start --dataset cdcflow-test.my_bigquery_dataset --service-account-key key.json

# The seed's configuration block, as written, plus credentials and endpoints.
"$PY" - "$SEED" <<'EOF'
import json, re, sys
text = open(sys.argv[1]).read()
block = re.search(r"```json\s*(\{.*?\})\s*```", text, re.S).group(1)
conf = json.loads(block)
ready = json.load(open("ready.json"))
conf.update({"project": "cdcflow-test", "keyfile": "key.json",
             "bigquery.storage.endpoint": "http://" + ready["grpc"], "bigquery.api.endpoint": ready["http"],
             "bigquery.token.uri": ready["token_uri"], "bigQueryRetryWait": "10"})
json.dump({"name": "seed", "config": conf}, open("conf.json", "w"), indent=1)
json.dump(json.loads(block), open("seed.json", "w"))
EOF

# Debezium PostgreSQL envelopes for public.customers(id, email, version1)
# and the source table they leave
"$PY" "$HERE/seed_records.py" in.jsonl want.txt

rc=0
"$CLI" run conf.json --input in.jsonl 2> run.log || rc=$?
[[ $rc == 0 ]] || { cat run.log >&2; fail "cdcflow run exited $rc"; }
HTTP=$("$PY" -c 'import json; print(json.load(open("ready.json"))["http"])')
curl -sf "$HTTP/_test/rows?table=cdcflow-test.my_bigquery_dataset.cdc_postgres_public_customers" > rows.json ||
  fail "no table"
"$PY" - <<'EOF' > got.txt
import json
rows = json.load(open("rows.json"))["rows"]
for r in sorted(rows, key=lambda r: r["id"]):
    print("%d|%s|%d" % (r["id"], r["email"], r["version1"]))
EOF
diff want.txt got.txt || fail "the table differs from the source"
# the configuration that ran is the seed's, plus credentials and endpoints only
"$PY" - <<'EOF' || fail "config differs from the seed's"
import json
seed, conf = json.load(open("seed.json")), json.load(open("conf.json"))["config"]
added = set(conf) - set(seed)
assert all(conf[k] == seed[k] for k in seed), "a seed setting was changed"
assert added <= {"project", "keyfile", "bigquery.storage.endpoint", "bigquery.api.endpoint", "bigquery.token.uri",
                 "bigQueryRetryWait"}, added
EOF
grep -q "keyfile" run.log && grep -q "PRIVATE KEY" run.log && fail "the key reached the log"
echo "1 passed, 0 failed"
