#!/usr/bin/env python3
"""crash.py - kill -9 the files source and the cdc-sink at random moments and
count what was lost and what was applied twice.

  tests/crash/crash.py [--cli build/cdcflow] [--transport file,direct,kafka]
                       [--kills 20] [--keys 3000] [--rows 200000] [--seed N] [--max-pause S]
                       [--bootstrap HOST:PORT] [--broker-restart CMD] [--python PY] [--keep]

Input: CSV files (id, rec, v), every key in one file, its rows in order, rec
a number unique to each row. The files source reads them (ValueToKey makes id
the key) and the cdc-sink applies them to one SQLite database, kept across all
restarts; so is every other file (record file, offsets). Its table is made
beforehand with triggers that log every row the sink really writes, in the
writing transaction: (id, rec, _change_sequence_number). At the end:

  lost           keys whose row is not the key's last row of the input (must be 0)
  sink twice     (rec, sequence) pairs written twice: the same message applied
                 twice by the sink (must be 0: the sink stores its positions with
                 its rows and resumes there)
  source twice   rows the source delivered twice into the transport (a record
                 file's lines, Kafka messages) after a kill: its offsets are
                 stored after delivery, so a kill repeats at most what was in
                 flight; docs/operations.md says how much. The sink applies each
                 of them once: they are distinct messages.

Transports:
  file    the source runs `cdcflow run --output OUT` (killed KILLS times, then to
          the end), then the sink `cdcflow run --input OUT` (the same)
  direct  one process, source and sink (transport=direct), killed KILLS times
  kafka   a source process and a sink process against a real broker
          (--bootstrap; topics, groups and the offsets topic named for this run),
          each killed KILLS times at random moments while the other runs; with
          --broker-restart CMD the broker is also restarted once (CMD stops and
          starts it, its data kept), at a random moment among the kills, while
          both run

Exit status 0 when nothing was lost and the sink applied nothing twice.
"""
import argparse
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
here = os.path.dirname(os.path.abspath(__file__))
p.add_argument("--cli", default=os.environ.get("CF_CLI", os.path.join(here, "..", "..", "build", "cdcflow")))
p.add_argument("--transport", default="file,direct")
p.add_argument("--kills", type=int, default=20)
p.add_argument("--keys", type=int, default=3000)
p.add_argument("--rows", type=int, default=200000)
p.add_argument("--files", type=int, default=12)
p.add_argument("--seed", type=int, default=int(time.time()) % 100000)
p.add_argument("--bootstrap", default=os.environ.get("CF_TEST_KAFKA"))
p.add_argument("--broker-restart", help="kafka: a shell command that restarts the broker (data kept), run once")
p.add_argument("--python", default=os.environ.get("CF_TEST_PYTHON"), help="a Python with confluent-kafka (topics)")
p.add_argument("--max-pause", type=float, default=0.5, help="seconds: a kill comes 0.02 to this after a start")
p.add_argument("--keep", action="store_true", help="keep the work directory")
a = p.parse_args()
rnd = random.Random(a.seed)
print(f"crash.py: seed {a.seed}, {a.kills} kills, {a.rows} rows on {a.keys} keys", flush=True)


def make_input(d):
    """CSV files; returns {id: last rec}"""
    os.makedirs(d)
    files = [open(os.path.join(d, f"part{n:02d}.csv"), "w") for n in range(a.files)]
    for f in files:
        f.write("id,rec,v\n")
    last = {}
    for rec in range(a.rows):
        k = rnd.randrange(a.keys)
        files[k % a.files].write(f"{k},{rec},{rnd.getrandbits(40):x}\n")
        last[k] = rec
    for f in files:
        f.close()
    return last


def prepare_db(path, t):
    """the sink's table (named as the topic), made first, with the triggers"""
    db = sqlite3.connect(path)
    db.executescript(f"""
        PRAGMA journal_mode=WAL;
        CREATE TABLE "{t}" (id TEXT NOT NULL PRIMARY KEY, rec TEXT, v TEXT, "_change_sequence_number" TEXT);
        CREATE TABLE apply_log (id TEXT, rec TEXT, seq TEXT);
        CREATE TRIGGER log_i AFTER INSERT ON "{t}" BEGIN
          INSERT INTO apply_log VALUES (new.id, new.rec, new."_change_sequence_number"); END;
        CREATE TRIGGER log_u AFTER UPDATE ON "{t}" BEGIN
          INSERT INTO apply_log VALUES (new.id, new.rec, new."_change_sequence_number"); END;
    """)
    db.close()


TABLE = None


def table(path):
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
        rows = dict(db.execute(f'SELECT CAST(id AS INTEGER), CAST(rec AS INTEGER) FROM "{TABLE}"'))
        db.close()
        return rows
    except sqlite3.Error:
        return {}


def complete(path, last):
    return table(path) == last


def start(args, log):
    proc = subprocess.Popen([a.cli, "run"] + args, stdout=subprocess.DEVNULL, stderr=log)
    proc.started = time.time()
    return proc


def kill9(proc):
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def stop(proc, what):
    time.sleep(max(0.0, proc.started + 1.0 - time.time()))  # its SIGTERM handler is set up by then
    proc.send_signal(signal.SIGTERM)
    rc = proc.wait(timeout=120)
    if rc not in (0, 3):
        sys.exit(f"{what}: exit {rc}")


LOG_TAIL = []  # the processes' log, whose last lines a timeout prints


def wait_until(cond, timeout=300, what="completion"):
    t0 = time.time()
    while not cond():
        if time.time() - t0 > timeout:
            for path in LOG_TAIL:
                try:
                    with open(path, errors="replace") as f:
                        print("--- last lines of " + path + "\n" + "".join(f.readlines()[-25:]), flush=True)
                except OSError:
                    pass
            sys.exit(f"timed out waiting for {what}")
        time.sleep(0.2)


def pause():
    time.sleep(rnd.uniform(0.02, a.max_pause))


def count_lines(path):
    try:
        with open(path, "rb") as f:
            return sum(1 for _ in f)
    except FileNotFoundError:
        return 0


def connector(name, cfg):
    return json.dumps({"name": name, "config": cfg})


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def run_transport(kind, w):
    global TABLE
    input_dir = os.path.join(w, "in")
    last = make_input(input_dir)
    db = os.path.join(w, "out.db")
    run_id = f"{os.getpid()}_{a.seed}_{kind}"
    topic = TABLE = f"crash_{run_id}"
    prepare_db(db, topic)
    src_cfg = {"connector.class": "files", "files.path": input_dir, "topic": topic, "input.format": "csv",
               "file.name.template": ".*\\.csv", "files.min.age.ms": "0", "poll.backoff.initial.ms": "20",
               "poll.backoff.max.ms": "200", "transforms": "key", "transforms.key.type": "ValueToKey",
               "transforms.key.fields": "id"}
    sink_cfg = {"connector.class": "cdc-sink", "topics": topic, "sqlite.path": db}
    write(os.path.join(w, "src.json"), connector(f"src_{run_id}", src_cfg))
    write(os.path.join(w, "sink.json"), connector(f"sink_{run_id}", sink_cfg))
    log = open(os.path.join(w, "log"), "ab")
    LOG_TAIL[:] = [os.path.join(w, "log")]
    src, sink = os.path.join(w, "src.json"), os.path.join(w, "sink.json")
    wp = os.path.join(w, "worker.properties")
    out = os.path.join(w, "records.jsonl")
    conv = ("key.converter=json\nvalue.converter=json\nkey.converter.schemas.enable=true\n"
            "value.converter.schemas.enable=true\n")
    if kind == "file":
        write(wp, f"offset.storage.file.filename={w}/offsets.json\noffset.flush.interval.ms=200\n" + conv)
        for k in range(a.kills):  # the source, into the record file
            proc = start(["--worker", wp, "--output", out, src], log)
            pause()
            kill9(proc)
        proc = start(["--worker", wp, "--output", out, src], log)
        wait_until(lambda: count_lines(out) >= a.rows and set(recs_in(out)) >= set(range(a.rows)), what="the source")
        time.sleep(0.5)
        stop(proc, "source")
        for k in range(a.kills):  # the sink, from the record file
            proc = start(["--worker", wp, "--input", out, sink], log)
            pause()
            kill9(proc)
        proc = start(["--worker", wp, "--input", out, sink], log)
        rc = proc.wait(timeout=300)
        if rc != 0:
            sys.exit(f"sink's last run: exit {rc}")
        source_twice = count_lines(out) - a.rows
    elif kind == "direct":
        write(wp, f"transport=direct\noffset.storage.file.filename={w}/offsets.json\noffset.flush.interval.ms=200\n")
        for k in range(a.kills):
            proc = start(["--worker", wp, src, sink], log)
            pause()
            kill9(proc)
        proc = start(["--worker", wp, src, sink], log)
        wait_until(lambda: complete(db, last), what="the table")
        stop(proc, "direct run")
        source_twice = None
    else:
        if not a.bootstrap:
            sys.exit("kafka: give --bootstrap HOST:PORT (or CF_TEST_KAFKA)")
        if a.python:
            subprocess.run([a.python, "-c", "import sys\nfrom confluent_kafka.admin import AdminClient, NewTopic\n"
                            "c = AdminClient({'bootstrap.servers': sys.argv[1]})\n"
                            "f = c.create_topics([NewTopic(sys.argv[2], 3, 1)])\n[x.result() for x in f.values()]\n",
                            a.bootstrap, topic], check=True)
        # static membership (KIP-345): a sink started again after a kill -9 gets its
        # partitions back at once instead of after the dead member's session
        write(wp, f"bootstrap.servers={a.bootstrap}\ntransport=kafka\noffset.storage.topic=crash_offsets_{run_id}\n"
                  f"offset.storage.replication.factor=1\noffset.flush.interval.ms=200\n"
                  f"consumer.group.instance.id=crash_{run_id}\nconsumer.session.timeout.ms=10000\n" + conv)
        logpath = os.path.join(w, "log")

        def assigned():
            with open(logpath, errors="replace") as f:
                return f.read().count("partitions assigned")

        procs = {"source": start(["--worker", wp, src], log), "sink": start(["--worker", wp, sink], log)}
        kills = {"source": 0, "sink": 0}
        seen = 0
        restart_at = rnd.randrange(1, 2 * a.kills) if a.broker_restart else -1
        sink_new = False  # the sink was started again and may not have (re)joined its group yet
        while min(kills.values()) < a.kills:  # each killed KILLS times, at moments of its own
            if sum(kills.values()) == restart_at:
                restart_at = -1
                if sink_new:
                    # not while a static member (re)joins: one that joined just before the broker
                    # went away was found fenced when it came back (FENCED_INSTANCE_ID, fatal: its
                    # task fails; seen in tests/crash/kill_schedule.py's runs)
                    wait_until(lambda: assigned() > seen, timeout=60, what="the sink's partitions")
                    time.sleep(2)
                t0 = time.time()
                subprocess.run(a.broker_restart, shell=True, check=True, stdout=subprocess.DEVNULL)
                print(f"kafka : broker restarted after {sum(kills.values())} kills ({time.time() - t0:.1f} s), "
                      f"with the source and the sink running", flush=True)
            who = rnd.choice([x for x in kills if kills[x] < a.kills])
            if who == "sink":  # a kill of a sink that has no partitions yet would test nothing
                wait_until(lambda: assigned() > seen, timeout=60, what="the sink's partitions")
                seen = assigned()
            pause()
            kill9(procs[who])
            kills[who] += 1
            procs[who] = start(["--worker", wp, src if who == "source" else sink], log)
            sink_new = sink_new or who == "sink"
        wait_until(lambda: complete(db, last), timeout=600, what="the table")
        stop(procs["source"], "source")
        stop(procs["sink"], "sink")
        source_twice = None
    log.close()
    return last, db


def recs_in(path):
    recs = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                v = json.loads(json.loads(line)["payload"])["payload"]
            except (ValueError, KeyError, TypeError):
                continue  # a line being written
            recs.append(int(v["rec"]))
    return recs


def judge(kind, last, db):
    got = table(db)
    lost = sum(1 for k, r in last.items() if got.get(k) != r) + sum(1 for k in got if k not in last)
    c = sqlite3.connect(db)
    sink_twice = c.execute("SELECT count(*) FROM (SELECT rec, seq FROM apply_log GROUP BY rec, seq "
                           "HAVING count(*) > 1)").fetchone()[0]
    source_twice = c.execute("SELECT count(*) FROM (SELECT rec FROM apply_log GROUP BY rec "
                             "HAVING count(DISTINCT seq) > 1)").fetchone()[0]
    applied = c.execute("SELECT count(*) FROM apply_log").fetchone()[0]
    c.close()
    print(f"{kind:6}: {len(last)} keys, {applied} row writes; lost {lost}, applied twice by the sink {sink_twice}, "
          f"delivered twice by the source and applied again {source_twice}", flush=True)
    return lost == 0 and sink_twice == 0


ok = True
root = tempfile.mkdtemp(prefix="cf_crash_")
try:
    for kind in a.transport.split(","):
        w = os.path.join(root, kind)
        os.makedirs(w)
        last, db = run_transport(kind, w)
        if kind == "file":
            out = os.path.join(w, "records.jsonl")
            n = count_lines(out)
            print(f"{kind:6}: the record file holds {n} lines for {a.rows} rows ({n - a.rows} written twice)")
        ok &= judge(kind, last, db)
finally:
    if a.keep or not ok:
        print(f"work directory kept: {root}")
    else:
        shutil.rmtree(root)
sys.exit(0 if ok else 1)
