#!/usr/bin/env bash
# test_it_stop_rest.sh - issue 19: REST DELETE /connectors/{name} and POST
# /connectors/{name}/restart are bounded like a SIGTERM, on one worker that
# goes on serving. cdc-sink connectors (SQLite) on the spare broker
# (CF_TEST_SPARE_KAFKA) and the spare registry (CF_TEST_SPARE_REGISTRY):
#
#   the registry frozen (SIGSTOP): aa and ab, Avro sinks created over REST,
#     wait for their schemas; restart aa, DELETE ab: each answers within
#     task.shutdown.graceful.timeout.ms + slack and logs what was not
#     committed (the abandoned registry request);
#   the broker killed: ja and jb (JSON sinks) had read and put every record;
#     restart ja, DELETE jb: the same.
# After each, the worker still answers (GET /connectors, a status), and once
# the server is back the restarted connector and the deleted one created
# again end with tables equal to the rows produced. The worker's SIGTERM at
# the end is clean (exit 0).
set -euo pipefail
CLI=${CF_CLI:?CF_CLI is the cdcflow binary}
T=$(mktemp -d /tmp/cf_stop_rest.XXXXXX)
source "$(dirname "$0")/stop_lib.sh"
# ja, jb: what was read stays unflushed until a commit (offset.flush.interval.ms:
# a minute), so that their stops have something to flush and commit
MERGE_MS=-1
need_env CF_TEST_SPARE_KAFKA CF_TEST_SPARE_KAFKA_KILL CF_TEST_SPARE_KAFKA_START CF_TEST_SPARE_REGISTRY \
    CF_TEST_SPARE_REGISTRY_FREEZE CF_TEST_SPARE_REGISTRY_THAW CF_TEST_SPARE_REGISTRY_START CF_TEST_PYTHON
on_exit_restore KAFKA REGISTRY
BS=$CF_TEST_SPARE_KAFKA
REG=$CF_TEST_SPARE_REGISTRY
RUN=$$_$(date +%s)
N=1000
M=$(json_count $N)
TJ=stoprestj_$RUN TA=stoprest_a_$RUN
produce "$BS" "$TJ" $N
"$CF_TEST_PYTHON" "$(dirname "$0")/avro_rows.py" "$BS" "$REG" "$TA" $N || fail "avro_rows.py could not write the rows"

worker_props "$T/w.properties" "$BS" "offset.flush.interval.ms=60000"
for c in ja jb; do sink_json "$T/$c.json" $c "$TJ" ",\"sqlite.path\":\"$T/$c.db\""; done
MERGE_MS= # aa, ab: the cdc-sink's own flush interval
for c in aa ab; do
    sink_json "$T/$c.json" $c "$TA" ",\"sqlite.path\":\"$T/$c.db\",\"key.converter\":\"avro\",\"key.converter.schema.registry.url\":\"$REG\",\"value.converter\":\"avro\",\"value.converter.schema.registry.url\":\"$REG\""
done
start_worker w --worker "$T/w.properties" "$T/ja.json" "$T/jb.json"
URL=http://127.0.0.1:$(cat "$T/w.port")

# rest NAME METHOD PATH [BODY_FILE]: one request, timed; sets CODE and TOOK
rest() {
    local name=$1 method=$2 path=$3 t0
    t0=$(now_ms)
    CODE=$(curl -s -m 30 -o "$T/rest.out" -w '%{http_code}' -X "$method" ${4:+-H 'Content-Type: application/json' --data-binary @"$4"} "$URL$path")
    TOOK=$(( $(now_ms) - t0 ))
    echo "$name: $method $path -> HTTP $CODE after $TOOK ms" >&2
}
# bounded NAME WANT...: the last request answered within the bound, with one of the codes WANT
bounded() {
    local name=$1 c
    shift
    (( TOOK <= STOP_MS + SLACK_MS )) || fail "$name: the request took $TOOK ms, more than $STOP_MS + $SLACK_MS ms"
    for c in "$@"; do [[ $CODE == "$c" ]] && return 0; done
    fail "$name: HTTP $CODE, want $*: $(cat "$T/rest.out")"
}
serving() { # the worker answers and lists exactly the connectors given
    local want got
    want=$(printf '%s\n' "$@" | sort | tr '\n' ' ')
    got=$(curl -s -m 5 "$URL/connectors" | tr -d '[]" ' | tr ',' '\n' | sort | tr '\n' ' ')
    [[ $got == "$want" ]] || fail "GET /connectors lists '$got', want '$want'"
}
rows_of() { sqlite3 "$T/$1.db" "SELECT id, name FROM \"$2\" ORDER BY id" 2>/dev/null; }
table_has() { [[ $(sqlite3 "$T/$1.db" "SELECT count(*) FROM \"$2\"" 2>/dev/null) == "$3" ]]; }
exact() { # exact CONNECTOR TOPIC: its table, once complete, equals the rows produced
    local tb=${2//-/_}
    wait_until 90 "$1's table to have $N rows" table_has "$1" "$tb" $N
    diff <(expected_rows $N) <(rows_of "$1" "$tb") >"$T/$1.diff" || fail "$1: the table differs: $(head "$T/$1.diff")"
}
not_clean() { # not_clean CONNECTOR PATTERN: the worker logged what the stop could not commit
    grep -q "connector $1 task 0: stop not clean: .*$2" "$T/w.log" ||
        fail "$1: the stop's 'not clean' line is missing: $(grep "connector $1 " "$T/w.log" | tail -3)"
}

for c in ja jb; do wait_until 60 "$c to put $M records" metric_at_least w cdcflow_task_records_out_total $c $M; done

# ---- the registry frozen: Avro sinks created now wait for their schemas
echo "freezing the spare registry: $CF_TEST_SPARE_REGISTRY_FREEZE" >&2
eval "$CF_TEST_SPARE_REGISTRY_FREEZE" >&2
for c in aa ab; do rest $c POST /connectors "$T/$c.json"; bounded $c 201; done
for c in aa ab; do wait_until 30 "$c to read records" metric_at_least w cdcflow_task_records_in_total $c 1; done
sleep 1 # their converters wait for the registry's answer now
rest aa POST /connectors/aa/restart
bounded aa 204 202
not_clean aa "Schema Registry.*interrupted"
rest ab DELETE /connectors/ab
bounded ab 204
not_clean ab "Schema Registry.*interrupted"
serving ja jb aa
rest aa GET /connectors/aa/status
bounded aa 200
eval "$CF_TEST_SPARE_REGISTRY_THAW" >&2
exact aa "$TA"
rest ab POST /connectors "$T/ab.json"
bounded ab 201
exact ab "$TA"

# ---- the broker killed: the JSON sinks read and put everything before
echo "killing the spare broker: $CF_TEST_SPARE_KAFKA_KILL" >&2
eval "$CF_TEST_SPARE_KAFKA_KILL" >&2
sleep 0.5
rest ja POST /connectors/ja/restart
bounded ja 204 202
not_clean ja "not committed"
rest jb DELETE /connectors/jb
bounded jb 204
not_clean jb "not committed"
serving ja aa ab
rest ja GET /connectors/ja/status
bounded ja 200
echo "starting the spare broker again" >&2
eval "$CF_TEST_SPARE_KAFKA_START" >&2
exact ja "$TJ"
rest jb POST /connectors "$T/jb.json"
bounded jb 201
exact jb "$TJ"
serving ja jb aa ab
sleep 3 # the consumers of ja and jb back in their group, so that the last stop can commit
timed_stop w
assert_bounded w 0
echo OK
