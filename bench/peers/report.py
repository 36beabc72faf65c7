"""Writes docs/benchmarks.md (and its chart) from bench/peers/run's results (called by bench/peers/run).

  python3 report.py RESULTS.tsv OUT.md gnuplot=PATH|none:WHY key=value...
RESULTS.tsv lines, by part:
  sink    kind rep seconds rows_per_s cpu_s hwm_mb equal(yes|no) first_row_seconds
  source  kind rep seconds records_per_s cpu_s hwm_mb equal(yes|no) first_record_seconds records_on_topic
  idle    kind rep ready_seconds rss_mb cpu_s_while_idle hwm_mb
  cassandra java|cdcflow rep wall_s cpu_s polled_hwm_mb init_s cold_s cold_cpu_s steady_s steady_cpu_s
          hwm_mb mutations updates rows cell_bytes segments skipped
  cassandra sidecar rep wall_s cpu_s polled_hwm_mb copies_read changes_published lines_written
A run of the cassandra part alone (no sink, source or idle lines) rewrites only the Cassandra
section of an existing OUT (between its markers), the rest of the file as it was.
The chart (OUT with .png for .md) is drawn by gnuplot when PATH is given; the report says
why there is none otherwise. Every figure in the report comes from RESULTS.tsv or the key=value
arguments (what bench/peers/run printed): nothing here is typed in by hand.
"""
import json
import math
import os
import statistics
import subprocess
import sys

res, out, chart = sys.argv[1], sys.argv[2], sys.argv[3]
info = dict(a.split("=", 1) for a in sys.argv[4:])
assert chart.startswith("gnuplot=")
gnuplot = chart[len("gnuplot="):]
NaN = float("nan")
runs = {"sink": {}, "source": {}, "idle": {}, "cassandra": {}}
for line in open(res):
    f = line.rstrip("\n").split("\t")
    part, kind, rep = f[0], f[1], int(f[2])
    if part == "cassandra":
        r = dict(rep=rep, wall=float(f[3]), cpu=float(f[4]), phwm=float(f[5]))
        if kind.startswith("sidecar:"):
            r.update(copies=int(f[6]), published=int(f[7]), lines=int(f[8]), log=f[9] if len(f) > 9 else "")
            r["cps"] = r["copies"] / r["wall"]
        else:
            r.update(init=float(f[6]), cold=float(f[7]), cold_cpu=float(f[8]), steady=float(f[9]),
                     steady_cpu=float(f[10]), hwm=float(f[11]), counts=tuple(int(x) for x in f[12:18]))
            r["ups"] = r["counts"][1] / r["steady"]
            r["mps"] = r["counts"][0] / r["steady"]
            r["cold_ups"] = r["counts"][1] / r["cold"]
    elif part == "sink" or part == "source":
        secs, rps, cpu, hwm, ok, first = float(f[3]), float(f[4]), float(f[5]), float(f[6]), f[7], float(f[8])
        n = int(info["events"] if part == "sink" else info["lines"])
        r = dict(rep=rep, secs=secs, rps=rps, cpu=cpu, hwm=hwm, ok=ok, first=first,
                 steady=n / (secs - first) if secs - first > 0.2 else NaN)
        if part == "source":
            r["count"] = int(f[9])
    else:
        r = dict(rep=rep, ready=float(f[3]), rss=float(f[4]), cpu=float(f[5]), hwm=float(f[6]))
    runs[part].setdefault(kind, []).append(r)

LABEL = {"dbz": "Kafka Connect + Debezium JDBC sink (peer)",
         "alias": "cdcflow, the same Debezium JDBC config (alias)",
         "cdcflow": "cdcflow `cdc-sink` target=postgres",
         "fsrc": "Kafka Connect + FileStreamSource (peer)",
         "files": "cdcflow `files` source"}
SHORT = {("sink", "dbz"): "sink: Debezium JDBC", ("sink", "alias"): "sink: cdcflow JDBC alias",
         ("sink", "cdcflow"): "sink: cdcflow cdc-sink", ("source", "fsrc"): "source: FileStreamSource",
         ("source", "files"): "source: cdcflow files"}
IDLE_OF = {"dbz": ("sink", "dbz"), "cdcflow": ("sink", "cdcflow"), "fsrc": ("source", "fsrc"),
           "files": ("source", "files")}
PEER = {"sink": "dbz", "source": "fsrc"}


def med(part, kind, f):
    v = [r[f] for r in runs[part].get(kind, []) if not math.isnan(r[f])]
    return statistics.median(v) if v else NaN


def equal(part, kind):
    rs = runs[part][kind]
    ok = sum(r["ok"] == "yes" for r in rs)
    return "yes" if ok == len(rs) else "NO (%d of %d)" % (ok, len(rs))


def ratio(a, b):
    return "-" if math.isnan(a) or math.isnan(b) or b == 0 else f"{a / b:.2f}"


def num(v, fmt):
    return "-" if math.isnan(v) else format(v, fmt)


# ---- the Cassandra part (its own section, between markers: a run of that part alone
# rewrites only it)
CASS_BEGIN = "<!-- bench/peers/run cassandra part: begin -->"
CASS_END = "<!-- bench/peers/run cassandra part: end -->"


def cmed(kind, f):
    v = [r[f] for r in runs["cassandra"].get(kind, [])]
    return statistics.median(v) if v else NaN


def cassandra_section():
    C = runs["cassandra"]
    shapes = [x for x in info.get("cass_sections", "0").split(",") if f"java:{x}" in C or f"cdcflow:{x}" in C]
    S = []
    a = S.append

    def shape_name(x):
        return "the fixture's sync sections" if x == "0" else f"sync sections of {int(x) // 1024 if int(x) % 1024 == 0 else x}" + (" MiB" if int(x) % 1024 == 0 else " KiB")

    a(CASS_BEGIN)
    a("## Cassandra: commit log decode beside Cassandra's own CommitLogReader")
    a("")
    a(f"From a run on {info.get('date', '?')} (`{info.get('cass_command') or info['command']}`): CPU {info['cpu']},"
      f" {info['nproc']} cores (nproc), memory {info['mem']}, Linux {info['kernel']}, load average"
      f" {info.get('cass_load', '?')} (shared machine: CPU seconds and memory are the robust figures); cdcflow"
      f" {info['cdcflow']}; Cassandra {info.get('cass_version', '?')} (`org.apache.cassandra:cassandra-all`,"
      f" the jars scripts/cassandra-node fetches for the test node) on {info.get('cass_java', '?')}.")
    a("")
    dbz, st = info.get("cass_dbz", ""), info.get("cass_dbz_status", "")
    a(f"**Why not Debezium's Cassandra connector.** This run asked Maven Central for `{dbz}` (the Debezium"
      f" version scripts/debezium uses): {st or 'not asked'}. Debezium's Cassandra connectors are built in a"
      " repository of their own and published apart from Debezium's other modules, and the agent they build"
      " runs beside a live node (its configuration names that node's cassandra.yaml and its CQL address), not"
      " over copied segments without a node; so, as issue 17 allows, the peer here is the decode part only:"
      " Cassandra's own `CommitLogReader`, what that agent (and Cassandra's commit log replay) uses to read"
      " segments.")
    a("")
    a(f"Data: the captured RF=3 case `tests/data/cassandra/rf3-all-up` (three nodes of Cassandra 5.0.5, commit"
      " log version 8, uncompressed; each node's `cdc_raw` holds its copy of every write) repeated by"
      f" `bench/peers/cass_segments.py` into {info.get('cass_mb', '?')} MiB of segments per replica. The entries"
      " (mutation bytes and both CRCs) are Cassandra's own, byte for byte, in the order each node wrote them,"
      " only those of the keyspace's tables (the fixture's segments also carry the system tables' writes of a"
      " small workload); the framing is new: segments of about 32 MiB, each with an id of its own and its"
      " header and sync marker CRCs computed for it, a `_cdc.idx` of `COMPLETED`. Two shapes of the same"
      " entries: the fixture's own sync sections (a few entries each: its node synced every second under a"
      " light workload), and sections of 1 MiB (a node under load: each periodic sync covers many writes). The"
      " files are in the page cache before the runs (everyone reads memory).")
    a("")
    for x in shapes:
        d = json.loads(info[f"cass_data_{x}"]) if info.get(f"cass_data_{x}") else {"nodes": {}}
        nodes = d["nodes"]
        tb = sum(n["bytes"] for n in nodes.values())
        te = sum(n["entries"] for n in nodes.values())
        ts = sum(n["sections"] for n in nodes.values())
        per = "; ".join(f"{k} {v['files']} segments, {v['bytes'] / 1e6:.1f} MB, {v['entries']:,} mutations"
                        f" ({v['repeats']:.0f} x its {v['entries_per_copy']} in the fixture)" for k, v in sorted(nodes.items()))
        a(f"- {shape_name(x)}: {per}; in all {tb / 1e6:.1f} MB, {te:,} mutations, {ts:,} sync sections"
          f" ({tb / max(ts, 1) / 1024:.1f} KiB each on average)")
    a("")
    a("Each contender is a process of its own, the three run one after another, interleaved,"
      f" {info['repeat']} time(s) each per shape:")
    a("")
    a("- peer: `bench/peers/CassReadBench.java` (javac against those jars), Java 17, -Xms1g -Xmx1g, G1:"
      " Cassandra initialized offline (`DatabaseDescriptor.toolInitialization`, a temporary cassandra.yaml),"
      " the keyspace, its type and its tables made known from the fixture's `schema.cql` (DESCRIBE WITH"
      " INTERNALS, so each table has the id its mutations carry) through Cassandra's own CREATE statements"
      " applied to the offline schema, then `CommitLogReader.readCommitLogSegment` on every segment with a"
      " handler counting mutations, partition updates, rows and range tombstone bounds and summing the bytes"
      " of keys, clusterings, cell values and cell paths")
    a("- cdcflow decode: `bench/bench_cassandra_peer` (C, the build named above): cdcflow's segment reader"
      " (each file up to its `_cdc.idx`, both entry CRCs checked) and mutation decoder, counting the same;"
      " the totals must be equal: the check that both decoded the same data")
    a("- cdcflow sidecar: `cdcflow cassandra sidecar --replica ... x3 --schema schema.cql --rf 3 --consistency"
      " QUORUM --once --output FILE`: the whole path (read, decode, MD5 digest of each partition update,"
      " dedup of the replicas' copies, change events as JSON with schemas into a record file)")
    a("")
    a(f"Peer and cdcflow decode read all segments {info.get('cass_rounds', '?')} times in their process: start-up s is"
      " from the process start until the schema is loaded (for the JVM: its own start, class loading, Cassandra's"
      " initialization); the first pass is cold (for the JVM: the JIT still compiling); steady is the median of"
      " the other passes. updates/s: partition updates / wall-clock seconds of a pass. CPU s: the process's CPU"
      " (user + system, every thread: JIT and GC too) in the steady pass; process s and process CPU s: the whole"
      " process, from its start to its exit. Peak RSS: VmHWM, read by the program itself at its end (the"
      " sidecar's: polled every 5 ms while it runs).")
    a("")
    j = "java"
    kern = {}
    lab = {j: "Cassandra CommitLogReader (peer)", "cdcflow": "cdcflow decode"}
    for x in shapes:
        J, K = f"{j}:{x}", f"cdcflow:{x}"
        if J not in C or K not in C:
            continue
        counts = {r["counts"] for k in (J, K) for r in C[k]}
        c0 = C[J][0]["counts"]
        a(f"### {shape_name(x)[0].upper() + shape_name(x)[1:]}")
        a("")
        a(f"Totals per pass: {c0[0]:,} mutations, {c0[1]:,} partition updates, {c0[2]:,} rows and range tombstone"
          f" bounds, {c0[3]:,} bytes of keys, clusterings and cell values, {c0[4]} segments, {c0[5]} mutations"
          f" skipped (unknown tables); peer and cdcflow equal in every run: {'yes' if len(counts) == 1 else 'NO'}.")
        a("")
        a("| contender | start-up s | first pass s | steady pass s | updates/s steady | x peer | updates/s first pass |"
          " x peer | CPU s steady pass | x less CPU | process s | process CPU s | x less CPU | peak RSS MB |"
          " x less memory |")
        a("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for k in (j, "cdcflow"):
            kk = f"{k}:{x}"
            a(f"| {lab[k]} | {cmed(kk, 'init'):.3f} | {cmed(kk, 'cold'):.3f} | {cmed(kk, 'steady'):.3f} |"
              f" {cmed(kk, 'ups'):,.0f} | {ratio(cmed(kk, 'ups'), cmed(J, 'ups'))} | {cmed(kk, 'cold_ups'):,.0f} |"
              f" {ratio(cmed(kk, 'cold_ups'), cmed(J, 'cold_ups'))} | {cmed(kk, 'steady_cpu'):.3f} |"
              f" {ratio(cmed(J, 'steady_cpu'), cmed(kk, 'steady_cpu'))} | {cmed(kk, 'wall'):.2f} | {cmed(kk, 'cpu'):.2f} |"
              f" {ratio(cmed(J, 'cpu'), cmed(kk, 'cpu'))} | {cmed(kk, 'hwm'):.1f} | {ratio(cmed(J, 'hwm'), cmed(kk, 'hwm'))} |")
        a("")
        SC = f"sidecar:{x}"
        if SC in C:
            a(f"The whole path, cdcflow's sidecar (one pass, start-up included), medians: {cmed(SC, 'wall'):.2f} s,"
              f" {C[SC][0]['copies']:,} replica copies (mutations) read, {cmed(SC, 'cps'):,.0f} copies/s"
              f" ({ratio(cmed(SC, 'cps'), cmed(J, 'mps'))} x the peer's steady mutations/s, which only decodes),"
              f" {cmed(SC, 'cpu'):.2f} CPU s ({ratio(cmed(J, 'cpu'), cmed(SC, 'cpu'))} x less than the peer's process),"
              f" peak RSS {cmed(SC, 'phwm'):.1f} MB (1/{cmed(J, 'hwm') / cmed(SC, 'phwm'):.0f} of the peer's).")
            a("")
        pf = os.path.join(os.path.dirname(os.path.abspath(res)), f"cass-profile-{x}.txt")
        syms, dsos = [], []
        if os.path.exists(pf):
            for line in open(pf):
                k, _, rest = line.rstrip("\n").partition(" ")
                if k == "none":
                    a(f"Profile: none ({rest}).")
                    a("")
                elif k in ("sym", "dso"):
                    pct, _, what = rest.strip().partition("%")
                    (syms if k == "sym" else dsos).append((float(pct), what.split()))
        if dsos:
            kern[x] = sum(p for p, w_ in dsos if w_[0].startswith("[kernel"))
            a("Where cdcflow's decode time goes (one more run of `bench_cassandra_peer`, 2 passes, not counted above,"
              " under `perf record -F 999`), self time by library: " + ", ".join(f"{w_[0]} {p:.1f} %" for p, w_ in dsos)
              + "; the top symbols: " + ", ".join(f"`{w_[-1]}` {p:.1f} %" for p, w_ in syms[:8]) + ".")
            a("")
    # the events published (the sidecar), from the first shape that has it
    scs = [f"sidecar:{x}" for x in shapes if f"sidecar:{x}" in C]
    if scs:
        sc = C[scs[0]]
        pub = sorted({r["published"] for k in scs for r in C[k]})
        a(f"Events published: the sidecar publishes a write once its copies reach the consistency level, and"
          f" counts a later copy of a digest it has already published as a duplicate; the data set repeats the"
          f" same writes (same keys, same timestamps: the same digests), so it published"
          f" {' / '.join(f'{p:,}' for p in pub)} changes for {sc[0]['copies']:,} copies read (this data set"
          f" measures the reading and the dedup, not the publishing of distinct changes; the sidecar's log in"
          f" this run: `{sc[0].get('log', '')}`). Debezium's Cassandra connector publishes every replica's copy:"
          f" an agent on each of the three nodes, so {sc[0]['copies']:,} events for this data (a consumer"
          " deduplicates them). The peer only decodes; it publishes nothing.")
        a("")
    a("Raw numbers, every run:")
    a("")
    a("| sections | contender | run | process s | process CPU s | start-up s | first pass s | first CPU s |"
      " steady s | steady CPU s | peak RSS MB |")
    a("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for x in shapes:
        for k in (j, "cdcflow"):
            for r in sorted(C.get(f"{k}:{x}", []), key=lambda r: r["rep"]):
                a(f"| {x} KiB | {k} | {r['rep']} | {r['wall']:.2f} | {r['cpu']:.2f} | {r['init']:.3f} | {r['cold']:.3f} |"
                  f" {r['cold_cpu']:.3f} | {r['steady']:.3f} | {r['steady_cpu']:.3f} | {r['hwm']:.1f} |")
        for r in sorted(C.get(f"sidecar:{x}", []), key=lambda r: r["rep"]):
            a(f"| {x} KiB | sidecar | {r['rep']} | {r['wall']:.2f} | {r['cpu']:.2f} | - | - | - | - | - | {r['phwm']:.1f} |")
    a("")
    a("(0 KiB: the fixture's own sections.)")
    a("")
    verdicts = []
    for x in shapes:
        J, K = f"{j}:{x}", f"cdcflow:{x}"
        if J in C and K in C:
            t, m = cmed(K, "ups") / cmed(J, "ups"), cmed(J, "hwm") / cmed(K, "hwm")
            tc = cmed(K, "cold_ups") / cmed(J, "cold_ups")
            verdicts.append((x, t, tc, m, cmed(J, "cpu") / cmed(K, "cpu")))
    if verdicts:
        a("Against the goal (10 x the throughput at no more than 1/20 of the memory), cdcflow's decode beside the"
          " peer once its JIT is warm:")
        a("")
        for x, t, tc, m, pc in verdicts:
            a(f"- {shape_name(x)}: {t:.2f} x the steady-state throughput ({tc:.2f} x the first pass; {pc:.2f} x"
              f" less CPU for the whole process, the JVM's start-up included) at 1/{m:.0f} of the peak memory:"
              f" {'reached' if t >= 10 and m >= 20 else 'not reached'}")
        a("")
        if any(t < 10 for _, t, _, _, _ in verdicts):
            ks = "; ".join(f"{shape_name(x)}: {v:.1f} %" for x, v in kern.items())
            a("Closing note. Where the goal is not reached, the profiles above say where cdcflow's time goes. The"
              f" kernel's share (reading the files){' — ' + ks + ' —' if ks else ''} is mostly the copy of the"
              " segments from the page cache (`_copy_to_iter`): the reader reads a COMPLETED segment ahead in"
              " blocks of 1 MiB (src/cassandra/segment.c, one pread per block, the file's length measured once),"
              " so a sync section costs no system call unless it crosses a block's end (a live segment still"
              " costs an fstat and two preads per section). The rest is the decoder (decode_one, read_row_body,"
              " read_cell, the Murmur3 token of every key, the CRCs). What would close the gap: fewer passes over"
              " each cell in the decoder, a cheaper token; mapping a completed segment instead of copying it"
              " would take the copy away. The peer's steady state is Cassandra's reader after the JIT has"
              " compiled it, on one thread like cdcflow's; its first pass and its start-up are where the JVM"
              " loses most.")
            a("")
    a("Reproduce this section alone (no server needed: Java 17 with javac, Maven, python3, a built"
      " `build/cdcflow` and `build/bench/bench_cassandra_peer`; the cassandra-all jars are fetched once into"
      " $CF_SERVERS_CACHE by scripts/cassandra-node; about 4 minutes on 2 cores):")
    a("")
    a("```")
    a(f"bench/peers/run --parts cassandra --repeat {info['repeat']} --cass-mb {info.get('cass_mb', '?')}"
      f" --cass-section-kb {info.get('cass_sections', '0')}")
    a("```")
    a("")
    a(CASS_END)
    return S


def splice_cassandra(path):
    """rewrite only the Cassandra section of an existing report"""
    text = open(path).read()
    sec = "\n".join(cassandra_section())
    if CASS_BEGIN in text and CASS_END in text:
        a, _, rest = text.partition(CASS_BEGIN)
        _, _, b = rest.partition(CASS_END)
        text = a + sec + b
    else:
        anchor = "## Not yet measured (planned)"
        if anchor not in text:
            anchor = "## Reproduce"
        a, _, b = text.partition(anchor)
        text = a + sec + "\n\n" + anchor + b
    # the planned line it replaces, and the header's promise of one run
    lines = text.split("\n")
    out_l, skip = [], False
    for l in lines:
        if l.startswith("- Cassandra: Debezium's Cassandra connector (or Cassandra's own CommitLogReader)"):
            skip = True
            continue
        if skip and l.startswith("  "):
            continue
        skip = False
        out_l.append(l)
    # a planned list left empty
    for i, l in enumerate(out_l):
        if l == "## Not yet measured (planned)":
            j = i + 1
            while j < len(out_l) and not out_l[j].strip():
                j += 1
            if j == len(out_l) or out_l[j].startswith("## "):
                out_l[i + 1:j] = ["", "- nothing: each comparison of issue 17 has its section above", ""]
            break
    text = "\n".join(out_l)
    text = text.replace("every figure below comes from one run of it, on the machine\nand versions listed,",
                        "every figure below comes from one run of it, on the machine\nand versions listed (the"
                        " Cassandra section: from a run of its own, which it\ndescribes),")
    open(path, "w").write(text)


if runs["cassandra"] and not (runs["sink"] or runs["source"] or runs["idle"]) and os.path.exists(out):
    splice_cassandra(out)
    sys.exit(0)


L = []
w = L.append
w("# Benchmarks: cdcflow beside its JVM peers")
w("")
w("Written by `bench/peers/run` (issue 17); every figure below comes from one run of it, on the machine")
w("and versions listed, against test servers on loopback. Do not edit by hand: run it again.")
w("")
w("## Machine and versions")
w("")
w(f"- CPU: {info['cpu']}, {info['nproc']} cores (nproc); memory {info['mem']}; Linux {info['kernel']}")
w("  (the machine is shared with other work, so throughput figures from a quiet machine may differ:"
  " CPU seconds and memory are the robust ones; load average"
  f" {info.get('load', 'not recorded')})")
w(f"- cdcflow: {info['cdcflow']}")
w(f"- peers: {info['connect']}; {info['debezium']} (Maven Central serves no 3.6.1.Final of the JDBC")
w("  sink, the Debezium version scripts/debezium uses for the PostgreSQL connector, so 3.6.0.Final);"
  f" {info['connectfile']} (Kafka's FileStreamSource, the version of Connect)")
w(f"- Kafka: {info['broker']}; {info['pg']}")
w("")

if runs["sink"]:
    S = runs["sink"]
    w("## Sink: Debezium change events from Kafka into PostgreSQL")
    w("")
    w(f"Data: one topic, 1 partition, {info['records']} Kafka records ({int(info['bytes']) / 1e6:.1f} MB of"
      f" key+value JSON): {info['events']} Debezium envelopes (JsonConverter with schemas, the shape of"
      f" Debezium's PostgreSQL connector) over {info['keys']} ids — creates, updates (70 %) and deletes (30 %)"
      " each followed by its tombstone — and the fence row last. The final table holds"
      f" {info['rows']} rows. Each run writes a table of its own (upsert, deletes applied, primary key from"
      " the record key, table created by the sink) in the same PostgreSQL server; the three contenders run"
      f" one after another, interleaved, {info['repeat']} time(s) each. The peer keeps its defaults"
      " (batch.size 500, the Connect consumer's max.poll.records 500); so does cdcflow.")
    w("")
    w("- rows/s: envelopes / seconds from the process start (JVM start for the peer, `cdcflow run` for ours)")
    w("  until the fence row is in the table (polled every 0.2 s); start-up is inside the figure")
    w("- first row s: seconds from the process start until the table has its first row (start-up, the")
    w("  consumer joining its group, the table created, the first batch committed); rows/s after it:")
    w("  envelopes / (fence seconds - first row seconds), the rate once running (a slight overestimate:")
    w("  the first batch is inside the start-up)")
    w("- CPU s: utime + stime of the JVM or the cdcflow process (/proc/PID/stat) when the fence row is seen")
    w("  (the PostgreSQL server's own CPU is not counted, for either)")
    w("- peak RSS: VmHWM of that process (/proc/PID/status); the JVM runs with -Xms = -Xmx = 512m")
    w("- equal: the final table (id, email, n) equals the state the generated events leave")
    w("")
    w("Medians of the runs, ratios against the peer:")
    w("")
    w("| contender | rows/s | x peer | seconds | first row s | rows/s after it | x peer | CPU s | x less CPU |"
      " peak RSS MB | x less memory | equal |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    p = PEER["sink"]
    for k in ("dbz", "alias", "cdcflow"):
        if k not in S:
            continue
        rps, secs, cpu, hwm = med("sink", k, "rps"), med("sink", k, "secs"), med("sink", k, "cpu"), med("sink", k, "hwm")
        first, steady = med("sink", k, "first"), med("sink", k, "steady")
        w(f"| {LABEL[k]} | {rps:,.0f} | {ratio(rps, med('sink', p, 'rps'))} | {secs:.2f} | {first:.2f} |"
          f" {num(steady, ',.0f')} | {ratio(steady, med('sink', p, 'steady'))} | {cpu:.2f} |"
          f" {ratio(med('sink', p, 'cpu'), cpu)} | {hwm:.1f} | {ratio(med('sink', p, 'hwm'), hwm)} | {equal('sink', k)} |")
    w("")
    w("Raw numbers, every run:")
    w("")
    w("| contender | run | seconds | rows/s | first row s | rows/s after it | CPU s | peak RSS MB | equal |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for k in ("dbz", "alias", "cdcflow"):
        for r in sorted(S.get(k, []), key=lambda r: r["rep"]):
            w(f"| {k} | {r['rep']} | {r['secs']:.2f} | {r['rps']:,.0f} | {r['first']:.2f} | {num(r['steady'], ',.0f')} |"
              f" {r['cpu']:.2f} | {r['hwm']:.1f} | {r['ok']} |")
    w("")

if runs["source"]:
    S = runs["source"]
    w("## Source: one file of JSON lines into Kafka")
    w("")
    w(f"Data: ONE file of {int(info['lines']):,} lines ({int(info['src_bytes']) / 1e6:.1f} MB), each a compact"
      " JSON object of about 110 bytes (`{\"id\":0,\"name\":\"user 0\",\"email\":\"user0@example.com\","
      "\"city\":\"Zurich\",\"amount\":0,\"flag\":false}`). Kafka's FileStreamSource reads one file (its `file`"
      " setting), so both read that same single file: cdcflow's `files` source is given the directory that"
      " holds only it. Each run produces into a fresh topic (1 partition, created empty before the process"
      f" starts) of the same broker; the two contenders run interleaved, {info['repeat']} time(s) each.")
    w("")
    w("What each does with a line, at its defaults (neither is tuned):")
    w("")
    w("- peer: `connector.class=org.apache.kafka.connect.file.FileStreamSourceConnector`, `file`, `topic`,")
    w("  key and value through the StringConverter: the line as it is, a null key; its batch.size 2000 (lines")
    w("  a poll); the producer Connect gives a source task (its log prints acks = -1, i.e. all,")
    w("  max.in.flight.requests.per.connection = 1, enable.idempotence = false, linger.ms = 5)")
    w("- cdcflow: `files` source, `input.format=jsonl`: each line is PARSED as JSON and written again by the")
    w("  JsonConverter (schemas off), the key the file's name (`lines.jsonl`, a string); cdcflow's producer")
    w("  (librdkafka, idempotent, acks=all: ordered with up to 5 requests in flight; src/worker/kafka.c), its")
    w("  max.poll.records 500. cdcflow does more per line than the peer (a JSON parse and serialisation) and")
    w("  sends an 11-byte key the peer does not; its compact output equals the input line byte for byte. The")
    w("  peer's one request in flight is a real difference in how they send: part of the throughput gap is")
    w("  that setting, not the language")
    w("")
    w("- records/s: lines / seconds from the process start until the topic's end offset is the line count")
    w("  (`kcat -Q`, polled every 0.1 s); start-up is inside the figure. records/s after the first:")
    w("  lines / (that - first record s), the rate once running")
    w("- first record s: seconds from the process start until the topic has its first record")
    w("- CPU s and peak RSS: as for the sink, read when the last record is on the topic")
    w("- on topic: the topic's record count once the process has stopped (every line arrived, no duplicate,")
    w("  when it equals the line count); equal: the topic's values, in offset order, are the file's lines")
    w("  byte for byte (md5 of `kcat -C -f '%s\\n'` against md5 of the file)")
    w("")
    w("Medians of the runs, ratios against the peer:")
    w("")
    w("| contender | records/s | x peer | seconds | first record s | records/s after it | x peer | CPU s |"
      " x less CPU | peak RSS MB | x less memory | on topic | equal |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    p = PEER["source"]
    for k in ("fsrc", "files"):
        if k not in S:
            continue
        rps, secs, cpu, hwm = (med("source", k, f) for f in ("rps", "secs", "cpu", "hwm"))
        first, steady = med("source", k, "first"), med("source", k, "steady")
        counts = sorted({r["count"] for r in S[k]})
        w(f"| {LABEL[k]} | {rps:,.0f} | {ratio(rps, med('source', p, 'rps'))} | {secs:.2f} | {first:.2f} |"
          f" {num(steady, ',.0f')} | {ratio(steady, med('source', p, 'steady'))} | {cpu:.2f} |"
          f" {ratio(med('source', p, 'cpu'), cpu)} | {hwm:.1f} | {ratio(med('source', p, 'hwm'), hwm)} |"
          f" {' / '.join(f'{c:,}' for c in counts)} | {equal('source', k)} |")
    w("")
    w("Raw numbers, every run:")
    w("")
    w("| contender | run | seconds | records/s | first record s | records/s after it | CPU s | peak RSS MB |"
      " on topic | equal |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for k in ("fsrc", "files"):
        for r in sorted(S.get(k, []), key=lambda r: r["rep"]):
            w(f"| {k} | {r['rep']} | {r['secs']:.2f} | {r['rps']:,.0f} | {r['first']:.2f} | {num(r['steady'], ',.0f')} |"
              f" {r['cpu']:.2f} | {r['hwm']:.1f} | {r['count']:,} | {r['ok']} |")
    w("")

if runs["idle"] or runs["sink"] or runs["source"]:
    I = runs["idle"]
    w("## Start-up and idle")
    w("")
    w("- first record s: seconds from the process start to the first record processed, from the runs above")
    w("  (sinks: the first row in the table; sources: the first record on the topic); median")
    if I:
        w(f"- idle: each contender started alone with its connector and nothing to do ({info['repeat']} time(s)")
        w("  each): the sinks on an empty topic, FileStreamSource on an empty file, the `files` source on an")
        w("  empty directory. ready s: from the process start until Connect's REST status says the connector")
        w("  and its task are RUNNING (cdcflow serves the same status; polled every 0.1 s for cdcflow, every")
        w(f"  0.5 s by scripts/debezium for the peers); idle RSS: VmRSS {info['idle_wait']} s after that; idle CPU:"
          f" the CPU seconds used in those {info['idle_wait']} s, as % of one core; peak RSS: VmHWM at the end")
        w("  (start-up included)")
    w("")
    w("| contender | first record s | x faster | ready s | x faster | idle RSS MB | x less memory | idle CPU % |"
      " peak RSS idle MB |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for part, kinds in (("sink", ("dbz", "alias", "cdcflow")), ("source", ("fsrc", "files"))):
        p = PEER[part]
        for k in kinds:
            if k not in runs[part] and k not in I:
                continue
            first = med(part, k, "first") if k in runs[part] else NaN
            pfirst = med(part, p, "first") if p in runs[part] else NaN
            ik = k if IDLE_OF.get(k, (None,))[0] == part else None
            has_i = ik is not None and ik in I
            ready = med("idle", ik, "ready") if has_i else NaN
            rss = med("idle", ik, "rss") if has_i else NaN
            cpu = med("idle", ik, "cpu") if has_i else NaN
            ihwm = med("idle", ik, "hwm") if has_i else NaN
            pready = med("idle", p, "ready") if p in I else NaN
            prss = med("idle", p, "rss") if p in I else NaN
            pct = NaN if math.isnan(cpu) else 100 * cpu / float(info["idle_wait"])
            w(f"| {LABEL[k]} | {num(first, '.2f')} | {ratio(pfirst, first)} | {num(ready, '.2f')} |"
              f" {ratio(pready, ready)} | {num(rss, '.1f')} | {ratio(prss, rss)} | {num(pct, '.1f')} | {num(ihwm, '.1f')} |")
    w("")
    if I:
        w("Raw idle numbers, every run:")
        w("")
        w("| contender | run | ready s | idle RSS MB | CPU s while idle | peak RSS MB |")
        w("|---|---:|---:|---:|---:|---:|")
        for k in ("dbz", "cdcflow", "fsrc", "files"):
            for r in sorted(I.get(k, []), key=lambda r: r["rep"]):
                w(f"| {k} | {r['rep']} | {r['ready']:.2f} | {r['rss']:.1f} | {r['cpu']:.2f} | {r['hwm']:.1f} |")
        w("")
    else:
        w("Idle: not measured in this run (`--parts` without idle).")
        w("")

# ---- the chart
png = os.path.splitext(out)[0] + ".png"
bars = [(part, k) for part, ks in (("sink", ("dbz", "alias", "cdcflow")), ("source", ("fsrc", "files")))
        for k in ks if k in runs[part] or (IDLE_OF.get(k, ("",))[0] == part and k in runs["idle"])]
chart_note = None
if not gnuplot.startswith("none") and bars:
    tmpdat = res + ".chart.dat"
    with open(tmpdat, "w") as f:
        f.write("# label peer rps cpu hwm first idle_rss idle_cpu_pct\n")
        for i, (part, k) in enumerate(bars):
            def g(p, kk, fld):
                return med(p, kk, fld) if kk in runs[p] else NaN
            ik = k if IDLE_OF.get(k, (None,))[0] == part and k in runs["idle"] else None
            vals = [g(part, k, "rps"), g(part, k, "cpu"), g(part, k, "hwm"), g(part, k, "first"),
                    med("idle", ik, "rss") if ik else NaN,
                    100 * med("idle", ik, "cpu") / float(info["idle_wait"]) if ik else NaN]
            f.write('"%s" %d %s\n' % (SHORT[(part, k)], 1 if k == PEER[part] else 0,
                                      " ".join("?" if math.isnan(v) else "%.4g" % v for v in vals)))
    panels = [(3, "throughput (records or rows / s)", True), (4, "CPU seconds for the whole data", True),
              (5, "peak RSS MB", True), (6, "seconds to the first record", False),
              (7, f"idle RSS MB ({info['idle_wait']} s after RUNNING)", True), (8, "idle CPU, % of one core", False)]
    gp = [f"set terminal pngcairo size 1500,900 font 'sans,10'", f"set output '{png}'",
          "set datafile missing '?'", "set style fill solid 0.85 border -1", "set boxwidth 0.7",
          "set grid ytics", "unset key", "set offsets 0.3, 0.3, graph 0.12, 0", "set xtics rotate by -30 left nomirror", "set yrange [0:*]",
          "set multiplot layout 2,3 title 'cdcflow (blue) beside its JVM peers (grey): medians of "
          f"{info['repeat']} runs, bench/peers/run, {info['nproc']} shared cores'"]
    for col, title, logy in panels:
        gp.append(f"set title '{title}'")
        gp.append("set logscale y; set yrange [*:*]" if logy else "unset logscale y; set yrange [0:*]")
        gp.append(f"plot '{tmpdat}' using 0:{col}:($2 > 0 ? 0x999999 : 0x1f5fbf):xtic(1) with boxes lc rgb variable,"
                  f" '' using 0:{col}:(sprintf(abs(${col}) >= 100 ? '%.0f' : '%.2g', ${col})) with labels offset 0,0.7 font ',8'")
    gp.append("unset multiplot")
    gpf = res + ".chart.gp"
    open(gpf, "w").write("\n".join(gp) + "\n")
    p = subprocess.run([gnuplot, gpf], capture_output=True, text=True)
    if p.returncode != 0 or not os.path.exists(png):
        chart_note = f"no chart: gnuplot failed ({p.stderr.strip()[:300]})"
else:
    chart_note = "no chart: " + (gnuplot[len("none:"):].strip() if gnuplot.startswith("none") else "nothing measured")

w("## Chart")
w("")
if chart_note:
    w(chart_note + "; the tables above carry the figures.")
else:
    w(f"![cdcflow beside its JVM peers]({os.path.basename(png)})")
    w("")
    w(f"`{os.path.basename(png)}`: the medians above, drawn by {info.get('gnuplot_v') or 'gnuplot'} (Debian's"
      " gnuplot-nox, which bench/peers/run installs when it is missing and it runs as root); log scales"
      " except the seconds to the first record and the idle CPU.")
w("")

# ---- the profiles (bench/peers/run's profile part)
wdir = os.path.dirname(os.path.abspath(res))
prof = {}
for kind in ("sink", "files"):
    fn = os.path.join(wdir, f"profile-{kind}.txt")
    if os.path.exists(fn):
        d = dict(dso=[], sym=[])
        for line in open(fn):
            k, _, rest = line.rstrip("\n").partition(" ")
            if k in ("dso", "sym"):
                pct, _, what = rest.strip().partition("%")
                d[k].append((float(pct), " ".join(what.split())))
            else:
                d[k] = rest.strip()
        prof[kind] = d
none_fn = os.path.join(wdir, "profile-none.txt")
PROF_LABEL = {"sink": "cdcflow `cdc-sink` target=postgres, the sink topic into a table of its own",
              "files": "cdcflow `files` source, the same file into a topic of its own"}
if prof or os.path.exists(none_fn):
    w("## Where cdcflow's time goes (perf)")
    w("")
    if os.path.exists(none_fn):
        w(open(none_fn).read().strip() + ".")
        w("")
    if prof:
        w("One more run of each (not counted above) under `perf record -F 999 -- cdcflow run ...`, stopped when")
        w("the work was done (start-up included); self time by library and the top symbols (`perf report")
        w("--no-children`; user and kernel). Symbols are those of this build (RelWithDebInfo: inlined functions")
        w("count in their callers).")
        w("")
    for kind, d in prof.items():
        w(f"{PROF_LABEL[kind]}: {d.get('seconds', '?')} s, {d.get('samples', '?')} samples")
        w("")
        w("| library | self % |")
        w("|---|---:|")
        for pct, what in d["dso"]:
            w(f"| {what} | {pct:.1f} |")
        w("")
        w("| symbol | library | self % |")
        w("|---|---|---:|")
        for pct, what in d["sym"]:
            lib_, _, sym = what.partition(" ")
            sym = sym.replace("[.] ", "").replace("[k] ", "")
            w(f"| `{sym}` | {lib_} | {pct:.1f} |")
        w("")
        lib = {what.split()[0]: pct for pct, what in d["dso"]}
        alloc = sum(pct for pct, what in d["sym"]
                    if what.startswith("libc") and any(x in what for x in ("malloc", "free", "realloc", "calloc")))
        kafka = sum(v for k, v in lib.items() if k.startswith("librdkafka"))
        pq = sum(v for k, v in lib.items() if k.startswith("libpq"))
        w(f"Read: {lib.get('cdcflow', 0):.1f} % in cdcflow's own code, {sum(v for k, v in lib.items() if k.startswith('libc.')):.1f} %"
          f" in libc ({alloc:.1f} % in its allocator among the top symbols), {kafka:.1f} % in librdkafka"
          + (f", {pq:.1f} % in libpq" if kind == "sink" else "") + ".")
        w("")

# ---- goal and closing note
w("## Against the goal of issue 17")
w("")
w("Goal: at least 10 x the peer's throughput at no more than a twentieth of its memory.")
w("")
for part, k in (("sink", "cdcflow"), ("sink", "alias"), ("source", "files")):
    p = PEER[part]
    if k in runs[part] and p in runs[part]:
        t = med(part, k, "rps") / med(part, p, "rps")
        ts = med(part, k, "steady") / med(part, p, "steady")
        m = med(part, p, "hwm") / med(part, k, "hwm")
        verdict = lambda x: "reached" if x >= 10 and m >= 20 else "not reached"
        w(f"- {LABEL[k]}: {t:.2f} x the throughput, start-up counted ({ratio(ts, 1)} x once running), at"
          f" 1/{m:.1f} of the peak memory: {verdict(t)} with start-up counted,"
          f" {verdict(ts) if not math.isnan(ts) else 'not measured'} once running")
        if part in ("sink", "source") and k in runs["idle"] and p in runs["idle"]:
            w(f"  (idle: 1/{med('idle', p, 'rss') / med('idle', k, 'rss'):.1f} of the peer's resident memory)")
w("")
w("Closing note. Throughput: each figure includes the process's start-up (JVM, Connect, the plugin scan:")
w("the first record s column); the 'after it' columns compare the contenders once running. Memory: the")
w("JVM's heap is fixed at 512 MiB by scripts/debezium (-Xms = -Xmx), so the JVM's resident size is mostly")
w("that setting; a part of cdcflow's sink resident size is what its consumer may prefetch: librdkafka's queue")
w("is bounded at 32 MiB by default (CF_SINK_CONSUMER_QUEUE_KB, src/worker/kafka.c; worker key")
w("consumer.queued.max.messages.kbytes); the memory ratios depend on both settings. A smaller queue costs")
w("throughput with librdkafka 2.0.2 (the comment beside that default).")
def own_share(d):
    lib = {what.split()[0]: pct for pct, what in d["dso"]}
    own = lib.get("cdcflow", 0) + sum(v for k, v in lib.items() if k.startswith("libc."))
    return own, sum(v for k, v in lib.items() if k.startswith(("librdkafka", "libpq")))


if prof and all(own_share(d)[0] > own_share(d)[1] for d in prof.values()):
    w("Where cdcflow's time goes: the profiles above. As most of it is cdcflow's own code and libc's")
    w("allocator rather than librdkafka or libpq, the gap is closed in cdcflow: fewer allocations per record")
    w("(each record is a tree of values, built by the extractor or the converter and freed after the send) and")
    w("a JSON line passed through without that tree when no transform needs it (planned, not done).")
elif prof:
    w("Where cdcflow's time goes: the profiles above (most of it in the client libraries, librdkafka or libpq).")
else:
    w("Where cdcflow's own time goes is not profiled in this run (the profile part: perf).")
if info.get("extra"):
    w(f"This run added to cdcflow's sink worker file: `{info['extra']}`.")
w("")
if runs["cassandra"]:
    L.extend(cassandra_section())
    w("")
w("## Not yet measured (planned)")
w("")
if not runs["cassandra"]:
    w("- Cassandra: Debezium's Cassandra connector (or Cassandra's own CommitLogReader) against the Cassandra CDC")
    w("  source over the same `cdc_raw` segments: not measured in this run (`--parts` without cassandra)")
for part in ("sink", "source", "idle"):
    if part not in info["parts"].split(","):
        w(f"- {part}: not measured in this run (`--parts {info['parts']}`)")
w("")
w("## Reproduce")
w("")
w("With the servers up (`scripts/servers start kafka postgres`, or another instance's CF_TEST_KAFKA and")
w("CF_TEST_PG in the environment) and `build/cdcflow` built:")
w("")
w("```")
w(info["command"])
w("```")
w("")
w("It fetches Kafka Connect, the Debezium JDBC sink and connect-file from Maven Central once")
w("(scripts/debezium, cached in $CF_SERVERS_CACHE), installs gnuplot-nox if it is missing and it may")
w("(root), produces the topics, runs the contenders, and rewrites this file and its chart. About 20")
w("minutes on 2 cores.")
open(out, "w").write("\n".join(L) + "\n")
