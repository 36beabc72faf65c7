#!/usr/bin/env bash
# test_it_cassandra_e2e_kill.sh - issue 16: "the same with the cdcflow worker
# killed with SIGKILL at 20 random moments (source side and sink side) and the
# broker restarted once: the final tables are still exact", on the live
# Cassandra path: the shared Cassandra node -> `cdcflow cassandra sidecar` ->
# Kafka -> one worker with two cdc-sinks -> PostgreSQL and SQLite
# (test_it_cassandra_e2e.sh in its kill mode). Both sides are killed with
# kill -9, each at 20 random moments of the workload (40 kills in all;
# tests/crash/kill_schedule.py) and restarted each time; the broker is
# restarted once among the kills. It is the spare broker (CF_TEST_SPARE_KAFKA,
# which scripts/run-tests starts): a restart of the shared one would hit the
# tests beside this one. The final tables must equal Cassandra's SELECT JSON
# at ALL. CF_SEED=n repeats a run's workload and kill moments.
set -euo pipefail
: "${CF_TEST_SPARE_KAFKA:?CF_TEST_SPARE_KAFKA is not set: scripts/run-tests starts the spare servers (scripts/servers)}"
: "${CF_TEST_SPARE_KAFKA_RESTART:?CF_TEST_SPARE_KAFKA_RESTART is not set}"
CF_E2E_KILLS=${CF_E2E_KILLS:-20} CF_E2E_BROKER=$CF_TEST_SPARE_KAFKA CF_E2E_BROKER_RESTART=$CF_TEST_SPARE_KAFKA_RESTART \
  exec bash "$(dirname "$0")/test_it_cassandra_e2e.sh"
