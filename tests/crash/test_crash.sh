#!/usr/bin/env bash
# test_crash.sh - tests/crash/crash.py on the record-file and direct
# transports: the files source and the cdc-sink (SQLite) killed with kill -9
# at 20 random moments each, the same record file, offsets and database across
# every restart; nothing lost, nothing applied twice by the sink. SEED=n
# repeats a run's choices.
set -euo pipefail
exec python3 "${CF_TESTS_DIR:?}/crash/crash.py" --cli "${CF_CLI:?}" --transport file,direct --kills 20 \
  ${SEED:+--seed "$SEED"}
