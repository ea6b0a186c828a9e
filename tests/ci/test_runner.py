"""The test runner's own tests (.ci/runner.py), with jobs that only sleep and write files.

    python3 -m unittest discover -s tests/ci

Checked: a job starts only after what it waits for passed, and not at all after a failure; no
two running jobs ever hold one port block or one exclusive resource; CPU-bound jobs never
oversubscribe the cores; a job past its limit is killed (its whole process group) and fails as
HUNG with its log printed; the last line counts passed and failed jobs.
"""

import io
import os
import sys
import tempfile
import time
import unittest
from contextlib import redirect_stdout

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", ".ci"))
from runner import Job, Runner  # noqa: E402


def sh(script: str) -> list[str]:
    return ["bash", "-c", script]


class RunnerTest(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp()
        self.spans = os.path.join(self.dir, "spans")

    def span(self, name: str, seconds: float, extra: str = "") -> list[str]:
        """A job that records when it ran, its port block and its name, and sleeps."""
        return sh(
            f'echo "start $(date +%s.%N) {name} ${{SNO_JOB_PORT:-0}}" >>{self.spans}; {extra} '
            f'sleep {seconds}; echo "end $(date +%s.%N) {name} ${{SNO_JOB_PORT:-0}}" >>{self.spans}'
        )

    def run_jobs(self, jobs: list[Job], width: int = 8, cpus: int = 2) -> tuple[int, str]:
        out = io.StringIO()
        with redirect_stdout(out):
            rc = Runner(jobs, width=width, cpus=cpus, logdir=os.path.join(self.dir, "logs")).run()
        return rc, out.getvalue()

    def intervals(self) -> dict[str, tuple[float, float, int]]:
        got: dict[str, list] = {}
        with open(self.spans) as f:
            for line in f:
                kind, t, name, port = line.split()
                got.setdefault(name, [0.0, 0.0, int(port)])
                got[name][0 if kind == "start" else 1] = float(t)
        return {k: (v[0], v[1], v[2]) for k, v in got.items()}

    def test_dependencies_and_failures(self) -> None:
        jobs = [
            Job("a", self.span("a", 0.3)),
            Job("b", self.span("b", 0.1), deps=["a"]),
            Job("bad", sh("echo the reason; exit 3")),
            Job("after-bad", self.span("after-bad", 0.1), deps=["bad"]),
        ]
        rc, out = self.run_jobs(jobs)
        self.assertEqual(rc, 1)
        iv = self.intervals()
        self.assertGreaterEqual(iv["b"][0], iv["a"][1])
        self.assertNotIn("after-bad", iv)
        self.assertIn("FAILED: bad (exit 3", out)
        self.assertIn("the reason", out)  # its log, printed whole
        self.assertIn("FAILED: after-bad (not run: bad failed)", out)
        self.assertTrue(out.rstrip().splitlines()[-1].startswith("2 passed, 2 failed, in "))

    def test_ports_and_exclusive_resources_are_never_shared(self) -> None:
        jobs = [Job(f"p{i}", self.span(f"p{i}", 0.4), ports=True) for i in range(6)]
        jobs += [Job(f"x{i}", self.span(f"x{i}", 0.2), excl={"one"}) for i in range(3)]
        rc, _ = self.run_jobs(jobs)
        self.assertEqual(rc, 0)
        iv = self.intervals()
        names = list(iv)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                overlap = iv[a][0] < iv[b][1] and iv[b][0] < iv[a][1]
                if overlap and a.startswith("p") and b.startswith("p"):
                    self.assertNotEqual(iv[a][2], iv[b][2], f"{a} and {b} shared ports")
                if a.startswith("x") and b.startswith("x"):
                    self.assertFalse(overlap, f"{a} and {b} held 'one' together")

    def test_cores_are_not_oversubscribed(self) -> None:
        jobs = [Job(f"c{i}", self.span(f"c{i}", 0.2), cpu=2) for i in range(3)]
        jobs += [Job(f"w{i}", self.span(f"w{i}", 0.3)) for i in range(3)]
        rc, _ = self.run_jobs(jobs, cpus=2)
        self.assertEqual(rc, 0)
        iv = self.intervals()
        cpu = [iv[f"c{i}"] for i in range(3)]
        for i, a in enumerate(cpu):
            for b in cpu[i + 1:]:
                self.assertFalse(a[0] < b[1] and b[0] < a[1], "two 2-core jobs ran together")
        # The waiting jobs ran beside them.
        self.assertLess(iv["w0"][0], cpu[-1][0])

    def test_a_hang_is_killed_and_named(self) -> None:
        pidfile = os.path.join(self.dir, "child")
        jobs = [Job("hangs", sh(f"sleep 300 & echo $! >{pidfile}; echo hanging; wait"), timeout=1)]
        t0 = time.monotonic()
        rc, out = self.run_jobs(jobs)
        self.assertEqual(rc, 1)
        self.assertLess(time.monotonic() - t0, 30)
        self.assertIn("FAILED: hangs (HUNG: no end after 1 s, killed", out)
        self.assertIn("hanging", out)
        with open(pidfile) as f:
            child = int(f.read())
        # The background child went with its process group: gone, or a zombie its new parent
        # has not reaped yet.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with open(f"/proc/{child}/stat") as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
            except FileNotFoundError:
                state = "gone"
            if state in ("gone", "Z", "X"):
                break
            time.sleep(0.1)
        self.assertIn(state, ("gone", "Z", "X"))


if __name__ == "__main__":
    unittest.main()
