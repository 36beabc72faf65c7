#!/usr/bin/env python3
"""kill_schedule.py - kill -9 pipeline processes at random moments of a running workload, restart
them each time, restart the broker once among the kills; then wait for the pipeline to end, stop
the processes (SIGTERM) and require a clean exit of each.

  kill_schedule.py --dir DIR --workload CMD --proc NAME=CMD [--proc NAME=CMD]...
                   [--ready NAME=FILE:TEXT:N]... [--kill NAME[,NAME]] [--kills 20]
                   [--broker-restart CMD] [--until CMD] [--timeout 300] [--seed N]

Used by tests/sink/test_it_debezium_kill.sh and tests/sink/test_it_cassandra_e2e_kill.sh (through
the kill modes of test_it_debezium_pipeline.sh and test_it_cassandra_e2e.sh).

  --proc NAME=CMD   a pipeline process (a bash command that ends with exec of the process: its pid
                    is the process's),
                    started at once; its pid is in DIR/NAME.pid whatever restart it is at (so the
                    calling test can stop it if this script dies)
  --ready NAME=FILE:TEXT:N
                    NAME is ready (worth killing) once FILE holds N more lines with TEXT than it did
                    when NAME was started (a sink: its connectors' "partitions assigned"); a kill
                    of a process that has not started its work would test only its start-up
  --kill NAMES      the processes killed (default every --proc), each --kills times
  --workload CMD    the workload (bash command), started once every process is ready; it calls
                    Gate.step(i) before each of its steps (environment CF_KILL_GATE/_PROGRESS):
                    its progress decides the kill moments
  --broker-restart CMD
                    run once, at a random step of the workload between two kills, while every
                    process runs (stops and starts the broker, its data kept); with --applied only
                    once the targets moved since the kill before (not while that process starts)
  --until CMD       after the workload ended: polled (bash) until it exits 0 (--timeout seconds)
  --applied CMD     prints how far the targets are (a number: records applied); printed at each
                    kill, and the first start's time until it is above 0 is the measured `life`
  --life-from ready|applied
                    `life` is the time until every process is ready, or until --applied is above 0
                    (the default with --applied: the targets had something to apply at the start)

The kill moments follow the run, not fixed sleeps (on a loaded machine a fixed schedule ends
before or after the work it was meant to hit): the moments are random steps of the workload
(uniform over its length, sorted), and the workload waits at a gate a few steps past the next
moment until the process killed before is ready again, so every kill lands while the workload
runs, and a restart that takes long only slows the workload down. The workload's pace follows
the first start, measured: the time until the processes were ready (or, with --applied, until
the targets had applied something); a step every 2 x that x kills / steps, so that a process
lives twice that between kills on average (at most 0.5 s a step, and 150 s for the whole workload). Exit 0 when every kill was
made, the workload and CMD ended well, and every process stopped with exit 0.
"""
import argparse
import os
import random
import signal
import subprocess
import sys
import time


class Gate:
    """The workload's side: Gate(total).step(i) before step i (0-based) of total. Without the
    environment of kill_schedule.py (a run without kills) it does nothing."""

    def __init__(self, total):
        self.total = total
        self.gate = os.environ.get("CF_KILL_GATE")
        self.progress = os.environ.get("CF_KILL_PROGRESS")
        self.driver = int(os.environ.get("CF_KILL_DRIVER", "0"))

    def step(self, i):
        if not self.gate:
            return
        _write(self.progress, f"{i} {self.total}")
        while True:
            try:
                with open(self.gate) as f:
                    limit, pace = f.read().split()
                if i < int(limit):
                    break
            except (OSError, ValueError):
                pass
            try:
                os.kill(self.driver, 0)
            except OSError:  # kill_schedule.py is gone: nobody opens the gate any more
                sys.exit("the kill schedule is gone: the workload stops")
            time.sleep(0.02)
        time.sleep(float(pace))

    def done(self):
        if self.gate:
            _write(self.progress, f"{self.total} {self.total}")


def _write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def _read_int(path, default):
    try:
        with open(path) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return default


def _count(path, text):
    try:
        with open(path, errors="replace") as f:
            return sum(1 for line in f if text in line)
    except OSError:
        return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dir", required=True)
    p.add_argument("--proc", action="append", default=[], required=True)
    p.add_argument("--ready", action="append", default=[])
    p.add_argument("--kill", default="")
    p.add_argument("--kills", type=int, default=20)
    p.add_argument("--workload", required=True)
    p.add_argument("--broker-restart")
    p.add_argument("--until")
    p.add_argument("--applied")
    p.add_argument("--life-from", choices=["ready", "applied"])
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    a = p.parse_args()
    rnd = random.Random(a.seed)
    cmds = dict(x.split("=", 1) for x in a.proc)
    ready = {}
    for x in a.ready:
        name, rest = x.split("=", 1)
        path, text, n = rest.rsplit(":", 2)[0], rest.rsplit(":", 2)[1], int(rest.rsplit(":", 2)[2])
        ready[name] = (path, text, n)
    victims = [n for n in (a.kill.split(",") if a.kill else cmds) if n]
    procs, marks = {}, {}
    gate, progress = os.path.join(a.dir, "kill.gate"), os.path.join(a.dir, "kill.progress")
    pace = 0.0

    def open_gate(limit):
        _write(gate, f"{limit} {pace:.4f}")

    open_gate(0)
    t0 = time.time()

    def say(msg):
        print(f"kill_schedule [{time.time() - t0:6.1f}s] {msg}", flush=True)

    def start(name):
        if name in ready:
            marks[name] = _count(ready[name][0], ready[name][1])
        procs[name] = subprocess.Popen(["bash", "-c", cmds[name]], stdin=subprocess.DEVNULL)
        _write(os.path.join(a.dir, name + ".pid"), str(procs[name].pid))

    def tails():
        for name in cmds:
            if name in ready:
                try:
                    with open(ready[name][0], errors="replace") as f:
                        print(f"--- last lines of {ready[name][0]} ({name})\n" + "".join(f.readlines()[-15:]),
                              flush=True)
                except OSError:
                    pass

    def fail(msg):
        say("FAIL: " + msg)
        tails()
        for pr in procs.values():
            if pr.poll() is None:
                pr.kill()
        if work and work.poll() is None:
            os.killpg(work.pid, signal.SIGKILL)
        sys.exit(1)

    def alive():
        for name, pr in procs.items():
            if pr.poll() is not None:
                fail(f"{name} exited by itself (exit {pr.returncode})")
        if work and work.poll() not in (None, 0):
            fail(f"the workload failed (exit {work.returncode})")

    def applied():
        out = subprocess.run(["bash", "-c", a.applied], capture_output=True, text=True).stdout.split()
        return int(out[0]) if out and out[0].isdigit() else 0

    def wait_ready(name, timeout=120):
        if name not in ready:
            return
        path, text, n = ready[name]
        t = time.time()
        while _count(path, text) < marks[name] + n:
            alive()
            if time.time() - t > timeout:
                fail(f"{name} not ready within {timeout} s ({n} new lines with '{text}' in {path})")
            time.sleep(0.05)

    work = None
    for name in cmds:
        start(name)
    for name in cmds:
        wait_ready(name)
    life = time.time() - t0  # how long a start takes here and now: what the kill moments follow
    from_applied = (a.life_from or ("applied" if a.applied else "ready")) == "applied"
    if from_applied:
        while applied() <= 0:
            alive()
            if time.time() - t0 > 120:
                fail(f"nothing applied within 120 s of the start ({a.applied})")
            time.sleep(0.1)
        life = time.time() - t0
    say(f"seed {a.seed}: {', '.join(cmds)} running; {a.kills} kills of each of {', '.join(victims)}; "
        f"{'the first apply' if from_applied else 'ready'} {life:.1f} s after the start")
    env = dict(os.environ, CF_KILL_GATE=gate, CF_KILL_PROGRESS=progress, CF_KILL_DRIVER=str(os.getpid()))
    work = subprocess.Popen(["bash", "-c", a.workload], env=env, stdin=subprocess.DEVNULL, start_new_session=True)
    while not os.path.exists(progress):  # the workload's first step says its length
        alive()
        time.sleep(0.05)
    with open(progress) as f:
        total = int(f.read().split()[1])
    nk = a.kills * len(victims)
    if total < 2 * nk + 2:
        fail(f"the workload has {total} steps: too few for {nk} kills")
    who = [v for v in victims for _ in range(a.kills)]
    rnd.shuffle(who)
    moments = sorted(rnd.sample(range(1, total - 1), nk))
    lead = max(2, total // (4 * nk))  # how far the workload may go past a kill moment before it waits
    # the workload's pace: the processes live 2 x `life` between kills on average (some die before
    # their first apply, others in the middle of their work)
    pace = min(0.5, 2 * life * nk / total, 150.0 / total)  # and the workload within 150 s of gate time
    say(f"the workload: {total} steps, one every {pace * 1000:.0f} ms at most")
    restart_after = rnd.randrange(1, nk) if a.broker_restart else -1
    at = 0
    for k in range(nk):
        # the workload may have run to its end past the moments left (the gate's lead): those
        # kills land at once then, while the processes still apply its tail (never a wait for a
        # step that does not come)
        target = min(max(moments[k], at + 1), total)
        open_gate(min(total, target + lead))
        while _read_int(progress, 0) < target:
            alive()
            time.sleep(0.01)
        name = who[k]
        procs[name].send_signal(signal.SIGKILL)
        procs[name].wait()
        at = _read_int(progress, 0)
        ts = time.time()
        start(name)
        wait_ready(name)
        done = f", {applied()} applied" if a.applied else ""
        say(f"kill {k + 1}/{nk}: {name} at step {at} of {total}{done}, ready again after {time.time() - ts:.1f} s")
        if k + 1 == restart_after:
            # at a random step between this kill and the next, once the restarted process has
            # done some work (with --applied: the targets moved), not right at its start
            step = min(total, rnd.randint(at + 1, max(at + 1, moments[k + 1] - 1)))
            open_gate(min(total, max(step, moments[k + 1]) + lead))
            was = applied() if a.applied else 0
            until = time.time() + max(5.0, 4 * life)  # the targets may have caught up with the gate
            while _read_int(progress, 0) < step or (a.applied and applied() <= was and time.time() < until):
                alive()
                time.sleep(0.05)
            ts = time.time()
            step = _read_int(progress, 0)
            subprocess.run(["bash", "-c", a.broker_restart], check=True, stdout=subprocess.DEVNULL)
            say(f"broker restarted at step {step} ({time.time() - ts:.1f} s), every process running")
        at = _read_int(progress, 0)
    open_gate(total + 1)
    while work.poll() is None:
        alive()
        time.sleep(0.1)
    alive()
    say("workload done")
    if a.until:
        t = time.time()
        while subprocess.run(["bash", "-c", a.until]).returncode != 0:
            alive()
            if time.time() - t > a.timeout:
                fail(f"not done within {a.timeout:.0f} s after the workload ({a.until})")
            time.sleep(0.5)
        say(f"done {time.time() - t:.1f} s after the workload")
    bad = []
    for name, pr in procs.items():
        pr.send_signal(signal.SIGTERM)
    for name, pr in procs.items():
        try:
            rc = pr.wait(timeout=120)
        except subprocess.TimeoutExpired:
            pr.kill()
            rc = "none (killed after 120 s)"
        if rc != 0:
            bad.append(f"{name} exit {rc} after SIGTERM")
        os.unlink(os.path.join(a.dir, name + ".pid"))
    if bad:
        fail("; ".join(bad))
    say(f"{nk} kills made, every process stopped cleanly")


if __name__ == "__main__":
    main()
