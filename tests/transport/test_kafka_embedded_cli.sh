#!/usr/bin/env bash
# test_kafka_embedded_cli.sh - `cdcflow kafka embedded` with kcat as the
# outside client: the printed address is usable by another Kafka client, the
# brokers and the --topic partitions are what kcat's metadata says, a message
# produced by kcat is consumed back by kcat, SIGTERM stops it with exit 0,
# and --help says it is in memory and not durable. (A mock cluster: real TCP.)
set -euo pipefail
CLI=${CF_CLI:?CF_CLI not set (the built cdcflow binary)}
command -v kcat >/dev/null || { echo "FAIL: kcat not installed (scripts/bootstrap)"; exit 1; }
tmp=$(mktemp -d); pid=""
cleanup() { [[ -n $pid ]] && kill "$pid" 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; [[ -f $tmp/err ]] && tail -5 "$tmp/err"; exit 1; }

"$CLI" kafka --help >"$tmp/help"
grep -qi "in memory and not durable" "$tmp/help" || fail "--help does not say in memory and not durable"
set +e; "$CLI" kafka embedded --brokers 0 2>/dev/null; rc=$?; set -e
[[ $rc -eq 2 ]] || fail "--brokers 0 must be a usage error (2), got $rc"

"$CLI" kafka embedded --brokers 2 --topic orders:3 >"$tmp/out" 2>"$tmp/err" &
pid=$!
for _ in $(seq 1 100); do [[ -s $tmp/out ]] && break; sleep 0.1; done
bs=$(head -1 "$tmp/out")
[[ $bs =~ ^127\.0\.0\.1:[0-9]+(,127\.0\.0\.1:[0-9]+)*$|^localhost:[0-9]+ ]] || fail "bootstrap line is \"$bs\""

kcat -b "$bs" -L -t orders -m 10 >"$tmp/meta" 2>&1 || fail "kcat -L failed: $(cat "$tmp/meta")"
grep -q " 2 brokers:" "$tmp/meta" || fail "kcat does not see 2 brokers: $(cat "$tmp/meta")"
grep -q 'topic "orders" with 3 partitions' "$tmp/meta" || fail "topic orders/3 missing: $(cat "$tmp/meta")"

printf 'k1:hello\n' | kcat -b "$bs" -P -t orders -p 1 -K: || fail "kcat produce failed"
kcat -b "$bs" -C -t orders -p 1 -o beginning -e -J -m 10 >"$tmp/cons" 2>/dev/null || fail "kcat consume failed"
grep -q '"key":"k1"' "$tmp/cons" && grep -q '"payload":"hello"' "$tmp/cons" || fail "round trip: $(cat "$tmp/cons")"

kill -TERM "$pid"
set +e; wait "$pid"; rc=$?; set -e; pid=""
[[ $rc -eq 0 ]] || fail "exit code after SIGTERM is $rc, want 0"
# the cluster's own handle has no brokers to connect to, by design: librdkafka's
# CONFWARN about it says nothing to the user (issue 14)
! grep -q CONFWARN "$tmp/err" || fail "librdkafka's CONFWARN shown: $(grep CONFWARN "$tmp/err")"
# the same in a worker on the embedded cluster
printf 'bootstrap.servers=embedded\noffset.storage.file.filename=%s/offsets.json\n' "$tmp" >"$tmp/w.properties"
printf '{"name":"s","config":{"connector.class":"cdc-sink","topics":"t","sqlite.path":"%s/x.db"}}' "$tmp" >"$tmp/s.json"
"$CLI" run --worker "$tmp/w.properties" "$tmp/s.json" 2>"$tmp/err2" &
pid=$!
for _ in $(seq 1 100); do grep -q "task 0 started" "$tmp/err2" && break; sleep 0.1; done
kill -TERM "$pid"; set +e; wait "$pid"; set -e; pid=""
grep -q "task 0 started" "$tmp/err2" || fail "the worker on the embedded cluster did not start: $(tail -3 "$tmp/err2")"
! grep -q CONFWARN "$tmp/err2" || fail "librdkafka's CONFWARN shown by the worker: $(grep CONFWARN "$tmp/err2")"
echo "1 passed, 0 failed"
