//! Time in sno IDs: 4 ms units since 2010-01-01T00:00:00Z, and conversions to and from
//! PostgreSQL timestamps and Unix time.
//!
//! Pure Rust, no PostgreSQL. muyo/sno silently wraps times outside its 39-bit range; we reject
//! them (the SQL layer reports SQLSTATE 22008, datetime_field_overflow).

use crate::id::layout::{Sno, MAX_UNITS};

/// The sno epoch, 2010-01-01T00:00:00Z, in Unix seconds.
pub const EPOCH_UNIX_SECONDS: i64 = 1_262_304_000;
/// PostgreSQL's epoch, 2000-01-01T00:00:00Z, in Unix seconds.
pub const PG_EPOCH_UNIX_SECONDS: i64 = 946_684_800;
/// Length of one unit in microseconds (PostgreSQL's timestamp resolution).
pub const UNIT_MICROS: i64 = 4_000;
/// Length of one unit in nanoseconds.
pub const UNIT_NANOS: i64 = 4_000_000;
/// The sno epoch in PostgreSQL microseconds (µs since 2000-01-01).
pub const EPOCH_PG_MICROS: i64 = (EPOCH_UNIX_SECONDS - PG_EPOCH_UNIX_SECONDS) * 1_000_000;

/// A time that cannot be stored in a sno ID (before 2010-01-01 or after
/// 2079-09-07T15:47:35.548Z, the start of the last unit, plus that unit's 4 ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutOfRange;

/// The PostgreSQL timestamp (µs since 2000-01-01 UTC) at which a unit starts. Exact.
#[inline]
pub const fn units_to_pg_micros(units: u64) -> i64 {
    EPOCH_PG_MICROS + (units & MAX_UNITS) as i64 * UNIT_MICROS
}

/// The unit holding a PostgreSQL timestamp (floor), or [`OutOfRange`]. PostgreSQL's
/// `infinity` and `-infinity` (`i64::MAX`, `i64::MIN`) are out of range like any other
/// value past the ends.
#[inline]
pub const fn pg_micros_to_units(pg_micros: i64) -> Result<u64, OutOfRange> {
    let since = match pg_micros.checked_sub(EPOCH_PG_MICROS) {
        Some(v) if v >= 0 => v,
        _ => return Err(OutOfRange),
    };
    let units = (since / UNIT_MICROS) as u64;
    if units > MAX_UNITS {
        Err(OutOfRange)
    } else {
        Ok(units)
    }
}

/// The unit holding a Unix time in nanoseconds (floor), or [`OutOfRange`].
#[inline]
pub const fn unix_nanos_to_units(unix_nanos: i128) -> Result<u64, OutOfRange> {
    let since = unix_nanos - EPOCH_UNIX_SECONDS as i128 * 1_000_000_000;
    if since < 0 {
        return Err(OutOfRange);
    }
    let units = since / UNIT_NANOS as i128;
    if units > MAX_UNITS as i128 {
        Err(OutOfRange)
    } else {
        Ok(units as u64)
    }
}

/// The Unix time in milliseconds at which a unit starts (what muyo/sno's `Time()` reports).
#[inline]
pub const fn units_to_unix_millis(units: u64) -> i64 {
    EPOCH_UNIX_SECONDS * 1000 + (units & MAX_UNITS) as i64 * 4
}

/// The unit holding a Unix time given as seconds and nanoseconds (a `timespec`), or `None`
/// outside the range of the format. This is what the generator does with each clock reading.
#[inline(always)]
pub const fn units_from_timespec(secs: i64, nanos: i64) -> Option<u64> {
    let since = secs - EPOCH_UNIX_SECONDS;
    if since < 0 || nanos < 0 {
        return None;
    }
    // 250 units a second; dividing by a constant compiles to a multiply.
    let units = since as u64 * 250 + nanos as u64 / UNIT_NANOS as u64;
    if units > MAX_UNITS {
        None
    } else {
        Some(units)
    }
}

/// The Unix time in nanoseconds at which a unit starts.
#[inline]
pub const fn units_to_unix_nanos(units: u64) -> i128 {
    EPOCH_UNIX_SECONDS as i128 * 1_000_000_000 + (units & MAX_UNITS) as i128 * UNIT_NANOS as i128
}

/// An ID no larger than any ID whose time (the start of its unit) is at or after the
/// PostgreSQL timestamp `pg_micros`: the smallest ID of the unit holding it, [`Sno::ZERO`]
/// before the format's range, [`Sno::MAX`] after it (`-infinity` and `infinity` included).
/// So `sno_time(id) >= t` and `sno_time(id) > t` imply `id >= time_lower_bound(t)`, for every
/// `t`, which is what the planner adds as an index condition. Never fails.
pub const fn time_lower_bound(pg_micros: i64) -> Sno {
    if pg_micros < EPOCH_PG_MICROS {
        return Sno::ZERO;
    }
    match pg_micros_to_units(pg_micros) {
        Ok(u) => Sno::min_of_unit(u),
        Err(_) => Sno::MAX,
    }
}

/// An ID no smaller than any ID whose time is at or before `pg_micros`: the largest ID of the
/// unit holding it, [`Sno::ZERO`] before the format's range (no ID is that early; the zero ID
/// is the smallest bound there is), [`Sno::MAX`] after it. `sno_time(id) <= t` and
/// `sno_time(id) < t` imply `id <= time_upper_bound(t)`. Never fails.
pub const fn time_upper_bound(pg_micros: i64) -> Sno {
    if pg_micros < EPOCH_PG_MICROS {
        return Sno::ZERO;
    }
    match pg_micros_to_units(pg_micros) {
        Ok(u) => Sno::max_of_unit(u),
        Err(_) => Sno::MAX,
    }
}

/// A comparison of an ID's time with an instant, as written: `sno_time(id) < t` is
/// `(Lt, true)`, `t < sno_time(id)` is `(Lt, false)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comparison {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `=`
    Eq,
    /// `>=`
    Ge,
    /// `>`
    Gt,
}

impl Comparison {
    /// Which bounds on the ID the comparison implies: `(lower, upper)`, meaning
    /// `id >= time_lower_bound(t)` and `id <= time_upper_bound(t)`. `time_on_left`: the ID's
    /// time is the left operand.
    pub const fn implied_bounds(self, time_on_left: bool) -> (bool, bool) {
        let c = if time_on_left { self } else { self.commuted() };
        match c {
            Comparison::Lt | Comparison::Le => (false, true),
            Comparison::Eq => (true, true),
            Comparison::Ge | Comparison::Gt => (true, false),
        }
    }

    /// The comparison of times a comparison of IDs implies: `a self b` implies
    /// `time(a) result time(b)`. IDs order by time first, so an order between IDs is an order
    /// (or equality) of their times; only not strictly, since two IDs of one 4 ms unit have one
    /// time: `a < b` implies `time(a) <= time(b)`. A planner that knows only the times (a
    /// TimescaleDB hypertable's chunks, cut by `sno_time(id)`) can use it.
    pub const fn implied_time_comparison(self) -> Comparison {
        match self {
            Comparison::Lt | Comparison::Le => Comparison::Le,
            Comparison::Eq => Comparison::Eq,
            Comparison::Ge | Comparison::Gt => Comparison::Ge,
        }
    }

    /// The same comparison with its operands swapped (`a < b` is `b > a`).
    pub const fn commuted(self) -> Comparison {
        match self {
            Comparison::Lt => Comparison::Gt,
            Comparison::Le => Comparison::Ge,
            Comparison::Eq => Comparison::Eq,
            Comparison::Ge => Comparison::Le,
            Comparison::Gt => Comparison::Lt,
        }
    }

    /// Whether `a self b` holds.
    pub fn holds<T: Ord>(self, a: T, b: T) -> bool {
        match self {
            Comparison::Lt => a < b,
            Comparison::Le => a <= b,
            Comparison::Eq => a == b,
            Comparison::Ge => a >= b,
            Comparison::Gt => a > b,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn range_ends() {
        // 2010-01-01T00:00:00Z and the last unit, 2079-09-07T15:47:35.548Z.
        assert_eq!(units_to_unix_millis(0), 1_262_304_000_000);
        assert_eq!(units_to_unix_millis(MAX_UNITS), 3_461_327_255_548);
        assert_eq!(pg_micros_to_units(EPOCH_PG_MICROS), Ok(0));
        assert_eq!(pg_micros_to_units(EPOCH_PG_MICROS - 1), Err(OutOfRange));
        let last = units_to_pg_micros(MAX_UNITS);
        assert_eq!(pg_micros_to_units(last), Ok(MAX_UNITS));
        assert_eq!(pg_micros_to_units(last + UNIT_MICROS - 1), Ok(MAX_UNITS));
        assert_eq!(pg_micros_to_units(last + UNIT_MICROS), Err(OutOfRange));
        assert_eq!(pg_micros_to_units(i64::MAX), Err(OutOfRange));
        assert_eq!(pg_micros_to_units(i64::MIN), Err(OutOfRange));
    }

    #[test]
    fn unix_nanos_floor() {
        let e = EPOCH_UNIX_SECONDS as i128 * 1_000_000_000;
        assert_eq!(unix_nanos_to_units(e), Ok(0));
        assert_eq!(unix_nanos_to_units(e + 3_999_999), Ok(0));
        assert_eq!(unix_nanos_to_units(e + 4_000_000), Ok(1));
        assert_eq!(unix_nanos_to_units(e - 1), Err(OutOfRange));
    }

    #[test]
    fn timespec_floor_and_range() {
        assert_eq!(units_from_timespec(EPOCH_UNIX_SECONDS, 0), Some(0));
        assert_eq!(units_from_timespec(EPOCH_UNIX_SECONDS, 3_999_999), Some(0));
        assert_eq!(units_from_timespec(EPOCH_UNIX_SECONDS, 4_000_000), Some(1));
        assert_eq!(units_from_timespec(EPOCH_UNIX_SECONDS + 1, 0), Some(250));
        assert_eq!(
            units_from_timespec(EPOCH_UNIX_SECONDS - 1, 999_999_999),
            None
        );
        assert_eq!(
            units_from_timespec(3_461_327_255, 548_000_000),
            Some(MAX_UNITS)
        );
        assert_eq!(units_from_timespec(3_461_327_255, 552_000_000), None);
    }

    #[test]
    fn time_bounds_at_the_ends_of_the_range() {
        let first = EPOCH_PG_MICROS;
        let last = units_to_pg_micros(MAX_UNITS);
        assert_eq!(time_lower_bound(i64::MIN), Sno::ZERO);
        assert_eq!(time_lower_bound(first - 1), Sno::ZERO);
        assert_eq!(time_lower_bound(first), Sno::ZERO);
        assert_eq!(time_upper_bound(first - 1), Sno::ZERO);
        assert_eq!(time_upper_bound(first), Sno::max_of_unit(0));
        assert_eq!(time_lower_bound(last), Sno::min_of_unit(MAX_UNITS));
        assert_eq!(time_upper_bound(last + UNIT_MICROS - 1), Sno::MAX);
        assert_eq!(time_lower_bound(last + UNIT_MICROS), Sno::MAX);
        assert_eq!(time_upper_bound(i64::MAX), Sno::MAX);
        assert_eq!(time_lower_bound(i64::MAX), Sno::MAX);
    }

    /// Any ID, as its time and bytes: the time of a unit near `t` (or at the ends).
    fn id_near(t: i64) -> impl Strategy<Value = Sno> {
        let u =
            pg_micros_to_units(t.clamp(EPOCH_PG_MICROS, units_to_pg_micros(MAX_UNITS))).unwrap();
        (
            prop_oneof![
                Just(0u64),
                Just(MAX_UNITS),
                u.saturating_sub(2)..=(u + 2).min(MAX_UNITS)
            ],
            0u8..=1,
            any::<u8>(),
            any::<u16>(),
            any::<u16>(),
        )
            .prop_map(|(u, tick, m, p, s)| Sno::new(u, tick, m, p, s))
    }

    fn any_time() -> impl Strategy<Value = i64> {
        let first = EPOCH_PG_MICROS;
        let last = units_to_pg_micros(MAX_UNITS) + UNIT_MICROS;
        prop_oneof![
            Just(i64::MIN),
            Just(i64::MAX),
            (first - 10_000)..(first + 10_000),
            (last - 10_000)..(last + 10_000),
            first..last,
        ]
    }

    proptest! {
        #[test]
        fn time_predicates_imply_the_bounds(
            (t, id) in any_time().prop_flat_map(|t| (Just(t), id_near(t)))
        ) {
            let time = units_to_pg_micros(id.units());
            if time >= t {
                prop_assert!(id >= time_lower_bound(t), "{:?} at {} >= {}", id, time, t);
            }
            if time <= t {
                prop_assert!(id <= time_upper_bound(t), "{:?} at {} <= {}", id, time, t);
            }
        }

        #[test]
        fn every_comparison_as_written_implies_its_bounds(
            (t, id) in any_time().prop_flat_map(|t| (Just(t), id_near(t))),
            cmp in prop_oneof![
                Just(Comparison::Lt), Just(Comparison::Le), Just(Comparison::Eq),
                Just(Comparison::Ge), Just(Comparison::Gt)
            ],
            time_on_left in any::<bool>(),
        ) {
            let time = units_to_pg_micros(id.units());
            let holds = if time_on_left { cmp.holds(time, t) } else { cmp.holds(t, time) };
            let (lower, upper) = cmp.implied_bounds(time_on_left);
            if holds && lower {
                prop_assert!(id >= time_lower_bound(t));
            }
            if holds && upper {
                prop_assert!(id <= time_upper_bound(t));
            }
            // And a bound is given whenever one side of the range is constrained.
            prop_assert!(lower || upper);
        }

        #[test]
        fn an_id_comparison_implies_its_time_comparison(
            a in id_near(EPOCH_PG_MICROS + 86_400_000_000),
            b in id_near(EPOCH_PG_MICROS + 86_400_000_000),
            cmp in prop_oneof![
                Just(Comparison::Lt), Just(Comparison::Le), Just(Comparison::Eq),
                Just(Comparison::Ge), Just(Comparison::Gt)
            ],
        ) {
            let implied = cmp.implied_time_comparison();
            if cmp.holds(a, b) {
                prop_assert!(implied.holds(a.units(), b.units()), "{:?} {:?} {:?}", a, cmp, b);
            }
            // Never stricter than needed: two IDs of one unit compare every way but their time.
            prop_assert!(!matches!(implied, Comparison::Lt | Comparison::Gt));
        }

        #[test]
        fn timespec_agrees_with_nanos(secs in EPOCH_UNIX_SECONDS..3_461_327_255i64, nanos in 0i64..1_000_000_000) {
            let n = secs as i128 * 1_000_000_000 + nanos as i128;
            prop_assert_eq!(units_from_timespec(secs, nanos), unix_nanos_to_units(n).ok());
            let u = units_from_timespec(secs, nanos).unwrap();
            prop_assert!(units_to_unix_nanos(u) <= n && n < units_to_unix_nanos(u + 1));
        }

        #[test]
        fn pg_micros_round_trip(u in 0..=MAX_UNITS, within in 0..UNIT_MICROS) {
            prop_assert_eq!(pg_micros_to_units(units_to_pg_micros(u) + within), Ok(u));
        }
    }
}
