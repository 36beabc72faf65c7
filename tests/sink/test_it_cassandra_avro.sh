#!/usr/bin/env bash
# test_it_cassandra_avro.sh - the Cassandra path through the real servers
# with Avro: three replicas' cdc_raw (rf3-one-down) -> `cdcflow cassandra
# sidecar` (RF 3, QUORUM, Avro in the Confluent wire format, schemas in the
# shared Schema Registry) -> the shared Kafka -> cdc-sink (AvroConverter) ->
# SQLite. Oracle: Cassandra's SELECT JSON at ALL of the cluster that wrote
# the fixture; every table must equal it. (The comparison reads the field
# schemas from the same events written once more as a JSON record file.)
set -uo pipefail
CLI=${CF_CLI:?} ; TESTS=${CF_TESTS_DIR:?}
if [[ -z ${CF_TEST_KAFKA:-} ]]; then
  envf=$("$TESTS/../scripts/servers" envfile 2>/dev/null)
  [[ -f $envf ]] && { set -a; source "$envf"; set +a; }
fi
: "${CF_TEST_KAFKA:?start the servers: scripts/servers start}" "${CF_TEST_REGISTRY:?}"
DATA=$TESTS/data/cassandra
c=rf3-one-down
T=$(mktemp -d)
pid=
trap '[[ -n $pid ]] && kill -9 $pid 2>/dev/null; rm -rf "$T"' EXIT
failed=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; failed=1; fi; }
run=itcav$$_$RANDOM
copy() { for i in 1 2 3; do rm -rf "$T/n$i"; cp -r "$DATA/$c/node$i/cdc_raw" "$T/n$i"; done; }

copy
"$CLI" cassandra sidecar --schema "$DATA/$c/schema.cql" --replica "$T/n1" --replica "$T/n2" --replica "$T/n3" --rf 3 \
  --consistency QUORUM --once --bootstrap-servers "$CF_TEST_KAFKA" --schema-registry "$CF_TEST_REGISTRY" \
  --format avro --topic-format "$run.{keyspace}.{table}" --offsets "$T/avro.offsets" 2>"$T/sidecar.err"
rc=$?
n=$(grep 'everything present is read' "$T/sidecar.err" | tail -1 | sed -n 's/.* \([0-9]*\) changes published.*/\1/p')
check "sidecar: Avro to Kafka, exit 0 (got $rc), $n changes" "[[ $rc -eq 0 && ${n:-0} -gt 200 ]]"
copy
"$CLI" cassandra sidecar --schema "$DATA/$c/schema.cql" --replica "$T/n1" --replica "$T/n2" --replica "$T/n3" --rf 3 \
  --consistency QUORUM --once --output "$T/events.jsonl" --offsets "$T/json.offsets" 2>/dev/null

cat > "$T/worker.properties" <<P
bootstrap.servers=$CF_TEST_KAFKA
offset.storage.file.filename=$T/worker.offsets
consumer.auto.offset.reset=earliest
key.converter=io.confluent.connect.avro.AvroConverter
key.converter.schema.registry.url=$CF_TEST_REGISTRY
value.converter=io.confluent.connect.avro.AvroConverter
value.converter.schema.registry.url=$CF_TEST_REGISTRY
P
printf '{"name":"%s","config":{"connector.class":"cdc-sink","topics":"%s.cdcks.users,%s.cdcks.events","sqlite.path":"%s","cassandra.schema.files":"%s","mergeIntervalMs":"200"}}\n' \
  "$run" "$run" "$run" "$T/avro.db" "$DATA/$c/schema.cql" > "$T/sink.json"
"$CLI" run --worker "$T/worker.properties" "$T/sink.json" 2>"$T/sink.err" &
pid=$!
applied=0
for _ in $(seq 1 120); do
  applied=$(sqlite3 "$T/avro.db" "SELECT coalesce(sum(next_offset), 0) FROM _cdcflow_positions" 2>/dev/null || echo 0)
  [[ $applied -ge ${n:-1} ]] && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.5
done
kill -TERM $pid 2>/dev/null; wait $pid; rc=$?; pid=
check "cdc-sink read every event from Kafka ($applied of $n) and stopped cleanly (exit $rc)" \
  "[[ $applied -ge ${n:-1} && $rc -eq 0 ]] || { tail -5 '$T/sink.err'; false; }"
check "every table equals Cassandra's SELECT JSON at ALL" \
  "python3 '$TESTS/sink/cassandra_tables.py' sqlite:$T/avro.db '$DATA/$c' '$T/events.jsonl' --prefix '${run}_'"
exit $failed
