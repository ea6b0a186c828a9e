//! `sno_generate(meta)`: IDs made inside the database, never twice the same.
//!
//! Fast path (almost every call): read the wall clock, and if it is still in the unit of this
//! backend's lease, take the lease's next sequence number. No lock, no shared memory write
//! other than this backend's own statistics slot, no allocation but the 10-byte result.
//!
//! Slow path (a new unit, a used-up lease, a clock regression): take the shard table's LWLock,
//! read the clock again under it (so that two backends reading the clock a moment apart never
//! mistake each other's readings for a regression), and ask the [`Timeline`] for a lease. A
//! wait (full unit, clock behind) happens outside the lock, on the process latch, so a query
//! cancel or a postmaster death ends it; `sno.max_clock_wait` bounds it.
//!
//! A backend that exits leaves its unused lease unused: leases only move forward within a
//! (unit, timeline), so nobody can be handed those numbers again.

use crate::fmgr::{arg_i32, finfo_v1, sno_datum, UserError};
use crate::generator::{Grant, Local, Persisted, Timeline};
use crate::gucs;
use crate::layout::{Sno, MAX_UNITS};
use crate::lineage::Refusal;
use crate::shmem::{self, Guarded, Shared, Slot};
use crate::time::{units_from_timespec, units_to_pg_micros, units_to_unix_nanos};
use core::cell::UnsafeCell;
use core::sync::atomic::Ordering::Relaxed;
use pgrx::prelude::*;
use pgrx::{pg_sys, PgSqlErrorCode};

finfo_v1!(pg_finfo_sno_generate, pg_finfo_sno_generate_default);

/// How far past the high-water mark the durable horizon is written: 2 s (500 units).
/// After a crash the server resumes past it, so a restart within 2 s flips the tick-tock bit.
const HORIZON_AHEAD: u64 = 500;
/// The horizon is renewed when the high-water mark comes within 1 s of it, so the state file
/// is written (and flushed) about once a second while IDs are being made, never per ID.
const HORIZON_MARGIN: u64 = 250;

/// A clock reading outside the range of the format.
const OUT_OF_RANGE: u64 = u64::MAX;

/// This backend's generator.
struct Backend {
    /// The lease being spent.
    local: Local,
    /// Partition to write, fixed at each lease (so a reload takes effect within one unit).
    partition: u16,
    /// This backend's statistics slot (null when it has none).
    slot: *const Slot,
    /// IDs this backend has issued.
    issued: u64,
    /// The end of the last lineage record this backend made durable.
    durable_lsn: u64,
    /// Whether the slot and the exit callback are set up.
    ready: bool,
}

/// Per-backend state without a lock: a PostgreSQL backend runs SQL functions on one thread,
/// and parallel workers are separate processes with their own copy.
struct BackendCell(UnsafeCell<Backend>);
// SAFETY: see above; the cell is never touched from another thread.
unsafe impl Sync for BackendCell {}

static BACKEND: BackendCell = BackendCell(UnsafeCell::new(Backend {
    local: Local {
        lease: crate::generator::Lease {
            unit: 0,
            tick: 0,
            next: 0,
            end: 0,
        },
        block: 0,
    },
    partition: 0,
    slot: core::ptr::null(),
    issued: 0,
    durable_lsn: 0,
    ready: false,
}));

/// The wall clock (CLOCK_REALTIME) in 4 ms units, or [`OUT_OF_RANGE`].
#[inline(always)]
fn clock_units() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer; CLOCK_REALTIME always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    units_from_timespec(ts.tv_sec, ts.tv_nsec).unwrap_or(OUT_OF_RANGE)
}

/// `sno_generate(meta int) → sno`
#[pg_guard]
#[no_mangle]
pub unsafe extern "C-unwind" fn sno_generate(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    let meta = arg_i32(fcinfo, 0);
    if !(0..=255).contains(&meta) {
        UserError::new(
            PgSqlErrorCode::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
            format!("meta {meta} is out of range for type sno"),
        )
        .detail("The value must be 0 to 255.".into())
        .raise();
    }
    sno_datum(generate(meta as u8))
}

/// `sno_generate() → sno` (meta 0)
#[pg_guard]
#[no_mangle]
pub unsafe extern "C-unwind" fn sno_generate_default(
    _fcinfo: pg_sys::FunctionCallInfo,
) -> pg_sys::Datum {
    sno_datum(generate(0))
}

/// One new ID.
#[inline(always)]
pub(crate) fn generate(meta: u8) -> Sno {
    // SAFETY: single-threaded backend (see BackendCell).
    let b = unsafe { &mut *BACKEND.0.get() };
    let now = clock_units();
    if let Some((unit, tick, seq)) = b.local.next(now) {
        b.count();
        return Sno::new(unit, tick, meta, b.partition, seq);
    }
    generate_slow(b, meta)
}

impl Backend {
    #[inline(always)]
    fn count(&mut self) {
        self.issued += 1;
        // SAFETY: the slot is this backend's own, in shared memory that outlives it.
        if let Some(slot) = unsafe { self.slot.as_ref() } {
            slot.issued.store(self.issued, Relaxed);
        }
    }
}

/// The shard table, or the error a user can act on.
fn shared_or_raise() -> &'static Shared {
    match shmem::shared() {
        Some(s) => s,
        None => {
            let (msg, hint) = if shmem::preloaded() {
                (
                    "sno: shared memory is not initialised",
                    "Restart the server.",
                )
            } else {
                (
                    "sno_generate needs the sno library in shared_preload_libraries",
                    "Add sno to shared_preload_libraries in postgresql.conf (shared_preload_libraries = 'sno') and restart the server.",
                )
            };
            UserError::new(
                PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                msg.into(),
            )
            .hint(hint)
            .raise()
        }
    }
}

/// The partition to write: `sno.partition`, or the one derived from the system identifier.
pub fn effective_partition(s: &Shared) -> (u16, &'static str) {
    match configured() {
        Some(p) => (p, "sno.partition"),
        None => (
            s.derived_partition.load(Relaxed) as u16,
            "system identifier",
        ),
    }
}

/// Claims this backend's statistics slot and arranges for its count to be kept at exit.
fn set_up(b: &mut Backend, s: &'static Shared) {
    let slots = shmem::slots(s);
    if let Some(slot) = shmem::my_slot_index().and_then(|i| slots.get(i)) {
        // SAFETY: plain read of a per-process global.
        slot.pid.store(unsafe { pg_sys::MyProcPid }, Relaxed);
        for c in [
            &slot.issued,
            &slot.leases,
            &slot.full_unit_stalls,
            &slot.clock_waits,
            &slot.lease_unit,
        ] {
            c.store(0, Relaxed);
        }
        b.slot = slot;
    }
    // SAFETY: registered once per backend (there are 20 exit-callback slots per process).
    unsafe { pg_sys::before_shmem_exit(Some(on_exit), pg_sys::Datum::from(0)) };
    b.ready = true;
}

/// At backend exit: fold this backend's count into the server total and free the slot.
#[pg_guard]
unsafe extern "C-unwind" fn on_exit(_code: core::ffi::c_int, _arg: pg_sys::Datum) {
    let b = &mut *BACKEND.0.get();
    if let Some(s) = shmem::shared() {
        s.retired_ids.fetch_add(b.issued, Relaxed);
        if let Some(slot) = b.slot.as_ref() {
            slot.issued.store(0, Relaxed);
            slot.pid.store(0, Relaxed);
        }
    }
    b.slot = core::ptr::null();
    b.issued = 0;
}

/// The WAL timeline new WAL is written on (outside recovery).
fn wal_timeline() -> u32 {
    // SAFETY: plain read of shared state; only called once recovery has ended.
    unsafe { pg_sys::GetWALInsertionTimeLine() }
}

/// The configured partition, if `sno.partition` is set.
fn configured() -> Option<u16> {
    let c = gucs::PARTITION.get();
    (c >= 0).then_some(c as u16)
}

/// Makes sure the lineage state was judged for the current WAL timeline and `sno.partition`
/// ([`crate::lineage::State::judge`]) before IDs are made. Under the lock.
fn judge(
    s: &'static Shared,
    g: &mut Guarded,
    timeline: u32,
    take_over: bool,
) -> Result<(), SlowError> {
    let status = s.state.load(Relaxed);
    if status != shmem::STATE_READY {
        if configured().is_some() {
            return Err(SlowError::State(status));
        }
        // A derived partition needs nothing from the lost state: the incarnation drawn at
        // start-up gives a new partition, different from every one the lineage is known to
        // have used.
        s.state.store(shmem::STATE_READY, Relaxed);
        g.dirty = true;
        g.judged = (u32::MAX, -1);
        pgrx::warning!(
            "sno: {}; IDs are now made with a new derived partition, so they cannot repeat earlier ones",
            if status == shmem::STATE_MISSING { "the generator state file was missing".to_string() } else { format!("the generator state file was unusable ({})", s.reason()) }
        );
    }
    let key = (timeline, gucs::PARTITION.get());
    if g.judged == key && !g.lineage.copied && !take_over {
        return Ok(());
    }
    let mut st = g.lineage;
    match st.judge(timeline, configured(), take_over, shmem::draw) {
        Err(Refusal::Inherited(p)) => Err(SlowError::Inherited(p)),
        Ok(j) => {
            g.timeline.absorb(j.absorb);
            g.dirty |= j.changed;
            shmem::set_lineage(s, g, st);
            s.partition.store(j.partition as u32, Relaxed);
            g.judged = key;
            if j.took_over {
                pgrx::warning!(
                    "sno: partition {} was used before this server's {}; IDs go on after the last of them this server knows of",
                    j.partition,
                    if take_over { "copy was taken over (take_over => true)" } else { "promotion, point-in-time restore or upgrade" }
                );
            }
            Ok(())
        }
    }
}

/// Judges the lineage for the current configuration and WAL timeline and writes it if it
/// changed (the background worker's job, see [`crate::worker`]). Errors are logged, not
/// raised: `sno_generate` raises them to the user.
pub fn settle(s: &'static Shared) {
    // SAFETY: reads a shared flag.
    if unsafe { pg_sys::RecoveryInProgress() } || s.state.load(Relaxed) != shmem::STATE_READY {
        return;
    }
    let timeline = wal_timeline();
    let failed = shmem::locked(s, |g| {
        if judge(s, g, timeline, false).is_ok() && g.dirty {
            return persist(s, g, timeline).err();
        }
        None
    });
    if let Some(e) = failed {
        pgrx::log!("sno: could not write the generator state file: {e}");
    }
}

/// Writes the durable state (the state file, then a WAL record) so that it covers the
/// timeline's next durable horizon. Under the lock, before any ID it covers is handed out.
fn persist(s: &'static Shared, g: &mut Guarded, timeline: u32) -> std::io::Result<()> {
    let tl = &g.timeline;
    let p = tl.due(HORIZON_AHEAD, HORIZON_MARGIN).unwrap_or(Persisted {
        horizon: tl
            .horizon
            .max(tl.hi.saturating_add(HORIZON_AHEAD).min(MAX_UNITS)),
        safe: tl.safe,
        drifts: tl.drifts,
    });
    let mut st = g.lineage;
    st.written(p);
    crate::state::write(std::path::Path::new("."), &st, shmem::fsync_enabled())?;
    let lsn = crate::wal::log_lineage(&st, timeline);
    s.lineage_lsn.store(lsn, Relaxed);
    shmem::set_lineage(s, g, st);
    g.timeline.written(p);
    g.dirty = false;
    Ok(())
}

/// Redo of a lineage record (in the startup process): merge it, and write the state file so
/// that the knowledge survives this server's restarts. A state file that could not be read is
/// left alone (the administrator decides); the knowledge is kept in memory.
pub fn replay(s: &'static Shared, rec: &crate::state::Record) {
    let written = shmem::locked(s, |g| {
        let mut st = g.lineage;
        st.replay(rec.incarnation, rec.timeline, &rec.partitions, rec.bound);
        if rec.incarnation == st.incarnation {
            g.timeline.absorb(rec.bound);
        }
        // A standby or a restore (archive recovery) learns its lineage here: it writes what it
        // knows, creating the file if it had none. Crash recovery with a lost or unusable file
        // must not: the records it replays are not all this server's own writes (those after
        // the last flushed one are lost), so the HINT's choices stay with the administrator.
        let status = s.state.load(Relaxed);
        // SAFETY: plain read of a startup-process global.
        let archive = unsafe { pg_sys::ArchiveRecoveryRequested };
        if status == shmem::STATE_READY || (status == shmem::STATE_MISSING && archive) {
            crate::state::write(std::path::Path::new("."), &st, shmem::fsync_enabled())?;
            s.state.store(shmem::STATE_READY, Relaxed);
        }
        shmem::set_lineage(s, g, st);
        Ok::<(), std::io::Error>(())
    });
    if let Err(e) = written {
        raise_write(e);
    }
}

#[cold]
#[inline(never)]
fn generate_slow(b: &mut Backend, meta: u8) -> Sno {
    let s = shared_or_raise();
    if !b.ready {
        set_up(b, s);
    }
    // SAFETY: reads a shared flag; cannot fail.
    if unsafe { pg_sys::RecoveryInProgress() } {
        UserError::new(
            PgSqlErrorCode::ERRCODE_READ_ONLY_SQL_TRANSACTION,
            "cannot generate sno IDs during recovery".into(),
        )
        .detail(
            "A standby makes IDs once it is promoted; until then its primary makes them.".into(),
        )
        .hint("Generate IDs on the primary.")
        .raise();
    }
    let timeline = wal_timeline();
    let mut waited_since: Option<std::time::Instant> = None;
    loop {
        let mut now = OUT_OF_RANGE;
        let grant = shmem::locked(s, |g| {
            judge(s, g, timeline, false)?;
            now = clock_units();
            if now == OUT_OF_RANGE {
                return Err(SlowError::Clock);
            }
            // The lease may still serve: the first reading was a moment before this one.
            if b.local.has(now) && !g.dirty {
                return Ok(Grant::Lease {
                    lease: b.local.lease,
                    flipped: false,
                });
            }
            let grant = g.timeline.lease(now, b.local.want(now));
            if matches!(grant, Grant::Lease { .. }) {
                g.leases += 1;
                // Durable before use: the state file and WAL must cover every ID handed out.
                if g.dirty || g.timeline.due(HORIZON_AHEAD, HORIZON_MARGIN).is_some() {
                    persist(s, g, timeline).map_err(SlowError::Write)?;
                }
            }
            Ok(grant)
        });
        let grant = match grant {
            Ok(g) => g,
            Err(SlowError::Clock) => raise_clock_out_of_range(),
            Err(SlowError::State(st)) => raise_state(s, st),
            Err(SlowError::Inherited(p)) => raise_inherited(p),
            Err(SlowError::Write(e)) => raise_write(e),
        };
        match grant {
            Grant::Lease { lease, flipped } => {
                if lease != b.local.lease {
                    b.local.install(lease);
                    b.partition = s.partition.load(Relaxed) as u16;
                    // SAFETY: our own slot.
                    if let Some(slot) = unsafe { b.slot.as_ref() } {
                        slot.leases.fetch_add(1, Relaxed);
                        slot.lease_unit.store(lease.unit, Relaxed);
                        slot.lease_tick.store(lease.tick as u32, Relaxed);
                        slot.lease_start.store(lease.next, Relaxed);
                        slot.lease_end.store(lease.end, Relaxed);
                    }
                }
                // The bound covering this ID must survive a failover before the ID leaves.
                let lsn = s.lineage_lsn.load(Relaxed);
                if lsn > b.durable_lsn {
                    crate::wal::make_durable(lsn);
                    b.durable_lsn = lsn;
                }
                if flipped {
                    pgrx::log!(
                        "sno: the system clock went back; IDs now use tick-tock bit {}",
                        lease.tick
                    );
                }
                let (unit, tick, seq) = b
                    .local
                    .next(now)
                    .expect("a fresh lease of the current unit");
                b.count();
                return Sno::new(unit, tick, meta, b.partition, seq);
            }
            Grant::FullUnit { until } => {
                s.full_unit_stalls.fetch_add(1, Relaxed);
                // SAFETY: our own slot.
                if let Some(slot) = unsafe { b.slot.as_ref() } {
                    slot.full_unit_stalls.fetch_add(1, Relaxed);
                }
                wait_for_unit(
                    s,
                    until,
                    &mut waited_since,
                    "Every sequence number of the current 4 ms unit is taken",
                );
            }
            Grant::ClockBehind { until } => {
                s.clock_waits.fetch_add(1, Relaxed);
                // SAFETY: our own slot.
                if let Some(slot) = unsafe { b.slot.as_ref() } {
                    slot.clock_waits.fetch_add(1, Relaxed);
                }
                wait_for_unit(
                    s,
                    until,
                    &mut waited_since,
                    "The system clock went back into time already used for IDs",
                );
            }
        }
    }
}

/// Why the slow path could not lease.
enum SlowError {
    /// The clock is outside the range of the format.
    Clock,
    /// The durable state is missing or unusable (a `STATE_*` code) and the partition is
    /// explicit.
    State(u32),
    /// The state file could not be written.
    Write(std::io::Error),
    /// The configured partition is one the server this one was copied from used.
    Inherited(u16),
}

fn raise_inherited(p: u16) -> ! {
    UserError::new(
        PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        format!("this server is a copy of one that made IDs with partition {p}"),
    )
    .detail(format!("sno.partition is {p} here too; two servers making IDs with one partition could repeat IDs."))
    .hint("Give this server its own sno.partition, one no other server uses (in postgresql.conf or with ALTER SYSTEM), and reload the configuration.")
    .raise()
}

fn raise_state(s: &Shared, st: u32) -> ! {
    if st == shmem::STATE_MISSING {
        UserError::new(
            PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!("sno generator has no state file (\"{}\" in the data directory)", crate::state::FILE_NAME),
        )
        .detail("The file records up to when this server's partition was used, so that a restart with the clock set back cannot repeat IDs.".into())
        .hint("If the file was moved away, put it back (after pg_upgrade: copy the one in the old data directory) and run SELECT sno_generator_initialize(); as a superuser; a copy from an older backup is not enough. Otherwise first give this server a sno.partition no server has used and reload the configuration, then run SELECT sno_generator_initialize();.")
        .raise()
    } else {
        UserError::new(
            PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!("cannot use the sno generator state file \"{}\": {}", crate::state::FILE_NAME, s.reason()),
        )
        .detail("Without it a restart with the clock set back could repeat IDs, so none are made.".into())
        .hint("Give this server a sno.partition no server has used and reload the configuration, then run SELECT sno_generator_initialize(force => true); as a superuser. A copy of the file from a backup is not enough: IDs made after it could repeat.")
        .raise()
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
/// `take_over` makes this server use the explicit partition of the server it was copied from
/// (an administrator's word that the original will never make IDs again). Superusers only;
/// a no-op when sno is not preloaded.
#[pg_extern(volatile, parallel_unsafe)]
fn sno_generator_initialize(
    force: pgrx::default!(bool, false),
    take_over: pgrx::default!(bool, false),
) -> bool {
    // SAFETY: plain call.
    if !unsafe { pg_sys::superuser() } {
        UserError::new(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            "only superusers can initialize the sno generator".into(),
        )
        .raise();
    }
    let Some(s) = shmem::shared() else {
        return false;
    };
    // SAFETY: reads a shared flag.
    if unsafe { pg_sys::RecoveryInProgress() } {
        UserError::new(
            PgSqlErrorCode::ERRCODE_READ_ONLY_SQL_TRANSACTION,
            "cannot initialize the sno generator during recovery".into(),
        )
        .hint("Run it once this server is promoted.")
        .raise();
    }
    let timeline = wal_timeline();
    let dir = std::path::Path::new(".");
    let outcome = shmem::locked(s, |g| {
        let status = s.state.load(Relaxed);
        let mut did = false;
        match (status, crate::state::read(dir)) {
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
                    file.timeline = crate::lineage::UPGRADED;
                    file.at_start(true, shmem::control_inode(), shmem::draw(), 0);
                } else {
                    file.at_start(false, shmem::control_inode(), shmem::draw(), timeline);
                }
                // What WAL replay taught this server while it had no usable file (crash
                // recovery replays this server's own records too: a partition the file says
                // is this server's stays its own, with the later bound).
                for e in g.lineage.entries() {
                    let mine = file.is_mine(e.partition);
                    file.note(e.partition, mine, e.bound);
                    if mine {
                        file.written(e.bound);
                    }
                }
                let mut tl = Timeline::restore(file.me);
                tl.absorb(g.timeline.durable());
                g.timeline = tl;
                shmem::set_lineage(s, g, file);
                g.judged = (u32::MAX, -1);
                g.dirty = true;
                s.state.store(shmem::STATE_READY, Relaxed);
                did = true;
            }
            (_, Ok(None)) => {
                g.dirty = true;
                s.state.store(shmem::STATE_READY, Relaxed);
                did = true;
            }
            (_, Err(e)) => {
                if !force {
                    return Err(SlowError::State(shmem::STATE_BROKEN));
                }
                pgrx::warning!(
                    "sno: replacing the unusable generator state file ({e}); what this server knows is kept"
                );
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
            Err(SlowError::Inherited(p)) if take_over => return Err(SlowError::Inherited(p)),
            Err(SlowError::Inherited(_)) => {}
            Err(e) => return Err(e),
        }
        if g.dirty {
            persist(s, g, timeline).map_err(SlowError::Write)?;
        }
        Ok(did)
    });
    match outcome {
        Ok(did) => did,
        Err(SlowError::State(st)) => raise_state(s, st),
        Err(SlowError::Inherited(p)) => raise_inherited(p),
        Err(SlowError::Write(e)) => raise_write(e),
        Err(SlowError::Clock) => raise_clock_out_of_range(),
    }
}

/// The state file could not be written: no ID is made past the recorded horizon.
fn raise_write(e: std::io::Error) -> ! {
    UserError::new(
        PgSqlErrorCode::ERRCODE_IO_ERROR,
        format!(
            "could not write sno generator state file \"{}\": {e}",
            crate::state::FILE_NAME
        ),
    )
    .detail("No ID is made beyond the time recorded in that file.".into())
    .hint("Check the data directory's free space and permissions.")
    .raise()
}

fn raise_clock_out_of_range() -> ! {
    UserError::new(
        PgSqlErrorCode::ERRCODE_DATETIME_FIELD_OVERFLOW,
        "the system clock is out of range for type sno".into(),
    )
    .detail(
        "sno IDs hold times from 2010-01-01 00:00:00 UTC to 2079-09-07 15:47:35.551999 UTC.".into(),
    )
    .hint("Check the server's clock.")
    .raise()
}

/// Sleeps on the process latch until the wall clock reaches unit `until`. The time spent in
/// all waits of one call is bounded by `sno.max_clock_wait`; past it the call fails.
fn wait_for_unit(s: &Shared, until: u64, since: &mut Option<std::time::Instant>, why: &str) {
    if until > MAX_UNITS {
        // The last unit of the format is used up: no later unit exists to wait for.
        raise_clock_out_of_range();
    }
    let started = *since.get_or_insert_with(std::time::Instant::now);
    let max_ms = gucs::MAX_CLOCK_WAIT_MS.get().max(0) as u128;
    let target_ns = units_to_unix_nanos(until);
    loop {
        pgrx::check_for_interrupts!();
        let now_ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as i128)
            .unwrap_or(0);
        if now_ns >= target_ns {
            return;
        }
        let waited = started.elapsed().as_millis();
        if waited >= max_ms {
            s.clock_wait_failures.fetch_add(1, Relaxed);
            UserError::new(
                PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                format!(
                    "sno_generate gave up after waiting {waited} ms for the system clock to reach {}",
                    crate::fmgr::timestamptz_text(units_to_pg_micros(until))
                ),
            )
            .detail(format!("{why}; making an ID now could repeat one already made."))
            .hint("Check the server's clock (NTP). sno.max_clock_wait sets how long to wait.")
            .raise();
        }
        let left_ms = ((target_ns - now_ns) / 1_000_000 + 1) as i64;
        let timeout = left_ms.min((max_ms - waited) as i64).clamp(1, 100);
        // SAFETY: MyLatch is this process's latch; the wait returns on timeout, latch or
        // interrupt, and exits the process if the postmaster dies.
        unsafe {
            pg_sys::WaitLatch(
                pg_sys::MyLatch,
                (pg_sys::WL_LATCH_SET | pg_sys::WL_TIMEOUT | pg_sys::WL_EXIT_ON_PM_DEATH) as i32,
                timeout as _,
                pg_sys::PG_WAIT_EXTENSION,
            );
            pg_sys::ResetLatch(pg_sys::MyLatch);
        }
    }
}

/// `sno_generator_info()`: the server's generator, one row.
#[pg_extern(volatile, parallel_safe)]
#[allow(clippy::type_complexity)]
fn sno_generator_info() -> TableIterator<
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
        name!(leases, i64),
        name!(full_unit_stalls, i64),
        name!(clock_waits, i64),
        name!(clock_wait_failures, i64),
        name!(active_backends, i32),
        name!(state, String),
        name!(horizon, Option<TimestampWithTimeZone>),
    ),
> {
    let s = shared_or_raise();
    let (tl, leases) = shmem::locked(s, |g| (g.timeline, g.leases));
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
        if leases > 0 { ts(tl.hi) } else { None },
        if tl.safe >= 0 {
            ts(tl.safe as u64)
        } else {
            None
        },
        tl.tick() as i32,
        tl.drifts as i64,
        (live + s.retired_ids.load(Relaxed)) as i64,
        leases as i64,
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
    ))
}

/// `sno_generator_backends()`: one row per backend that has generated IDs. Execute is granted
/// to `pg_monitor` only (and superusers).
#[pg_extern(volatile, parallel_safe)]
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
        name!(lease_tick, i32),
        name!(lease_start, i32),
        name!(lease_end, i32),
    ),
> {
    let s = shared_or_raise();
    let rows: Vec<_> = shmem::slots(s)
        .iter()
        .filter(|x| x.pid.load(Relaxed) != 0)
        .map(|x| {
            let leases = x.leases.load(Relaxed);
            (
                x.pid.load(Relaxed),
                x.issued.load(Relaxed) as i64,
                leases as i64,
                x.full_unit_stalls.load(Relaxed) as i64,
                x.clock_waits.load(Relaxed) as i64,
                if leases > 0 {
                    TimestampWithTimeZone::try_from(units_to_pg_micros(x.lease_unit.load(Relaxed)))
                        .ok()
                } else {
                    None
                },
                x.lease_tick.load(Relaxed) as i32,
                x.lease_start.load(Relaxed) as i32,
                x.lease_end.load(Relaxed) as i32,
            )
        })
        .collect();
    TableIterator::new(rows)
}

/// `sno_generator_lineage()`: what this data directory knows of the partitions used in its
/// lineage (this server, the servers it was copied or promoted from, their standbys that were
/// promoted), one row per partition and user, with the time up to which IDs may have been made
/// with it on each tick-tock timeline ([`crate::lineage`]).
#[pg_extern(volatile, parallel_safe)]
#[allow(clippy::type_complexity)]
fn sno_generator_lineage() -> TableIterator<
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
    let st = shmem::locked(s, |g| g.lineage);
    let ts = |u: i64| {
        (u >= 0)
            .then(|| TimestampWithTimeZone::try_from(units_to_pg_micros(u as u64)).ok())
            .flatten()
    };
    let rows: Vec<_> = st
        .entries()
        .iter()
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
fn sno_current_partition() -> i32 {
    effective_partition(shared_or_raise()).0 as i32
}
