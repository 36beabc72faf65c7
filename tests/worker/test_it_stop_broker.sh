#!/usr/bin/env bash
# test_it_stop_broker.sh - issue 19: a stop is bounded when the broker is gone.
#
# Workers that read from or wrote to a broker which then died (SIGKILL of the
# spare broker, CF_TEST_SPARE_KAFKA; the embedded cluster of `cdcflow kafka
# embedded` in another process) are stopped with SIGTERM: each exits within
# task.shutdown.graceful.timeout.ms (+ slack) with exit code 4 (the stop was
# not clean) and logs what was not committed (connector, task, partitions,
# offsets). A second SIGTERM exits at once and says so. REST restart and
# DELETE of a connector return within the bound too. Then the broker comes
# back and the same runs again read what was not committed: the sink's table
# equals the rows produced, and the files source's topic holds every line.
#
#   W1 sink (cdc-sink, SQLite)    records read and put, not flushed (the
#                                 offset flush interval is a minute)
#   W2 the same, a 60 s timeout   SIGTERM, then a second one
#   W3 REST                       a sink connector restarted, then deleted
#   W4 files source -> Kafka      a file added after the broker died
#   W5 stream source -> Kafka     lines written after the broker died
#   W6 files source, offsets in the offsets topic of that broker
#   E1 sink on an embedded cluster in another process, which is killed
set -euo pipefail
CLI=${CF_CLI:?CF_CLI is the cdcflow binary}
T=$(mktemp -d /tmp/cf_stop_broker.XXXXXX)
trap 'kill -9 $(jobs -p) 2>/dev/null || true; [[ -n ${KEEP:-} ]] || rm -rf "$T"' EXIT
source "$(dirname "$0")/stop_lib.sh"
MERGE_MS=-1 # what was read stays unflushed until the stop (offset.flush.interval.ms: a minute)
need_env CF_TEST_SPARE_KAFKA CF_TEST_SPARE_KAFKA_KILL CF_TEST_SPARE_KAFKA_START
BS=$CF_TEST_SPARE_KAFKA
RUN=$$-$(date +%s)
N=2000
M=$(json_count $N)

# ---- E1: the embedded cluster of another process dies
"$CLI" kafka embedded --topic e1:1 >"$T/emb.out" 2>"$T/emb.log" &
EMB=$!
wait_until 10 "the embedded cluster" test -s "$T/emb.out"
EBS=$(head -1 "$T/emb.out")
produce "$EBS" e1 $N
worker_props "$T/e1.properties" "$EBS"
sink_json "$T/e1.json" e1 e1 ",\"sqlite.path\":\"$T/e1.db\""
start_worker e1 --worker "$T/e1.properties" "$T/e1.json"
wait_until 60 "E1 to put $M records" metric_at_least e1 cdcflow_task_records_out_total e1 $M
kill -KILL $EMB
wait $EMB 2>/dev/null || true
sleep 0.5
timed_stop e1
assert_bounded e1
grep -q "connector e1 task 0: stop not clean" "$T/e1.log" || fail "E1: no 'stop not clean' line: $(tail -5 "$T/e1.log")"
grep -q "e1/0 offsets 0-$((M - 1))" "$T/e1.log" || fail "E1: the uncommitted offsets are not logged: $(grep -i 'not clean' "$T/e1.log")"

# ---- the spare broker: W1..W5 read or write, then it is killed
TA=stopa-$RUN TB=stopb-$RUN TC=stopc-$RUN
produce "$BS" "$TA" $N
worker_props "$T/w1.properties" "$BS"
sink_json "$T/w1.json" w1 "$TA" ",\"sqlite.path\":\"$T/w1.db\""
start_worker w1 --worker "$T/w1.properties" "$T/w1.json"
STOP_TIMEOUT=60000 worker_props "$T/w2.properties" "$BS"
sink_json "$T/w2.json" w2 "$TA" ",\"sqlite.path\":\"$T/w2.db\""
start_worker w2 --worker "$T/w2.properties" "$T/w2.json"
worker_props "$T/w3.properties" "$BS"
sink_json "$T/w3.json" w3 "$TA" ",\"sqlite.path\":\"$T/w3.db\""
start_worker w3 --worker "$T/w3.properties" "$T/w3.json"

mkdir -p "$T/in"
lines() { seq -f "{\"v\":\"$1-%g\"}" 1 "$2"; } # JSON lines {"v":"F-I"}
for f in 1 2; do lines $f 300 >"$T/in/$f.txt"; done
worker_props "$T/w4.properties" "$BS" "offset.flush.interval.ms=200"
cat >"$T/w4.json" <<J
{"name": "w4", "config": {"connector.class": "files", "files.path": "$T/in", "topic": "$TB",
 "input.format": "jsonl", "files.min.age.ms": "0", "poll.backoff.initial.ms": "20", "poll.backoff.max.ms": "100",
 "key.converter": "string", "value.converter": "json", "value.converter.schemas.enable": "false"}}
J
start_worker w4 --worker "$T/w4.properties" "$T/w4.json"
TD=stopd-$RUN
mkdir -p "$T/in6"
for f in 1 2; do lines 6$f 300 >"$T/in6/$f.txt"; done
OFFSETS_TOPIC=stopoffsets-$RUN worker_props "$T/w6.properties" "$BS" "offset.flush.interval.ms=200"
sed -e "s|\"w4\"|\"w6\"|" -e "s|$T/in\"|$T/in6\"|" -e "s|\"$TB\"|\"$TD\"|" "$T/w4.json" >"$T/w6.json"
start_worker w6 --worker "$T/w6.properties" "$T/w6.json"
mkfifo "$T/fifo"
sleep 600 >"$T/fifo" &
HOLD=$!
worker_props "$T/w5.properties" "$BS"
cat >"$T/w5.json" <<J
{"name": "w5", "config": {"connector.class": "stream", "topic": "$TC", "stream.type": "fifo", "stream.path": "$T/fifo",
 "key.converter": "string", "value.converter": "string"}}
J
start_worker w5 --worker "$T/w5.properties" "$T/w5.json"

for w in w1 w2 w3; do wait_until 60 "$w to put $M records" metric_at_least $w cdcflow_task_records_out_total $w $M; done
wait_until 60 "w4 to send 600 lines" metric_at_least w4 cdcflow_task_records_out_total w4 600
wait_until 60 "w6 to send 600 lines" metric_at_least w6 cdcflow_task_records_out_total w6 600
sleep 0.5 # w6: their offsets in the topic (flushed every 200 ms)

echo "killing the spare broker: $CF_TEST_SPARE_KAFKA_KILL" >&2
eval "$CF_TEST_SPARE_KAFKA_KILL" >&2
sleep 0.5
lines 3 500 >"$T/in/.3.txt" && mv "$T/in/.3.txt" "$T/in/3.txt" # hidden until complete
wait_until 30 "w4 to read the new file" metric_at_least w4 cdcflow_task_records_in_total w4 1100
lines 63 500 >"$T/in6/.3.txt" && mv "$T/in6/.3.txt" "$T/in6/3.txt"
wait_until 30 "w6 to read the new file" metric_at_least w6 cdcflow_task_records_in_total w6 1100
seq -f "line-%g" 1 100 >"$T/fifo"
wait_until 30 "w5 to read 100 lines" metric_at_least w5 cdcflow_task_records_in_total w5 100

timed_stop w1
assert_bounded w1
grep -q "connector w1 task 0: stop not clean" "$T/w1.log" || fail "W1: no 'stop not clean' line: $(tail -5 "$T/w1.log")"
grep -q "$TA/0 offsets 0-$((M - 1))" "$T/w1.log" || fail "W1: uncommitted offsets not logged: $(grep -i 'not clean' "$T/w1.log")"

timed_stop w4
assert_bounded w4
grep -q "connector w4 task 0: stop not clean: .*not acknowledged" "$T/w4.log" || fail "W4: $(grep -i 'not clean' "$T/w4.log")"
grep -q '"path":"3.txt"' "$T/w4.log" || fail "W4: the source partition is not named: $(grep -i 'not clean' "$T/w4.log")"

timed_stop w5
assert_bounded w5
grep -q "connector w5 task 0: stop not clean: .*not acknowledged.*they are lost" "$T/w5.log" || fail "W5: $(grep -i 'not clean' "$T/w5.log")"

timed_stop w6
assert_bounded w6
grep -q "connector w6 task 0: stop not clean: .*not acknowledged" "$T/w6.log" || fail "W6: $(grep -i 'not clean' "$T/w6.log")"
kill $HOLD 2>/dev/null || true

# W3: REST restart and DELETE return within the bound
P3=$(cat "$T/w3.port")
t0=$(now_ms)
curl -s -m 30 -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$P3/connectors/w3/restart" >"$T/w3.code"
took=$(( $(now_ms) - t0 ))
echo "w3: restart -> HTTP $(cat "$T/w3.code") after $took ms" >&2
(( took <= STOP_MS + SLACK_MS )) || fail "W3: the REST restart took $took ms"
[[ $(cat "$T/w3.code") == 204 || $(cat "$T/w3.code") == 202 || $(cat "$T/w3.code") == 200 ]] || fail "W3: restart answered $(cat "$T/w3.code")"
grep -q "connector w3 task 0: stop not clean" "$T/w3.log" || fail "W3: the restart's stop did not log what was not committed"
t0=$(now_ms)
curl -s -m 30 -o /dev/null -w '%{http_code}' -X DELETE "http://127.0.0.1:$P3/connectors/w3" >"$T/w3.code"
took=$(( $(now_ms) - t0 ))
echo "w3: DELETE -> HTTP $(cat "$T/w3.code") after $took ms" >&2
(( took <= STOP_MS + SLACK_MS )) || fail "W3: the REST DELETE took $took ms"
[[ $(cat "$T/w3.code") == 204 ]] || fail "W3: DELETE answered $(cat "$T/w3.code")"
timed_stop w3
assert_bounded w3 0 # nothing ran any more: a clean stop

# W2: the second SIGTERM ends it at once
pid2=$(cat "$T/w2.pid")
kill -TERM "$pid2"
sleep 1
t0=$(now_ms)
timed_stop w2
(( STOP_TOOK <= 1000 )) || fail "W2: the second SIGTERM took $STOP_TOOK ms to end the process"
[[ $STOP_RC == 4 ]] || fail "W2: exit $STOP_RC after the second SIGTERM, want 4"
grep -q "second SIGTERM: exiting at once" "$T/w2.log" || fail "W2: the second signal is not logged: $(tail -5 "$T/w2.log")"
grep -q "$TA/0 offsets 0-$((M - 1))" "$T/w2.log" || fail "W2: uncommitted offsets not logged at exit: $(tail -8 "$T/w2.log")"

# ---- the broker back: what was not committed is read again
echo "starting the spare broker again" >&2
eval "$CF_TEST_SPARE_KAFKA_START" >&2
worker_props "$T/w1b.properties" "$BS" "offset.flush.interval.ms=300"
start_worker w1b --worker "$T/w1b.properties" "$T/w1.json"
rows_of() { sqlite3 "$1" "SELECT id, name FROM \"$2\" ORDER BY id" 2>/dev/null; }
table_has() { [[ $(sqlite3 "$1" "SELECT count(*) FROM \"$2\"" 2>/dev/null) == "$3" ]]; }
# (the cdc-sink stored its input positions with the rows its stop flushed:
# W1b starts where the table stands and puts again only what the table lacks,
# so wait for the table, not for a number of records put)
wait_until 60 "W1's table to have $N rows" table_has "$T/w1.db" "${TA//-/_}" $N
sleep 1 # let the commit after that flush happen
timed_stop w1b
assert_bounded w1b 0
diff <(expected_rows $N) <(rows_of "$T/w1.db" "${TA//-/_}") >"$T/w1.diff" || fail "W1: the table differs from the rows produced: $(head "$T/w1.diff")"

start_worker w4b --worker "$T/w4.properties" "$T/w4.json"
topic_has() { [[ $(kcat -C -b "$BS" -t "$1" -e -q -f '%s\n' 2>/dev/null | sort -u | wc -l) == "$2" ]]; }
values() { sed 's/.*"v":"\([^"]*\)".*/\1/' | sort -u; }
start_worker w6b --worker "$T/w6.properties" "$T/w6.json"
wait_until 60 "w4 to send the rest" topic_has "$TB" 1100
wait_until 60 "w6 to send the rest" topic_has "$TD" 1100
timed_stop w4b
assert_bounded w4b 0
timed_stop w6b
assert_bounded w6b 0
for w in 4:$TB:in 6:$TD:in6; do
    IFS=: read -r k topic dir <<<"$w"
    kcat -C -b "$BS" -t "$topic" -e -q -f '%s\n' | values >"$T/w$k.got"
    cat "$T/$dir"/*.txt | values >"$T/w$k.want"
    diff "$T/w$k.want" "$T/w$k.got" >/dev/null || fail "W$k: lines missing from $topic after the restart: $(diff "$T/w$k.want" "$T/w$k.got" | head -5)"
done
# W6 read its offsets back from the topic: the files it had finished were not sent again
(( $(kcat -C -b "$BS" -t "$TD" -e -q -f '%s\n' | grep -c '"61-1"') == 1 )) || fail "W6: 1.txt was sent again after the restart (its offsets were not read back)"
echo OK
