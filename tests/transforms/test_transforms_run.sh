#!/usr/bin/env bash
# test_transforms_run.sh - Connect's transforms and predicates in a user's
# connector file, through `cdcflow run` (the worker builds the chain from the
# file's transforms= / predicates= keys): Filter under TopicNameMatches with
# negate, ExtractNewRecordState after it, InsertField$Value and
# SetSchemaMetadata beside it, into a SQLite table; and `validate` naming a
# misspelt transform class with the closest one.
set -euo pipefail
CLI=${CF_CLI:?CF_CLI not set}
HERE=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cd "$W"
fail() { echo "FAIL: $*" >&2; exit 1; }
python3 "$HERE/../sink/debezium_envelopes.py" > in.jsonl
conf() { # conf FILE NEGATE DB
  cat > "$1" <<J
{"name": "p", "config": {"connector.class": "cdc-sink", "topics": "dbserver1.public.customers",
 "connection.url": "sqlite:$W/$3", "key.converter": "json", "value.converter": "json",
 "transforms": "onlyOthers,unwrap,insert",
 "transforms.onlyOthers.type": "org.apache.kafka.connect.transforms.Filter",
 "transforms.onlyOthers.predicate": "isCustomers", "transforms.onlyOthers.negate": "$2",
 "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
 "transforms.insert.type": "org.apache.kafka.connect.transforms.InsertField\$Value",
 "transforms.insert.static.field": "origin", "transforms.insert.static.value": "pg-main",
 "transforms.insert.predicate": "isTombstone", "transforms.insert.negate": "true",
 "predicates": "isCustomers,isTombstone",
 "predicates.isCustomers.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
 "predicates.isCustomers.pattern": ".*\\\\.customers",
 "predicates.isTombstone.type": "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone"}}
J
}
# negate=true: Filter drops what is NOT a customers topic, so every record passes
conf keep.json true keep.db
"$CLI" validate keep.json > /dev/null || { "$CLI" validate keep.json; fail "validate keep"; }
"$CLI" run keep.json --input in.jsonl 2> keep.log || { cat keep.log; fail "run keep"; }
got=$(sqlite3 keep.db "SELECT id, email, origin FROM dbserver1_public_customers ORDER BY id" | tr '\n' ' ')
[[ $got == "2|c@x|pg-main 3|d@x|pg-main " ]] || { cat keep.log; fail "keep: '$got'"; }
# negate=false: Filter drops the customers records: no table
rm -f cdcflow.offsets.json
conf drop.json false drop.db
"$CLI" run drop.json --input in.jsonl 2> drop.log || { cat drop.log; fail "run drop"; }
[[ -z $(sqlite3 drop.db "SELECT name FROM sqlite_master WHERE name = 'dbserver1_public_customers'") ]] ||
  fail "drop: the table exists"
# a misspelt class: validate names the closest
sed 's/InsertField\$Value/InsertFeild$Value/' keep.json > typo.json
set +e; out=$("$CLI" validate typo.json 2>&1); rc=$?; set -e
[[ $rc == 2 ]] || { echo "$out"; fail "typo: exit $rc"; }
grep -qF 'did you mean "org.apache.kafka.connect.transforms.InsertField$Value"?' <<<"$out" ||
  { echo "$out"; fail "typo: no suggestion"; }
echo "1 passed, 0 failed"
