#!/usr/bin/env bash
# test_it_stop_postgres.sh - issue 19: a stop is bounded whatever the target
# database does. A cdc-sink with target=postgres (the spare PostgreSQL,
# CF_TEST_SPARE_PG) reads records from the shared broker and holds them
# unflushed; then
#   P1 PostgreSQL is stopped (pg_ctl stop -m fast): SIGTERM ends the run
#      within task.shutdown.graceful.timeout.ms, exit 4, what was not
#      committed logged;
#   P2 PostgreSQL is frozen (SIGSTOP: connections open, nothing answers)
#      while a flush runs: SIGTERM still ends the run within the bound (+1 s),
#      exit 4.
# With PostgreSQL back, the same connector runs again and its table equals
# the rows produced: nothing was lost.
set -euo pipefail
CLI=${CF_CLI:?CF_CLI is the cdcflow binary}
T=$(mktemp -d /tmp/cf_stop_pg.XXXXXX)
source "$(dirname "$0")/stop_lib.sh"
MERGE_MS=-1 # what was read stays unflushed until the stop (offset.flush.interval.ms: a minute)
need_env CF_TEST_KAFKA CF_TEST_SPARE_PG CF_TEST_SPARE_PG_BIN CF_TEST_SPARE_PG_STOP CF_TEST_SPARE_PG_START \
    CF_TEST_SPARE_PG_FREEZE CF_TEST_SPARE_PG_THAW
on_exit_restore PG
BS=$CF_TEST_KAFKA
RUN=$$_$(date +%s)
N=2000
M=$(json_count $N)
PSQL=("$CF_TEST_SPARE_PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 "$CF_TEST_SPARE_PG")
SCHEMA=stop_$RUN
"${PSQL[@]}" -c "CREATE SCHEMA $SCHEMA"
pg_sink() { # pg_sink FILE NAME TOPIC
    sink_json "$1" "$2" "$3" ",\"target\":\"postgres\",\"connection.url\":\"$CF_TEST_SPARE_PG\",\"postgres.schema\":\"$SCHEMA\""
}
table_of() { echo "${1//-/_}"; }
rows_of() { "${PSQL[@]}" -c "SELECT id, name FROM $SCHEMA.\"$(table_of "$1")\" ORDER BY id"; }
count_of() { "${PSQL[@]}" -c "SELECT count(*) FROM $SCHEMA.\"$(table_of "$1")\"" 2>/dev/null; }
table_has() { [[ $(count_of "$1") == "$2" ]]; }

# ---- P1: PostgreSQL stopped under unflushed records
T1=stoppg1-$RUN
produce "$BS" "$T1" $N
worker_props "$T/p1.properties" "$BS"
pg_sink "$T/p1.json" p1 "$T1"
start_worker p1 --worker "$T/p1.properties" "$T/p1.json"
wait_until 60 "P1 to put $M records" metric_at_least p1 cdcflow_task_records_out_total p1 $M
echo "stopping the spare PostgreSQL: $CF_TEST_SPARE_PG_STOP" >&2
eval "$CF_TEST_SPARE_PG_STOP" >&2
timed_stop p1
assert_bounded p1
grep -q "connector p1 task 0: stop not clean" "$T/p1.log" || fail "P1: no 'stop not clean' line: $(tail -5 "$T/p1.log")"
grep -q "$T1/0 offsets 0-$((M - 1))" "$T/p1.log" || fail "P1: uncommitted offsets not logged: $(grep -i 'not clean' "$T/p1.log")"
eval "$CF_TEST_SPARE_PG_START" >&2

# ---- P2: PostgreSQL frozen while a flush runs
T2=stoppg2-$RUN
produce "$BS" "$T2" $N
worker_props "$T/p2.properties" "$BS" "offset.flush.interval.ms=500"
pg_sink "$T/p2.json" p2 "$T2"
start_worker p2 --worker "$T/p2.properties" "$T/p2.json"
wait_until 60 "P2's table to have $N rows" table_has "$T2" $N
echo "freezing the spare PostgreSQL: $CF_TEST_SPARE_PG_FREEZE" >&2
eval "$CF_TEST_SPARE_PG_FREEZE" >&2
produce "$BS" "$T2" 200 # the next flush (within 500 ms) waits on the frozen server
sleep 1.5
timed_stop p2
eval "$CF_TEST_SPARE_PG_THAW" >&2
assert_bounded p2
grep -Eq "stop not clean|did not end within" "$T/p2.log" || fail "P2: what was not committed is not logged: $(tail -5 "$T/p2.log")"

# ---- back: both connectors again, to tables equal to the rows produced
want_p1() { expected_rows $N; }
# the 200 later messages of P2 renamed ids 1..200 (n) and 1..100 (u) again
want_p2() { expected_rows 200; expected_rows $N | sed -n '201,$p'; }
table_is() { diff <("want_$1") <(rows_of "$2") >"$T/$1.diff" 2>&1; }
for p in p1 p2; do
    topic=$T1
    [[ $p == p2 ]] && topic=$T2
    worker_props "$T/${p}b.properties" "$BS" "offset.flush.interval.ms=300"
    start_worker ${p}b --worker "$T/${p}b.properties" "$T/$p.json"
    wait_until 60 "$p's table to equal the rows produced" table_is $p "$topic" || true
    sleep 1 # a flush and its commit after the last put
    timed_stop ${p}b
    assert_bounded ${p}b 0
    table_is $p "$topic" || fail "$p: the table differs from the rows produced: $(head "$T/$p.diff")"
done
"${PSQL[@]}" -c "DROP SCHEMA $SCHEMA CASCADE"
echo OK
