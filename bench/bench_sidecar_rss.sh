#!/usr/bin/env bash
# bench_sidecar_rss.sh - resident memory of an idle `cdcflow cassandra
# sidecar` following three replicas' cdc_raw directories (live: inotify and
# listing), after it caught up with what they hold.
#
#   bench/bench_sidecar_rss.sh [BUILD_DIR]      (default: build)
#
# The directories hold the fixture v8-lz4-rollover (four segments of a real
# Cassandra 5.0 node, 3000+ changes) three times. The sidecar publishes to a
# record file (JsonConverter), its state in an offsets file. VmRSS is read
# from /proc/PID/status: once the record file has every change ("caught up"),
# then every 0.5 s for 5 s while nothing happens ("idle": the highest
# sample). Exit 1 when idle exceeds 20 MB (the design target).
set -euo pipefail
BUILD=${1:-build}
CLI=$(cd "$BUILD" && pwd)/cdcflow
SRC=$(cd "$(dirname "$0")/.." && pwd)/tests/data/cassandra/v8-lz4-rollover
W=$(mktemp -d /tmp/cf_bench_sidecar_rss.XXXXXX)
trap 'kill -9 $(jobs -p) 2>/dev/null || true; rm -rf "$W"' EXIT
for i in 1 2 3; do cp -r "$SRC/cdc_raw" "$W/n$i"; done
"$CLI" --log-level warn cassandra sidecar --schema "$SRC/schema.cql" --replica "$W/n1" --replica "$W/n2" \
  --replica "$W/n3" --rf 3 --consistency QUORUM --cleanup none --output "$W/out.jsonl" --offsets "$W/offsets" \
  2>"$W/log" &
pid=$!
rss() { awk '/^VmRSS/ {print $2}' /proc/$pid/status; }
for i in $(seq 600); do
  [[ -f $W/out.jsonl && $(wc -l < "$W/out.jsonl") -ge 3053 ]] && break
  sleep 0.05
done
caught=$(rss)
peak=0
for i in $(seq 10); do
  sleep 0.5
  r=$(rss)
  (( r > peak )) && peak=$r
done
lines=$(wc -l < "$W/out.jsonl")
echo "sidecar over 3 cdc_raw directories: $lines events published; RSS caught up ${caught} KB, idle (5 s, highest) ${peak} KB (target < 20480 KB)"
kill -TERM $pid
wait $pid || true
(( lines >= 3053 )) || { echo "did not catch up: $(tail -3 "$W/log")"; exit 1; }
(( peak < 20480 ))
