#!/usr/bin/env bash
# test_it_debezium_pipeline.sh - issues 16 and 18, end to end against the real
# systems: PostgreSQL (logical decoding, pgoutput) -> the real Debezium
# PostgreSQL connector 3.6.1.Final in Kafka Connect standalone (scripts/debezium,
# jars from Maven Central) -> the real Kafka broker -> `cdcflow run` with four
# cdc-sink connectors into SQLite and into PostgreSQL:
#   seed-sqlite, seed-pg  the seed's sink configuration (shared/seeds/000_*):
#                         ExtractNewRecordState delete.handling.mode=rewrite,
#                         drop.tombstones=false, cdcChangeSequenceNumberField=version1
#   env-sqlite, env-pg    Debezium's raw envelopes (no transform), ordered by offset
# Keys and values through Connect's JsonConverter with schemas on both sides.
# Two source tables in a schema of their own: one REPLICA IDENTITY DEFAULT
# (deletes carry only the key, version1 0; unchanged TOASTed columns come as
# __debezium_unavailable_value, its bytes, a one-element text[] or its bytes as
# int4[]), one REPLICA IDENTITY FULL. The workload (debezium_pipeline.py,
# seed printed, CF_TEST_SEED to replay): rows the connector's initial snapshot
# reads, then random inserts, updates (version kept or bumped, TOASTed columns
# left alone or changed), deletes, re-inserts (repeating the version),
# primary-key changes and multi-statement transactions, then the seed's
# 32-operation sequence, then a fence row. A primary-key change of a row with
# TOASTed values under REPLICA IDENTITY DEFAULT cannot be applied (the create
# of the new key has placeholders for values only the old key's row held, and
# the delete before it removed that row: an error, checked by
# test_it_debezium_replica_default_pg.sh): the DEFAULT table's key changes
# also rewrite those columns, the FULL table's move TOASTed rows as they are
# (docs/operations.md, Debezium end to end). Once every target has the fence,
# each of the 8 target tables must equal its source table, column by column.
# Connect starts once; at exit it is stopped and its slot, its publication and
# the schemas are dropped (the topics stay: unique names per run).
#
# Kill mode (CF_TEST_DBZ_KILLS=N, what test_it_debezium_kill.sh runs): the
# sink worker starts right after the snapshot, and the streamed workload runs
# while it consumes (tests/crash/kill_schedule.py; one connection, the two
# tables' transactions interleaved at random); the worker is killed with
# kill -9 at N random moments of the workload and restarted each time (static
# group membership, as tests/crash/crash.py: the restarted worker gets its
# partitions back at once), and the broker, CF_TEST_DBZ_BROKER (the spare one:
# the restart would hit the tests beside this one on the shared broker), is
# restarted once among the kills with CF_TEST_DBZ_BROKER_RESTART. Then the
# same fence, the same comparison, the same clean stop.
set -euo pipefail
CLI=${CF_CLI:?CF_CLI not set}
: "${CF_TEST_PG:?CF_TEST_PG not set: start the servers with scripts/servers start}"
: "${CF_TEST_KAFKA:?CF_TEST_KAFKA not set: start the servers with scripts/servers start}"
KILLS=${CF_TEST_DBZ_KILLS:-0}
BROKER=${CF_TEST_DBZ_BROKER:-$CF_TEST_KAFKA}
if ((KILLS)); then
    : "${CF_TEST_DBZ_BROKER:?the kill mode restarts the broker: give CF_TEST_DBZ_BROKER (not the shared one)}"
    : "${CF_TEST_DBZ_BROKER_RESTART:?the kill mode restarts the broker: give CF_TEST_DBZ_BROKER_RESTART}"
fi
HERE=$(cd "$(dirname "$0")" && pwd)
DBZ=$HERE/../../scripts/debezium
PY=$HERE/debezium_pipeline.py
W=$(mktemp -d /tmp/cf_dbz.XXXXXX)
RUNID=$$_$RANDOM
S=it_dbz_$RUNID          # source schema (its topics: cdc_postgres_<S>_<table>)
TS=it_dbz_tgt_$RUNID     # PostgreSQL target schemas: ${TS}_seed, ${TS}_env
SLOT=dbz_$RUNID
SEED=${CF_TEST_SEED:-$RANDOM}
NOPS=${CF_TEST_DBZ_OPS:-300}
t0=$SECONDS
psqlq() { psql "$CF_TEST_PG" -XAtq -v ON_ERROR_STOP=1 "$@"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
cleanup() { # every step whatever the one before did: a failed test must not leave Connect or its slot
    set +e
    if [[ -f $W/sink.pid ]]; then # the kill mode's worker, if kill_schedule.py did not stop it
        kill -KILL "$(cat "$W/sink.pid")" 2>/dev/null
    fi
    if [[ -f $W/run.pid ]]; then
        kill -TERM "$(cat "$W/run.pid")" 2>/dev/null && sleep 1
        kill -KILL "$(cat "$W/run.pid")" 2>/dev/null
    fi
    "$DBZ" stop "$W/connect"
    # the slot is dropped once Connect's walsender has gone
    for _ in $(seq 1 50); do
        [[ $(psqlq -c "SELECT count(*) FROM pg_replication_slots WHERE slot_name = '$SLOT' AND active" 2>/dev/null) == 0 ]] && break
        sleep 0.2
    done
    psqlq -c "SELECT pg_drop_replication_slot('$SLOT') FROM pg_replication_slots WHERE slot_name = '$SLOT'" >/dev/null 2>&1 || true
    psqlq -c "DROP PUBLICATION IF EXISTS $SLOT" -c "DROP SCHEMA IF EXISTS $S CASCADE" \
        -c "DROP SCHEMA IF EXISTS ${TS}_seed CASCADE" -c "DROP SCHEMA IF EXISTS ${TS}_env CASCADE" >/dev/null 2>&1 || true
    if [[ -n ${KEEP:-} ]]; then echo "kept $W" >&2; else rm -rf "$W"; fi
}
trap cleanup EXIT
echo "workload seed $SEED ($NOPS random operations per table; CF_TEST_SEED=$SEED replays it)" >&2

# ---- the source tables, the rows of the initial snapshot
ident_d=default ident_f=full
for t in d f; do
    ident=ident_$t
    python3 "$PY" workload "$S" "$t" "$((SEED + $(printf '%d' "'$t")))" "$NOPS" "${!ident}" >"$W/$t.sql"
    sed -n '1,/^-- the snapshot ends here$/p' "$W/$t.sql" >"$W/$t.snap.sql"
    sed '1,/^-- the snapshot ends here$/d' "$W/$t.sql" >"$W/$t.stream.sql"
done
{
    echo "CREATE SCHEMA $S; CREATE SCHEMA ${TS}_seed; CREATE SCHEMA ${TS}_env;"
    python3 "$PY" ddl "$S" d default
    python3 "$PY" ddl "$S" f full
    cat "$W/d.snap.sql" "$W/f.snap.sql"
} | psqlq -f - >/dev/null

# ---- Kafka Connect with the Debezium PostgreSQL connector, started once
pg_kv() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$CF_TEST_PG"; }
cat >"$W/source.properties" <<EOF
name=dbz-$RUNID
connector.class=io.debezium.connector.postgresql.PostgresConnector
tasks.max=1
plugin.name=pgoutput
database.hostname=$(pg_kv host)
database.port=$(pg_kv port)
database.user=$(pg_kv user)
database.password=
database.dbname=$(pg_kv dbname)
topic.prefix=cdc_postgres
topic.delimiter=_
slot.name=$SLOT
publication.name=$SLOT
publication.autocreate.mode=filtered
table.include.list=$S.d,$S.f
snapshot.mode=initial
EOF
"$DBZ" start "$W/connect" --bootstrap "$BROKER" "$W/source.properties" >&2 || fail "Kafka Connect did not start"
echo "[$((SECONDS - t0))s] Connect running" >&2
# the slot exists (the connector created it before its snapshot): every later change is captured
[[ $(psqlq -c "SELECT count(*) FROM pg_replication_slots WHERE slot_name = '$SLOT'") == 1 ]] || fail "no slot $SLOT"

# ---- the streamed workload (both tables interleaved in time); in the kill mode later, while the sink runs
stream_done() { echo "[$((SECONDS - t0))s] workload done: $(psqlq -c "SELECT count(*) FROM $S.d") + $(psqlq -c "SELECT count(*) FROM $S.f") rows" >&2; }
if ((KILLS == 0)); then
    psqlq -f "$W/d.stream.sql" >/dev/null &
    dpid=$!
    psqlq -f "$W/f.stream.sql" >/dev/null || fail "the workload on $S.f failed"
    wait $dpid || fail "the workload on $S.d failed"
    stream_done
fi

# ---- cdc-sink from the real topics into SQLite and PostgreSQL
TOPICS=cdc_postgres_${S}_d,cdc_postgres_${S}_f
# Debezium creates each topic with its first record (the snapshot's, which may
# still be running): a consumer subscribed to a topic that does not exist yet
# finds it only at its next metadata refresh (librdkafka's
# topic.metadata.refresh.interval.ms, 5 min, as the Java consumer's
# metadata.max.age.ms), so the sinks start once both topics exist.
topic_exists() { kcat -b "$BROKER" -L -t "$1" -m 5 -X allow.auto.create.topics=false 2>/dev/null | grep -q "with 1 partitions"; }
for tp in ${TOPICS//,/ }; do
    for ((i = 0; i < 300; i++)); do topic_exists "$tp" && break; sleep 0.2; done
    topic_exists "$tp" || fail "Debezium did not create topic $tp within 60 s; $(tail -5 "$W/connect/connect.log")"
done
cat >"$W/worker.properties" <<EOF
bootstrap.servers=$BROKER
key.converter=org.apache.kafka.connect.json.JsonConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
offset.storage.file.filename=$W/sink.offsets.json
rest.port=0
EOF
unwrap='"transforms": "unwrap",
    "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
    "transforms.unwrap.delete.handling.mode": "rewrite",
    "transforms.unwrap.drop.tombstones": "false",
    "cdcChangeSequenceNumberField": "version1",'
sink() { # sink NAME TARGET-MEMBERS [SEED-MEMBERS]
    cat >"$W/$1.json" <<EOF
{
  "name": "$1-$RUNID",
  "config": {
    "connector.class": "cdc-sink",
    "tasks.max": "1",
    "topics": "$TOPICS",
    "autoCreateTables": "true",
    "sanitizeTopics": "true",
    ${3:-}
    $2
  }
}
EOF
}
sink seed-sqlite "\"sqlite.path\": \"$W/seed.db\"" "$unwrap"
sink seed-pg "\"connection.url\": \"$CF_TEST_PG\", \"postgres.schema\": \"${TS}_seed\"" "$unwrap"
sink env-sqlite "\"sqlite.path\": \"$W/env.db\""
sink env-pg "\"connection.url\": \"$CF_TEST_PG\", \"postgres.schema\": \"${TS}_env\""
for c in seed-sqlite seed-pg env-sqlite env-pg; do
    out=$("$CLI" validate "$W/$c.json") || fail "validate $c: $out"
done
targets=()
for t in d f; do
    tab=cdc_postgres_${S}_$t
    targets+=("sqlite:$W/seed.db:$tab" "pg:${TS}_seed.$tab" "sqlite:$W/env.db:$tab" "pg:${TS}_env.$tab")
done
RUN=(run --worker worker.properties seed-sqlite.json seed-pg.json env-sqlite.json env-pg.json)
if ((KILLS)); then
    # static membership (KIP-345), as tests/crash/crash.py: a worker started again
    # after a kill -9 gets its partitions back at once, not after the dead member's session
    printf 'consumer.group.instance.id=dbzkill_%s\nconsumer.session.timeout.ms=10000\n' "$RUNID" >>"$W/worker.properties"
    printf -v fenced '%q ' python3 "$PY" fenced "$CF_TEST_PG" "${targets[@]}"
    printf -v sinkcmd '%q ' "$CLI" "${RUN[@]}"
    python3 "$HERE/../crash/kill_schedule.py" --dir "$W" --seed "$SEED" --kills "$KILLS" \
        --proc "sink=cd $(printf %q "$W") && exec $sinkcmd 2>>$(printf %q "$W/run.log")" \
        --ready "sink=$W/run.log:partitions assigned:4" \
        --workload "$(printf '%q ' python3 "$PY" feed "$CF_TEST_PG" "$SEED" "$W/d.stream.sql" "$W/f.stream.sql")" \
        --applied "$(printf '%q ' python3 "$PY" applied "$CF_TEST_PG" "${targets[@]:0:4}")" \
        --broker-restart "$CF_TEST_DBZ_BROKER_RESTART" --until "$fenced" --timeout "${CF_TEST_DBZ_WAIT:-120}" >&2 || {
        for x in "${targets[@]}"; do python3 "$PY" fenced "$CF_TEST_PG" "$x" || echo "no fence row in $x" >&2; done
        fail "the kill schedule failed (seed $SEED)"
    }
    stream_done
else
(cd "$W" && exec "$CLI" "${RUN[@]}") 2>"$W/run.log" &
echo $! >"$W/run.pid"
deadline=$((SECONDS + ${CF_TEST_DBZ_WAIT:-120}))
until python3 "$PY" fenced "$CF_TEST_PG" "${targets[@]}"; do
    kill -0 "$(cat "$W/run.pid")" 2>/dev/null || { tail -30 "$W/run.log" >&2; fail "cdcflow run exited early"; }
    if ((SECONDS > deadline)); then
        tail -30 "$W/run.log" >&2
        "$DBZ" status "$W/connect" "dbz-$RUNID" >&2 || true
        for x in "${targets[@]}"; do python3 "$PY" fenced "$CF_TEST_PG" "$x" || echo "no fence row in $x" >&2; done
        python3 "$PY" compare "$CF_TEST_PG" "$S.d" "${targets[@]:0:4}" >&2 || true
        python3 "$PY" compare "$CF_TEST_PG" "$S.f" "${targets[@]:4:4}" >&2 || true
        fail "the targets did not all get the fence row within ${CF_TEST_DBZ_WAIT:-120} s"
    fi
    sleep 0.5
done
fi
echo "[$((SECONDS - t0))s] every target caught up" >&2

rc=0
python3 "$PY" compare "$CF_TEST_PG" "$S.d" "${targets[@]:0:4}" >&2 || rc=1
python3 "$PY" compare "$CF_TEST_PG" "$S.f" "${targets[@]:4:4}" >&2 || rc=1
if ((rc)); then
    grep -E "ERROR|WARN" "$W/run.log" | head -20 >&2 || true
    fail "a target table differs from its source table (seed $SEED)"
fi

# the stop is clean (kill mode: kill_schedule.py stopped the last worker, exit 0) and the log has no error
if ((KILLS == 0)); then
    kill -TERM "$(cat "$W/run.pid")"
    src=0
    wait "$(cat "$W/run.pid")" || src=$?
    rm -f "$W/run.pid"
    [[ $src == 0 ]] || { tail -20 "$W/run.log" >&2; fail "cdcflow run exited $src after SIGTERM"; }
fi
! grep -q " ERROR " "$W/run.log" || { grep " ERROR " "$W/run.log" | head >&2; fail "errors in the cdcflow log"; }
echo "[$((SECONDS - t0))s] done" >&2
echo "1 passed, 0 failed"
