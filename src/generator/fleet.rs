//! The fleet rule for the reserved space: each live partition's own part of it, so that servers
//! with different partitions never make the same ID for a past time (`sno_generate_at`) or
//! lease the same numbers, whether or not they replicate, with no registry between them.
//!
//! Pure Rust, no PostgreSQL. Not used by the server yet: `sno_generate_at` and the lease
//! registry still take whole reserved partitions from the lineage's allocator
//! ([`crate::generator::reserved`]), which is unique within one lineage only. This room is the
//! arithmetic the next steps of issue 42 wire in, with its properties tested here.
//!
//! **Blocks.** The reserved space is 4,096 partitions of 65,536 sequence numbers, 2^28 (partition,
//! number) pairs per 4 ms unit and meta byte: exactly 4,096 for each of the 65,536 partition
//! values. Its lower half (61440-63487, where `sno_generate_at` grants) gives each partition
//! value `P` a *backfill block* of [`NUMBERS`] numbers, its upper half (the lease region) a
//! *lease block* of as many: reserved partition `base + 2047 - (P mod 2048)`, sequence numbers
//! `2048 * (P div 2048)` up. Distinct `P` get disjoint blocks ([`owner`] is the inverse), and no
//! block is a live partition. The reserved partition counts down from the top of each half
//! because 0.8's allocator granted from the bottom up (61440, 61441, ...; lease pools from
//! 63488 up): the common small partition values land on the partitions 0.8 granted last, if
//! ever.
//!
//! **Levels.** The server's sessions share its backfill block: for each 4 ms unit, a *level*,
//! the first number of the block no claim has taken ([`Levels`]). A session *claims* a run of
//! units at one level and `k` numbers above it ([`Levels::claim`]); the level of those units
//! rises by `k` and never falls. Inside its claim a session numbers each unit as a grant's
//! cursor does ([`crate::generator::reserved::GrantCursor`], over `k` numbers): so two claims
//! never share a (unit, number), and one session's IDs still increase with its time. A claim's
//! unused numbers are not given back (IDs of a unit need not be dense); the units a claim did
//! not reach keep their level.

/// How many sequence numbers a partition's block has, in each half of the reserved space.
pub const NUMBERS: u32 = 2048;

/// The first reserved partition of the backfill half.
const BACKFILL_BASE: u16 = crate::generator::reserved::FIRST;

/// The first reserved partition of the lease half.
const LEASE_BASE: u16 = crate::generator::reserved::LEASE_FIRST;

/// A partition value's part of one half of the reserved space: sequence numbers `first` to
/// `first + NUMBERS - 1` of reserved partition `partition`, in every unit and meta byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Block {
    pub partition: u16,
    pub first: u16,
}

impl Block {
    /// Whether the block holds sequence number `sequence` of reserved partition `partition`.
    pub const fn holds(&self, partition: u16, sequence: u16) -> bool {
        partition == self.partition
            && sequence >= self.first
            && ((sequence - self.first) as u32) < NUMBERS
    }
}

const fn block_in(base: u16, p: u16) -> Block {
    Block {
        partition: base + (NUMBERS as u16 - 1) - (p % NUMBERS as u16),
        first: (p / NUMBERS as u16) * NUMBERS as u16,
    }
}

/// Partition value `p`'s backfill block (for `sno_generate_at`).
pub const fn backfill_block(p: u16) -> Block {
    block_in(BACKFILL_BASE, p)
}

/// Partition value `p`'s lease block.
pub const fn lease_block(p: u16) -> Block {
    block_in(LEASE_BASE, p)
}

/// The partition value whose block holds sequence number `sequence` of reserved partition
/// `partition` (either half), or `None` outside the reserved space.
pub const fn owner(partition: u16, sequence: u16) -> Option<u16> {
    let base = if partition >= LEASE_BASE {
        LEASE_BASE
    } else if partition >= BACKFILL_BASE {
        BACKFILL_BASE
    } else {
        return None;
    };
    let low = (NUMBERS as u16 - 1) - (partition - base);
    Some((sequence / NUMBERS as u16) * NUMBERS as u16 + low)
}

/// How many runs of equal level [`Levels`] keeps; past that, neighbours are merged at the
/// higher level ([`Levels::coarsen`]), which only wastes numbers.
pub const MAX_RUNS: usize = 4096;

/// From unit `start` on (up to the next run), no claim took a number at or above `level`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Run {
    pub start: u64,
    pub level: u16,
}

/// A claim: units `from` to `to - 1`, numbers `lo` to `hi - 1` of the block (offsets in it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Claim {
    pub from: u64,
    pub to: u64,
    pub lo: u16,
    pub hi: u16,
}

impl Claim {
    /// Whether the claim covers `unit`.
    pub const fn covers(&self, unit: u64) -> bool {
        unit >= self.from && unit < self.to
    }

    /// How many numbers it has in each unit.
    pub const fn size(&self) -> u32 {
        (self.hi - self.lo) as u32
    }
}

/// A server's levels over all units: a step function, level 0 before the first run. Runs are
/// sorted by `start`, and two neighbours never have the same level.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Levels {
    len: usize,
    runs: [Run; MAX_RUNS],
}

impl Default for Levels {
    fn default() -> Self {
        Levels::EMPTY
    }
}

impl core::fmt::Debug for Levels {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list().entries(self.runs()).finish()
    }
}

impl PartialEq for Levels {
    fn eq(&self, other: &Levels) -> bool {
        self.runs() == other.runs()
    }
}

impl Levels {
    /// No claim yet: every unit at level 0.
    pub const EMPTY: Levels = Levels {
        len: 0,
        runs: [Run { start: 0, level: 0 }; MAX_RUNS],
    };

    /// The runs, in order.
    pub fn runs(&self) -> &[Run] {
        &self.runs[..self.len]
    }

    /// The level of `unit`.
    pub fn level(&self, unit: u64) -> u16 {
        match self.runs().partition_point(|r| r.start <= unit) {
            0 => 0,
            i => self.runs[i - 1].level,
        }
    }

    /// The first unit after `unit` whose level differs from `unit`'s, if any.
    fn next_change(&self, unit: u64) -> Option<u64> {
        let i = self.runs().partition_point(|r| r.start <= unit);
        self.runs().get(i).map(|r| r.start)
    }

    /// The highest level over units `from` to `to - 1`.
    pub fn highest(&self, from: u64, to: u64) -> u16 {
        let mut high = self.level(from);
        let i = self.runs().partition_point(|r| r.start <= from);
        for r in &self.runs()[i..] {
            if r.start >= to {
                break;
            }
            high = high.max(r.level);
        }
        high
    }

    /// A claim for unit `unit`: `k` numbers (fewer if the unit's level leaves fewer), over up
    /// to `span` units from `unit` on, ending where the level changes, so that no unit's level
    /// rises by more than the claim takes from it. `None` when the unit has no number left.
    /// The caller makes it durable ([`Levels::raise`] with its end) before any ID uses it.
    pub fn claim(&self, unit: u64, span: u64, k: u32) -> Option<Claim> {
        let level = self.level(unit);
        let left = NUMBERS.saturating_sub(u32::from(level));
        if left == 0 || k == 0 {
            return None;
        }
        let k = k.min(left);
        let mut to = unit.saturating_add(span.max(1));
        if let Some(change) = self.next_change(unit) {
            to = to.min(change);
        }
        Some(Claim {
            from: unit,
            to,
            lo: level,
            hi: level + k as u16,
        })
    }

    /// Units `from` to `to - 1` have no number below `level` left: each unit's level becomes
    /// at least `level` (a claim's `hi`; a replayed claim, in any order and any number of
    /// times, gives the same levels). Keeps at most [`MAX_RUNS`] runs ([`Levels::coarsen`]).
    pub fn raise(&mut self, from: u64, to: u64, level: u16) {
        if from >= to || level == 0 {
            return;
        }
        // A step function changes only at its runs' starts: the new one at those and at
        // `from` and `to`, each point's old level raised inside the range.
        let mut points: Vec<u64> = self.runs().iter().map(|r| r.start).collect();
        points.push(from);
        if to != u64::MAX {
            points.push(to);
        }
        points.sort_unstable();
        points.dedup();
        let new: Vec<Run> = points
            .iter()
            .map(|&start| {
                let old = self.level(start);
                let level = if start >= from && start < to {
                    old.max(level)
                } else {
                    old
                };
                Run { start, level }
            })
            .collect();
        self.len = 0;
        for r in new {
            let last = if self.len == 0 {
                0
            } else {
                self.runs[self.len - 1].level
            };
            if r.level != last {
                self.append(r);
            }
        }
    }

    fn append(&mut self, r: Run) {
        if self.len == MAX_RUNS {
            self.coarsen();
        }
        self.runs[self.len] = r;
        self.len += 1;
    }

    /// Merges the two neighbouring runs whose levels differ least into one at the higher
    /// level (numbers are wasted, never given twice), making room for one more run.
    pub fn coarsen(&mut self) {
        if self.len < 2 {
            return;
        }
        let mut best = 1;
        let mut best_gap = u16::MAX;
        for i in 1..self.len {
            let gap = self.runs[i].level.abs_diff(self.runs[i - 1].level);
            if gap < best_gap {
                best_gap = gap;
                best = i;
            }
        }
        let high = self.runs[best].level.max(self.runs[best - 1].level);
        self.runs[best - 1].level = high;
        self.runs.copy_within(best + 1..self.len, best);
        self.len -= 1;
        // The merged run may now equal a neighbour: fold those too.
        let mut w = 0;
        for i in 0..self.len {
            if w > 0 && self.runs[w - 1].level == self.runs[i].level {
                continue;
            }
            self.runs[w] = self.runs[i];
            w += 1;
        }
        self.len = w;
    }

    /// The text form of the file that keeps them: one `start level` line per run.
    pub fn encode(&self) -> String {
        let mut s = String::with_capacity(self.len * 16);
        for r in self.runs() {
            s.push_str(&format!("{} {}\n", r.start, r.level));
        }
        s
    }

    /// Reads [`Levels::encode`]'s form back: `None` if any line is not two numbers, the starts
    /// are not increasing, or a level is over [`NUMBERS`].
    pub fn decode(text: &str) -> Option<Levels> {
        let mut l = Levels::EMPTY;
        let mut last: Option<u64> = None;
        for line in text.lines().filter(|l| !l.is_empty()) {
            let (start, level) = line.split_once(' ')?;
            let start: u64 = start.parse().ok()?;
            let level: u16 = level.parse().ok()?;
            if u32::from(level) > NUMBERS || last.is_some_and(|p| p >= start) {
                return None;
            }
            last = Some(start);
            if l.len == MAX_RUNS {
                return None;
            }
            l.runs[l.len] = Run { start, level };
            l.len += 1;
        }
        Some(l)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::{HashMap, HashSet};

    #[test]
    fn blocks_of_all_partition_values_are_disjoint_and_cover_the_reserved_space() {
        let mut seen = HashSet::new();
        for p in 0..=u16::MAX {
            for b in [backfill_block(p), lease_block(p)] {
                assert!(crate::generator::reserved::is_reserved(b.partition), "{p}");
                assert!(u32::from(b.first) + NUMBERS <= 65536, "{p}");
                assert_eq!(b.first as u32 % NUMBERS, 0);
                assert!(seen.insert(b), "{p}: {b:?} twice");
                assert_eq!(owner(b.partition, b.first), Some(p));
                assert_eq!(owner(b.partition, b.first + (NUMBERS - 1) as u16), Some(p));
                assert!(b.holds(b.partition, b.first + 7));
            }
            assert!(!crate::generator::reserved::is_lease_region(
                backfill_block(p).partition
            ));
            assert!(crate::generator::reserved::is_lease_region(
                lease_block(p).partition
            ));
        }
        // 2 × 65,536 blocks of 2,048 numbers: the 4,096 × 65,536 pairs, each once.
        assert_eq!(seen.len() as u64 * u64::from(NUMBERS), 4096 * 65536);
        assert_eq!(owner(61439, 0), None);
    }

    #[test]
    fn small_partition_values_get_the_partitions_0_8_granted_last() {
        assert_eq!(
            backfill_block(0),
            Block {
                partition: 63487,
                first: 0
            }
        );
        assert_eq!(
            backfill_block(101),
            Block {
                partition: 63386,
                first: 0
            }
        );
        assert_eq!(
            backfill_block(2149),
            Block {
                partition: 63386,
                first: 2048
            }
        );
        assert_eq!(
            lease_block(0),
            Block {
                partition: 65535,
                first: 0
            }
        );
        // A Citus group's generations: one reserved partition, a slice each.
        let g = 5u16;
        let blocks: HashSet<_> = (0..15u16).map(|k| backfill_block(g + 4096 * k)).collect();
        assert_eq!(blocks.len(), 15);
    }

    #[test]
    fn a_claim_takes_k_numbers_and_raises_its_units() {
        let mut l = Levels::EMPTY;
        let c = l.claim(1000, 250, 4).unwrap();
        assert_eq!((c.from, c.to, c.lo, c.hi), (1000, 1250, 0, 4));
        l.raise(c.from, c.to, c.hi);
        assert_eq!(l.level(999), 0);
        assert_eq!(l.level(1000), 4);
        assert_eq!(l.level(1249), 4);
        assert_eq!(l.level(1250), 0);
        // A claim inside stops where the level changes.
        let d = l.claim(1200, 1000, 8).unwrap();
        assert_eq!((d.from, d.to, d.lo, d.hi), (1200, 1250, 4, 12));
        l.raise(d.from, d.to, d.hi);
        assert_eq!(l.runs().len(), 3);
        // One before it runs up to it.
        let e = l.claim(900, 1000, 2).unwrap();
        assert_eq!((e.from, e.to, e.lo, e.hi), (900, 1000, 0, 2));
    }

    #[test]
    fn a_unit_runs_out_after_its_numbers() {
        let mut l = Levels::EMPTY;
        let c = l.claim(5, 1, 4096).unwrap();
        assert_eq!(c.size(), NUMBERS);
        l.raise(c.from, c.to, c.hi);
        assert_eq!(l.claim(5, 1, 1), None);
        assert!(l.claim(6, 1, 1).is_some());
    }

    #[test]
    fn levels_come_back_from_their_text() {
        let mut l = Levels::EMPTY;
        l.raise(10, 20, 3);
        l.raise(15, 40, 9);
        l.raise(100, u64::MAX, 1);
        let text = l.encode();
        assert_eq!(Levels::decode(&text), Some(l));
        assert_eq!(Levels::decode("5 3\n4 2\n"), None);
        assert_eq!(Levels::decode("5 3000\n"), None);
        assert_eq!(Levels::decode("5\n"), None);
    }

    #[test]
    fn coarsening_only_raises() {
        let mut l = Levels::EMPTY;
        for i in 0..(MAX_RUNS as u64 + 50) {
            l.raise(i * 10, i * 10 + 5, (i % 7 + 1) as u16);
        }
        assert!(l.runs().len() <= MAX_RUNS);
        for i in 0..(MAX_RUNS as u64 + 50) {
            assert!(l.level(i * 10) >= (i % 7 + 1) as u16, "{i}");
        }
    }

    /// The reference: a level per unit.
    fn naive_raise(m: &mut HashMap<u64, u16>, from: u64, to: u64, level: u16) {
        for u in from..to {
            let e = m.entry(u).or_insert(0);
            *e = (*e).max(level);
        }
    }

    proptest! {
        /// Raising matches a per-unit reference, and the runs stay sorted and folded.
        #[test]
        fn raise_is_a_per_unit_maximum(
            ops in proptest::collection::vec((0u64..200, 1u64..60, 1u16..50), 1..40),
        ) {
            let mut l = Levels::EMPTY;
            let mut m = HashMap::new();
            for (from, len, level) in ops {
                l.raise(from, from + len, level);
                naive_raise(&mut m, from, from + len, level);
            }
            for u in 0..300 {
                prop_assert_eq!(l.level(u), m.get(&u).copied().unwrap_or(0), "unit {}", u);
            }
            let runs = l.runs();
            for w in runs.windows(2) {
                prop_assert!(w[0].start < w[1].start);
                prop_assert!(w[0].level != w[1].level);
            }
        }

        /// Sessions claiming in random order, each numbering its claims' units as a grant's
        /// cursor does: never one (unit, number) twice, every number inside the block.
        #[test]
        fn claims_never_share_a_number(
            calls in proptest::collection::vec((0usize..4, 0u64..120), 1..600),
            k in 1u32..9,
            span in 1u64..40,
        ) {
            let mut l = Levels::EMPTY;
            let mut sessions: Vec<Option<(Claim, crate::generator::reserved::GrantCursor)>> =
                vec![None; 4];
            let mut given = HashSet::new();
            for (s, unit) in calls {
                loop {
                    if let Some((c, cur)) = sessions[s].as_mut() {
                        if c.covers(unit) {
                            if let Some(n) = cur.take_within(unit, c.size()) {
                                let number = c.lo as u32 + u32::from(n);
                                prop_assert!(number < NUMBERS);
                                prop_assert!(given.insert((unit, number)), "({}, {}) twice", unit, number);
                                break;
                            }
                        }
                    }
                    match l.claim(unit, span, k) {
                        Some(c) => {
                            l.raise(c.from, c.to, c.hi);
                            sessions[s] = Some((c, crate::generator::reserved::GrantCursor::NEW));
                        }
                        None => break,
                    }
                }
            }
        }
    }
}
