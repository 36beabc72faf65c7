#!/usr/bin/env bash
# The stream source through `cdcflow run --output`: stdin lines become
# records keyed by ULIDs (26 Crockford base32 characters, increasing); the
# offsets hold ONE key for the stream with the last ULID; after a restart
# the new keys sort after the old ones; TCP on loopback works the same.
set -euo pipefail
CLI=${CF_CLI:?CF_CLI not set}
T=$(mktemp -d)
trap 'kill -9 $(jobs -p) 2>/dev/null || true; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
source "$(dirname "$0")/lib.sh" # cli_start, wait_lines, cli_stop
cat > "$T/worker.properties" <<W
offset.storage.file.filename=$T/offsets.json
W
cat > "$T/stdin.json" <<J
{"name": "s1", "config": {"connector.class": "stream", "topic": "lines", "stream.type": "stdin",
 "key.converter": "string", "value.converter": "string"}}
J
seq 1 1000 | sed 's/^/line /' | "$CLI" run --worker "$T/worker.properties" --output "$T/out1.jsonl" "$T/stdin.json" 2>"$T/log" \
  || fail "run exited $?: $(tail -3 "$T/log")"
printf 'after restart\nlast line without newline' | "$CLI" run --worker "$T/worker.properties" --output "$T/out2.jsonl" "$T/stdin.json" 2>>"$T/log" \
  || fail "second run exited $?"
python3 - "$T" <<'P' || fail "stdin checks"
import json, re, sys
T = sys.argv[1]
recs = [json.loads(l) for n in ("out1.jsonl", "out2.jsonl") for l in open(f"{T}/{n}")]
assert len(recs) == 1002, len(recs)
keys = [r["key"] for r in recs]
for k in keys:
    assert re.fullmatch(r"[0-7][0-9A-HJKMNP-TV-Z]{25}", k), k
assert keys == sorted(keys) and len(set(keys)) == len(keys), "ULIDs not strictly increasing"
assert recs[0]["payload"] == "line 1" and recs[999]["payload"] == "line 1000"
assert recs[1001]["payload"] == "last line without newline"
off = json.load(open(f"{T}/offsets.json"))["offsets"]
assert len(off) == 1, off
assert off[0]["key"] == ["s1", {"stream": "s1"}], off[0]["key"]
assert off[0]["value"]["ulid"] == keys[-1] and off[0]["value"]["recordCount"] == 1002, off[0]["value"]
print("stream stdin: ok")
P
# TCP on loopback
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$T/tcp.json" <<J
{"name": "s2", "config": {"connector.class": "stream", "topic": "lines", "stream.type": "tcp",
 "stream.port": "$port", "key.converter": "string", "value.converter": "string"}}
J
cli_start "$T/out3.jsonl" "$T/tcp.json"
for i in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
python3 - "$port" <<'P'
import socket, sys
for c in range(3):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    s.sendall(b"".join(b"conn %d line %d\n" % (c, i) for i in range(100)))
    s.close()
P
wait_lines "$T/out3.jsonl" 300 100 0.05
cli_stop "tcp run"
n=$(grep -c '"payload":"conn' "$T/out3.jsonl")
[[ $n -eq 300 ]] || fail "tcp: expected 300 lines, got $n"
# a FIFO: created if missing; writers come and go
fifo="$T/in.fifo"
cat > "$T/fifo.json" <<J
{"name": "s3", "config": {"connector.class": "stream", "topic": "lines", "stream.type": "fifo",
 "stream.path": "$fifo", "key.converter": "string", "value.converter": "string"}}
J
cli_start "$T/out4.jsonl" "$T/fifo.json"
for i in $(seq 1 100); do [[ -p "$fifo" ]] && break; sleep 0.05; done
[[ -p "$fifo" ]] || fail "FIFO not created"
printf 'fifo one\nfifo two\n' > "$fifo"
printf 'fifo three\n' > "$fifo"
wait_lines "$T/out4.jsonl" 3 100 0.05
cli_stop "fifo run"
[[ $(grep -c '"payload":"fifo' "$T/out4.jsonl") -eq 3 ]] || fail "fifo: $(cat "$T/out4.jsonl")"
echo "stream source: ok"
