"""The Python member of the fleet trial (tests/client/lease_fleet.sh): sno_pg.lease's
LeasedGenerator (python/sno_pg/lease.py) on one lease at a time, one thread calling next_id().

    python fleet_py.py --dsn DSN --holder NAME --seconds S --ttl T --out IDS --leases LEASES
        [--data-dsn DSN --table T] [--rate N]

It records what the trial needs to check every ID against the lease it was stamped in, also for
leases the promoted registry never heard of (the lost tail of an asynchronous failover):
  --leases: a line per lease it was given and each later expires_at it was told:
            TOKEN, LEASE, PARTITION, SEQUENCE_MIN, SEQUENCE_MAX, NOT_BEFORE, EXPIRES_AT, HOLDER
            (tab-separated);
  --out:    a line per ID, "ID<tab>TOKEN", written and flushed before the ID goes anywhere else
            (a process killed with SIGKILL leaves in the file every ID it let out of it);
  --table:  then each batch copied into the table (id, lease, batch, token) of --data-dsn.
The lease of an ID: the generator's lease read just before and just after next_id(); when the
background thread switched leases in between, the one whose partition and slice hold the ID.

The first acquire is retried (every 200 ms) while the registry is down or a standby. Refusals
(OutsideWindow) are counted, the first few and the first after each run of IDs printed with the
time. At the end (--seconds, or SIGTERM) the generator is closed (its lease released) and one
line goes to stderr: "fleet-py: ids=N refused=N leases=N wall=UNIX-TIME" (this process's clock).
"""

import argparse
import os
import signal
import sys
import threading
import time
from datetime import datetime, timezone

# SIGTERM ends the run (the lease released), from the start: before the slow imports.
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())

import psycopg  # noqa: E402

from sno_pg import sno_partition, sno_sequence  # noqa: E402
from sno_pg.lease import LeasedGenerator, LeaseError  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--dsn", required=True)
p.add_argument("--holder", required=True)
p.add_argument("--seconds", type=float, default=10)
p.add_argument("--ttl", type=float, default=2)
p.add_argument("--sequences", type=int, default=1024)
p.add_argument("--rate", type=int, default=1000, help="IDs a second (about)")
p.add_argument("--out", required=True)
p.add_argument("--leases", required=True)
p.add_argument("--data-dsn")
p.add_argument("--table")
args = p.parse_args()

# Under libfaketime (0.9.10) Python 3.11's time.sleep fails with EINVAL (it is clock_nanosleep on
# CLOCK_MONOTONIC with TIMER_ABSTIME, which libfaketime's wrapper mangles): there, this process
# and its generator sleep with Event.wait (a condition wait on the monotonic clock) instead.
faked = "faketime" in os.environ.get("LD_PRELOAD", "")
sleep = threading.Event().wait if faked else time.sleep
deadline = time.monotonic() + args.seconds


def now():
    return datetime.now(timezone.utc).strftime("%H:%M:%S.%f")[:-3]


def say(msg):
    print(f"{now()} {msg}", file=sys.stderr, flush=True)


ids_f = open(args.out, "a")
leases_f = open(args.leases, "a")
data = psycopg.connect(args.data_dsn, autocommit=True) if args.table else None

gen = None
while gen is None:
    try:
        gen = LeasedGenerator(args.dsn, holder=args.holder, ttl=args.ttl, sequences=args.sequences,
                              **({"sleep": sleep} if faked else {}))
    except Exception as e:  # the registry down, or a standby: retried
        say(f"acquire: {e!r} (again in 200 ms)")
        if stop.wait(0.2) or time.monotonic() >= deadline:
            print("fleet-py: ids=0 refused=0 leases=0", file=sys.stderr, flush=True)
            sys.exit(0)

told = {}  # token -> the latest expires_at told, as written
dirty = []


def note(lease):
    if lease is None:
        return
    if told.get(lease.token) != lease.expires_at:
        told[lease.token] = lease.expires_at
        dirty.append(lease)


def holds(lease, id):
    return (lease is not None and sno_partition(id) == lease.partition
            and lease.sequence_min <= sno_sequence(id) <= lease.sequence_max)


ids = refused = batches = 0
batch = []
recent = []  # the latest leases this generator was told of (distinct tokens), oldest first
last_ok = True


def flush():
    global batches
    for l in dirty:
        leases_f.write(f"{l.token}\t{l.lease}\t{l.partition}\t{l.sequence_min}\t{l.sequence_max}\t"
                       f"{l.not_before.isoformat()}\t{l.expires_at.isoformat()}\t{args.holder}\n")
    dirty.clear()
    leases_f.flush()
    if not batch:
        return
    ids_f.write("".join(f"{i}\t{l.token}\n" for i, l in batch))
    ids_f.flush()
    if data is not None:
        batches += 1
        label = f"{args.holder}/{batches}"
        for attempt in range(300):
            try:
                with data.cursor().copy(f"COPY {args.table} (id, lease, batch, token) FROM STDIN") as cp:
                    for i, l in batch:
                        cp.write_row((i, l.lease, label, l.token))
                break
            except psycopg.Error as e:
                say(f"insert: {e!r}")
                sleep(0.2)
    batch.clear()


per_tick = max(1, args.rate // 100)
note(gen.lease)
last_flush = time.monotonic()
while not stop.is_set() and time.monotonic() < deadline:
    for _ in range(per_tick):
        before = gen.lease
        try:
            i = gen.next_id()
        except LeaseError as e:
            refused += 1
            if refused <= 5 or last_ok:
                say(f"refused ({refused}): {e}")
            last_ok = False
            sleep(0.01)
            break
        after = gen.lease
        last_ok = True
        note(before)
        note(after)
        # The lease the ID was stamped under: the one whose partition and slice it has, among
        # the current one and those before it (after a switch the generator goes on stamping
        # under the replaced lease while this clock is before the new window).
        for l in (after, before):
            if l is not None and (not recent or recent[-1].token != l.token):
                recent[:] = [r for r in recent if r.token != l.token][-3:] + [l]
        lease = next((l for l in reversed(recent) if holds(l, i)), after or before)
        ids += 1
        batch.append((i, lease))
    if len(batch) >= 500 or time.monotonic() - last_flush >= 0.05:
        flush()
        last_flush = time.monotonic()
    sleep(0.01)
flush()
gen.close()
# wall: this process's clock (libfaketime's, under it) at the end, for the trial to compare.
print(f"fleet-py: ids={ids} refused={refused} leases={len(told)} wall={time.time():.3f}", file=sys.stderr, flush=True)
