//! `sno_generate`: the fast path, the slow path under the lock, and waits for the clock.

use super::durable::{raise_slow, raise_write, write_now};
use super::host::PgHost;
use super::{shared_or_raise, wal_timeline};
use crate::generator::server::{self, SlowError};
use crate::id::layout::Sno;
use crate::pg::errors::{self, Problem};
use crate::pg::fmgr::{arg_i32, finfo_v1, sno_datum};

use crate::pg::shmem::{self, Shared, Slot};
use core::cell::UnsafeCell;
use core::sync::atomic::Ordering::Relaxed;
use pgrx::pg_sys;
use pgrx::prelude::*;

finfo_v1!(pg_finfo_sno_generate, pg_finfo_sno_generate_default);

/// This backend's generator.
pub(super) struct Backend {
    /// The shard table, once this backend has been through the slow path (null before).
    pub(super) shared: *const Shared,
    /// The partition to write, read under the lock in the slow path.
    pub(super) partition: u16,
    /// The epoch `partition` was read in ([`Shared::epoch`]); 0 is never one.
    pub(super) epoch: u64,
    /// This backend's statistics slot (null when it has none).
    pub(super) slot: *const Slot,
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
    let now = super::host::clock_units();
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
    pub(super) fn count(&mut self) {
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
    b.shared = s;
    let write = || write_now(s, timeline);
    match server::generate_slow(&PgHost(s), &mut (&mut *b, s), timeline, &write) {
        Ok((unit, tick, partition, seq)) => Sno::new(unit, tick, meta, partition, seq),
        Err(SlowError::Write(e)) => raise_write(e),
        Err(e) => raise_slow(s, e),
    }
}

/// The backend takes the partition and epoch `judged` once the bound covering the IDs of that
/// epoch would survive a failover (a commit's wait for synchronous standbys, cancellable like
/// it). Until then the backend has no epoch: after a cancelled wait (an ERROR), its next call
/// must not take IDs on the fast path that the wait did not cover.
pub(super) fn enter_epoch(b: &mut Backend, s: &Shared, judged: (u16, u64)) {
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

/// A backend's generator as the pure slow path sees it.
impl server::Backend for (&mut Backend, &'static Shared) {
    fn epoch(&self) -> u64 {
        self.0.epoch
    }

    fn enter_epoch(&mut self, judged: (u16, u64)) {
        enter_epoch(self.0, self.1, judged);
    }

    fn partition(&self) -> u16 {
        self.0.partition
    }

    fn issued(&mut self) {
        self.0.count();
    }

    fn opened_unit(&mut self) {
        // SAFETY: our own slot (or none).
        if let Some(slot) = unsafe { self.0.slot.as_ref() } {
            slot.units_opened.fetch_add(1, Relaxed);
        }
    }

    fn full_unit(&mut self) {
        self.1.full_unit_stalls.fetch_add(1, Relaxed);
        // SAFETY: our own slot (or none).
        if let Some(slot) = unsafe { self.0.slot.as_ref() } {
            slot.full_unit_stalls.fetch_add(1, Relaxed);
        }
    }

    fn clock_wait(&mut self) {
        self.1.clock_waits.fetch_add(1, Relaxed);
        // SAFETY: our own slot (or none).
        if let Some(slot) = unsafe { self.0.slot.as_ref() } {
            slot.clock_waits.fetch_add(1, Relaxed);
        }
    }
}
