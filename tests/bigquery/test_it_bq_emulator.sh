#!/usr/bin/env bash
# The public BigQuery emulator that scripts/servers starts (goccy/bigquery-emulator) does what
# the BigQuery target's emulator tests rely on, seen through Google's own clients: tables with
# a primary key created and read back over REST, GetWriteStream on _default, AppendRows rows
# landing over plaintext gRPC. What it does NOT do (CDC rules, etags, DDL effects) is written
# down in tests/bigquery/README.md and printed here by the probe.
set -euo pipefail
: "${CF_TEST_PYTHON:?CF_TEST_PYTHON not set: start the servers with scripts/servers start}"
: "${CF_TEST_BQ_EMULATOR_HTTP:?CF_TEST_BQ_EMULATOR_HTTP not set: start the servers with scripts/servers start (bigquery-emulator)}"
exec "$CF_TEST_PYTHON" "$(dirname "$0")/probe_emulator.py" --check "$CF_TEST_BQ_EMULATOR_HTTP" \
    "$CF_TEST_BQ_EMULATOR_GRPC" "$CF_TEST_BQ_EMULATOR_PROJECT" "$CF_TEST_BQ_EMULATOR_DATASET"
