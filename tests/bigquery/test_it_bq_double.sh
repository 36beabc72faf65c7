#!/usr/bin/env bash
# The BigQuery test double (tests/bigquery/bq_test_server.py) checked with Google's own
# Python clients (tests/bigquery/test_bq_double.py): the double must behave like BigQuery
# for Google's code before cdcflow's C client is tested against it. The test venv comes from
# scripts/servers (CF_TEST_PYTHON); the double runs on free loopback ports of its own.
set -euo pipefail
: "${CF_TEST_PYTHON:?CF_TEST_PYTHON not set: start the servers with scripts/servers start (python)}"
exec "$CF_TEST_PYTHON" "$(dirname "$0")/test_bq_double.py"
