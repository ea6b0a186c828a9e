"""The Python part of the lease bench (issue 32): python lease_python_bench.py CONNINFO [SECONDS]

CONNINFO: a role that may lease (EXECUTE on sno_lease_acquire/renew/release, or a superuser) on a
database with sno 0.8.0 or later; sno_pg from python/ on PYTHONPATH and psycopg 3 installed.
Prints Markdown tables:

  - IDs per second in one thread, each measured for SECONDS (default 3), in this process:
    LeasedGenerator.next_id() (the 16-character str) and next_bytes() against uuid.uuid4() and
    str(uuid.uuid4()), with the ratios;
  - the cost of one acquire, renew and release (median of 20 each): as the generator makes them
    (a connection of its own per call) and the statement alone on an open connection.
"""

import statistics
import sys
import time
import uuid
from datetime import timedelta

import psycopg

from sno_pg.lease import LeasedGenerator, PsycopgRegistry

conninfo = sys.argv[1]
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 3.0
TTL = timedelta(seconds=60)


def rate(fn):
    """Calls per second of fn over `seconds` (in batches of 1,000)."""
    n, t0 = 0, time.perf_counter()
    end = t0 + seconds
    while True:
        for _ in range(1000):
            fn()
        n += 1000
        t = time.perf_counter()
        if t >= end:
            return n / (t - t0)


def after_pause_us(fn, pause=1.0, n=5):
    """The median time (µs) of one call right after `pause` seconds of idleness, n times."""
    times = []
    for _ in range(n):
        time.sleep(pause)
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e6)
    return statistics.median(times)


with LeasedGenerator(conninfo, holder="lease_python_bench", ttl=TTL, sequences=65536) as gen:
    rows = [
        ("LeasedGenerator.next_id() (str)", rate(gen.next_id)),
        ("LeasedGenerator.next_bytes()", rate(gen.next_bytes)),
        ("uuid.uuid4()", rate(uuid.uuid4)),
        ("str(uuid.uuid4())", rate(lambda: str(uuid.uuid4()))),
    ]
    paused = [("LeasedGenerator.next_id() (str)", after_pause_us(gen.next_id)),
              ("str(uuid.uuid4())", after_pause_us(lambda: str(uuid.uuid4())))]
u4 = rows[2][1]
print(f"| Python {sys.version.split()[0]}, one thread | IDs/s | / uuid.uuid4() |")
print("|---|---:|---:|")
for name, r in rows:
    print(f"| {name} | {r:,.0f} | {r / u4:.2f} |")
print()
print("| the first call after a 1 s pause (median of 5) | µs |")
print("|---|---:|")
for name, us in paused:
    print(f"| {name} | {us:.1f} |")


def median_ms(fn, n=20):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


reg = PsycopgRegistry(conninfo)
leases = []
per_call = {
    "acquire": median_ms(lambda: leases.append(reg.acquire("lease_python_bench", TTL, 1024))),
    "renew": median_ms(lambda: reg.renew(leases[-1], TTL)),
    "release": median_ms(lambda: reg.release(leases.pop())),
}
for lease in leases:
    reg.release(lease)
with psycopg.connect(conninfo, autocommit=True) as c:
    held = []

    def acquire():
        held.append(c.execute(reg._acquire, ("lease_python_bench", TTL, 1024)).fetchone())

    open_conn = {
        "acquire": median_ms(acquire),
        "renew": median_ms(lambda: c.execute(reg._renew, (held[-1][0], held[-1][1], TTL)).fetchone()),
        "release": median_ms(lambda: c.execute(reg._release, held.pop()[:2])),
    }
    for row in held:
        c.execute(reg._release, row[:2])
print()
print("| one call (median of 20, ms) | a connection per call (the generator) | on an open connection |")
print("|---|---:|---:|")
for k in ("acquire", "renew", "release"):
    print(f"| sno_lease_{k} | {per_call[k]:.2f} | {open_conn[k]:.2f} |")
