#!/usr/bin/env bash
# test_it_offsets_topic.sh - the offsets topic as a Java Connect worker
# sharing it expects it (issue 14), on the shared broker:
#  - each record is in the partition Java's producer picks for its key
#    (Utils.toPositive(Utils.murmur2(key)) % partitions, computed by Kafka's
#    own kafka-clients jar through jshell: the oracle, not our code);
#  - an offsets topic that exists with another partition count than
#    offset.storage.partitions, or without cleanup.policy=compact, gets a WARN
#    that says what is wrong and what to do (Connect refuses a non-compacted
#    one; we warn and go on).
source "$(dirname "$0")/check_lib.sh"
: "${CF_TEST_KAFKA:?CF_TEST_KAFKA not set: start the servers with scripts/servers start}"
: "${CF_TEST_KAFKA_LIB:?CF_TEST_KAFKA_LIB not set}"
PY=${CF_TEST_PYTHON:-python3}

# files under 40 folders: 40 source partitions, 40 keys in the offsets topic
for i in $(seq 1 40); do mkdir -p "$T/in/d$i"; printf 'a,b\n%d,x\n' "$i" > "$T/in/d$i/f$i.csv"; done
# run TOPIC PARTITIONS: the files source until its records are out, offsets in TOPIC
run() {
  cat > "$T/worker.properties" <<W
bootstrap.servers=$CF_TEST_KAFKA
offset.storage.topic=$1
offset.storage.partitions=$2
offset.flush.interval.ms=200
W
  cat > "$T/src.json" <<J
{"name": "offsets-topic-$$", "config": {"connector.class": "files", "files.path": "$T/in", "topic": "rows",
 "input.format": "csv", "files.min.age.ms": "0", "key.converter": "string", "value.converter": "json",
 "value.converter.schemas.enable": "false"}}
J
  # the files source watches its tree: stop it once the 40 rows are out and
  # an offsets flush (200 ms) has passed
  "$CLI" run --worker "$T/worker.properties" --output "$T/out-$1.jsonl" "$T/src.json" 2>"$T/log-$1" &
  local pid=$! i
  for i in $(seq 1 300); do
    [[ -f "$T/out-$1.jsonl" && $(wc -l < "$T/out-$1.jsonl") -ge 40 ]] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.1
  done
  sleep 1.5
  kill -TERM $pid 2>/dev/null
  wait $pid
}

t1="cdcflow-it-offsets-$$-$RANDOM"
run "$t1" 5
rc=$?
[[ $rc -eq 0 ]] && ok "files run with offsets in $t1: exit 0" || { fail "exit $rc: $(tail -5 "$T/log-$t1")"; }
kcat -C -b "$CF_TEST_KAFKA" -t "$t1" -e -q -f '%p\t%k\n' > "$T/placed.tsv" 2>"$T/kcat.err" || fail "kcat: $(cat "$T/kcat.err")"
n=$(cut -f2 "$T/placed.tsv" | sort -u | wc -l)
[[ $n -eq 40 ]] && ok "40 source partitions, 40 keys in the offsets topic" || fail "keys in the offsets topic: $n, expected 40"
# Java's partition for each key, by kafka-clients' own murmur2
{
  echo 'import org.apache.kafka.common.utils.Utils;'
  echo 'import java.nio.charset.StandardCharsets;'
  echo 'java.util.List<String> keys = java.nio.file.Files.readAllLines(java.nio.file.Path.of("'"$T"'/keys.txt"));'
  echo 'for (String k : keys) System.out.println(Utils.toPositive(Utils.murmur2(k.getBytes(StandardCharsets.UTF_8))) % 5 + "\t" + k);'
  echo '/exit'
} > "$T/java.jsh"
cut -f2- "$T/placed.tsv" > "$T/keys.txt"
JSHELL=${CF_TEST_JAVA:+$(dirname "$CF_TEST_JAVA")/jshell}
JSHELL=${JSHELL:-jshell}
clients=$(ls "$CF_TEST_KAFKA_LIB"/kafka-clients-*.jar | head -1):$(ls "$CF_TEST_KAFKA_LIB"/slf4j-api-*.jar | head -1)
"$JSHELL" -q --class-path "$clients" "$T/java.jsh" > "$T/java.tsv" 2>"$T/jshell.err" || fail "jshell: $(tail -3 "$T/jshell.err")"
if [[ -s "$T/java.tsv" ]] && cmp -s "$T/placed.tsv" "$T/java.tsv"; then
  ok "every offsets record is in the partition Java's producer picks for its key"
else
  fail "partitions differ from Java's: $(diff "$T/placed.tsv" "$T/java.tsv" | head -5)"
fi

# an existing offsets topic, 3 partitions, not compacted
t2="cdcflow-it-offsets-bad-$$-$RANDOM"
"$PY" - "$CF_TEST_KAFKA" "$t2" <<'P' || fail "could not create $t2"
import sys
from confluent_kafka.admin import AdminClient, NewTopic
a = AdminClient({"bootstrap.servers": sys.argv[1]})
for f in a.create_topics([NewTopic(sys.argv[2], 3, 1, config={"cleanup.policy": "delete"})]).values():
    f.result(15)
P
rm -f "$T/out-$t2.jsonl"
run "$t2" 5
rc=$?
[[ $rc -eq 0 ]] && ok "a run with the wrong offsets topic still works (exit 0)" || fail "exit $rc: $(tail -5 "$T/log-$t2")"
grep -q "WARN.*offsets topic $t2.*cleanup.policy=delete.*compact" "$T/log-$t2" &&
  ok "WARN: the offsets topic is not compacted" || fail "no WARN about compaction: $(grep -i offsets "$T/log-$t2" | head -5)"
grep -q "WARN.*offsets topic $t2.*3 partitions.*offset.storage.partitions.*5" "$T/log-$t2" &&
  ok "WARN: the offsets topic's partition count differs" || fail "no WARN about partitions: $(grep -i offsets "$T/log-$t2" | head -5)"
# a run on the topic we created: no WARN
grep -q "WARN.*offsets topic" "$T/log-$t1" && fail "WARN on a topic that is right: $(grep WARN "$T/log-$t1")" ||
  ok "no WARN for the offsets topic cdcflow created"
exit $failed
