"""sno_pg.lease against a real server (run by tests/client/lease_python.sh, which makes the roles
and databases): python lease_python.py HOST PORT DB DB_EXT

  APP     sno_lease_py_app, with EXECUTE on the three lease functions;
  NOGRANT sno_lease_py_nogrant, without;
  DB      a database with sno, and the table ids (id sno, holder text) the IDs go into;
  DB_EXT  a database with sno in schema ext (not on the app role's search_path).

Prints an ok:/FAIL: line per check, then 'N passed, N failed'; exits 1 on any failure.
"""

import os
import re
import subprocess
import sys
import threading
import time
from datetime import timedelta

import psycopg

from sno_pg import sno_partition, sno_sequence, sno_time
from sno_pg.lease import GeneratorClosed, LeasedGenerator, OutsideWindow

host, port, db, db_ext = sys.argv[1:5]
APP, NOGRANT = "sno_lease_py_app", "sno_lease_py_nogrant"
TTL = 2  # seconds: renew_after about 0.67 s after each acquire or renewal
FUNCTIONS = ("sno_lease_acquire(text, interval, int4), sno_lease_renew(bigint, uuid, interval), "
             "sno_lease_release(bigint, uuid)")


def dsn(user, dbname=db):
    return f"host={host} port={port} dbname={dbname} user={user}"


ADMIN = dsn("postgres")
passed = failed = 0


def check(what, got, want):
    global passed, failed
    if got == want:
        print(f"ok: {what}", flush=True)
        passed += 1
    else:
        print(f"FAIL: {what}: got {got!r}, want {want!r}", flush=True)
        failed += 1


def sql(query, params=None, user="postgres"):
    with psycopg.connect(dsn(user), autocommit=True) as c:
        cur = c.execute(query, params)
        return cur.fetchall() if cur.description else None


def sqlstate_of(fn):
    try:
        fn()
    except psycopg.Error as e:
        return e.sqlstate
    return None


def insert(rows):
    """COPY (id, holder) rows into ids."""
    with psycopg.connect(ADMIN, autocommit=True) as c, c.cursor() as cur:
        with cur.copy("COPY ids (id, holder) FROM STDIN") as copy:
            for r in rows:
                copy.write_row(r)


def lease_row(n):
    return sql("SELECT state, renewed_at IS NOT NULL, released_at IS NOT NULL, holder, expires_at, acquired_at "
               "FROM sno_leases WHERE lease = %s", (n,))[0]


# --- misuse: clear SQLSTATEs at construction --------------------------------------------------

check("a role without EXECUTE on the lease functions: 42501",
      sqlstate_of(lambda: LeasedGenerator(dsn(NOGRANT), holder="x", ttl=TTL)), "42501")
check("sequences=6 (not a power of two from 8): 22023",
      sqlstate_of(lambda: LeasedGenerator(dsn(APP), holder="x", ttl=TTL, sequences=6)), "22023")
check("ttl=0.5 s (under a second): 22023",
      sqlstate_of(lambda: LeasedGenerator(dsn(APP), holder="x", ttl=0.5)), "22023")

# A connection factory whose connections are not in autocommit (the generator sets it), and sno
# in a schema that is not on the search_path.
with LeasedGenerator(lambda: psycopg.connect(dsn(APP)), holder="factory", ttl=TTL) as g:
    ids = [g.next_id() for _ in range(100)]
    insert((i, "factory") for i in ids)
check("a factory of connections not in autocommit", len(ids), 100)
with LeasedGenerator(dsn(APP, db_ext), holder="ext", ttl=TTL, schema="ext") as g:
    check("sno in schema ext: schema='ext'", len(g.next_id()), 16)

# The README's SQL (python/README.md: the role, its grants, the table) and its example, both run
# as printed, the example as that role.
readme = open(os.path.join(os.path.dirname(__file__), "..", "..", "python", "README.md"), encoding="utf-8").read()
setup = re.search(r"once, as the database's owner:\n\n```sql\n(.*?)```\n", readme, re.S)
with psycopg.connect(ADMIN, autocommit=True) as c:
    c.execute(setup.group(1) if setup else "SELECT 1/0")
example = re.search(r"<!-- lease-example -->\n```python\n(.*?)```\n", readme, re.S)
run = subprocess.run([sys.executable, "-c", example.group(1) if example else "raise SystemExit(9)"],
                     env={**os.environ, "DATABASE_URL": dsn("orders_api")}, capture_output=True, text=True,
                     timeout=30)
check("python/README.md's example runs as printed", (run.returncode, run.stderr), (0, ""))
check("... and inserted its two orders", sql("SELECT count(*) FROM orders")[0][0], 2)
sql("INSERT INTO ids (id, holder) SELECT id, 'orders-api' FROM orders")

# doc/services.md's Python block, run as printed: one ID, in the lease it took (released).
page = open(os.path.join(os.path.dirname(__file__), "..", "..", "doc", "services.md"), encoding="utf-8").read()
block = re.search(r"<!-- lease-python -->\n```python\n(.*?)```\n", page, re.S)
run = subprocess.run([sys.executable, "-c", block.group(1) if block else "raise SystemExit(9)"],
                     env={**os.environ, "DATABASE_URL": dsn(APP)}, capture_output=True, text=True, timeout=30)
printed = run.stdout.strip()
check("doc/services.md's Python block runs as printed", (run.returncode, run.stderr, len(printed)), (0, "", 16))
check("... its ID is in a released lease of orders-api's slice",
      sql("SELECT count(*) FROM sno_leases WHERE holder = 'orders-api' AND state = 'released' AND partition = %s "
          "AND %s BETWEEN sequence_min AND sequence_max", (sno_partition(printed), sno_sequence(printed)))[0][0]
      if len(printed) == 16 else None, 1)
if len(printed) == 16:
    sql("INSERT INTO ids (id, holder) VALUES (%s, 'orders-api')", (printed,))

# --- the main run: threads, renewals, a forked child, a slice used up ------------------------

main = LeasedGenerator(dsn(APP), holder="main", ttl=TTL, meta=1)
first = main.lease
out = []  # lists of IDs, one per thread
stop = threading.Event()


def work(k):
    mine = []
    out.append(mine)
    while not stop.is_set():
        for _ in range(200):
            mine.append(main.next_id())
        time.sleep(0.01)


threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
for t in threads:
    t.start()
time.sleep(1.0)

# A forked child (while the threads stamp): it must take a lease of its own, renew it, release it.
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    code = 1
    try:
        os.close(r)
        child_ids = []
        t_end = time.monotonic() + 2.5  # past a renewal of its own lease
        while time.monotonic() < t_end:
            child_ids.extend(main.next_id() for _ in range(100))
            time.sleep(0.01)
        lease, renewals = main.lease.lease, main.renewals
        main.close()
        insert((i, "child") for i in child_ids)
        os.write(w, f"{lease} {renewals} {len(child_ids)}".encode())
        code = 0
    finally:
        os._exit(code)
os.close(w)
with os.fdopen(r) as f:
    child_report = f.read().split()
_, status = os.waitpid(pid, 0)
check("the forked child ran (exit status)", status, 0)
child_lease, child_renewals, child_count = (int(x) for x in child_report[:3]) if child_report else (0, 0, 0)
check("the child's lease is not the parent's", child_lease not in (0, first.lease), True)
check("the child renewed its own lease", child_renewals >= 1, True)
check("the child's lease was released when it closed", lease_row(child_lease)[2] if child_lease else None, True)

time.sleep(max(0.0, 5.0 - 3.5))
stop.set()
for t in threads:
    t.join()
main_ids = [i for o in out for i in o]
check("the parent went on under its first lease", (main.lease.lease, main.acquisitions), (first.lease, 1))
check("renewed in the background (at least 4 renewals in 5 s with ttl 2 s)", main.renewals >= 4, True)
beyond = sum(sno_time(i) >= first.expires_at for i in main_ids)
check("IDs stamped after the first window's end, under renewals", beyond > 0, True)
state, renewed, released, holder, expires_at, acquired_at = lease_row(first.lease)
check("sno_leases: the lease renewed, active, expires_at moved on",
      (state, renewed, expires_at > first.expires_at), ("active", True, True))

# A small slice used up: the next units, all inside the window.
with LeasedGenerator(dsn(APP), holder="slice8", ttl=TTL, sequences=8) as g:
    small = [g.next_id() for _ in range(2000)]
    lease8 = g.lease
insert((i, "slice8") for i in small)
check("sequences=8: 2000 IDs, increasing, in 8 sequence numbers",
      (small == sorted(small), len(set(small)), {sno_sequence(i) for i in small} ==
       set(range(lease8.sequence_min, lease8.sequence_max + 1))), (True, 2000, True))

# --- close releases; the old token is refused ------------------------------------------------

main.close()
insert((i, "main") for i in main_ids)
check("close() released the lease (sno_leases.released_at)", lease_row(first.lease)[2], True)
check("renewing a released lease: 55000", sqlstate_of(lambda: sql(
    "SELECT sno_lease_renew(lease => %s, token => %s, ttl => '2 s')", (first.lease, first.token), APP)), "55000")
try:
    main.next_id()
    closed_refused = False
except GeneratorClosed:
    closed_refused = True
check("next_id() after close() raises GeneratorClosed", closed_refused, True)

# --- renewal failing: stamping stops at expires_at, then resumes under a new lease -----------

ref = LeasedGenerator(dsn(APP), holder="refuse", ttl=TTL)
old = ref.lease
sql(f"REVOKE EXECUTE ON FUNCTION sno_lease_acquire(text, interval, int4), "
    f"sno_lease_renew(bigint, uuid, interval) FROM {APP}")
refused_ids, refusal, t0 = [], None, time.monotonic()
while time.monotonic() - t0 < 4 * TTL:
    try:
        refused_ids.append(ref.next_id())
    except OutsideWindow as e:
        refusal = e
        break
    time.sleep(0.001)
check("renewal refused (42501), no new lease: OutsideWindow at the window's end",
      (refusal is not None, getattr(getattr(refusal, "last_error", None), "sqlstate", None)), (True, "42501"))
still = 0
for _ in range(20):  # and only errors after it, never an ID
    try:
        ref.next_id()
        still += 1
    except OutsideWindow:
        pass
    time.sleep(0.01)
check("after the end: every call refused", still, 0)
last_before = max(sno_time(i) for i in refused_ids)
sql(f"GRANT EXECUTE ON FUNCTION sno_lease_acquire(text, interval, int4), "
    f"sno_lease_renew(bigint, uuid, interval) TO {APP}")
resumed, t0 = None, time.monotonic()
while resumed is None and time.monotonic() - t0 < 5:
    try:
        resumed = ref.next_id()
    except OutsideWindow:
        time.sleep(0.05)
check("EXECUTE granted again: stamping resumes under a new lease",
      (resumed is not None, ref.lease.lease != old.lease), (True, True))
new_lease = ref.lease
refused_ids += [resumed] + [ref.next_id() for _ in range(100)]
ref.close()
insert((i, "refuse") for i in refused_ids if i)
old_end = lease_row(old.lease)[4]
check("the old lease's IDs went on to its expires_at (sno_leases), not past it",
      old_end - timedelta(seconds=0.5) <= last_before < old_end, True)
check("both leases released", (lease_row(old.lease)[2], lease_row(new_lease.lease)[2]), (True, True))

# --- over everything: no duplicate, every ID inside a window of its holder's lease -----------

sql("INSERT INTO ids (id, holder) SELECT sno_generate(1), 'server' FROM generate_series(1, 10000)")
total, dupes = sql("SELECT count(*), count(*) - count(DISTINCT id) FROM ids")[0]
check(f"zero duplicates among {total} IDs (leased, forked, and sno_generate's)", dupes, 0)
outside = sql("""
    SELECT i.holder, count(*) FROM ids i
    WHERE i.holder <> 'server' AND NOT EXISTS (
        SELECT FROM sno_leases l
        WHERE l.holder = CASE i.holder WHEN 'child' THEN 'main' ELSE i.holder END  -- a child keeps the name
          AND l.partition = sno_partition(i.id)
          AND sno_sequence(i.id) BETWEEN l.sequence_min AND l.sequence_max
          AND sno_time(i.id) >= l.not_before AND sno_time(i.id) < l.expires_at)
    GROUP BY 1 ORDER BY 1""")
check("every leased ID inside its lease's window, partition and slice (sno_leases)", outside, [])
child_outside = sql("""
    SELECT count(*) FROM ids i JOIN sno_leases l ON l.lease = %s
    WHERE i.holder = 'child' AND NOT (l.partition = sno_partition(i.id)
        AND sno_sequence(i.id) BETWEEN l.sequence_min AND l.sequence_max
        AND sno_time(i.id) >= l.not_before AND sno_time(i.id) < l.expires_at)""", (child_lease,))[0][0]
check("every ID of the child inside the child's own lease", child_outside, 0)
per = dict(sql("SELECT holder, count(*) FROM ids GROUP BY 1"))
check("IDs of every generator recorded", sorted(per),
      sorted(["factory", "main", "child", "slice8", "refuse", "server", "orders-api"]))
leaked = sql("SELECT count(*) FROM sno_leases WHERE grantee = %s AND state = 'active'", (APP,))[0][0]
check("no lease left active", leaked, 0)

print(f"({len(main_ids)} IDs from 4 threads, {child_count} from the child, {main.renewals} renewals)")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
