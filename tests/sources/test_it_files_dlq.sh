#!/usr/bin/env bash
# Bad rows of a file go to the dead letter queue on the real broker
# (errors.tolerance=all), with Kafka Connect's error context headers naming
# the object, line and byte; the good rows are all delivered. kcat reads the
# DLQ as an outside client.
set -euo pipefail
CLI=${CF_CLI:?CF_CLI not set}
: "${CF_TEST_KAFKA:?CF_TEST_KAFKA not set: start the servers with scripts/servers start}"
T=$(mktemp -d)
trap 'kill -9 $(jobs -p) 2>/dev/null || true; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
dlq="cdcflow-it-dlq-$$-$RANDOM"
mkdir -p "$T/in"
printf 'a,b\n1,2\n"x"y,3\n4,5\n"p"q,6\n7,8\n' > "$T/in/rows.csv"
cat > "$T/worker.properties" <<W
bootstrap.servers=$CF_TEST_KAFKA
transport=direct
offset.storage.file.filename=$T/offsets.json
W
cat > "$T/src.json" <<J
{"name": "dlq-test", "config": {"connector.class": "files", "files.path": "$T/in", "topic": "rows",
 "input.format": "csv", "files.min.age.ms": "0", "errors.tolerance": "all", "errors.log.enable": "true",
 "errors.deadletterqueue.topic.name": "$dlq", "errors.deadletterqueue.context.headers.enable": "true",
 "key.converter": "string", "value.converter": "json", "value.converter.schemas.enable": "false"}}
J
"$CLI" run --worker "$T/worker.properties" --output "$T/out.jsonl" "$T/src.json" 2>"$T/log" &
pid=$!
for i in $(seq 1 300); do [[ -f "$T/out.jsonl" && $(wc -l < "$T/out.jsonl") -ge 3 ]] && break; sleep 0.1; done
sleep 1; kill -TERM $pid; wait $pid || true
n=$(wc -l < "$T/out.jsonl")
[[ $n -eq 3 ]] || fail "expected 3 good rows, got $n ($(tail -3 "$T/log"))"
kcat -C -b "$CF_TEST_KAFKA" -t "$dlq" -J -e -q > "$T/dlq.jsonl" 2>"$T/kcat.err" || fail "kcat: $(cat "$T/kcat.err")"
python3 - "$T/dlq.jsonl" <<'P' || fail "dead letter queue content"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert len(recs) == 2, f"expected 2 DLQ records, got {len(recs)}"
for r, where in zip(recs, ("line 3, byte 8", "line 5, byte 19")):
    h = dict(zip(r["headers"][0::2], r["headers"][1::2]))
    assert h.get("__connect.errors.connector.name") == "dlq-test", h
    assert h.get("__connect.errors.stage") == "TASK_POLL", h
    # a bad row is what Connect calls a DataException; our own code beside it
    assert h.get("__connect.errors.exception.class.name") == "org.apache.kafka.connect.errors.DataException", h
    assert h.get("__cdcflow.errors.code", "").startswith("CF_ERR_"), h
    msg = h.get("__connect.errors.exception.message", "")
    assert "rows.csv" in msg or "rows.csv" in json.dumps(h), h
    assert where in json.dumps(h), (where, h)
print("files source DLQ: ok")
P
