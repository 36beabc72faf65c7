#!/usr/bin/env bash
# bench_files_rss.sh - resident memory of a whole `cdcflow run` while the
# files source reads one large JSON lines file (default 2048 MB of ~1 KB
# lines, the lines bench_extract writes) into a record file, direct mode.
#
#   bench/bench_files_rss.sh [BUILD_DIR] [MB]     (defaults: build, 2048)
#
# bench_extract --rss measures the extractor alone; this measures what an
# operator sees: worker, poller queue, JsonConverter, record file writer.
# VmRSS is sampled every 0.2 s from /proc/PID/status. "start" is the first
# sample after the first record reached the output (the process is then set
# up and reading), "peak" the highest sample until the offsets mark the file
# done, "end" the last one. Exit 1 when peak - start exceeds 10 MB. The work
# folder (input, output and offsets) is deleted at the end.
set -euo pipefail
BUILD=${1:-build}
MB=${2:-2048}
CLI=$(cd "$BUILD" && pwd)/cdcflow
W=$(mktemp -d /tmp/cf_bench_files_rss.XXXXXX)
trap 'kill -9 $(jobs -p) 2>/dev/null || true; rm -rf "$W"' EXIT
mkdir -p "$W/in"
python3 - "$W/in/big.jsonl" "$MB" <<'P'
import sys
pad = "x" * 860
limit, total, i, buf = int(sys.argv[2]) * 1024 * 1024, 0, 0, []
with open(sys.argv[1], "w") as f:
    while total < limit:
        l = ('{"id":%d,"name":"name %d","email":"user%d@example.com","city":"Zurich","amount":%d.25,'
             '"flag":true,"tags":["a","b"],"payload":"%s"}\n') % (i, i, i, i * 7, pad)
        buf.append(l); total += len(l); i += 1
        if len(buf) == 10000:
            f.write("".join(buf)); buf = []
    f.write("".join(buf))
P
printf 'transport=direct\noffset.storage.file.filename=%s/offsets.json\noffset.flush.interval.ms=1000\n' "$W" > "$W/w.properties"
cat > "$W/src.json" <<J
{"name": "big", "config": {"connector.class": "files", "files.path": "$W/in", "topic": "t", "input.format": "jsonl",
 "files.min.age.ms": "0", "key.converter": "string", "value.converter": "json", "value.converter.schemas.enable": "false"}}
J
"$CLI" --log-level warn run --worker "$W/w.properties" --output "$W/out.jsonl" "$W/src.json" 2>"$W/log" &
pid=$!
t0=$(date +%s.%N) start="" peak=0 last=0 n=0
while kill -0 "$pid" 2>/dev/null; do
  r=$(awk '/^VmRSS/{print $2}' "/proc/$pid/status" 2>/dev/null || true)
  [[ -n $r ]] || break
  if [[ -z $start ]]; then
    [[ -s $W/out.jsonl ]] && start=$r
  else
    (( r > peak )) && peak=$r
    last=$r n=$((n + 1))
    grep -q '"done":true' "$W/offsets.json" 2>/dev/null && break
  fi
  sleep 0.2
done
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
secs=$(echo "$(date +%s.%N) - $t0" | bc)
lines=$(wc -l < "$W/out.jsonl")
[[ -n $start ]] || { echo "no record was written (exit $rc): $(tail -3 "$W/log")"; exit 1; }
growth=$((peak - start))
verdict=ok
(( growth <= 10240 && rc == 0 )) || verdict=FAILED
echo "cdcflow run, files source, ${MB} MB JSON lines -> record file: $lines records in ${secs%.*} s, exit $rc;" \
  "VmRSS start ${start} KB, peak ${peak} KB, end ${last} KB ($n samples): growth ${growth} KB (limit 10240 KB) $verdict"
[[ $verdict == ok ]]
