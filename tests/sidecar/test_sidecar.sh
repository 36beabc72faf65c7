#!/usr/bin/env bash
# test_sidecar.sh - `cdcflow cassandra sidecar` end to end over real segments
# (tests/data/cassandra/<case>: Cassandra 5.0 nodes, every commit log format),
# each node's cdc_raw copied as three replicas.
#
# Oracle: Cassandra's own `SELECT JSON` of every table after the workload
# (expected/*.jsonl). events_replay.py applies the change events the way a
# consumer would (by timestamp) and must arrive at Cassandra's rows: every
# change published once, none lost, values right for every CQL type.
# Also: one replica missing a segment (LOCAL_QUORUM publishes everything, ALL
# drops that segment's changes after the timeout and counts them), a second
# --once run resumes from the stored state (nothing again), cleanup, --config
# in the design's JSON shape, live tailing with /metrics, kill -9 and restart
# (nothing lost), usage errors.
set -uo pipefail
CLI=${CF_CLI:?} ; TESTS=${CF_TESTS_DIR:?}
DATA=$TESTS/data/cassandra
REPLAY="python3 $TESTS/sidecar/events_replay.py"
T=$(mktemp -d) ; trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$T"' EXIT
failed=0
ok() { echo "ok: $1"; }
fail() { echo "FAIL: $1"; failed=1; }
check() { if eval "$2"; then ok "$1"; else fail "$1"; fi; }

# replicas CASE DIR [SKIP_REPLICA SKIP_SEG]: three copies of the case's cdc_raw
replicas() {
  local c=$1 d=$2 i
  rm -rf "$d"; mkdir -p "$d"
  for i in 1 2 3; do
    cp -r "$DATA/$c/cdc_raw" "$d/n$i"
  done
  if [[ $# -ge 4 ]]; then
    local seg
    seg=$(ls "$d/n$3"/*_cdc.idx | sort | sed -n "$(( $4 + 1 ))p")
    rm -f "$seg" "${seg%_cdc.idx}.log"
  fi
}

sidecar() { "$CLI" cassandra sidecar "$@"; }

for dir in "$DATA"/v7-* "$DATA"/v8-*; do
  c=$(basename "$dir")
  [[ -d $dir/cdc_raw ]] || continue
  replicas "$c" "$T/$c"
  sidecar --schema "$dir/schema.cql" --replica "$T/$c/n1" --replica "$T/$c/n2" --replica "$T/$c/n3" --rf 3 \
    --consistency LOCAL_QUORUM --once --output "$T/$c.jsonl" --offsets "$T/$c.offsets" 2>"$T/$c.err"
  rc=$?
  check "$c: exit 0 (got $rc)" "[[ $rc -eq 0 ]]"
  check "$c: events replayed equal Cassandra's SELECT JSON" \
    "$REPLAY '$T/$c.jsonl' '$dir' >'$T/$c.check' 2>&1 || { cat '$T/$c.check'; false; }"
  check "$c: progress line with segments and bytes" "grep -q 'everything present is read: segments [0-9]*/[0-9]*, [0-9.]*/[0-9.]* MB' '$T/$c.err'"
  check "$c: nothing pending or dropped" "grep 'everything present is read' '$T/$c.err' | grep -q ' 0 pending, 0 dropped'"
  check "$c: the counter table is reported at start" "grep -q 'cdcks.counters: counter table: its changes are not published' '$T/$c.err'"
  check "$c: the segments are kept (--once, no --cleanup)" "[[ \$(ls '$T/$c/n1'/*.log | wc -l) -ge 1 ]]"
  # one replica, ONE: the same events (each change once, whatever the copies)
  sidecar --schema "$dir/schema.cql" --replica "$T/$c/n1" --consistency ONE --once --output "$T/$c.one.jsonl" \
    --offsets "$T/$c.one.offsets" 2>/dev/null
  check "$c: three replicas at LOCAL_QUORUM give the events of one replica at ONE" \
    "[[ \$(wc -l < '$T/$c.jsonl') -eq \$(wc -l < '$T/$c.one.jsonl') && \$(wc -l < '$T/$c.jsonl') -gt 40 ]]"
  # a second run resumes from the stored state: nothing new
  sidecar --schema "$dir/schema.cql" --replica "$T/$c/n1" --replica "$T/$c/n2" --replica "$T/$c/n3" --rf 3 \
    --once --output "$T/$c.again.jsonl" --offsets "$T/$c.offsets" 2>/dev/null
  check "$c: a second run publishes nothing again" "[[ ! -s '$T/$c.again.jsonl' ]]"
done

R=v8-lz4-rollover
RD=$DATA/$R
# node3 lacks its second segment
replicas $R "$T/miss" 3 1
sidecar --schema "$RD/schema.cql" --replica "$T/miss/n1" --replica "$T/miss/n2" --replica "$T/miss/n3" --rf 3 \
  --consistency LOCAL_QUORUM --once --output "$T/miss.lq.jsonl" --offsets "$T/miss.lq.offsets" 2>"$T/miss.lq.err"
check "missing segment, LOCAL_QUORUM: every change (replay equals Cassandra)" \
  "$REPLAY '$T/miss.lq.jsonl' '$RD' >'$T/miss.lq.check' 2>&1 || { cat '$T/miss.lq.check'; false; }"
sidecar --schema "$RD/schema.cql" --replica "$T/miss/n1" --replica "$T/miss/n2" --replica "$T/miss/n3" --rf 3 \
  --consistency ALL --timeout-ms 1000 --once --output "$T/miss.all.jsonl" --offsets "$T/miss.all.offsets" 2>"$T/miss.all.err"
all=$(wc -l < "$T/miss.all.jsonl"); lq=$(wc -l < "$T/miss.lq.jsonl")
check "missing segment, ALL: that segment's changes are not published ($all of $lq events)" "[[ $all -lt $lq && $all -gt 0 ]]"
pending=$(grep 'everything present is read' "$T/miss.all.err" | sed -n 's/.* \([0-9]*\) pending.*/\1/p')
check "missing segment, ALL: they wait in the state ($pending pending)" "[[ ${pending:-0} -gt 100 ]]"
sleep 1.2
sidecar --schema "$RD/schema.cql" --replica "$T/miss/n1" --replica "$T/miss/n2" --replica "$T/miss/n3" --rf 3 \
  --consistency ALL --timeout-ms 1000 --once --output "$T/miss.all2.jsonl" --offsets "$T/miss.all.offsets" 2>"$T/miss.all2.err"
check "missing segment, ALL: after the timeout they are dropped, logged with keyspace, table and token" \
  "grep -q 'change dropped: cdcks\.[a-z_]* token -\?[0-9]*: 2 of the replicas wrote it within 1000 ms, ALL needs more' '$T/miss.all2.err'"
check "missing segment, ALL: and counted ($pending dropped)" "grep 'stopped:' '$T/miss.all2.err' | grep -q ' 0 pending, $pending dropped'"
check "missing segment, ALL: nothing published again" "[[ ! -s '$T/miss.all2.jsonl' ]]"

# cleanup: finished segments leave cdc_raw once acknowledged and stored
replicas $R "$T/clean"
sidecar --schema "$RD/schema.cql" --replica "$T/clean/n1" --replica "$T/clean/n2" --replica "$T/clean/n3" --rf 3 \
  --consistency QUORUM --once --cleanup delete --output "$T/clean.jsonl" --offsets "$T/clean.offsets" 2>"$T/clean.err"
check "cleanup delete: segments and indexes gone" "[[ \$(find '$T/clean' -type f | wc -l) -eq 0 ]]"
check "cleanup delete: every change published first" "[[ \$(wc -l < '$T/clean.jsonl') -eq $lq ]]"
replicas $R "$T/arch"
sidecar --schema "$RD/schema.cql" --replica "$T/arch/n1" --replica "$T/arch/n2" --replica "$T/arch/n3" --rf 3 \
  --once --cleanup archive --archive-dir "$T/archive" --output "$T/arch.jsonl" --offsets "$T/arch.offsets" 2>/dev/null
check "cleanup archive: the segments are in the archive, per replica" "[[ \$(ls '$T'/archive/*/*.log | wc -l) -eq 12 ]]"

# --config in the design's shape (arrays, service keys), flags on top
replicas $R "$T/conf"
cat > "$T/conf.json" <<EOF
{"config": {"tables": ["cdcks.events", "cdcks.simple"], "consistency.level": "QUORUM",
 "cdc_raw.dirs": ["$T/conf/n1", "$T/conf/n2", "$T/conf/n3"], "schema.files": "$RD/schema.cql",
 "replication.factor": 3, "topic.format": "cdc.{keyspace}.{table}", "once": true}}
EOF
sidecar --config "$T/conf.json" --output "$T/conf.jsonl" --offsets "$T/conf.offsets" 2>"$T/conf.err"
rc=$?
check "--config: exit 0 (got $rc)" "[[ $rc -eq 0 ]]"
check "--config: only the tables listed, on the topics formatted" \
  "[[ \$(grep -c '\"topic\":\"cdc.cdcks.events\"' '$T/conf.jsonl') -gt 0 && \$(grep -v '\"topic\":\"cdc.cdcks.\(events\|simple\)\"' '$T/conf.jsonl' | wc -l) -eq 0 ]]"
echo '{"consistency.level": "SOMETIMES", "cdc_raw.dirs": "x"}' > "$T/bad.json"
sidecar --config "$T/bad.json" --output "$T/bad.jsonl" --schema "$RD/schema.cql" 2>"$T/bad.err"
rc=$?
check "--config with a bad level: exit 2 naming it" "[[ $rc -eq 2 ]] && grep -q 'consistency.level' '$T/bad.err'"

# usage
sidecar --help >"$T/help" 2>&1
check "--help: exit 0 and says what it does" "grep -q 'deduplicates the replicas' '$T/help' && grep -q -- '--consistency LEVEL' '$T/help'"
sidecar --schema "$RD/schema.cql" --once --output "$T/x.jsonl" 2>"$T/u1"; rc=$?
check "no --replica: exit 2" "[[ $rc -eq 2 ]] && grep -q 'no replica directory' '$T/u1'"
sidecar --schema "$RD/schema.cql" --replica "$T/conf/n1" --once 2>"$T/u2"; rc=$?
check "no --output and no Kafka: exit 2" "[[ $rc -eq 2 ]] && grep -q 'nowhere to publish' '$T/u2'"
sidecar --schema "$RD/schema.cql" --replica "$T/conf/n1" --replica "$T/conf/n2" --consistency THREE --rf 3 --once \
  --output "$T/x.jsonl" --offsets "$T/x.offsets" 2>"$T/u3"; rc=$?
check "a level the replicas cannot meet: the task fails at start saying so (exit $rc)" "[[ $rc -eq 1 ]] && grep -q 'THREE cannot be met' '$T/u3'"
sidecar --schema "$RD/schema.cql" --replica "$T/nonexistent" --once --output "$T/x.jsonl" --offsets "$T/x2.offsets" 2>"$T/u4"; rc=$?
check "an unreadable replica directory: a failure naming it" "[[ $rc -ne 0 ]] && grep -q 'cannot read replica directory' '$T/u4'"

# live: empty replica directories, then Cassandra's segments arrive one by one
mkdir -p "$T/live/n1" "$T/live/n2" "$T/live/n3"
port=$(( 20000 + RANDOM % 20000 ))
# (the binary itself in the background, not the shell function: signals must reach it)
"$CLI" cassandra sidecar --schema "$RD/schema.cql" --replica "$T/live/n1" --replica "$T/live/n2" --replica "$T/live/n3" \
  --rf 3 --consistency QUORUM --output "$T/live.jsonl" --offsets "$T/live.offsets" --rest $port --cleanup none 2>"$T/live.err" &
pid=$!
# the REST server may answer before the task started (and set its metrics)
for i in $(seq 100); do curl -sf "http://127.0.0.1:$port/metrics" >"$T/metrics" 2>/dev/null && grep -q '^cdc_pending' "$T/metrics" && break; sleep 0.1; done
check "live: /metrics has the sidecar's families" \
  "grep -q '^cdc_pending_digests{connector=\"cassandra-cdc\",task=\"0\"} 0' '$T/metrics' && grep -q '# TYPE cdc_publish_latency_seconds histogram' '$T/metrics'"
segs=$(ls "$DATA/$R/cdc_raw"/*.log | sort)
t0=$(date +%s%N)
first=$(echo "$segs" | head -1)
for n in n1 n2 n3; do cp "$first" "${first%.log}_cdc.idx" "$T/live/$n/"; done
for i in $(seq 100); do [[ -s $T/live.jsonl ]] && break; sleep 0.02; done
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
check "live: a new segment's changes are out within a second (${ms} ms)" "[[ -s '$T/live.jsonl' && $ms -lt 1000 ]]"
for s in $(echo "$segs" | tail -n +2); do for n in n1 n2 n3; do cp "$s" "${s%.log}_cdc.idx" "$T/live/$n/"; done; done
for i in $(seq 100); do [[ $(wc -l < "$T/live.jsonl") -ge $lq ]] && break; sleep 0.05; done
sleep 1.3 # a state flush (every second)
curl -sf "http://127.0.0.1:$port/metrics" >"$T/metrics"
check "live: every change once ($(wc -l < "$T/live.jsonl") of $lq)" "[[ \$(wc -l < '$T/live.jsonl') -eq $lq ]]"
check "live: /metrics counts them" "grep -q '^cdc_published_total{connector=\"cassandra-cdc\",task=\"0\"} [1-9]' '$T/metrics' && grep -q '^cdc_duplicates_dropped_total{connector=\"cassandra-cdc\",task=\"0\"} [1-9]' '$T/metrics'"
kill -TERM $pid; wait $pid; rc=$?
check "live: SIGTERM ends it cleanly (exit $rc)" "[[ $rc -eq 0 ]]"

# kill -9 in the middle of a catch-up, restart: nothing lost
replicas $R "$T/k9"
"$CLI" cassandra sidecar --schema "$RD/schema.cql" --replica "$T/k9/n1" --replica "$T/k9/n2" --replica "$T/k9/n3" \
  --rf 3 --consistency QUORUM --output "$T/k9.jsonl" --offsets "$T/k9.offsets" --cleanup none 2>"$T/k9.err" &
pid=$!
for i in $(seq 200); do [[ -s $T/k9.offsets ]] && break; sleep 0.01; done
kill -9 $pid; wait $pid 2>/dev/null
before=$(wc -l < "$T/k9.jsonl")
sidecar --schema "$RD/schema.cql" --replica "$T/k9/n1" --replica "$T/k9/n2" --replica "$T/k9/n3" --rf 3 \
  --consistency QUORUM --once --output "$T/k9b.jsonl" --offsets "$T/k9.offsets" 2>>"$T/k9.err"
cat "$T/k9.jsonl" "$T/k9b.jsonl" > "$T/k9all.jsonl"
after=$(wc -l < "$T/k9all.jsonl")
check "kill -9 and restart: replay of all lines equals Cassandra ($before lines before the kill, $after after)" \
  "$REPLAY '$T/k9all.jsonl' '$RD' >'$T/k9.check' 2>&1 || { cat '$T/k9.check'; false; }"
check "kill -9 and restart: duplicates bounded by what was published since the last stored state" "[[ $after -ge $lq && $after -le $(( lq + before )) ]]"

exit $failed
