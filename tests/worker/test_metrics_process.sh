#!/usr/bin/env bash
# test_metrics_process.sh - /metrics has the process metrics every Prometheus
# client library exports (process_cpu_seconds_total,
# process_resident_memory_bytes, process_virtual_memory_bytes,
# process_start_time_seconds, process_open_fds, process_max_fds: names and
# units as https://prometheus.io/docs/instrumenting/writing_clientlibs/#process-metrics
# defines them), and their values agree with what the kernel says of the
# worker (/proc/PID/status, /proc/PID/fd, ps) - issue 14.
source "$(dirname "$0")/check_lib.sh"
printf 'rest.port=0\noffset.storage.file.filename=%s/offsets.json\n' "$T" > "$T/worker.properties"
"$CLI" run --worker "$T/worker.properties" --rest 2>"$T/log" &
pid=$!
for _ in $(seq 1 100); do grep -q "REST API on" "$T/log" && break; sleep 0.1; done
port=$(sed -n 's/.*REST API on http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$T/log" | head -1)
[[ -n $port ]] || { echo "FAIL: no REST API: $(tail -3 "$T/log")"; exit 1; }
curl -s -m 5 "http://127.0.0.1:$port/metrics" > "$T/m.txt"
rss_kb=$(awk '/^VmRSS:/ {print $2}' /proc/$pid/status)
fds=$(ls /proc/$pid/fd | wc -l)
nofile=$(awk '/^Max open files/ {print $4}' /proc/$pid/limits)
start=$(date -d "$(ps -o lstart= -p $pid)" +%s)
vsz_kb=$(ps -o vsz= -p $pid | tr -d ' ')
python3 - "$T/m.txt" "$rss_kb" "$fds" "$nofile" "$start" "$vsz_kb" <<'P' || failed=1
import sys
text = open(sys.argv[1]).read()
rss_kb, fds, nofile, start, vsz_kb = (float(x) for x in sys.argv[2:7])
vals, types = {}, {}
for line in text.splitlines():
    if line.startswith("# TYPE "):
        _, _, name, typ = line.split()
        types[name] = typ
    elif line.startswith("process_"):
        name, v = line.split()
        vals[name] = float(v)
bad = 0
def check(what, cond):
    global bad
    print(("ok: " if cond else "FAIL: ") + what)
    bad += 0 if cond else 1
want = {"process_cpu_seconds_total": "counter", "process_resident_memory_bytes": "gauge",
        "process_virtual_memory_bytes": "gauge", "process_start_time_seconds": "gauge",
        "process_open_fds": "gauge", "process_max_fds": "gauge"}
for n, t in want.items():
    check(f"{n} is a {t} with a value", n in vals and types.get(n) == t)
if bad: sys.exit(1)
r = vals["process_resident_memory_bytes"]
check(f"resident memory {r/1e6:.1f} MB within 25% of VmRSS {rss_kb/1e3:.1f} MB", abs(r - rss_kb * 1024) <= 0.25 * rss_kb * 1024)
v = vals["process_virtual_memory_bytes"]
check(f"virtual memory {v/1e6:.0f} MB within 5% of ps vsz", abs(v - vsz_kb * 1024) <= 0.05 * vsz_kb * 1024)
s = vals["process_start_time_seconds"]
check(f"start time {s:.0f} within 2 s of ps' {start:.0f}", abs(s - start) <= 2)
check(f"open fds {vals['process_open_fds']:.0f} within 3 of /proc's {fds:.0f}", abs(vals["process_open_fds"] - fds) <= 3)
check(f"max fds {vals['process_max_fds']:.0f} is the soft limit {nofile:.0f}", vals["process_max_fds"] == nofile)
c = vals["process_cpu_seconds_total"]
check(f"cpu seconds {c} is >= 0 and below the wall time since start", 0 <= c < 600)
sys.exit(1 if bad else 0)
P
kill -TERM $pid; wait $pid

# the cdc-sink's own counters: the files source feeding a cdc-sink in one
# process (both keep running); /metrics while they run, then the counters
# the sink logs at its stop must be the same numbers
mkdir -p "$T/in"
printf 'id,name\n1,a\n2,b\n3,c\n1,d\n2,e\n3,f\n' > "$T/in/rows.csv"
cat > "$T/src.json" <<J
{"name": "src", "config": {"connector.class": "files", "files.path": "$T/in", "topic": "rows",
 "input.format": "csv", "files.min.age.ms": "0", "transforms": "cast,key",
 "transforms.cast.type": "org.apache.kafka.connect.transforms.Cast\$Value", "transforms.cast.spec": "id:int64",
 "transforms.key.type": "org.apache.kafka.connect.transforms.ValueToKey", "transforms.key.fields": "id"}}
J
printf '{"name":"m","config":{"connector.class":"cdc-sink","topics":"rows","sqlite.path":"%s/m.db","mergeIntervalMs":"100"}}' "$T" > "$T/m.json"
printf 'rest.port=0\noffset.storage.file.filename=%s/offsets2.json\noffset.flush.interval.ms=200\n' "$T" > "$T/w2.properties"
"$CLI" run --worker "$T/w2.properties" "$T/m.json" "$T/src.json" 2>"$T/log2" &
pid=$!
for _ in $(seq 1 100); do grep -q "REST API on" "$T/log2" && break; sleep 0.1; done
port=$(sed -n 's/.*REST API on http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$T/log2" | head -1)
for _ in $(seq 1 100); do
  curl -s -m 2 "http://127.0.0.1:$port/metrics" > "$T/m2.txt"
  grep -q '^cdcflow_sink_written_total{connector="m",task="0"} [1-9]' "$T/m2.txt" && break
  sleep 0.1
done
kill -TERM $pid; wait $pid
python3 - "$T/m2.txt" "$T/log2" <<'P' || failed=1
import re, sys
text, log = open(sys.argv[1]).read(), open(sys.argv[2]).read()
def val(name):
    m = re.search(r"^%s\{connector=\"m\",task=\"0\"\} ([0-9.]+)$" % name, text, re.M)
    return float(m.group(1)) if m else None
names = ["records", "upserts", "deletes", "tombstones_skipped", "compacted", "written", "applies", "apply_seconds"]
got = {n: val(f"cdcflow_sink_{n}_total") for n in names}
bad = [n for n, v in got.items() if v is None]
print(("FAIL: " if bad else "ok: ") + f"the sink's counters in /metrics ({'missing ' + ', '.join(bad) if bad else got})")
m = re.search(r"cdc-sink stopping: (\d+) records, (\d+) upserts, (\d+) deletes, (\d+) tombstones skipped, .* (\d+) compacted away, (\d+) written", log)
same = m and [int(x) for x in m.groups()] == [int(got[n]) for n in ["records", "upserts", "deletes", "tombstones_skipped", "compacted", "written"]]
print(("ok: " if same else "FAIL: ") + "they equal the counts the sink logs at its stop" + ("" if same else f" ({m.group(0) if m else 'no stop line'})"))
ok = got["records"] == 6 and got["upserts"] == 6 and got["applies"] and got["applies"] >= 1
print(("ok: " if ok else "FAIL: ") + "6 records put, 6 upserts, at least one apply")
sys.exit(0 if not bad and same and ok else 1)
P
exit $failed
