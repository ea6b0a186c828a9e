//! The C symbols of sno 0.1.0 whose SQL signature or columns changed in 0.2.0.
//!
//! Upgrading the package replaces the library at once, but a database's catalog stays at the
//! extension version it was created or last updated with until `ALTER EXTENSION sno UPDATE`
//! runs in it. Its functions name C symbols of that version. Each symbol here keeps the
//! arguments and columns that version declared, so that those functions keep working (and
//! never read arguments or fill columns their catalog entry does not have); the current SQL
//! uses new symbols (`generator_info_wrapper`, ...). The other symbols of 0.1.0 are unchanged.
//! None of these appears in a current install script (`sql = false`).

use super::durable::generator_initialize;
use super::monitor::{generator_backends, generator_info};
use pgrx::prelude::*;

/// 0.1.0's `sno_generator_info()`: the current row without the columns added since
/// (`state_writes`, `state_write_waits`); its `leases` column is now `units_opened`.
#[pg_extern(sql = false, volatile, parallel_safe)]
#[allow(clippy::type_complexity)]
fn sno_generator_info() -> TableIterator<
    'static,
    (
        name!(partition, Option<i32>),
        name!(partition_source, Option<String>),
        name!(system_identifier, Option<String>),
        name!(high_water, Option<TimestampWithTimeZone>),
        name!(safe_mark, Option<TimestampWithTimeZone>),
        name!(tick, Option<i32>),
        name!(regressions, i64),
        name!(ids_issued, i64),
        name!(leases, i64),
        name!(full_unit_stalls, i64),
        name!(clock_waits, i64),
        name!(clock_wait_failures, i64),
        name!(active_backends, i32),
        name!(state, String),
        name!(horizon, Option<TimestampWithTimeZone>),
    ),
> {
    TableIterator::new(generator_info().map(
        |(a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, _, _)| {
            (a, b, c, d, e, f, g, h, i, j, k, l, m, n, o)
        },
    ))
}

/// 0.1.0's `sno_generator_backends()`: `leases` is now `units_opened`; there are no per-backend
/// leases any more, so their columns are NULL.
#[pg_extern(sql = false, volatile, parallel_safe)]
#[allow(clippy::type_complexity)]
fn sno_generator_backends() -> TableIterator<
    'static,
    (
        name!(pid, i32),
        name!(ids_issued, i64),
        name!(leases, i64),
        name!(full_unit_stalls, i64),
        name!(clock_waits, i64),
        name!(lease_time, Option<TimestampWithTimeZone>),
        name!(lease_tick, Option<i32>),
        name!(lease_start, Option<i32>),
        name!(lease_end, Option<i32>),
    ),
> {
    TableIterator::new(
        generator_backends().map(|(a, b, c, d, e)| (a, b, c, d, e, None, None, None, None)),
    )
}

/// 0.1.0's `sno_generator_initialize(force bool)`: without `take_over`.
#[pg_extern(sql = false, volatile, parallel_unsafe)]
fn sno_generator_initialize(force: bool) -> bool {
    generator_initialize(force, false)
}
