//! Time in sno IDs: 4 ms units since 2010-01-01T00:00:00Z, and conversions to and from
//! PostgreSQL timestamps and Unix time.
//!
//! Pure Rust, no PostgreSQL. muyo/sno silently wraps times outside its 39-bit range; we reject
//! them (the SQL layer reports SQLSTATE 22008, datetime_field_overflow).

use crate::id::layout::MAX_UNITS;

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

    proptest! {
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
