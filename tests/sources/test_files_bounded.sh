#!/usr/bin/env bash
# test_files_bounded.sh - a bounded run of the files source (issue 14, "A
# bounded run of the files source for batch loads"): with bounded=true the
# source reads the tree as it is, then its task ends FINISHED and
# `cdcflow run` exits by itself, as `run --help` promises for bounded
# sources:
#   1. a CSV/JSONL tree (nested folders, a gzip file) into a record file:
#      exit 0 on its own, every line once;
#   2. the same again with the stored offsets: nothing read twice, exit 0;
#   3. a file added since, and one still too young (files.min.age.ms): the
#      young one is waited for, not skipped;
#   4. a damaged gzip file with errors.tolerance=all: reported, the run
#      still ends (exit 3), the good files whole; with the default
#      tolerance the task fails (exit 1) - a bad file never makes a bounded
#      run loop or hang;
#   5. the tree into a table in one process (transport=direct, cdc-sink):
#      the run ends by itself with the rows in SQLite.
set -euo pipefail
CLI=${CF_CLI:?CF_CLI not set}
T=$(mktemp -d)
trap 'kill -9 $(jobs -p) 2>/dev/null || true; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; [[ -f $T/log ]] && tail -20 "$T/log" >&2; exit 1; }
ok() { echo "ok: $*"; }

mkdir -p "$T/in/a/b" "$T/in/c"
python3 - "$T/in" <<'PY'
import gzip, json, sys
root = sys.argv[1]
with open(f"{root}/a/one.jsonl", "w") as f:
    for i in range(1000): f.write(json.dumps({"id": i, "name": f"n{i}"}) + "\n")
with open(f"{root}/a/b/two.jsonl", "w") as f:
    for i in range(1000, 1500): f.write(json.dumps({"id": i, "name": f"n{i}"}) + "\n")
with gzip.open(f"{root}/c/three.jsonl.gz", "wt") as f:
    for i in range(1500, 4000): f.write(json.dumps({"id": i, "name": f"n{i}"}) + "\n")
PY
cat > "$T/worker.properties" <<W
offset.storage.file.filename=$T/offsets.json
W
conf() { # conf NAME PATH [EXTRA JSON] [files.min.age.ms]
  printf '{"name":"%s","config":{"connector.class":"files","files.path":"%s","topic":"t","input.format":"jsonl","files.min.age.ms":"%s","bounded":"true"%s}}\n' \
    "$1" "$2" "${4:-0}" "${3:-}" > "$T/$1.json"
}
run() { # run CONF OUT: exit code in rc
  rc=0
  timeout 60 "$CLI" run --worker "$T/worker.properties" --output "$2" "$1" 2>>"$T/log" || rc=$?
}
count() { [[ -f $1 ]] && wc -l < "$1" || echo 0; }

# 1
conf plain "$T/in" ', "file.name.template":".*\\.jsonl"'
conf gz "$T/in" ', "file.name.template":".*\\.jsonl\\.gz", "file.compression.type":"gzip"'
run "$T/plain.json" "$T/out1.jsonl"; [[ $rc == 0 ]] || fail "plain bounded run exited $rc"
run "$T/gz.json" "$T/out1.jsonl"; [[ $rc == 0 ]] || fail "gzip bounded run exited $rc"
[[ $(count "$T/out1.jsonl") == 4000 ]] || fail "1: $(count "$T/out1.jsonl") records, want 4000"
python3 - "$T/out1.jsonl" <<'PY' || fail "1: not every id once"
import json, sys
ids = [json.loads(json.loads(l)["payload"])["payload"]["id"] for l in open(sys.argv[1])]
assert sorted(ids) == list(range(4000)), (len(ids), len(set(ids)))
PY
grep -q "bounded" "$T/log" || fail "1: the log does not say the bounded run ended"
grep -q "task 0 stopped (FINISHED)" "$T/log" || fail "1: the task did not end FINISHED"
ok "1. a tree read once, the run ended by itself, every record once (4000)"

# 2
run "$T/plain.json" "$T/out1.jsonl"; [[ $rc == 0 ]] || fail "2: exited $rc"
run "$T/gz.json" "$T/out1.jsonl"; [[ $rc == 0 ]] || fail "2: exited $rc"
[[ $(count "$T/out1.jsonl") == 4000 ]] || fail "2: $(count "$T/out1.jsonl") records after a second run, want 4000"
ok "2. run again with the stored offsets: nothing read twice"

# 3
for i in $(seq 4000 4099); do echo "{\"id\": $i, \"name\": \"n$i\"}"; done > "$T/in/a/new.jsonl"
conf young "$T/in" ', "file.name.template":".*\\.jsonl"' 1500
sed -i 's/"name":"young"/"name":"plain"/' "$T/young.json" # the same connector (its offsets), held-back files on
for i in $(seq 4100 4199); do echo "{\"id\": $i, \"name\": \"n$i\"}"; done > "$T/in/c/z-young.jsonl"
run "$T/young.json" "$T/out1.jsonl"; [[ $rc == 0 ]] || fail "3: exited $rc"
python3 - "$T/out1.jsonl" <<'PY' || fail "3: the new and the young file are not both read once"
import json, sys
ids = [json.loads(json.loads(l)["payload"])["payload"]["id"] for l in open(sys.argv[1])]
assert sorted(ids) == list(range(4200)), (len(ids), len(set(ids)))
PY
ok "3. a new file read, a file too young waited for (files.min.age.ms), not skipped"

# 4
mkdir -p "$T/bad"
cp "$T/in/c/three.jsonl.gz" "$T/bad/a.jsonl.gz"
head -c 3000 "$T/in/c/three.jsonl.gz" > "$T/bad/b.jsonl.gz"
cp "$T/in/c/three.jsonl.gz" "$T/bad/c.jsonl.gz"
rm -f "$T/offsets.json"
conf badall "$T/bad" ', "file.compression.type":"gzip", "errors.tolerance":"all"'
run "$T/badall.json" "$T/out4.jsonl"; [[ $rc == 3 ]] || fail "4: errors.tolerance=all: exited $rc, want 3"
n4=$(count "$T/out4.jsonl")
[[ $n4 -ge 5000 ]] || fail "4: $n4 records, want the two good files (5000) and what b held"
grep -q "b.jsonl.gz" "$T/log" || fail "4: the damaged file is not named"
rm -f "$T/offsets.json"
conf badnone "$T/bad" ', "file.compression.type":"gzip"'
run "$T/badnone.json" "$T/out5.jsonl"; [[ $rc == 1 ]] || fail "4: errors.tolerance=none: exited $rc, want 1"
ok "4. a damaged file: reported and the run ends (exit 3 with tolerance all, 1 without)"

# 5
rm -f "$T/offsets.json"
cat > "$T/direct.properties" <<W
transport=direct
offset.storage.file.filename=$T/offsets.json
W
mkdir -p "$T/csv/2024"
python3 - "$T/csv" <<'PY'
import sys
root = sys.argv[1]
with open(f"{root}/2024/a.csv", "w") as f:
    f.write("id,name\n" + "".join(f"{i},n{i}\n" for i in range(1000)))
with open(f"{root}/2024/b.csv", "w") as f:  # updates 900-999, adds 1000-1599
    f.write("id,name\n" + "".join(f"{i},m{i}\n" for i in range(900, 1600)))
PY
printf '{"name":"tbl","config":{"connector.class":"files","files.path":"%s/csv","topic":"people","input.format":"csv","files.min.age.ms":"0","bounded":"true","transforms":"cast,key","transforms.cast.type":"org.apache.kafka.connect.transforms.Cast$Value","transforms.cast.spec":"id:int64","transforms.key.type":"org.apache.kafka.connect.transforms.ValueToKey","transforms.key.fields":"id"}}\n' "$T" > "$T/src.json"
printf '{"name":"sink","config":{"connector.class":"cdc-sink","topics":"people","connection.url":"sqlite:%s/people.db"}}\n' "$T" > "$T/sink.json"
rc=0; timeout 60 "$CLI" run --worker "$T/direct.properties" "$T/src.json" "$T/sink.json" 2>>"$T/log" || rc=$?
[[ $rc == 0 ]] || fail "5: direct bounded run exited $rc"
rows=$(sqlite3 "$T/people.db" "SELECT count(*), min(id), max(id), sum(name LIKE 'm%') FROM people")
[[ $rows == "1600|0|1599|700" ]] || fail "5: table holds '$rows', want 1600 rows, ids 0-1599, 700 of them from b.csv"
ok "5. files -> cdc-sink in one process: the run ends by itself, the rows in SQLite"
