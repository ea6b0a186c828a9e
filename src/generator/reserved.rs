//! The reserved partition space, and IDs made for any time from it (`sno_generate_at`).
//!
//! Pure Rust, no PostgreSQL. Partitions 61440-65535 ([`FIRST`] up) are never given to a live
//! server generator: no derived draw lands there, no Citus generation uses them (group `g`'s
//! generation 15 is `g + 61440`), and a newly configured `sno.partition` there is refused
//! ([`crate::generator::lineage::Refusal::Reserved`]). They are handed out by one allocator,
//! the lineage's ([`crate::generator::lineage::State::grant`]): a grant is a whole reserved
//! partition, for all time, recorded in the lineage's used partitions, so that it is as durable
//! as the lineage (state file and WAL: standbys, promotions, PITR, copies and pg_upgrade know
//! it) and never handed out again.
//!
//! A grant serves one session's `sno_generate_at` calls. Since nobody else writes its
//! partition, the session stamps any unit with it, in any order, as long as it never stamps one
//! (unit, meta, sequence) twice: [`GrantCursor`] does that per meta byte, with three numbers.

/// The first reserved partition: 61440 up to 65535, the top sixteenth of the space.
pub const FIRST: u16 = 61440;

/// How many partitions are reserved.
pub const COUNT: u32 = 65536 - FIRST as u32;

/// Whether `p` is in the reserved range.
#[inline]
pub const fn is_reserved(p: u16) -> bool {
    p >= FIRST
}

/// On a Citus cluster the coordinator grants for every node, and a coordinator promoted after an
/// asynchronous failover may not know the last grants of the one it replaces, whose IDs may
/// already be stored on other nodes. So the coordinator grants only from the share of its
/// current Citus generation (`k`, 0-14, a new one at each promotion, as for its live
/// partition): the reserved partitions `61440 + j` with `j mod 15 = k`. A new generation never
/// grants what an earlier one could have granted.
/// A generation past the live ones (15, a group that used its reserved generation before
/// 0.6.0) has no share.
pub const fn in_generation_share(p: u16, generation: u32) -> bool {
    is_reserved(p)
        && generation < crate::generator::citus::LIVE_GENERATIONS
        && (p - FIRST) as u32 % crate::generator::citus::LIVE_GENERATIONS == generation
}

/// The first partition of the lease region: 63488-65535, the upper half of the reserved range.
/// Partition leases ([`crate::generator::lease`]) take their pools only there, from their
/// timeline's share; `sno_generate_at` never grants there. So a lease partition an old primary
/// granted in WAL its promoted standby never received can never be granted by the standby to
/// `sno_generate_at` either (its leases' holders may still stamp it).
pub const LEASE_FIRST: u16 = FIRST + 2048;

/// Whether `p` is in the lease region.
#[inline]
pub const fn is_lease_region(p: u16) -> bool {
    p >= LEASE_FIRST
}

/// Whether `sno_generate_at`'s allocator may grant `p` (a reserved partition below the lease
/// region), on a Citus coordinator within generation `share`'s share.
pub const fn for_generate_at(p: u16, share: Option<u32>) -> bool {
    is_reserved(p)
        && !is_lease_region(p)
        && match share {
            Some(k) => in_generation_share(p, k),
            None => true,
        }
}

/// Whether a lease pool of share `share` (its WAL timeline's, or a Citus coordinator's
/// generation) may take `p`.
pub const fn for_leases(p: u16, share: u32) -> bool {
    is_lease_region(p) && in_generation_share(p, share)
}

/// The sequence numbers of one unit of a partition.
const SEQUENCES: u32 = 1 << 16;

/// Where one meta byte of a grant stands: the sequence numbers it may give next, such that no
/// (unit, sequence) is ever given twice, whatever order the units come in.
///
/// * `hi`: the latest unit given (units past it were never given);
/// * `next`: the next sequence number of unit `hi` (those below it were given in `hi`);
/// * `fresh`: a number past every sequence number given in any unit.
///
/// A unit past `hi` starts at 0; `hi` again takes `next`; a unit before `hi` (time going back)
/// takes `fresh`, unused in every unit. So within one unit the numbers given only increase:
/// calls with non-decreasing units get increasing IDs. When a unit's numbers run out, the
/// grant is used up ([`GrantCursor::take`] says `None`) and the session needs a new one.
///
/// A session's own, in its memory: not the server's shared cursor of `sno_generate`
/// ([`crate::generator::cursor::Cursor`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GrantCursor {
    hi: i64,
    next: u32,
    fresh: u32,
}

impl Default for GrantCursor {
    fn default() -> Self {
        GrantCursor::NEW
    }
}

impl GrantCursor {
    /// A cursor of a grant nothing was taken from.
    pub const NEW: GrantCursor = GrantCursor {
        hi: -1,
        next: 0,
        fresh: 0,
    };

    /// The sequence number for the next ID in `unit`, or `None` when this grant has none left
    /// there.
    #[inline]
    pub fn take(&mut self, unit: u64) -> Option<u16> {
        let unit = unit as i64;
        let seq = if unit > self.hi {
            self.hi = unit;
            self.next = 0;
            0
        } else if unit == self.hi {
            if self.next >= SEQUENCES {
                return None;
            }
            self.next
        } else {
            if self.fresh >= SEQUENCES {
                return None;
            }
            let s = self.fresh;
            self.fresh += 1;
            return Some(s as u16);
        };
        self.next = seq + 1;
        self.fresh = self.fresh.max(self.next);
        Some(seq as u16)
    }

    /// How many more IDs this cursor can give before its grant is used up, for calls out of
    /// order (for the tests and the view).
    pub fn left_out_of_order(&self) -> u32 {
        SEQUENCES - self.fresh
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;

    #[test]
    fn the_reserved_range_is_the_top_sixteenth() {
        assert!(!is_reserved(61439));
        assert!(is_reserved(61440));
        assert!(is_reserved(65535));
        assert_eq!(COUNT, 4096);
        // Citus group g's generation 15.
        assert_eq!(crate::generator::citus::partition(0, 15), Some(FIRST));
        assert_eq!(crate::generator::citus::partition(4095, 15), Some(65535));
    }

    #[test]
    fn the_generations_shares_cover_the_range_without_overlap() {
        let mut count = [0u32; 15];
        for p in FIRST..=u16::MAX {
            let owners: Vec<u32> = (0..15).filter(|&k| in_generation_share(p, k)).collect();
            assert_eq!(owners.len(), 1, "{p}");
            count[owners[0] as usize] += 1;
        }
        assert_eq!(count.iter().sum::<u32>(), COUNT);
        assert!(count.iter().all(|&c| c == 273 || c == 274), "{count:?}");
        assert!(!in_generation_share(61_439, 0));
        // Generation 15 (kept by an install older than the range) has none.
        assert!((FIRST..=u16::MAX).all(|p| !in_generation_share(p, 15)));
    }

    #[test]
    fn the_lease_region_is_the_upper_half_and_every_share_has_part_of_it() {
        assert!(!is_lease_region(63487) && is_lease_region(63488));
        for p in FIRST..=u16::MAX {
            let leases = (0..15).any(|k| for_leases(p, k));
            assert_ne!(leases, for_generate_at(p, None), "{p}");
        }
        for k in 0..15 {
            let n = (FIRST..=u16::MAX).filter(|&p| for_leases(p, k)).count();
            assert!((136..=137).contains(&n), "share {k}: {n}");
        }
    }

    #[test]
    fn in_order_units_restart_their_numbers_and_never_run_out() {
        let mut c = GrantCursor::NEW;
        for u in 0..100_000u64 {
            assert_eq!(c.take(u * 3), Some(0));
            assert_eq!(c.take(u * 3), Some(1));
        }
        assert_eq!(c.left_out_of_order(), SEQUENCES - 2);
    }

    #[test]
    fn a_unit_runs_out_after_every_number() {
        let mut c = GrantCursor::NEW;
        for s in 0..SEQUENCES {
            assert_eq!(c.take(7), Some(s as u16));
        }
        assert_eq!(c.take(7), None);
        assert_eq!(c.take(6), None);
        // A later unit still has all its numbers.
        assert_eq!(c.take(8), Some(0));
    }

    #[test]
    fn a_unit_given_again_after_later_ones_sorts_after_its_earlier_numbers() {
        let mut c = GrantCursor::NEW;
        assert_eq!(c.take(10), Some(0));
        assert_eq!(c.take(10), Some(1));
        assert_eq!(c.take(20), Some(0));
        assert_eq!(c.take(10), Some(2));
        assert_eq!(c.take(5), Some(3));
        assert_eq!(c.take(20), Some(1));
        assert_eq!(c.take(20), Some(2));
        assert_eq!(c.take(10), Some(4));
    }

    proptest! {
        /// Whatever the order of the units: never one (unit, sequence) twice, and within a
        /// unit the numbers only grow (so non-decreasing units give increasing IDs).
        #[test]
        fn never_twice_and_increasing_within_a_unit(
            units in proptest::collection::vec(0u64..40, 1..3000),
        ) {
            let mut c = GrantCursor::NEW;
            let mut seen = HashSet::new();
            let mut last = std::collections::HashMap::new();
            for u in units {
                let Some(s) = c.take(u) else { break };
                prop_assert!(seen.insert((u, s)), "({u}, {s}) twice");
                if let Some(&prev) = last.get(&u) {
                    prop_assert!(s > prev, "unit {u}: {s} after {prev}");
                }
                last.insert(u, s);
            }
        }
    }
}
