#!/usr/bin/env python3
"""bench/peers/cass_segments.py - a data set for the Cassandra part of bench/peers/run.

    cass_segments.py FIXTURE OUT MB [SEGMENT_MB [SECTION_KB]]

FIXTURE is a captured RF=3 case (tests/data/cassandra/rf3-all-up): node1/ node2/
node3/, each with the cdc_raw/ segments Cassandra 5.0 wrote (commit log version
8, uncompressed). For each node, OUT/nodeN/cdc_raw/ gets new segments of about
SEGMENT_MB MiB (default 32, Cassandra's default commitlog_segment_size) until
the node's copy holds MB MiB: the node's sync sections, their entries copied
byte for byte (the mutation bytes and both entry CRCs are Cassandra's own),
repeated in order, keeping only the mutations of the keyspace's tables (the
fixture's segments also hold system tables' writes, half its entries: a small
workload's share, not a busy cluster's). What is new is the framing only: each file has a segment id
of its own, so its header CRC and every sync marker's CRC (which cover the
segment id and the marker's position) are computed again as Cassandra's
CommitLogDescriptor.writeHeader and CommitLogSegment.writeSyncMarker do; eight
zero bytes end the file (as zero padding ends a segment) and a _cdc.idx says
"<end of the last section>\\nCOMPLETED". With SECTION_KB > 0, consecutive sections
are joined into sections of at least SECTION_KB KiB (the same entries in the same
order, fewer sync markers: what a node under load writes, its periodic sync
covering many writes); 0 (the default) keeps the fixture's sections. The keyspace's schema.cql (the table ids
the entries carry) is copied to OUT/schema.cql.

Prints one line of JSON: per node the files, file bytes, entries (mutations)
and repeats, and the fixture's per-copy entry count.
"""
import json
import os
import re
import shutil
import struct
import sys
import uuid
import zlib


def be32(v):
    return struct.pack(">I", v & 0xFFFFFFFF)


def parse(path, keep):
    """(version, header params bytes, [(section entry bytes, entries)...]) of a plain
    segment, each section holding only the entries whose mutation's first table id
    is in `keep` (sections left empty are dropped)"""
    b = open(path, "rb").read()
    version, seg_id, plen = struct.unpack_from(">iqH", b, 0)
    params = b[14:14 + plen]
    pos = 14 + plen
    (hcrc,) = struct.unpack_from(">I", b, pos)
    want = zlib.crc32(be32(version) + be32(seg_id) + be32(seg_id >> 32) + be32(plen) + params)
    if hcrc != want:
        sys.exit(f"cass_segments: {path}: header CRC {hcrc:#x}, want {want:#x} (not a plain v{version} segment?)")
    pos += 4
    sections = []
    while pos + 8 <= len(b):
        nxt, crc = struct.unpack_from(">iI", b, pos)
        if nxt == 0 and crc == 0:
            break
        if crc != zlib.crc32(be32(seg_id) + be32(seg_id >> 32) + be32(pos)) or nxt <= pos or nxt > len(b):
            sys.exit(f"cass_segments: {path}: bad sync marker at {pos}")
        start = p = pos + 8
        while p + 4 <= nxt:
            (size,) = struct.unpack_from(">i", b, p)
            if size <= 0:
                break
            p += 4 + 4 + size + 4
        if p > nxt:
            sys.exit(f"cass_segments: {path}: an entry crosses the sync marker at {nxt}")
        body, n = keep_entries(b[start:p], keep)
        if n:
            sections.append((body, n))
        pos = nxt
    return version, params, sections


def keep_entries(s, keep):
    """the entries [size][size CRC][mutation][CRC] of one section whose mutation
    (messaging version 12/13: an unsigned vint count of partition updates, then
    the first update's 16-byte table id) is of a table in `keep`"""
    out, n, p = bytearray(), 0, 0
    while p + 4 <= len(s):
        (size,) = struct.unpack_from(">i", s, p)
        m = s[p + 8:p + 8 + size]
        if m[0] < 0x80 and bytes(m[1:17]) in keep:
            out += s[p:p + 12 + size]
            n += 1
        p += 12 + size
    return bytes(out), n


def table_ids(schema_cql):
    """the table ids of `CREATE TABLE ... WITH ID = <uuid>` (DESCRIBE ... WITH INTERNALS)"""
    ids = re.findall(r"WITH ID = ([0-9a-f-]{36})", open(schema_cql).read())
    if not ids:
        sys.exit(f"cass_segments: {schema_cql}: no table id (WITH ID = ...)")
    return {uuid.UUID(i).bytes for i in ids}


def write_segment(path, version, seg_id, params, sections):
    out = bytearray()
    out += struct.pack(">iqH", version, seg_id, len(params)) + params
    out += be32(zlib.crc32(be32(version) + be32(seg_id) + be32(seg_id >> 32) + be32(len(params)) + params))
    entries = 0
    for body, n in sections:
        pos = len(out)
        out += be32(pos + 8 + len(body)) + be32(zlib.crc32(be32(seg_id) + be32(seg_id >> 32) + be32(pos))) + body
        entries += n
    end = len(out)
    out += bytes(8)
    with open(path, "wb") as f:
        f.write(out)
    with open(path[:-len(".log")] + "_cdc.idx", "w") as f:
        f.write(f"{end}\nCOMPLETED")
    return len(out), entries


def main():
    if len(sys.argv) not in (4, 5, 6):
        sys.exit(__doc__)
    fixture, out, mb = sys.argv[1], sys.argv[2], float(sys.argv[3])
    seg_bytes = int(float(sys.argv[4] if len(sys.argv) > 4 else 32) * 1048576)
    section_bytes = int(float(sys.argv[5]) * 1024) if len(sys.argv) > 5 else 0
    target = int(mb * 1048576)
    os.makedirs(out, exist_ok=True)
    shutil.copy(os.path.join(fixture, "schema.cql"), os.path.join(out, "schema.cql"))
    keep = table_ids(os.path.join(fixture, "schema.cql"))
    report = {"fixture": os.path.basename(os.path.normpath(fixture)), "nodes": {}}
    nodes = sorted(d for d in os.listdir(fixture) if d.startswith("node"))
    for ni, node in enumerate(nodes, 1):
        src = os.path.join(fixture, node, "cdc_raw")
        secs, version, params = [], None, None
        for name in sorted(os.listdir(src)):
            if name.endswith(".log") and os.path.exists(os.path.join(src, name[:-4] + "_cdc.idx")):
                version, params, s = parse(os.path.join(src, name), keep)
                secs += s
        if not secs:
            sys.exit(f"cass_segments: no segment with a _cdc.idx in {src}")
        per_copy = sum(n for _, n in secs)
        copy_bytes = sum(len(b) + 8 for b, _ in secs)
        dst = os.path.join(out, node, "cdc_raw")
        os.makedirs(dst, exist_ok=True)
        files = total = entries = nsec = planned = 0  # planned: bytes before sections are joined
        i = 0  # the next section of the node's sequence, repeated
        seg_id = 1800000000000 + ni * 1000000
        while planned < target:
            chunk, size = [], 0
            while size < seg_bytes and planned + size < target:
                chunk.append(secs[i % len(secs)])
                size += len(secs[i % len(secs)][0]) + 8
                i += 1
            if section_bytes > 0:  # join consecutive sections
                joined, body, cnt = [], bytearray(), 0
                for b_, n_ in chunk:
                    body += b_
                    cnt += n_
                    if len(body) >= section_bytes:
                        joined.append((bytes(body), cnt))
                        body, cnt = bytearray(), 0
                if cnt:
                    joined.append((bytes(body), cnt))
                chunk = joined
            nsec += len(chunk)
            n, e = write_segment(os.path.join(dst, f"CommitLog-{version}-{seg_id}.log"), version, seg_id, params, chunk)
            seg_id += 1
            files += 1
            planned += size
            total += n
            entries += e
        report["nodes"][node] = {"files": files, "bytes": total, "entries": entries, "sections": nsec, "source_sections": i,
                                 "repeats": i / len(secs), "entries_per_copy": per_copy, "copy_bytes": copy_bytes}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
