#!/usr/bin/env bash
# test_it_debezium_kill.sh - issue 16: "the same with the cdcflow worker killed
# with SIGKILL at 20 random moments ... and the broker restarted once: the
# final tables are still exact", on the Debezium pipeline: PostgreSQL -> the
# real Debezium PostgreSQL connector in Kafka Connect standalone -> Kafka ->
# the cdcflow worker with four cdc-sinks into SQLite and PostgreSQL
# (test_it_debezium_pipeline.sh in its kill mode). cdcflow is the sink side
# here: its worker is killed with kill -9 at 20 random moments while Debezium
# publishes the streamed workload (tests/crash/kill_schedule.py: the moments
# are random steps of the workload, which waits for each restarted worker),
# restarted each time; the broker is restarted once among the kills. It is
# the spare broker (CF_TEST_SPARE_KAFKA, which scripts/run-tests starts),
# for Debezium and the sinks both: a restart of the shared one would hit the
# tests beside this one. After the fence row every target table must equal
# its source table. CF_TEST_SEED=n repeats a run's workload and kill moments.
set -euo pipefail
: "${CF_TEST_SPARE_KAFKA:?CF_TEST_SPARE_KAFKA is not set: scripts/run-tests starts the spare servers (scripts/servers)}"
: "${CF_TEST_SPARE_KAFKA_RESTART:?CF_TEST_SPARE_KAFKA_RESTART is not set}"
CF_TEST_DBZ_KILLS=${CF_TEST_DBZ_KILLS:-20} CF_TEST_DBZ_BROKER=$CF_TEST_SPARE_KAFKA \
  CF_TEST_DBZ_BROKER_RESTART=$CF_TEST_SPARE_KAFKA_RESTART \
  exec bash "$(dirname "$0")/test_it_debezium_pipeline.sh"
