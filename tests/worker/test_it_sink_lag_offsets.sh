#!/usr/bin/env bash
# test_it_sink_lag_offsets.sh - issue 14: /metrics has the consumer lag of
# a sink per topic partition (Connect's consumer has records-lag per
# partition), not only the task's sum; and GET /connectors/{name}/offsets
# answers for a sink as Connect's does (KIP-875), its consumer group's
# committed offsets.
#   - a topic of two partitions, 12,000 changes on partition 0 and none on
#     partition 1, read by a cdc-sink slowed down to one record per apply;
#   - while it is behind: a series for each assigned partition, partition 0
#     behind by more than 0 and at most 12,000, partition 1 by 0;
#   - once the table holds every change: both partitions at 0, and the
#     task's sum (cdcflow_task_lag_records) too;
#   - GET /connectors/{name}/offsets (curl, Connect's response shape) gives
#     what confluent-kafka's Consumer.committed reads for the group
#     connect-<name>: partition 0 at 12,000, partition 1 (never read) absent;
#   - PATCH (running: 400; stopped: 200) moves partition 0 to 6000 in the
#     group and in the sink's positions, and the resumed sink reads 6,000
#     records; an offset of null removes partition 0's in both; DELETE
#     removes both, and the resumed sink reads all 12,000.
# The lag is checked against what Kafka says: the high watermark, read by
# confluent-kafka (an outside client).
set -euo pipefail
CLI=${CF_CLI:?CF_CLI is the cdcflow binary}
T=$(mktemp -d /tmp/cf_plag.XXXXXX)
trap 'kill -9 $(jobs -p) 2>/dev/null || true; [[ -n ${KEEP:-} ]] || rm -rf "$T"' EXIT
source "$(dirname "$0")/stop_lib.sh"
need_env CF_TEST_KAFKA CF_TEST_PYTHON
BS=$CF_TEST_KAFKA
TOPIC=plag-$$-$(date +%s)
TABLE=${TOPIC//-/_}
N=8000 # json_rows N: 12,000 messages
"$CF_TEST_PYTHON" - "$BS" "$TOPIC" <<'P' || fail "cannot create topic $TOPIC"
import sys
from confluent_kafka.admin import AdminClient, NewTopic
a = AdminClient({"bootstrap.servers": sys.argv[1]})
for f in a.create_topics([NewTopic(sys.argv[2], 2, 1)]).values():
    f.result()
P
kcat -P -b "$BS" -t "$TOPIC" -p 0 -K '|' < <(json_rows $N) || fail "kcat could not produce to $TOPIC"
total=$(json_count $N)
hw=$("$CF_TEST_PYTHON" - "$BS" "$TOPIC" <<'P'
import sys
from confluent_kafka import Consumer, TopicPartition
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "plag-check"})
print(" ".join(str(c.get_watermark_offsets(TopicPartition(sys.argv[2], p), timeout=10)[1]) for p in (0, 1)))
c.close()
P
)
[[ $hw == "$total 0" ]] || fail "the topic's high watermarks are '$hw', want '$total 0'"
worker_props "$T/w.properties" "$BS"
NAME=plag$$
sink_json "$T/s.json" $NAME "$TOPIC" ",\"sqlite.path\":\"$T/s.db\",\"batchMaxRecords\":\"1\""
start_worker s --worker "$T/w.properties" "$T/s.json"

# series: "p0 p1 sum" (empty fields when a series is missing)
series() {
    curl -s -m 2 "http://127.0.0.1:$(cat "$T/s.port")/metrics" >"$T/m.txt" || true
    local p0 p1 sum
    p0=$(sed -n "s/^cdcflow_task_partition_lag_records{connector=\"$NAME\",task=\"0\",topic=\"$TOPIC\",partition=\"0\"} \([0-9]*\)$/\1/p" "$T/m.txt")
    p1=$(sed -n "s/^cdcflow_task_partition_lag_records{connector=\"$NAME\",task=\"0\",topic=\"$TOPIC\",partition=\"1\"} \([0-9]*\)$/\1/p" "$T/m.txt")
    sum=$(sed -n "s/^cdcflow_task_lag_records{connector=\"$NAME\",task=\"0\",type=\"sink\"} \([0-9]*\)$/\1/p" "$T/m.txt")
    echo "${p0:--} ${p1:--} ${sum:--}"
}
behind_seen=
for ((i = 0; i < 300; i++)); do
    read -r p0 p1 sum <<<"$(series)"
    if [[ $p0 != - && $p1 != - && $p0 -gt 0 ]]; then
        ((p0 <= total)) || fail "partition 0 is behind by $p0, more than the $total records it holds"
        [[ $p1 == 0 ]] || fail "partition 1 (empty) is behind by $p1"
        behind_seen="$p0"
        echo "behind: partition 0 by $p0, partition 1 by $p1, task lag $sum" >&2
        break
    fi
    sleep 0.1
done
[[ -n $behind_seen ]] || { cat "$T/m.txt" >&2; fail "no per-partition lag above 0 while the sink was behind"; }
grep -q '^# TYPE cdcflow_task_partition_lag_records gauge$' "$T/m.txt" || fail "no TYPE line for the series"

rows() { sqlite3 "$T/s.db" "SELECT count(*) FROM \"$TABLE\"" 2>/dev/null || echo 0; }
has_all() { [[ $(rows) -eq $N ]]; }
wait_until 240 "the table's $N rows" has_all
caught_up() { [[ $(series) == "0 0 0" ]]; }
wait_until 20 "both partitions at lag 0 (last: $(series))" caught_up

committed() { # "p0 p1" as an outside client reads them (-1001: none)
    "$CF_TEST_PYTHON" - "$BS" "connect-$NAME" "$TOPIC" <<'P'
import sys
from confluent_kafka import Consumer, TopicPartition
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2], "enable.auto.commit": False})
print(" ".join(str(tp.offset) for tp in c.committed([TopicPartition(sys.argv[3], p) for p in (0, 1)], timeout=10)))
c.close()
P
}
all_committed() { [[ $(committed) == "$total -1001" ]]; }
wait_until 30 "the group's commit of partition 0 at $total (last: $(committed))" all_committed
code=$(curl -s -m 15 -o "$T/offsets.json" -w '%{http_code}' "http://127.0.0.1:$(cat "$T/s.port")/connectors/$NAME/offsets")
[[ $code == 200 ]] || fail "GET /connectors/$NAME/offsets: $code $(cat "$T/offsets.json")"
python3 - "$T/offsets.json" "$TOPIC" "$total" <<'P' || fail "GET /connectors/$NAME/offsets: $(cat "$T/offsets.json")"
import json, sys
b = json.load(open(sys.argv[1]))
want = {"offsets": [{"partition": {"kafka_topic": sys.argv[2], "kafka_partition": 0},
                     "offset": {"kafka_offset": int(sys.argv[3])}}]}
sys.exit(0 if b == want else 1)
P
echo "GET offsets: $(cat "$T/offsets.json")" >&2

# PATCH and DELETE of a stopped sink's offsets (KIP-875, Connect's request
# shapes): both the consumer group (read by confluent-kafka) and the sink's
# own positions (the target's _cdcflow_positions, which win at a start)
# change, and the resumed sink reads from there.
url="http://127.0.0.1:$(cat "$T/s.port")/connectors/$NAME"
req() { curl -s -m 60 -o "$T/body" -w '%{http_code}' -X "$1" "$url$2" -H 'Content-Type: application/json' ${3:+--data "$3"}; }
stored() { sqlite3 "$T/s.db" "SELECT group_concat(\"partition\" || ':' || next_offset, ' ') FROM _cdcflow_positions WHERE consumer = '$NAME'"; }
records_in() { metric s cdcflow_task_records_in_total "$NAME"; }
patch='{"offsets":[{"partition":{"kafka_topic":"'$TOPIC'","kafka_partition":0},"offset":{"kafka_offset":6000}}]}'
c=$(req PATCH /offsets "$patch")
[[ $c == 400 ]] || fail "PATCH offsets of a running sink: want 400, got $c $(cat "$T/body")"
c=$(req PUT /stop)
[[ $c == 204 ]] || fail "PUT stop: $c $(cat "$T/body")"
c=$(req PATCH /offsets '{"offsets":[{"partition":{"kafka_topic":"'$TOPIC'"},"offset":{"kafka_offset":1}}]}')
[[ $c == 400 ]] && grep -q kafka_partition "$T/body" || fail "PATCH without kafka_partition: want 400 naming it, got $c $(cat "$T/body")"
c=$(req PATCH /offsets "$patch")
[[ $c == 200 ]] && grep -q "altered successfully" "$T/body" || fail "PATCH offsets: $c $(cat "$T/body")"
[[ $(committed) == "6000 -1001" ]] || fail "after PATCH the group has '$(committed)', want '6000 -1001'"
[[ $(stored) == "0:6000" ]] || fail "after PATCH the sink's positions are '$(stored)', want '0:6000'"
c=$(req GET /offsets)
grep -q '"kafka_offset":6000' "$T/body" || fail "GET offsets after PATCH: $(cat "$T/body")"
# the task's counters go on across a stop and a resume: what it reads now is the difference
base=$(records_in)
c=$(req PUT /resume)
[[ $c == 202 ]] || fail "PUT resume: $c $(cat "$T/body")"
reread() { [[ $(( $(records_in) - base )) -ge $1 && $(series) == "0 0 0" ]]; }
wait_until 120 "the resumed sink reading offsets 6000-11999" reread 6000
sleep 1
[[ $(( $(records_in) - base )) -eq 6000 ]] || fail "the resumed sink read $(( $(records_in) - base )) records, want 6000"
c=$(req PUT /stop)
[[ $c == 204 ]] || fail "PUT stop: $c"
# an offset of null removes that partition's, in both places
c=$(req PATCH /offsets '{"offsets":[{"partition":{"kafka_topic":"'$TOPIC'","kafka_partition":0},"offset":null}]}')
[[ $c == 200 ]] || fail "PATCH offsets with null: $c $(cat "$T/body")"
[[ $(committed) == "-1001 -1001" ]] || fail "after PATCH null the group has '$(committed)', want none"
[[ -z $(stored) ]] || fail "after PATCH null the sink's positions are '$(stored)', want none"
patch='{"offsets":[{"partition":{"kafka_topic":"'$TOPIC'","kafka_partition":0},"offset":{"kafka_offset":'$total'}}]}'
c=$(req PATCH /offsets "$patch")
[[ $c == 200 && $(committed) == "$total -1001" && $(stored) == "0:$total" ]] ||
    fail "PATCH back to $total: $c, group '$(committed)', positions '$(stored)'"
c=$(req DELETE /offsets)
[[ $c == 200 ]] && grep -q "reset successfully" "$T/body" || fail "DELETE offsets: $c $(cat "$T/body")"
[[ $(committed) == "-1001 -1001" ]] || fail "after DELETE the group has '$(committed)', want none"
[[ -z $(stored) ]] || fail "after DELETE the sink's positions are '$(stored)', want none"
base=$(records_in)
c=$(req PUT /resume)
[[ $c == 202 ]] || fail "PUT resume: $c $(cat "$T/body")"
wait_until 240 "the reset sink reading every record again" reread "$total"
sleep 1
[[ $(( $(records_in) - base )) -eq $total ]] || fail "the reset sink read $(( $(records_in) - base )) records, want $total"
[[ $(rows) -eq $N ]] || fail "the table has $(rows) rows after the rereads, want $N"
timed_stop s
echo OK
