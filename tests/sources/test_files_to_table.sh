#!/usr/bin/env bash
# test_files_to_table.sh - a CSV tree into a table, as the README shows it:
# the files source with Cast (typed columns) and ValueToKey (the id column
# as primary key) feeding cdc-sink in one `cdcflow run` with
# transport=direct; the rows end in SQLite as the files say (a later file
# updates an earlier row). Then the same source with --output into a record
# file and cdc-sink with --input from it: the file's records carry offsets a
# sink can order by (before, every record had offset -1 and the sink refused
# them). Without ValueToKey the sink's error says what to do.
set -euo pipefail
CLI=${CF_CLI:?CF_CLI not set}
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d)
trap 'kill -9 $(jobs -p) 2>/dev/null || true; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
source "$HERE/lib.sh"
mkdir -p "$T/in/2024/01" "$T/in/2024/02"
printf 'id,name,amount\n1,apple,1.5\n2,pear,2\n' > "$T/in/2024/01/a.csv"
printf 'id,name,amount\n2,pear,2.25\n3,plum,0.5\n' > "$T/in/2024/02/b.csv"
cat > "$T/worker.properties" <<W
transport=direct
offset.storage.file.filename=$T/offsets.json
W
cat > "$T/files.json" <<J
{"name": "orders-files", "config": {"connector.class": "files", "files.path": "$T/in", "topic": "orders",
 "input.format": "csv", "files.min.age.ms": "0",
 "transforms": "cast,key",
 "transforms.cast.type": "org.apache.kafka.connect.transforms.Cast\$Value",
 "transforms.cast.spec": "id:int64,amount:float64",
 "transforms.key.type": "org.apache.kafka.connect.transforms.ValueToKey",
 "transforms.key.fields": "id"}}
J
cat > "$T/table.json" <<J
{"name": "orders-table", "config": {"connector.class": "cdc-sink", "topics": "orders",
 "connection.url": "sqlite:$T/orders.db"}}
J
rows() { sqlite3 "$1" "SELECT id, name, amount FROM orders ORDER BY id" 2>/dev/null | tr '\n' ' '; }
want="1|apple|1.5 2|pear|2.25 3|plum|0.5 "

# 1. one process, transport=direct: source -> transforms -> sink
"$CLI" run --worker "$T/worker.properties" "$T/files.json" "$T/table.json" 2> "$T/log" &
pid=$!
for i in $(seq 1 200); do [[ $(rows "$T/orders.db") == "$want" ]] && break; sleep 0.05; done
kill -TERM $pid; rc=0; wait $pid || rc=$?
[[ $rc == 0 ]] || { cat "$T/log"; fail "direct run exited $rc"; }
[[ $(rows "$T/orders.db") == "$want" ]] || { cat "$T/log"; fail "direct: rows '$(rows "$T/orders.db")'"; }
types=$(sqlite3 "$T/orders.db" "SELECT group_concat(name || ':' || type || ':' || pk) FROM pragma_table_info('orders')")
grep -q "id:[A-Z]*INT[A-Z]*:1" <<<"$types" || fail "id is not an integer primary key: $types"
grep -q "target sqlite, writing to file $T/orders.db" "$T/log" || { cat "$T/log"; fail "no target log line"; }

# 2. the source into a record file, then the sink from it
rm -f "$T/offsets.json"
run_until "$T/files.json" "$T/orders.jsonl" 4
python3 - "$T/orders.jsonl" <<'P' || fail "record file offsets"
import json, sys
offs = [json.loads(l)["offset"] for l in open(sys.argv[1])]
parts = {json.loads(l)["partition"] for l in open(sys.argv[1])}
assert offs == list(range(len(offs))), offs
assert parts == {0}, parts
P
sed "s|orders.db|replayed.db|" "$T/table.json" > "$T/replay.json"
(cd "$T" && "$CLI" run "$T/replay.json" --input "$T/orders.jsonl") 2> "$T/replay.log" || { cat "$T/replay.log"; fail "replay"; }
[[ $(rows "$T/replayed.db") == "$want" ]] || { cat "$T/replay.log"; fail "replay: rows '$(rows "$T/replayed.db")'"; }

# 3. without ValueToKey: the key is the file name, and the error says what to do
python3 - "$T/files.json" "$T/nokey.json" <<'P'
import json, sys
c = json.load(open(sys.argv[1]))
for k in [k for k in c["config"] if k.startswith("transforms")]: del c["config"][k]
json.dump(c, open(sys.argv[2], "w"))
P
rm -f "$T/offsets.json"
run_until "$T/nokey.json" "$T/nokey.jsonl" 4
set +e
(cd "$T" && "$CLI" run "$T/replay.json" --input "$T/nokey.jsonl") 2> "$T/nokey.log"
set -e
grep -q "record key is string, not a struct" "$T/nokey.log" || { cat "$T/nokey.log"; fail "nokey message"; }
grep -q "ValueToKey (fields=id)" "$T/nokey.log" || { cat "$T/nokey.log"; fail "nokey hint"; }
echo "1 passed, 0 failed"
