#!/usr/bin/env bash
# test_it_stop_registry.sh - issue 19: a stop is bounded whatever the Schema
# Registry does. Rows written in Avro by an outside writer (confluent-kafka's
# AvroSerializer, tests/worker/avro_rows.py) to the shared broker, schemas in
# the spare registry (CF_TEST_SPARE_REGISTRY); a cdc-sink with the Avro
# converter (SQLite) reads them:
#   R1 the registry frozen (SIGSTOP: connections accepted, nothing answers)
#      before the sink fetched the schemas: SIGTERM ends the run within
#      task.shutdown.graceful.timeout.ms, exit 4 (the fetch was abandoned);
#   R2 the registry stopped: the task fails at once (it cannot read the
#      records, errors.tolerance=none) and SIGTERM ends the run within the
#      bound, exit 1.
# With the registry back, both connectors run again and their tables equal
# the rows produced.
set -euo pipefail
CLI=${CF_CLI:?CF_CLI is the cdcflow binary}
T=$(mktemp -d /tmp/cf_stop_reg.XXXXXX)
source "$(dirname "$0")/stop_lib.sh"
MERGE_MS=-1 # what was read stays unflushed until the stop (offset.flush.interval.ms: a minute)
need_env CF_TEST_KAFKA CF_TEST_PYTHON CF_TEST_SPARE_REGISTRY CF_TEST_SPARE_REGISTRY_STOP \
    CF_TEST_SPARE_REGISTRY_START CF_TEST_SPARE_REGISTRY_FREEZE CF_TEST_SPARE_REGISTRY_THAW
on_exit_restore REGISTRY
BS=$CF_TEST_KAFKA
REG=$CF_TEST_SPARE_REGISTRY
RUN=$$_$(date +%s)
N=1000
M=$(json_count $N)
TOPIC=stopreg-$RUN
"$CF_TEST_PYTHON" "$(dirname "$0")/avro_rows.py" "$BS" "$REG" "$TOPIC" $N || fail "avro_rows.py could not write the rows"
avro_sink() { # avro_sink FILE NAME
    sink_json "$1" "$2" "$TOPIC" ",\"sqlite.path\":\"$T/$2.db\",\"key.converter\":\"avro\",\"key.converter.schema.registry.url\":\"$REG\",\"value.converter\":\"avro\",\"value.converter.schema.registry.url\":\"$REG\""
}
worker_props "$T/w.properties" "$BS"

# ---- R1: frozen registry
avro_sink "$T/r1.json" r1
echo "freezing the spare registry: $CF_TEST_SPARE_REGISTRY_FREEZE" >&2
eval "$CF_TEST_SPARE_REGISTRY_FREEZE" >&2
start_worker r1 --worker "$T/w.properties" "$T/r1.json"
wait_until 30 "R1 to read records" metric_at_least r1 cdcflow_task_records_in_total r1 1
sleep 1 # it waits for the registry's answer now
timed_stop r1
eval "$CF_TEST_SPARE_REGISTRY_THAW" >&2
assert_bounded r1
grep -q "connector r1 task 0: stop not clean" "$T/r1.log" || fail "R1: no 'stop not clean' line: $(tail -5 "$T/r1.log")"

# ---- R2: stopped registry
avro_sink "$T/r2.json" r2
echo "stopping the spare registry: $CF_TEST_SPARE_REGISTRY_STOP" >&2
eval "$CF_TEST_SPARE_REGISTRY_STOP" >&2
start_worker r2 --worker "$T/w.properties" "$T/r2.json"
wait_until 30 "R2's task to fail" grep -q "task r2-0 failed: .*Schema Registry" "$T/r2.log"
timed_stop r2
assert_bounded r2 1

# ---- the registry back: both tables equal the rows
eval "$CF_TEST_SPARE_REGISTRY_START" >&2
rows_of() { sqlite3 "$T/$1.db" "SELECT id, name FROM \"${TOPIC//-/_}\" ORDER BY id" 2>/dev/null; }
table_has() { [[ $(sqlite3 "$T/$1.db" "SELECT count(*) FROM \"${TOPIC//-/_}\"" 2>/dev/null) == "$2" ]]; }
worker_props "$T/wb.properties" "$BS" "offset.flush.interval.ms=300"
for r in r1 r2; do
    start_worker ${r}b --worker "$T/wb.properties" "$T/$r.json"
    wait_until 60 "$r to put $M records" metric_at_least ${r}b cdcflow_task_records_out_total $r $M
    wait_until 30 "$r's table to have $N rows" table_has $r $N
    sleep 1
    timed_stop ${r}b
    assert_bounded ${r}b 0
    diff <(expected_rows $N) <(rows_of $r) >"$T/$r.diff" || fail "$r: the table differs: $(head "$T/$r.diff")"
done
echo OK
