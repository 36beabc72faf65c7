#!/usr/bin/env bash
# Restart tests that count: a tree of files read by the files source into a
# record file (`cdcflow run --output`), the worker killed with kill -9 at
# random points again and again, then run to the end. The committed offsets
# (the local offsets file, replaced atomically) are copied after each kill.
# Checked over all runs:
#  - every record of every file is present;
#  - within one run no record appears twice, and each file's records come in
#    order;
#  - nothing committed was lost: every record before a committed offset was
#    in the record file before the kill;
#  - the only duplicates are the ones docs/operations.md allows: a restarted
#    run begins each file exactly at its last committed offset (the records
#    from there to the kill are sent again: one contiguous run per object
#    that was being read), and a file committed as done is not read again.
# Two trees: CSV files uncompressed (resume = seek to the byte position) and
# JSON lines files compressed with gzip (resume = decompress and skip).
# Kill points are random: after a random number of records, or after a
# random time (which also hits listing, opening and resuming). SEED=n
# repeats a run's choices, KILLS=n sets the number of kills (default 5).
set -euo pipefail
CLI=${CF_CLI:?CF_CLI not set}
T=$(mktemp -d); echo "work dir $T" >&2
trap 'kill -9 $(jobs -p) 2>/dev/null || true; [[ -n "${KEEP:-}" ]] || rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
source "$(dirname "$0")/lib.sh" # cli_start, cli_kill9, cli_stop, wait_lines, kill9_setup
kill9_setup 5 # SEED, KILLS, $T/worker.properties

# make_tree DIR FORMAT: 12 files in nested folders, 1 to 20000 rows each
# (about 70000 in all); every row names its file and row number.
make_tree() {
  python3 - "$1" "$2" <<'P'
import gzip, os, sys
root, fmt = sys.argv[1], sys.argv[2]
sizes = [20000, 1, 15000, 300, 9000, 0, 12000, 7, 5000, 2500, 4000, 1200]
dirs = ["", "a", "a/b", "c", "c/d/e"]
for n, rows in enumerate(sizes):
    d = os.path.join(root, dirs[n % len(dirs)])
    os.makedirs(d, exist_ok=True)
    name = f"f{n:02d}"
    if fmt == "csv":
        with open(os.path.join(d, name + ".csv"), "w") as f:
            f.write("file,row,note\n")
            for i in range(rows):
                # every 10th row has a quoted field with a line break in it
                note = f'"multi\nline {i}"' if i % 10 == 0 else f"note {i}"
                f.write(f"{name},{i},{note}\n")
    else:
        with gzip.open(os.path.join(d, name + ".jsonl.gz"), "wt") as f:
            for i in range(rows):
                f.write(f'{{"file":"{name}","row":{i},"pad":"{"x" * (i % 50)}"}}\n')
P
}

# run_tree NAME FORMAT COMPRESSION: kill -9 KILLS times, then run to the end
run_tree() {
  local name=$1 fmt=$2 comp=$3 ext=csv
  [[ $fmt == jsonl ]] && ext=jsonl.gz
  make_tree "$T/$name" "$fmt"
  local total
  total=$(python3 -c 'print(sum([20000, 1, 15000, 300, 9000, 0, 12000, 7, 5000, 2500, 4000, 1200]))')
  cat > "$T/$name.json" <<J
{"name": "$name", "config": {"connector.class": "files", "files.path": "$T/$name", "topic": "rows",
 "input.format": "$fmt", "file.compression.type": "$comp", "file.name.template": ".*\\\\.$ext",
 "files.min.age.ms": "0", "poll.backoff.initial.ms": "20", "poll.backoff.max.ms": "100",
 "key.converter": "string", "value.converter": "json", "value.converter.schemas.enable": "false"}}
J
  local k
  for k in $(seq 1 "$KILLS"); do
    # records never written yet: the kill point is aimed inside what is left
    local left
    left=$(python3 "$T/check.py" "$T/$name" "$name" "$((k - 1))" "$total" left)
    cli_start "$T/$name.out$k" "$T/$name.json"
    if (( left > 0 && RANDOM % 2 )); then
      local n=$(( RANDOM % left + 1 ))
      wait_lines "$T/$name.out$k" "$n" 400 0.01
      echo "$name run $k: kill -9 after $(wc -l < "$T/$name.out$k" 2>/dev/null || echo 0) records (aimed at $n of $left left)" >&2
    else
      local ms=$(( RANDOM % (left > 0 ? 800 : 300) ))
      sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
      echo "$name run $k: kill -9 after ${ms} ms, $(wc -l < "$T/$name.out$k" 2>/dev/null || echo 0) records" >&2
    fi
    cli_kill9
    cp "$T/offsets.json" "$T/$name.off$k" 2>/dev/null || true
  done
  # the last run: until every record arrived (at most 120 s), then a clean stop
  k=$((KILLS + 1))
  cli_start "$T/$name.out$k" "$T/$name.json"
  local i
  for i in $(seq 1 600); do
    python3 "$T/check.py" "$T/$name" "$name" "$k" "$total" count >/dev/null 2>&1 && break
    sleep 0.2
  done
  sleep 0.3
  cli_stop "$name last run"
  python3 "$T/check.py" "$T/$name" "$name" "$k" "$total" check || fail "$name: restart check (SEED=$SEED)"
}

cat > "$T/check.py" <<'P'
# check.py PREFIX CONNECTOR RUNS TOTAL left|count|check: PREFIX.out1..RUNS are the
# runs' record files, PREFIX.off1..RUNS-1 the offsets committed when run k was killed;
# left prints how many records were never written, count exits 0 when none is missing
import collections, json, os, sys
prefix, connector, runs, total, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]

def committed(k):
    """file -> (recordCount, done) committed when run k was killed"""
    out = {}
    if k < 1 or not os.path.exists(f"{prefix}.off{k}"):
        return out
    for e in json.load(open(f"{prefix}.off{k}"))["offsets"]:
        if e["key"][0] == connector:
            f = e["key"][1]["path"].split("/")[-1].split(".")[0]
            out[f] = (e["value"]["recordCount"], e["value"].get("done", False))
    return out

seen = set()
dups_total = 0
for r in range(1, runs + 1):
    try:
        lines = open(f"{prefix}.out{r}", encoding="utf-8").read().split("\n")
    except FileNotFoundError:
        lines = []
    per_file = collections.defaultdict(list)
    for n, line in enumerate(lines):
        if not line:
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            # kill -9 while the line was written (or a run still writing it): only the
            # last line may be cut, and not in the finished last run
            assert n >= len(lines) - 2 and (r < runs or mode != "check"), f"run {r}: unreadable line {n + 1}: {line[:80]}"
            continue
        v = json.loads(rec["payload"])
        per_file[v["file"]].append(int(v["row"]))
    if mode == "check":
        offs = committed(r - 1)
        for f, (count, done) in offs.items():
            lost = [x for x in range(count) if (f, x) not in seen]
            assert not lost, f"before run {r}: {f} committed {count} records, rows {lost[:5]}... were never written"
    run_ids = set()
    for f, rows in per_file.items():
        assert rows == sorted(rows) and len(set(rows)) == len(rows), f"run {r}, {f}: out of order or repeated within the run"
        if mode == "check":
            count, done = offs.get(f, (0, False))
            assert not done, f"run {r}: {f} was committed as done and was read again"
            assert rows[0] == count, f"run {r}: {f} starts at row {rows[0]}, its committed offset is {count} records"
            dups_total += sum(1 for x in rows if (f, x) in seen)
        run_ids.update((f, x) for x in rows)
    seen |= run_ids
missing = total - len(seen)
if mode == "left":
    print(missing)
    sys.exit(0)
if mode == "count":
    sys.exit(0 if missing == 0 else 1)
assert missing == 0, f"{missing} of {total} records missing"
print(f"{prefix}: {total} records present over {runs} runs, {dups_total} duplicates, each after its file's committed offset")
P

run_tree csvtree csv none
run_tree jsonltree jsonl gzip
echo "files source kill -9 restarts: ok"
