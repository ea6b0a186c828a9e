//! Monitoring: the functions behind the `sno_generator`, `sno_generator_backends` and
//! `sno_generator_lineage` views, and `sno_current_partition`.
//!
//! The library also serves a database still at extension version 0.1.0 (after the package is
//! upgraded, before `ALTER EXTENSION sno UPDATE`): its catalog calls the C symbols of 0.1.0,
//! so the functions whose columns changed since have new symbols (`generator_info_wrapper`,
//! `generator_backends_wrapper`), and the 0.1.0 symbols (`sno_generator_info_wrapper`,
//! `sno_generator_backends_wrapper`) return 0.1.0's columns. Released symbols are never
//! reused for another shape.

use super::{effective_partition, shared_or_raise};
use crate::generator::timeline::Persisted;
use crate::id::time::units_to_pg_micros;
use crate::pg::shmem::{self};
use core::sync::atomic::Ordering::Relaxed;
use pgrx::prelude::*;

/// `sno_generator_info()`: the server's generator, one row.
#[pg_extern(volatile, parallel_safe, name = "sno_generator_info")]
#[allow(clippy::type_complexity)]
pub(super) fn generator_info() -> TableIterator<
    'static,
    (
        name!(partition, i32),
        name!(partition_source, String),
        name!(system_identifier, String),
        name!(high_water, Option<TimestampWithTimeZone>),
        name!(safe_mark, Option<TimestampWithTimeZone>),
        name!(tick, i32),
        name!(regressions, i64),
        name!(ids_issued, i64),
        name!(units_opened, i64),
        name!(full_unit_stalls, i64),
        name!(clock_waits, i64),
        name!(clock_wait_failures, i64),
        name!(active_backends, i32),
        name!(state, String),
        name!(horizon, Option<TimestampWithTimeZone>),
        name!(state_writes, i64),
        name!(state_write_waits, i64),
    ),
> {
    // What sno_generate decided: a monitoring call reads no Citus catalog and publishes
    // nothing (any role may call it, in any database).
    let s = shared_or_raise();
    // A few words under the lock, not the whole timeline.
    let (tl, opened) = shmem::read(s, |g| {
        let t = &g.timeline;
        (
            Persisted {
                horizon: t.horizon,
                safe: t.safe,
                drifts: t.drifts,
            },
            (t.hi, g.units_opened),
        )
    });
    let (hi, opened) = opened;
    let (partition, source) = effective_partition(s);
    let slots = shmem::slots(s);
    let live: u64 = slots
        .iter()
        .filter(|x| x.pid.load(Relaxed) != 0)
        .map(|x| x.issued.load(Relaxed))
        .sum();
    let active = slots.iter().filter(|x| x.pid.load(Relaxed) != 0).count() as i32;
    let ts = |u: u64| TimestampWithTimeZone::try_from(units_to_pg_micros(u)).ok();
    TableIterator::once((
        partition as i32,
        source.to_string(),
        s.system_identifier.to_string(),
        if opened > 0 { ts(hi) } else { None },
        if tl.safe >= 0 {
            ts(tl.safe as u64)
        } else {
            None
        },
        (tl.drifts & 1) as i32,
        tl.drifts as i64,
        (live + s.retired_ids.load(Relaxed)) as i64,
        opened as i64,
        s.full_unit_stalls.load(Relaxed) as i64,
        s.clock_waits.load(Relaxed) as i64,
        s.clock_wait_failures.load(Relaxed) as i64,
        active,
        match s.state.load(Relaxed) {
            shmem::STATE_READY => "ready".to_string(),
            shmem::STATE_MISSING => "no state file".to_string(),
            _ => format!("unusable state file: {}", s.reason()),
        },
        if s.state.load(Relaxed) == shmem::STATE_READY {
            ts(tl.horizon)
        } else {
            None
        },
        s.state_writes.load(Relaxed) as i64,
        s.state_write_waits.load(Relaxed) as i64,
    ))
}

/// `sno_generator_slice()`: the slice of the sequence pool `sno_generate` numbers each unit
/// from (`sno.sequence_min`, `sno.sequence_max`) and the IDs a unit offers. Columns of the
/// `sno_generator` view, after those of `sno_generator_info()`.
#[pg_extern(volatile, parallel_safe)]
#[allow(clippy::type_complexity)]
pub(super) fn sno_generator_slice() -> TableIterator<
    'static,
    (
        name!(sequence_min, i32),
        name!(sequence_max, i32),
        name!(ids_per_unit, i32),
    ),
> {
    let slice = shmem::read(shared_or_raise(), |g| g.timeline.slice);
    TableIterator::once((slice.min as i32, slice.max as i32, slice.capacity() as i32))
}

/// `sno_generator_backends()`: one row per backend that has generated IDs. Execute is granted
/// to `pg_monitor` only (and superusers).
#[pg_extern(volatile, parallel_safe, name = "sno_generator_backends")]
#[allow(clippy::type_complexity)]
pub(super) fn generator_backends() -> TableIterator<
    'static,
    (
        name!(pid, i32),
        name!(ids_issued, i64),
        name!(units_opened, i64),
        name!(full_unit_stalls, i64),
        name!(clock_waits, i64),
    ),
> {
    let s = shared_or_raise();
    let rows: Vec<_> = shmem::slots(s)
        .iter()
        .filter(|x| x.pid.load(Relaxed) != 0)
        .map(|x| {
            (
                x.pid.load(Relaxed),
                x.issued.load(Relaxed) as i64,
                x.units_opened.load(Relaxed) as i64,
                x.full_unit_stalls.load(Relaxed) as i64,
                x.clock_waits.load(Relaxed) as i64,
            )
        })
        .collect();
    TableIterator::new(rows)
}

/// `sno_generator_lineage()`: what this data directory knows of the partitions used in its
/// lineage (this server, the servers it was copied or promoted from, their standbys that were
/// promoted), one row per partition and user, with the time up to which IDs may have been made
/// with it on each tick-tock timeline ([`crate::generator::lineage`]).
#[pg_extern(volatile, parallel_safe)]
#[allow(clippy::type_complexity)]
pub(super) fn sno_generator_lineage() -> TableIterator<
    'static,
    (
        name!(partition, i32),
        name!(used_here, bool),
        name!(ids_until, Option<TimestampWithTimeZone>),
        name!(tick, i32),
        name!(other_tick_until, Option<TimestampWithTimeZone>),
    ),
> {
    let s = shared_or_raise();
    // Without the generator's lock: the copy is some 16 kB.
    let st = shmem::lineage_snapshot(s);
    let ts = |u: i64| {
        (u >= 0)
            .then(|| TimestampWithTimeZone::try_from(units_to_pg_micros(u as u64)).ok())
            .flatten()
    };
    // Partitions that left the table are listed too, with the bound that covers them.
    let rows: Vec<_> = st
        .entries()
        .iter()
        .copied()
        .chain(st.folded())
        .map(|e| {
            (
                e.partition as i32,
                e.mine,
                ts(e.bound.horizon as i64),
                (e.bound.drifts & 1) as i32,
                ts(e.bound.safe),
            )
        })
        .collect();
    TableIterator::new(rows)
}

/// `sno_current_partition() → int`: the partition `sno_generate` writes now.
#[pg_extern(stable, parallel_safe)]
pub(super) fn sno_current_partition() -> i32 {
    effective_partition(shared_or_raise()).0 as i32
}
