#!/usr/bin/env bash
# test_cassandra_kill9.sh - kill -9 of the cdc-sink applying Cassandra change
# events, at random moments, then restarts of the same connector on the same
# database until a run ends by itself: the tables equal Cassandra's
# SELECT JSON at ALL (tests/data/cassandra/rf3-one-down/expected, the real
# cluster's answer).
#
# Each apply stores the rows, the partitions' state (_cdc_cassandra_state)
# and where the input stands (_cdcflow_positions) in one transaction, so a
# kill leaves all three at the same record and the restart goes on from
# there. The input is every copy of every replica (one sidecar per node at
# ONE: three copies of each change) shuffled, one record per apply
# (batchMaxRecords=1) so that kills land between and inside many applies.
set -uo pipefail
CLI=${CF_CLI:?} ; TESTS=${CF_TESTS_DIR:?}
DATA=$TESTS/data/cassandra
c=rf3-one-down
T=$(mktemp -d) ; trap 'rm -rf "$T"' EXIT
failed=0
ok() { echo "ok: $1"; }
fail() { echo "FAIL: $1"; failed=1; }
check() { if eval "$2"; then ok "$1"; else fail "$1"; fi; }

: > "$T/all.jsonl"
for i in 1 2 3; do
  cp -r "$DATA/$c/node$i/cdc_raw" "$T/n$i"
  "$CLI" cassandra sidecar --schema "$DATA/$c/schema.cql" --replica "$T/n$i" --consistency ONE --once \
    --output "$T/n$i.jsonl" --offsets "$T/n$i.offsets" 2>"$T/n$i.err"
  cat "$T/n$i.jsonl" >> "$T/all.jsonl"
done
# shuffled, then numbered again (one partition each topic, offsets in file order)
python3 - "$T/all.jsonl" "$T/in.jsonl" <<'PY'
import json, random, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
random.Random(9).shuffle(lines)
nxt = {}
with open(sys.argv[2], "w") as out:
    for m in lines:
        m["partition"] = 0
        m["offset"] = nxt.get(m["topic"], 0)
        nxt[m["topic"]] = m["offset"] + 1
        out.write(json.dumps(m) + "\n")
PY
n=$(wc -l < "$T/in.jsonl")
check "input: every copy of the three replicas ($n events)" "[[ $n -gt 600 ]]"
printf '{"name":"k9","config":{"connector.class":"cdc-sink","topics":"cdcks.users,cdcks.events","sqlite.path":"%s","key.converter":"json","value.converter":"json","cassandra.schema.files":"%s","batchMaxRecords":"1"}}\n' \
  "$T/k9.db" "$DATA/$c/schema.cql" > "$T/k9.json"
# The kill moments follow how long a whole run takes on this machine now (a
# fixed sleep was too long under a loaded CI: runs ended by themselves before
# the kills and the rounds ran out): each kill lands at a random point of
# what is left of the input.
t0=$(date +%s.%N)
"$CLI" run "$T/k9.json" --input "$T/in.jsonl" 2>"$T/ref.err" >/dev/null \
  || { echo "a whole run failed"; tail -5 "$T/ref.err"; exit 1; }
whole=$(python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$t0" "$(date +%s.%N)")
rm -f "$T"/k9.db*
echo "a whole run takes ${whole}s"
kills=0 done=0 inside=0 at=0
for round in $(seq 1 100); do
  pause=$(python3 -c "import random, sys; w, at, n = map(float, sys.argv[1:]); print(round(w * (0.15 + 0.85 * (n - at) / n) * random.uniform(0.2, 0.9), 3))" "$whole" "$at" "$n")
  # Enough kills (and enough of them in the middle): the next run goes on
  # until it ends by itself. Without this the pauses, which shrink as the
  # input runs out, became shorter than a run's start-up once every event
  # was applied, and every later run was killed too (CI: 88 kills, no end).
  final=0
  [[ $kills -ge 5 && $inside -ge 3 ]] && final=1
  "$CLI" run "$T/k9.json" --input "$T/in.jsonl" 2>>"$T/k9.err" &
  pid=$!
  [[ $final -eq 1 ]] || sleep "$pause"
  if [[ $final -eq 0 ]] && kill -0 $pid 2>/dev/null; then
    kill -9 $pid 2>/dev/null
    wait $pid 2>/dev/null
    kills=$((kills + 1))
    at=$(sqlite3 "$T/k9.db" "SELECT coalesce(sum(next_offset), 0) FROM _cdcflow_positions" 2>/dev/null || echo 0)
    echo "kill $kills after ${pause}s: $at of $n events applied"
    [[ $at -gt 0 && $at -lt $n ]] && inside=$((inside + 1))
    if [[ $at -ge $n && $inside -lt 3 ]]; then
      # all applied before enough kills landed in the middle: start over
      rm -f "$T"/k9.db*
      kills=0 done=0 inside=0 at=0
    fi
  else
    wait $pid
    rc=$?
    [[ $rc -eq 0 ]] || { echo "run $round exited $rc"; tail -5 "$T/k9.err"; break; }
    done=1
    [[ $kills -ge 5 && $inside -ge 3 ]] && break
    # finished before enough kills: start over with an empty database
    rm -f "$T"/k9.db*
    kills=0 done=0 inside=0 at=0
  fi
done
check "killed $kills times with kill -9 ($inside in the middle of the input), then a run ended by itself" \
  "[[ $done -eq 1 && $kills -ge 5 && $inside -ge 3 ]]"
check "the tables equal Cassandra's SELECT JSON at ALL" \
  "python3 $TESTS/sink/cassandra_tables.py sqlite:$T/k9.db $DATA/$c $T/in.jsonl"
exit $failed
