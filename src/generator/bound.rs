//! The durable bound: what is known on disk of the IDs a timeline made ([`Persisted`]), and its
//! arithmetic. The generator's other rooms all speak it: the timeline writes it ahead of the
//! IDs it serves and restores itself from it ([`crate::generator::timeline`]), the lineage keeps
//! one per partition ([`crate::generator::lineage`]), the state file and the WAL record carry it
//! ([`crate::generator::state_file`], [`crate::generator::wal_record`]).
//!
//! Pure Rust, no PostgreSQL. A bound covers both tick-tock timelines: the current one (tick
//! `drifts & 1`) up to `horizon`, the other up to `safe`; [`ticks`] tells them apart, [`merge`]
//! covers two bounds at once.

/// The durable part of a timeline.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Persisted {
    /// Every ID of the current timeline is in a unit `<= horizon`.
    pub horizon: u64,
    /// Every ID of the other timeline is in a unit `<= safe` (-1: none).
    pub safe: i64,
    /// Tick-tock flips so far; the current tick is `drifts & 1`.
    pub drifts: u64,
}

/// Nothing used: the bound of a partition no one has used.
pub const NOTHING: Persisted = Persisted {
    horizon: 0,
    safe: -1,
    drifts: 0,
};

/// The per-timeline bounds (tick 0, tick 1) of a durable timeline; -1: nothing.
pub const fn ticks(p: &Persisted) -> [i64; 2] {
    let t = (p.drifts & 1) as usize;
    let mut b = [0i64; 2];
    b[t] = p.horizon as i64;
    b[1 - t] = p.safe;
    b
}

/// The smallest bound that covers both `a` and `b`: on each tick-tock timeline, the later of
/// the two. The current tick is that of the larger drift count.
pub fn merge(a: Persisted, b: Persisted) -> Persisted {
    let (ta, tb) = (ticks(&a), ticks(&b));
    let drifts = a.drifts.max(b.drifts);
    let t = (drifts & 1) as usize;
    let hi = ta[t].max(tb[t]);
    let other = ta[1 - t].max(tb[1 - t]);
    Persisted {
        horizon: hi.max(0) as u64,
        safe: other,
        drifts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(horizon: u64, safe: i64, drifts: u64) -> Persisted {
        Persisted {
            horizon,
            safe,
            drifts,
        }
    }

    #[test]
    fn merge_takes_the_later_bound_of_each_tick() {
        assert_eq!(merge(p(10, -1, 0), p(20, -1, 0)), p(20, -1, 0));
        // a: tick 0 up to 10; b: tick 1 up to 7, tick 0 up to 12.
        assert_eq!(merge(p(10, -1, 0), p(7, 12, 1)), p(7, 12, 1));
        assert_eq!(merge(p(30, 5, 2), p(7, 12, 1)), p(30, 7, 2));
        assert_eq!(merge(NOTHING, p(5, 3, 4)), p(5, 3, 4));
    }
}
