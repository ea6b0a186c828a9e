//! The generator state machine: a server-wide timeline that hands out blocks ("leases") of
//! sequence numbers, and the per-backend state that spends them.
//!
//! Pure Rust, no PostgreSQL, no clock: every function takes the current time (in 4 ms units)
//! as an argument, so tests drive it with a fake clock that jumps backwards.
//!
//! Design: per-unit block leases.
//! * The [`Timeline`] lives in shared memory behind a lock. It holds the high-water unit of the
//!   current timeline, the next free sequence number of that unit, the tick-tock state and the
//!   safe mark. Unit and sequence are updated together, under the lock (muyo/sno updates them
//!   separately and can repeat a sequence number under concurrency).
//! * A backend takes a [`Lease`]: an exclusive range of sequence numbers of one (unit, tick).
//!   It spends the range with no shared access at all ([`Local::next`]) while the clock stays
//!   in that unit. A new unit, or a used-up range, sends it back to the timeline.
//! * Lease sizes adapt ([`Local::want`]): [`MIN_BLOCK`] at the start of a unit, then as many
//!   as the backend has already used up in that unit (its total doubles), up to [`MAX_BLOCK`].
//!   One backend alone reaches the whole pool of a unit (65,536) with 24 trips to the lock;
//!   sixteen busy backends get 4,096 each; a backend making one ID per transaction leaves at
//!   most 15 numbers of a unit unused.
//! * Clock regressions follow muyo/sno's tick-tock rule: the first one
//!   flips T at once; one into time already used on the current timeline waits.

/// Sequence numbers per unit and partition.
pub const POOL: u32 = 1 << 16;
/// Smallest lease: what a backend takes first in a unit.
pub const MIN_BLOCK: u32 = 16;
/// Largest lease: a sixteenth of the pool, so sixteen busy backends share a unit fairly.
pub const MAX_BLOCK: u32 = POOL / 16;

/// The server-wide timeline. `#[repr(C)]` because it lives in shared memory.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeline {
    /// High-water mark (muyo/sno's `wallHi`): the latest unit leased on the current timeline.
    pub hi: u64,
    /// Next free sequence number of unit `hi`; [`POOL`] once the unit is used up.
    pub next: u32,
    /// Every unit ever leased on the *other* timeline is `<= safe` (`wallSafe`); -1 when the
    /// other timeline has never been used.
    pub safe: i64,
    /// Clock regressions turned into a tick-tock flip. The current tick is `drifts & 1`.
    pub drifts: u64,
    /// The durable horizon last written ([`crate::generator::state_file`]): no ID of the current timeline is
    /// beyond it.
    pub horizon: u64,
    /// `drifts` as last written.
    pub written_drifts: u64,
}

/// An exclusive range `next..end` of sequence numbers of one unit on one timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Lease {
    /// The 4 ms unit.
    pub unit: u64,
    /// The tick-tock bit of the timeline the lease was made on.
    pub tick: u8,
    /// Next sequence number to hand out.
    pub next: u32,
    /// One past the last sequence number of the lease.
    pub end: u32,
}

/// What the timeline answers to a request for a lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grant {
    /// A new lease; `flipped` when this request turned a clock regression into a new timeline.
    Lease {
        /// The lease.
        lease: Lease,
        /// Whether the tick-tock bit flipped for this lease.
        flipped: bool,
    },
    /// Every sequence number of the current unit is taken: wait for unit `until`.
    FullUnit {
        /// The first unit worth asking again in.
        until: u64,
    },
    /// The clock went back into time already used on this timeline, and flipping again would
    /// collide with the other timeline: wait until the clock reaches `until`.
    ClockBehind {
        /// The first unit worth asking again in.
        until: u64,
    },
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline::new()
    }
}

impl Timeline {
    /// A timeline on which nothing has been issued yet.
    pub const fn new() -> Timeline {
        Timeline {
            hi: 0,
            next: 0,
            safe: -1,
            drifts: 0,
            horizon: 0,
            written_drifts: 0,
        }
    }

    /// The timeline after a restart or a crash, from its durable state: every unit up to the
    /// horizon counts as used, so a clock behind it is a regression like any other.
    pub const fn restore(p: Persisted) -> Timeline {
        Timeline {
            hi: p.horizon,
            next: POOL,
            safe: p.safe,
            drifts: p.drifts,
            horizon: p.horizon,
            written_drifts: p.drifts,
        }
    }

    /// What must be written durably before the lease just granted may be used: a horizon
    /// `ahead` units past the high-water mark once it comes within `margin` units of the
    /// written one, or the new tick-tock state after a flip. `None`: nothing to write.
    pub fn due(&self, ahead: u64, margin: u64) -> Option<Persisted> {
        // Near the end of the format's range the horizon cannot move past its last unit:
        // once it is there, it is written once, not at every lease.
        let max = crate::id::layout::MAX_UNITS;
        let renew = self.hi.saturating_add(margin) > self.horizon && self.horizon < max;
        if self.drifts != self.written_drifts || renew {
            Some(Persisted {
                horizon: self
                    .hi
                    .saturating_add(ahead)
                    .min(crate::id::layout::MAX_UNITS),
                safe: self.safe,
                drifts: self.drifts,
            })
        } else {
            None
        }
    }

    /// What is known durably of this timeline: the written horizon, or the high-water mark
    /// if that is later.
    pub fn durable(&self) -> Persisted {
        Persisted {
            horizon: self.horizon.max(self.hi),
            safe: self.safe,
            drifts: self.drifts,
        }
    }

    /// Records that `p` is now on disk.
    pub fn written(&mut self, p: Persisted) {
        self.horizon = p.horizon;
        self.written_drifts = p.drifts;
    }

    /// Makes the timeline respect `b` too: every unit within it counts as used on its
    /// tick-tock timeline (what another member of the lineage made, see [`crate::generator::lineage`]).
    pub fn absorb(&mut self, b: Persisted) {
        let t = self.tick() as usize;
        let theirs = crate::generator::lineage::ticks(&b);
        if theirs[t] >= self.hi as i64 {
            self.hi = theirs[t] as u64;
            self.next = POOL;
        }
        self.safe = self.safe.max(theirs[1 - t]);
    }

    /// The current tick-tock bit.
    #[inline]
    pub const fn tick(&self) -> u8 {
        (self.drifts & 1) as u8
    }

    /// Leases up to `want` sequence numbers of unit `now` (the clock, read under the lock).
    pub fn lease(&mut self, now: u64, want: u32) -> Grant {
        let mut flipped = false;
        if now > self.hi {
            self.hi = now;
            self.next = 0;
        } else if now < self.hi {
            if now as i64 > self.safe {
                // First regression (or one past every unit of the other timeline): flip T and
                // go on at once. Units up to the old high-water mark stay taken on the old
                // timeline.
                self.safe = self.hi as i64;
                self.drifts += 1;
                self.hi = now;
                self.next = 0;
                flipped = true;
            } else {
                // Back into time used on this timeline, and the other one is used here too:
                // wait until the clock is back at the high-water mark, or past the safe mark.
                return Grant::ClockBehind {
                    until: self.hi.min((self.safe + 1) as u64),
                };
            }
        }
        if self.next >= POOL {
            return Grant::FullUnit { until: self.hi + 1 };
        }
        let start = self.next;
        let end = start.saturating_add(want.max(1)).min(POOL);
        self.next = end;
        Grant::Lease {
            lease: Lease {
                unit: self.hi,
                tick: self.tick(),
                next: start,
                end,
            },
            flipped,
        }
    }
}

pub use crate::generator::state_file::Persisted;

/// One backend's generator state: its current lease and the size of its next one.
#[derive(Clone, Copy, Debug, Default)]
pub struct Local {
    /// The lease being spent (empty at start).
    pub lease: Lease,
    /// Sequence numbers leased so far in the unit of `lease`.
    pub block: u32,
}

impl Local {
    /// The next sequence number of the current lease, if the clock is still in its unit.
    /// This is the whole fast path: no lock, no shared memory.
    #[inline(always)]
    pub fn next(&mut self, now: u64) -> Option<(u64, u8, u16)> {
        let l = &mut self.lease;
        if now == l.unit && l.next < l.end {
            let seq = l.next;
            l.next += 1;
            Some((l.unit, l.tick, seq as u16))
        } else {
            None
        }
    }

    /// Whether the current lease can still serve unit `now`.
    #[inline]
    pub fn has(&self, now: u64) -> bool {
        now == self.lease.unit && self.lease.next < self.lease.end
    }

    /// How many sequence numbers to ask for at unit `now`: as many as this backend has already
    /// used up in this unit (so its total doubles: 16, 32, 64, ... 4096, then 4096 at a time),
    /// else [`MIN_BLOCK`] at the start of a unit.
    pub fn want(&self, now: u64) -> u32 {
        if self.lease.unit == now && self.lease.next >= self.lease.end {
            self.block.clamp(MIN_BLOCK, MAX_BLOCK)
        } else {
            MIN_BLOCK
        }
    }

    /// Starts spending a new lease.
    pub fn install(&mut self, lease: Lease) {
        let size = lease.end - lease.next;
        self.block = if lease.unit == self.lease.unit && lease.tick == self.lease.tick {
            self.block.saturating_add(size)
        } else {
            size
        };
        self.lease = lease;
    }
}

/// The partition of a server whose `sno.partition` is not set: 16 bits of a mix of the
/// cluster's system identifier (made by `initdb` from the time and a process ID) and the
/// state file's random instance number (new for every copy of a data directory), so that
/// independently created clusters, and copies of one, differ with high probability.
pub const fn derived_partition(sysid: u64, instance: u64) -> u16 {
    partition_from_system_identifier(sysid ^ mix(instance))
}

/// 16 bits of a mix of a system identifier. splitmix64's finalizer spreads every input bit
/// over the result.
pub const fn partition_from_system_identifier(sysid: u64) -> u16 {
    (mix(sysid) >> 48) as u16
}

const fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::{HashMap, HashSet};

    /// Takes one ID for a backend, spending its lease or asking the timeline, and moving the
    /// fake clock forward when told to wait (what the real generator does by sleeping).
    fn take(local: &mut Local, tl: &mut Timeline, clock: &mut u64) -> ((u64, u8, u16), u32) {
        take_durably(local, tl, clock, &mut None)
    }

    /// [`take`], writing the durable state to `disk` when due, before using a lease (as the
    /// real generator does, under the lock).
    fn take_durably(
        local: &mut Local,
        tl: &mut Timeline,
        clock: &mut u64,
        disk: &mut Option<Persisted>,
    ) -> ((u64, u8, u16), u32) {
        let mut waits = 0;
        loop {
            if let Some(id) = local.next(*clock) {
                return (id, waits);
            }
            match tl.lease(*clock, local.want(*clock)) {
                Grant::Lease { lease, .. } => {
                    if let Some(p) = tl.due(AHEAD, MARGIN) {
                        *disk = Some(p);
                        tl.written(p);
                    }
                    local.install(lease)
                }
                Grant::FullUnit { until } | Grant::ClockBehind { until } => {
                    assert!(until > *clock, "wait target {until} not after {clock}");
                    *clock = until;
                    waits += 1;
                }
            }
        }
    }

    #[test]
    fn one_backend_reaches_the_whole_pool_of_a_unit() {
        let (mut tl, mut local, mut clock) = (Timeline::new(), Local::default(), 1000);
        let mut leases = 0;
        for seq in 0..POOL {
            let before = tl.next;
            let (id, waits) = take(&mut local, &mut tl, &mut clock);
            if tl.next != before {
                leases += 1;
            }
            assert_eq!((id, waits), ((1000, 0, seq as u16), 0));
        }
        assert!(leases <= 24, "{leases} trips to the timeline");
        // The next one waits for the next unit, never wraps.
        let (id, waits) = take(&mut local, &mut tl, &mut clock);
        assert_eq!((id, waits), ((1001, 0, 0), 1));
    }

    #[test]
    fn sixteen_busy_backends_each_get_a_sixteenth() {
        let mut tl = Timeline::new();
        let mut locals = [Local::default(); 16];
        let mut got = [0u32; 16];
        let clock = 77;
        // Round-robin within one unit until every backend is told the unit is full.
        let mut full = [false; 16];
        while !full.iter().all(|&f| f) {
            for (i, l) in locals.iter_mut().enumerate() {
                if full[i] {
                    continue;
                }
                if l.next(clock).is_none() {
                    match tl.lease(clock, l.want(clock)) {
                        Grant::Lease { lease, .. } => l.install(lease),
                        Grant::FullUnit { .. } => {
                            full[i] = true;
                            continue;
                        }
                        other => panic!("{other:?}"),
                    }
                    l.next(clock).expect("fresh lease");
                }
                got[i] += 1;
            }
        }
        assert_eq!(got.iter().sum::<u32>(), POOL);
        assert!(got.iter().all(|&n| n >= 4096), "{got:?}");
    }

    #[test]
    fn first_regression_flips_without_waiting_second_waits() {
        let mut tl = Timeline::new();
        let mut l = Local::default();
        let mut clock = 500;
        assert_eq!(take(&mut l, &mut tl, &mut clock).0, (500, 0, 0));
        // Back 100 units: a new timeline at once.
        clock = 400;
        let (id, waits) = take(&mut l, &mut tl, &mut clock);
        assert_eq!((id, waits), ((400, 1, 0), 0));
        assert_eq!((tl.safe, tl.drifts), (500, 1));
        clock = 450;
        assert_eq!(take(&mut l, &mut tl, &mut clock).0, (450, 1, 0));
        // Back again into time used on this timeline: wait for the high-water mark (450),
        // not for the old one (500).
        clock = 420;
        assert_eq!(tl.lease(clock, 16), Grant::ClockBehind { until: 450 });
        let (id, waits) = take(&mut l, &mut tl, &mut clock);
        // The backend's own lease of unit 450 still holds numbers: it goes on from there.
        assert_eq!((id, waits), ((450, 1, 1), 1));
        // Once past the safe mark, a regression may flip back to T = 0.
        clock = 600;
        take(&mut l, &mut tl, &mut clock);
        clock = 550;
        let (id, waits) = take(&mut l, &mut tl, &mut clock);
        assert_eq!((id, waits), ((550, 0, 0), 0));
        assert_eq!((tl.safe, tl.drifts), (600, 2));
    }

    #[test]
    fn a_lease_is_spent_only_in_its_unit() {
        let mut l = Local::default();
        l.install(Lease {
            unit: 9,
            tick: 1,
            next: 3,
            end: 5,
        });
        assert_eq!(l.next(10), None);
        assert_eq!(l.next(8), None);
        assert_eq!(l.next(9), Some((9, 1, 3)));
        assert_eq!(l.next(9), Some((9, 1, 4)));
        assert_eq!(l.next(9), None);
        assert_eq!(l.want(9), MIN_BLOCK);
        assert_eq!(l.want(10), MIN_BLOCK);
        l.install(Lease {
            unit: 9,
            tick: 1,
            next: 5,
            end: 5 + 2000,
        });
        while l.next(9).is_some() {}
        assert_eq!(l.want(9), 2002);
        l.install(Lease {
            unit: 9,
            tick: 1,
            next: 2005,
            end: 2005 + 3000,
        });
        while l.next(9).is_some() {}
        assert_eq!(l.want(9), MAX_BLOCK);
    }

    /// Horizon kept by the tests: 10 units ahead, renewed within 5 (the real ones are seconds).
    const AHEAD: u64 = 10;
    const MARGIN: u64 = 5;

    #[test]
    fn restart_resumes_past_the_horizon_or_flips() {
        let mut disk = None;
        let (mut tl, mut l, mut clock) = (Timeline::new(), Local::default(), 1000);
        take_durably(&mut l, &mut tl, &mut clock, &mut disk);
        assert_eq!(
            disk,
            Some(Persisted {
                horizon: 1000 + AHEAD,
                safe: -1,
                drifts: 0
            })
        );
        // Crash, clock a little behind the horizon: a regression, so a flip without waiting.
        let mut tl = Timeline::restore(disk.unwrap());
        let mut l = Local::default();
        clock = 1003;
        let (id, waits) = take_durably(&mut l, &mut tl, &mut clock, &mut disk);
        assert_eq!((id, waits), ((1003, 1, 0), 0));
        // The flip was written before the ID was handed out.
        assert_eq!(
            disk,
            Some(Persisted {
                horizon: 1003 + AHEAD,
                safe: 1010,
                drifts: 1
            })
        );
        // Crash again, clock set back further: behind both timelines, so it must wait (the
        // real generator fails after sno.max_clock_wait).
        let mut tl = Timeline::restore(disk.unwrap());
        assert_eq!(tl.lease(3, 16), Grant::ClockBehind { until: 1011 });
        // With the clock past the horizon, nothing is in the way.
        let mut tl = Timeline::restore(disk.unwrap());
        assert!(matches!(
            tl.lease(2000, 16),
            Grant::Lease { flipped: false, .. }
        ));
    }

    #[test]
    fn the_last_unit_of_the_format_is_written_once_and_then_full() {
        let max = crate::id::layout::MAX_UNITS;
        let mut tl = Timeline::new();
        assert!(matches!(tl.lease(max - 1, 16), Grant::Lease { .. }));
        let p = tl.due(AHEAD, MARGIN).expect("first horizon");
        assert_eq!(p.horizon, max);
        tl.written(p);
        assert!(matches!(tl.lease(max, POOL), Grant::Lease { .. }));
        assert_eq!(
            tl.due(AHEAD, MARGIN),
            None,
            "written again at the end of time"
        );
        // The pool of the last unit is used up: the wait target lies beyond the format, which
        // the glue reports as a clock out of range instead of waiting.
        assert_eq!(tl.lease(max, 1), Grant::FullUnit { until: max + 1 });
    }

    #[test]
    fn derived_partitions_spread() {
        // System identifiers of clusters made a second apart differ in their top bits only.
        let base: u64 = 7_312_345_678 << 32;
        let parts: HashSet<u16> = (0..1000u64)
            .map(|i| partition_from_system_identifier(base + (i << 32) + (i * 4096)))
            .collect();
        assert!(parts.len() > 980, "{} distinct of 1000", parts.len());
        assert_eq!(
            partition_from_system_identifier(42),
            partition_from_system_identifier(42)
        );
    }

    /// One step of a random schedule: which backend generates, and how the clock moves first.
    #[derive(Debug, Clone)]
    enum Step {
        Gen(usize),
        Forward(u64),
        Back(u64),
        /// A backend exits and a new one takes its place (its unused lease is lost).
        Replace(usize),
        /// The server crashes (or restarts) and comes back from its durable state; every
        /// backend is new.
        Crash,
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            20 => (0usize..6).prop_map(Step::Gen),
            4 => (0u64..3).prop_map(Step::Forward),
            1 => (1u64..40).prop_map(Step::Back),
            1 => (0usize..6).prop_map(Step::Replace),
            1 => Just(Step::Crash),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        #[test]
        fn never_a_repeated_id_whatever_the_clock_does(steps in proptest::collection::vec(step(), 1..3000)) {
            let mut tl = Timeline::new();
            let mut locals = [Local::default(); 6];
            let mut clock: u64 = 10_000;
            let mut seen = HashSet::new();
            let mut disk: Option<Persisted> = None;
            // Per backend and (unit, tick): the last sequence number, to check order.
            let mut last: HashMap<(usize, u64, u8), u16> = HashMap::new();
            for s in steps {
                match s {
                    Step::Forward(d) => clock += d,
                    Step::Back(d) => clock -= d,
                    Step::Replace(b) => locals[b] = Local::default(),
                    Step::Crash => {
                        tl = disk.map(Timeline::restore).unwrap_or_default();
                        locals = [Local::default(); 6];
                        last.clear();
                    }
                    Step::Gen(b) => {
                        let drifts = tl.drifts;
                        let (id, _) = take_durably(&mut locals[b], &mut tl, &mut clock, &mut disk);
                        prop_assert!(seen.insert(id), "repeated {:?}", id);
                        // Every ID carries the clock's unit at the moment it is made.
                        prop_assert_eq!(id.0, clock);
                        if let Some(prev) = last.insert((b, id.0, id.1), id.2) {
                            prop_assert!(id.2 > prev, "not increasing within a unit");
                        }
                        // The tick only changes by a flip.
                        prop_assert!(tl.drifts == drifts || tl.drifts == drifts + 1);
                    }
                }
            }
        }

        #[test]
        fn a_single_regression_never_waits(fwd in 1u64..1000, back in 1u64..1000, n in 1usize..200) {
            let mut tl = Timeline::new();
            let mut l = Local::default();
            let mut clock = 5000 + fwd;
            for _ in 0..n { take(&mut l, &mut tl, &mut clock); }
            clock -= back;
            let (id, waits) = take(&mut l, &mut tl, &mut clock);
            prop_assert_eq!(waits, 0);
            prop_assert_eq!(id.1, 1);
            prop_assert_eq!(id.0, clock);
        }
    }
}
