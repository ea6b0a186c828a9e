"""IDs made in your Python process under a partition lease: no duplicate by construction.

The sno extension (0.8.0 or later) coordinates the generators outside the database. It hands out
*leases*: a partition of its reserved range, a slice of that partition's sequence numbers and a
window of time ``[not_before, expires_at)`` in whole 4 ms units. Two leases that share a
partition and sequences never share a unit of time, and no lease covers a partition the
database's own ``sno_generate`` may use. A holder that stamps only units inside its window
therefore never makes an ID that another holder (or the server) makes, whatever the clocks say.

``LeasedGenerator`` takes a lease, makes IDs locally (a counter under a lock: no round trip per
ID), renews the lease in a background thread at its ``renew_after`` and refuses to stamp outside
the window: ``next_id()`` raises ``OutsideWindow`` (never a duplicate) when renewal has failed
for longer than the lease's life, and it works again once a renewal or a new lease succeeds.

    from sno_pg.lease import LeasedGenerator

    with LeasedGenerator("host=db dbname=app user=orders_api", holder="orders-api", ttl=60, meta=1) as gen:
        order_id = gen.next_id()    # a str of 16 characters, as the sno column prints it

The role needs ``EXECUTE`` on the three lease functions (they are not PUBLIC's)::

    GRANT EXECUTE ON FUNCTION sno_lease_acquire(text, interval, int4),
        sno_lease_renew(bigint, uuid, interval), sno_lease_release(bigint, uuid) TO orders_api;

Each call to the server (acquire, renew, release) opens a connection of its own in autocommit
and closes it: a renewal is one short connection every ``ttl / 3``. Give a conninfo string (or
URI), or a callable returning a new psycopg 3 connection (it is closed after the call). Needs
psycopg 3 (sno-pg is not on PyPI: ``pip install './python[lease]'`` in a clone of the sno
repository, or ``pip install 'sno-pg[lease] @ git+<the sno repository>#subdirectory=python'``);
this module imports it only when a generator is made with a conninfo.

What the generator does, in the order of the server's rules:

- it stamps only units ``u`` with ``not_before <= u < expires_at`` and sequences of its slice; if
  this machine's clock is before ``not_before`` (behind the server's), it waits up to a second,
  then raises ``OutsideWindow``;
- it renews at ``renew_after`` (measured on the server's clock, so a skewed clock here does not
  make it late) with the same ttl. When renewal fails with SQLSTATE 55000 (the lease expired,
  was released or is from before a failover of the registry) or 42501 (the token no longer
  matches), it acquires a new lease and switches to it, releasing the old one; until then it
  goes on stamping under the old one until its ``expires_at``. After the switch, while this
  machine's clock is still before the new lease's ``not_before`` (a clock behind the server's)
  and the old window lasts, it goes on stamping under the old lease (the server grants its slice
  to no one else before its ``expires_at``, released or not) rather than waiting. Any other
  error or a lost connection is retried with backoff;
- a process made by ``os.fork()`` (``multiprocessing``'s default on Linux, gunicorn's workers)
  never uses its parent's lease: its first ID acquires a lease of its own;
- ``close()``, the end of a ``with`` block and interpreter exit release the lease (best effort:
  an unreleased lease simply runs out at its ``expires_at``; a ``multiprocessing`` child ends
  with ``os._exit``, which skips the release unless its target calls ``close()``);
- units never go backwards: if the clock steps back, it keeps stamping from the last unit used;
  when a unit's slice is used up it goes on to the next unit (below ``expires_at``), and a new
  lease starts after the last unit stamped under the old one, so the IDs of one generator (with
  one meta byte) increase. With ``sequences=1024`` that is 256,000 IDs a second before IDs
  run ahead of the clock.

Sizing the ttl: the window is what you may stamp while the server is unreachable. With
``ttl=60`` a generator renews every 20 s and keeps working about 40 s into an outage of the
server; the slice it holds is unavailable to others until ``expires_at`` after a crash of this
process (nothing to clean up: it expires).
"""

import atexit
import logging
import os
import random
import socket
import threading
import time
import weakref
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Optional

from . import _text

__all__ = [
    "GeneratorClosed",
    "Lease",
    "LeaseError",
    "LeasedGenerator",
    "OutsideWindow",
    "PsycopgRegistry",
    "unit_of",
]

log = logging.getLogger("sno_pg.lease")

_EPOCH = datetime(2010, 1, 1, tzinfo=timezone.utc)
_EPOCH_NS = 1262304000 * 10**9
_UNIT_NS = 4_000_000
# SQLSTATEs of a renewal after which the lease must be given up for a new one.
NEW_LEASE_STATES = frozenset({"55000", "42501"})
# How long next_id() waits for a clock that is behind the window's start (seconds).
MAX_CLOCK_WAIT = 1.0


def unit_of(t):
    """The 4 ms unit since 2010-01-01 UTC of an aware datetime, or of Unix time in nanoseconds."""
    if isinstance(t, datetime):
        d = t - _EPOCH
        return ((d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds) // 4000
    return (t - _EPOCH_NS) // _UNIT_NS


class LeaseError(Exception):
    """The generator cannot give an ID (the base class of the two below)."""


class OutsideWindow(LeaseError):
    """No ID now: this moment is outside the lease's window.

    The lease ran out while renewal kept failing (the server unreachable, the role's EXECUTE
    revoked...), this machine's clock is ahead of its end or more than a second behind its
    start, or the slice of the window's last unit is used up. Transient: the generator keeps
    trying to renew or acquire in the background; ``last_error`` is its latest failure.
    """

    def __init__(self, message, last_error=None):
        super().__init__(message)
        self.last_error = last_error


class GeneratorClosed(LeaseError):
    """``close()`` was called (or the interpreter is exiting)."""


class _Slot:
    """One lease's stamping state: its window in units, its slice, and its cursor (the last unit
    and sequence stamped under it). Changed only under the generator's lock."""

    __slots__ = ("lease", "nb", "ex", "partition", "smin", "smax", "unit", "seq")

    def __init__(self, lease):
        self.lease = lease
        self.nb = unit_of(lease.not_before)
        self.ex = unit_of(lease.expires_at)
        self.partition = lease.partition
        self.smin = lease.sequence_min
        self.smax = lease.sequence_max
        self.unit = -1  # the last unit stamped under this lease (-1: none yet)
        self.seq = 0  # the last sequence stamped in that unit

    def take(self, now, last):
        """The unit of the next ID at clock unit ``now``, ``last`` being the last unit stamped
        under any lease (-1: none). If ``nb <= unit < ex`` the ID is taken: ``unit`` and ``seq``
        are its own. Otherwise nothing changes: below ``nb`` the clock is before the window; at
        or past ``ex`` the window is over (or the slice of its last unit used up).

        Units never go back: a lease goes on in the last unit stamped if it stamped it, else it
        starts after it (the lease it replaced stamped it), so the IDs keep increasing."""
        u = max(now, last if self.unit == last else last + 1)
        if u < self.nb:
            return u
        if u == self.unit:
            seq = self.seq + 1
            if seq > self.smax:  # this unit's slice is used up: the next unit
                u += 1
                seq = self.smin
        else:
            seq = self.smin
        if u < self.ex:
            self.unit, self.seq = u, seq
        return u


@dataclass(frozen=True)
class Lease:
    """A row of type sno_lease, and ``now``: the server's clock when it answered (or None)."""

    lease: int
    token: object
    partition: int
    sequence_min: int
    sequence_max: int
    not_before: datetime
    expires_at: datetime
    holder: str
    renew_after: datetime
    now: Optional[datetime] = None

    def same_grant(self, other):
        """Whether ``other`` is this lease renewed: all the same but the end and renew_after."""
        return (self.lease, self.partition, self.sequence_min, self.sequence_max, self.not_before) == (
            other.lease, other.partition, other.sequence_min, other.sequence_max, other.not_before)


class PsycopgRegistry:
    """The three SQL functions, called with psycopg 3, each on a connection of its own.

    ``connect``: a conninfo string or URI, or a callable returning a new connection (set to
    autocommit here if it is not; closed after the call). ``schema``: sno's schema when it is
    not on the role's search_path.
    """

    def __init__(self, connect, schema=None):
        import psycopg
        from psycopg import sql

        if isinstance(connect, str):
            conninfo = connect
            self._connect = lambda: psycopg.connect(conninfo, autocommit=True)
        elif callable(connect):
            self._connect = connect
        else:
            raise TypeError("connect: a conninfo str or a callable returning a psycopg connection")
        fn = (lambda name: sql.SQL("{}.{}").format(sql.Identifier(schema), sql.Identifier(name))) if schema \
            else (lambda name: sql.Identifier(name))
        self._acquire = sql.SQL("SELECT *, clock_timestamp() AS now FROM {}(holder => %s, ttl => %s, sequences => %s)"
                                ).format(fn("sno_lease_acquire"))
        self._renew = sql.SQL("SELECT *, clock_timestamp() AS now FROM {}(lease => %s, token => %s, ttl => %s)"
                              ).format(fn("sno_lease_renew"))
        self._release = sql.SQL("SELECT {}(lease => %s, token => %s)").format(fn("sno_lease_release"))

    def _call(self, query, params):
        conn = self._connect()
        try:
            if not conn.autocommit:
                conn.autocommit = True
            cur = conn.execute(query, params)
            row = cur.fetchone()
            names = [c.name for c in cur.description]
        finally:
            conn.close()
        return dict(zip(names, row))

    def _lease(self, row):
        return Lease(**{f: row[f] for f in Lease.__dataclass_fields__})

    def acquire(self, holder, ttl, sequences):
        return self._lease(self._call(self._acquire, (holder, ttl, sequences)))

    def renew(self, lease, ttl):
        return self._lease(self._call(self._renew, (lease.lease, lease.token, ttl)))

    def release(self, lease):
        self._call(self._release, (lease.lease, lease.token))


# Every live generator, for the fork and exit hooks (weak: a generator dropped is not kept).
_generators = weakref.WeakSet()
_locked_for_fork = []


def _before_fork():
    # No generator's lock may be held by another thread at the fork (the child would inherit it
    # held for good). The lock is never held across I/O, so this waits microseconds.
    _locked_for_fork[:] = list(_generators)
    for g in _locked_for_fork:
        g._lock.acquire()


def _after_fork_parent():
    for g in _locked_for_fork:
        g._lock.release()
    _locked_for_fork.clear()


def _after_fork_child():
    for g in _locked_for_fork:
        g._forked()
    _locked_for_fork.clear()


def _close_all():
    for g in list(_generators):
        g.close()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_parent, after_in_child=_after_fork_child)
atexit.register(_close_all)


class LeasedGenerator:
    """sno IDs under a lease: ``next_id()`` (the 16-character str) or ``next_bytes()`` (10 bytes).

    ``connect``: a conninfo string or URI, or a callable returning a new psycopg 3 connection.
    ``holder``: shown in the sno_leases view (default ``host:pid``). ``ttl``: seconds or a
    timedelta (at most the server's sno.lease_max_ttl, 10 minutes by default). ``sequences``:
    the slice's size, a power of two from 8 to 65536. ``meta``: the meta byte when a call gives
    none. ``schema``: sno's schema if not on the search_path.

    The first lease is acquired here: a refusal raises psycopg's error (42501: the role may not
    lease; 22023: ttl or sequences out of range; 53400: the role's sno.lease_limit is used up;
    54000: the reserved space is; 25006: a standby). Thread-safe; usable as a context manager.

    For tests: ``registry`` (an object with ``acquire``, ``renew`` and ``release`` like
    ``PsycopgRegistry``) instead of ``connect``, ``clock`` (Unix time in ns), ``sleep``, and
    ``background=False`` (no thread: call ``maintain()`` to renew).
    """

    def __init__(self, connect=None, *, holder=None, ttl=60, sequences=1024, meta=0, schema=None,
                 registry=None, clock=time.time_ns, sleep=time.sleep, background=True):
        if registry is None:
            if connect is None:
                raise TypeError("LeasedGenerator needs connect (a conninfo or a connection factory)")
            registry = PsycopgRegistry(connect, schema)
        self._registry = registry
        self._holder_given = holder
        self._ttl = ttl if isinstance(ttl, timedelta) else timedelta(seconds=ttl)
        self._sequences = sequences
        self._meta = self._check_meta(meta)
        self._clock = clock
        self._sleep = sleep
        self._background = background
        # Backoff between failed calls: 0.1 s doubling up to ttl / 8 (at most 10 s).
        self._backoff_cap = max(0.1, min(10.0, self._ttl.total_seconds() / 8))
        self._closed = False
        self._unit = -1  # the last unit stamped, under any lease (never goes back)
        self.renewals = 0  # successful renewals (all leases)
        self.acquisitions = 0  # leases acquired
        self.last_error = None  # the background's latest failure (None after a success)
        self._init_process()
        self._install(self._registry.acquire(self.holder, self._ttl, self._sequences))
        _generators.add(self)
        self._start_thread()

    # --- per-process state (made again in a forked child) ------------------------------------

    def _init_process(self):
        self._pid = os.getpid()
        self.holder = self._holder_given or f"{socket.gethostname()}:{self._pid}"
        self._lock = threading.Lock()  # the stamping state: _lease, _cur, _prev, _unit
        self._acquire_lock = threading.Lock()  # a forked child's first acquire
        self._stop = threading.Event()
        self._thread = None
        self._lease = None  # the current lease (its latest renewal)
        self._cur = None  # its _Slot
        # The _Slot of the lease it replaced, stamped under while the clock is before the current
        # one's window and inside its own; dropped once the current one stamps or it is over.
        self._prev = None
        self._renewable = None  # the lease to renew; None: acquire a new one
        self._failures = 0

    def _forked(self):
        # In the child of os.fork(): the parent's lease, lock, event and thread are the parent's.
        # Forget them without releasing (the parent still stamps under that lease); the first ID
        # acquires this process's own lease.
        self._init_process()

    def _start_thread(self):
        if self._background and not self._closed:
            self._thread = threading.Thread(target=self._run, name=f"sno-lease-{self.holder}", daemon=True)
            self._thread.start()

    # --- IDs ---------------------------------------------------------------------------------

    @staticmethod
    def _check_meta(meta):
        if not isinstance(meta, int) or not 0 <= meta <= 255:
            raise ValueError(f"meta is a byte (0-255), not {meta!r}")
        return meta

    def next_id(self, meta=None):
        """A new ID as its 16-character text (what a sno column prints and reads); ``OutsideWindow``
        if none may be stamped now."""
        return _text(self._next(meta))

    def next_bytes(self, meta=None):
        """A new ID as its 10 bytes (for a binary COPY, or ``sno_from_bytes`` later)."""
        return self._next(meta).to_bytes(10, "big")

    def _next(self, meta):
        """A new ID as an int of 80 bits."""
        m = self._meta if meta is None else self._check_meta(meta)
        if self._pid != os.getpid() or self._cur is None:
            self._need_lease()
        waited = 0.0
        while True:
            with self._lock:
                cur = self._cur
                if cur is None:
                    raise GeneratorClosed("this sno lease generator is closed")
                now = (self._clock() - _EPOCH_NS) // _UNIT_NS
                slot = cur
                u = cur.take(now, self._unit)
                if u < cur.nb and self._prev is not None:
                    # The clock is before the new lease's window: the lease it replaced, while
                    # its own window lasts.
                    prev = self._prev
                    pu = prev.take(now, self._unit)
                    if prev.nb <= pu < prev.ex:
                        slot, u = prev, pu
                    elif pu >= prev.ex:  # over: the new lease only from now on
                        self._prev = None
                if slot.nb <= u < slot.ex:
                    if slot is cur:
                        self._prev = None
                    self._unit = u
                    # bytes 0-4: unit << 1 | tick (0: units never go back), 5: meta, 6-7, 8-9
                    return u << 41 | m << 32 | slot.partition << 16 | slot.seq
                if u >= cur.ex:
                    raise OutsideWindow(self._why_outside(u, cur.ex), self.last_error)
                behind = (cur.nb - u) * 0.004
                not_before = cur.lease.not_before
            # This clock is before the window's start (behind the server's): wait up to a second.
            if waited >= MAX_CLOCK_WAIT:
                raise OutsideWindow(
                    f"this machine's clock is {behind:.3f} s before the sno lease's not_before "
                    f"({not_before.isoformat()}) after waiting {waited:.1f} s: it is behind "
                    f"the server's clock; synchronise it (NTP)", self.last_error)
            d = min(behind, MAX_CLOCK_WAIT - waited) + 0.0005
            self._sleep(d)
            waited += d

    def _why_outside(self, u, ex):
        lease = self._lease
        if u == ex and unit_of(self._clock()) < ex:
            what = f"the sequences of its last unit are used up ({self._sequences} per 4 ms unit)"
        else:
            what = f"this machine's clock is {(u - ex) * 0.004:.3f} s past its expires_at"
        msg = (f"no sno ID: outside the window of lease {lease.lease} (partition {lease.partition}, "
               f"sequences {lease.sequence_min}-{lease.sequence_max}, until {lease.expires_at.isoformat()}): {what}")
        if self.last_error is not None:
            msg += f"; renewing it keeps failing: {self.last_error!r}"
        return msg

    def _need_lease(self):
        """Acquire this process's lease if it has none (a forked child's first ID)."""
        if self._pid != os.getpid():  # forked without our hook (should not happen)
            self._forked()
        if self._closed:
            raise GeneratorClosed("this sno lease generator is closed")
        with self._acquire_lock:
            if self._cur is None and self._renewable is None:
                self._install(self._registry.acquire(self.holder, self._ttl, self._sequences))
                self._start_thread()

    # --- the lease ---------------------------------------------------------------------------

    @property
    def lease(self):
        """The current lease (a ``Lease``), or None. Just after a switch, while this clock is before
        its window, IDs may still come from the lease it replaced (see ``next_id``)."""
        return self._lease

    def _install(self, lease):
        """Switch to a new lease; release the one it replaces (which may still be stamped under
        until the clock reaches the new window, inside its own: the server grants its slice to no
        one else before its expires_at, released or not)."""
        if self._closed:  # closed while this lease was being acquired
            self._release(lease)
            return
        old = self._lease
        slot = _Slot(lease)  # a new slice: sequences start again (after the last unit stamped)
        with self._lock:
            if self._prev is None:
                # The lease replaced (if any) stays usable while the clock is before the new
                # window. If a previous one is still kept, the current one never stamped (its
                # window had not begun on this clock): the previous one is kept instead.
                self._prev = self._cur
            self._cur = slot
            self._lease = self._renewable = lease
        self.acquisitions += 1
        self._succeeded()
        log.info("sno lease %s acquired by %s: partition %s, sequences %s-%s, window %s .. %s",
                 lease.lease, self.holder, lease.partition, lease.sequence_min, lease.sequence_max,
                 lease.not_before, lease.expires_at)
        if old is not None:
            self._release(old)

    def _release(self, lease):
        try:
            self._registry.release(lease)
        except Exception as e:  # best effort: an unreleased lease runs out at its expires_at
            log.warning("sno lease %s: release failed (it runs out at %s): %r", lease.lease, lease.expires_at, e)

    def _succeeded(self):
        self._failures = 0
        self.last_error = None

    def _failed(self, what, e):
        self._failures += 1
        self.last_error = e
        delay = min(self._backoff_cap, 0.1 * 2 ** (self._failures - 1)) * random.uniform(0.5, 1.0)
        log.warning("sno lease %s: %s failed (attempt %d, again in %.1f s): %r",
                    getattr(self._lease, "lease", None), what, self._failures, delay, e)
        return delay

    @staticmethod
    def _renew_delay(lease):
        """Seconds until renew_after, on the server's clock when it gave ``now``."""
        now = lease.now or datetime.now(timezone.utc)
        return max(0.0, (lease.renew_after - now).total_seconds())

    def maintain(self):
        """One step of the background work: renew, or acquire a new lease; returns the seconds
        until the next step. The background thread calls it; a generator made with
        ``background=False`` (tests) needs it called."""
        if self._closed:
            return None
        if self._renewable is None:
            try:
                lease = self._registry.acquire(self.holder, self._ttl, self._sequences)
            except Exception as e:
                return self._failed("acquiring a new lease", e)
            self._install(lease)
            return self._renew_delay(lease)
        old = self._renewable
        try:
            new = self._registry.renew(old, self._ttl)
        except Exception as e:
            if getattr(e, "sqlstate", None) not in NEW_LEASE_STATES:
                return self._failed("renewal", e)
            # Given up by the server: stamping goes on under it until its expires_at while a new
            # lease is acquired, at once.
            log.warning("sno lease %s: the server refused its renewal (%s): acquiring a new lease",
                        old.lease, getattr(e, "sqlstate", None))
            self._renewable = None
            self.last_error = e
            return 0.0
        if not old.same_grant(new):
            log.error("sno lease %s: the renewal returned another grant (%r): acquiring a new lease", old.lease, new)
            self._renewable = None
            return 0.0
        with self._lock:
            if self._lease is old:
                self._lease = self._renewable = self._cur.lease = new
                self._cur.ex = unit_of(new.expires_at)
        self.renewals += 1
        self._succeeded()
        return self._renew_delay(new)

    def _run(self):
        stop = self._stop
        while not stop.is_set():
            try:
                delay = self.maintain()
            except Exception as e:  # a bug here must not end the thread (and the lease with it)
                log.exception("sno lease: unexpected error in the renewal thread")
                delay = self._failed("renewal", e)
            if delay is None or stop.wait(delay):
                return

    # --- the end -----------------------------------------------------------------------------

    def close(self):
        """Stop renewing and release the lease (best effort). Later calls raise GeneratorClosed."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        with self._lock:
            lease, self._lease, self._cur, self._prev, self._renewable = self._lease, None, None, None, None
        if lease is not None and self._pid == os.getpid():
            self._release(lease)
        _generators.discard(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        lease = self._lease
        where = "closed" if lease is None else (
            f"lease {lease.lease}, partition {lease.partition}, sequences {lease.sequence_min}-{lease.sequence_max}, "
            f"until {lease.expires_at.isoformat()}")
        return f"<LeasedGenerator {self.holder!r}: {where}>"
