#!/usr/bin/env bash
# test_it_client_overrides.sh - Connect's per-connector client overrides and
# the DLQ topic's replication factor, on the shared broker (issue 14):
#  - consumer.override.auto.offset.reset=latest: a new sink group skips what
#    the topic held before it (without it: everything is applied);
#  - producer.override.message.max.bytes=1000: a source's 2,000-byte record
#    is refused by its producer (without it: delivered);
#  - a bad override names its key; connector.client.config.override.policy=None
#    refuses a connector with an override (exit 2, the key named);
#  - errors.deadletterqueue.topic.replication.factor=1: the task creates the
#    DLQ topic with one partition (kcat -L, an outside client).
source "$(dirname "$0")/check_lib.sh"
: "${CF_TEST_KAFKA:?CF_TEST_KAFKA not set: start the servers with scripts/servers start}"
sfx="$$-$RANDOM"
topic="cdcflow-it-ovr-$sfx"
printf 'bootstrap.servers=%s\noffset.storage.file.filename=%s/offsets.json\noffset.flush.interval.ms=500\n' \
  "$CF_TEST_KAFKA" "$T" > "$T/worker.properties"
K='{"type":"struct","fields":[{"field":"id","type":"int32","optional":false}]}'
V='{"type":"struct","fields":[{"field":"id","type":"int32","optional":false},{"field":"v","type":"string","optional":true}]}'
for i in 1 2 3 4 5; do printf '{"schema":%s,"payload":{"id":%d}}|{"schema":%s,"payload":{"id":%d,"v":"x"}}\n' "$K" $i "$V" $i; done |
  kcat -P -b "$CF_TEST_KAFKA" -t "$topic" -K '|' 2>"$T/kcat.err" || fail "kcat: $(cat "$T/kcat.err")"

# sink NAME EXTRA: a cdc-sink on the topic into its own SQLite file, run 6 s
sink() {
  printf '{"name":"%s","config":{"connector.class":"cdc-sink","topics":"%s","sqlite.path":"%s/%s.db","mergeIntervalMs":"100","key.converter":"json","value.converter":"json"%s}}' \
    "$1" "$topic" "$T" "$1" "${2:-}" > "$T/$1.json"
  "$CLI" run --worker "$T/worker.properties" "$T/$1.json" 2>"$T/$1.log" &
  local pid=$!
  sleep 6
  kill -TERM $pid 2>/dev/null; wait $pid
}
rows() { sqlite3 "$T/$1.db" "SELECT count(*) FROM \"$(sqlite3 "$T/$1.db" "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE '\\_%' ESCAPE '\\' LIMIT 1")\"" 2>/dev/null || echo 0; }
sink plain-$sfx
n=$(rows plain-$sfx)
[[ $n -eq 5 ]] && ok "without an override the new group applies the 5 records" || fail "plain sink: $n rows ($(tail -3 "$T/plain-$sfx.log"))"
sink latest-$sfx ',"consumer.override.auto.offset.reset":"latest"'
n=$(rows latest-$sfx)
[[ $n -eq 0 ]] && ok "consumer.override.auto.offset.reset=latest: the new group skips them" || fail "latest sink: $n rows"

# a source whose record is 2,000 bytes
mkdir -p "$T/in"
python3 -c 'print("a"); print("x" * 2000)' > "$T/in/big.csv"
src() {
  printf '{"name":"%s","config":{"connector.class":"files","files.path":"%s/in","topic":"%s-src","input.format":"csv","files.min.age.ms":"0","value.converter":"json","value.converter.schemas.enable":"false"%s}}' \
    "$1" "$T" "$topic" "${2:-}" > "$T/$1.json"
  timeout 20 "$CLI" run --worker "$T/worker.properties" "$T/$1.json" 2>"$T/$1.log" &
  local pid=$!
  sleep 5
  kill -TERM $pid 2>/dev/null; wait $pid
}
src big-$sfx ',"producer.override.message.max.bytes":"1000"'
grep -qi "too large\|MSG_SIZE_TOO_LARGE\|message.max.bytes" "$T/big-$sfx.log" &&
  ok "producer.override.message.max.bytes=1000: the 2,000-byte record is refused by the producer" ||
  fail "no size refusal: $(grep -i 'error\|warn' "$T/big-$sfx.log" | head -3)"
src big2-$sfx
m=$(kcat -C -b "$CF_TEST_KAFKA" -t "$topic-src" -e -q -f '%S\n' 2>/dev/null | awk '$1 >= 2000' | wc -l)
[[ $m -ge 1 ]] && ok "without the override the record is delivered" || fail "record not delivered without the override"

# bad override, and the policy
printf '{"name":"bad-%s","config":{"connector.class":"cdc-sink","topics":"%s","sqlite.path":"%s/bad.db","consumer.override.no.such.property":"1"}}' "$sfx" "$topic" "$T" > "$T/bad.json"
timeout 20 "$CLI" run --worker "$T/worker.properties" "$T/bad.json" 2>"$T/bad.log"
grep -q "consumer.override.no.such.property" "$T/bad.log" && ok "a bad override is reported with its key" || fail "bad override: $(tail -3 "$T/bad.log")"
cp "$T/worker.properties" "$T/none.properties"; echo "connector.client.config.override.policy=None" >> "$T/none.properties"
timeout 20 "$CLI" run --worker "$T/none.properties" "$T/latest-$sfx.json" 2>"$T/none.log"
rc=$?
[[ $rc -eq 2 ]] && grep -q "consumer.override.auto.offset.reset may not be overridden" "$T/none.log" &&
  ok "policy None refuses a connector with an override (exit 2)" || fail "policy None: exit $rc: $(tail -3 "$T/none.log")"

# the DLQ topic, created with replication factor 1
dlq="cdcflow-it-ovr-dlq-$sfx"
printf 'notjson|{"id":9}\n' | kcat -P -b "$CF_TEST_KAFKA" -t "$topic" -K '|' 2>/dev/null
sink dlq-$sfx ",\"errors.tolerance\":\"all\",\"errors.deadletterqueue.topic.name\":\"$dlq\",\"errors.deadletterqueue.topic.replication.factor\":\"1\""
grep -q "created the dead letter queue topic $dlq (1 partition)" "$T/dlq-$sfx.log" &&
  ok "the DLQ topic is created by the task (1 partition, replication factor 1)" || fail "DLQ topic: $(grep -i "$dlq\|dead" "$T/dlq-$sfx.log" | head -3)"
kcat -L -b "$CF_TEST_KAFKA" -t "$dlq" 2>/dev/null | grep -q "topic \"$dlq\" with 1 partitions" &&
  ok "kcat sees the DLQ topic with 1 partition" || fail "kcat -L: $(kcat -L -b "$CF_TEST_KAFKA" -t "$dlq" 2>&1 | head -3)"
[[ $(kcat -C -b "$CF_TEST_KAFKA" -t "$dlq" -e -q 2>/dev/null | wc -l) -ge 1 ]] && ok "the bad record is in the DLQ" || fail "DLQ empty"
exit $failed
