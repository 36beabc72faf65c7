#!/usr/bin/env bash
# test_it_sink_fresh.sh - issue 18: the CDC sink behind Kafka is fresh at its
# defaults. offset.flush.interval.ms keeps Connect's 60 s; the cdc-sink still
# writes what it read within its own short interval (mergeIntervalMs), and
# commits the consumer offsets after the flush that covers them:
#   - a change produced to the topic is in the table within a second (2 s
#     allowed here for a loaded machine);
#   - shortly after, the group's committed offset (read by confluent-kafka's
#     Consumer.committed, an outside client) covers it;
#   - later changes too, one after the other.
set -euo pipefail
CLI=${CF_CLI:?CF_CLI is the cdcflow binary}
T=$(mktemp -d /tmp/cf_fresh.XXXXXX)
trap 'kill -9 $(jobs -p) 2>/dev/null || true; [[ -n ${KEEP:-} ]] || rm -rf "$T"' EXIT
source "$(dirname "$0")/stop_lib.sh"
need_env CF_TEST_KAFKA CF_TEST_PYTHON
BS=$CF_TEST_KAFKA
TOPIC=fresh-$$-$(date +%s)
TABLE=${TOPIC//-/_}
produce "$BS" "$TOPIC" 2 # ids 1, 2 named n1, n2; then id 1 renamed u1: 3 messages
{
    echo "bootstrap.servers=$BS"
    echo "offset.storage.file.filename=$T/offsets.json"
    echo "key.converter=json"
    echo "value.converter=json"
    echo "rest.port=0"
} >"$T/w.properties" # offset.flush.interval.ms: the default (60 s)
NAME=fresh$$ # a group of its own: a killed earlier run's member would hold up the join
sink_json "$T/s.json" $NAME "$TOPIC" ",\"sqlite.path\":\"$T/s.db\""
start_worker s --worker "$T/w.properties" "$T/s.json"
rows() { sqlite3 "$T/s.db" "SELECT id || '|' || name FROM \"$TABLE\" ORDER BY id" 2>/dev/null | tr '\n' ' '; }
has_rows() { [[ $(rows) == "$1" ]]; }
committed() {
    "$CF_TEST_PYTHON" - "$BS" "connect-$NAME" "$TOPIC" <<'P'
import sys
from confluent_kafka import Consumer, TopicPartition
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2], "enable.auto.commit": False})
print(c.committed([TopicPartition(sys.argv[3], 0)], timeout=10)[0].offset)
c.close()
P
}
committed_is() { [[ $(committed) == "$1" ]]; }

# the first records: the consumer joins the group first (a few seconds), so
# they are waited for longer; the bound is checked on the changes after them
wait_until 30 "the first rows" has_rows "1|u1 2|n2 "
wait_until 10 "the commit of offsets 0-2" committed_is 3
for i in 3 4 5; do
    k='{"schema":{"type":"struct","fields":[{"field":"id","type":"int32","optional":false}]},"payload":{"id":%d}}'
    v='{"schema":{"type":"struct","fields":[{"field":"id","type":"int32","optional":false},{"field":"name","type":"string","optional":true}]},"payload":{"id":%d,"name":"n%d"}}'
    t0=$(now_ms)
    printf "$k|$v\n" "$i" "$i" "$i" | kcat -P -b "$BS" -t "$TOPIC" -K '|'
    want="1|u1 2|n2 "
    for ((j = 3; j <= i; j++)); do want+="$j|n$j "; done
    until has_rows "$want"; do
        (( $(now_ms) - t0 < 2000 )) || fail "id $i was not in the table 2 s after it was produced (rows: $(rows))"
        sleep 0.02
    done
    echo "id $i in the table after $(( $(now_ms) - t0 )) ms" >&2
    wait_until 5 "the commit of offset $i" committed_is $((i + 1))
done
timed_stop s
assert_bounded s 0
echo OK
