//! The durable state: the lineage judged before IDs are made, the state file and WAL record
//! written before the IDs they cover, their redo, and `sno_generator_initialize`.

use super::host::{put_file, source, PgHost};
use super::wal_timeline;
use crate::generator::citus::Source;
use crate::generator::lineage::{GrantRefusal, Refusal};
use crate::generator::server::{self, FileState, SlowError};
use crate::generator::timeline::Timeline;
use crate::pg::errors::{self, Problem};

use crate::generator::server::Memory;
use crate::pg::gucs;
use crate::pg::shmem::{self, Shared};
use core::sync::atomic::Ordering::Relaxed;
use pgrx::pg_sys;
use pgrx::prelude::*;

/// Makes sure the lineage state was judged for the current WAL timeline and source of the
/// partition before IDs are made ([`server::judge`]). Under the lock.
pub(super) fn judge(
    s: &'static Shared,
    g: &mut Memory,
    timeline: u32,
    take_over: bool,
) -> Result<(), SlowError> {
    server::judge(&PgHost(s), g, timeline, take_over)
}

/// The `sno lineage` worker's look ([`server::settle`], see [`crate::pg::worker`]): judges the
/// lineage and writes what is due (a changed lineage, a renewal, the idle lease). Errors are
/// logged, not raised: `sno_generate` raises them to the user. Returns whether no lease is on
/// disk yet (the worker then looks again soon).
pub fn settle(s: &'static Shared, opened: &mut u64) -> bool {
    s.renew_wanted.store(false, Relaxed);
    // SAFETY: reads a shared flag.
    if unsafe { pg_sys::RecoveryInProgress() } || s.state.load(Relaxed) != shmem::STATE_READY {
        return false;
    }
    let h = PgHost(s);
    let written = server::settle(
        &h,
        wal_timeline(),
        opened,
        gucs::idle_horizon_units(),
        |w| shmem::writing(s, w),
    );
    match written {
        Ok(soon) => soon,
        Err(e) => {
            pgrx::log!("sno: could not write the generator state file: {e}");
            shmem::locked(s, |g| {
                g.timeline
                    .lease_wanted(gucs::idle_horizon_units(), server::HORIZON_AHEAD)
            })
        }
    }
}

/// At a clean stop (the worker's exit at shutdown): the state file gets this server's exact
/// high-water mark instead of the lease or horizon ahead of it ([`server::stop_plan`]), so that
/// a restart with the clock past the last ID flips nothing. Only the file: WAL and the standbys
/// keep the bound they have, which is never too small. Errors are logged.
pub fn stop(s: &'static Shared) {
    // SAFETY: reads a shared flag.
    if unsafe { pg_sys::RecoveryInProgress() } || s.state.load(Relaxed) != shmem::STATE_READY {
        return;
    }
    let h = PgHost(s);
    let done = shmem::writing(s, || {
        let Some((st, p)) = shmem::locked(s, server::stop_plan) else {
            return Ok(None);
        };
        put_file(s, &st)?;
        shmem::locked(s, |g| server::stopped(&h, g, p));
        Ok::<_, std::io::Error>(Some(p.horizon))
    });
    match done {
        Ok(Some(unit)) => pgrx::log!(
            "sno: generator state written at shutdown: IDs resume after unit {unit}, the last one used"
        ),
        Ok(None) => {}
        Err(e) => pgrx::log!("sno: could not write the generator state file at shutdown: {e}"),
    }
}

/// Writes the durable state now, for a backend that cannot go on without it
/// ([`server::needed_now`]). Waits for a write in flight first (interruptibly), then writes only
/// what is still missing.
pub(super) fn write_now(s: &'static Shared, timeline: u32) -> std::io::Result<bool> {
    // Counted whether this call writes or finds the write it waited for done.
    s.state_write_waits.fetch_add(1, Relaxed);
    shmem::writing_interruptibly(s, || {
        server::write(&PgHost(s), timeline, server::needed_now)
    })
}

/// [`server::write`] of `plan`, holding the writer lock.
fn write_locked(
    s: &'static Shared,
    timeline: u32,
    plan: impl FnOnce(&Memory) -> Option<(crate::generator::bound::Persisted, bool)>,
) -> std::io::Result<bool> {
    server::write(&PgHost(s), timeline, plan)
}

/// Redo of a lineage record (in the startup process): merge it, and write the state file so
/// that the knowledge survives this server's restarts. A state file that could not be read is
/// left alone (the administrator decides); the knowledge is kept in memory.
pub fn replay(s: &'static Shared, rec: &crate::generator::wal_record::Record) {
    let written = shmem::writing(s, || {
        shmem::locked(s, |g| {
            let mut st = g.lineage;
            st.replay(rec.incarnation, rec.timeline, &rec.partitions, rec.bound);
            if rec.incarnation == st.incarnation {
                g.timeline.absorb(rec.bound, &s.hot.cursor);
            }
            keep_replayed(s, g, st)
        })
    });
    if let Err(e) = written {
        raise_write(e);
    }
}

/// What redo taught the lineage (`st`), kept: in shared memory, and in the state file. A standby
/// or a restore (archive recovery) learns its lineage here: it writes what it knows, creating
/// the file if it had none. Crash recovery with a lost or unusable file must not: the records it
/// replays are not all this server's own writes (those after the last flushed one are lost), so
/// the HINT's choices stay with the administrator.
fn keep_replayed(
    s: &'static Shared,
    g: &mut Memory,
    st: crate::generator::lineage::State,
) -> std::io::Result<()> {
    let status = s.state.load(Relaxed);
    // SAFETY: plain read of a startup-process global.
    let archive = unsafe { pg_sys::ArchiveRecoveryRequested };
    if status == shmem::STATE_READY || (status == shmem::STATE_MISSING && archive) {
        put_file(s, &st)?;
        s.state.store(shmem::STATE_READY, Relaxed);
    }
    shmem::set_lineage(s, g, st);
    Ok(())
}

/// Grants this session a reserved partition ([`crate::generator::lineage::State::grant`]),
/// after noting the grants a database's table names (`known`, which a restored database
/// brings): the state file records it, then a grant record in WAL, flushed and confirmed by
/// the synchronous standbys, before the caller uses it. Not in recovery; the lineage judged
/// first (the caller's `sno_generate_at` does that).
///
/// The role's limit is checked under the same lock, against every grant to it the lineage
/// records (a grant whose transaction rolled back counts: the partition is gone for good).
pub(super) fn grant_reserved(s: &'static Shared, r: &GrantRequest) -> u16 {
    enum Failed {
        Refused(GrantRefusal),
        Limit,
        Taken(u16),
        Write(std::io::Error),
    }
    let granted = shmem::writing_interruptibly(s, || {
        let st = shmem::locked(s, |g| {
            let mut st = g.lineage;
            let mut learned = Vec::new();
            for &p in r.known {
                if crate::generator::reserved::is_reserved(p) && !st.granted.contains(p) {
                    st.note_granted(p);
                    learned.push(p);
                }
            }
            if let Some(limit) = r.limit {
                if i64::from(st.grants_of(r.role)) >= i64::from(limit) {
                    return Err(Failed::Limit);
                }
            }
            let p = match r.given {
                // A partition this node already knows as used or granted: the coordinator did
                // not know it (a generation 15 kept from before 0.6.0, a restored table).
                Some(p) if st.reserved_taken(p) => return Err(Failed::Taken(p)),
                Some(p) => p,
                None => st
                    .grant_where(|p| {
                        use crate::generator::reserved::{for_generate_at, for_leases};
                        r.above.is_none_or(|a| p > a)
                            && match (r.leases, r.share) {
                                (true, Some(k)) => for_leases(p, k),
                                (true, None) => false,
                                (false, share) => for_generate_at(p, share),
                            }
                    })
                    .map_err(Failed::Refused)?,
            };
            st.note_grant_to(p, r.role);
            Ok((st, p, learned))
        })?;
        let (st, p, learned) = st;
        put_file(s, &st).map_err(Failed::Write)?;
        // The grants the table taught go to WAL too, so that standbys never grant them either.
        for q in learned {
            crate::pg::wal::log_grant(st.incarnation, q, 0);
        }
        let lsn = crate::pg::wal::log_grant(st.incarnation, p, r.role);
        crate::pg::wal::flush(lsn);
        shmem::locked(s, |g| {
            let mut now = g.lineage;
            for q in st.granted.iter() {
                now.note_grant_to(q, st.grantee(q));
            }
            shmem::set_lineage(s, g, now);
        });
        Ok((p, lsn))
    });
    match granted {
        Ok((p, lsn)) => {
            crate::pg::wal::make_durable(lsn);
            p
        }
        Err(Failed::Write(e)) => raise_write(e),
        Err(Failed::Taken(p)) => errors::raise(Problem::CoordinatorRefused {
            message: &format!("it granted partition {p}, which this node's lineage already used"),
        }),
        Err(Failed::Limit) => errors::raise(Problem::ReservedLimit {
            role: r.role_name,
            limit: r.limit.unwrap_or(0),
        }),
        Err(Failed::Refused(GrantRefusal::Copy)) if unrecorded() => {
            errors::raise(Problem::GrantsUnrecorded { leases: false })
        }
        Err(Failed::Refused(GrantRefusal::Copy)) => errors::raise(Problem::GrantOnCopy),
        Err(Failed::Refused(GrantRefusal::Exhausted)) => errors::raise(Problem::ReservedExhausted),
    }
}

/// What [`grant_reserved`] is asked for.
pub(super) struct GrantRequest<'a> {
    /// Grants a database's table names (which a restored database brings), noted first.
    pub known: &'a [u16],
    /// On a Citus coordinator, the generation whose share it grants from
    /// ([`crate::generator::reserved::in_generation_share`]).
    pub share: Option<u32>,
    /// For a lease pool: from `share`'s part of the lease region
    /// ([`crate::generator::reserved::for_leases`]); else below it.
    pub leases: bool,
    /// The session's last grant: the new one is above it, so that the session's IDs in one
    /// 4 ms unit still increase (a Citus coordinator's share may have changed, or a partition
    /// below been freed by nothing: grants only grow, but shares interleave).
    pub above: Option<u16>,
    /// A partition the coordinator granted to this node (a worker), recorded here the same way
    /// instead of granting one.
    pub given: Option<u16>,
    /// The role granted it (OID), and its name for the error.
    pub role: u32,
    pub role_name: &'a str,
    /// Its limit (`sno.reserved_limit`); none when the coordinator checked it.
    pub limit: Option<i32>,
}

/// A grant a restored database's `sno_reserved_grants` names (or one another server's
/// `sno_reserved_grants` or lease pool brings by logical replication: `crate::pg::arrival`),
/// recorded in this server's lineage (state file, WAL) unless it is known already. Not in recovery (a table takes no rows there).
pub(crate) fn note_restored_grant(s: &'static Shared, partition: u16) {
    if !crate::generator::reserved::is_reserved(partition)
        || shmem::locked(s, |g| g.lineage.granted.contains(partition))
    {
        return;
    }
    // Without a usable state file yet (none made since a start without one), the grant is
    // kept in memory and WAL: the file, once made, is written from memory.
    let ready = s.state.load(Relaxed) == shmem::STATE_READY;
    let done = shmem::writing_interruptibly(s, || {
        let st = shmem::locked(s, |g| {
            let mut st = g.lineage;
            st.note_granted(partition);
            st
        });
        if ready {
            put_file(s, &st)?;
        }
        let lsn = crate::pg::wal::log_grant(st.incarnation, partition, 0);
        crate::pg::wal::flush(lsn);
        shmem::locked(s, |g| {
            let mut now = g.lineage;
            now.note_granted(partition);
            shmem::set_lineage(s, g, now);
        });
        Ok::<_, std::io::Error>(())
    });
    if let Err(e) = done {
        raise_write(e);
    }
}

/// A grant a restore brings while sno is not preloaded: recorded nowhere, so the record
/// `sno_generator.unrecorded` is left in the data directory (a backend's working directory),
/// which blocks grants once sno is preloaded, until `sno_reserved_relearn()` in every database
/// and `sno_generator_initialize(take_over => true)` ([`crate::generator::unrecorded`]).
pub(crate) fn note_unrecorded() {
    let dir = std::path::Path::new(".");
    if let Err(e) = crate::generator::unrecorded::note(dir, shmem::fsync_enabled()) {
        errors::raise(Problem::UnrecordedNotWritten(&e));
    }
}

/// Whether a restore loaded grants here while sno was not preloaded, unread since.
pub(super) fn unrecorded() -> bool {
    crate::generator::unrecorded::exists(std::path::Path::new("."))
}

/// Redo of a grant record: the partition is never granted again here (nor by this server's
/// copies and promoted standbys); the state file keeps it, as [`replay`] does.
pub fn replay_grant(s: &'static Shared, partition: u16, role: u32) {
    let written = shmem::writing(s, || {
        shmem::locked(s, |g| {
            let mut st = g.lineage;
            st.replay_grant(partition, role);
            keep_replayed(s, g, st)
        })
    });
    if let Err(e) = written {
        raise_write(e);
    }
}

/// Why the lineage's judgment refused: the error a DBA can act on.
pub(super) fn raise_refusal(r: Refusal) -> ! {
    errors::raise(refusal_problem(r))
}

/// The error for a refusal of the lineage's judgment (raised, or shown by the views).
pub(super) fn refusal_problem(r: Refusal) -> Problem<'static> {
    match r {
        Refusal::Inherited(p) => Problem::Inherited {
            partition: p,
            maybe_moved: shmem::shared().is_some_and(|s| s.moved_own.contains(p)),
            citus: crate::pg::citus::loaded(),
        },
        Refusal::CitusCopy(g) => Problem::CitusCopy(g),
        Refusal::CitusGroupTooLarge(g) => Problem::CitusGroupTooLarge(g),
        Refusal::Reserved { partition, granted } => Problem::ReservedPartition {
            partition,
            granted,
            citus: crate::pg::citus::loaded(),
        },
        // SAFETY: plain read of a server global.
        Refusal::CitusNotActivated => Problem::CitusNotActivated(unsafe { pg_sys::PostPortNumber }),
    }
}

/// No usable state file: the error, whose HINT proposes a new explicit partition.
pub(super) fn raise_state(s: &Shared, st: u32) -> ! {
    shmem::note_refusal(s);
    let citus = crate::pg::citus::loaded();
    if st == shmem::STATE_MISSING {
        errors::raise(Problem::NoStateFile { citus })
    } else {
        errors::raise(Problem::BadStateFile {
            reason: s.reason(),
            citus,
        })
    }
}

/// Raises what the slow path or `sno_generator_initialize` could not get past.
pub(super) fn raise_slow(s: &Shared, e: SlowError) -> ! {
    match e {
        SlowError::Clock => errors::raise(Problem::ClockOutOfRange),
        SlowError::State(st) => raise_state(s, st as u32),
        SlowError::Refused(r) => raise_refusal(r),
        SlowError::Member(c) => super::members::raise(c),
        SlowError::Write(e) => raise_write(e),
        SlowError::SameAsLost(key) => errors::raise(Problem::SamePartitionAfterLoss {
            partition: u16::try_from(key).ok(),
            citus: crate::pg::citus::loaded(),
        }),
        SlowError::GaveUp {
            waited_ms,
            until,
            why,
        } => errors::raise(Problem::ClockWaitGaveUp {
            waited_ms,
            until_pg_micros: super::host::until_pg_micros(until),
            why: super::host::wait_reason(why),
        }),
    }
}

/// Redo of the record that the grants a restore loaded were read back (by a superuser's
/// `take_over`, after their grant records, which this standby replayed): the record of them
/// (`sno_generator.unrecorded`), copied here by a base backup taken before, goes too, and so
/// does the block it set at this standby's start beyond the one of a copy (which a promotion
/// lifts), as `take_over` lifted the primary's.
pub fn replay_unrecorded_read_back(s: &'static Shared) {
    let dir = std::path::Path::new(".");
    if let Err(e) = crate::generator::unrecorded::forget(dir, shmem::fsync_enabled()) {
        errors::raise(Problem::UnrecordedNotWritten(&e));
    }
    let written = shmem::writing(s, || {
        shmem::locked(s, |g| {
            let mut st = g.lineage;
            st.grants_blocked_lasting = false;
            keep_replayed(s, g, st)
        })
    });
    if let Err(e) = written {
        raise_write(e);
    }
}

/// Whether `sno_generator_initialize` may start the durable state afresh (no valid file to
/// adopt) with the partition's source now: not with the explicit partition configured when a
/// start found the file missing or unusable (recorded until a state file is written), nor without an explicit partition on a
/// server with Citus (the lost file recorded its group's generations), unless `take_over`
/// says so. `CREATE EXTENSION` in a cluster without a state file, before any `sno_generate`
/// refused for want of it, is taken for a new cluster's first (its install script
/// initializes): nothing was lost there. After such a refusal sno was in use, and a `CREATE
/// EXTENSION` (another database, a `DROP`/`CREATE`) is refused like any other call.
fn may_start_afresh(s: &Shared, take_over: bool) -> Result<(), SlowError> {
    let lost = s.lost_source.load(Relaxed);
    // SAFETY: plain read of a backend global.
    let creating = unsafe { pg_sys::creating_extension };
    if lost == shmem::NOT_LOST
        || take_over
        || (creating
            && s.state.load(Relaxed) == shmem::STATE_MISSING
            && !s.lost_refused.load(Relaxed))
    {
        return Ok(());
    }
    match source(s) {
        Source::Explicit(p) if i64::from(p) != lost => Ok(()),
        Source::Derived if !crate::pg::citus::loaded() => Ok(()),
        now => Err(SlowError::SameAsLost(match now {
            Source::Explicit(p) => i64::from(p),
            _ => -1,
        })),
    }
}

/// `sno_generator_initialize(force bool DEFAULT false, take_over bool DEFAULT false) → bool`.
///
/// Makes the generator's durable state usable, never losing what is known:
/// * state file missing or unusable at start-up, and now a valid one in the data directory
///   (put back from a backup, or copied from the old data directory after pg_upgrade): it is
///   read and adopted, merged with what WAL replay taught this server (true);
/// * no state file at all: one is created from what this server knows (true);
/// * an unusable file: replaced only with `force` (true), keeping what is known;
/// * a usable state: nothing to do (false), except rewriting a file that went missing.
///
/// Started afresh (no valid file to adopt) after `sno_generate` refused for want of the file,
/// it refuses while the partition is still the one in force at that refusal, or is not
/// explicit on a server with Citus: IDs made with it before the loss could be repeated.
///
/// `take_over` makes this server use the explicit partition of the server it was copied from
/// (an administrator's word that the original will never make IDs again), or the partition in
/// force when the state file was lost (the word that no ID made with it can be repeated).
/// Superusers only; a no-op when sno is not preloaded.
#[pg_extern(volatile, parallel_unsafe, name = "sno_generator_initialize")]
pub(super) fn generator_initialize(
    force: pgrx::default!(bool, false),
    take_over: pgrx::default!(bool, false),
) -> bool {
    // SAFETY: plain call.
    if !unsafe { pg_sys::superuser() } {
        errors::raise(Problem::InitializeNotSuperuser);
    }
    let Some(s) = shmem::shared() else {
        return false;
    };
    // SAFETY: reads a shared flag.
    if unsafe { pg_sys::RecoveryInProgress() } {
        errors::raise(Problem::InitializeInRecovery);
    }
    let timeline = wal_timeline();
    let dir = std::path::Path::new(".");
    let outcome = shmem::writing_interruptibly(s, || {
        shmem::locked(s, |g| {
            let status = s.state.load(Relaxed);
            let mut did = false;
            match (status, crate::generator::state_file::read(dir)) {
                (shmem::STATE_READY, Ok(Some(_))) => {}
                (shmem::STATE_READY, _) => {
                    // The file went missing or bad while the server ran: what it holds in memory
                    // is newer than any copy, so it is written again.
                    g.dirty = true;
                    did = true;
                }
                (_, Ok(Some(mut file))) => {
                    if file.system_identifier != s.system_identifier {
                        file.system_identifier = s.system_identifier;
                        file.timeline = crate::generator::lineage::UPGRADED;
                        file.at_start(true, shmem::control_inode(), shmem::draw(), 0);
                    } else {
                        file.at_start(false, shmem::control_inode(), shmem::draw(), timeline);
                    }
                    // What WAL replay taught this server while it had no usable file (crash
                    // recovery replays this server's own records too: a partition the file says
                    // is this server's stays its own, with the later bound).
                    // Partitions that left its table included.
                    file.learn(&g.lineage);
                    // The cursor closed, and a new epoch: the timeline is replaced.
                    g.timeline.close(&s.hot.cursor);
                    shmem::new_epoch(s);
                    let mut tl = Timeline::restore(file.me, g.timeline.slice);
                    tl.recall(file.written_bound());
                    // Promises of the timeline replaced are not kept (absorb voids this round).
                    tl.round = g.timeline.round;
                    // Counters since start-up, and the latest clock reading, go on.
                    (tl.seen, tl.last, tl.flips, tl.regressions) = (
                        g.timeline.seen,
                        g.timeline.last,
                        g.timeline.flips,
                        g.timeline.regressions,
                    );
                    tl.absorb(g.timeline.durable(), &s.hot.cursor);
                    g.timeline = tl;
                    shmem::set_lineage(s, g, file);
                    g.judged = (u32::MAX, -1);
                    g.dirty = true;
                    s.state.store(shmem::STATE_READY, Relaxed);
                    did = true;
                }
                (_, Ok(None)) => {
                    may_start_afresh(s, take_over)?;
                    if unrecorded() && !take_over {
                        // A restore loaded grants while sno was not preloaded: none is granted
                        // until they are read back (the record's text says how).
                        let mut l = g.lineage;
                        l.grants_blocked = true;
                        l.grants_blocked_lasting = true;
                        shmem::set_lineage(s, g, l);
                    }
                    g.dirty = true;
                    s.state.store(shmem::STATE_READY, Relaxed);
                    did = true;
                }
                (_, Err(e)) => {
                    if !force {
                        return Err(SlowError::State(FileState::Broken));
                    }
                    may_start_afresh(s, take_over)?;
                    errors::warn_later(Problem::ReplacingStateFile {
                        reason: &e.to_string(),
                    });
                    g.dirty = true;
                    s.state.store(shmem::STATE_READY, Relaxed);
                    did = true;
                }
            }
            // Judged now, not at the first ID: a copy taken right after CREATE EXTENSION must
            // know the partition this server is configured with. A refusal is sno_generate's to
            // raise (unless the caller asks to take the partition over).
            match judge(s, g, timeline, take_over) {
                Ok(()) => did |= take_over,
                Err(SlowError::Refused(r)) if take_over => return Err(SlowError::Refused(r)),
                Err(SlowError::Refused(_) | SlowError::Member(_)) => {}
                Err(e) => return Err(e),
            }
            Ok(did)
        })
        .and_then(|did| {
            write_locked(s, timeline, |g| {
                g.dirty.then(|| (server::next_durable(&g.timeline), false))
            })
            .map_err(SlowError::Write)?;
            Ok(did)
        })
    });
    match outcome {
        Ok(did) => {
            if take_over && unrecorded() {
                // The superuser's word that every database's grants were read back.
                let dir = std::path::Path::new(".");
                if let Err(e) = crate::generator::unrecorded::forget(dir, shmem::fsync_enabled()) {
                    errors::raise(Problem::UnrecordedNotWritten(&e));
                }
                // And on the standbys, and on a backup restored past this point: a base backup
                // taken while the record was here copied it.
                crate::pg::wal::flush(crate::pg::wal::log_unrecorded_read_back());
            }
            did
        }
        Err(e) => raise_slow(s, e),
    }
}

/// The state file could not be written: no ID is made past the recorded horizon.
pub(super) fn raise_write(e: std::io::Error) -> ! {
    errors::raise(Problem::WriteFailed(&e))
}
