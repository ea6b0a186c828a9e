//! The shard table in shared memory: the server-wide [`Timeline`] behind one LWLock, server
//! counters, and one statistics slot per backend.
//!
//! Needs `shared_preload_libraries = 'sno'`: shared memory is sized and created by the
//! postmaster. Without it [`shared`] returns `None` and `sno_generate` says what to do.
//!
//! Layout: a [`Shared`] header followed by `nslots` [`Slot`]s, one per possible backend
//! (indexed by backend number). A slot is written only by its backend, with relaxed atomic
//! stores (plain moves on x86-64), and read by the monitoring functions.

use crate::generator::{derived_partition, Timeline};
use crate::state;
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU32, AtomicU64, Ordering};
use pgrx::pg_sys;
use pgrx::prelude::*;

const NAME: &core::ffi::CStr = c"sno";

/// The header of the shared segment.
#[repr(C)]
pub struct Shared {
    /// Protects `timeline` and `leases`.
    pub lock: *mut pg_sys::LWLock,
    /// The server's timeline; read and written only under `lock`.
    pub timeline: UnsafeCell<Timeline>,
    /// Leases handed out; under `lock`.
    pub leases: UnsafeCell<u64>,
    /// The cluster's system identifier, read at start-up.
    pub system_identifier: u64,
    /// The state file's random instance number; changed only under `lock`.
    pub instance: AtomicU64,
    /// The original's explicit partition, inherited by a copy (-1: none); under `lock`.
    pub inherited: AtomicI32,
    /// The partition derived from the system identifier and the instance number (used when
    /// `sno.partition` is -1).
    pub derived_partition: AtomicU32,
    /// Waits because every sequence number of a unit was taken.
    pub full_unit_stalls: AtomicU64,
    /// Waits because the clock went back into used time a second time.
    pub clock_waits: AtomicU64,
    /// Waits that ran out of `sno.max_clock_wait` and failed.
    pub clock_wait_failures: AtomicU64,
    /// IDs issued by backends that have exited.
    pub retired_ids: AtomicU64,
    /// Number of slots after the header.
    pub nslots: u32,
    /// Whether the durable state is usable: [`STATE_READY`], [`STATE_MISSING`] or
    /// [`STATE_BROKEN`]. Changed only under `lock`.
    pub state: AtomicU32,
    /// Why the state file could not be used (UTF-8, `reason_len` bytes), set at start-up.
    pub reason: [u8; 200],
    /// Length of `reason`.
    pub reason_len: u32,
}

/// The durable state was read (or created): IDs may be made.
pub const STATE_READY: u32 = 0;
/// There is no state file: a new cluster, or a lost file.
pub const STATE_MISSING: u32 = 1;
/// The state file exists but cannot be used.
pub const STATE_BROKEN: u32 = 2;

impl Shared {
    /// Why the state file could not be used.
    pub fn reason(&self) -> &str {
        core::str::from_utf8(&self.reason[..self.reason_len as usize]).unwrap_or("")
    }
}

/// One backend's statistics.
#[repr(C)]
pub struct Slot {
    /// Process ID of the backend using the slot, 0 when free.
    pub pid: AtomicI32,
    /// IDs issued.
    pub issued: AtomicU64,
    /// Leases taken.
    pub leases: AtomicU64,
    /// Waits for a full unit.
    pub full_unit_stalls: AtomicU64,
    /// Waits for the clock.
    pub clock_waits: AtomicU64,
    /// Unit of the current lease.
    pub lease_unit: AtomicU64,
    /// Tick-tock bit of the current lease.
    pub lease_tick: AtomicU32,
    /// First sequence number of the current lease.
    pub lease_start: AtomicU32,
    /// One past the last sequence number of the current lease.
    pub lease_end: AtomicU32,
}

static SHARED: AtomicPtr<Shared> = AtomicPtr::new(core::ptr::null_mut());
static PRELOADED: AtomicBool = AtomicBool::new(false);

// SAFETY: the pointers inside Shared point into shared memory mapped at the same address in
// every backend (fork), and the timeline is only touched under its LWLock.
unsafe impl Sync for Shared {}

/// The shared segment, or `None` when the library was not preloaded.
#[inline]
pub fn shared() -> Option<&'static Shared> {
    // SAFETY: set once per shared-memory (re)initialisation by the postmaster before any
    // backend is forked, never freed while backends run.
    unsafe { SHARED.load(Ordering::Relaxed).as_ref() }
}

/// Whether `_PG_init` ran during `shared_preload_libraries`.
pub fn preloaded() -> bool {
    PRELOADED.load(Ordering::Relaxed)
}

/// The slots after the header.
pub fn slots(s: &'static Shared) -> &'static [Slot] {
    // SAFETY: the segment was sized for `nslots` slots right after the header.
    unsafe {
        let first = (s as *const Shared).add(1).cast::<Slot>();
        core::slice::from_raw_parts(first, s.nslots as usize)
    }
}

/// Runs `f` on the timeline under the LWLock.
pub fn with_timeline<R>(s: &'static Shared, f: impl FnOnce(&mut Timeline, &mut u64) -> R) -> R {
    // SAFETY: the lock protects both cells; LWLockRelease runs before any error can be raised
    // by our code, and an error raised by LWLockAcquire itself leaves nothing held.
    unsafe {
        pg_sys::LWLockAcquire(s.lock, pg_sys::LWLockMode::LW_EXCLUSIVE);
        let r = f(&mut *s.timeline.get(), &mut *s.leases.get());
        pg_sys::LWLockRelease(s.lock);
        r
    }
}

/// Slots to allocate: one per backend number a backend can have.
fn slot_count() -> usize {
    // SAFETY: plain reads of server globals, set before shared memory is requested.
    unsafe {
        #[cfg(feature = "pg14")]
        {
            // PostgreSQL 14 computes MaxBackends only after preloading libraries; this is its
            // formula (InitializeMaxBackends). autovacuum_max_workers is not exported to
            // extensions there, so it is read as a setting.
            let autovacuum = {
                let v = pg_sys::GetConfigOption(c"autovacuum_max_workers".as_ptr(), true, false);
                if v.is_null() {
                    64
                } else {
                    core::ffi::CStr::from_ptr(v)
                        .to_str()
                        .ok()
                        .and_then(|t| t.parse::<i32>().ok())
                        .unwrap_or(64)
                }
            };
            (pg_sys::MaxConnections
                + autovacuum
                + 1
                + pg_sys::max_worker_processes
                + pg_sys::max_wal_senders) as usize
        }
        #[cfg(not(feature = "pg14"))]
        {
            pg_sys::MaxBackends as usize
        }
    }
}

fn segment_size() -> usize {
    core::mem::size_of::<Shared>() + slot_count() * core::mem::size_of::<Slot>()
}

/// This backend's slot index, if it has one.
pub fn my_slot_index() -> Option<usize> {
    // SAFETY: plain reads of per-process globals.
    unsafe {
        #[cfg(any(feature = "pg14", feature = "pg15", feature = "pg16"))]
        let n = pg_sys::MyBackendId as i64 - 1;
        #[cfg(not(any(feature = "pg14", feature = "pg15", feature = "pg16")))]
        let n = pg_sys::MyProcNumber as i64;
        usize::try_from(n).ok()
    }
}

/// Registers the shared-memory request and start-up hooks. Called from `_PG_init` while
/// `shared_preload_libraries` is being processed.
pub fn init() {
    PRELOADED.store(true, Ordering::Relaxed);
    // SAFETY: hook chaining as every extension does it, from _PG_init in the postmaster.
    unsafe {
        #[cfg(feature = "pg14")]
        request();
        #[cfg(not(feature = "pg14"))]
        {
            PREV_REQUEST = pg_sys::shmem_request_hook;
            pg_sys::shmem_request_hook = Some(on_request);
        }
        PREV_STARTUP = pg_sys::shmem_startup_hook;
        pg_sys::shmem_startup_hook = Some(on_startup);
    }
}

#[cfg(not(feature = "pg14"))]
static mut PREV_REQUEST: pg_sys::shmem_request_hook_type = None;
static mut PREV_STARTUP: pg_sys::shmem_startup_hook_type = None;

unsafe fn request() {
    pg_sys::RequestAddinShmemSpace(segment_size());
    pg_sys::RequestNamedLWLockTranche(NAME.as_ptr(), 1);
}

#[cfg(not(feature = "pg14"))]
#[pg_guard]
unsafe extern "C-unwind" fn on_request() {
    if let Some(prev) = PREV_REQUEST {
        prev();
    }
    request();
}

/// Sets the instance number and the partition derived from it.
pub fn set_instance(s: &Shared, instance: u64) {
    s.instance.store(instance, Ordering::Relaxed);
    s.derived_partition.store(
        derived_partition(s.system_identifier, instance) as u32,
        Ordering::Relaxed,
    );
}

/// A new random instance number whose derived partition differs from `avoid`'s.
pub fn new_instance(sysid: u64, avoid: Option<u64>) -> u64 {
    loop {
        let mut b = [0u8; 8];
        // SAFETY: valid buffer; getrandom(2) blocks only before the kernel's pool is seeded.
        let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), 8, 0) };
        let candidate = if n == 8 {
            u64::from_ne_bytes(b)
        } else {
            // No getrandom: the time and process ID still differ between copies.
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0);
            t ^ ((std::process::id() as u64) << 40)
        };
        match avoid {
            Some(old) if derived_partition(sysid, old) == derived_partition(sysid, candidate) => {
                continue
            }
            _ => return candidate,
        }
    }
}

fn set_reason(s: &mut Shared, why: &str) {
    let n = why.len().min(s.reason.len());
    s.reason[..n].copy_from_slice(&why.as_bytes()[..n]);
    s.reason_len = n as u32;
    s.state.store(STATE_BROKEN, Ordering::Relaxed);
}

/// Resumes the timeline from the state file in the data directory (the postmaster's working
/// directory), or records why it cannot. A data directory restored from a base backup (it
/// has a `backup_label`: a clone, or a standby's first start) takes a new instance number, so
/// that its derived partition differs from its original's.
fn restore_state(s: &mut Shared) {
    let dir = std::path::Path::new(".");
    let copied = dir.join("backup_label").exists();
    match state::read(dir, s.system_identifier) {
        Ok(Some((id, p))) => {
            *s.timeline.get_mut() = Timeline::restore(p);
            set_instance(s, id.instance);
            s.inherited.store(id.inherited, Ordering::Relaxed);
            if copied {
                let configured = crate::gucs::PARTITION.get();
                let fresh = state::Identity {
                    instance: new_instance(s.system_identifier, Some(id.instance)),
                    inherited: configured.max(-1),
                };
                // SAFETY: plain read of a server global.
                let fsync = unsafe { pg_sys::enableFsync };
                if let Err(e) = state::write(dir, s.system_identifier, &fresh, &p, fsync) {
                    set_reason(s, &format!("could not write it: {e}"));
                    return;
                }
                let before = s.derived_partition.load(Ordering::Relaxed);
                set_instance(s, fresh.instance);
                s.inherited.store(fresh.inherited, Ordering::Relaxed);
                if configured >= 0 {
                    pgrx::warning!(
                        "sno: this data directory is a copy made by a base backup, with sno.partition = {configured} in its configuration, like the server it was copied from: sno_generate refuses to use that partition here until this server gets its own sno.partition"
                    );
                } else {
                    pgrx::warning!(
                        "sno: this data directory is a copy made by a base backup: its derived partition is now {} (the original's is {before}), so their IDs cannot collide",
                        s.derived_partition.load(Ordering::Relaxed)
                    );
                }
            }
            s.state.store(STATE_READY, Ordering::Relaxed);
            pgrx::log!(
                "sno: generator state restored: IDs resume after unit {} (tick-tock bit {})",
                p.horizon,
                p.drifts & 1
            );
        }
        Ok(None) => {
            s.state.store(STATE_MISSING, Ordering::Relaxed);
            pgrx::log!(
                "sno: no generator state file ({}); CREATE EXTENSION sno or sno_generator_initialize() creates it",
                state::FILE_NAME
            );
        }
        Err(e) => {
            set_reason(s, &e.to_string());
            pgrx::warning!(
                "sno: cannot use the generator state file {}: {e}; sno_generate refuses to make IDs until it is restored or sno_generator_initialize(force => true) is run",
                state::FILE_NAME
            );
        }
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn on_startup() {
    if let Some(prev) = PREV_STARTUP {
        prev();
    }
    // AddinShmemInitLock is MainLWLockArray[21] (lwlocknames.txt).
    let init_lock = &raw mut (*pg_sys::MainLWLockArray.add(21)).lock;
    pg_sys::LWLockAcquire(init_lock, pg_sys::LWLockMode::LW_EXCLUSIVE);
    let mut found = false;
    let size = segment_size();
    let p = pg_sys::ShmemInitStruct(NAME.as_ptr(), size, &mut found).cast::<Shared>();
    if !found {
        core::ptr::write_bytes(p.cast::<u8>(), 0, size);
        let sysid = pg_sys::GetSystemIdentifier();
        p.write(Shared {
            lock: &raw mut (*pg_sys::GetNamedLWLockTranche(NAME.as_ptr())).lock,
            timeline: UnsafeCell::new(Timeline::new()),
            leases: UnsafeCell::new(0),
            system_identifier: sysid,
            instance: AtomicU64::new(0),
            inherited: AtomicI32::new(-1),
            derived_partition: AtomicU32::new(derived_partition(sysid, 0) as u32),
            full_unit_stalls: AtomicU64::new(0),
            clock_waits: AtomicU64::new(0),
            clock_wait_failures: AtomicU64::new(0),
            retired_ids: AtomicU64::new(0),
            nslots: slot_count() as u32,
            state: AtomicU32::new(STATE_MISSING),
            reason: [0; 200],
            reason_len: 0,
        });
        restore_state(&mut *p);
        let s = &*p;
        let configured = crate::gucs::PARTITION.get();
        if configured >= 0 {
            pgrx::log!("sno: generator ready, partition {configured} (sno.partition)");
        } else {
            pgrx::log!(
                "sno: generator ready, partition {} (derived from system identifier {} and state instance {}; set sno.partition to choose)",
                s.derived_partition.load(Ordering::Relaxed),
                s.system_identifier,
                s.instance.load(Ordering::Relaxed)
            );
        }
    }
    SHARED.store(p, Ordering::Relaxed);
    pg_sys::LWLockRelease(init_lock);
}
