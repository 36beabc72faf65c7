#!/usr/bin/env bash
# Restarts with the SAME record file (`cdcflow run --output OUT` again and
# again, as an operator restarts a job): a tree of files read by the files
# source, the worker killed with kill -9 at random moments KILLS times
# (default 10), then run to the end and stopped cleanly. Counted in OUT at
# the end:
#  - every record of every file is there (a restart once opened OUT with
#    "wb", truncating what earlier runs wrote and committed: most records
#    were lost);
#  - every line is a whole record (the torn last line each kill leaves is cut
#    before the next run appends);
#  - the duplicates are only those docs/operations.md allows: for each kill,
#    one contiguous run per file being read, beginning at or after the
#    file's offset committed before that kill.
# SEED=n repeats a run's choices.
set -euo pipefail
CLI=${CF_CLI:?CF_CLI not set}
T=$(mktemp -d); echo "work dir $T" >&2
trap 'kill -9 $(jobs -p) 2>/dev/null || true; [[ -n "${KEEP:-}" ]] || rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
source "$(dirname "$0")/lib.sh" # cli_start, cli_kill9, cli_stop, wait_lines, kill9_setup
kill9_setup 10 # SEED, KILLS, $T/worker.properties

python3 - "$T/tree" <<'P'
import os, sys
root = sys.argv[1]
sizes = [30000, 1, 20000, 500, 12000, 0, 9000, 7]
for n, rows in enumerate(sizes):
    d = os.path.join(root, "sub" if n % 2 else "")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"f{n}.csv"), "w") as f:
        f.write("file,row,note\n")
        for i in range(rows):
            f.write(f"f{n},{i},note {i}\n")
P
TOTAL=71508
cat > "$T/files.json" <<J
{"name": "rows", "config": {"connector.class": "files", "files.path": "$T/tree", "topic": "rows",
 "input.format": "csv", "file.name.template": ".*\\\\.csv", "files.min.age.ms": "0",
 "poll.backoff.initial.ms": "20", "poll.backoff.max.ms": "100",
 "key.converter": "string", "value.converter": "json", "value.converter.schemas.enable": "false"}}
J

cat > "$T/check.py" <<P
import collections, json, sys
mode = sys.argv[1]
T, KILLS, TOTAL = "$T", $KILLS, $TOTAL
P
cat >> "$T/check.py" <<'P'
lines = open(f"{T}/out.jsonl", encoding="utf-8").read().split("\n")
assert lines[-1] == "", "the file does not end with a newline"
rows = []
for n, line in enumerate(lines[:-1]):
    try:
        v = json.loads(json.loads(line)["payload"])
    except (ValueError, KeyError):
        raise AssertionError(f"line {n + 1} is not a whole record: {line[:80]!r}")
    rows.append((v["file"], int(v["row"])))
seen = set(rows)
if mode == "count":
    sys.exit(0 if len(seen) == TOTAL else 1)
assert len(seen) == TOTAL, f"{TOTAL - len(seen)} of {TOTAL} records lost"
# Where each run began in the file: run k+1 appends after run k's lines. A
# kill leaves a torn last line: the next run cuts it (and logs where), or, if
# it is a whole record that only lacks its newline, keeps it as run k's.
data = open(f"{T}/out.jsonl", "rb").read()
cuts = set()
for line in open(f"{T}/log", errors="replace"):
    if "cut a torn last line" in line:
        cuts.add(int(line.split("at byte offset ")[1].split(")")[0]))
starts = [0]
for k in range(1, KILLS + 1):
    size = int(open(f"{T}/size{k}").read())  # OUT's bytes when run k was killed
    n = data.count(b"\n", 0, size)
    if size and data[size - 1:size] != b"\n" and data.rfind(b"\n", 0, size) + 1 not in cuts:
        n += 1  # the torn line was kept: a line of run k
    starts.append(n)
dups = 0
for k in range(KILLS + 1):
    # the offsets committed when run k (1-based) was killed: run k+1 starts each file there
    offs = {}
    if k >= 1:
        for e in json.load(open(f"{T}/off{k}"))["offsets"]:
            if e["key"][0] == "rows":
                f = e["key"][1]["path"].split("/")[-1].split(".")[0]
                offs[f] = (e["value"]["recordCount"], e["value"].get("done", False))
    end = starts[k + 1] if k < KILLS else len(rows)
    per_file = collections.defaultdict(list)
    for f, r in rows[starts[k]:end]:
        per_file[f].append(r)
    before = set(rows[:starts[k]])
    for f, rs in per_file.items():
        assert rs == list(range(rs[0], rs[0] + len(rs))), f"run {k + 1}, {f}: not one contiguous run"
        count, done = offs.get(f, (0, False))
        assert not done, f"run {k + 1}: {f} was committed as done and was read again"
        assert rs[0] == count, f"run {k + 1}: {f} starts at row {rs[0]}, its committed offset is {count} records"
        dups += sum(1 for r in rs if (f, r) in before)
print(f"{TOTAL} records in one record file over {KILLS + 1} runs ({KILLS} kill -9), {len(rows)} lines, "
      f"{dups} duplicates, each after its file's committed offset")
P
OUT=$T/out.jsonl
lines() { [[ -f $OUT ]] && wc -l < "$OUT" || echo 0; }
for k in $(seq 1 "$KILLS"); do
  before=$(lines)
  cli_start "$OUT" "$T/files.json"
  if (( RANDOM % 2 )); then
    wait_lines "$OUT" $(( before + RANDOM % 30000 + 1 )) 300 0.01
  else
    ms=$(( RANDOM % 700 ))
    sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
  fi
  cli_kill9
  cp "$T/offsets.json" "$T/off$k" 2>/dev/null || echo '{"offsets":[]}' > "$T/off$k"
  stat -c %s "$OUT" > "$T/size$k" 2>/dev/null || echo 0 > "$T/size$k" # OUT's bytes when run k was killed
  echo "run $k: kill -9 with $(lines) lines in $OUT" >&2
done
# the last run: until every record is there (at most 120 s), then a clean stop
cli_start "$OUT" "$T/files.json"
for i in $(seq 1 600); do
  python3 "$T/check.py" count >/dev/null 2>&1 && break
  sleep 0.2
done
sleep 0.3
cli_stop "last run"

python3 "$T/check.py" check || fail "same --output across kill -9 restarts (SEED=$SEED)"
grep -q "cut a torn last line" "$T/log" || echo "note: no kill hit a line being written (SEED=$SEED)" >&2
echo "files source kill -9 restarts into one record file: ok"
