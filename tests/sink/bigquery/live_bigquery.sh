#!/usr/bin/env bash
# live_bigquery.sh - the seed's example configuration against LIVE BigQuery,
# with your own project, dataset and service account key (never run by the
# test suite: it needs Google's network and your credentials). See
# docs/bigquery.md.
#
#   BQ_PROJECT=my-project BQ_KEYFILE=~/key.json [BQ_DATASET=my_bigquery_dataset] \
#     tests/sink/bigquery/live_bigquery.sh [path/to/cdcflow]
#
# Needs python3 and Google's `bq` command (Cloud SDK) to read the table back.
# It drops and recreates <dataset>.cdc_postgres_public_customers.
set -euo pipefail
CLI=${1:-build/cdcflow}
: "${BQ_PROJECT:?set BQ_PROJECT}" "${BQ_KEYFILE:?set BQ_KEYFILE}"
BQ_DATASET=${BQ_DATASET:-my_bigquery_dataset}   # the seed's dataset
HERE=$(cd "$(dirname "$0")" && pwd)
SEED=${CF_SHARED_DIR:-$HERE/../../../../shared}/seeds/000_0266fa648c44b0aa.txt
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
CLI=$(cd "$(dirname "$CLI")" && pwd)/$(basename "$CLI")
cd "$W"
python3 "$HERE/seed_records.py" in.jsonl want.txt
python3 - "$SEED" <<PY
import json, re, sys
block = re.search(r"\`\`\`json\s*(\{.*?\})\s*\`\`\`", open(sys.argv[1]).read(), re.S).group(1)
conf = json.loads(block)
if "$BQ_DATASET" != "my_bigquery_dataset":   # the seed's; another one is the only other change
    conf["datasets"] = ".*=$BQ_DATASET"
conf.update({"project": "$BQ_PROJECT", "keyfile": "$BQ_KEYFILE"})
json.dump({"name": "seed-live", "config": conf}, open("conf.json", "w"), indent=1)
PY
bq --project_id="$BQ_PROJECT" rm -f -t "$BQ_DATASET.cdc_postgres_public_customers" >/dev/null 2>&1 || true
"$CLI" run conf.json --input in.jsonl
echo "waiting 20 s (tableMaxStaleness is 15 s in the seed's configuration)"
sleep 20
bq --project_id="$BQ_PROJECT" query --use_legacy_sql=false --format=csv \
  "SELECT id, email, version1 FROM \`$BQ_PROJECT.$BQ_DATASET.cdc_postgres_public_customers\` ORDER BY id" |
  tail -n +2 | tr ',' '|' > got.txt
if diff want.txt got.txt; then echo "live BigQuery: the table equals the source ($(wc -l < want.txt) rows)"
else echo "live BigQuery: the table differs from the source" >&2; exit 1; fi
