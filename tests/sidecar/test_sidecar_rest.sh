#!/usr/bin/env bash
# test_sidecar_rest.sh - the Sidecar CDC design's REST endpoints on
# `cdcflow cassandra sidecar --rest`: the service started unconfigured, then
# configured with PUT /api/v1/services/cdc/config (the design's JSON body),
# its health and segments read, the configuration refused when it asks what
# cannot change (Kafka) or is invalid, then deleted. Behind the worker's
# token. Data: the fixture v8-lz4-rollover (a real Cassandra 5.0 node)
# copied as three replicas.
set -uo pipefail
CLI=${CF_CLI:?} ; TESTS=${CF_TESTS_DIR:?}
T=$(mktemp -d)
source "$(dirname "$0")/sidecar_rest_lib.sh"
failed=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; failed=1; fi; }
sc_replicas
TOKEN=s3cret
sc_start --output "$T/out.jsonl" --offsets "$T/offsets"
code=$(TOKEN= api GET /api/v1/services/cdc/health)
check "without the token: 401 ($code)" "[[ $code == 401 ]]"
code=$(api GET /api/v1/services/cdc/health)
check "not configured yet: health 404 ($code)" "[[ $code == 404 ]] && grep -q 'no CDC service is configured' '$T/body'"
body="{\"config\": {\"tables\": [\"cdcks.events\", \"cdcks.simple\"], \"consistency.level\": \"QUORUM\",
  \"cdc_raw.dirs\": [\"$T/n1\", \"$T/n2\", \"$T/n3\"], \"schema.files\": \"$R/schema.cql\",
  \"replication.factor\": 3, \"cdc_raw.cleanup\": \"none\"}}"
code=$(api PUT /api/v1/services/cdc/config "$body")
check "PUT config: 201 created ($code)" "[[ $code == 201 ]] && grep -q '\"consistency.level\":\"QUORUM\"' '$T/body'"
# events: 19 inserts, 4 range deletes, 1 partition delete; simple: 6 inserts, 2 updates
for i in $(seq 100); do [[ -f $T/out.jsonl && $(wc -l < "$T/out.jsonl") -ge 32 ]] && break; sleep 0.1; done
sleep 0.3
check "the service publishes the tables asked for ($(wc -l < "$T/out.jsonl") events)" "[[ \$(wc -l < '$T/out.jsonl') -eq 32 ]]"
sleep 1.2 # a second's events per second
code=$(api GET /api/v1/services/cdc/health)
check "health: 200, healthy, nothing pending, published and when ($(cat "$T/body"))" \
  "[[ $code == 200 ]] && python3 -c 'import json,sys; h=json.load(open(\"$T/body\")); sys.exit(not (h[\"status\"]==\"healthy\" and h[\"pending_mutations\"]==0 and h[\"lag_segments\"]==0 and h[\"published\"]==32 and h[\"last_published\"] and h[\"events_per_second\"]>0))'"
code=$(api GET /api/v1/cdc/segments)
check "segments: every segment of the three replicas, completed, with its index" \
  "[[ $code == 200 ]] && python3 -c 'import json,sys; s=json.load(open(\"$T/body\"))[\"segmentInfos\"]; sys.exit(not (len(s)==12 and all(x[\"completed\"] and x[\"idx\"]>0 and x[\"size\"]>0 for x in s)))'"
code=$(api GET /api/v1/services/cdc/config)
check "GET config: the configuration ($code)" "[[ $code == 200 ]] && grep -q '\"table.include.list\":\"cdcks.events,cdcks.simple\"' '$T/body'"
code=$(api PUT /api/v1/services/cdc/config '{"kafka.bootstrap.servers": "elsewhere:9092", "cdc_raw.dirs": "x"}')
check "PUT with another Kafka: 409 saying why ($code)" "[[ $code == 409 ]] && grep -q 'bootstrap.servers' '$T/body'"
code=$(api PUT /api/v1/services/cdc/config "{\"consistency.level\": \"SOMETIMES\", \"cdc_raw.dirs\": \"$T/n1\", \"schema.files\": \"$R/schema.cql\"}")
check "PUT with a bad level: 400 naming it ($code)" "[[ $code == 400 ]] && grep -q 'consistency.level' '$T/body'"
code=$(api PUT /api/v1/services/cdc/config '[1,2]')
check "PUT with a body that is not an object: 400 ($code)" "[[ $code == 400 ]]"
code=$(api GET /api/v1/services/cdc/health)
check "the running service kept its configuration ($code)" "[[ $code == 200 ]]"
code=$(api DELETE /api/v1/services/cdc/config)
check "DELETE config: 204 ($code)" "[[ $code == 204 ]]"
code=$(api GET /api/v1/services/cdc/config)
check "then GET config: 404 ($code)" "[[ $code == 404 ]]"
sc_stop; rc=$?
check "SIGTERM: exit 0 ($rc)" "[[ $rc -eq 0 ]]"
exit $failed
