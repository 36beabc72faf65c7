#!/usr/bin/env bash
# test_sidecar_statements.sh - the design's CQL-style statements against a
# running `cdcflow cassandra sidecar --rest` (Kafka: the embedded cluster, so
# no server is needed): a sink and a data source created with `cdcflow
# cassandra exec`, the configuration (GET /api/v1/services/cdc/config) and
# the running connector (health: the events table's changes published)
# checked, a second table added, what the service refuses (a conflicting
# option, a sink in use, one that exists), the JSON body form, a bad
# statement POSTed with curl (400 with line and column), then everything
# dropped; a PUT of the configuration under data sources, and a DELETE that
# removes them and keeps the sinks. Behind the worker's token. Data: the fixture v8-lz4-rollover (a
# real Cassandra 5.0 node) copied as three replicas: its events table has 24
# changes (19 inserts, 4 range deletes, 1 partition delete).
set -uo pipefail
CLI=${CF_CLI:?} ; TESTS=${CF_TESTS_DIR:?}
T=$(mktemp -d)
source "$(dirname "$0")/sidecar_rest_lib.sh"
failed=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; failed=1; fi; }
sc_replicas
TOKEN=s3cret
sc_start --bootstrap-servers embedded --offsets "$T/offsets"
exe() { "$CLI" cassandra exec --url "$url" --token "$TOKEN" "$@" >"$T/out" 2>"$T/err"; }
js() { python3 -c "import json,sys; d=json.load(open('$1')); sys.exit(not ($2))"; }

"$CLI" cassandra exec --url "$url" "CREATE DATA_SINK s1 WITH uri = 'kafka://127.0.0.1:9/x'" >"$T/out" 2>"$T/err"
rc=$?
check "without the token: refused, exit 1 ($rc)" "[[ $rc -eq 1 ]] && grep -q 'answered 401' '$T/err'"
exe "CREATE DATA_SINK s1 WITH uri = 'kafka://127.0.0.1:9/x'"
rc=$?
check "a sink on another Kafka than the sidecar's: created, checked when a source uses it ($rc)" \
  "[[ $rc -eq 0 ]] && js '$T/out' 'd[\"results\"] == [{\"statement\": \"CREATE DATA_SINK\", \"name\": \"s1\", \"result\": \"created\"}]'"

cat >"$T/create.cql" <<EOF
-- the events table to the embedded Kafka, one topic per table
CREATE DATA_SINK IF NOT EXISTS "Orders Sink"
  WITH uri = 'kafka://embedded/st.{keyspace}.{table}'
  AND options = {'value.serializer': 'json', 'acks': 'all'};
create data_source cdc on table cdcks.events with sink = "Orders Sink" and options = {
  'consistency.level': 'QUORUM', 'replication.factor': 3, 'cdc_raw.cleanup': 'none',
  'cdc_raw.dirs': '$T/n1,$T/n2,$T/n3', 'schema.files': '$R/schema.cql'
};
EOF
exe -f "$T/create.cql"
rc=$?
check "exec -f: the sink and the source created, exit 0 ($rc: $(cat "$T/err"))" \
  "[[ $rc -eq 0 ]] && js '$T/out' '[r[\"result\"] for r in d[\"results\"]] == [\"created\", \"created\"]'"
code=$(api GET /api/v1/services/cdc/config)
check "GET config: the table, the level, the topic, the converter, the producer setting ($(cat "$T/body"))" \
  "[[ $code == 200 ]] && js '$T/body' 'd[\"config\"][\"table.include.list\"] == \"cdcks.events\" and d[\"config\"][\"consistency.level\"] == \"QUORUM\" and d[\"config\"][\"topic.format\"] == \"st.{keyspace}.{table}\" and d[\"config\"][\"value.converter\"] == \"json\" and d[\"config\"][\"producer.override.acks\"] == \"all\" and d[\"config\"][\"connector.class\"] == \"cassandra-cdc\"'"
for i in $(seq 100); do api GET /api/v1/services/cdc/health >/dev/null; js "$T/body" 'd.get("published") == 24' 2>/dev/null && break; sleep 0.1; done
code=$(api GET /api/v1/services/cdc/health)
check "the connector runs: healthy, the events table's 24 changes published ($(cat "$T/body"))" \
  "[[ $code == 200 ]] && js '$T/body' 'd[\"status\"] == \"healthy\" and d[\"published\"] == 24 and d[\"pending_mutations\"] == 0'"
code=$(api GET /connectors/cassandra-cdc/topics)
check "to the topic of the sink's topic ($(cat "$T/body"))" "grep -q 'st.cdcks.events' '$T/body'"

echo "CREATE DATA_SOURCE cdc ON TABLE cdcks.simple WITH sink = \"Orders Sink\" AND options = {'consistency.level': 'QUORUM'}" |
  exe -
rc=$?
check "exec - (stdin): a second table ($rc)" "[[ $rc -eq 0 ]] && js '$T/out' 'd[\"results\"][0][\"config\"][\"table.include.list\"] == \"cdcks.events,cdcks.simple\"'"
exe "CREATE DATA_SOURCE cdc ON TABLE cdcks.all_types WITH sink = \"Orders Sink\" AND options = {'consistency.level': 'ALL'}"
rc=$?
check "another level for one more table: 409, exit 1 ($(cat "$T/err"))" \
  "[[ $rc -eq 1 ]] && grep -q 'answered 409' '$T/err' && grep -q \"'consistency.level' is 'QUORUM'\" '$T/err'"
exe "CREATE DATA_SOURCE cdc ON TABLE cdcks.all_types WITH sink = s1"
rc=$?
check "another sink for one more table: 409 ($rc)" "[[ $rc -eq 1 ]] && grep -q 'publish to one sink' '$T/err'"
exe "DROP DATA_SINK \"Orders Sink\""
rc=$?
check "dropping a sink in use: 409 naming the source ($rc)" "[[ $rc -eq 1 ]] && grep -q 'used by the data source on cdcks.events' '$T/err'"
exe "CREATE DATA_SINK IF NOT EXISTS s1 WITH uri = 'kafka://embedded/y'; CREATE DATA_SINK s1 WITH uri = 'kafka://embedded/y'; DROP DATA_SINK s1"
rc=$?
check "IF NOT EXISTS skips, without it: 409 at statement 2, statement 3 not run ($rc)" \
  "[[ $rc -eq 1 ]] && js '$T/out' 'd[\"statement\"] == 2 and d[\"error_code\"] == 409 and [r[\"result\"] for r in d[\"results\"]] == [\"exists\"]'"
code=$(api GET /api/v1/services/cdc/config)
check "the configuration is unchanged by what was refused" \
  "js '$T/body' 'd[\"config\"][\"table.include.list\"] == \"cdcks.events,cdcks.simple\"'"

# the HTTP API directly: the JSON form and errors
code=$(api POST /api/v1/services/cdc/statements '{"statements": "DROP DATA_SOURCE cdc ON TABLE cdcks.simple; DROP DATA_SOURCE IF EXISTS cdc ON TABLE cdcks.simple"}')
check "POST {\"statements\"}: dropped, then absent ($code $(cat "$T/body"))" \
  "[[ $code == 200 ]] && js '$T/body' '[r[\"result\"] for r in d[\"results\"]] == [\"dropped\", \"absent\"]'"
code=$(api POST /api/v1/services/cdc/statements $'DROP DATA_SINK s1;\nCREATE DATA_SINK s2 WITH uri = \'kafka://h:1/t\' AND AND')
check "POST a bad statement: 400 with the line, the column and the token ($(cat "$T/body"))" \
  "[[ $code == 400 ]] && js '$T/body' 'd[\"error_code\"] == 400 and d[\"line\"] == 2 and d[\"column\"] == 52 and \"expected uri or options, found \\\"AND\\\"\" in d[\"message\"] and d[\"hint\"].startswith(\"CREATE DATA_SINK\")'"
code=$(api POST /api/v1/services/cdc/statements 'DROP DATA_SINK IF EXISTS nothing')
check "POST the statements as they are (Content-Type application/json): applied ($code)" \
  "[[ $code == 200 ]] && js '$T/body' 'd[\"results\"][0][\"result\"] == \"absent\"'"
code=$(CT=text/plain api POST /api/v1/services/cdc/statements 'DROP DATA_SINK IF EXISTS nothing')
check "as text/plain, which a cross-site page may send: 415 like every body of the API ($code)" "[[ $code == 415 ]]"
code=$(api POST /api/v1/services/cdc/statements '{"statement": "DROP DATA_SINK x"}')
check "a JSON body without \"statements\": 400 ($code)" "[[ $code == 400 ]]"
code=$(api GET /api/v1/services/cdc/statements)
check "GET statements: 405 ($code)" "[[ $code == 405 ]]"
"$CLI" cassandra exec --url "$url" --token s3cret "DROP DATA_SOURCE cdc TABLE x.y" >"$T/out" 2>"$T/err"
rc=$?
check "exec of a bad statement: exit 2 before sending, the place in the message" \
  "[[ $rc -eq 2 ]] && grep -q 'line 1, column 22: expected ON, found \"TABLE\"' '$T/err' && [[ ! -s $T/out ]]"

printf "DROP DATA_SINK IF EXISTS a;\n  DROP DATA_SINK" >"$T/bad.cql"
exe -f "$T/bad.cql"
rc=$?
check "exec -f of a bad file: exit 2, the file, line and column ($(tail -1 "$T/err"))" \
  "[[ $rc -eq 2 ]] && grep -q 'line 2, column 17: expected the sink' '$T/err' && grep -q 'WHERE:  $T/bad.cql:2:17' '$T/err'"

exe "DROP DATA_SOURCE cdc ON TABLE cdcks.events; DROP DATA_SINK \"Orders Sink\"; DROP DATA_SINK IF EXISTS \"Orders Sink\""
rc=$?
check "the last source dropped, then its sink ($rc)" \
  "[[ $rc -eq 0 ]] && js '$T/out' '[r[\"result\"] for r in d[\"results\"]] == [\"dropped\", \"dropped\", \"absent\"]'"
code=$(api GET /api/v1/services/cdc/config)
check "no source left: no connector, GET config 404 ($code)" "[[ $code == 404 ]]"
exe "DROP DATA_SOURCE cdc ON TABLE cdcks.events"
rc=$?
check "dropping it again: 404, exit 1 ($rc)" "[[ $rc -eq 1 ]] && grep -q 'answered 404' '$T/err'"
exe "CREATE DATA_SOURCE cdc ON TABLE cdcks.events WITH sink = s1 AND options = {'cdc_raw.dirs': '$T/n1', 'schema.files': '$R/schema.cql'}"
rc=$?
check "a source on the sink whose Kafka is not the sidecar's: 409 saying so ($(cat "$T/err"))" \
  "[[ $rc -eq 1 ]] && grep -q 'answered 409' '$T/err' && grep -q 'bootstrap.servers' '$T/err'"
code=$(api GET /api/v1/services/cdc/config)
check "and no connector was made ($code)" "[[ $code == 404 ]]"
# a PUT of the configuration keeps the data sources on top; a DELETE removes them, not the sinks
exe "CREATE DATA_SINK e WITH uri = 'kafka://embedded/p.{table}'; CREATE DATA_SOURCE cdc ON TABLE cdcks.simple WITH sink = e AND options = {'cdc_raw.dirs': '$T/n1,$T/n2,$T/n3', 'schema.files': '$R/schema.cql'}"
rc=$?
code=$(api PUT /api/v1/services/cdc/config "{\"consistency.level\": \"ONE\", \"tables\": \"cdcks.events\", \"cdc_raw.dirs\": \"$T/n1\", \"schema.files\": \"$R/schema.cql\", \"replication.factor\": 3}")
check "PUT config with data sources: its settings, the sources' table and sink on top ($rc $code $(cat "$T/body"))" \
  "[[ $rc -eq 0 && $code == 200 ]] && js '$T/body' 'd[\"config\"][\"consistency.level\"] == \"ONE\" and d[\"config\"][\"table.include.list\"] == \"cdcks.simple\" and d[\"config\"][\"topic.format\"] == \"p.{table}\" and d[\"config\"][\"cdc_raw.dirs\"] == \"$T/n1,$T/n2,$T/n3\"'"
code=$(api DELETE /api/v1/services/cdc/config)
exe "DROP DATA_SOURCE IF EXISTS cdc ON TABLE cdcks.simple; CREATE DATA_SINK IF NOT EXISTS e WITH uri = 'kafka://embedded/x'"
check "DELETE config ($code): the data sources are gone, the sink stays" \
  "[[ $code == 204 ]] && js '$T/out' '[r[\"result\"] for r in d[\"results\"]] == [\"absent\", \"exists\"]'"
sc_stop; rc=$?
check "SIGTERM: exit 0 ($rc)" "[[ $rc -eq 0 ]]"
exit $failed
