"""Pure tests of sno_pg.lease: a fake registry and a fake clock, no server, no psycopg.

    python3 -m unittest discover -s python/tests -v      # from the repository's root

tests/client/lease_python.sh runs them too, before its tests against a real server.
"""

import logging
import os
import subprocess
import sys
import threading
import time
import unittest
from datetime import datetime, timedelta, timezone

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from sno_pg import sno_meta, sno_partition, sno_sequence, sno_tick, sno_time, sno_to_bytes  # noqa: E402
from sno_pg.lease import (  # noqa: E402
    GeneratorClosed,
    Lease,
    LeasedGenerator,
    OutsideWindow,
    unit_of,
)

logging.getLogger("sno_pg.lease").setLevel(logging.CRITICAL)  # the failures the tests make

EPOCH_NS = 1262304000 * 10**9
UNIT = 4_000_000  # ns


def at_unit(u):
    return datetime(2010, 1, 1, tzinfo=timezone.utc) + timedelta(milliseconds=4 * u)


class Clock:
    """Unix time in ns that moves only when told (or when the generator sleeps)."""

    def __init__(self, ns=1_750_000_000 * 10**9 + 1_000_000):
        self.ns = ns
        self.slept = 0.0

    def __call__(self):
        return self.ns

    def sleep(self, seconds):
        self.slept += seconds
        self.ns += int(seconds * 1e9)

    def advance(self, seconds):
        self.ns += int(seconds * 1e9)


class SqlError(Exception):
    def __init__(self, sqlstate, msg="fake"):
        super().__init__(f"{sqlstate}: {msg}")
        self.sqlstate = sqlstate


class FakeRegistry:
    """Grants as the interface says: windows of whole units from the registry's clock (which
    may differ from the holder's by `skew` seconds), renew_after a third of the ttl on."""

    def __init__(self, clock, skew=0.0):
        self.clock = clock
        self.skew = skew
        self.number = 0
        self.granted = []
        self.renewed = []
        self.released = []
        self.acquire_error = None  # an exception to raise instead of granting
        self.renew_error = None
        self.renew_hook = None  # f(lease) -> lease: a different answer

    def now_unit(self):
        return unit_of(self.clock() + int(self.skew * 1e9))

    def acquire(self, holder, ttl, sequences):
        if self.acquire_error is not None:
            raise self.acquire_error
        self.number += 1
        u = self.now_unit() + 1  # the next unit boundary
        t = ttl.total_seconds()
        lo = 1024 * (self.number % 8)
        lease = Lease(lease=self.number, token=f"token-{self.number}", partition=61440 + self.number,
                      sequence_min=lo, sequence_max=lo + sequences - 1, not_before=at_unit(u),
                      expires_at=at_unit(u + round(t / 0.004)), holder=holder,
                      renew_after=at_unit(u + round(t / 3 / 0.004)), now=at_unit(u - 1))
        self.granted.append(lease)
        return lease

    def renew(self, lease, ttl):
        if self.renew_error is not None:
            raise self.renew_error
        u = self.now_unit() + 1
        t = ttl.total_seconds()
        new = Lease(**{**lease.__dict__, "expires_at": at_unit(u + round(t / 0.004)),
                       "renew_after": at_unit(u + round(t / 3 / 0.004)), "now": at_unit(u - 1)})
        if self.renew_hook:
            new = self.renew_hook(new)
        self.renewed.append(new)
        return new

    def release(self, lease):
        self.released.append(lease.lease)


def generator(clock, registry=None, **kw):
    kw.setdefault("ttl", 2)
    reg = registry or FakeRegistry(clock)
    g = LeasedGenerator(registry=reg, holder="test", clock=clock, sleep=clock.sleep, background=False, **kw)
    return g, reg


def window(lease):
    return unit_of(lease.not_before), unit_of(lease.expires_at)


def unit_of_id(id):
    return int.from_bytes(sno_to_bytes(id)[:5], "big") >> 1


class Units(unittest.TestCase):
    def test_text_two_digits_per_lookup_as_five_bits_at_a_time(self):
        import random

        from sno_pg import ALPHABET, sno_from_bytes

        for raw in [bytes(10), b"\xff" * 10] + [random.randbytes(10) for _ in range(2000)]:
            n = int.from_bytes(raw, "big")
            want = "".join(ALPHABET[(n >> (5 * (15 - i))) & 31] for i in range(16))
            self.assertEqual(sno_from_bytes(raw), want)
            self.assertEqual(sno_to_bytes(want), raw)

    def test_unit_of_datetime_and_ns_agree(self):
        clock = Clock()
        u = unit_of(clock())
        self.assertEqual(unit_of(at_unit(u)), u)
        self.assertEqual(unit_of(at_unit(u) + timedelta(microseconds=3999)), u)
        self.assertEqual(unit_of(EPOCH_NS), 0)
        self.assertEqual(unit_of(EPOCH_NS + UNIT - 1), 0)


class Stamping(unittest.TestCase):
    def test_ids_in_window_slice_and_layout(self):
        clock = Clock()
        g, reg = generator(clock, meta=7, sequences=64)
        lease = reg.granted[0]
        nb, ex = window(lease)
        clock.advance(0.004)  # inside the window
        ids = []
        for i in range(5000):
            ids.append(g.next_id(meta=9) if i % 2 else g.next_id())
            if i % 100 == 0:
                clock.advance(0.001)
        self.assertEqual(len(set(ids)), len(ids))
        units = [unit_of_id(i) for i in ids]
        self.assertEqual(units, sorted(units))
        self.assertEqual(ids[::2], sorted(ids[::2]))
        for i, id in enumerate(ids):
            self.assertEqual(len(id), 16)
            self.assertTrue(nb <= unit_of_id(id) < ex)
            self.assertTrue(at_unit(nb) <= sno_time(id) < at_unit(ex))
            self.assertEqual(sno_partition(id), lease.partition)
            self.assertTrue(lease.sequence_min <= sno_sequence(id) <= lease.sequence_max)
            self.assertEqual(sno_meta(id), 9 if i % 2 else 7)
            self.assertEqual(sno_tick(id), 0)
        self.assertEqual(len(g.next_bytes()), 10)

    def test_refuses_at_and_after_expires_at(self):
        clock = Clock()
        g, reg = generator(clock)
        nb, ex = window(reg.granted[0])
        clock.ns = EPOCH_NS + (ex - 1) * UNIT + UNIT - 1  # the last ns of the window
        self.assertEqual(unit_of_id(g.next_id()), ex - 1)
        clock.advance(1e-9)
        with self.assertRaises(OutsideWindow) as e:
            g.next_id()
        self.assertIn("past its expires_at", str(e.exception))
        clock.advance(3600)
        self.assertRaises(OutsideWindow, g.next_id)

    def test_clock_slightly_behind_waits_then_stamps(self):
        clock = Clock()
        reg = FakeRegistry(clock, skew=0.3)  # the registry's clock 300 ms ahead
        g, _ = generator(clock, reg)
        nb, _ = window(reg.granted[0])
        id = g.next_id()
        self.assertEqual(unit_of_id(id), nb)
        self.assertGreater(clock.slept, 0.29)
        self.assertLess(clock.slept, 0.32)

    def test_clock_far_behind_errs_after_a_second(self):
        clock = Clock()
        reg = FakeRegistry(clock, skew=5)
        g, _ = generator(clock, reg)
        with self.assertRaises(OutsideWindow) as e:
            g.next_id()
        self.assertIn("before the sno lease's not_before", str(e.exception))
        self.assertAlmostEqual(clock.slept, 1.0, delta=0.01)

    def test_clock_going_back_stays_monotonic_inside_window(self):
        clock = Clock()
        g, reg = generator(clock, ttl=30)
        clock.advance(10)
        first = g.next_id()
        u = unit_of_id(first)
        clock.advance(-5)  # back 5 s: still inside the window, before the last unit used
        ids = [g.next_id() for _ in range(3000)]
        self.assertEqual(ids, sorted(ids))
        self.assertTrue(all(unit_of_id(i) >= u and sno_tick(i) == 0 for i in ids))
        # 1024 sequences a unit: 3001 IDs use the units u, u+1, u+2
        self.assertEqual(unit_of_id(ids[-1]), u + 2)
        clock.advance(-20)  # before not_before: the last unit used is still inside the window
        self.assertEqual(unit_of_id(g.next_id()), u + 2)

    def test_slice_exhaustion_next_unit_then_refusal(self):
        clock = Clock()
        g, reg = generator(clock, sequences=8, ttl=0.02)  # 5 units of 8 sequences
        lease = reg.granted[0]
        nb, ex = window(lease)
        self.assertEqual(ex - nb, 5)
        clock.ns = EPOCH_NS + nb * UNIT  # frozen at the first unit
        ids = [g.next_id() for _ in range(40)]
        self.assertEqual(len(set(ids)), 40)
        self.assertEqual(ids, sorted(ids))
        self.assertEqual([unit_of_id(i) for i in ids], [u for u in range(nb, ex) for _ in range(8)])
        self.assertEqual([sno_sequence(i) for i in ids[:8]], list(range(lease.sequence_min, lease.sequence_max + 1)))
        with self.assertRaises(OutsideWindow) as e:
            g.next_id()
        self.assertIn("used up", str(e.exception))

    def test_threads_never_share_an_id(self):
        clock = Clock()
        g, reg = generator(clock, ttl=600)
        clock.advance(0.004)
        out = [[] for _ in range(8)]

        def work(k):
            for i in range(5000):
                out[k].append(g.next_id())
                if i % 500 == 0:
                    clock.advance(0.004)

        ts = [threading.Thread(target=work, args=(k,)) for k in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        every = [i for o in out for i in o]
        self.assertEqual(len(set(every)), 40000)
        for o in out:
            self.assertEqual(o, sorted(o))

    def test_bad_meta(self):
        clock = Clock()
        self.assertRaises(ValueError, generator, clock, meta=256)
        g, _ = generator(clock)
        self.assertRaises(ValueError, g.next_id, -1)


class Renewal(unittest.TestCase):
    def test_renewal_extends_the_window(self):
        clock = Clock()
        g, reg = generator(clock, ttl=2)
        lease = reg.granted[0]
        _, ex = window(lease)
        clock.advance(1)
        delay = g.maintain()
        self.assertAlmostEqual(delay, 2 / 3, delta=0.01)
        self.assertEqual(g.renewals, 1)
        self.assertIs(g.lease, reg.renewed[-1])
        clock.ns = EPOCH_NS + ex * UNIT + UNIT  # past the first expires_at
        id = g.next_id()
        self.assertEqual(unit_of_id(id), ex + 1)
        self.assertEqual(sno_partition(id), lease.partition)

    def test_55000_or_42501_switch_to_a_new_lease(self):
        for state in ("55000", "42501"):
            clock = Clock()
            g, reg = generator(clock)
            old = reg.granted[0]
            clock.advance(0.7)
            reg.renew_error = SqlError(state)
            self.assertEqual(g.maintain(), 0.0)  # acquire at once
            self.assertEqual(sno_partition(g.next_id()), old.partition)  # the old one until the new one
            reg.renew_error = None
            g.maintain()
            new = reg.granted[1]
            self.assertIs(g.lease, new)
            self.assertEqual(reg.released, [old.lease])
            id = g.next_id()
            self.assertEqual((sno_partition(id), sno_sequence(id)), (new.partition, new.sequence_min))
            g.maintain()  # renews the new one
            self.assertEqual(reg.renewed[-1].lease, new.lease)

    def assert_own_windows(self, ids, leases):
        """Every ID from one of ``leases``, inside that lease's window and slice."""
        by_partition = {lease.partition: lease for lease in leases}
        for id in ids:
            lease = by_partition[sno_partition(id)]
            nb, ex = window(lease)
            self.assertTrue(nb <= unit_of_id(id) < ex, (id, lease))
            self.assertTrue(lease.sequence_min <= sno_sequence(id) <= lease.sequence_max, (id, lease))

    def switch_to_a_lease_ahead(self, clock, g, reg, skew, state="55000"):
        """The renewal refused, a new lease from a registry whose clock is `skew` s ahead."""
        reg.renew_error = SqlError(state)
        self.assertEqual(g.maintain(), 0.0)
        reg.renew_error = None
        reg.skew = skew
        g.maintain()
        return reg.granted[-1]

    def test_switch_while_the_clock_is_behind_the_new_window_stamps_the_old_lease(self):
        clock = Clock()
        g, reg = generator(clock, ttl=10, sequences=8)
        old = reg.granted[0]
        clock.advance(1)
        ids = [g.next_id() for _ in range(3)]  # one unit: the old slice's first 3 sequences
        new = self.switch_to_a_lease_ahead(clock, g, reg, skew=3)
        self.assertIs(g.lease, new)
        self.assertEqual(reg.released, [old.lease])  # released at once: its slice stays its own until expires_at
        nb_new = window(new)[0]
        self.assertGreater(nb_new, unit_of(clock()) + 700)  # about 3 s ahead of this clock
        id = g.next_id()  # the same unit, under the old lease: its cursor goes on
        self.assertEqual((sno_partition(id), sno_sequence(id)), (old.partition, old.sequence_min + 3))
        ids.append(id)
        ids += [g.next_id() for _ in range(20)]  # the old slice of a unit used up: the next units
        while unit_of(clock()) < nb_new + 100:
            ids += [g.next_id() for _ in range(3)]
            clock.advance(0.003)
        self.assertEqual(clock.slept, 0.0)  # never waited for the new window
        self.assertEqual(len(set(ids)), len(ids))
        self.assertEqual(ids, sorted(ids))  # one meta: increasing across the switch
        self.assert_own_windows(ids, [old, new])
        partitions = [sno_partition(i) for i in ids]
        k = partitions.index(new.partition)
        self.assertGreater(k, 24)  # hundreds of units stamped under the old lease after the switch
        self.assertEqual(partitions, [old.partition] * k + [new.partition] * (len(ids) - k))
        self.assertLess(unit_of_id(ids[k - 1]), nb_new)
        self.assertEqual((unit_of_id(ids[k]), sno_sequence(ids[k])), (nb_new, new.sequence_min))
        clock.advance(-2)  # back before the new window: the new lease goes on, the old one is done
        id = g.next_id()
        self.assertEqual(sno_partition(id), new.partition)
        self.assertGreater(id, ids[-1])
        self.assertEqual(reg.released, [old.lease])

    def test_switch_behind_the_new_window_until_the_old_window_ends(self):
        clock = Clock()
        g, reg = generator(clock, ttl=2)
        old = reg.granted[0]
        _, ex_old = window(old)
        clock.advance(1.5)
        new = self.switch_to_a_lease_ahead(clock, g, reg, skew=3)
        nb_new = window(new)[0]
        self.assertGreater(nb_new, ex_old + 100)
        clock.ns = EPOCH_NS + (ex_old - 1) * UNIT  # the old window's last unit
        id = g.next_id()
        self.assertEqual((sno_partition(id), unit_of_id(id)), (old.partition, ex_old - 1))
        clock.ns = EPOCH_NS + ex_old * UNIT  # the old window is over, the new one not begun
        with self.assertRaises(OutsideWindow) as e:
            g.next_id()
        self.assertIn("before the sno lease's not_before", str(e.exception))
        self.assertAlmostEqual(clock.slept, 1.0, delta=0.01)
        clock.ns = EPOCH_NS + nb_new * UNIT - 500_000_000  # 0.5 s before the new window: waits
        id = g.next_id()
        self.assertEqual((sno_partition(id), unit_of_id(id)), (new.partition, nb_new))
        self.assertAlmostEqual(clock.slept, 1.5, delta=0.01)

    def test_switch_after_the_old_lease_ended_waits_for_the_new_window_as_before(self):
        for skew, waits in ((0.3, True), (5, False)):
            clock = Clock()
            g, reg = generator(clock, ttl=2)
            old = reg.granted[0]
            _, ex_old = window(old)
            clock.advance(0.7)
            first = g.next_id()
            reg.renew_error = ConnectionError("server closed the connection unexpectedly")
            g.maintain()
            clock.ns = EPOCH_NS + ex_old * UNIT + 10 * UNIT  # the old lease is over
            self.assertRaises(OutsideWindow, g.next_id)
            new = self.switch_to_a_lease_ahead(clock, g, reg, skew=skew)
            nb_new = window(new)[0]
            self.assertEqual(reg.released, [old.lease])
            if waits:  # a clock 0.3 s behind: waits for the new window, then stamps under it
                id = g.next_id()
                self.assertEqual((sno_partition(id), unit_of_id(id), sno_sequence(id)),
                                 (new.partition, nb_new, new.sequence_min))
                self.assertAlmostEqual(clock.slept, 0.3, delta=0.01)
                self.assertGreater(id, first)
            else:  # 5 s behind: an error after a second, never an ID of the old lease
                with self.assertRaises(OutsideWindow) as e:
                    g.next_id()
                self.assertIn("before the sno lease's not_before", str(e.exception))
                self.assertAlmostEqual(clock.slept, 1.0, delta=0.01)

    def test_a_second_switch_before_the_new_window_keeps_the_lease_in_use(self):
        clock = Clock()
        g, reg = generator(clock, ttl=10)
        first = reg.granted[0]
        clock.advance(1)
        ids = [g.next_id()]
        second = self.switch_to_a_lease_ahead(clock, g, reg, skew=2)
        ids.append(g.next_id())
        third = self.switch_to_a_lease_ahead(clock, g, reg, skew=3, state="42501")  # the second one never stamped
        self.assertIs(g.lease, third)
        self.assertEqual(reg.released, [first.lease, second.lease])
        nb_third = window(third)[0]
        while unit_of(clock()) < nb_third + 10:
            ids.append(g.next_id())
            clock.advance(0.004)
        self.assertEqual(clock.slept, 0.0)
        self.assertEqual(len(set(ids)), len(ids))
        self.assertEqual(ids, sorted(ids))
        self.assert_own_windows(ids, [first, third])
        partitions = [sno_partition(i) for i in ids]
        k = partitions.index(third.partition)
        self.assertEqual(partitions, [first.partition] * k + [third.partition] * (len(ids) - k))
        self.assertEqual(unit_of_id(ids[k]), nb_third)

    def test_threads_across_a_switch_behind_the_new_window(self):
        clock = Clock()
        g, reg = generator(clock, ttl=10, sequences=64)
        old = reg.granted[0]
        clock.advance(1)
        out = [[] for _ in range(6)]
        switched = threading.Event()

        def work(k):
            for i in range(4000):
                out[k].append(g.next_id())
                if i == 1000 and k == 0:
                    self.switch_to_a_lease_ahead(clock, g, reg, skew=2)
                    switched.set()
                if i % 20 == 0:
                    clock.advance(0.004)

        ts = [threading.Thread(target=work, args=(k,)) for k in range(6)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertTrue(switched.is_set())
        new = reg.granted[1]
        every = [i for o in out for i in o]
        self.assertEqual(len(set(every)), len(every))
        for o in out:
            self.assertEqual(o, sorted(o))
        self.assert_own_windows(every, [old, new])
        partitions = [sno_partition(i) for i in every]
        self.assertGreater(partitions.count(old.partition), 6 * 1000)  # the old one after the switch too
        self.assertGreater(partitions.count(new.partition), 1000)
        self.assertEqual(clock.slept, 0.0)

    def test_no_new_lease_stamps_old_until_its_end(self):
        clock = Clock()
        g, reg = generator(clock)
        _, ex = window(reg.granted[0])
        clock.advance(0.7)
        reg.renew_error = SqlError("55000")
        reg.acquire_error = SqlError("53400", "the role's sno.lease_limit")
        g.maintain()
        delays = [g.maintain() for _ in range(6)]
        self.assertTrue(all(0 < d <= 0.25 for d in delays))
        self.assertGreater(delays[3], delays[0] * 0.9)  # backing off
        g.next_id()  # still inside the old window
        clock.ns = EPOCH_NS + ex * UNIT
        with self.assertRaises(OutsideWindow) as e:
            g.next_id()
        self.assertEqual(e.exception.last_error.sqlstate, "53400")
        self.assertIn("53400", str(e.exception))
        reg.acquire_error = None
        g.maintain()
        self.assertEqual(sno_partition(g.next_id()), reg.granted[1].partition)
        self.assertIsNone(g.last_error)

    def test_connection_errors_retry_then_refuse_then_recover(self):
        clock = Clock()
        g, reg = generator(clock)
        lease = reg.granted[0]
        _, ex = window(lease)
        clock.advance(0.7)
        reg.renew_error = ConnectionError("server closed the connection unexpectedly")
        delays = [g.maintain() for _ in range(8)]
        self.assertTrue(all(0.04 <= d <= 0.25 for d in delays), delays)
        self.assertEqual(len(reg.granted), 1)  # no new lease for a transient error
        clock.ns = EPOCH_NS + ex * UNIT
        with self.assertRaises(OutsideWindow) as e:
            g.next_id()
        self.assertIsInstance(e.exception.last_error, ConnectionError)
        reg.renew_error = None
        g.maintain()  # the server is back and the lease not yet expired there: renewed
        id = g.next_id()
        self.assertEqual(sno_partition(id), lease.partition)
        self.assertGreaterEqual(unit_of_id(id), ex)

    def test_a_renewal_with_another_grant_is_not_adopted(self):
        clock = Clock()
        g, reg = generator(clock)
        old = reg.granted[0]
        reg.renew_hook = lambda l: Lease(**{**l.__dict__, "sequence_max": l.sequence_max + 1024})
        self.assertEqual(g.maintain(), 0.0)
        self.assertIs(g.lease, old)
        reg.renew_hook = None
        g.maintain()
        self.assertIs(g.lease, reg.granted[1])

    def test_background_thread_renews(self):
        reg = FakeRegistry(time.time_ns)
        with LeasedGenerator(registry=reg, holder="bg", ttl=0.3) as g:
            time.sleep(0.45)
            self.assertGreaterEqual(g.renewals, 2)
            first = window(reg.granted[0])[1]
            self.assertGreater(unit_of(g.lease.expires_at), first)
            g.next_id()
        self.assertEqual(reg.released, [1])


class Closing(unittest.TestCase):
    def test_close_releases_and_refuses(self):
        clock = Clock()
        with generator(clock)[0] as g:
            reg = g._registry
            g.next_id()
        self.assertEqual(reg.released, [1])
        self.assertRaises(GeneratorClosed, g.next_id)
        g.close()  # idempotent
        self.assertEqual(reg.released, [1])
        self.assertIn("closed", repr(g))

    def test_release_errors_are_ignored(self):
        clock = Clock()
        g, reg = generator(clock)

        def fail(lease):
            raise ConnectionError("gone")

        reg.release = fail
        with self.assertLogs("sno_pg.lease", "WARNING"):
            g.close()


class Fork(unittest.TestCase):
    @unittest.skipUnless(hasattr(os, "fork"), "no os.fork")
    def test_child_acquires_its_own_lease(self):
        reg = FakeRegistry(time.time_ns)
        g = LeasedGenerator(registry=reg, holder=None, ttl=5)
        parent_lease = g.lease
        parent_ids = {g.next_id() for _ in range(100)}
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: report, never return into unittest
            try:
                os.close(r)
                ids = [g.next_id() for _ in range(100)]
                lease = g.lease
                alive = g._thread is not None and g._thread.is_alive()
                g.close()
                msg = (f"{lease.lease} {lease.partition} {len(reg.granted)} {reg.released} "
                       f"{alive} {g.holder.endswith(str(os.getpid()))} "
                       f"{sum(sno_partition(i) == lease.partition for i in ids)} {' '.join(ids)}")
                os.write(w, msg.encode())
            finally:
                os._exit(0)
        os.close(w)
        with os.fdopen(r) as f:
            out = f.read().split()
        os.waitpid(pid, 0)
        lease, partition, granted, released, alive, holder, own = out[:7]
        child_ids = set(out[7:])
        self.assertNotEqual(int(lease), parent_lease.lease)
        self.assertEqual(int(partition), 61442)
        self.assertEqual(int(granted), 2)  # the child's registry saw a second acquire
        self.assertEqual(released, "[2]")  # the child released its own lease, not the parent's
        self.assertEqual(alive, "True")  # and ran a renewal thread of its own
        self.assertEqual(holder, "True")  # the default holder names the child's pid
        self.assertEqual(int(own), 100)
        self.assertEqual(len(child_ids), 100)
        self.assertFalse(child_ids & parent_ids)
        self.assertIs(g.lease, parent_lease)  # the parent goes on under its lease
        g.next_id()
        g.close()
        self.assertEqual(reg.released, [1])


class Imports(unittest.TestCase):
    def test_no_psycopg_needed(self):
        code = "import sys, sno_pg, sno_pg.lease; sys.exit('psycopg' in sys.modules)"
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        subprocess.run([sys.executable, "-c", code], cwd=root, check=True)


if __name__ == "__main__":
    unittest.main()
