//! The shard table in shared memory: the server-wide [`Timeline`] behind one LWLock, the
//! [`Cursor`] every backend takes IDs from without it, server counters, and one statistics slot
//! per backend.
//!
//! Needs `shared_preload_libraries = 'sno'`: shared memory is sized and created by the
//! postmaster. Without it [`shared`] returns `None` and `sno_generate` says what to do.
//!
//! Layout: a [`Shared`] header followed by `nslots` [`Slot`]s, one per possible backend
//! (indexed by backend number). A slot is written only by its backend, with relaxed atomic
//! stores (plain moves on x86-64), and read by the monitoring functions.

use crate::generator::cursor::{Cursor, Slice};
use crate::generator::lineage::{Partitions, State, NO_GROUP};
use crate::generator::server::{FileState, Memory};
use crate::generator::state_file;
use crate::generator::timeline::Timeline;
use crate::pg::errors::{self, Problem};
use core::cell::UnsafeCell;
use core::sync::atomic::{
    AtomicBool, AtomicI32, AtomicI64, AtomicPtr, AtomicU32, AtomicU64, Ordering,
};
use pgrx::pg_sys;
use pgrx::prelude::*;

const NAME: &core::ffi::CStr = c"sno";

/// The cursor, alone on its cache line: every ID increments it, and nothing else should pay
/// for that traffic.
#[repr(C, align(64))]
pub struct Hot {
    /// Where IDs are taken from ([`Cursor::take`]).
    pub cursor: Cursor,
}

/// The header of the shared segment.
#[repr(C)]
pub struct Shared {
    /// The cursor.
    pub hot: Hot,
    /// Protects `guarded`.
    pub lock: *mut pg_sys::LWLock,
    /// Serialises writes of the durable state (the state file and its WAL record). Taken
    /// before `lock`, never after it, and held across the file write, which `lock` is not.
    pub writer: *mut pg_sys::LWLock,
    /// Bumped (under `lock`) whenever the partition judged for use or the timeline may have
    /// changed under the backends: a backend takes IDs from the cursor only while the epoch
    /// it read its partition in holds.
    pub epoch: AtomicU64,
    /// The end of the last lineage record written to WAL: a backend makes it durable
    /// ([`crate::pg::wal::make_durable`]) before handing out IDs in a new epoch.
    pub lineage_lsn: AtomicU64,
    /// The `sno lineage` worker's latch, set to ask it for a renewal of the horizon.
    pub worker_latch: AtomicPtr<pg_sys::Latch>,
    /// A renewal of the durable horizon was asked for and not yet taken up by the worker.
    pub renew_wanted: AtomicBool,
    /// Everything that changes only under `lock`.
    pub guarded: UnsafeCell<Memory>,
    /// A copy of `guarded.lineage` for the monitoring functions, which take no lock that
    /// `sno_generate` waits for: [`set_lineage`] (under `lock`, so one writer at a time)
    /// rewrites it between two increments of `lineage_seq`, which is odd meanwhile, and a
    /// reader ([`lineage_snapshot`]) copies it again if the counter moved.
    pub lineage_view: UnsafeCell<State>,
    /// See `lineage_view`.
    pub lineage_seq: AtomicU64,
    /// The timeline's promise round ([`Timeline::round`]), copied at the end of every locked
    /// section: a caller waiting for its promised turn sees at once, without the lock, that a
    /// flip or an absorb voided it.
    pub round: AtomicU64,
    /// The cluster's system identifier, read at start-up.
    pub system_identifier: u64,
    /// The partition judged for use (what `sno_generate` writes); changed under `lock`.
    pub partition: AtomicU32,
    /// `sno.partition` as the postmaster last read it (at start and at each reload, before it
    /// signals any other process): what every judgment uses, so that a reload reaches the
    /// backends in the middle of a statement too, which read their own copy of the setting
    /// only between statements ([`crate::pg::gucs`]).
    pub configured: AtomicI32,
    /// At this start the data directory turned out to be a copy with no `backup_label` (another
    /// `global/pg_control` file): the partitions its original used itself, which a move (the
    /// original never started again) may go on with. Empty otherwise: a base backup, a copy of
    /// a standby (whose partitions were its primary's), a copy noticed at an earlier start.
    pub moved_own: Partitions,
    /// What a backend last read of this server in Citus's catalog ([`crate::pg::citus`]).
    pub citus_node: AtomicU32,
    /// The Citus group `partition` was judged for ([`NO_GROUP`] when it was not a group's);
    /// changed under `lock`.
    pub citus_group: AtomicU32,
    /// Waits because every sequence number of a unit was taken.
    pub full_unit_stalls: AtomicU64,
    /// Waits because the clock went back into used time a second time.
    pub clock_waits: AtomicU64,
    /// Waits that ran out of `sno.max_clock_wait` and failed.
    pub clock_wait_failures: AtomicU64,
    /// IDs issued by backends that have exited.
    pub retired_ids: AtomicU64,
    /// Writes of the durable state since start-up.
    pub state_writes: AtomicU64,
    /// Of those, the ones a `sno_generate` call waited for.
    pub state_write_waits: AtomicU64,
    /// Writes of the state file that failed since start-up (each one is logged or raised).
    pub state_write_failures: AtomicU64,
    /// Number of slots after the header.
    pub nslots: u32,
    /// Whether the durable state is usable: [`STATE_READY`], [`STATE_MISSING`] or
    /// [`STATE_BROKEN`]. Changed only under `lock`.
    pub state: AtomicU32,
    /// Why the state file could not be used (UTF-8, `reason_len` bytes), set at start-up.
    pub reason: [u8; 200],
    /// Length of `reason`.
    pub reason_len: u32,
    /// The partition configured when a start found the state file missing or unusable (its
    /// [`crate::pg::issuer::durable::source_key`]: the explicit partition or -1), kept
    /// across restarts in `sno_generator.lost` until a state file is written again;
    /// [`NOT_LOST`] when there is a state file. `sno_generator_initialize` refuses to start
    /// afresh with it.
    pub lost_source: AtomicI64,
    /// `sno_generate` refused for want of the state file since it was found missing or
    /// unusable (kept in `sno_generator.lost` too): sno was in use, so no `CREATE EXTENSION`
    /// after it starts a state file afresh with the lost partition.
    pub lost_refused: AtomicBool,
}

/// [`Shared::lost_source`] of a start that found a usable state file.
pub const NOT_LOST: i64 = i64::MIN;

/// [`Shared::citus_node`] before any backend read Citus ([`crate::pg::citus`]).
pub const CITUS_UNREAD: u32 = u32::MAX;

/// [`Shared::state`]: the durable state was read (or created): IDs may be made.
pub const STATE_READY: u32 = FileState::Ready as u32;
/// There is no state file: a new cluster, or a lost file.
pub const STATE_MISSING: u32 = FileState::Missing as u32;
/// The state file exists but cannot be used.
pub const STATE_BROKEN: u32 = FileState::Broken as u32;

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
    /// Units this backend opened the cursor on.
    pub units_opened: AtomicU64,
    /// Waits for a full unit.
    pub full_unit_stalls: AtomicU64,
    /// Waits for the clock.
    pub clock_waits: AtomicU64,
}

impl Slot {
    /// Claims the slot for process `pid`: every counter from zero, so a reused slot shows
    /// nothing of the backend that had it before.
    pub fn claim(&self, pid: i32) {
        for c in [
            &self.issued,
            &self.units_opened,
            &self.full_unit_stalls,
            &self.clock_waits,
        ] {
            c.store(0, Ordering::Relaxed);
        }
        self.pid.store(pid, Ordering::Relaxed);
    }
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

/// Units the cursor was opened on since start-up ([`Memory::units_opened`]).
pub fn units_opened(s: &'static Shared) -> u64 {
    locked(s, |g| g.units_opened)
}

/// Runs `f` on the guarded state under the LWLock. An error raised inside `f` (by
/// PostgreSQL's WAL insertion) releases the lock through the transaction abort.
/// What `f` noted for the server log ([`errors::log_later`]) is written after the lock is
/// released.
pub fn locked<R>(s: &'static Shared, f: impl FnOnce(&mut Memory) -> R) -> R {
    // SAFETY: the lock protects the cell.
    let r = unsafe {
        pg_sys::LWLockAcquire(s.lock, pg_sys::LWLockMode::LW_EXCLUSIVE);
        let r = f(&mut *s.guarded.get());
        s.round
            .store((*s.guarded.get()).timeline.round, Ordering::Relaxed);
        pg_sys::LWLockRelease(s.lock);
        r
    };
    // Not while the writer lock is held either: writing() emits them after it.
    // SAFETY: plain LWLock query.
    if !unsafe { pg_sys::LWLockHeldByMe(s.writer) } {
        errors::emit_deferred();
    }
    r
}

/// The lineage state as [`set_lineage`] last installed it, copied without any lock (a
/// sequence counter tells a copy that overlapped a rewrite, which is made again): for the
/// monitoring functions, so that a reader, however slow, never holds up `sno_generate`.
pub fn lineage_snapshot(s: &Shared) -> State {
    loop {
        let before = s.lineage_seq.load(Ordering::Acquire);
        if before & 1 == 0 {
            // SAFETY: a byte copy into MaybeUninit (a torn copy is never assumed valid).
            let copy = unsafe {
                core::ptr::read_volatile(
                    s.lineage_view.get().cast::<core::mem::MaybeUninit<State>>(),
                )
            };
            core::sync::atomic::fence(Ordering::Acquire);
            if s.lineage_seq.load(Ordering::Relaxed) == before {
                // SAFETY: no rewrite overlapped the copy: it is the State set_lineage wrote.
                return unsafe { copy.assume_init() };
            }
        }
        core::hint::spin_loop();
    }
}

/// A copy of what `f` reads of the guarded state, under the LWLock in shared mode: for the
/// monitoring functions, which must not hold up `sno_generate` (nor each other).
pub fn read<R>(s: &'static Shared, f: impl FnOnce(&Memory) -> R) -> R {
    // SAFETY: the lock protects the cell; shared mode: nobody writes it meanwhile.
    unsafe {
        pg_sys::LWLockAcquire(s.lock, pg_sys::LWLockMode::LW_SHARED);
        let r = f(&*s.guarded.get());
        pg_sys::LWLockRelease(s.lock);
        r
    }
}

/// Runs `f` holding the writer lock (`f` takes `lock` itself, as often as it needs). The
/// same release through the transaction abort applies.
pub fn writing<R>(s: &'static Shared, f: impl FnOnce() -> R) -> R {
    // SAFETY: plain LWLock use; `writer` is always taken before `lock`.
    unsafe {
        pg_sys::LWLockAcquire(s.writer, pg_sys::LWLockMode::LW_EXCLUSIVE);
        let r = f();
        pg_sys::LWLockRelease(s.writer);
        errors::emit_deferred();
        r
    }
}

/// [`writing`] for a backend making IDs: the wait for a write in flight (the worker's, which
/// may be waiting for a slow disk or a synchronous standby) answers a query cancel or
/// termination, which waiting on an LWLock would not.
pub fn writing_interruptibly<R>(s: &'static Shared, f: impl FnOnce() -> R) -> R {
    // SAFETY: plain LWLock and latch use; `writer` is always taken before `lock`.
    unsafe {
        while !pg_sys::LWLockConditionalAcquire(s.writer, pg_sys::LWLockMode::LW_EXCLUSIVE) {
            pgrx::check_for_interrupts!();
            pg_sys::WaitLatch(
                pg_sys::MyLatch,
                (pg_sys::WL_LATCH_SET | pg_sys::WL_TIMEOUT | pg_sys::WL_EXIT_ON_PM_DEATH) as i32,
                1,
                pg_sys::PG_WAIT_EXTENSION,
            );
            pg_sys::ResetLatch(pg_sys::MyLatch);
        }
        let r = f();
        pg_sys::LWLockRelease(s.writer);
        errors::emit_deferred();
        r
    }
}

/// Tells every backend to read its partition again before its next ID (a new epoch). Under
/// `lock`.
pub fn new_epoch(s: &Shared) {
    s.epoch.fetch_add(1, Ordering::Release);
}

/// Slots to allocate: one per backend number a backend can have.
pub(crate) fn slot_count() -> usize {
    // SAFETY: plain reads of server globals, set before shared memory is requested.
    unsafe { pg_sys::MaxBackends as usize }
}

fn segment_size() -> usize {
    core::mem::size_of::<Shared>() + slot_count() * core::mem::size_of::<Slot>()
}

/// This backend's slot index, if it has one.
pub fn my_slot_index() -> Option<usize> {
    // SAFETY: plain reads of per-process globals.
    unsafe {
        #[cfg(any(feature = "pg15", feature = "pg16"))]
        let n = pg_sys::MyBackendId as i64 - 1;
        #[cfg(not(any(feature = "pg15", feature = "pg16")))]
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
        PREV_REQUEST = pg_sys::shmem_request_hook;
        pg_sys::shmem_request_hook = Some(on_request);
        PREV_STARTUP = pg_sys::shmem_startup_hook;
        pg_sys::shmem_startup_hook = Some(on_startup);
    }
}

static mut PREV_REQUEST: pg_sys::shmem_request_hook_type = None;
static mut PREV_STARTUP: pg_sys::shmem_startup_hook_type = None;

unsafe fn request() {
    pg_sys::RequestAddinShmemSpace(segment_size());
    // The shard table's lock and the writer lock.
    pg_sys::RequestNamedLWLockTranche(NAME.as_ptr(), 2);
}

#[pg_guard]
unsafe extern "C-unwind" fn on_request() {
    if let Some(prev) = PREV_REQUEST {
        prev();
    }
    request();
}

/// A random 64-bit number (a new incarnation).
pub fn draw() -> u64 {
    let mut b = [0u8; 8];
    // SAFETY: valid buffer; getrandom(2) blocks only before the kernel's pool is seeded.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), 8, 0) };
    if n == 8 {
        u64::from_ne_bytes(b)
    } else {
        // No getrandom: the time and process ID still differ between copies.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        t ^ ((std::process::id() as u64) << 40)
    }
}

/// The inode of `global/pg_control` in the data directory (the working directory of every
/// server process), 0 when it cannot be read. A copy of the data directory has another one.
pub fn control_inode() -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("global/pg_control")
        .map(|m| m.ino())
        .unwrap_or(0)
}

/// The WAL timeline a data directory's recovery ends on when no archive recovery is requested,
/// read before recovery (as PostgreSQL's `InitWalRecovery` picks its target timeline): the
/// latest of its `backup_label`'s `START TIMELINE` (a base backup, or pg_rewind), its last
/// checkpoint's timeline and its minimum recovery point's timeline in pg_control. The last one
/// is set by a promotion (until the checkpoint after it) and by a standby's replay, so a copy of
/// a server promoted since its last checkpoint, or of a standby that followed its upstream's
/// promotion, starts on the timeline its original runs on. 0 when nothing can be read.
pub fn start_timeline() -> u32 {
    let label = std::fs::read_to_string("backup_label")
        .ok()
        .and_then(|label| {
            label
                .lines()
                .find_map(|l| l.strip_prefix("START TIMELINE: "))
                .and_then(|t| t.trim().parse::<u32>().ok())
        })
        .unwrap_or(0);
    let mut crc_ok = false;
    // SAFETY: DataDir is set before shared memory is created; get_controlfile reads the file
    // PostgreSQL itself has just read, into palloc'd memory.
    let control = unsafe {
        let cf = pg_sys::get_controlfile(pg_sys::DataDir, &mut crc_ok);
        if cf.is_null() || !crc_ok {
            0
        } else {
            (*cf)
                .checkPointCopy
                .ThisTimeLineID
                .max((*cf).minRecoveryPointTLI)
        }
    };
    crate::generator::lineage::start_timeline(label, control)
}

/// Whether the state file may be written with fsync (PostgreSQL's `fsync` setting).
pub fn fsync_enabled() -> bool {
    // SAFETY: plain read of a server global.
    unsafe { pg_sys::enableFsync }
}

/// Installs `st` as the lineage state. Under the lock.
pub fn set_lineage(s: &Shared, g: &mut Memory, st: State) {
    g.lineage = st;
    publish_lineage(s, st);
}

/// The monitoring functions' copy of the lineage state, rewritten. Under the lock (one writer).
pub fn publish_lineage(s: &Shared, st: State) {
    // The monitoring copy: odd while it is being rewritten.
    s.lineage_seq.fetch_add(1, Ordering::Relaxed);
    core::sync::atomic::fence(Ordering::Release);
    // SAFETY: one writer (under `lock`); readers copy it as bytes and keep the copy only if
    // `lineage_seq` did not move meanwhile (lineage_snapshot).
    unsafe { core::ptr::write_volatile(s.lineage_view.get(), st) };
    s.lineage_seq.fetch_add(1, Ordering::Release);
}

/// Records why the state file is unusable (cut to the buffer at a character boundary).
pub fn set_reason(s: &mut Shared, why: &str) {
    let n = state_file::reason_prefix(why, s.reason.len()).len();
    s.reason[..n].copy_from_slice(&why.as_bytes()[..n]);
    s.reason_len = n as u32;
    s.state.store(STATE_BROKEN, Ordering::Relaxed);
}

/// Reads the state file at start-up (the postmaster's working directory is the data
/// directory) and sees whether this data directory is a copy (a `backup_label` from a base
/// backup or pg_rewind, or another `global/pg_control` inode): a copy starts a new
/// incarnation at once, so that a standby's derived partition already differs from its
/// primary's. A state file of another cluster was copied here by an administrator (after
/// pg_upgrade): it is adopted like a promotion's ([`crate::generator::lineage`]).
/// [`State::at_start`] for this start; for a copy without a `backup_label`, the partitions its
/// original used itself are kept in [`Shared::moved_own`]. Whether it is a copy.
fn copy_noticed(s: &mut Shared, st: &mut State, backup_label: bool, inode: u64) -> bool {
    let own = st.used_by_me;
    // A standby or a restore may replace its original when promoted; a copy started as a
    // server of its own runs beside it (its grants of reserved partitions wait for take_over).
    let dir = std::path::Path::new(".");
    let recovering = dir.join("standby.signal").exists() || dir.join("recovery.signal").exists();
    let copy = st.at_start_as(backup_label, inode, draw(), start_timeline(), recovering);
    if copy && !backup_label {
        s.moved_own = own;
    }
    copy
}

fn restore_state(s: &mut Shared) {
    let dir = std::path::Path::new(".");
    let backup_label = dir.join("backup_label").exists();
    let inode = control_inode();
    let sysid = s.system_identifier;
    match state_file::read(dir) {
        Ok(Some(mut st)) => {
            // A record of a lost file left by a crash before its removal, or copied along.
            forget_loss(dir);
            if st.system_identifier != sysid {
                pgrx::log!(
                    "sno: adopting the generator state of the cluster with system identifier {} (pg_upgrade)",
                    st.system_identifier
                );
                st.system_identifier = sysid;
                st.timeline = crate::generator::lineage::UPGRADED;
                st.at_start(true, inode, draw(), 0);
            } else if copy_noticed(s, &mut st, backup_label, inode) {
                pgrx::log!(
                    "sno: this data directory is a copy ({}): it is a new incarnation, judged when it first makes IDs",
                    if backup_label { "it has a backup_label" } else { "global/pg_control is another file than the one the state was written for" }
                );
            }
            // A restore loaded grants while sno was not preloaded: none is granted until they
            // are read back (crate::generator::unrecorded).
            if crate::generator::unrecorded::exists(dir) && !st.grants_blocked {
                pgrx::log!(
                    "sno: \"{}\" is here: no reserved partition is granted until every database's grants are read back",
                    crate::generator::unrecorded::FILE_NAME
                );
                st.grants_blocked = true;
                st.grants_blocked_lasting = true;
            }
            // sno 0.1.0 files do not say which explicit partition was in use: the configured
            // one at the first start after the update.
            let configured = u16::try_from(crate::pg::gucs::partition_setting()).ok();
            let v1 = std::fs::read(dir.join(state_file::FILE_NAME))
                .map(|b| b.starts_with(b"sno generator state 1\n"))
                .unwrap_or(false);
            if let (true, Some(p), false) = (v1, configured, st.copied) {
                let me = st.me;
                st.note(p, true, me);
            }
            let changed = state_file::read(dir).ok().flatten() != Some(st);
            // SAFETY: the postmaster, before any other process exists.
            let g = unsafe { &mut *s.guarded.get() };
            g.timeline = Timeline::restore(st.me, g.timeline.slice);
            g.timeline.recall(st.written_bound());
            set_lineage(s, g, st);
            s.state.store(STATE_READY, Ordering::Relaxed);
            if changed {
                if let Err(e) = state_file::write(dir, &st, fsync_enabled()) {
                    // Kept in memory and written before the first ID.
                    errors::warn(Problem::WriteAtStartFailed(&e));
                    s.guarded.get_mut().dirty = true;
                }
            }
            pgrx::log!(
                "sno: generator state restored: this server's IDs resume after unit {} (tick-tock bit {}); {} partitions known in its lineage",
                st.me.horizon,
                st.me.drifts & 1,
                st.entries().len() + st.folded().count()
            );
        }
        Ok(None) => {
            // SAFETY: the postmaster, before any other process exists.
            let g = unsafe { &mut *s.guarded.get() };
            set_lineage(s, g, State::fresh(sysid, draw(), 0, inode));
            s.state.store(STATE_MISSING, Ordering::Relaxed);
            note_loss(s, dir);
            pgrx::log!(
                "sno: no generator state file ({}); CREATE EXTENSION sno creates it in a new cluster, otherwise see the HINT of sno_generate",
                state_file::FILE_NAME
            );
        }
        Err(e) => {
            // SAFETY: the postmaster, before any other process exists.
            let g = unsafe { &mut *s.guarded.get() };
            set_lineage(s, g, State::fresh(sysid, draw(), 0, inode));
            set_reason(s, &e.to_string());
            note_loss(s, dir);
            errors::warn(Problem::StateFileUnusableAtStart {
                reason: &e.to_string(),
            });
        }
    }
}

/// A start found the state file missing or unusable: the partition whose IDs it covered, as
/// [`crate::pg::issuer::durable::source_key`] has it (the explicit partition, or -1), is the
/// one an earlier start recorded ([`crate::generator::lost`]), else the one configured now,
/// recorded for the starts to come until a state file is written again.
fn note_loss(s: &Shared, dir: &std::path::Path) {
    use crate::generator::lost::{self, Lost};
    let l = lost::read(dir).unwrap_or_else(|| {
        let l = Lost {
            key: i64::from(crate::pg::gucs::partition_setting().max(-1)),
            refused: false,
        };
        if let Err(e) = lost::write(dir, l, fsync_enabled()) {
            pgrx::warning!("sno: could not write \"{}\": {e}", lost::FILE_NAME);
        }
        l
    });
    s.lost_source.store(l.key, Ordering::Relaxed);
    s.lost_refused.store(l.refused, Ordering::Relaxed);
}

/// `sno_generate` refuses for want of the state file: recorded once (sno was in use here).
pub fn note_refusal(s: &Shared) {
    let key = s.lost_source.load(Ordering::Relaxed);
    if key != NOT_LOST && !s.lost_refused.swap(true, Ordering::Relaxed) {
        let l = crate::generator::lost::Lost { key, refused: true };
        let dir = std::path::Path::new(".");
        if let Err(e) = crate::generator::lost::write(dir, l, fsync_enabled()) {
            pgrx::log!(
                "sno: could not write \"{}\": {e}",
                crate::generator::lost::FILE_NAME
            );
        }
    }
}

/// A state file was written (or found usable at start): the record of a lost one goes.
pub fn state_written(s: &Shared) {
    if s.lost_source.swap(NOT_LOST, Ordering::Relaxed) != NOT_LOST {
        forget_loss(std::path::Path::new("."));
    }
}

/// Removes the record of a lost state file, if any.
fn forget_loss(dir: &std::path::Path) {
    if let Err(e) = crate::generator::lost::remove(dir, fsync_enabled()) {
        pgrx::log!(
            "sno: could not remove \"{}\": {e}",
            crate::generator::lost::FILE_NAME
        );
    }
}

/// Runs `f` on the guarded state under the LWLock, writing nothing to the client or the log
/// (for a call being unwound after an ERROR); not at all if this backend holds the lock
/// already (an ERROR raised under it: taking it again would wait for ever).
pub fn locked_silently(s: &'static Shared, f: impl FnOnce(&mut Memory)) {
    // SAFETY: plain LWLock use; the lock protects the cell.
    unsafe {
        if pg_sys::LWLockHeldByMe(s.lock) {
            return;
        }
        pg_sys::LWLockAcquire(s.lock, pg_sys::LWLockMode::LW_EXCLUSIVE);
        f(&mut *s.guarded.get());
        s.round
            .store((*s.guarded.get()).timeline.round, Ordering::Relaxed);
        pg_sys::LWLockRelease(s.lock);
    }
}

/// `AddinShmemInitLock`, found by its name among PostgreSQL's individual LWLocks (a macro for
/// `&MainLWLockArray[N].lock` in C, which bindings do not carry).
pub(crate) unsafe fn addin_shmem_init_lock() -> *mut pg_sys::LWLock {
    // The individual locks come first in MainLWLockArray, their tranche IDs equal to their
    // index; there are fewer than 100 of them in every supported major.
    for i in 0..100u16 {
        let name = pg_sys::GetLWLockIdentifier(pg_sys::PG_WAIT_LWLOCK, i);
        if !name.is_null() && core::ffi::CStr::from_ptr(name) == c"AddinShmemInit" {
            return &raw mut (*pg_sys::MainLWLockArray.add(usize::from(i))).lock;
        }
    }
    pgrx::error!("sno: PostgreSQL has no AddinShmemInitLock");
}

#[pg_guard]
unsafe extern "C-unwind" fn on_startup() {
    if let Some(prev) = PREV_STARTUP {
        prev();
    }
    // At a crash-restart the old segment is gone: nothing may use it until the new one is set.
    SHARED.store(core::ptr::null_mut(), Ordering::Relaxed);
    let init_lock = addin_shmem_init_lock();
    pg_sys::LWLockAcquire(init_lock, pg_sys::LWLockMode::LW_EXCLUSIVE);
    let mut found = false;
    let size = segment_size();
    let p = pg_sys::ShmemInitStruct(NAME.as_ptr(), size, &mut found).cast::<Shared>();
    if !found {
        core::ptr::write_bytes(p.cast::<u8>(), 0, size);
        let sysid = pg_sys::GetSystemIdentifier();
        let locks = pg_sys::GetNamedLWLockTranche(NAME.as_ptr());
        // Checked in _PG_init: the server does not start with an unusable slice.
        let slice = crate::pg::gucs::slice().unwrap_or(Slice::FULL);
        p.write(Shared {
            hot: Hot {
                cursor: Cursor::new(slice),
            },
            lock: &raw mut (*locks).lock,
            writer: &raw mut (*locks.add(1)).lock,
            epoch: AtomicU64::new(1),
            lineage_lsn: AtomicU64::new(0),
            worker_latch: AtomicPtr::new(core::ptr::null_mut()),
            renew_wanted: AtomicBool::new(false),
            lineage_view: UnsafeCell::new(State::fresh(sysid, 0, 0, 0)),
            lineage_seq: AtomicU64::new(0),
            round: AtomicU64::new(0),
            guarded: UnsafeCell::new(Memory {
                timeline: Timeline::new(slice),
                units_opened: 0,
                lineage: State::fresh(sysid, 0, 0, 0),
                judged: (u32::MAX, -1),
                dirty: false,
                members: crate::generator::member::Known::NONE,
            }),
            system_identifier: sysid,
            partition: AtomicU32::new(0),
            configured: AtomicI32::new(crate::pg::gucs::partition_setting()),
            moved_own: Partitions::NONE,
            citus_node: AtomicU32::new(CITUS_UNREAD),
            citus_group: AtomicU32::new(NO_GROUP),
            full_unit_stalls: AtomicU64::new(0),
            clock_waits: AtomicU64::new(0),
            clock_wait_failures: AtomicU64::new(0),
            retired_ids: AtomicU64::new(0),
            state_writes: AtomicU64::new(0),
            state_write_waits: AtomicU64::new(0),
            state_write_failures: AtomicU64::new(0),
            nslots: slot_count() as u32,
            state: AtomicU32::new(STATE_MISSING),
            reason: [0; 200],
            reason_len: 0,
            lost_source: AtomicI64::new(NOT_LOST),
            lost_refused: AtomicBool::new(false),
        });
        restore_state(&mut *p);
        crate::pg::issuer::members::restore(&mut *p);
    }
    SHARED.store(p, Ordering::Relaxed);
    pg_sys::LWLockRelease(init_lock);
}

/// `sno.partition` as the server uses it: the postmaster's value, published in shared memory
/// at start and at every reload ([`assign_partition`]), `None` for -1 (derive it). A backend's
/// own copy of the setting is read again only between statements, so a statement running
/// across a reload would otherwise go on with the old partition. Without shared memory (sno
/// not preloaded: no generator), this process's setting.
pub fn partition() -> Option<u16> {
    let v = match shared() {
        Some(s) => s.configured.load(core::sync::atomic::Ordering::Acquire),
        None => crate::pg::gucs::partition_setting(),
    };
    u16::try_from(v).ok()
}

/// The assign hook of `sno.partition`. In the postmaster (which reads the configuration
/// first at a reload, then signals every other process), it publishes the new value and
/// starts a new epoch, so the next ID of every backend, in the middle of a statement or not,
/// is made after the lineage was judged for it. Other processes assign it too (each at its own
/// next reload, parallel workers from their leader's possibly older copy): they publish
/// nothing.
#[pgrx::pg_guard]
pub unsafe extern "C-unwind" fn assign_partition(newval: i32, _extra: *mut core::ffi::c_void) {
    // SAFETY: plain reads of process globals.
    let postmaster = unsafe { !pgrx::pg_sys::IsUnderPostmaster };
    if !postmaster {
        return;
    }
    if let Some(s) = shared() {
        use core::sync::atomic::Ordering;
        // The value before the epoch: a backend that sees the new epoch sees the new value
        // (it reads the epoch first, see hot.rs).
        if s.configured.swap(newval, Ordering::AcqRel) != newval {
            s.epoch.fetch_add(1, Ordering::AcqRel);
        }
    }
}
