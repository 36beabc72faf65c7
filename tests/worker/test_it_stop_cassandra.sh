#!/usr/bin/env bash
# test_it_stop_cassandra.sh - issue 19: the stop of the Cassandra CDC source
# (`cdcflow cassandra sidecar`, the cassandra-cdc connector, live tailing) is
# bounded when the broker is gone and the Schema Registry stopped. Avro
# change events to the spare broker (CF_TEST_SPARE_KAFKA), schemas in the
# spare registry (CF_TEST_SPARE_REGISTRY); the fixture v8-lz4-rollover (four
# segments of a real Cassandra 5.0 node):
#
#   the first segment arrives and is published (every table's schema
#   registered); the broker is killed and the registry stopped; the other
#   three segments arrive and are read (cdcks.bulk only: schemas cached).
#   SIGTERM exits within task.shutdown.graceful.timeout.ms + slack, exit 4,
#   logging the events not acknowledged (their state is not stored).
#
# Then the servers come back and a --once run from the stored state publishes
# the rest: every event in the topics, decoded by an outside consumer
# (confluent-kafka's AvroDeserializer, avro_events.py) and replayed, gives
# Cassandra's own SELECT JSON rows (nothing lost; events twice only as
# at-least-once allows: those published since the last stored state).
set -euo pipefail
CLI=${CF_CLI:?CF_CLI is the cdcflow binary}
TESTS=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d /tmp/cf_stop_cass.XXXXXX)
source "$(dirname "$0")/stop_lib.sh"
need_env CF_TEST_SPARE_KAFKA CF_TEST_SPARE_KAFKA_KILL CF_TEST_SPARE_KAFKA_START CF_TEST_SPARE_REGISTRY \
    CF_TEST_SPARE_REGISTRY_STOP CF_TEST_SPARE_REGISTRY_START CF_TEST_PYTHON
on_exit_restore KAFKA REGISTRY
BS=$CF_TEST_SPARE_KAFKA
REG=$CF_TEST_SPARE_REGISTRY
DATA=$TESTS/data/cassandra/v8-lz4-rollover
RUN=stopc$$_$(date +%s)
mapfile -t SEGS < <(ls "$DATA"/cdc_raw/*.log | sort)
(( ${#SEGS[@]} == 4 )) || fail "the fixture has ${#SEGS[@]} segments, 4 expected"
add_segment() { cp "$1" "${1%.log}_cdc.idx" "$T/n1/"; }
cat >"$T/sc.json" <<J
{"worker.task.shutdown.graceful.timeout.ms": "$STOP_MS", "worker.offset.flush.interval.ms": "200"}
J
# the sidecar: the one replica, Avro to the spare servers (an array, not a
# function: a function in the background is a subshell, and the signals of
# timed_stop must reach cdcflow itself)
SIDECAR=("$CLI" cassandra sidecar --config "$T/sc.json" --schema "$DATA/schema.cql" --replica "$T/n1" --consistency ONE
    --bootstrap-servers "$BS" --schema-registry "$REG" --format avro --topic-format "$RUN.{keyspace}.{table}"
    --offsets "$T/offsets.json" --cleanup none)
C=cassandra-cdc # the connector's name, in the metrics

mkdir -p "$T/n1"
start_cmd c1 "${SIDECAR[@]}" --rest 0
add_segment "${SEGS[0]}"
wait_until 60 "the first segment's 942 events to be published" metric_at_least c1 cdcflow_task_records_out_total $C 942
sleep 1 # the state that rides with the last of them stored (flushed every 200 ms)

echo "killing the spare broker: $CF_TEST_SPARE_KAFKA_KILL" >&2
eval "$CF_TEST_SPARE_KAFKA_KILL" >&2
echo "stopping the spare registry: $CF_TEST_SPARE_REGISTRY_STOP" >&2
eval "$CF_TEST_SPARE_REGISTRY_STOP" >&2
for s in "${SEGS[@]:1}"; do add_segment "$s"; done
wait_until 60 "the other segments to be read" metric_at_least c1 cdcflow_task_records_in_total $C 2500
sleep 0.5
timed_stop c1
assert_bounded c1
grep -q "connector $C task 0: stop not clean: .*not acknowledged" "$T/c1.log" || fail "no 'stop not clean' line: $(grep -i 'not clean' "$T/c1.log")"
grep -q "task cassandra-cdc-0 failed" "$T/c1.log" && fail "the task failed instead of waiting: $(grep 'failed' "$T/c1.log" | head -3)"

# ---- the servers back: a run from the stored state publishes the rest
echo "starting the spare broker and registry again" >&2
eval "$CF_TEST_SPARE_KAFKA_START" >&2
eval "$CF_TEST_SPARE_REGISTRY_START" >&2
"${SIDECAR[@]}" --once 2>"$T/c2.log" || fail "the run after the stop failed: $(tail -5 "$T/c2.log")"
topics="$RUN.cdcks.all_types,$RUN.cdcks.events,$RUN.cdcks.simple,$RUN.cdcks.bulk"
total=0
for tp in ${topics//,/ }; do
    n=$(kcat -C -b "$BS" -t "$tp" -e -q -f '%o\n' 2>/dev/null | wc -l)
    total=$(( total + n ))
done
echo "the topics hold $total events" >&2
(( total >= 3053 )) || fail "the topics hold $total events, fewer than the fixture's 3053"
timeout 150 "$CF_TEST_PYTHON" "$TESTS/sidecar/avro_events.py" --bootstrap "$BS" --registry "$REG" \
    --topics "$topics" --count "$total" --out "$T/avro.jsonl" --timeout 90 >"$T/py.out" 2>&1 ||
    fail "the outside consumer could not decode every event: $(tail -3 "$T/py.out")"
python3 "$TESTS/sidecar/events_replay.py" "$T/avro.jsonl" "$DATA" >"$T/replay" 2>&1 ||
    fail "the events, replayed, differ from Cassandra's rows: $(tail -5 "$T/replay")"
echo "OK ($(( total - 3053 )) events published twice)"
