"""Debezium change events for the sink comparison (bench/peers/run), and the state they leave.

  python3 sink_events.py gen N KEYS SEED OUT.kv EXPECTED.tsv
      OUT.kv: one Kafka record a line, "KEY<TAB>VALUE" for `kcat -P -K '\\t' -Z` (an empty
      VALUE is a tombstone); N Debezium envelopes (JsonConverter with schemas, the shape of
      Debezium's PostgreSQL connector, as tests/sink/debezium_envelopes.py) over ids 1..KEYS:
      a create for an id not in the table, else an update (70 %) or a delete (30 %, followed by
      its tombstone, as Debezium emits it); the last envelope is the fence, the create of id
      KEYS+1. EXPECTED.tsv: the rows the events leave, "id<TAB>email<TAB>n", sorted by id.
  python3 sink_events.py compare EXPECTED.tsv GOT.tsv
      exit 0 when equal, else 1 with the first differences
"""
import json
import random
import sys

KS = {"type": "struct", "fields": [{"type": "int32", "optional": False, "field": "id"}], "optional": False,
      "name": "bench.public.items.Key"}
ROW = {"type": "struct", "fields": [{"type": "int32", "optional": False, "field": "id"},
                                    {"type": "string", "optional": False, "field": "email"},
                                    {"type": "int64", "optional": False, "field": "n"}],
       "optional": True, "name": "bench.public.items.Value"}
SRC = {"type": "struct", "fields": [{"type": "string", "optional": False, "field": "connector"},
                                    {"type": "string", "optional": False, "field": "db"},
                                    {"type": "string", "optional": False, "field": "schema"},
                                    {"type": "string", "optional": False, "field": "table"},
                                    {"type": "int64", "optional": True, "field": "lsn"}],
       "optional": False, "name": "io.debezium.connector.postgresql.Source"}
ENV = {"type": "struct", "optional": False, "name": "bench.public.items.Envelope", "fields": [
    dict(ROW, field="before"), dict(ROW, field="after"), dict(SRC, field="source"),
    {"type": "string", "optional": False, "field": "op"}, {"type": "int64", "optional": True, "field": "ts_ms"}]}
J = dict(separators=(",", ":"))


def key(i):
    return json.dumps({"schema": KS, "payload": {"id": i}}, **J)


def env(op, before, after, lsn):
    src = {"connector": "postgresql", "db": "shop", "schema": "public", "table": "items", "lsn": lsn}
    return json.dumps({"schema": ENV, "payload": {"before": before, "after": after, "source": src, "op": op,
                                                   "ts_ms": 1700000000000 + lsn}}, **J)


def gen(n, keys, seed, out, expected):
    rnd = random.Random(seed)
    state = {}
    with open(out, "w") as f:
        for lsn in range(n - 1):
            i = rnd.randint(1, keys)
            old = state.get(i)
            if old is None:
                new = {"id": i, "email": f"u{i}.{lsn}@example.com", "n": lsn}
                f.write(f"{key(i)}\t{env('c', None, new, lsn)}\n")
                state[i] = new
            elif rnd.random() < 0.7:
                new = {"id": i, "email": f"u{i}.{lsn}@example.com", "n": old["n"] + lsn}
                f.write(f"{key(i)}\t{env('u', old, new, lsn)}\n")
                state[i] = new
            else:
                f.write(f"{key(i)}\t{env('d', old, None, lsn)}\n")
                f.write(f"{key(i)}\t\n")
                del state[i]
        fence = {"id": keys + 1, "email": "fence", "n": -1}
        f.write(f"{key(keys + 1)}\t{env('c', None, fence, n)}\n")
        state[keys + 1] = fence
    with open(expected, "w") as f:
        for i in sorted(state):
            r = state[i]
            f.write(f"{r['id']}\t{r['email']}\t{r['n']}\n")


def compare(expected, got):
    a = open(expected).read().splitlines()
    b = open(got).read().splitlines()
    if a == b:
        return 0
    sa, sb = set(a), set(b)
    print(f"expected {len(a)} rows, got {len(b)}; missing {sorted(sa - sb)[:5]}, extra {sorted(sb - sa)[:5]}",
          file=sys.stderr)
    return 1


if __name__ == "__main__":
    if sys.argv[1] == "gen":
        gen(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6])
    elif sys.argv[1] == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    else:
        sys.exit(__doc__)
