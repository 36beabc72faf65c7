#!/usr/bin/env bash
# test_it_crash_kafka.sh - tests/crash/crash.py on the Kafka transport: the
# files source and the cdc-sink in two processes, each killed with kill -9 at
# 20 random moments while the other runs, and the broker restarted once among
# the kills (issue 16: "the same with the cdcflow worker killed with SIGKILL
# at 20 random moments and the broker restarted once: the final tables are
# still exact"). The broker is the spare one (CF_TEST_SPARE_KAFKA, which
# scripts/run-tests starts: a restart of the shared one would hit the tests
# beside this one); topics, consumer group and offsets topic are named for
# this run. SEED=n repeats a run's choices.
set -euo pipefail
: "${CF_TEST_SPARE_KAFKA:?CF_TEST_SPARE_KAFKA is not set: scripts/run-tests starts the spare servers (scripts/servers)}"
: "${CF_TEST_SPARE_KAFKA_RESTART:?CF_TEST_SPARE_KAFKA_RESTART is not set}"
exec python3 "${CF_TESTS_DIR:?}/crash/crash.py" --cli "${CF_CLI:?}" --transport kafka --kills 20 \
  --bootstrap "$CF_TEST_SPARE_KAFKA" --broker-restart "$CF_TEST_SPARE_KAFKA_RESTART" \
  ${CF_TEST_PYTHON:+--python "$CF_TEST_PYTHON"} ${SEED:+--seed "$SEED"}
