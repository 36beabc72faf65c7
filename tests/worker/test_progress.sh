#!/usr/bin/env bash
# test_progress.sh - long work shows progress (issue 14): a files source over
# two 200,000-row CSV files logs a progress line per interval
# (progress.interval.ms: records so far, rate, lag, errors), "read files
# "X": N records" per file with its exact count, and "all files read" once
# the tree is read; progress.interval.ms=0 logs none.
source "$(dirname "$0")/check_lib.sh"
mkdir -p "$T/in"
python3 -c '
import sys
for name in ("a.csv", "b.csv"):
    with open(sys.argv[1] + "/" + name, "w") as f:
        f.write("id,v\n")
        for i in range(200000): f.write(f"{i},value{i}\n")' "$T/in"
printf '{"name":"f","config":{"connector.class":"files","files.path":"%s/in","topic":"t","input.format":"csv","files.min.age.ms":"0"}}' "$T" > "$T/f.json"
# run INTERVAL: until "all files read" and the 400,000 records are out (at
# most 60 s each), then SIGTERM
run() {
  printf 'offset.storage.file.filename=%s/o-%s.json\nprogress.interval.ms=%s\n' "$T" "$1" "$1" > "$T/w-$1.properties"
  "$CLI" run --worker "$T/w-$1.properties" --output "$T/out-$1.jsonl" "$T/f.json" 2>"$T/log-$1" &
  local pid=$! i
  for ((i = 0; i < 600; i++)); do grep -q "all files read" "$T/log-$1" && break; kill -0 $pid 2>/dev/null || break; sleep 0.1; done
  # read is not yet written: the records still queued go out before the stop
  for ((i = 0; i < 600; i++)); do
    [[ -f "$T/out-$1.jsonl" && $(wc -l < "$T/out-$1.jsonl") -ge 400000 ]] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.1
  done
  kill -TERM $pid 2>/dev/null; wait $pid
}
run 200
grep -q 'read files "a.csv": 200000 records' "$T/log-200" && grep -q 'read files "b.csv": 200000 records' "$T/log-200" &&
  ok "a line per file with its record count" || fail "per-file lines: $(grep 'read files' "$T/log-200")"
grep -q "all files read (2 objects done)" "$T/log-200" && ok "all files read" || fail "no 'all files read' line"
n=$(grep -c "progress: connector f task 0 (source): [0-9]* records sent ([0-9]*/s over [0-9.]* s), lag [0-9]*, 0 errors" "$T/log-200")
[[ $n -ge 1 ]] && ok "progress lines every 200 ms ($n)" || fail "no progress line: $(tail -5 "$T/log-200")"
[[ $(wc -l < "$T/out-200.jsonl") -eq 400000 ]] && ok "400,000 records written" || fail "records: $(wc -l < "$T/out-200.jsonl")"
run 0
! grep -q "progress:" "$T/log-0" && ok "progress.interval.ms=0: no progress line" || fail "progress lines with 0"
exit $failed
