//! The lease registry's worker: where leases are granted, renewed and released, in a
//! transaction of its own, never in the caller's.
//!
//! Why: a grant made in the caller's transaction belongs to the caller. 0.8.0 refused the ways
//! a caller can roll back after its call (transaction blocks, savepoints, DO blocks, procedures,
//! pipelines), one at a time, and a PL/pgSQL cursor loop was one it missed: a lease rolled back
//! after its holder had it, and granted again to the next caller. And the registry's table lock
//! lived as long as the caller's statement: one `SELECT ..., pg_sleep(3600) FROM
//! sno_lease_acquire(...)` held every other role's renewals. PostgreSQL's own answer for a
//! shared counter that any transaction draws from is the sequence, which no rollback takes back
//! and no transaction holds; this is the same rule for the registry: a decision is made and
//! committed (flushed locally) by the worker before its values reach the caller, so nothing the
//! caller does next can undo it, and nothing is held for the caller's statement. A caller that
//! gives up waiting (a cancel, a timeout) may leave a grant nobody received: it ends at its
//! window's end, as an unused lease does, and is never handed out twice.
//!
//! The protocol, in shared memory under one LWLock (held only to copy a request or an answer):
//! each backend has a request slot of its own (indexed by its backend number, so a call never
//! waits for a slot); a caller writes its [`Ask`] there and queues it; the database's worker, a
//! dynamic background worker connected to that database and started on demand, takes the
//! oldest queued request of its database, decides, commits, writes the [`Answer`] and sets the
//! caller's latch. One worker per database (the only writer of its registry, so decisions never
//! race) serves every caller in turn: a call waits for the calls queued before it in its
//! database, each a few milliseconds, and for the worker's start (tens of milliseconds) after
//! an idle spell. A worker exits after [`IDLE_EXIT`] without work (so that `DROP DATABASE` and
//! `CREATE DATABASE ... TEMPLATE` find the database free within their five-second wait), and
//! after any request when another database's callers wait for a worker entry of their own.
//!
//! Failures answered at once: a worker that cannot start (no background worker slot for
//! [`SLOT_WAIT`], or it stopped before it took its entry: a database that allows no
//! connections) fails the caller that started it with the reason; a lock timeout on the
//! registry's tables fails every request of that database queued then, not one after another;
//! a worker that exits with a request taken answers it with an error. A caller that errors out
//! while waiting, or exits, withdraws a queued request and abandons a taken one.

use super::lease_request::{failure, Answer, Ask, Failure};
use crate::pg::errors::StartFailure;
use crate::pg::shmem;
use core::ffi::CStr;
use core::sync::atomic::{AtomicBool, Ordering::Relaxed};
use core::time::Duration;
use pgrx::bgworkers::{
    BackgroundWorker, BackgroundWorkerBuilder, BackgroundWorkerStatus, DynamicBackgroundWorker,
    SignalWakeFlags,
};
use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::PgSqlErrorCode;
use std::time::Instant;

/// Databases whose registry can run at once (a worker each); callers of another database wait
/// for one of them to go idle or yield.
pub const WORKERS: usize = 16;

/// How long a worker waits for work before it exits.
pub const IDLE_EXIT: Duration = Duration::from_secs(1);

/// How long a caller waits for a free background worker slot before it fails.
pub const SLOT_WAIT: Duration = Duration::from_secs(5);

/// An entry whose worker was registered but never came up within this long is forgotten.
const START_TIMEOUT_US: i64 = 10_000_000;

/// Where a request slot stands.
const FREE: u32 = 0;
const QUEUED: u32 = 1;
const TAKEN: u32 = 2;
const DONE: u32 = 3;
/// Taken by the worker, its caller gone: the worker frees it when done.
const ABANDONED: u32 = 4;

#[repr(C)]
struct Request {
    state: u32,
    /// The caller's process and latch.
    owner: i32,
    owner_latch: *mut pg_sys::Latch,
    /// The worker that took it.
    taker: i32,
    database: u32,
    seq: u64,
    ask: Ask,
    answer: Answer,
}

/// A database's worker: `pid` 0 while it starts (since `since`, µs).
#[derive(Clone, Copy)]
#[repr(C)]
struct Worker {
    database: u32,
    pid: i32,
    latch: *mut pg_sys::Latch,
    since: i64,
}

const NO_WORKER: Worker = Worker {
    database: 0,
    pid: 0,
    latch: core::ptr::null_mut(),
    since: 0,
};

/// The queue in shared memory: this header, then one [`Request`] per backend number.
#[repr(C)]
pub struct Queue {
    lock: *mut pg_sys::LWLock,
    next_seq: u64,
    workers: [Worker; WORKERS],
    nrequests: u32,
}

// SAFETY: shared memory mapped at the same address in every process; every field is read and
// written under `lock`.
unsafe impl Sync for Queue {}

impl Queue {
    fn requests(&mut self) -> &mut [Request] {
        // SAFETY: the segment was sized for `nrequests` requests right after the header.
        unsafe {
            let first = (self as *mut Queue).add(1).cast::<Request>();
            core::slice::from_raw_parts_mut(first, self.nrequests as usize)
        }
    }
}

/// Bytes of shared memory the queue needs for `backends` backends.
pub const fn size(backends: usize) -> usize {
    core::mem::size_of::<Queue>() + backends * core::mem::size_of::<Request>()
}

/// Sets up the queue in a new shared segment (the postmaster, at start and crash-restart).
///
/// # Safety
/// `q` points to `size(backends)` bytes of shared memory nobody else uses yet.
unsafe fn init_queue(q: *mut Queue, lock: *mut pg_sys::LWLock, backends: usize) {
    core::ptr::write_bytes(q.cast::<u8>(), 0, size(backends));
    (*q).lock = lock;
    (*q).workers = [NO_WORKER; WORKERS];
    (*q).nrequests = backends as u32;
}

/// The queue, set by [`on_startup`] for the life of the shared segment.
static QUEUE: core::sync::atomic::AtomicPtr<Queue> =
    core::sync::atomic::AtomicPtr::new(core::ptr::null_mut());

/// The queue's segment and its lock's tranche.
const QUEUE_NAME: &CStr = c"sno lease registry";

static mut PREV_REQUEST: pg_sys::shmem_request_hook_type = None;
static mut PREV_STARTUP: pg_sys::shmem_startup_hook_type = None;

/// Registers the queue's shared memory. Called from `_PG_init` while the postmaster preloads
/// libraries (after [`crate::pg::shmem::init`]).
pub fn init() {
    // SAFETY: hook chaining as every extension does it, from _PG_init in the postmaster.
    unsafe {
        PREV_REQUEST = pg_sys::shmem_request_hook;
        pg_sys::shmem_request_hook = Some(on_request);
        PREV_STARTUP = pg_sys::shmem_startup_hook;
        pg_sys::shmem_startup_hook = Some(on_startup);
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn on_request() {
    if let Some(prev) = PREV_REQUEST {
        prev();
    }
    pg_sys::RequestAddinShmemSpace(size(shmem::slot_count()));
    pg_sys::RequestNamedLWLockTranche(QUEUE_NAME.as_ptr(), 1);
}

#[pg_guard]
unsafe extern "C-unwind" fn on_startup() {
    if let Some(prev) = PREV_STARTUP {
        prev();
    }
    // At a crash-restart the old segment is gone: nothing may use it until the new one is set.
    QUEUE.store(core::ptr::null_mut(), Relaxed);
    let init_lock = shmem::addin_shmem_init_lock();
    pg_sys::LWLockAcquire(init_lock, pg_sys::LWLockMode::LW_EXCLUSIVE);
    let backends = shmem::slot_count();
    let mut found = false;
    let q =
        pg_sys::ShmemInitStruct(QUEUE_NAME.as_ptr(), size(backends), &mut found).cast::<Queue>();
    if !found {
        let lock = pg_sys::GetNamedLWLockTranche(QUEUE_NAME.as_ptr());
        init_queue(q, &raw mut (*lock).lock, backends);
    }
    QUEUE.store(q, Relaxed);
    pg_sys::LWLockRelease(init_lock);
}

fn queue() -> &'static mut Queue {
    let q = QUEUE.load(Relaxed);
    if q.is_null() {
        super::shared_or_raise();
        error!("sno: the lease registry's queue is not in shared memory");
    }
    // SAFETY: set by shmem's start-up hook for the life of the segment; every field is used
    // under its lock.
    unsafe { &mut *q }
}

/// Runs `f` on the queue under its lock: only copies and flag changes in `f`, nothing that can
/// raise an error.
fn with_queue<R>(f: impl FnOnce(&mut Queue) -> R) -> R {
    let q = queue();
    // SAFETY: plain LWLock use.
    unsafe {
        pg_sys::LWLockAcquire(q.lock, pg_sys::LWLockMode::LW_EXCLUSIVE);
        let r = f(q);
        pg_sys::LWLockRelease(q.lock);
        r
    }
}

fn now_us() -> i64 {
    // SAFETY: plain clock read.
    unsafe { pg_sys::GetCurrentTimestamp() }
}

fn my_database() -> u32 {
    // SAFETY: plain read of a backend global.
    unsafe { pg_sys::MyDatabaseId }.to_u32()
}

fn my_pid() -> i32 {
    // SAFETY: plain read of a backend global.
    unsafe { pg_sys::MyProcPid }
}

// --- the caller's side ----------------------------------------------------------------------

/// This backend's request slot (its backend number).
fn my_slot() -> usize {
    let n =
        shmem::my_slot_index().unwrap_or_else(|| error!("sno: this process has no backend number"));
    if n >= queue().nrequests as usize {
        error!("sno: backend number {n} is past the lease registry's queue");
    }
    n
}

static EXIT_HOOKED: AtomicBool = AtomicBool::new(false);
static WAITING: AtomicBool = AtomicBool::new(false);

/// Withdraws or abandons this backend's request, if it has one in flight.
fn abandon() {
    if !WAITING.swap(false, Relaxed) {
        return;
    }
    let (i, pid) = (my_slot(), my_pid());
    with_queue(|q| {
        let r = &mut q.requests()[i];
        if r.owner != pid {
            return;
        }
        r.state = match r.state {
            TAKEN | ABANDONED => ABANDONED,
            // Queued: the worker never saw it. Done: granted, but nobody got it; it ends.
            _ => FREE,
        };
    });
}

#[pg_guard]
unsafe extern "C-unwind" fn on_caller_exit(_code: i32, _arg: pg_sys::Datum) {
    abandon();
}

/// Asks this database's registry, waits for its answer and returns it; an error the worker
/// raised is raised again here, as it was (SQLSTATE, message, DETAIL, HINT).
pub fn ask(a: Ask) -> Answer {
    if !EXIT_HOOKED.swap(true, Relaxed) {
        // SAFETY: registers an exit callback once for this process.
        unsafe { pg_sys::before_shmem_exit(Some(on_caller_exit), pg_sys::Datum::from(0)) };
    }
    let answer = PgTryBuilder::new(|| wait_for_answer(a))
        .catch_others(|e| {
            abandon();
            e.rethrow()
        })
        .execute();
    if let Answer::Failed(f) = answer {
        raise_again(&f);
    }
    answer
}

/// What the caller does next, decided under the queue's lock.
// Copied once out of shared memory per call: no allocation on the way.
#[allow(clippy::large_enum_variant)]
enum Next {
    Answer(Answer),
    Start,
    Wait,
}

fn wait_for_answer(a: Ask) -> Answer {
    let (db, pid, slot) = (my_database(), my_pid(), my_slot());
    // SAFETY: MyLatch is this process's latch, in shared memory.
    let latch = unsafe { pg_sys::MyLatch };
    // A request this backend abandoned earlier (a cancel) may still be with the worker: the
    // slot is this backend's again once the worker is done with it.
    while with_queue(|q| matches!(q.requests()[slot].state, TAKEN | ABANDONED)) {
        nap(10);
    }
    with_queue(|q| {
        q.next_seq += 1;
        let seq = q.next_seq;
        let r = &mut q.requests()[slot];
        *r = Request {
            state: QUEUED,
            owner: pid,
            owner_latch: latch,
            taker: 0,
            database: db,
            seq,
            ask: a,
            answer: Answer::Count(0),
        };
    });
    WAITING.store(true, Relaxed);
    // The worker this call started, while it comes up.
    let mut started: Option<DynamicBackgroundWorker> = None;
    loop {
        let next = with_queue(|q| {
            let now = now_us();
            // Entries of workers that never came up (a failed start of any database) go.
            for w in q.workers.iter_mut() {
                if w.database != 0 && w.pid == 0 && now - w.since > START_TIMEOUT_US {
                    *w = NO_WORKER;
                }
            }
            let r = &mut q.requests()[slot];
            if r.state == DONE {
                r.state = FREE;
                return Next::Answer(r.answer);
            }
            let queued = r.state == QUEUED;
            match q.workers.iter().position(|w| w.database == db) {
                Some(i) => {
                    let w = q.workers[i];
                    if w.pid != 0 && queued && !w.latch.is_null() {
                        // SAFETY: a worker's latch lives as long as its entry.
                        unsafe { pg_sys::SetLatch(w.latch) };
                    }
                    Next::Wait
                }
                // No worker (none yet, or it left: idle, or yielding to another database).
                None if queued => {
                    match q.workers.iter_mut().find(|w| w.database == 0) {
                        Some(w) => {
                            *w = Worker {
                                database: db,
                                pid: 0,
                                latch: core::ptr::null_mut(),
                                since: now,
                            };
                            Next::Start
                        }
                        // Every entry serves another database: one yields after its request.
                        None => Next::Wait,
                    }
                }
                None => Next::Wait,
            }
        });
        match next {
            Next::Answer(a) => {
                WAITING.store(false, Relaxed);
                return a;
            }
            Next::Start => match start_worker(db) {
                Ok(h) => started = Some(h),
                Err(why) => {
                    forget_entry(db);
                    abandon();
                    raise_start_failure(why);
                }
            },
            Next::Wait => {
                // A worker this call started that stopped before it took its entry: it could
                // not connect (the server log says why).
                if let Some(h) = &started {
                    match h.pid() {
                        Ok(_) | Err(BackgroundWorkerStatus::NotYetStarted) => {}
                        Err(_) => {
                            if forget_entry(db) {
                                abandon();
                                raise_start_failure(StartFailure::Stopped);
                            }
                            started = None;
                        }
                    }
                }
                nap(100);
            }
        }
    }
}

/// Waits on the latch for up to `ms`, answering interrupts.
fn nap(ms: i64) {
    // SAFETY: plain latch use; CHECK_FOR_INTERRUPTS may raise (the caller's PgTry abandons).
    unsafe {
        pg_sys::WaitLatch(
            pg_sys::MyLatch,
            (pg_sys::WL_LATCH_SET | pg_sys::WL_TIMEOUT | pg_sys::WL_EXIT_ON_PM_DEATH) as i32,
            ms as _,
            pg_sys::PG_WAIT_EXTENSION,
        );
        pg_sys::ResetLatch(pg_sys::MyLatch);
    }
    pgrx::check_for_interrupts!();
}

/// Forgets `db`'s entry if its worker never came up; whether there was one.
fn forget_entry(db: u32) -> bool {
    with_queue(|q| {
        let mut found = false;
        for w in q.workers.iter_mut() {
            if w.database == db && w.pid == 0 {
                *w = NO_WORKER;
                found = true;
            }
        }
        found
    })
}

/// Starts this database's worker, waiting up to [`SLOT_WAIT`] for a free slot (a parallel query
/// may hold them for a moment), and until the postmaster has started it.
fn start_worker(db: u32) -> Result<DynamicBackgroundWorker, StartFailure> {
    let t0 = Instant::now();
    loop {
        let h = BackgroundWorkerBuilder::new("sno lease registry")
            .set_type("sno lease registry")
            .set_library("sno")
            .set_function("sno_lease_registry_main")
            .set_argument(Some(pg_sys::Datum::from(db)))
            .enable_spi_access()
            .set_start_time(pgrx::bgworkers::BgWorkerStartTime::RecoveryFinished)
            .set_restart_time(None)
            .set_notify_pid(my_pid())
            .load_dynamic();
        match h {
            Ok(h) => {
                return match h.wait_for_startup() {
                    Ok(_) | Err(BackgroundWorkerStatus::Stopped) => Ok(h),
                    Err(_) => Err(StartFailure::NotStarted),
                }
            }
            Err(_) if t0.elapsed() < SLOT_WAIT => nap(100),
            Err(_) => return Err(StartFailure::NoSlot),
        }
    }
}

fn raise_start_failure(why: StartFailure) -> ! {
    use crate::pg::errors::{raise, Problem};
    // SAFETY: plain reads of server globals.
    let (mwp, mpw) = unsafe { (pg_sys::max_worker_processes, pg_sys::max_parallel_workers) };
    let parallel = match why {
        StartFailure::NoSlot => Spi::get_one::<i64>(
            "SELECT pg_catalog.count(*) FROM pg_catalog.pg_stat_activity \
             WHERE backend_type OPERATOR(pg_catalog.=) 'parallel worker'",
        )
        .ok()
        .flatten()
        .unwrap_or(0) as i32,
        _ => 0,
    };
    raise(Problem::LeaseRegistryNotStarted {
        why,
        max_worker_processes: mwp,
        max_parallel_workers: mpw,
        parallel_now: parallel,
    })
}

/// Raises the worker's error in this session.
fn raise_again(f: &Failure) -> ! {
    let text = |b: &[u8], n: u16| String::from_utf8_lossy(&b[..usize::from(n)]).into_owned();
    let mut r = crate::pg::report::Report::new(
        PgSqlErrorCode::from(f.code),
        text(&f.message, f.message_len),
    );
    if f.detail_len > 0 {
        r = r.detail(text(&f.detail, f.detail_len));
    }
    if f.hint_len > 0 {
        r = r.hint(text(&f.hint, f.hint_len));
    }
    r.raise()
}

// --- the worker's side ----------------------------------------------------------------------

/// The worker's entry for this database, claimed at start: false if another worker serves it
/// or no entry is free.
fn claim_entry(db: u32) -> bool {
    // SAFETY: MyLatch is this process's latch.
    let (pid, latch, now) = (my_pid(), unsafe { pg_sys::MyLatch }, now_us());
    with_queue(|q| {
        if q.workers.iter().any(|w| w.database == db && w.pid != 0) {
            return false;
        }
        let i = q
            .workers
            .iter()
            .position(|w| w.database == db)
            .or_else(|| q.workers.iter().position(|w| w.database == 0));
        let Some(i) = i else { return false };
        q.workers[i] = Worker {
            database: db,
            pid,
            latch,
            since: now,
        };
        true
    })
}

#[pg_guard]
unsafe extern "C-unwind" fn on_worker_exit(_code: i32, _arg: pg_sys::Datum) {
    let pid = my_pid();
    let f = failure(
        PgSqlErrorCode::ERRCODE_ADMIN_SHUTDOWN,
        "the sno lease registry's worker stopped while it decided this call",
        Some("The call may or may not have been granted; a lease nobody received ends at its window's end and is never granted twice."),
        Some("Call it again."),
    );
    with_queue(|q| {
        for w in q.workers.iter_mut() {
            if w.pid == pid {
                *w = NO_WORKER;
            }
        }
        for r in q.requests().iter_mut() {
            if r.taker == pid && r.state == TAKEN {
                r.answer = Answer::Failed(f);
                r.state = DONE;
                if !r.owner_latch.is_null() {
                    pg_sys::SetLatch(r.owner_latch);
                }
            } else if r.taker == pid && r.state == ABANDONED {
                r.state = FREE;
            }
        }
    });
}

/// Whether a caller of a database with no worker entry waits while every entry is taken: this
/// worker then yields its entry after its request.
fn others_waiting(q: &mut Queue, db: u32) -> bool {
    let workers = q.workers;
    workers.iter().all(|w| w.database != 0)
        && q.requests().iter().any(|r| {
            r.state == QUEUED
                && r.database != db
                && !workers.iter().any(|w| w.database == r.database)
        })
}

/// The registry's worker for one database (its OID is the argument).
#[pg_guard]
#[no_mangle]
pub extern "C-unwind" fn sno_lease_registry_main(arg: pg_sys::Datum) {
    BackgroundWorker::attach_signal_handlers(SignalWakeFlags::SIGHUP | SignalWakeFlags::SIGTERM);
    let db = arg.value() as u32;
    // SAFETY: registers an exit callback once for this process (before the connection, which
    // may fail: its entry is forgotten then too).
    unsafe { pg_sys::before_shmem_exit(Some(on_worker_exit), pg_sys::Datum::from(0)) };
    BackgroundWorker::connect_worker_to_spi_by_oid(Some(pg_sys::Oid::from(db)), None);
    // Its own transactions: read committed (each statement sees what committed before it),
    // writable, flushed locally at commit and not waiting for a synchronous standby (a promoted
    // standby never grants from its old primary's partitions), bounded waits for locks, nothing
    // another role put on a search path.
    for (name, value) in [
        (c"default_transaction_isolation", c"read committed"),
        (c"default_transaction_read_only", c"off"),
        (c"synchronous_commit", c"local"),
        (c"lock_timeout", c"5s"),
        (c"idle_in_transaction_session_timeout", c"0"),
        (c"search_path", c"pg_catalog, pg_temp"),
        (c"session_replication_role", c"origin"),
    ] {
        set(name, value);
    }
    if !claim_entry(db) {
        return;
    }
    let mut idle_since = Instant::now();
    loop {
        if BackgroundWorker::sigterm_received() {
            break;
        }
        if BackgroundWorker::sighup_received() {
            // SAFETY: the standard reload of a process that received SIGHUP.
            unsafe { pg_sys::ProcessConfigFile(pg_sys::GucContext::PGC_SIGHUP) };
        }
        let pid = my_pid();
        let idle = idle_since.elapsed() >= IDLE_EXIT;
        let taken = with_queue(|q| {
            let next = q
                .requests()
                .iter()
                .enumerate()
                .filter(|(_, r)| r.state == QUEUED && r.database == db)
                .min_by_key(|(_, r)| r.seq)
                .map(|(i, _)| i);
            match next {
                Some(i) => {
                    let r = &mut q.requests()[i];
                    r.state = TAKEN;
                    r.taker = pid;
                    Some((i, r.ask))
                }
                None => {
                    if idle {
                        // Leaves under the lock: a caller queueing after this starts another.
                        leave(q, pid);
                    }
                    None
                }
            }
        });
        let Some((i, a)) = taken else {
            if idle {
                break;
            }
            BackgroundWorker::wait_latch(Some(Duration::from_millis(100)));
            continue;
        };
        let answer = super::lease_registry::decide(&a);
        let lock_timeout = matches!(answer, Answer::Failed(f)
            if f.code == PgSqlErrorCode::ERRCODE_LOCK_NOT_AVAILABLE as i32);
        let yield_entry = with_queue(|q| {
            let r = &mut q.requests()[i];
            if r.state == TAKEN {
                r.answer = answer;
                r.state = DONE;
                // SAFETY: the owner's latch lives as long as its process, which abandons its
                // slot before it exits.
                unsafe { pg_sys::SetLatch(r.owner_latch) };
            } else {
                r.state = FREE;
            }
            // The registry's tables were locked for the whole lock timeout: the calls queued
            // now would wait for the same lock one after another; they get the same answer.
            if lock_timeout {
                for r in q.requests().iter_mut() {
                    if r.state == QUEUED && r.database == db {
                        r.answer = answer;
                        r.state = DONE;
                        // SAFETY: as above.
                        unsafe { pg_sys::SetLatch(r.owner_latch) };
                    }
                }
            }
            let yield_entry = others_waiting(q, db);
            if yield_entry {
                leave(q, pid);
            }
            yield_entry
        });
        if yield_entry {
            break;
        }
        idle_since = Instant::now();
    }
}

/// Gives up this worker's entry (under the queue's lock).
fn leave(q: &mut Queue, pid: i32) {
    for w in q.workers.iter_mut() {
        if w.pid == pid {
            *w = NO_WORKER;
        }
    }
}

/// Sets a setting for this process's session.
fn set(name: &CStr, value: &CStr) {
    // SAFETY: SetConfigOption copies both strings.
    unsafe {
        pg_sys::SetConfigOption(
            name.as_ptr(),
            value.as_ptr(),
            pg_sys::GucContext::PGC_SUSET,
            pg_sys::GucSource::PGC_S_OVERRIDE,
        )
    };
}
