#!/usr/bin/env bash
# test_start_waits.sh - a start against a broker that does not answer says
# what it waits for (issue 14): within 2 s a line names the broker it
# connects to and what it does, and no gap between two log lines is longer
# than 5 s while it waits (it was 15 s of silence, then "retrying in 1 s"
# lines 10 s apart). No server needed: port 1 of 127.0.0.1 refuses.
source "$(dirname "$0")/check_lib.sh"
printf 'bootstrap.servers=127.0.0.1:1\n' > "$T/w.properties"
printf '{"name":"s","config":{"connector.class":"cdc-sink","topics":"t","sqlite.path":"%s/s.db"}}' "$T" > "$T/s.json"
"$CLI" run --worker "$T/w.properties" "$T/s.json" 2>"$T/log" &
pid=$!
sleep 2
grep -q "connecting to 127.0.0.1:1" "$T/log" && ok "within 2 s: it says it connects to 127.0.0.1:1 and what for" ||
  fail "no connecting line within 2 s: $(cat "$T/log")"
sleep 20
kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
python3 - "$T/log" <<'P' || failed=1
import datetime, sys
ts = []
for line in open(sys.argv[1]):
    try:
        ts.append(datetime.datetime.strptime(line[:23], "%Y-%m-%dT%H:%M:%S.%f"))
    except ValueError:
        pass
gaps = [(b - a).total_seconds() for a, b in zip(ts, ts[1:])]
worst = max(gaps) if gaps else 99
print(("ok: " if len(ts) >= 6 and worst <= 5 else "FAIL: ") + f"{len(ts)} lines in 22 s, the longest gap {worst:.1f} s")
sys.exit(0 if len(ts) >= 6 and worst <= 5 else 1)
P
exit $failed
