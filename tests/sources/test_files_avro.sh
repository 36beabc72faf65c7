#!/usr/bin/env bash
# The files source with input.format=avro end to end through `cdcflow run --output`:
#  - the Avro container files fastavro wrote (tests/data/avro, codecs null,
#    deflate, snappy, zstandard; see gen_avro.py) become one record per
#    datum, and each value, printed by the JsonConverter (schemas off,
#    decimal.format=NUMERIC), is the value fastavro wrote (types.expected.jsonl);
#  - a damaged file (a flipped byte in a snappy block: CRC32) with
#    errors.tolerance=all: the error names the file and block, is logged,
#    and every other block's records arrive;
#  - a restart reads no finished file again;
#  - kill -9 in the middle of a large deflate file (60000 datums in ~500
#    blocks), restart: every datum arrives, and the only duplicates are one
#    contiguous run after the last committed offset (block + datum position).
# The large file is written here by a few lines of Python following the Avro
# specification (python3 without fastavro is all the test machine has); its
# values are plain ids, the decoding itself is checked against fastavro's
# files above and in tests/source_framework/test_avro_extract.c (fastavro reads the
# file this writer makes as the same 60000 records; checked by hand).
set -euo pipefail
CLI=${CF_CLI:?CF_CLI not set}
DATA=${CF_TESTS_DIR:-$(cd "$(dirname "$0")/.." && pwd)}/data/avro
T=$(mktemp -d); echo "work dir $T" >&2
trap 'kill -9 $(jobs -p) 2>/dev/null || true; [[ -n "${KEEP:-}" ]] || rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
source "$(dirname "$0")/lib.sh" # cli_start, run_until, kill9_restart, ...

mkdir -p "$T/in/sub" "$T/bad"
cp "$DATA"/types-null.avro "$DATA"/types-deflate.avro "$T/in/"
cp "$DATA"/types-snappy.avro "$DATA"/types-zstandard.avro "$DATA"/strings-null.avro "$DATA"/empty-null.avro "$T/in/sub/"
cat > "$T/worker.properties" <<W
transport=direct
offset.storage.file.filename=$T/offsets.json
offset.flush.interval.ms=100
W
conf() { # name dir extra-json
  cat > "$T/$1.json" <<J
{"name": "$1", "config": {"connector.class": "files", "files.path": "$2", "topic": "avro",
 "input.format": "avro", "file.name.template": ".*\\\\.avro", "files.min.age.ms": "0",
 "poll.backoff.initial.ms": "20", "poll.backoff.max.ms": "100",
 "key.converter": "string", "value.converter": "json", "value.converter.schemas.enable": "false",
 "value.converter.decimal.format": "NUMERIC"$3}}
J
}
conf good "$T/in" ""
run_until "$T/good.json" "$T/out1.jsonl" 164
python3 - "$T" "$DATA" <<'P' || fail "values differ from what fastavro wrote"
import json, sys, collections
T, DATA = sys.argv[1], sys.argv[2]
want = [json.loads(l) for l in open(f"{DATA}/types.expected.jsonl")]
by_file = collections.defaultdict(list)
for line in open(f"{T}/out1.jsonl"):
    rec = json.loads(line)
    assert rec["topic"] == "avro", rec
    by_file[rec["key"]].append(json.loads(rec["payload"]))
files = {"types-null.avro", "types-deflate.avro", "sub/types-snappy.avro", "sub/types-zstandard.avro"}
assert set(by_file) == files | {"sub/strings-null.avro"}, sorted(by_file)
for f in files:
    assert by_file[f] == want, f
assert by_file["sub/strings-null.avro"] == ["a", "", "z" * 300, "\u00fcber"], by_file["sub/strings-null.avro"]
print("avro: 4 codecs x 40 records and 4 strings equal to what fastavro wrote")
P
[[ $(wc -l < "$T/out1.jsonl") -eq 164 ]] || fail "expected 164 records, got $(wc -l < "$T/out1.jsonl")"

# restart: no finished file is read again; a new one is
# (written under another name and renamed: files.min.age.ms is 0 here, and a
# half-copied file would be read as a damaged one)
( sleep 0.5; cp "$DATA/types-deflate.avro" "$T/in/sub/again.tmp"; mv "$T/in/sub/again.tmp" "$T/in/sub/again.avro" ) &
run_until "$T/good.json" "$T/out2.jsonl" 40
n=$(wc -l < "$T/out2.jsonl")
[[ $n -eq 40 ]] || fail "restart: expected the 40 records of the new file only, got $n"
grep -q '"key":"sub/again.avro"' "$T/out2.jsonl" || fail "new file not picked up"

# a damaged block with errors.tolerance=all: reported with file, block and byte; the rest arrives
python3 - "$DATA/types-snappy.avro" "$T/bad/damaged.avro" "$DATA/types-snappy.blocks.json" <<'P'
import json, sys
d = bytearray(open(sys.argv[1], "rb").read())
blocks = json.load(open(sys.argv[3]))
d[blocks[2]["offset"] + 40] ^= 1
open(sys.argv[2], "wb").write(d)
P
conf bad "$T/bad" ', "errors.tolerance": "all", "errors.log.enable": "true"'
run_until "$T/bad.json" "$T/out3.jsonl" 33 3
n=$(wc -l < "$T/out3.jsonl")
[[ $n -eq 33 ]] || fail "damaged file: expected 40 - 7 records, got $n"
grep -q 'damaged block in Avro object ".*/damaged.avro": snappy codec: CRC32' "$T/log" || fail "damage not logged: $(tail -5 "$T/log")"
grep -q 'damaged.avro: block 2, byte' "$T/log" || fail "damage position not logged"

# kill -9 in the middle of a large file, then restart
mkdir -p "$T/big"
python3 - "$T/big/big.avro" <<'P'
# Avro object container file per the specification: header, deflate blocks.
import json, os, sys, zlib
def zz(n):
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        b = n & 0x7f
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)
def s(b):
    return zz(len(b)) + b
schema = json.dumps({"type": "record", "name": "Big", "fields": [
    {"name": "id", "type": "long"}, {"name": "pad", "type": "string"}]}).encode()
sync = os.urandom(16)
with open(sys.argv[1], "wb") as f:
    f.write(b"Obj\x01" + zz(2) + s(b"avro.schema") + s(schema) + s(b"avro.codec") + s(b"deflate") + zz(0) + sync)
    for start in range(100000, 160000, 120):
        data = b"".join(zz(i) + s(b"row %d " % i + b"x" * 200) for i in range(start, start + 120))
        c = zlib.compressobj(6, zlib.DEFLATED, -15)
        comp = c.compress(data) + c.flush()
        f.write(zz(120) + zz(len(comp)) + comp + sync)
P
conf big "$T/big" ""
kill9_restart "$T/big.json" "$T/out4.jsonl" 20000 "$T/out5.jsonl" '"id\\":159999'
python3 - "$T" <<'P' || fail "kill -9 check"
import json, sys, collections
T = sys.argv[1]
ids = []
for name in ("out4.jsonl", "out5.jsonl"):
    try:
        lines = open(f"{T}/{name}").read().split("\n")
        if name == "out4.jsonl" and lines and lines[-1]:
            lines.pop()  # kill -9 may cut the last line it was writing (not acknowledged, sent again)
        for line in filter(None, lines):
            v = json.loads(json.loads(line)["payload"])
            assert v["pad"] == "row %d " % v["id"] + "x" * 200
            ids.append(v["id"])
    except FileNotFoundError:
        pass
want = set(range(100000, 160000))
got = collections.Counter(ids)
missing = want - set(got)
assert not missing, f"{len(missing)} datums missing, e.g. {sorted(missing)[:5]}"
assert set(got) == want
dups = sorted(i for i, c in got.items() if c > 1)
if dups:
    assert dups[-1] - dups[0] + 1 == len(dups), "duplicates are not one contiguous run"
    assert max(got.values()) == 2
print(f"avro kill -9: {len(want)} datums present, {len(dups)} duplicates (one contiguous run after the last commit)")
P
echo "files source, avro: ok"
