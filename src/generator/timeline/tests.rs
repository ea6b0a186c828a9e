//! The timeline and the shared cursor under a fake clock that jumps backwards: single steps,
//! random schedules of backends, the worker and crashes, promised turns, and real threads.

use super::*;
use proptest::prelude::*;
use std::collections::{HashMap, HashSet};

/// Horizon kept by the tests: 10 units ahead, renewed within 5 (the real ones are seconds).
const AHEAD: u64 = 10;
const MARGIN: u64 = 5;
/// The idle lease of the tests: 60 units past the clock (the real one is a minute).
const LEAD: u64 = 60;

/// A server in the tests: its timeline and cursor (shared memory) and its state file.
#[derive(Default)]
struct Server {
    tl: Timeline,
    cursor: Cursor,
    disk: Option<Persisted>,
    /// The state file's bound on this server's partitions (its lineage entries): every
    /// bound ever written, merged; a clean stop does not lower it.
    entry: Option<Persisted>,
    /// Times the cursor was opened on a unit.
    opened: u32,
}

impl Server {
    /// The glue's synchronous write: the state file, then memory.
    fn write(&mut self) {
        let p = self.tl.due(AHEAD, MARGIN).unwrap_or(Persisted {
            horizon: self.tl.horizon.max(self.tl.hi + AHEAD),
            safe: self.tl.safe,
            drifts: self.tl.drifts,
        });
        self.put(p);
        self.tl.written(p);
    }

    /// The state file written with `p`.
    fn put(&mut self, p: Persisted) {
        self.disk = Some(p);
        self.entry = Some(
            self.entry
                .map_or(p, |e| crate::generator::bound::merge(e, p)),
        );
    }

    /// The slow path: advance under the lock, writing first when told to.
    fn slow(&mut self, now: u64) -> Grant {
        loop {
            match self.tl.advance(&self.cursor, now, false) {
                Grant::Write { .. } => self.write(),
                g => {
                    if matches!(g, Grant::Open { opened: true, .. }) {
                        self.opened += 1;
                    }
                    return g;
                }
            }
        }
    }

    /// One ID at the fake clock, moving the clock forward when told to wait (what the real
    /// generator does by sleeping). Returns the ID and how many waits it took.
    fn take(&mut self, clock: &mut u64) -> ((u64, u8, u16), u32) {
        let mut waits = 0;
        loop {
            if let Some(id) = self.cursor.take(*clock) {
                return (id, waits);
            }
            match self.slow(*clock) {
                Grant::Open { .. } => {}
                Grant::FullUnit { until } | Grant::ClockBehind { until } => {
                    assert!(until > *clock, "wait target {until} not after {clock}");
                    *clock = until;
                    waits += 1;
                }
                Grant::Write { .. } => unreachable!(),
            }
        }
    }

    /// The worker's idle lease, written at once if one is due at `clock`. Whether it wrote.
    fn idle(&mut self, clock: u64) -> bool {
        match self.tl.idle_lease(clock, LEAD, AHEAD) {
            Some(p) => {
                self.put(p);
                self.tl.written(p);
                true
            }
            None => false,
        }
    }

    /// A clean shutdown: the worker's exact write, then a restart.
    fn stop(&mut self) {
        let p = self.tl.stop();
        self.disk = Some(p);
        self.tl.written(p);
        self.crash();
    }

    /// A crash or restart: memory from the state file, a closed cursor.
    fn crash(&mut self) {
        self.restart(self.tl.slice);
    }

    /// A restart with another slice configured (`sno.sequence_min`/`max` changed).
    fn restart(&mut self, slice: Slice) {
        self.tl = match self.disk {
            Some(p) => Timeline::restore(p, slice),
            None => Timeline::new(slice),
        };
        if let Some(e) = self.entry {
            self.tl.recall(e);
        }
        self.cursor = Cursor::new(slice);
    }

    /// A server numbering its units from `slice`.
    fn sliced(slice: Slice) -> Server {
        Server {
            tl: Timeline::new(slice),
            cursor: Cursor::new(slice),
            ..Server::default()
        }
    }
}

#[test]
fn only_a_clock_reading_behind_an_earlier_one_is_a_regression() {
    let c = Cursor::default();
    // A restart within a lease: the horizon on disk is past the clock. The flip resumes
    // past it; no clock went back.
    let p = Persisted {
        horizon: 5000,
        safe: -1,
        drifts: 0,
    };
    let mut tl = Timeline::restore(p, Slice::FULL);
    tl.written(p);
    assert!(matches!(
        tl.advance(&c, 1000, false),
        Grant::Write { flipped: true }
    ));
    assert_eq!((tl.flips, tl.regressions, tl.drifts), (1, 0, 1));
    // Absorbing another's bound (a promotion, a takeover) moves `hi` past the clock too.
    let mut tl = Timeline::new(Slice::FULL);
    tl.advance(&c, 1000, false);
    tl.absorb(
        Persisted {
            horizon: 3000,
            safe: -1,
            drifts: 0,
        },
        &c,
    );
    tl.advance(&c, 1001, false);
    assert_eq!((tl.flips, tl.regressions), (1, 0));
    // The clock reads 1500, then 1400: a regression, and the flip it causes.
    let mut tl = Timeline::new(Slice::FULL);
    tl.advance(&c, 1500, false);
    tl.advance(&c, 1400, false);
    assert_eq!((tl.flips, tl.regressions, tl.seen), (1, 1, 1500));
    // Back again, into time used on both timelines: it waits, and counts once however often
    // the slow path then reads the clock on its way forward.
    tl.advance(&c, 1450, false);
    assert!(matches!(
        tl.advance(&c, 1300, false),
        Grant::ClockBehind { .. }
    ));
    assert!(matches!(
        tl.advance(&c, 1301, false),
        Grant::ClockBehind { .. }
    ));
    assert_eq!((tl.flips, tl.regressions), (1, 2));
}

#[test]
fn a_slice_numbers_every_unit_from_its_min_to_its_max_then_waits() {
    let slice = Slice::new(100, 109).unwrap();
    let mut sv = Server::sliced(slice);
    let mut clock = 1000;
    for round in 0..3u64 {
        for seq in 100..=109u16 {
            let (id, waits) = sv.take(&mut clock);
            assert_eq!(id, (1000 + round, 0, seq));
            assert_eq!(waits, u32::from(seq == 100 && round > 0));
        }
    }
}

#[test]
fn complementary_slices_share_a_partition_without_a_repeat() {
    // The server on the low half, a client generator (another Server here) on the high
    // half, the same clock: every unit they both use, no (unit, tick, seq) twice.
    let low = Slice::new(0, 32767).unwrap();
    let high = Slice::new(32768, 65535).unwrap();
    let (mut a, mut b) = (Server::sliced(low), Server::sliced(high));
    let (mut ca, mut cb) = (7000, 7000);
    let mut all = HashSet::new();
    for _ in 0..100_000 {
        let (x, _) = a.take(&mut ca);
        let (y, _) = b.take(&mut cb);
        assert!(low.contains(x.2) && high.contains(y.2));
        assert!(all.insert(x) && all.insert(y));
    }
}

#[test]
fn a_restart_on_another_slice_never_repeats_an_id() {
    // Moving the slice takes a restart, which resumes past the horizon on disk: no unit
    // numbered from the old slice is numbered again from the new one.
    let mut sv = Server::sliced(Slice::new(0, 9).unwrap());
    let mut clock = 500;
    let mut all = HashSet::new();
    for (i, (min, max)) in [(5, 20), (0, 9), (0, 65535), (3, 6)]
        .into_iter()
        .enumerate()
    {
        for _ in 0..200 {
            assert!(all.insert(sv.take(&mut clock).0));
        }
        sv.restart(Slice::new(min, max).unwrap());
        // The clock stays or goes back a little across the restart.
        clock -= i as u64;
    }
    for _ in 0..200 {
        assert!(all.insert(sv.take(&mut clock).0));
    }
}

#[test]
fn one_backend_reaches_the_whole_pool_of_a_unit() {
    let (mut sv, mut clock) = (Server::default(), 1000);
    for seq in 0..POOL {
        assert_eq!(sv.take(&mut clock), ((1000, 0, seq as u16), 0));
    }
    assert_eq!(sv.opened, 1, "one trip to the lock per unit");
    // The next one waits for the next unit, never wraps.
    assert_eq!(sv.take(&mut clock), ((1001, 0, 0), 1));
}

#[test]
fn concurrent_backends_are_numbered_in_the_order_they_take() {
    // Sixteen backends taking turns within one unit: one counter, so the sequence numbers
    // rise in the order the IDs are made, whoever makes them (keys reach the index in
    // order), and one backend opened the unit for all.
    let (mut sv, mut clock) = (Server::default(), 77);
    let mut last: HashMap<usize, u16> = HashMap::new();
    for i in 0..POOL as usize {
        let b = (i * 7) % 16;
        let ((unit, _, seq), waits) = sv.take(&mut clock);
        assert_eq!((unit, seq as usize, waits), (77, i, 0));
        if let Some(prev) = last.insert(b, seq) {
            assert!(seq > prev);
        }
    }
    assert_eq!(sv.opened, 1);
}

#[test]
fn first_regression_flips_without_waiting_second_waits() {
    let (mut sv, mut clock) = (Server::default(), 500);
    assert_eq!(sv.take(&mut clock).0, (500, 0, 0));
    // Back 100 units: a new timeline at once.
    clock = 400;
    assert_eq!(sv.take(&mut clock), ((400, 1, 0), 0));
    assert_eq!((sv.tl.safe, sv.tl.drifts), (500, 1));
    // The flip was written before the cursor served the new timeline.
    assert_eq!(sv.disk.map(|p| p.drifts), Some(1));
    clock = 450;
    assert_eq!(sv.take(&mut clock).0, (450, 1, 0));
    // Back again into time used on this timeline: wait for the high-water mark (450),
    // not for the old one (500), and go on after the numbers already used in it.
    clock = 420;
    assert_eq!(sv.take(&mut clock), ((450, 1, 1), 1));
    // Once past the safe mark, a regression may flip back to T = 0.
    clock = 600;
    sv.take(&mut clock);
    clock = 550;
    assert_eq!(sv.take(&mut clock), ((550, 0, 0), 0));
    assert_eq!((sv.tl.safe, sv.tl.drifts), (600, 2));
}

#[test]
fn the_cursor_never_serves_past_the_horizon_on_disk() {
    let (mut sv, mut clock) = (Server::default(), 1000);
    sv.take(&mut clock);
    assert_eq!(sv.disk.map(|p| p.horizon), Some(1000 + AHEAD));
    // Within the margin: a renewal is due, but the cursor serves without it.
    clock = 1000 + AHEAD - MARGIN + 1;
    assert_eq!(
        sv.tl.advance(&sv.cursor, clock, false),
        Grant::Open {
            opened: true,
            flipped: false
        }
    );
    assert!(sv.tl.due(AHEAD, MARGIN).is_some());
    // Past the horizon: a write first, and the cursor stays closed until then.
    clock = 1000 + AHEAD + 1;
    assert_eq!(
        sv.tl.advance(&sv.cursor, clock, false),
        Grant::Write { flipped: false }
    );
    assert_eq!(sv.cursor.take(clock), None);
    // A lineage change (dirty) closes an open cursor until it is written.
    sv.write();
    assert_eq!(
        sv.tl.advance(&sv.cursor, clock, false),
        Grant::Open {
            opened: true,
            flipped: false
        }
    );
    // Asked again a moment later: another backend opened it.
    assert_eq!(
        sv.tl.advance(&sv.cursor, clock, false),
        Grant::Open {
            opened: false,
            flipped: false
        }
    );
    assert_eq!(
        sv.tl.advance(&sv.cursor, clock, true),
        Grant::Write { flipped: false }
    );
    assert_eq!(sv.cursor.take(clock), None);
}

#[test]
fn restart_resumes_past_the_horizon_or_flips() {
    let (mut sv, mut clock) = (Server::default(), 1000);
    sv.take(&mut clock);
    assert_eq!(
        sv.disk,
        Some(Persisted {
            horizon: 1000 + AHEAD,
            safe: -1,
            drifts: 0
        })
    );
    // Crash, clock a little behind the horizon: a regression, so a flip without waiting.
    sv.crash();
    clock = 1003;
    assert_eq!(sv.take(&mut clock), ((1003, 1, 0), 0));
    // The flip was written before the ID was handed out.
    assert_eq!(
        sv.disk,
        Some(Persisted {
            horizon: 1003 + AHEAD,
            safe: 1010,
            drifts: 1
        })
    );
    // Crash again, clock set back further: behind both timelines, so it must wait (the
    // real generator fails after sno.max_clock_wait).
    sv.crash();
    assert_eq!(
        sv.tl.advance(&sv.cursor, 3, false),
        Grant::ClockBehind { until: 1011 }
    );
    // With the clock past the horizon, nothing is in the way.
    sv.crash();
    assert!(matches!(
        sv.slow(2000),
        Grant::Open {
            opened: true,
            flipped: false
        }
    ));
}

#[test]
fn a_pause_within_the_idle_lease_needs_no_write() {
    let (mut sv, mut clock) = (Server::default(), 1000);
    sv.take(&mut clock);
    // The worker finds no unit opened since its last look: one lease, then nothing.
    assert!(sv.idle(1002));
    assert_eq!(sv.disk.map(|p| p.horizon), Some(1002 + LEAD));
    // However long the server stays idle.
    for c in (1002..1002 + 100 * LEAD).step_by(7) {
        assert!(!sv.idle(c), "written again at {c}");
    }
    // A pause longer than the short horizon: the cursor opens without a write.
    let writes = |sv: &Server| sv.disk;
    let before = writes(&sv);
    clock = 1002 + LEAD / 2;
    assert_eq!(
        sv.tl.advance(&sv.cursor, clock, false),
        Grant::Open {
            opened: true,
            flipped: false
        }
    );
    // No renewal is due either: the worker has nothing to write under load.
    assert_eq!(sv.tl.due(AHEAD, MARGIN), None);
    clock = 1002 + LEAD;
    assert!(matches!(
        sv.tl.advance(&sv.cursor, clock, false),
        Grant::Open { opened: true, .. }
    ));
    assert_eq!(writes(&sv), before);
    // Past the lease: the write, as before there were leases.
    assert!(sv.idle(clock));
    clock += LEAD + 1;
    assert_eq!(
        sv.tl.advance(&sv.cursor, clock, false),
        Grant::Write { flipped: false }
    );
    // Turned off (0): never a lease.
    assert_eq!(Server::default().tl.idle_lease(5000, AHEAD, AHEAD), None);
}

#[test]
fn a_crash_within_the_idle_lease_flips_and_a_second_crash_waits_only_the_short_horizon() {
    let (mut sv, mut clock) = (Server::default(), 1000);
    sv.take(&mut clock);
    assert!(sv.idle(1001));
    // Nothing known of the IDs made under the lease: a restart within it flips at once.
    sv.crash();
    clock = 1005;
    let (id, waits) = sv.take(&mut clock);
    assert_eq!((id, waits), ((1005, 1, 0), 0));
    assert_eq!(sv.tl.safe, (1001 + LEAD) as i64);
    // The other timeline is used past the clock: no lease on this one until the clock
    // passes it, so that a second crash cannot make a restart wait for a lease.
    assert!(!sv.idle(clock));
    assert!(!sv.idle(1001 + LEAD));
    assert_eq!(sv.disk.map(|p| p.horizon), Some(1005 + AHEAD));
    sv.crash();
    let before = clock;
    let (id, _) = sv.take(&mut clock);
    assert_eq!(id.1, 1);
    assert!(
        clock - before <= AHEAD + 1,
        "waited {} units",
        clock - before
    );
    // Past the old lease, leases again.
    clock = 1002 + LEAD;
    sv.take(&mut clock);
    assert!(sv.idle(clock));
    // A regression under a lease: safe is the high-water mark (no ID was made past it),
    // not the lease, and the flip waits for a write as it always did.
    let (mut sv, mut clock) = (Server::default(), 1000);
    sv.take(&mut clock);
    assert!(sv.idle(1001));
    clock = 1010;
    sv.take(&mut clock);
    assert_eq!(
        sv.tl.advance(&sv.cursor, 1007, false),
        Grant::Write { flipped: true }
    );
    assert_eq!(sv.tl.safe, 1010);
}

#[test]
fn a_clean_stop_gives_the_lease_back() {
    let (mut sv, mut clock) = (Server::default(), 1000);
    sv.take(&mut clock);
    assert!(sv.idle(1001));
    clock = 1010;
    sv.take(&mut clock);
    assert_eq!(sv.disk.map(|p| p.horizon), Some(1001 + LEAD));
    // IDs made after the exact write (backends still running at a fast shutdown) need a
    // write of their own.
    let p = sv.tl.stop();
    assert_eq!(
        sv.tl.advance(&sv.cursor, 1011, false),
        Grant::Write { flipped: false }
    );
    sv.disk = Some(p);
    sv.tl.written(p);
    assert_eq!(
        sv.disk,
        Some(Persisted {
            horizon: 1010,
            safe: -1,
            drifts: 0
        })
    );
    sv.crash();
    clock = 1011;
    assert_eq!(sv.take(&mut clock), ((1011, 0, 0), 0));
    // Stopped again within the unit of its last ID: the restart waits for the next unit
    // (at most 4 ms), never flips.
    sv.stop();
    assert_eq!(sv.take(&mut clock), ((1012, 0, 0), 1));
}

/// What happens to a server: IDs, its clock, its worker's idle lease, crashes, clean
/// stops, and failovers to a standby.
#[derive(Debug, Clone)]
enum Life {
    Take(u8),
    Forward(u64),
    Back(u64),
    Idle,
    /// A crash: the state file, then crash recovery replays the WAL records written since
    /// the last clean stop (its shutdown checkpoint), raising bounds, and writes the file.
    Crash,
    /// A clean stop (the exact write, no WAL record) and a restart.
    Stop,
    /// A failover: a standby that replayed every record ever written takes over.
    Failover,
}

fn life() -> impl Strategy<Value = Life> {
    prop_oneof![
        6 => (1u8..20).prop_map(Life::Take),
        4 => (0u64..2 * LEAD).prop_map(Life::Forward),
        1 => (1u64..2 * LEAD).prop_map(Life::Back),
        3 => Just(Life::Idle),
        1 => Just(Life::Crash),
        1 => Just(Life::Stop),
        1 => Just(Life::Failover),
    ]
}

/// The bound that covers every one of `records`, over `first`.
fn merged(first: Option<Persisted>, records: &[Persisted]) -> Option<Persisted> {
    records.iter().fold(first, |acc, r| {
        Some(acc.map_or(*r, |a| crate::generator::bound::merge(a, *r)))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// Restarts, crash loops, failovers, clock steps and idle leases in any order: no ID
    /// twice; after a crash or a failover, with the clock past every unit used and every
    /// reading it had before (not set back), the first ID waits at most the short horizon
    /// (plus the unit a restart resumes in), where a lease written on both tick-tock
    /// timelines would make it wait for the lease; and a restart after a clean stop, with
    /// the clock past the last ID and not set back, never flips.
    #[test]
    fn crashes_failovers_and_leases_wait_at_most_the_short_horizon(
        steps in proptest::collection::vec(life(), 1..300),
    ) {
        let mut sv = Server::default();
        let mut clock: u64 = 10_000;
        let mut seen = HashSet::new();
        // WAL records since the last clean stop, and every record ever written.
        let (mut wal, mut all): (Vec<Persisted>, Vec<Persisted>) = (Vec::new(), Vec::new());
        let mut logged = None;
        let (mut used, mut latest) = (0u64, clock);
        let (mut restarted, mut no_flip) = (false, false);
        for s in steps {
            latest = latest.max(clock);
            match s {
                Life::Take(n) => {
                    for _ in 0..n {
                        let (before, drifts) = (clock, sv.tl.drifts);
                        // A clock behind a reading it had before (set back, while the server
                        // ran or was down) makes a clock regression: its wait is the step's.
                        let bounded = restarted && clock > used && clock >= latest;
                        let (id, _) = sv.take(&mut clock);
                        prop_assert!(seen.insert(id), "repeated {:?}", id);
                        used = used.max(id.0);
                        if bounded {
                            prop_assert!(clock - before <= AHEAD + 1,
                                "waited {} units after a restart", clock - before);
                        }
                        if no_flip {
                            prop_assert_eq!(sv.tl.drifts, drifts, "a clean restart flipped");
                        }
                        (restarted, no_flip) = (false, false);
                        if sv.disk != logged {
                            logged = sv.disk;
                            wal.extend(sv.disk);
                            all.extend(sv.disk);
                        }
                    }
                }
                Life::Forward(d) => clock += d,
                Life::Back(d) => {
                    clock -= d;
                    no_flip = false;
                }
                Life::Idle => {
                    if sv.idle(clock) {
                        logged = sv.disk;
                        wal.extend(sv.disk);
                        all.extend(sv.disk);
                    }
                }
                Life::Crash => {
                    sv.crash();
                    for r in &wal {
                        sv.tl.absorb(*r, &sv.cursor);
                    }
                    sv.disk = merged(sv.disk, &wal);
                    sv.entry = merged(sv.entry, &wal);
                    logged = sv.disk;
                    (restarted, no_flip) = (true, false);
                }
                Life::Stop => {
                    // Flips nothing unless the high-water mark is itself ahead of the
                    // clock (a restart after a crash or a failover that made no ID since).
                    no_flip = sv.tl.hi < clock;
                    sv.stop();
                    logged = sv.disk;
                    wal.clear();
                    restarted = false;
                }
                Life::Failover => {
                    let mut st = Server::default();
                    for r in &all {
                        st.tl.absorb(*r, &st.cursor);
                    }
                    st.disk = merged(None, &all);
                    st.entry = st.disk;
                    sv = st;
                    logged = sv.disk;
                    wal = all.clone();
                    (restarted, no_flip) = (true, false);
                }
            }
        }
    }
}

#[test]
fn no_lease_on_one_timeline_while_the_other_has_one_on_disk() {
    let (mut sv, mut clock) = (Server::default(), 1000);
    sv.take(&mut clock);
    assert!(sv.idle(1001));
    let lease = sv.disk.unwrap();
    // A step back of one unit flips; the flip's safe mark is the last unit used, but the
    // state file and WAL said up to the lease on the old timeline.
    clock = 999;
    sv.take(&mut clock);
    assert_eq!(sv.tl.safe, 1000);
    clock = 1005;
    sv.take(&mut clock);
    assert!(!sv.idle(clock), "a lease on both timelines");
    // A crash, its recovery replaying the lease: the wait is the short horizon's.
    sv.crash();
    sv.tl.absorb(lease, &sv.cursor);
    let before = clock;
    sv.take(&mut clock);
    assert!(
        clock - before <= AHEAD + 1,
        "waited {} units",
        clock - before
    );
    // The clean stop's file, and the restart, keep the lease of the old timeline (absorbed
    // by the crash recovery): no lease on this one before the clock passes it.
    sv.stop();
    assert_eq!(sv.disk.map(|p| p.safe), Some(lease.horizon as i64));
    assert!(!sv.idle(lease.horizon - 1));
    // Past it, leases again.
    clock = lease.horizon + 1;
    sv.take(&mut clock);
    assert!(sv.idle(clock));
}

#[test]
fn the_last_unit_of_the_format_is_written_once_and_then_full() {
    let max = crate::id::layout::MAX_UNITS;
    let mut sv = Server::default();
    let mut clock = max - 1;
    sv.take(&mut clock);
    assert_eq!(sv.disk.map(|p| p.horizon), Some(max));
    clock = max;
    for _ in 0..POOL {
        sv.take(&mut clock);
    }
    assert_eq!(
        sv.tl.due(AHEAD, MARGIN),
        None,
        "written again at the end of time"
    );
    // The pool of the last unit is used up: the wait target lies beyond the format, which
    // the glue reports as a clock out of range instead of waiting.
    assert_eq!(sv.slow(max), Grant::FullUnit { until: max + 1 });
}

/// One step of a random schedule. A backend's `sno_generate` is cut where other backends
/// can come between its steps: the clock reading and the cursor read ([`Step::Read`]), the
/// increment ([`Step::Bump`]), and the slow path under the lock ([`Step::Slow`]). The
/// `sno lineage` worker's renewal is cut the same way: the snapshot under the lock, the
/// state file written outside it, the commit under the lock.
#[derive(Debug, Clone)]
enum Step {
    Read(usize),
    Bump(usize),
    Slow(usize),
    Forward(u64),
    Back(u64),
    RenewSnapshot,
    RenewWrite,
    RenewCommit,
    /// The worker takes a snapshot of the idle lease instead (written and committed by
    /// the two steps above).
    IdleSnapshot,
    /// The worker's exact write at a clean stop (after a write in flight): backends may go
    /// on after it, as at a fast shutdown, until a crash step restarts the server.
    Stop,
    /// The server crashes (or restarts) and comes back from its state file; every backend
    /// is new and a renewal in flight is lost (or its file was written, or not).
    Crash,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        10 => (0usize..6).prop_map(Step::Read),
        10 => (0usize..6).prop_map(Step::Bump),
        4 => (0usize..6).prop_map(Step::Slow),
        4 => (0u64..3).prop_map(Step::Forward),
        1 => (1u64..40).prop_map(Step::Back),
        1 => Just(Step::RenewSnapshot),
        1 => Just(Step::RenewWrite),
        1 => Just(Step::RenewCommit),
        1 => Just(Step::IdleSnapshot),
        1 => Just(Step::Stop),
        1 => Just(Step::Crash),
    ]
}

/// Where one backend is in `sno_generate`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum At {
    /// Between calls.
    Idle,
    /// Read the clock (`now`) and found the cursor serving it: the increment is next.
    Read(u64),
    /// Read the clock and found the cursor not serving it: the slow path is next.
    Slow(u64),
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn never_a_repeated_id_whatever_the_interleaving_and_the_clock(
        steps in proptest::collection::vec(step(), 1..3000),
        slice in prop_oneof![
            Just(Slice::FULL),
            (0i64..65000, 3i64..40).prop_map(|(min, len)| Slice::new(min, min + len).unwrap()),
        ],
    ) {
        let mut sv = Server::sliced(slice);
        let mut at = [At::Idle; 6];
        let mut clock: u64 = 10_000;
        let mut seen = HashSet::new();
        // The worker's renewal in flight: its snapshot, and whether its file is written.
        let mut renewal: Option<(Persisted, bool)> = None;
        // Per backend and (unit, tick): the last sequence number, to check order.
        let mut last: HashMap<(usize, u64, u8), u16> = HashMap::new();
        for s in steps {
            match s {
                Step::Forward(d) => clock += d,
                Step::Back(d) => clock -= d,
                Step::Crash => {
                    sv.crash();
                    at = [At::Idle; 6];
                    renewal = None;
                    last.clear();
                }
                Step::RenewSnapshot => {
                    if renewal.is_none() {
                        renewal = sv.tl.due(AHEAD, MARGIN).map(|p| (p, false));
                    }
                }
                Step::IdleSnapshot => {
                    if renewal.is_none() {
                        renewal = sv.tl.idle_lease(clock, LEAD, AHEAD).map(|p| (p, false));
                    }
                }
                Step::Stop => {
                    // The writer lock: a write in flight finishes first.
                    if let Some((p, written)) = renewal.take() {
                        if !written {
                            sv.put(p);
                        }
                        sv.tl.written(p);
                    }
                    let p = sv.tl.stop();
                    sv.disk = Some(p);
                    sv.tl.written(p);
                }
                Step::RenewWrite => {
                    if let Some((p, false)) = renewal {
                        sv.put(p);
                        renewal = Some((p, true));
                    }
                }
                Step::RenewCommit => {
                    if let Some((p, true)) = renewal.take() {
                        sv.tl.written(p);
                    }
                }
                Step::Read(b) => {
                    if at[b] == At::Idle {
                        at[b] = if sv.cursor.serves(clock) { At::Read(clock) } else { At::Slow(clock) };
                    }
                }
                Step::Bump(b) => {
                    if let At::Read(now) = at[b] {
                        at[b] = match sv.cursor.bump(now) {
                            Some(id) => {
                                prop_assert!(seen.insert(id), "repeated {:?}", id);
                                prop_assert!(slice.contains(id.2), "{:?} outside {:?}", id, slice);
                                // The ID carries the clock reading it was made for.
                                prop_assert_eq!(id.0, now);
                                // The state file covers it.
                                let disk = sv.disk.expect("an ID before any state file");
                                prop_assert!(ticks(&disk)[id.1 as usize] >= id.0 as i64,
                                    "{:?} past the state file {:?}", id, disk);
                                if let Some(prev) = last.insert((b, id.0, id.1), id.2) {
                                    prop_assert!(id.2 > prev, "not increasing within a unit");
                                }
                                At::Idle
                            }
                            None => At::Slow(now),
                        };
                    }
                }
                Step::Slow(b) => {
                    if let At::Slow(_) = at[b] {
                        // The slow path reads the clock again under the lock.
                        let drifts = sv.tl.drifts;
                        let g = loop {
                            match sv.tl.advance(&sv.cursor, clock, false) {
                                Grant::Write { .. } => {
                                    // The writer lock: a renewal in flight finishes first.
                                    if let Some((p, written)) = renewal.take() {
                                        if !written {
                                            sv.put(p);
                                        }
                                        sv.tl.written(p);
                                    }
                                    sv.write();
                                }
                                g => break g,
                            }
                        };
                        prop_assert!(sv.tl.drifts == drifts || sv.tl.drifts == drifts + 1);
                        at[b] = match g {
                            // Back to the fast path with a fresh reading.
                            Grant::Open { .. } => At::Idle,
                            // The wait: the clock moves on (another step may move it back).
                            Grant::FullUnit { until } | Grant::ClockBehind { until } => {
                                prop_assert!(until > clock);
                                clock = until;
                                At::Idle
                            }
                            Grant::Write { .. } => unreachable!(),
                        };
                    }
                }
            }
        }
    }

    #[test]
    fn a_single_regression_never_waits(fwd in 1u64..1000, back in 1u64..1000, n in 1usize..200) {
        let mut sv = Server::default();
        let mut clock = 5000 + fwd;
        for _ in 0..n { sv.take(&mut clock); }
        clock -= back;
        let (id, waits) = sv.take(&mut clock);
        prop_assert_eq!(waits, 0);
        prop_assert_eq!(id.1, 1);
        prop_assert_eq!(id.0, clock);
    }
}

/// What one backend of the promise model is doing.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Turn {
    Idle,
    /// Read the clock and found the cursor serving it.
    Read(u64),
    /// Holds a promise, and how many flips or absorbs there had been when it got it.
    Waiting(Promise, u32),
}

fn turn_step() -> impl Strategy<Value = (u8, usize, u64)> {
    // (what, backend, amount): 0 read, 1 bump, 2 slow path, 3 claim, 4 clock forward,
    // 5 clock back, 6 the lineage absorbs a bound, 7 crash.
    prop_oneof![
        8 => (Just(0u8), 0usize..6, Just(0u64)),
        8 => (Just(1u8), 0usize..6, Just(0u64)),
        6 => (Just(2u8), 0usize..6, Just(0u64)),
        6 => (Just(3u8), 0usize..6, Just(0u64)),
        3 => (Just(4u8), Just(0usize), 0u64..3),
        1 => (Just(5u8), Just(0usize), 1u64..30),
        1 => (Just(6u8), Just(0usize), 0u64..40),
        1 => (Just(7u8), Just(0usize), Just(0u64)),
        1 => (Just(8u8), Just(0usize), Just(0u64)),
        2 => (Just(9u8), 0usize..6, Just(0u64)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]

    /// Callers that find a unit used up are promised numbers of later units: whatever the
    /// interleaving, the clock (forward, back) and the lineage (absorbs), no ID is handed
    /// out twice, by the cursor or by a promise; a promised ID is within the slice, covered
    /// by the state file and not later than the clock; promises are kept in the order they
    /// were made; and a promise is only ever voided by a flip or an absorb.
    #[test]
    fn promised_turns_never_repeat_an_id_and_are_kept_in_order(
        steps in proptest::collection::vec(turn_step(), 1..1500),
        len in 3i64..8,
    ) {
        let slice = Slice::new(100, 100 + len).unwrap();
        let mut sv = Server::sliced(slice);
        let mut at = [Turn::Idle; 6];
        let mut clock: u64 = 10_000;
        let mut seen = HashSet::new();
        // Flips and absorbs so far; the last promise made (for the order).
        let mut voids = 0u32;
        let mut last_promise: Option<Promise> = None;
        let mut kept = 0u32;
        for (what, b, d) in steps {
            match what {
                4 => clock += d,
                5 => clock = clock.saturating_sub(d).max(1),
                6 => {
                    // Another member of the lineage made IDs up to around now.
                    let p = Persisted { horizon: clock.saturating_sub(20) + d, safe: sv.tl.safe, drifts: sv.tl.drifts };
                    sv.tl.absorb(p, &sv.cursor);
                    voids += 1;
                }
                7 => {
                    sv.crash();
                    at = [Turn::Idle; 6];
                    last_promise = None;
                }
                8 => {
                    // sno_generator_initialize adopting a state file put back: the
                    // timeline replaced as durable.rs does it.
                    if let Some(file) = sv.disk {
                        sv.tl.close(&sv.cursor);
                        let mut tl = Timeline::restore(file, sv.tl.slice);
                        tl.round = sv.tl.round;
                        tl.absorb(sv.tl.durable(), &sv.cursor);
                        sv.tl = tl;
                        voids += 1;
                    }
                }
                9 => {
                    // A caller gives up while waiting for its turn (a cancel, a timeout):
                    // its promise is given back, and may be promised to another.
                    if let Turn::Waiting(p, _) = at[b] {
                        sv.tl.give_back(p);
                        at[b] = Turn::Idle;
                        last_promise = None;
                    }
                }
                0 => {
                    if at[b] == Turn::Idle && sv.cursor.serves(clock) {
                        at[b] = Turn::Read(clock);
                    }
                }
                1 => {
                    if let Turn::Read(now) = at[b] {
                        if let Some(id) = sv.cursor.bump(now) {
                            prop_assert!(seen.insert(id), "repeated {:?} (cursor)", id);
                            prop_assert!(slice.contains(id.2));
                        }
                        at[b] = Turn::Idle;
                    }
                }
                2 => {
                    if at[b] == Turn::Idle && !sv.cursor.serves(clock) {
                        let drifts = sv.tl.drifts;
                        let g = sv.slow(clock);
                        if sv.tl.drifts != drifts {
                            voids += 1;
                        }
                        match g {
                            Grant::FullUnit { .. } => {
                                if let Some(p) = sv.tl.promise(clock) {
                                    prop_assert!(p.unit > sv.tl.hi);
                                    prop_assert!(p.unit <= clock.max(sv.tl.hi) + MAX_LEAD);
                                    prop_assert!(slice.contains(p.seq));
                                    // In order, but for numbers given back (promised
                                    // again first); none since the last one here.
                                    if let Some(q) = last_promise {
                                        if q.round == p.round && !sv.tl.returned.iter().any(|r| *r != 0) {
                                            prop_assert!((p.unit, p.seq) > (q.unit, q.seq), "{:?} after {:?}", p, q);
                                        }
                                    }
                                    last_promise = Some(p);
                                    at[b] = Turn::Waiting(p, voids);
                                }
                            }
                            Grant::ClockBehind { until } => clock = until,
                            _ => {}
                        }
                    }
                }
                3 => {
                    if let Turn::Waiting(p, v) = at[b] {
                        let drifts = sv.tl.drifts;
                        let c = loop {
                            match sv.tl.claim(&sv.cursor, p, clock, false) {
                                Claim::Write => sv.write(),
                                c => break c,
                            }
                        };
                        prop_assert_eq!(sv.tl.drifts, drifts, "a claim never flips");
                        match c {
                            Claim::Take(id) => {
                                prop_assert!(seen.insert(id), "repeated {:?} (promise)", id);
                                prop_assert_eq!((id.0, id.1, id.2), (p.unit, p.tick, p.seq));
                                prop_assert!(id.0 <= clock);
                                let disk = sv.disk.expect("an ID before any state file");
                                prop_assert!(ticks(&disk)[id.1 as usize] >= id.0 as i64);
                                kept += 1;
                                at[b] = Turn::Idle;
                            }
                            // The wait: the clock reaches the promised unit.
                            Claim::Wait { until } => {
                                prop_assert!(until > clock);
                                clock = until;
                            }
                            Claim::Void => {
                                prop_assert!(voids > v, "{:?} voided without a flip or an absorb", p);
                                at[b] = Turn::Idle;
                            }
                            Claim::Write => unreachable!(),
                        }
                    }
                }
                _ => unreachable!(),
            }
        }
        let _ = kept;
    }
}

#[test]
fn a_full_unit_promises_the_next_units_in_order_and_the_cursor_serves_the_rest() {
    // A 4-number slice: unit 1000 used up by the cursor, then three callers wait.
    let slice = Slice::new(10, 13).unwrap();
    let mut sv = Server::sliced(slice);
    let mut clock = 1000;
    for _ in 0..4 {
        sv.take(&mut clock);
    }
    assert_eq!(clock, 1000);
    assert!(matches!(sv.slow(1000), Grant::FullUnit { until: 1001 }));
    let p: Vec<Promise> = (0..6).map(|_| sv.tl.promise(1000).unwrap()).collect();
    let got: Vec<(u64, u16)> = p.iter().map(|p| (p.unit, p.seq)).collect();
    assert_eq!(
        got,
        [
            (1001, 10),
            (1001, 11),
            (1001, 12),
            (1001, 13),
            (1002, 10),
            (1002, 11)
        ]
    );
    // Unit 1001 is promised whole: the cursor does not open on it, newcomers wait.
    assert!(matches!(sv.slow(1001), Grant::FullUnit { .. }));
    // The third caller claims first: its number, whatever the order of the claims.
    assert_eq!(
        sv.tl.claim(&sv.cursor, p[2], 1001, false),
        Claim::Take((1001, 0, 12))
    );
    assert_eq!(
        sv.tl.claim(&sv.cursor, p[4], 1001, false),
        Claim::Wait { until: 1002 }
    );
    // Unit 1002: the cursor serves 12 and 13, what is not promised.
    let mut c = 1002;
    assert_eq!(sv.take(&mut c).0, (1002, 0, 12));
    assert_eq!(sv.take(&mut c).0, (1002, 0, 13));
    assert_eq!(
        sv.tl.claim(&sv.cursor, p[4], 1002, false),
        Claim::Take((1002, 0, 10))
    );
    // A late claim of a past unit is still that caller's number.
    assert_eq!(
        sv.tl.claim(&sv.cursor, p[0], 1003, false),
        Claim::Take((1001, 0, 10))
    );
    // A flip voids what is still promised.
    let q = sv.tl.promise(1003).unwrap();
    sv.slow(900);
    assert_eq!(sv.tl.drifts, 1, "flipped");
    assert_eq!(sv.tl.claim(&sv.cursor, q, 2000, false), Claim::Void);
}

/// Callers that give up (a statement_timeout, a cancel) give their promise back: the last
/// one is simply not promised any more, another is promised again to the next caller. So
/// calls given up do not push the turns of everyone else ahead of the clock, and the
/// cursor goes on serving what is not promised.
#[test]
fn promises_given_back_do_not_hold_anyone_back() {
    let slice = Slice::new(10, 13).unwrap();
    let mut sv = Server::sliced(slice);
    let mut clock = 1000;
    for _ in 0..4 {
        sv.take(&mut clock);
    }
    assert!(matches!(sv.slow(1000), Grant::FullUnit { .. }));
    // One session asking and giving up 1000 times (SET statement_timeout = 1 in a loop).
    for _ in 0..1000 {
        let p = sv.tl.promise(1000).unwrap();
        assert_eq!(
            (p.unit, p.seq),
            (1001, 10),
            "the same number, given back each time"
        );
        sv.tl.give_back(p);
    }
    // Interleaved sessions giving up out of order: their numbers are promised again.
    let a = sv.tl.promise(1000).unwrap();
    let b = sv.tl.promise(1000).unwrap();
    let c = sv.tl.promise(1000).unwrap();
    sv.tl.give_back(a);
    sv.tl.give_back(b);
    assert_eq!(
        sv.tl.promise(1000).map(|p| (p.unit, p.seq)),
        Some((1001, 10))
    );
    assert_eq!(
        sv.tl.promise(1000).map(|p| (p.unit, p.seq)),
        Some((1001, 11))
    );
    assert_eq!((c.unit, c.seq), (1001, 12));
    // The cursor serves unit 1001's last number and unit 1002 whole.
    let mut t = 1001;
    assert_eq!(sv.take(&mut t).0, (1001, 0, 13));
    let mut t = 1002;
    assert_eq!(sv.take(&mut t).0, (1002, 0, 10));
}

/// Congestion under statement_timeout: 200 sessions on a 4-number slice, every call that
/// waits given up after 25 units (100 ms) and asked again at once. With promises given
/// back and none more than MAX_LEAD units ahead, the server keeps serving: the last 1000
/// units hand out most of their 4000 numbers, and no promise is further ahead of the
/// clock than MAX_LEAD.
#[test]
fn timeouts_do_not_make_the_promise_queue_collapse() {
    #[derive(Clone, Copy)]
    enum S {
        Idle,
        Waiting(Promise, u64),
    }
    let slice = Slice::new(10, 13).unwrap();
    let mut sv = Server::sliced(slice);
    let timeout = 25u64;
    let mut sessions = vec![S::Idle; 200];
    let mut late = 0u32;
    let start = 10_000u64;
    for u in start..start + 3000 {
        for s in sessions.iter_mut() {
            if let S::Waiting(p, deadline) = *s {
                if u >= deadline {
                    sv.tl.give_back(p);
                    *s = S::Idle;
                } else if p.unit <= u {
                    let got = loop {
                        match sv.tl.claim(&sv.cursor, p, u, false) {
                            Claim::Write => sv.write(),
                            c => break c,
                        }
                    };
                    assert!(matches!(got, Claim::Take(_)));
                    late += u32::from(u >= start + 2000);
                    *s = S::Idle;
                }
            }
        }
        for s in sessions.iter_mut() {
            if let S::Idle = *s {
                if sv.cursor.take(u).is_some() {
                    late += u32::from(u >= start + 2000);
                    continue;
                }
                if let Grant::FullUnit { .. } = sv.slow(u) {
                    if let Some(p) = sv.tl.promise(u) {
                        assert!(p.unit <= u + MAX_LEAD);
                        *s = S::Waiting(p, u + timeout);
                    }
                } else if sv.cursor.take(u).is_some() {
                    late += u32::from(u >= start + 2000);
                }
            }
        }
    }
    let pooled = sv.tl.returned.iter().filter(|r| **r != 0).count();
    assert!(late > 3000, "{late} IDs in the last 1000 units (capacity 4000); frontier {} ahead, {pooled} given back pooled, hi {}", sv.tl.promised_unit as i64 - (start + 3000) as i64, sv.tl.hi as i64 - (start + 3000) as i64);
}

/// Real threads on one cursor and one locked timeline, a clock thread moving time forward
/// and sometimes back: every ID made is distinct.
#[test]
fn threads_racing_on_the_cursor_never_repeat_an_id() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
    use std::sync::Mutex;
    let cursor = Cursor::default();
    let locked = Mutex::new(Server::default());
    let clock = AtomicU64::new(50_000);
    let stop = AtomicBool::new(false);
    let ids: Vec<Vec<(u64, u8, u16)>> = std::thread::scope(|sc| {
        sc.spawn(|| {
            let mut i = 0u64;
            while !stop.load(Relaxed) {
                std::thread::sleep(std::time::Duration::from_micros(200));
                i += 1;
                // Mostly forward, a step back now and then.
                if i % 97 == 0 {
                    clock.fetch_sub(20, Relaxed);
                } else {
                    clock.fetch_add(1, Relaxed);
                }
            }
        });
        let workers: Vec<_> = (0..4)
            .map(|_| {
                sc.spawn(|| {
                    let mut mine = Vec::with_capacity(200_000);
                    while mine.len() < 200_000 {
                        let now = clock.load(Relaxed);
                        if let Some(id) = cursor.take(now) {
                            mine.push(id);
                            continue;
                        }
                        let mut g = locked.lock().unwrap();
                        let now = clock.load(Relaxed);
                        let sv = &mut *g;
                        while let Grant::Write { .. } = sv.tl.advance(&cursor, now, false) {
                            sv.write();
                        }
                        drop(g);
                        std::thread::yield_now();
                    }
                    mine
                })
            })
            .collect();
        let ids = workers.into_iter().map(|w| w.join().unwrap()).collect();
        stop.store(true, Relaxed);
        ids
    });
    let mut all = HashSet::new();
    for (b, mine) in ids.iter().enumerate() {
        for w in mine.windows(2) {
            if (w[0].0, w[0].1) == (w[1].0, w[1].1) {
                assert!(w[1].2 > w[0].2, "backend {b}: {:?} then {:?}", w[0], w[1]);
            }
        }
        for id in mine {
            assert!(all.insert(*id), "repeated {id:?}");
        }
    }
    assert_eq!(all.len(), 800_000);
}
