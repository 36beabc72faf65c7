#!/usr/bin/env bash
# test_it_cassandra_e2e.sh - the whole Cassandra path on the real servers,
# live: the shared Cassandra 5.0 node of scripts/servers (ONE node: its
# cdc_raw, $CF_TEST_CASSANDRA_CDC_RAW, is the only replica; a keyspace of
# this run, RF 1) -> `cdcflow cassandra sidecar` following that cdc_raw
# (schema over CQL, consistency ONE, cleanup none: the segments are the
# node's and other tests') -> the shared Kafka (topics of this run's prefix)
# -> one worker with two cdc-sink connectors -> PostgreSQL (a schema of this
# run) AND SQLite.
#
# The workload (tests/sink/cassandra_random_workload.py, random, seeded: the
# seed is printed; CF_SEED=N repeats a run) runs while the sidecar and the
# sinks run: inserts, partial updates, updates to null, column, row, range
# (on both clustering columns, one of them DESC) and partition deletes,
# set/map/list writes, writes USING TIMESTAMP in the past, and an ALTER
# TABLE ... ADD in the middle followed by writes to the new columns (the
# sinks were configured with the schema from before it). The last statement
# of each table writes a marker row; once both targets have both markers
# (one Kafka partition per topic: everything before them was applied), the
# tables are compared.
# Oracle: Cassandra's SELECT JSON at ALL (scripts/cassandra-fixtures/
# oracle.py), compared by tests/sink/cassandra_tables.py. List cells that
# got element writes (appends, prepends, element removals: the commit log
# has no positions, and no value for a removed element, docs/formats.md) are
# not comparable there and are counted; every other cell of every row is.
#
# Kill mode (CF_E2E_KILLS=N, what test_it_cassandra_e2e_kill.sh runs): the
# sidecar and the sink worker are each killed with kill -9 at N random moments
# of the workload (tests/crash/kill_schedule.py: random statements of it; the
# workload waits at its gate for each restarted process, and its pace follows
# the measured first start) and restarted each time, the sidecar from its
# stored state (--offsets: what it published since is published again, which
# the sinks apply by the cells' timestamps), the sinks from their positions
# (static group membership: their partitions back at once); the broker,
# CF_E2E_BROKER (the spare one), is restarted once among the kills with
# CF_E2E_BROKER_RESTART. Then the same markers, clean stops and comparisons.
set -uo pipefail
CLI=${CF_CLI:?} ; TESTS=${CF_TESTS_DIR:?}
if [[ -z ${CF_TEST_KAFKA:-} ]]; then
  envf=$("$TESTS/../scripts/servers" envfile 2>/dev/null)
  [[ -f $envf ]] && { set -a; source "$envf"; set +a; }
fi
: "${CF_TEST_KAFKA:?start the servers: scripts/servers start}" "${CF_TEST_PG:?}" "${CF_TEST_PYTHON:?}" \
  "${CF_TEST_CASSANDRA:?}" "${CF_TEST_CASSANDRA_CDC_RAW:?}"
PY=/usr/bin/python3 # Debian's, with python3-cassandra
KILLS=${CF_E2E_KILLS:-0}
BROKER=${CF_E2E_BROKER:-$CF_TEST_KAFKA}
if ((KILLS)); then
  : "${CF_E2E_BROKER:?the kill mode restarts the broker: give CF_E2E_BROKER (not the shared one)}" \
    "${CF_E2E_BROKER_RESTART:?the kill mode restarts the broker: give CF_E2E_BROKER_RESTART}"
fi
seed=${CF_SEED:-$(( $(date +%s%N) % 1000000007 ))}
n=${CF_E2E_STATEMENTS:-2000}
echo "seed $seed (CF_SEED=$seed repeats this run), $n statements"
run=e2e$$_$RANDOM
ks=$run
schema=$run
T=$(mktemp -d)
sc= sk=
psqlq() { psql "$CF_TEST_PG" -XAtq -v ON_ERROR_STOP=1 -c "$1"; }
cleanup() {
  local f
  for f in "$T/sidecar.pid" "$T/sink.pid"; do # the kill mode's processes, if kill_schedule.py did not stop them
    [[ -f $f ]] && kill -KILL "$(cat "$f")" 2>/dev/null
  done
  [[ -n $sc ]] && kill -TERM "$sc" 2>/dev/null
  [[ -n $sk ]] && kill -TERM "$sk" 2>/dev/null
  [[ -n $sc ]] && wait "$sc" 2>/dev/null
  [[ -n $sk ]] && wait "$sk" 2>/dev/null
  timeout 60 $PY "$TESTS/sink/cassandra_random_workload.py" drop "$CF_TEST_CASSANDRA" "$ks" >/dev/null 2>&1
  psqlq "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1
  if [[ $failed -ne 0 ]]; then # what the processes said, for a failure that does not repeat
    for f in workload.out kill.out sidecar.err sink.err dump.out; do
      [[ -s $T/$f ]] && { echo "--- $f (last lines)"; tail -8 "$T/$f"; }
    done
  fi
  if [[ $failed -ne 0 && -n ${CF_KEEP_FAILED:-} ]]; then echo "kept: $T"; else rm -rf "$T"; fi
}
failed=0
trap cleanup EXIT
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; failed=1; fi; }
t0=$SECONDS

timeout 60 $PY "$TESTS/sink/cassandra_random_workload.py" create "$CF_TEST_CASSANDRA" "$ks" "$T/case" ||
  { echo "FAIL: cannot create keyspace $ks"; exit 1; }
psqlq "CREATE SCHEMA $schema" || { echo "FAIL: cannot create schema $schema"; exit 1; }
topics="$run.$ks.wide,$run.$ks.users"
# one partition each: the markers come after everything else of their table
timeout 60 "$CF_TEST_PYTHON" - "$BROKER" "$topics" <<'EOF' || { echo "FAIL: cannot create the topics"; exit 1; }
import sys
from confluent_kafka.admin import AdminClient, NewTopic
a = AdminClient({"bootstrap.servers": sys.argv[1]})
for f in a.create_topics([NewTopic(t, 1, 1) for t in sys.argv[2].split(",")]).values():
    f.result()
EOF

SIDECAR=("$CLI" cassandra sidecar --replica "$CF_TEST_CASSANDRA_CDC_RAW" --cql "$CF_TEST_CASSANDRA" --consistency ONE
  --cleanup none --tables "$ks.wide,$ks.users" --bootstrap-servers "$BROKER"
  --topic-format "$run.{keyspace}.{table}" --offsets "$T/sidecar.offsets" --poll-ms 200 --progress-ms 2000)
if ((KILLS == 0)); then
  "${SIDECAR[@]}" 2>"$T/sidecar.err" &
  sc=$!
fi
cat > "$T/worker.properties" <<P
bootstrap.servers=$BROKER
offset.storage.file.filename=$T/worker.offsets
consumer.auto.offset.reset=earliest
key.converter=json
value.converter=json
P
# static membership (KIP-345), as tests/crash/crash.py: a worker started again after a
# kill -9 gets its partitions back at once, not after the dead member's session
((KILLS)) && printf 'consumer.group.instance.id=%s\nconsumer.session.timeout.ms=10000\n' "$run" >> "$T/worker.properties"
common='"topics":"'$topics'","cassandra.schema.files":"'$T/case/schema0.cql'","mergeIntervalMs":"200"'
printf '{"name":"%s_pg","config":{"connector.class":"cdc-sink","target":"postgres","connection.url":"%s","postgres.schema":"%s",%s}}\n' \
  "$run" "$CF_TEST_PG" "$schema" "$common" > "$T/pg.json"
printf '{"name":"%s_lite","config":{"connector.class":"cdc-sink","sqlite.path":"%s",%s}}\n' \
  "$run" "$T/e2e.db" "$common" > "$T/lite.json"
SINK=("$CLI" run --worker "$T/worker.properties" "$T/pg.json" "$T/lite.json")
WORKLOAD=($PY "$TESTS/sink/cassandra_random_workload.py" run "$CF_TEST_CASSANDRA" "$ks" "$T/case" "$seed" "$n")
marks() { # both markers in both targets: 4
  local a b
  a=$(psqlq "SELECT (SELECT count(*) FROM ${schema}.${run}_${ks}_users WHERE id = 1000) +
                    (SELECT count(*) FROM ${schema}.${run}_${ks}_wide WHERE p = 1000)" 2>/dev/null)
  b=$(sqlite3 "$T/e2e.db" "SELECT (SELECT count(*) FROM ${run}_${ks}_users WHERE id = 1000) +
                           (SELECT count(*) FROM ${run}_${ks}_wide WHERE p = 1000)" 2>/dev/null)
  echo $(( ${a:-0} + ${b:-0} ))
}
pg_applied() { psqlq "SELECT coalesce(sum(next_offset), 0) FROM ${schema}._cdcflow_positions"; }
lite_applied() { sqlite3 "$T/e2e.db" "SELECT coalesce(sum(next_offset), 0) FROM _cdcflow_positions"; }
applied() { # the fewer records of the two sinks' positions
  local a b
  a=$(pg_applied 2>/dev/null) b=$(lite_applied 2>/dev/null)
  echo $(( ${a:-0} < ${b:-0} ? ${a:-0} : ${b:-0} ))
}
if ((KILLS)); then
  export -f marks applied pg_applied lite_applied psqlq
  export CF_TEST_PG schema run ks T
  q() { printf '%q ' "$@"; }
  timeout 900 python3 "$TESTS/crash/kill_schedule.py" --dir "$T" --seed "$((seed % 1000003))" --kills "$KILLS" \
    --proc "sidecar=exec $(q "${SIDECAR[@]}") 2>>$(q "$T/sidecar.err")" \
    --proc "sink=exec $(q "${SINK[@]}") 2>>$(q "$T/sink.err")" \
    --ready "sidecar=$T/sidecar.err:schema refreshed over CQL (start):1" \
    --ready "sink=$T/sink.err:partitions assigned:2" \
    --workload "exec timeout 600 $(q "${WORKLOAD[@]}") >$(q "$T/workload.out") 2>&1" --applied applied --life-from ready \
    --broker-restart "$CF_E2E_BROKER_RESTART" --until '[[ $(marks) -eq 4 ]]' --timeout 120 >"$T/kill.out" 2>&1
  rc=$?
  cat "$T/kill.out"
  statements=$(sed -n 's/^statements //p' "$T/workload.out")
  check "the workload ran ($statements statements) with the sidecar and the sinks killed $KILLS times each and the broker restarted, both targets applied the last change of each table ($(marks) of 4 markers), both stopped cleanly ($((SECONDS - t0)) s so far)" \
    "[[ $rc -eq 0 && -n '$statements' ]] || { tail -5 '$T/workload.out'; false; }"
  # an error the kills did not cure by chance (a fenced consumer reads nothing more until its
  # process is restarted: docs/operations.md, kill schedules) is a failure too
  check "no ERROR in the logs of the sidecar and the sinks" \
    "! grep -h ' ERROR ' '$T/sidecar.err' '$T/sink.err' | head -5 | grep ."
else
"${SINK[@]}" 2>"$T/sink.err" &
sk=$!

timeout 120 "${WORKLOAD[@]}" >"$T/workload.out" 2>&1
rc=$?
statements=$(sed -n 's/^statements //p' "$T/workload.out")
check "the workload ran ($statements statements, $((SECONDS - t0)) s so far)" \
  "[[ $rc -eq 0 && -n '$statements' ]] || { tail -5 '$T/workload.out'; false; }"

tw=$SECONDS
until [[ $(marks) -eq 4 ]] || ((SECONDS - tw > 90)); do
  kill -0 "$sc" 2>/dev/null || break
  kill -0 "$sk" 2>/dev/null || break
  sleep 0.5
done
check "both targets applied the last change of each table ($(marks) of 4 markers, $((SECONDS - tw)) s after the workload)" \
  "[[ \$(marks) -eq 4 ]] || { tail -n 5 '$T/sidecar.err' '$T/sink.err'; false; }"
kill -TERM "$sk"; wait "$sk"; rc=$?; sk=
check "the sinks stopped cleanly (exit $rc)" "[[ $rc -eq 0 ]] || { tail -5 '$T/sink.err'; false; }"
kill -TERM "$sc"; wait "$sc"; rc=$?; sc=
check "the sidecar stopped cleanly (exit $rc)" "[[ $rc -eq 0 ]] || { tail -5 '$T/sidecar.err'; false; }"
fi

# the events as the sinks read them, for the comparer (field schemas, list element writes)
timeout 60 "$CF_TEST_PYTHON" - "$BROKER" "$topics" "$T/events.jsonl" >"$T/dump.out" 2>&1 <<'EOF'
import json, sys, time
from confluent_kafka import Consumer, TopicPartition
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "dump%f" % time.time(), "enable.auto.commit": False})
parts = [TopicPartition(t, 0, 0) for t in sys.argv[2].split(",")]
ends = {p.topic: c.get_watermark_offsets(p, timeout=10)[1] for p in parts}
c.assign(parts)
n, got = 0, {t: 0 for t in ends}
with open(sys.argv[3], "w") as f:
    t0 = time.time()
    while any(got[t] < ends[t] for t in ends) and time.time() - t0 < 40:
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        got[m.topic()] = m.offset() + 1
        f.write(json.dumps({"topic": m.topic(), "key": m.key().decode(), "payload": m.value().decode()}) + "\n")
        n += 1
print(n)
EOF
events=$(tail -1 "$T/dump.out")
check "the events on Kafka read back ($events)" "[[ \$? -eq 0 && ${events:-0} -gt 0 ]] || { cat '$T/dump.out'; false; }"
lite_n=$(lite_applied)
pg_n=$(pg_applied)
check "each sink applied every event on Kafka ($events; PostgreSQL $pg_n, SQLite $lite_n; $statements statements)" \
  "[[ $lite_n -eq $events && $pg_n -eq $events ]]"
check "PostgreSQL: every table equals Cassandra's SELECT JSON at ALL" \
  "python3 '$TESTS/sink/cassandra_tables.py' pg:$schema '$T/case' '$T/events.jsonl' --prefix '${run}_' >'$T/cmp_pg' 2>&1; r=\$?; cat '$T/cmp_pg'; [[ \$r -eq 0 ]]"
check "SQLite: every table equals Cassandra's SELECT JSON at ALL" \
  "python3 '$TESTS/sink/cassandra_tables.py' sqlite:$T/e2e.db '$T/case' '$T/events.jsonl' --prefix '${run}_' >'$T/cmp_lite' 2>&1; r=\$?; cat '$T/cmp_lite'; [[ \$r -eq 0 ]]"
echo "seed $seed: $((SECONDS - t0)) s"
exit $failed
