//! `sno_generate`: the fast path, the slow path under the lock, and waits for the clock.

use super::durable::{ask_for_renewal, judge, raise_slow, raise_write, write_now};
use super::{shared_or_raise, wal_timeline};
use crate::generator::timeline::{Claim, Grant, Promise};
use crate::id::layout::{Sno, MAX_UNITS};
use crate::id::time::{units_from_timespec, units_to_pg_micros, units_to_unix_nanos};
use crate::pg::errors::{self, Problem};
use crate::pg::fmgr::{arg_i32, finfo_v1, sno_datum};
use crate::pg::gucs;
use crate::pg::shmem::{self, Shared, Slot};
use core::cell::UnsafeCell;
use core::sync::atomic::Ordering::{Acquire, Relaxed};
use pgrx::pg_sys;
use pgrx::prelude::*;

finfo_v1!(pg_finfo_sno_generate, pg_finfo_sno_generate_default);

/// How far past the high-water mark the durable horizon is written: 2 s (500 units).
/// After a crash the server resumes past it, so a restart within 2 s flips the tick-tock bit.
pub(super) const HORIZON_AHEAD: u64 = 500;
/// The horizon is renewed when the high-water mark comes within 1 s of it, so the state file
/// is written (and flushed) about once a second while IDs are being made, never per ID.
pub(super) const HORIZON_MARGIN: u64 = 250;

/// A clock reading outside the range of the format.
pub(super) const OUT_OF_RANGE: u64 = u64::MAX;

/// This backend's generator.
pub(super) struct Backend {
    /// The shard table, once this backend has been through the slow path (null before).
    shared: *const Shared,
    /// The partition to write, read under the lock in the slow path.
    partition: u16,
    /// The epoch `partition` was read in ([`Shared::epoch`]); 0 is never one.
    epoch: u64,
    /// This backend's statistics slot (null when it has none).
    slot: *const Slot,
    /// IDs this backend has issued.
    issued: u64,
    /// The end of the last lineage record this backend made durable.
    durable_lsn: u64,
    /// The last lineage record was not waited for (this session did not wait for synchronous
    /// standbys): if it comes to, its next ID goes through the slow path and waits.
    unsynced: bool,
    /// Whether the slot and the exit callback are set up.
    ready: bool,
}

/// Per-backend state without a lock: a PostgreSQL backend runs SQL functions on one thread,
/// and parallel workers are separate processes with their own copy.
pub(super) struct BackendCell(UnsafeCell<Backend>);
// SAFETY: see above; the cell is never touched from another thread.
unsafe impl Sync for BackendCell {}

pub(super) static BACKEND: BackendCell = BackendCell(UnsafeCell::new(Backend {
    shared: core::ptr::null(),
    partition: 0,
    epoch: 0,
    slot: core::ptr::null(),
    issued: 0,
    durable_lsn: 0,
    unsynced: false,
    ready: false,
}));

/// The wall clock (CLOCK_REALTIME) in 4 ms units, or [`OUT_OF_RANGE`].
#[inline(always)]
pub(super) fn clock_units() -> u64 {
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
        errors::raise(Problem::Meta(meta));
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
    // A session that did not wait for synchronous standbys (synchronous_commit local or off,
    // no synchronous_standby_names) and now would: its epoch ends here.
    if b.unsynced && crate::pg::wal::sync_expected() {
        b.epoch = 0;
    }
    // SAFETY: null until the slow path set it; shared memory outlives the backend.
    if let Some(s) = unsafe { b.shared.as_ref() } {
        if let Some((unit, tick, seq)) = s.hot.cursor.take(now) {
            // The increment synchronised with the cursor's opening: an epoch bumped before
            // it is seen here. Otherwise the number is dropped (nobody else can have it).
            if s.epoch.load(Relaxed) == b.epoch {
                b.count();
                return Sno::new(unit, tick, meta, b.partition, seq);
            }
        }
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

/// Claims this backend's statistics slot and arranges for its count to be kept at exit.
pub(super) fn set_up(b: &mut Backend, s: &'static Shared) {
    let slots = shmem::slots(s);
    if let Some(slot) = shmem::my_slot_index().and_then(|i| slots.get(i)) {
        // SAFETY: plain read of a per-process global.
        slot.claim(unsafe { pg_sys::MyProcPid });
        b.slot = slot;
    }
    // SAFETY: registered once per backend (there are 20 exit-callback slots per process).
    unsafe { pg_sys::before_shmem_exit(Some(on_exit), pg_sys::Datum::from(0)) };
    b.ready = true;
}

/// At backend exit: fold this backend's count into the server total and free the slot.
#[pg_guard]
pub(super) unsafe extern "C-unwind" fn on_exit(_code: core::ffi::c_int, _arg: pg_sys::Datum) {
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

/// Once per backend, in a database with Citus: this server's node group, read and published
/// ([`crate::pg::citus::publish`]), or the error that refuses it.
pub(super) fn publish_or_raise(s: &'static Shared) {
    match crate::pg::citus::publish(s) {
        Ok(_) => {}
        Err(crate::pg::citus::Refused::Disagreement(d)) => {
            errors::raise(Problem::CitusDisagreement {
                database: &crate::pg::citus::this_database(),
                here: &crate::pg::citus::describe(d.here),
                server: &crate::pg::citus::describe(d.server),
            })
        }
        Err(crate::pg::citus::Refused::ParallelUnread) => {
            errors::raise(Problem::CitusParallelUnread)
        }
    }
}

#[cold]
#[inline(never)]
pub(super) fn generate_slow(b: &mut Backend, meta: u8) -> Sno {
    let s = shared_or_raise();
    if !b.ready {
        set_up(b, s);
    }
    // SAFETY: reads a shared flag; cannot fail.
    if unsafe { pg_sys::RecoveryInProgress() } {
        errors::raise(Problem::GenerateInRecovery);
    }
    // Once per backend, in a database with Citus: this server's node group.
    publish_or_raise(s);
    let timeline = wal_timeline();
    let mut waited_since: Option<std::time::Instant> = None;
    loop {
        let mut now = OUT_OF_RANGE;
        let mut renew = false;
        let mut tick = 0;
        let mut judged = (0u16, 0u64);
        let mut promised: Option<Promise> = None;
        let mut clock_went_back = false;
        let grant = shmem::locked(s, |g| {
            // The epoch before the judgment reads the configured partition: a reload that
            // publishes a new one (and then a new epoch) after this read sends this backend
            // through here again before its next ID (gucs::assign_partition).
            let epoch = s.epoch.load(Acquire);
            judge(s, g, timeline, false)?;
            now = clock_units();
            if now == OUT_OF_RANGE {
                return Err(SlowError::Clock);
            }
            // A flip now is the clock's doing if it reads behind a reading it gave before.
            clock_went_back = now < g.timeline.seen;
            let grant = g.timeline.advance(&s.hot.cursor, now, g.dirty);
            tick = g.timeline.tick();
            if let Grant::Open { opened, .. } = grant {
                if opened {
                    g.units_opened += 1;
                    // SAFETY: our own slot.
                    if let Some(slot) = unsafe { b.slot.as_ref() } {
                        slot.units_opened.fetch_add(1, Relaxed);
                    }
                }
                // Given to the backend only once the bound is durable (below). If the judgment
                // started a new epoch, this one is already past: the next call comes back here
                // once, and the judgment is then a no-op.
                judged = (s.partition.load(Relaxed) as u16, epoch);
                // Renewed by the worker ahead of need, outside both locks.
                renew = g.timeline.due(HORIZON_AHEAD, HORIZON_MARGIN).is_some();
            }
            if let Grant::FullUnit { .. } = grant {
                // This caller's turn in a later unit, kept for it whoever asks meanwhile (none
                // when the queue is full: it waits for the next unit and asks again).
                promised = g.timeline.promise(now);
            }
            Ok(grant)
        });
        let grant = grant.unwrap_or_else(|e| raise_slow(s, e));
        b.shared = s;
        match grant {
            Grant::Open { flipped, .. } => {
                if renew {
                    ask_for_renewal(s);
                }
                if flipped {
                    log_flip(tick, clock_went_back);
                }
                enter_epoch(b, s, judged);
                // The same checks as the fast path: a judgment may have come in between.
                if let Some((unit, tick, seq)) = s.hot.cursor.take(now) {
                    if s.epoch.load(Relaxed) == b.epoch {
                        b.count();
                        return Sno::new(unit, tick, meta, b.partition, seq);
                    }
                }
                // Used up by others in the meantime: the slow path again.
            }
            Grant::Write { flipped } => {
                if flipped {
                    log_flip(tick, clock_went_back);
                }
                // The clock caught up with the horizon on disk (the worker fell behind), the
                // clock went back, or the lineage changed: this call writes and waits.
                write_now(s, timeline).unwrap_or_else(|e| raise_write(e));
            }
            Grant::FullUnit { until } => {
                s.full_unit_stalls.fetch_add(1, Relaxed);
                // SAFETY: our own slot (or none).
                if let Some(slot) = unsafe { b.slot.as_ref() } {
                    slot.full_unit_stalls.fetch_add(1, Relaxed);
                }
                match promised {
                    Some(p) => {
                        if let Some(id) = take_turn(b, s, p, timeline, meta) {
                            return id;
                        }
                        // The promise was voided (a flip, a new judgment): ask again.
                    }
                    // No turn to be had now: the next unit, then ask again. Not clock trouble
                    // either, unless the clock does not get there.
                    None => {
                        wait_for_unit(s, until, counts_from(until), TURN_LATE, &|| false);
                    }
                }
            }
            Grant::ClockBehind { until } => {
                s.clock_waits.fetch_add(1, Relaxed);
                // SAFETY: our own slot (or none).
                if let Some(slot) = unsafe { b.slot.as_ref() } {
                    slot.clock_waits.fetch_add(1, Relaxed);
                }
                // All the time this call waits for the clock to come back counts.
                let from = *waited_since.get_or_insert_with(std::time::Instant::now);
                wait_for_unit(s, until, from, CLOCK_BEHIND, &|| false);
            }
        }
    }
}

/// Why a call waits for the clock to come back.
const CLOCK_BEHIND: &str = "The system clock went back into time already used for IDs";
/// Why a call waiting for its turn gives up.
const TURN_LATE: &str = "Every sequence number of the current 4 ms unit is taken, and the system clock does not reach the unit this call's turn comes in";

/// A caller that found its unit used up waits for the unit of its promise, then takes the
/// promised ID. Only time past that unit's start counts against `sno.max_clock_wait` (a clock
/// that does not advance): a full unit is not clock trouble. `None`: the promise was voided, or
/// a new judgment came between the claim and the ID; the caller asks again.
fn take_turn(
    b: &mut Backend,
    s: &'static Shared,
    p: Promise,
    timeline: u32,
    meta: u8,
) -> Option<Sno> {
    let from = counts_from(p.unit);
    // Given back if this call ends any other way than with the promised ID (a cancel,
    // statement_timeout, an error: the unwinding drops it), so that the next caller gets it.
    let turn = Turn {
        s,
        p,
        claimed: core::cell::Cell::new(false),
    };
    loop {
        // A flip or an absorb voids the promise: the call asks again at once instead of
        // waiting for a unit of a timeline given up.
        let voided = || s.round.load(Relaxed) != p.round;
        if !wait_for_unit(s, p.unit, from, TURN_LATE, &voided) {
            return None;
        }
        let mut judged = (0u16, 0u64);
        let claim = shmem::locked(s, |g| {
            let epoch = s.epoch.load(Acquire);
            judge(s, g, timeline, false)?;
            if s.epoch.load(Acquire) != epoch {
                // The judgment started a new epoch: claim with the settled one.
                return Ok(Claim::Wait { until: p.unit });
            }
            let now = clock_units();
            if now == OUT_OF_RANGE {
                return Err(SlowError::Clock);
            }
            let c = g.timeline.claim(&s.hot.cursor, p, now, g.dirty);
            match c {
                Claim::Take(_) => {
                    turn.claimed.set(true);
                    judged = (s.partition.load(Relaxed) as u16, epoch);
                }
                Claim::Void => turn.claimed.set(true),
                _ => {}
            }
            Ok(c)
        });
        let claim = claim.unwrap_or_else(|e| raise_slow(s, e));
        match claim {
            Claim::Take((unit, tick, seq)) => {
                // As for the cursor: the bound covering it must survive a failover first.
                enter_epoch(b, s, judged);
                if s.epoch.load(Relaxed) != b.epoch {
                    return None;
                }
                b.count();
                return Some(Sno::new(unit, tick, meta, b.partition, seq));
            }
            Claim::Write => write_now(s, timeline).unwrap_or_else(|e| raise_write(e)),
            Claim::Wait { .. } => {}
            Claim::Void => return None,
        }
    }
}

/// A promise held by a call waiting for its turn: given back unless claimed (or voided).
struct Turn {
    s: &'static Shared,
    p: Promise,
    claimed: core::cell::Cell<bool>,
}

impl Drop for Turn {
    fn drop(&mut self) {
        if !self.claimed.get() {
            let p = self.p;
            shmem::locked_silently(self.s, |g| g.timeline.give_back(p));
        }
    }
}

/// The instant from which a wait for unit `unit` counts against `sno.max_clock_wait`, for a
/// caller that waits for its turn, not for a clock that went back: the unit's start as far as
/// the clock can tell now, plus one unit of grace for the timers (the wall and the monotonic
/// clock).
fn counts_from(unit: u64) -> std::time::Instant {
    let ahead_ns = (units_to_unix_nanos(unit) - wall_nanos()).clamp(0, i128::from(u64::MAX)) as u64;
    std::time::Instant::now() + std::time::Duration::from_nanos(ahead_ns.saturating_add(4_000_000))
}

/// The wall clock in nanoseconds since the Unix epoch (0 before it).
fn wall_nanos() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0)
}

/// The backend takes the partition and epoch `judged` once the bound covering the IDs of that
/// epoch would survive a failover (a commit's wait for synchronous standbys, cancellable like
/// it). Until then the backend has no epoch: after a cancelled wait (an ERROR), its next call
/// must not take IDs on the fast path that the wait did not cover.
fn enter_epoch(b: &mut Backend, s: &Shared, judged: (u16, u64)) {
    b.epoch = 0;
    let lsn = s.lineage_lsn.load(Relaxed);
    if lsn > b.durable_lsn {
        b.unsynced = !crate::pg::wal::make_durable(lsn);
        if !b.unsynced {
            b.durable_lsn = lsn;
        }
    }
    (b.partition, b.epoch) = judged;
}

/// A tick-tock flip, in the server log: a clock regression, or (no clock moved back) IDs
/// resuming past time that a durable bound says was used (a restart or promotion within a
/// lease, a partition taken over).
fn log_flip(tick: u8, clock_went_back: bool) {
    if clock_went_back {
        pgrx::log!("sno: the system clock went back; IDs now use tick-tock bit {tick}");
    } else {
        pgrx::log!(
            "sno: time already used with this partition (before a restart, or by the server this one took over from) is ahead of the clock; IDs now use tick-tock bit {tick}"
        );
    }
}

/// Why the slow path could not open the cursor.
pub(super) enum SlowError {
    /// The clock is outside the range of the format.
    Clock,
    /// The durable state is missing or unusable (a `STATE_*` code) and the partition is
    /// explicit.
    State(u32),
    /// The state file could not be written.
    Write(std::io::Error),
    /// The lineage's judgment refused the partition (a copy beside its original, a Citus node
    /// that is not one yet).
    Refused(crate::generator::lineage::Refusal),
    /// `sno_generator_initialize` would start afresh with the partition in force when the
    /// state file was lost (its source key, -1 when not explicit).
    SameAsLost(i64),
}

/// Sleeps on the process latch until the wall clock reaches unit `until` (true), or until
/// `given_up` says the wait is pointless (false; looked at every 100 ms at most). Waiting
/// counts against `sno.max_clock_wait` from the instant `from` on; past it the call fails,
/// saying `why`. Cancel and `statement_timeout` end the wait.
pub(super) fn wait_for_unit(
    s: &Shared,
    until: u64,
    from: std::time::Instant,
    why: &str,
    given_up: &dyn Fn() -> bool,
) -> bool {
    if until > MAX_UNITS {
        // The last unit of the format is used up: no later unit exists to wait for.
        errors::raise(Problem::ClockOutOfRange);
    }
    let max_ms = gucs::max_clock_wait().as_millis();
    let target_ns = units_to_unix_nanos(until);
    loop {
        pgrx::check_for_interrupts!();
        let now_ns = wall_nanos();
        if now_ns >= target_ns {
            return true;
        }
        if given_up() {
            return false;
        }
        let now = std::time::Instant::now();
        let budget_ms = if now >= from {
            let waited = (now - from).as_millis();
            if waited >= max_ms {
                s.clock_wait_failures.fetch_add(1, Relaxed);
                errors::raise(Problem::ClockWaitGaveUp {
                    waited_ms: waited,
                    until_pg_micros: units_to_pg_micros(until),
                    why,
                });
            }
            max_ms - waited
        } else {
            (from - now).as_millis() + max_ms
        };
        let left_ms = ((target_ns - now_ns) / 1_000_000 + 1) as i64;
        let timeout = left_ms.min(budget_ms.min(100) as i64).clamp(1, 100);
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
