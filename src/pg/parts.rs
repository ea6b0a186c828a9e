//! The SQL functions that take a `sno` apart and build one from parts: `sno_time`,
//! `sno_meta`, `sno_partition`, `sno_sequence`, `sno_tick`, `sno_from_parts`, and the unit
//! bounds `sno_min` / `sno_max` used for index range scans by time, and `sno_lower_bound` /
//! `sno_upper_bound`, the same bounds defined for every instant, which the planner adds.

use crate::id::layout::Sno;
use crate::id::time::{pg_micros_to_units, time_lower_bound, time_upper_bound, units_to_pg_micros};
use crate::pg::errors::{self, Problem};
use crate::pg::fmgr::{arg_i32, arg_i64, arg_sno, finfo_v1, i32_datum, sno_datum};
use pgrx::pg_guard;
use pgrx::pg_sys;

finfo_v1!(
    pg_finfo_sno_time,
    pg_finfo_sno_meta,
    pg_finfo_sno_partition,
    pg_finfo_sno_sequence,
    pg_finfo_sno_tick,
    pg_finfo_sno_from_parts,
    pg_finfo_sno_min,
    pg_finfo_sno_max,
    pg_finfo_sno_lower_bound,
    pg_finfo_sno_upper_bound,
    pg_finfo_sno_lower_bound_date,
    pg_finfo_sno_upper_bound_date,
    pg_finfo_sno_lower_bound_timestamp,
    pg_finfo_sno_upper_bound_timestamp,
);

/// `sno_time(sno) → timestamptz`: the start of the ID's 4 ms unit, exact.
#[pg_guard]
#[no_mangle]
pub unsafe extern "C-unwind" fn sno_time(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    pg_sys::Datum::from(units_to_pg_micros(arg_sno(fcinfo, 0).units()))
}

/// `sno_meta(sno) → int`
#[pg_guard]
#[no_mangle]
pub unsafe extern "C-unwind" fn sno_meta(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    i32_datum(arg_sno(fcinfo, 0).meta() as i32)
}

/// `sno_partition(sno) → int`
#[pg_guard]
#[no_mangle]
pub unsafe extern "C-unwind" fn sno_partition(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    i32_datum(arg_sno(fcinfo, 0).partition() as i32)
}

/// `sno_sequence(sno) → int`
#[pg_guard]
#[no_mangle]
pub unsafe extern "C-unwind" fn sno_sequence(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    i32_datum(arg_sno(fcinfo, 0).sequence() as i32)
}

/// `sno_tick(sno) → int`: the tick-tock bit, 0 or 1.
#[pg_guard]
#[no_mangle]
pub unsafe extern "C-unwind" fn sno_tick(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    i32_datum(arg_sno(fcinfo, 0).tick() as i32)
}

/// The 4 ms unit holding a timestamp, or an ERROR (SQLSTATE 22008) naming it.
pub fn units_or_raise(ts: i64) -> u64 {
    match pg_micros_to_units(ts) {
        Ok(u) => u,
        Err(_) => errors::raise(Problem::TimeOutOfRange(ts)),
    }
}

/// `sno_from_parts(time timestamptz, meta int, partition int, sequence int, tick int DEFAULT 0)`
#[pg_guard]
#[no_mangle]
pub unsafe extern "C-unwind" fn sno_from_parts(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    let units = units_or_raise(arg_i64(fcinfo, 0));
    let meta = arg_i32(fcinfo, 1) as i64;
    let partition = arg_i32(fcinfo, 2) as i64;
    let sequence = arg_i32(fcinfo, 3) as i64;
    let tick = arg_i32(fcinfo, 4) as i64;
    match Sno::from_parts(units, tick, meta, partition, sequence) {
        Ok(id) => sno_datum(id),
        Err(e) => errors::raise(Problem::Parts(e)),
    }
}

/// `sno_min(timestamptz) → sno`: the smallest ID of the 4 ms unit holding the instant.
#[pg_guard]
#[no_mangle]
pub unsafe extern "C-unwind" fn sno_min(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    sno_datum(Sno::min_of_unit(units_or_raise(arg_i64(fcinfo, 0))))
}

/// `sno_max(timestamptz) → sno`: the largest ID of the 4 ms unit holding the instant
/// (tick-tock bit 1, meta, partition and sequence at their maximum).
#[pg_guard]
#[no_mangle]
pub unsafe extern "C-unwind" fn sno_max(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    sno_datum(Sno::max_of_unit(units_or_raise(arg_i64(fcinfo, 0))))
}

/// `sno_lower_bound(timestamptz) → sno`: `sno_min` for any instant, never an error (the
/// smallest or largest ID outside the format's range). `sno_time(id) >= t` implies
/// `id >= sno_lower_bound(t)`: the bound the planner adds ([`crate::pg::planner`]).
#[pg_guard]
#[no_mangle]
pub unsafe extern "C-unwind" fn sno_lower_bound(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    sno_datum(time_lower_bound(arg_i64(fcinfo, 0)))
}

/// `sno_upper_bound(timestamptz) → sno`: `sno_max` for any instant, never an error.
/// `sno_time(id) <= t` implies `id <= sno_upper_bound(t)`.
#[pg_guard]
#[no_mangle]
pub unsafe extern "C-unwind" fn sno_upper_bound(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    sno_datum(time_upper_bound(arg_i64(fcinfo, 0)))
}

/// A date or timestamp as the instant its comparison with a timestamptz takes it to be (in the
/// session's time zone): past either end of timestamptz's range, `-infinity` or `infinity`, as
/// `date_cmp_timestamptz` and `timestamp_cmp_timestamptz` treat an overflow. Never an error.
fn saturated(t: i64, overflow: core::ffi::c_int) -> i64 {
    match overflow.signum() {
        1 => i64::MAX,
        -1 => i64::MIN,
        _ => t,
    }
}

unsafe fn date_instant(fcinfo: pg_sys::FunctionCallInfo) -> i64 {
    let mut overflow = 0;
    let t = pg_sys::date2timestamptz_opt_overflow(arg_i32(fcinfo, 0), &mut overflow);
    saturated(t, overflow)
}

unsafe fn timestamp_instant(fcinfo: pg_sys::FunctionCallInfo) -> i64 {
    let mut overflow = 0;
    let t = pg_sys::timestamp2timestamptz_opt_overflow(arg_i64(fcinfo, 0), &mut overflow);
    saturated(t, overflow)
}

/// `sno_lower_bound(date) → sno`: for `sno_time(id) >= d` (the date at midnight in the
/// session's time zone, as the comparison converts it). STABLE.
#[pg_guard]
#[no_mangle]
pub unsafe extern "C-unwind" fn sno_lower_bound_date(
    fcinfo: pg_sys::FunctionCallInfo,
) -> pg_sys::Datum {
    sno_datum(time_lower_bound(date_instant(fcinfo)))
}

/// `sno_upper_bound(date) → sno`. STABLE.
#[pg_guard]
#[no_mangle]
pub unsafe extern "C-unwind" fn sno_upper_bound_date(
    fcinfo: pg_sys::FunctionCallInfo,
) -> pg_sys::Datum {
    sno_datum(time_upper_bound(date_instant(fcinfo)))
}

/// `sno_lower_bound(timestamp) → sno` (in the session's time zone). STABLE.
#[pg_guard]
#[no_mangle]
pub unsafe extern "C-unwind" fn sno_lower_bound_timestamp(
    fcinfo: pg_sys::FunctionCallInfo,
) -> pg_sys::Datum {
    sno_datum(time_lower_bound(timestamp_instant(fcinfo)))
}

/// `sno_upper_bound(timestamp) → sno` (in the session's time zone). STABLE.
#[pg_guard]
#[no_mangle]
pub unsafe extern "C-unwind" fn sno_upper_bound_timestamp(
    fcinfo: pg_sys::FunctionCallInfo,
) -> pg_sys::Datum {
    sno_datum(time_upper_bound(timestamp_instant(fcinfo)))
}
