#!/usr/bin/env bash
# test_it_sidecar_kafka.sh - `cdcflow cassandra sidecar` publishing Avro (the
# Confluent wire format, schemas registered in the Schema Registry) to a real
# Kafka broker, read back by an outside consumer: Python confluent-kafka with
# its AvroDeserializer (fastavro; writer schemas fetched by id from the
# registry). The decoded events, applied by events_replay.py, must give
# Cassandra's own SELECT JSON rows (the fixture v8-lz4-rollover: four
# segments of a real node, copied as three replicas). Also the JsonConverter
# to the same broker, and the subjects: one per table.
# Needs the servers of scripts/servers (Kafka, Apicurio Registry, the Python
# venv): fails without them.
set -uo pipefail
CLI=${CF_CLI:?} ; TESTS=${CF_TESTS_DIR:?}
if [[ -z ${CF_TEST_KAFKA:-} ]]; then
  envf=$("$TESTS/../scripts/servers" envfile 2>/dev/null)
  [[ -f $envf ]] && { set -a; source "$envf"; set +a; }
fi
: "${CF_TEST_KAFKA:?start the servers: scripts/servers start}" "${CF_TEST_REGISTRY:?}" "${CF_TEST_PYTHON:?}" "${CF_TEST_REGISTRY_URL:?}"
DATA=$TESTS/data/cassandra
R=v8-lz4-rollover
T=$(mktemp -d) ; trap 'rm -rf "$T"' EXIT
failed=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; failed=1; fi; }

for i in 1 2 3; do cp -r "$DATA/$R/cdc_raw" "$T/n$i"; done
run=sc$$_$RANDOM
"$CLI" cassandra sidecar --schema "$DATA/$R/schema.cql" --replica "$T/n1" --replica "$T/n2" --replica "$T/n3" --rf 3 \
  --consistency LOCAL_QUORUM --once --bootstrap-servers "$CF_TEST_KAFKA" --schema-registry "$CF_TEST_REGISTRY" \
  --format avro --topic-format "$run.{keyspace}.{table}" --offsets "$T/offsets" 2>"$T/err"
rc=$?
check "avro to Kafka: exit 0 (got $rc)" "[[ $rc -eq 0 ]] || { tail -5 '$T/err'; false; }"
events=$(grep 'everything present is read' "$T/err" | sed -n 's/.*(\([0-9]*\) events.*/\1/p')
check "avro to Kafka: events made ($events)" "[[ ${events:-0} -gt 3000 ]]"
topics="$run.cdcks.all_types,$run.cdcks.events,$run.cdcks.simple,$run.cdcks.bulk"
# the consumers are bounded: a broker another test restarts meanwhile fails this test, never hangs it
timeout 150 "$CF_TEST_PYTHON" "$TESTS/sidecar/avro_events.py" --bootstrap "$CF_TEST_KAFKA" --registry "$CF_TEST_REGISTRY" \
  --topics "$topics" --count "${events:-1}" --out "$T/avro.jsonl" --timeout 90 >"$T/py.out" 2>&1
rc=$?
check "a confluent-kafka consumer with the registry decodes every event ($(tail -1 "$T/py.out"))" "[[ $rc -eq 0 ]] || { cat '$T/py.out'; false; }"
check "the decoded events, replayed, equal Cassandra's SELECT JSON" \
  "python3 '$TESTS/sidecar/events_replay.py' '$T/avro.jsonl' '$DATA/$R' >'$T/replay' 2>&1 || { cat '$T/replay'; false; }"
curl -sf "$CF_TEST_REGISTRY/subjects" >"$T/subjects"
check "one value subject per table" \
  "[[ \$(grep -o '\"$run\.cdcks\.[a-z_]*-value\"' '$T/subjects' | sort -u | wc -l) -eq 4 ]]"
check "and a key subject per table" \
  "[[ \$(grep -o '\"$run\.cdcks\.[a-z_]*-key\"' '$T/subjects' | sort -u | wc -l) -eq 4 ]]"

# the JsonConverter to the same broker: readable without a registry
run2=${run}j
for i in 1 2 3; do rm -rf "$T/n$i"; cp -r "$DATA/$R/cdc_raw" "$T/n$i"; done
"$CLI" cassandra sidecar --schema "$DATA/$R/schema.cql" --replica "$T/n1" --replica "$T/n2" --replica "$T/n3" --rf 3 \
  --once --bootstrap-servers "$CF_TEST_KAFKA" --topic-format "$run2.{keyspace}.{table}" --offsets "$T/offsets2" \
  --tables cdcks.events 2>"$T/err2"
rc=$?
check "json to Kafka: exit 0 (got $rc)" "[[ $rc -eq 0 ]] || { tail -5 '$T/err2'; false; }"
timeout 60 "$CF_TEST_PYTHON" - "$CF_TEST_KAFKA" "$run2.cdcks.events" >"$T/json.out" 2>&1 <<'EOF'
import json, sys, time
from confluent_kafka import Consumer
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "j%f" % time.time(), "auto.offset.reset": "earliest"})
c.subscribe([sys.argv[2]])
ops, n, t0 = {}, 0, time.time()
while time.time() - t0 < 30 and n < 24:
    m = c.poll(0.5)
    if m is None or m.error():
        continue
    v = json.loads(m.value())["payload"]
    k = json.loads(m.key())["payload"]
    assert k == {"p": v["payload"]["p"]}, (k, v)
    ops[v["operationType"]] = ops.get(v["operationType"], 0) + 1
    n += 1
print(n, json.dumps(ops, sort_keys=True))
EOF
check "json to Kafka: the events table's 24 events, keys = partition key ($(cat "$T/json.out"))" \
  "grep -q '^24 {\"DELETE_PARTITION\": 1, \"DELETE_RANGE\": 4, \"INSERT\": 19}' '$T/json.out'"
exit $failed
