#!/usr/bin/env bash
# test_it_stop_sources.sh - issue 19: the stop of the files and stream
# sources is bounded when the broker is gone and the Schema Registry stopped
# or frozen, with the Avro converter (Confluent wire format, schemas in the
# spare registry CF_TEST_SPARE_REGISTRY), publishing to the spare broker
# (CF_TEST_SPARE_KAFKA):
#
#   F1 files (CSV) -> Kafka, Avro   two files published, then the broker
#                                   killed and the registry stopped, a third
#                                   file read (its schema cached): SIGTERM
#                                   exits within the bound, exit 4, naming
#                                   the file whose offsets were not stored
#   F2 files, a new topic           the registry frozen (SIGSTOP: it accepts
#                                   and never answers) while the first record
#                                   waits for its schema's registration:
#                                   SIGTERM abandons the request, exit 4
#   S1 stream (FIFO) -> Kafka, Avro lines published, then lines read after
#                                   the broker died: exit 4, the log says
#                                   they are lost (a stream cannot be read
#                                   again; docs/operations.md)
#
# Then the broker and the registry come back and the same connectors run
# again: F1's and F2's topics hold every line of their files (nothing lost;
# lines twice only as at-least-once allows), S1 publishes its new lines.
set -euo pipefail
CLI=${CF_CLI:?CF_CLI is the cdcflow binary}
T=$(mktemp -d /tmp/cf_stop_src.XXXXXX)
source "$(dirname "$0")/stop_lib.sh"
need_env CF_TEST_SPARE_KAFKA CF_TEST_SPARE_KAFKA_KILL CF_TEST_SPARE_KAFKA_START CF_TEST_SPARE_REGISTRY \
    CF_TEST_SPARE_REGISTRY_STOP CF_TEST_SPARE_REGISTRY_START CF_TEST_SPARE_REGISTRY_FREEZE CF_TEST_SPARE_REGISTRY_THAW
on_exit_restore KAFKA REGISTRY
BS=$CF_TEST_SPARE_KAFKA
REG=$CF_TEST_SPARE_REGISTRY
RUN=$$-$(date +%s)
TF1=stopf1-$RUN TF2=stopf2-$RUN TS1=stops1-$RUN

csv() { # csv FILE TAG N [COLUMN]: a header, then N rows "I,TAG-I"
    local tmp
    tmp=$(dirname "$1")/.$(basename "$1") # hidden (not read) until complete
    { echo "id,${4:-v}"; for ((i = 1; i <= $3; i++)); do echo "$i,$2-$i"; done; } >"$tmp" && mv "$tmp" "$1"
}
files_json() { # files_json FILE NAME DIR TOPIC
    cat >"$1" <<J
{"name": "$2", "config": {"connector.class": "files", "files.path": "$3", "topic": "$4", "input.format": "csv",
 "files.min.age.ms": "0", "poll.backoff.initial.ms": "20", "poll.backoff.max.ms": "100",
 "key.converter": "string", "value.converter": "avro", "value.converter.schema.registry.url": "$REG"}}
J
}
# the "TAG-I" values in a topic (Avro strings are their bytes after a length)
topic_values() { kcat -C -b "$BS" -t "$1" -e -q -f '%s\n' 2>/dev/null | grep -ao '[0-9]*-[0-9]*' | sort -u; }
topic_has() { [[ $(topic_values "$1" | wc -l) -ge $2 ]]; }
want_values() { cat "$@" | grep -v '^id,' | cut -d, -f2 | sort -u; }

mkdir -p "$T/in1" "$T/in2"
csv "$T/in1/1.csv" 1 300
csv "$T/in1/2.csv" 2 300
worker_props "$T/f1.properties" "$BS" "offset.flush.interval.ms=200"
files_json "$T/f1.json" f1 "$T/in1" "$TF1"
start_worker f1 --worker "$T/f1.properties" "$T/f1.json"
worker_props "$T/f2.properties" "$BS" "offset.flush.interval.ms=200"
files_json "$T/f2.json" f2 "$T/in2" "$TF2"
start_worker f2 --worker "$T/f2.properties" "$T/f2.json"
mkfifo "$T/fifo"
sleep 600 >"$T/fifo" &
HOLD=$!
worker_props "$T/s1.properties" "$BS"
cat >"$T/s1.json" <<J
{"name": "s1", "config": {"connector.class": "stream", "topic": "$TS1", "stream.type": "fifo", "stream.path": "$T/fifo",
 "key.converter": "string", "value.converter": "avro", "value.converter.schema.registry.url": "$REG"}}
J
start_worker s1 --worker "$T/s1.properties" "$T/s1.json"
seq -f "1-%g" 1 100 >"$T/fifo"
wait_until 60 "f1 to publish 600 rows" metric_at_least f1 cdcflow_task_records_out_total f1 600
wait_until 60 "s1 to publish 100 lines" metric_at_least s1 cdcflow_task_records_out_total s1 100
sleep 0.5 # f1: the offsets of both files stored (flushed every 200 ms)

# ---- F2: the registry frozen while a record waits for its schema
echo "freezing the spare registry: $CF_TEST_SPARE_REGISTRY_FREEZE" >&2
eval "$CF_TEST_SPARE_REGISTRY_FREEZE" >&2
csv "$T/in2/1.csv" 21 200 w # a topic (subject) of its own: its schema is registered now
# (the poll's records count as read only once converted: no metric shows the
# wait, the log line below proves it; the file is listed within 100 ms)
sleep 2 # the converter waits for the registry's answer now
timed_stop f2
eval "$CF_TEST_SPARE_REGISTRY_THAW" >&2
assert_bounded f2
grep -q "connector f2 task 0: stop not clean: .*Schema Registry .*interrupted.*records not sent" "$T/f2.log" ||
    fail "F2: the abandoned registry request is not logged: $(grep -i 'not clean' "$T/f2.log")"
(( $(metric f1 cdcflow_task_records_out_total f1) == 600 )) || fail "F1 published more than its two files"

# ---- the broker killed, the registry stopped
echo "killing the spare broker: $CF_TEST_SPARE_KAFKA_KILL" >&2
eval "$CF_TEST_SPARE_KAFKA_KILL" >&2
echo "stopping the spare registry: $CF_TEST_SPARE_REGISTRY_STOP" >&2
eval "$CF_TEST_SPARE_REGISTRY_STOP" >&2
csv "$T/in1/3.csv" 3 500
wait_until 30 "f1 to read the new file" metric_at_least f1 cdcflow_task_records_in_total f1 1100
seq -f "2-%g" 1 50 >"$T/fifo"
wait_until 30 "s1 to read 50 more lines" metric_at_least s1 cdcflow_task_records_in_total s1 150
sleep 0.5

timed_stop f1
assert_bounded f1
grep -q "connector f1 task 0: stop not clean: .*not acknowledged" "$T/f1.log" || fail "F1: $(grep -i 'not clean' "$T/f1.log")"
grep -q '"path":"3.csv"' "$T/f1.log" || fail "F1: the source partition is not named: $(grep -i 'not clean' "$T/f1.log")"
grep -q "task f1-0 failed" "$T/f1.log" && fail "F1: the task failed instead of waiting: $(grep "task f1-0 failed" "$T/f1.log")"
timed_stop s1
assert_bounded s1
grep -q "connector s1 task 0: stop not clean: .*not acknowledged.*they are lost" "$T/s1.log" || fail "S1: $(grep -i 'not clean' "$T/s1.log")"
kill $HOLD 2>/dev/null || true

# ---- the servers back: the same connectors publish what was not committed
echo "starting the spare broker and registry again" >&2
eval "$CF_TEST_SPARE_KAFKA_START" >&2
eval "$CF_TEST_SPARE_REGISTRY_START" >&2
start_worker f1b --worker "$T/f1.properties" "$T/f1.json"
start_worker f2b --worker "$T/f2.properties" "$T/f2.json"
wait_until 90 "f1 to publish the rest" topic_has "$TF1" 1100
wait_until 90 "f2 to publish its file" topic_has "$TF2" 200
sleep 0.5
timed_stop f1b
assert_bounded f1b 0
timed_stop f2b
assert_bounded f2b 0
diff <(want_values "$T"/in1/*.csv) <(topic_values "$TF1") >"$T/f1.diff" || fail "F1: $TF1 differs from the files: $(head -5 "$T/f1.diff")"
diff <(want_values "$T"/in2/*.csv) <(topic_values "$TF2") >"$T/f2.diff" || fail "F2: $TF2 differs from the file: $(head -5 "$T/f2.diff")"
# the files F1 had finished before the broker died were not sent again (their offsets were stored)
(( $(kcat -C -b "$BS" -t "$TF1" -e -q -f '%s\n' | grep -ao '[0-9]*-[0-9]*' | grep -c '^1-1$') == 1 )) || fail "F1: 1.csv was sent again"
dups=$(( $(kcat -C -b "$BS" -t "$TF1" -e -q -f '%o\n' | wc -l) - 1100 )) # messages (Avro bytes may hold newlines)
echo "F1: $dups lines of 3.csv published twice (at least once)" >&2
(( dups <= 500 )) || fail "F1: $dups duplicates, more than 3.csv holds"

mkfifo "$T/fifo2"
sleep 600 >"$T/fifo2" &
HOLD=$!
sed "s|$T/fifo\"|$T/fifo2\"|" "$T/s1.json" >"$T/s1b.json"
start_worker s1b --worker "$T/s1.properties" "$T/s1b.json"
seq -f "3-%g" 1 20 >"$T/fifo2"
s1_has() { [[ $(topic_values "$TS1" | grep -c '^3-') == 20 ]]; }
wait_until 60 "s1 to publish its new lines" s1_has
timed_stop s1b
assert_bounded s1b 0
kill $HOLD 2>/dev/null || true
diff <(seq -f "1-%g" 1 100 | sort -u) <(topic_values "$TS1" | grep '^1-') >/dev/null || fail "S1: the lines published before the stop are not all in $TS1"
echo OK
