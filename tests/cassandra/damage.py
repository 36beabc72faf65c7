#!/usr/bin/env python3
"""damage.py - the damage harness of the commit log reader.

Makes about 2,000 damaged copies of the Cassandra 5.0 fixtures in
tests/data/cassandra/<case>/cdc_raw (real segments and their _cdc.idx files,
written by Cassandra) and runs `cdcflow cassandra dump` on each. The oracle is
the dump of the undamaged directory (whose replay equals Cassandra's own
SELECT JSON, see test_dump.sh). Every damaged input must be either

  reported: exit 3, and stderr names the damaged file's path with a byte
            offset ("<path>@<n>"); what is printed is a part of the oracle
            (damage never invents an update); or
  whole:    exit 0 and stdout byte for byte the oracle's,

and nothing in between (exit 0 with updates missing or changed, another exit
code, a crash, a hang).

Damage kinds, at the places the format has (parsed here from the format
itself: header, sync markers, entries): truncations at every kind of boundary
(the header, a sync marker, inside a marker, an entry's size, CRC, data),
single bit flips, zeroed ranges (a few bytes, an entry to its section's end, a
whole section, everything from a marker on), and index lies (an offset a little
or much too high or low, an earlier section's end, COMPLETED dropped or
damaged, garbage, empty).

usage: damage.py CLI DATA_DIR WORK_DIR [--seed N] [--per-segment N] [--only CASE] [--jobs N] [--verbose]
"""
import concurrent.futures
import os
import random
import re
import shutil
import struct
import subprocess
import sys
from collections import Counter


def parse_segment(b):
    """header size, [(marker file offset, next marker offset)], compressed?"""
    plen = struct.unpack(">H", b[12:14])[0]
    hdr = 14 + plen + 4
    params = b[14:14 + plen]
    compressed = b"compressionClass" in params or b"encCipher" in params
    marks, off = [], hdr
    while off + 8 <= len(b):
        end = struct.unpack(">I", b[off:off + 4])[0]
        if end == 0 or end <= off or end > len(b):
            break
        marks.append((off, end))
        off = end
    return hdr, marks, compressed


def entries(b, marks):
    """(file offset, size) of the entries of a plain segment"""
    out = []
    for off, end in marks:
        pos = off + 8
        while pos + 12 <= end:
            size = struct.unpack(">I", b[pos:pos + 4])[0]
            if size == 0 or pos + 12 + size > end:
                break
            out.append((pos, size))
            pos += 12 + size
    return out


def damages(seg, idx, rnd, per):
    """yield (kind, what, segment bytes, idx bytes) for one segment"""
    hdr, marks, compressed = parse_segment(seg)
    used = marks[-1][1] if marks else hdr  # end of the data Cassandra wrote
    ents = [] if compressed else entries(seg, marks)
    m = re.match(rb"\s*(\d+)", idx)
    L = int(m.group(1)) if m else 0
    scale = max(1, per // 140)

    def pick(xs, k):
        xs = list(xs)
        return xs if len(xs) <= k else rnd.sample(xs, k)

    def cut(n):
        return seg[:n]

    def flip(pos, bit):
        c = bytearray(seg)
        c[pos] ^= 1 << bit
        return bytes(c)

    def zero(a, z):
        c = bytearray(seg)
        c[a:z] = bytes(z - a)
        return bytes(c)

    # truncations
    for off, _ in pick(marks, 12 * scale):
        yield "truncate at a sync marker", f"cut at {off}", cut(off), idx
    for off, _ in pick(marks, 8 * scale):
        k = rnd.randint(1, 11)
        yield "truncate inside a sync marker", f"cut at {off}+{k}", cut(off + k), idx
    if ents:
        for pos, size in pick(ents, 12 * scale):
            k = rnd.choice([0, 4, 8, 8 + size // 2, 8 + size, 11 + size])
            yield "truncate at/inside an entry", f"cut at {pos}+{k}", cut(pos + k), idx
    else:
        for off, end in pick(marks, 12 * scale):
            n = rnd.randint(off + 12, max(off + 12, end - 1))
            yield "truncate inside a compressed section", f"cut at {n}", cut(n), idx
    for n in sorted({0, 4, 13, hdr - 1, hdr, hdr + 4}):
        yield "truncate in the header", f"cut at {n}", cut(n), idx
    for _ in range(10 * scale):
        n = rnd.randint(hdr, used)
        yield "truncate at a random offset", f"cut at {n}", cut(n), idx
    # bit flips
    for _ in range(46 * scale):
        pos = rnd.randrange(0, used)
        bit = rnd.randrange(8)
        yield "bit flip", f"flip bit {bit} of byte {pos}", flip(pos, bit), idx
    if len(seg) > used + 8:
        for _ in range(3):
            pos = rnd.randrange(used, len(seg))
            yield "bit flip after the data", f"flip byte {pos}", flip(pos, rnd.randrange(8)), idx
    # zeroed ranges
    for _ in range(18 * scale):
        a = rnd.randrange(hdr, used)
        z = min(used, a + rnd.randint(1, 64))
        yield "zeroed bytes", f"zero {a}..{z}", zero(a, z), idx
    if ents:
        for pos, _ in pick(ents, 8 * scale):
            end = next(e for o, e in marks if o < pos < e)
            yield "zeroed to the section's end", f"zero {pos}..{end}", zero(pos, end), idx
    for off, end in pick(marks, 5 * scale):
        yield "zeroed section", f"zero {off}..{end}", zero(off, end), idx
    for off, _ in pick(marks, 5 * scale):
        yield "zeroed from a marker on", f"zero {off}..EOF", zero(off, len(seg)), idx
    # index lies
    ends = sorted({e for _, e in marks})
    lies = [(L + 1, True), (L - 1, True), (L + 8, True), (L - 8, True), (L + 1000, True), (2 * L, True),
            (hdr, True), (0, True)]
    lies += [(e, True) for e in pick([e for e in ends if e < L], 3)]
    # (an index without COMPLETED at an earlier section's end is no lie: it is
    # a live segment's, read up to there; test_dump.sh checks that)
    for off, done in lies:
        text = f"{off}\nCOMPLETED".encode()
        yield "index lie", f"index {text!r}", seg, text
    for text in [b"", b"COMPLETED", b"x" + idx, idx[:-1] + b"X", idx.replace(b"\n", b" junk\n"), b"-5\nCOMPLETED",
                 b"99999999999999999999\nCOMPLETED"]:
        yield "index garbage", f"index {text[:30]!r}", seg, text
    for _ in range(4):
        c = bytearray(idx)
        c[rnd.randrange(len(c))] ^= 1 << rnd.randrange(8)
        yield "index bit flip", f"index {bytes(c)!r}", seg, bytes(c)


def unplace(out):
    """the updates without their position: after damage that hid how long a
    compressed section was, later positions are approximate (the reader says
    so in its report); the updates themselves must be the oracle's"""
    return [re.sub(rb'"position": \d+, ', b"", line) for line in out.splitlines()]


def run(cli, schema, path, timeout=30):
    try:
        p = subprocess.run([cli, "cassandra", "dump", "--schema", schema, path], capture_output=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return "timeout", b"", b""


def main():
    args = sys.argv[1:]
    if len(args) < 3:
        sys.exit(__doc__)
    cli, data, work = args[:3]
    seed = int(args[args.index("--seed") + 1]) if "--seed" in args else 15
    per = int(args[args.index("--per-segment") + 1]) if "--per-segment" in args else 140
    verbose = "--verbose" in args
    jobs_n = int(args[args.index("--jobs") + 1]) if "--jobs" in args else 2
    rnd = random.Random(seed)
    only = args[args.index("--only") + 1] if "--only" in args else None
    cases = sorted(d for d in os.listdir(data) if re.match(r"v\d-", d) and os.path.isdir(f"{data}/{d}/cdc_raw")
                   and (not only or d == only))
    total, outcome, bad = 0, Counter(), []
    per_kind = Counter()
    for case in cases:
        src, schema = f"{data}/{case}/cdc_raw", f"{data}/{case}/schema.cql"
        rc, oracle, err = run(cli, schema, src)
        if rc != 0:
            sys.exit(f"{case}: the undamaged dump exits {rc}: {err.decode(errors='replace')[-500:]}")
        want = Counter(unplace(oracle))
        segs = sorted(f for f in os.listdir(src) if f.endswith(".log") and os.path.exists(f"{src}/{f[:-4]}_cdc.idx"))
        for seg_name in segs:
            seg = open(f"{src}/{seg_name}", "rb").read()
            idx_name = seg_name[:-4] + "_cdc.idx"
            idx = open(f"{src}/{idx_name}", "rb").read()
            jobs = []
            for kind, what, dseg, didx in damages(seg, idx, rnd, per):
                total += 1
                jobs.append((total, kind, what, dseg, didx))

            def one(job):
                n, kind, what, dseg, didx = job
                d = f"{work}/{case}-{n}"
                shutil.copytree(src, d)
                with open(f"{d}/{seg_name}", "wb") as f:
                    f.write(dseg)
                with open(f"{d}/{idx_name}", "wb") as f:
                    f.write(didx)
                rc, out, err = run(cli, schema, d)
                shutil.rmtree(d)
                text = err.decode(errors="replace")
                named = re.search(re.escape(f"{d}/{seg_name}") + r"@\d+", text) or \
                    re.search(re.escape(f"{d}/{idx_name}") + r"@\d+", text)
                if rc == 0 and out == oracle:
                    return kind, what, "whole", None
                if rc == 3 and named and not (Counter(unplace(out)) - want):
                    return kind, what, "reported", None
                why = ("exit 0 with updates missing or changed" if rc == 0 else
                       "exit 3 without naming the file and byte offset" if rc == 3 and not named else
                       "exit 3 printing updates the undamaged segment does not have" if rc == 3 else
                       f"exit {rc}")
                return kind, what, "FAIL", (f"{case}/{seg_name}: {kind}: {what}: {why} "
                                            f"({len(out.splitlines())} of {len(oracle.splitlines())} lines): "
                                            f"{text[-300:]!r}")

            with concurrent.futures.ThreadPoolExecutor(max_workers=jobs_n) as ex:
                for kind, what, verdict, why in ex.map(one, jobs):
                    outcome[verdict] += 1
                    per_kind[(kind, verdict)] += 1
                    if why:
                        bad.append(why)
                    if verbose:
                        print(f"{verdict:8} {case}/{seg_name}: {kind}: {what}")
    kinds = sorted({k for k, _ in per_kind})
    for k in kinds:
        print(f"  {k:40} reported {per_kind[(k, 'reported')]:4}  whole {per_kind[(k, 'whole')]:4}  "
              f"FAIL {per_kind[(k, 'FAIL')]:3}")
    print(f"{total} damaged inputs of {len(cases)} fixtures: {outcome['reported']} reported (exit 3, file@offset), "
          f"{outcome['whole']} decoded whole (exit 0, equal to the undamaged decode), {outcome['FAIL']} neither")
    reasons = Counter(b.split(": ")[3].split(" (")[0] for b in bad)
    for r, n in reasons.most_common():
        print(f"  neither: {n} x {r}")
    for b in bad[:40]:
        print("FAIL:", b)
    sys.exit(1 if bad or total < 1500 else 0)


if __name__ == "__main__":
    main()
