#!/usr/bin/env bash
# test_it_sidecar_statements.sh - the design's CQL-style statements with a
# real Kafka broker and Schema Registry: a sidecar started with --rest and
# only its Kafka, configured by `cdcflow cassandra exec` (CREATE DATA_SINK
# with the broker's uri, a {keyspace}.{table} topic and the registry;
# CREATE DATA_SOURCE on cdcks.events), read back by an outside consumer
# (Python confluent-kafka with its AvroDeserializer, writer schemas from the
# registry): the events table's 24 changes (19 inserts, 4 range deletes, 1
# partition delete: the fixture v8-lz4-rollover, a real Cassandra 5.0 node,
# as three replicas) in the sink's topic; then dropped.
# Needs the servers of scripts/servers (Kafka, the registry, the Python
# venv): fails without them.
set -uo pipefail
CLI=${CF_CLI:?} ; TESTS=${CF_TESTS_DIR:?}
if [[ -z ${CF_TEST_KAFKA:-} ]]; then
  envf=$("$TESTS/../scripts/servers" envfile 2>/dev/null)
  [[ -f $envf ]] && { set -a; source "$envf"; set +a; }
fi
: "${CF_TEST_KAFKA:?start the servers: scripts/servers start}" "${CF_TEST_REGISTRY:?}" "${CF_TEST_PYTHON:?}"
T=$(mktemp -d)
source "$(dirname "$0")/sidecar_rest_lib.sh"
failed=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; failed=1; fi; }
sc_replicas
run=stmt$$_$RANDOM
sc_start --bootstrap-servers "$CF_TEST_KAFKA" --offsets "$T/offsets"

"$CLI" cassandra exec --url "$url" "
  CREATE DATA_SINK events_sink WITH uri = 'kafka://$CF_TEST_KAFKA/$run.{keyspace}.{table}'
    AND options = {'schema.registry.url': '$CF_TEST_REGISTRY', 'acks': 'all'};
  CREATE DATA_SOURCE cdc ON TABLE cdcks.events WITH sink = events_sink
    AND options = {'consistency.level': 'LOCAL_QUORUM', 'replication.factor': 3, 'cdc_raw.cleanup': 'none',
                   'cdc_raw.dirs': '$T/n1,$T/n2,$T/n3', 'schema.files': '$R/schema.cql'};" >"$T/out" 2>"$T/err"
rc=$?
check "exec: the sink and the source created ($rc $(cat "$T/err"))" \
  "[[ $rc -eq 0 ]] && grep -q '\"result\":\"created\"' '$T/out'"
timeout 150 "$CF_TEST_PYTHON" "$TESTS/sidecar/avro_events.py" --bootstrap "$CF_TEST_KAFKA" --registry "$CF_TEST_REGISTRY" \
  --topics "$run.cdcks.events" --count 24 --out "$T/avro.jsonl" --timeout 90 >"$T/py.out" 2>&1
rc=$?
check "a confluent-kafka consumer with the registry decodes the 24 events from the sink's topic ($(tail -1 "$T/py.out"))" \
  "[[ $rc -eq 0 ]] || { cat '$T/py.out'; tail -5 '$T/log'; false; }"
python3 - "$T/avro.jsonl" >"$T/ops" <<'EOF'
import json, sys
ops = {}
for line in open(sys.argv[1]):
    p = json.loads(json.loads(line)["payload"])["payload"]
    ops[p["operationType"]] = ops.get(p["operationType"], 0) + 1
print(json.dumps(ops, sort_keys=True))
EOF
check "their operations: 19 inserts, 4 range deletes, 1 partition delete ($(cat "$T/ops"))" \
  "grep -q '{\"DELETE_PARTITION\": 1, \"DELETE_RANGE\": 4, \"INSERT\": 19}' '$T/ops'"
curl -sf "$CF_TEST_REGISTRY/subjects" >"$T/subjects"
check "the value subject of the sink's topic is registered" "grep -q '\"$run.cdcks.events-value\"' '$T/subjects'"
"$CLI" cassandra exec --url "$url" "DROP DATA_SOURCE cdc ON TABLE cdcks.events; DROP DATA_SINK events_sink" >"$T/out" 2>"$T/err"
rc=$?
code=$(api GET /api/v1/services/cdc/config)
check "dropped: no connector left ($rc, GET config $code)" "[[ $rc -eq 0 && $code == 404 ]]"
sc_stop; rc=$?
check "SIGTERM: exit 0 ($rc)" "[[ $rc -eq 0 ]]"
exit $failed
