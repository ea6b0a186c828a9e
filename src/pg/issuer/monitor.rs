//! Monitoring: the functions behind the `sno_generator`, `sno_generator_backends` and
//! `sno_generator_lineage` views, and `sno_current_partition`.
//!
//! What they tell of the next `sno_generate` (its partition, whether it would make an ID and
//! why not) is the pure forecast ([`crate::generator::forecast`]) over what `sno_generate`
//! would look at: it is computed, never published or written, so any role may ask, in any
//! database, as often as it likes.
//!
//! The library also serves a database still at extension version 0.1.0 (after the package is
//! upgraded, before `ALTER EXTENSION sno UPDATE`): its catalog calls the C symbols of 0.1.0,
//! so the functions whose columns changed since have new symbols (`generator_info_wrapper`,
//! `generator_backends_wrapper`), and the 0.1.0 symbols (`sno_generator_info_wrapper`,
//! `sno_generator_backends_wrapper`) return 0.1.0's columns. Released symbols are never
//! reused for another shape: columns added later come from functions of their own
//! (`sno_generator_slice` in 0.3.0, `sno_generator_status` in 0.5.0).

use super::host::{clock_units, OUT_OF_RANGE};
use super::shared_or_raise;
use super::wal_timeline;
use crate::generator::bound::Persisted;
use crate::generator::citus::{Node, Source};
use crate::generator::forecast::{self, File, Forecast, Inputs, Status};
use crate::generator::lineage::NO_GROUP;
use crate::id::time::units_to_pg_micros;
use crate::pg::errors::Problem;
use crate::pg::shmem::{self, Shared};
use core::sync::atomic::Ordering::Relaxed;
use pgrx::prelude::*;

/// What the next `sno_generate` in this database would do, and the partition's source as the
/// views name it, and a Citus disagreement (here, the server) if that is why it would refuse.
///
/// When the generator already judged the lineage for what it would judge now (the WAL
/// timeline and the partition's source), `sno_generate` goes on without judging: so does this,
/// from what the judgment left in shared memory, without copying the lineage (the common case;
/// `sno_current_partition()` may be called for every row). Otherwise the judgment runs on a
/// copy ([`forecast::forecast`]). `generations`: count the Citus group's generations left
/// (only the view shows them).
fn forecast_here(
    s: &'static Shared,
    generations: bool,
) -> (Forecast, String, Option<(Node, Node)>) {
    // SAFETY: reads a shared flag.
    let recovery = unsafe { pg_sys::RecoveryInProgress() };
    let file = match s.state.load(Relaxed) {
        shmem::STATE_READY => File::Ready,
        shmem::STATE_MISSING => File::Missing,
        _ => File::Unusable,
    };
    let peek = crate::pg::citus::peek(s);
    let source = peek.source;
    let timeline = if recovery { 0 } else { wal_timeline() };
    let inputs = Inputs {
        recovery,
        file,
        citus_loaded: crate::pg::citus::loaded(),
        source,
        disagreement: peek.disagreement.is_some(),
        parallel_unread: peek.parallel_unread,
        timeline,
        clock_in_range: clock_units() != OUT_OF_RANGE,
    };
    let key = (timeline, crate::generator::server::source_key(source));
    let judged = shmem::read(s, |g| {
        let group = g.lineage.citus_group;
        let kept = (group != NO_GROUP).then_some(group);
        let same = g.judged == key && !g.lineage.copied;
        // The group's generations are counted on the locked state, not a copy of it, and only
        // for the view that shows them.
        let left = kept
            .filter(|_| generations)
            .map(|k| forecast::generations_left(&g.lineage, k));
        (same, kept, left)
    });
    let (same, kept, left) = judged;
    let quick = same
        && file == File::Ready
        && !recovery
        && !inputs.disagreement
        && !inputs.parallel_unread
        && inputs.clock_in_range;
    let f = if quick {
        let group = match source {
            Source::Explicit(_) => None,
            _ => kept,
        };
        Forecast {
            status: Status::Ready,
            refusal: None,
            partition: Some(s.partition.load(Relaxed) as u16),
            citus_group: group,
            generations_left: group.and(left),
        }
    } else {
        forecast::forecast(inputs, shmem::lineage_snapshot(s))
    };
    let named = match (source, kept) {
        (Source::Explicit(_), _) => "sno.partition".to_string(),
        (Source::Citus(Node::Group(g)), _) => format!("citus group {g}"),
        (_, Some(g)) => format!("citus group {g}"),
        (Source::Citus(Node::NotActivated), None) => "citus".to_string(),
        (Source::Derived, None) => "system identifier".to_string(),
    };
    (f, named, peek.disagreement)
}

/// The error `sno_generate` would raise for `f`, as psql shows it (message, DETAIL, HINT); for
/// a ready generator whose partition is not decided yet, why.
fn status_message(s: &Shared, f: &Forecast, disagreement: Option<(Node, Node)>) -> Option<String> {
    let problem = match (f.status, f.refusal) {
        (Status::Ready, _) if f.partition.is_none() => {
            return Some(
                "The partition is not decided yet: a new derived partition is drawn at the first sno_generate (after a promotion, or when the one this server had was used by another member of its lineage).".to_string(),
            )
        }
        (Status::Ready, _) => return None,
        (_, Some(r)) => super::durable::refusal_problem(r),
        (Status::Standby, _) => Problem::GenerateInRecovery,
        (Status::NoStateFile, _) => Problem::NoStateFile {
            citus: crate::pg::citus::loaded(),
        },
        (Status::UnusableStateFile, _) => Problem::BadStateFile {
            reason: s.reason(),
            citus: crate::pg::citus::loaded(),
        },
        (Status::ClockOutOfRange, _) => Problem::ClockOutOfRange,
        (Status::CitusDisagreement, _) => {
            let (here, server) = disagreement?;
            return Some(text(
                Problem::CitusDisagreement {
                    database: &crate::pg::citus::this_database(),
                    here: &crate::pg::citus::describe(here),
                    server: &crate::pg::citus::describe(server),
                }
                .report(),
            ));
        }
        (Status::NotPreloaded, _) => Problem::NotPreloaded,
        (Status::CitusUnread, _) => Problem::CitusParallelUnread,
        (_, None) => return None,
    };
    Some(text(problem.report()))
}

/// A report as one text: the message, then `DETAIL:` and `HINT:` lines as psql prints them.
fn text(r: crate::pg::report::Report) -> String {
    let mut t = r.message;
    if let Some(d) = r.detail {
        t.push_str("\nDETAIL:  ");
        t.push_str(&d);
    }
    if let Some(h) = r.hint {
        t.push_str("\nHINT:  ");
        t.push_str(&h);
    }
    t
}

/// `sno_generator_info()`: the server's generator, one row. Without sno preloaded, a row that
/// says only that (`sno_generator_status()` tells why): a probe gets an answer, not an error.
#[pg_extern(volatile, parallel_safe, name = "sno_generator_info")]
#[allow(clippy::type_complexity)]
pub(super) fn generator_info() -> TableIterator<
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
    let Some(s) = shmem::shared() else {
        return TableIterator::once((
            None,
            None,
            None,
            None,
            None,
            None,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            "not preloaded".to_string(),
            None,
            0,
            0,
        ));
    };
    // A few words under the lock, not the whole timeline.
    let (tl, opened) = shmem::read(s, |g| {
        let t = &g.timeline;
        (
            Persisted {
                horizon: t.horizon,
                safe: t.safe,
                drifts: t.drifts,
            },
            (t.hi, g.units_opened, t.regressions),
        )
    });
    let (hi, opened, regressions) = opened;
    let (f, source, _) = forecast_here(s, false);
    let slots = shmem::slots(s);
    let live: u64 = slots
        .iter()
        .filter(|x| x.pid.load(Relaxed) != 0)
        .map(|x| x.issued.load(Relaxed))
        .sum();
    let active = slots.iter().filter(|x| x.pid.load(Relaxed) != 0).count() as i32;
    let ts = |u: u64| TimestampWithTimeZone::try_from(units_to_pg_micros(u)).ok();
    TableIterator::once((
        f.partition.map(i32::from),
        Some(source),
        Some(s.system_identifier.to_string()),
        if opened > 0 { ts(hi) } else { None },
        if tl.safe >= 0 {
            ts(tl.safe as u64)
        } else {
            None
        },
        Some((tl.drifts & 1) as i32),
        regressions as i64,
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

/// `sno_generator_status()`: whether `sno_generate` in this database would make an ID now, and
/// if not, why (a fixed code, and the error it would raise); the Citus group and its
/// generations left; flips and failed state-file writes since start-up. Columns of the
/// `sno_generator` view, after those of `sno_generator_slice()` (0.5.0).
#[pg_extern(volatile, parallel_safe)]
#[allow(clippy::type_complexity)]
pub(super) fn sno_generator_status() -> TableIterator<
    'static,
    (
        name!(status, String),
        name!(status_message, Option<String>),
        name!(citus_group, Option<i32>),
        name!(citus_generations_left, Option<i32>),
        name!(flips, i64),
        name!(state_write_failures, i64),
    ),
> {
    let Some(s) = shmem::shared() else {
        let problem = if shmem::preloaded() {
            Problem::NoSharedMemory
        } else {
            Problem::NotPreloaded
        };
        return TableIterator::once((
            Status::NotPreloaded.code().to_string(),
            Some(text(problem.report())),
            None,
            None,
            0,
            0,
        ));
    };
    let (f, _, disagreement) = forecast_here(s, true);
    let flips = shmem::read(s, |g| g.timeline.flips);
    TableIterator::once((
        f.status.code().to_string(),
        status_message(s, &f, disagreement),
        f.citus_group.map(|g| g as i32),
        f.generations_left.map(|n| n as i32),
        flips as i64,
        s.state_write_failures.load(Relaxed) as i64,
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
    let slice = match shmem::shared() {
        Some(s) => shmem::read(s, |g| g.timeline.slice),
        None => crate::pg::gucs::slice().unwrap_or(crate::generator::cursor::Slice::FULL),
    };
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

/// `sno_current_partition() → int`: the partition the next `sno_generate` in this database
/// writes (on a standby: the one it will write once promoted); NULL when it would make no ID
/// now (sno not preloaded included), or the partition is not decided yet (the `sno_generator`
/// view's `status` and `status_message` say why).
#[pg_extern(stable, parallel_safe)]
pub(super) fn sno_current_partition() -> Option<i32> {
    shmem::shared().and_then(|s| forecast_here(s, false).0.partition.map(i32::from))
}

/// `sno_reserved_space()`: the reserved partitions (61440-65535) of this server's lineage: how
/// many its allocator granted (to `sno_generate_at` sessions, here or on a server it descends
/// from, or named by a restored database's `sno_reserved_grants`), how many a live generator
/// used before the range was reserved, how many are left, and whether this server may grant
/// (a copy beside its original may not). NULL counts without `shared_preload_libraries`.
#[pg_extern(volatile, parallel_safe)]
#[allow(clippy::type_complexity)]
pub(super) fn sno_reserved_space() -> TableIterator<
    'static,
    (
        name!(first_partition, i32),
        name!(last_partition, i32),
        name!(total, i32),
        name!(granted, Option<i32>),
        name!(used_by_live, Option<i32>),
        name!(remaining, Option<i32>),
        name!(may_grant, Option<bool>),
    ),
> {
    use crate::generator::reserved::{COUNT, FIRST};
    let (granted, live, left, may) = match shmem::shared() {
        Some(s) => {
            let st = shmem::lineage_snapshot(s);
            let granted = st.granted.iter().count() as i32;
            let used = st.reserved_used() as i32;
            (
                Some(granted),
                Some(used - granted),
                Some(COUNT as i32 - used),
                Some(!st.grants_blocked),
            )
        }
        None => (None, None, None, None),
    };
    TableIterator::once((
        i32::from(FIRST),
        i32::from(u16::MAX),
        COUNT as i32,
        granted,
        live,
        left,
        may,
    ))
}
