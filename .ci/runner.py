"""The test runner of `bash .ci/test`: runs jobs side by side, as their needs allow.

A job is a command with what it needs: the jobs it waits for, cores (`cpu`), named resources it
must hold alone (`excl`: the main cargo target directory, a PostgreSQL installation being
replaced, the machine itself), a block of TCP ports, a time limit. The scheduler starts every job
whose dependencies passed and whose needs are free, the longest chain first, up to `width` jobs
at once; a job whose dependency failed is not run and counts as failed.

Ports: each job that asks gets a block of `PORT_BLOCK` ports of its own, `SNO_JOB_PORT` ..
`SNO_JOB_PORT + PORT_BLOCK - 1`. Blocks are carved from 10000-31999, below Linux's ephemeral
range (32768 up, where any outgoing connection may take a port), are never handed to two
running jobs, and a block in which some port is already bound (TCP, on 127.0.0.1) is skipped, as
PostgreSQL's own TAP harness skips ports it cannot bind (`get_free_port`).

Output: each job writes to its own log (`SNO_WORK/ci-logs/NAME.log`); one line when it starts
and one when it ends, and a failing job's whole log, printed with its name. A job past its time
limit is killed with its whole process group and fails as HUNG, its log printed. The run ends
with the slowest jobs and `N passed, N failed, in S s`.

Only the standard library: it runs before anything is installed.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field

PORT_FIRST = 10000
PORT_LAST = 31999
PORT_BLOCK = 1000


@dataclass
class Job:
    """One command and what it needs."""

    name: str
    cmd: list[str]
    deps: list[str] = field(default_factory=list)
    # Cores it keeps busy (0: it mostly waits: sleeps, timers, servers).
    cpu: int = 0
    # Resources it holds alone while it runs.
    excl: set[str] = field(default_factory=set)
    ports: bool = False
    timeout: int = 900
    env: dict[str, str] = field(default_factory=dict)
    # A rough duration (s), to start the longest chains first.
    estimate: int = 60
    # Filled in by the run.
    state: str = "waiting"
    started: float = 0.0
    ended: float = 0.0
    proc: subprocess.Popen | None = None
    port: int = 0
    log: str = ""
    why: str = ""
    priority: float = 0.0


def port_free(p: int) -> bool:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", p))
        return True
    except OSError:
        return False
    finally:
        s.close()


class Ports:
    """Blocks of ports, never one block to two running jobs."""

    def __init__(self) -> None:
        self.taken: set[int] = set()

    def take(self) -> int | None:
        for base in range(PORT_FIRST, PORT_LAST - PORT_BLOCK + 2, PORT_BLOCK):
            if base in self.taken:
                continue
            # Every port of the block that a job's servers could bind: check them all.
            if all(port_free(p) for p in range(base, base + PORT_BLOCK)):
                self.taken.add(base)
                return base
        return None

    def give_back(self, base: int) -> None:
        self.taken.discard(base)


def priorities(jobs: dict[str, Job]) -> None:
    """A job's priority: its estimate plus the longest chain of jobs waiting for it."""
    children: dict[str, list[str]] = {n: [] for n in jobs}
    for j in jobs.values():
        for d in j.deps:
            children[d].append(j.name)
    memo: dict[str, float] = {}

    def chain(n: str) -> float:
        if n not in memo:
            memo[n] = jobs[n].estimate + max((chain(c) for c in children[n]), default=0)
        return memo[n]

    for n, j in jobs.items():
        j.priority = chain(n)


def fmt_s(s: float) -> str:
    return f"{s:.0f} s"


class Runner:
    def __init__(self, jobs: list[Job], width: int, cpus: int, logdir: str) -> None:
        names = [j.name for j in jobs]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise SystemExit(f"runner: jobs named twice: {sorted(dup)}")
        self.jobs = {j.name: j for j in jobs}
        for j in jobs:
            for d in j.deps:
                if d not in self.jobs:
                    raise SystemExit(f"runner: {j.name} waits for {d}, which is no job")
        priorities(self.jobs)
        self.width = width
        self.cpus = cpus
        self.logdir = logdir
        self.ports = Ports()
        self.t0 = time.monotonic()
        os.makedirs(logdir, exist_ok=True)

    def now(self) -> float:
        return time.monotonic() - self.t0

    def say(self, line: str) -> None:
        print(f"[{self.now():5.0f} s] {line}", flush=True)

    def running(self) -> list[Job]:
        return [j for j in self.jobs.values() if j.state == "running"]

    def fits(self, j: Job) -> bool:
        run = self.running()
        if len(run) >= self.width:
            return False
        held = set().union(*(r.excl for r in run)) if run else set()
        if "machine" in held or (run and "machine" in j.excl) or (j.excl & held):
            return False
        busy = sum(r.cpu for r in run)
        # A CPU-bound job starts when its cores are free (or nothing else is CPU-bound).
        return busy == 0 or busy + j.cpu <= self.cpus

    def start(self, j: Job) -> bool:
        env = dict(os.environ)
        env.update(j.env)
        if j.ports:
            base = self.ports.take()
            if base is None:
                return False
            j.port = base
            env["SNO_JOB_PORT"] = str(base)
            env["SNO_JOB_PORTS"] = str(PORT_BLOCK)
        env["SNO_JOB_NAME"] = j.name
        j.log = os.path.join(self.logdir, j.name.replace("/", "_") + ".log")
        out = open(j.log, "w")
        j.proc = subprocess.Popen(
            j.cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=env, start_new_session=True,
        )
        out.close()
        j.state = "running"
        j.started = self.now()
        extra = f", ports {j.port}.." if j.ports else ""
        self.say(f"start {j.name} (cpu {j.cpu}{extra})")
        return True

    def finish(self, j: Job, rc: int | None) -> None:
        j.ended = self.now()
        took = j.ended - j.started
        if j.port:
            self.ports.give_back(j.port)
        if rc == 0:
            j.state = "passed"
            self.say(f"ok: {j.name} ({fmt_s(took)})")
            return
        j.state = "failed"
        if rc is None:
            j.why = f"HUNG: no end after {j.timeout} s, killed"
        else:
            j.why = f"exit {rc}"
        self.say(f"FAILED: {j.name} ({j.why}, {fmt_s(took)}); its log:")
        print(f"----- {j.name}: {j.log}", flush=True)
        with open(j.log, errors="replace") as f:
            sys.stdout.write(f.read())
        print(f"----- end of {j.name}'s log", flush=True)

    def kill(self, j: Job) -> None:
        assert j.proc is not None
        try:
            os.killpg(j.proc.pid, signal.SIGTERM)
            try:
                j.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(j.proc.pid, signal.SIGKILL)
                j.proc.wait()
        except ProcessLookupError:
            pass

    def run(self) -> int:
        try:
            return self.loop()
        except KeyboardInterrupt:
            for j in self.running():
                self.kill(j)
            raise

    def loop(self) -> int:
        while True:
            for j in self.running():
                assert j.proc is not None
                rc = j.proc.poll()
                if rc is not None:
                    self.finish(j, rc)
                elif self.now() - j.started > j.timeout:
                    self.kill(j)
                    self.finish(j, None)
            for j in self.jobs.values():
                if j.state != "waiting":
                    continue
                bad = [d for d in j.deps if self.jobs[d].state in ("failed", "skipped")]
                if bad:
                    j.state = "skipped"
                    j.why = f"not run: {bad[0]} failed"
                    self.say(f"FAILED: {j.name} ({j.why})")
            ready = sorted(
                (j for j in self.jobs.values()
                 if j.state == "waiting" and all(self.jobs[d].state == "passed" for d in j.deps)),
                key=lambda j: -j.priority,
            )
            for j in ready:
                if self.fits(j):
                    self.start(j)
            if not self.running() and not any(j.state == "waiting" for j in self.jobs.values()):
                break
            if not self.running() and not ready:
                # Waiting jobs whose dependencies can never pass (a cycle): fail them.
                for j in self.jobs.values():
                    if j.state == "waiting":
                        j.state = "skipped"
                        j.why = "not run: its dependencies never ran"
                continue
            time.sleep(0.2)
        return self.summary()

    def summary(self) -> int:
        done = [j for j in self.jobs.values() if j.state in ("passed", "failed")]
        print("\n==> the slowest jobs", flush=True)
        for j in sorted(done, key=lambda j: j.started - j.ended)[:10]:
            print(f"  {j.ended - j.started:6.0f} s  {j.name}")
        failed = [j for j in self.jobs.values() if j.state in ("failed", "skipped")]
        passed = [j for j in self.jobs.values() if j.state == "passed"]
        print("\n==> summary", flush=True)
        for j in failed:
            print(f"FAILED: {j.name} ({j.why})")
        print(f"{len(passed)} passed, {len(failed)} failed, in {self.now():.0f} s", flush=True)
        return 0 if not failed else 1
