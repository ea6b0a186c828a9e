"""What `bash .ci/test` runs, as jobs for the runner (.ci/runner.py).

    python3 .ci/plan.py [--list] [--only PATTERN] "15 16 17 18"

The set-up (Debian packages, Rust, cargo-pgrx, the PostgreSQL builds) has run before, in
`.ci/test`. Then, side by side as their needs allow:
- lint: rustfmt, clippy on the pure library and on the extension, rustdoc's links, no pgrx in
  the pure library, the manual's links and contents (tests/docs/check.py), promtool on the
  alerts, the runner's own tests (tests/ci);
- tier 1: the pure Rust tests (cargo test, no pgrx);
- per major V: its release package (.ci/package, one release build that serves every test of
  V), installed as the README says (`install/V`); the golden files and the golden file without
  preload, each on a server of its own; every client test of tests/client/ that runs on V,
  each as its header declares (below); on the oldest and the newest major the #[pg_test] tier;
- ALTER EXTENSION sno UPDATE from 0.1.0 (newest major) and from every release (oldest major),
  and pg_upgrade from 15 to 18; logical replication from 15 to 18 (tests/client/replication.sh),
  and the manual's major upgrade by logical replication (tests/upgrade/by_replication.sh).

A client test declares what it needs in one header line, `# ci: KEY=VALUE ...`:
- `majors=all|ends|15`: every major, the oldest and the newest, or PostgreSQL 15 only;
- `server=yes|no`: a server of its own of that major with sno preloaded, passed as the
  SOCKET_DIR and PORT arguments (yes), or none (it starts its own nodes);
- `cpu=0|1|2`: cores it keeps busy (builds, load generators); 0 for a test that mostly waits;
- `excl=NAME,...`: resources it must hold alone (`machine`: nothing else runs beside it);
- `timeout=S` (default 900) and `estimate=S` (its usual duration, for the schedule).
Every test gets a block of ports of its own (SNO_JOB_PORT is its PORT argument); its nodes take
PORT+offset within the block (offsets below 1000).
"""

from __future__ import annotations

import fnmatch
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from runner import Job, Runner  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JOB = ["bash", os.path.join(ROOT, ".ci", "job.sh")]
LIB_FEATURES = "serde,postgres,sqlx,diesel,sea-orm,lease,lease-postgres,lease-tokio-postgres"
GOLDEN = ["sno_type", "sno_generate", "sno_time_predicates", "sno_text_ops", "sno_time_partitions"]


def bash(script: str) -> list[str]:
    """A command run in the repository with .ci/lib.sh's helpers."""
    return ["bash", "-c", f'source "{ROOT}/.ci/lib.sh" && cd "{ROOT}" && {script}']


def declared(path: str) -> dict[str, str]:
    """A client test's `# ci:` line."""
    d = {"majors": "all", "server": "yes", "cpu": "0", "excl": "", "timeout": "900", "estimate": "60"}
    with open(path) as f:
        for line in f:
            m = re.match(r"#\s*ci:\s*(.*)", line)
            if m:
                for kv in m.group(1).split():
                    k, _, v = kv.partition("=")
                    if k not in d:
                        raise SystemExit(f"{path}: unknown ci key {k!r}")
                    d[k] = v
                return d
    raise SystemExit(f"{path}: no '# ci:' line (see .ci/plan.py)")


def plan(versions: list[str]) -> list[Job]:
    first, newest = versions[0], versions[-1]
    ends = {first, newest}
    jobs: list[Job] = []
    add = jobs.append

    # --- lint and the pure tier: the main target directory, one cargo at a time --------------
    cargo = {"cargo"}
    add(Job("lint/fmt", ["cargo", "fmt", "--check"], estimate=2))
    add(Job("lint/clippy-lib", ["cargo", "clippy", "--all-targets", "--no-default-features",
            "--features", LIB_FEATURES, "--", "-D", "warnings"], cpu=2, excl=cargo, estimate=40))
    add(Job(f"lint/clippy-pg{first}", ["cargo", "clippy", "--all-targets", "--no-default-features",
            "--features", f"pg{first} pg_test", "--", "-D", "warnings"], cpu=2, excl=cargo, estimate=50))
    add(Job("lint/no-pgrx", bash(
        f'deps="$(cargo tree -e normal --no-default-features --features "{LIB_FEATURES}" --prefix none)" && '
        '! grep -E "^(pgrx|bindgen)" <<<"$deps" && echo "no pgrx or bindgen among $(wc -l <<<"$deps") lines"'),
        excl=cargo, estimate=2))
    add(Job("lint/rustdoc", bash(f'RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --no-default-features '
            f'--features "{LIB_FEATURES}"'), cpu=2, excl=cargo, estimate=40))
    add(Job("lint/docs", ["python3", "tests/docs/check.py"], estimate=2))
    add(Job("lint/runner", ["python3", "-m", "unittest", "discover", "-s", "tests/ci"], estimate=5))
    add(Job("lint/promtool", bash("promtool check rules doc/monitoring/sno-alerts.yml && "
            "promtool test rules doc/monitoring/sno-alerts.test.yml"), estimate=2))
    add(Job("tier1", ["cargo", "test", "--no-default-features", "--features", LIB_FEATURES],
            cpu=2, excl=cargo, estimate=100, timeout=1800))

    # --- per major ----------------------------------------------------------------------------
    for v in versions:
        # The package's release build is the one build of V's extension the tests use.
        add(Job(f"package/{v}", JOB + ["package", v], cpu=2, excl=cargo,
                estimate=200, timeout=1800))
        # Replacing V's installed files: alone on that installation.
        add(Job(f"install/{v}", JOB + ["install", v], deps=[f"package/{v}"], excl={f"pg{v}"},
                estimate=3))
        if v in ends:
            # A private copy of V (pgrx installs its debug build there): beside everything of V.
            add(Job(f"pgtest/{v}", JOB + ["pgtest", v], cpu=2, excl={"cargo-pgtest"},
                    ports=True, estimate=420, timeout=2400))
        golden = GOLDEN + (["sno_soft_errors"] if int(v) >= 16 else []) + (["sno_leases"] if v == "15" else [])
        add(Job(f"golden/{v}", JOB + ["golden", v] + golden, deps=[f"install/{v}"], ports=True, estimate=15))
        add(Job(f"nopreload/{v}", JOB + ["nopreload", v], deps=[f"install/{v}"], ports=True, estimate=5))
        for t in sorted(os.listdir(os.path.join(ROOT, "tests", "client"))):
            if not t.endswith(".sh"):
                continue
            name = t[:-3]
            d = declared(os.path.join(ROOT, "tests", "client", t))
            majors = d["majors"]
            if not (majors == "all" or (majors == "ends" and v in ends) or majors == v):
                continue
            add(Job(f"client/{v}/{name}", JOB + ["client", v, name], deps=[f"install/{v}"],
                    cpu=int(d["cpu"]), excl={e for e in d["excl"].split(",") if e},
                    ports=True, timeout=int(d["timeout"]), estimate=int(d["estimate"])))

    # --- updates and pg_upgrade -----------------------------------------------------------------
    add(Job(f"update/from-0.1.0-pg{newest}", bash(
        f'bash tests/upgrade/extension_update.sh "$(relocatable_home {newest})" '
        f'"$(package_tarball {newest})" "$SNO_JOB_PORT"'),
        deps=[f"package/{newest}"], cpu=1, ports=True, estimate=360, timeout=1800))
    add(Job(f"update/every-release-pg{first}", bash(
        f'bash tests/upgrade/update_paths.sh "$(relocatable_home {first})" '
        f'"$(package_tarball {first})" "$SNO_JOB_PORT"'),
        deps=[f"package/{first}"], ports=True, estimate=60))
    if "15" in versions and "18" in versions:
        add(Job("pg_upgrade/15-18", bash(
            'bash tests/upgrade/pg_upgrade.sh "$("$(pg_config_for 15)" --bindir)" '
            '"$("$(pg_config_for 18)" --bindir)" "$SNO_JOB_PORT"'),
            deps=["install/15", "install/18"], ports=True, estimate=120, timeout=1200))
        add(Job("replication/15-18", bash(
            'SNO_PUBLISHER_BINDIR="$("$(pg_config_for 15)" --bindir)" SNO_PG_MAJOR=18 '
            'bash tests/client/replication.sh "$SNO_WORK/jobs" "$SNO_JOB_PORT" '
            '"$("$(pg_config_for 18)" --bindir)"'),
            deps=["install/15", "install/18"], ports=True, estimate=40, timeout=900))
        add(Job("upgrade/by-replication-15-18", bash(
            'bash tests/upgrade/by_replication.sh "$("$(pg_config_for 15)" --bindir)" '
            '"$("$(pg_config_for 18)" --bindir)" "$SNO_JOB_PORT"'),
            deps=["install/15", "install/18"], ports=True, estimate=30, timeout=900))
    return jobs


def main() -> int:
    args = sys.argv[1:]
    listing = "--list" in args
    only = None
    if "--only" in args:
        i = args.index("--only")
        only = args[i + 1]
        del args[i:i + 2]
    args = [a for a in args if a != "--list"]
    versions = (args[0] if args else "15 16 17 18").split()
    jobs = plan(versions)
    if only:
        keep = {j.name for j in jobs if fnmatch.fnmatch(j.name, only)}
        # What they wait for, too.
        todo = list(keep)
        by = {j.name: j for j in jobs}
        while todo:
            for d in by[todo.pop()].deps:
                if d not in keep:
                    keep.add(d)
                    todo.append(d)
        jobs = [j for j in jobs if j.name in keep]
    if listing:
        for j in jobs:
            print(f"{j.name:45} cpu={j.cpu} ports={'yes' if j.ports else 'no'} "
                  f"after={','.join(j.deps) or '-'}")
        return 0
    width = int(os.environ.get("SNO_CI_WIDTH", "6"))
    cpus = int(os.environ.get("SNO_CI_CPUS", str(os.cpu_count() or 2)))
    work = os.environ.get("SNO_WORK", "/tmp/sno-work")
    return Runner(jobs, width=width, cpus=cpus, logdir=os.path.join(work, "ci-logs")).run()


if __name__ == "__main__":
    sys.exit(main())
