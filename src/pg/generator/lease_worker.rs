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
//! caller does next can undo it, and the registry's lock is held only for the worker's own
//! short transaction. A caller that gives up waiting (a cancel, a timeout) may leave a grant
//! nobody received: it ends at its window's end, as an unused lease does, and is never handed
//! out twice.
//!
//! The protocol, all in shared memory under one LWLock (held only to copy a request or an
//! answer): a caller takes a free [`Request`] slot, writes its [`Ask`] and queues it; the
//! database's worker, started on demand (a dynamic background worker connected to that
//! database), takes the oldest queued request of its database, decides, commits, writes the
//! [`Answer`] and sets the caller's latch. One worker per database serves every caller in turn
//! (so a call waits at most for the calls queued before it, each a few milliseconds, and for
//! the worker's start, tens of milliseconds, after an idle spell); it exits after
//! [`IDLE_EXIT`] without work, so that `DROP DATABASE` and `CREATE DATABASE ... TEMPLATE` find
//! the database free within their five-second wait.
//!
//! A caller that errors out while waiting (cancel, `statement_timeout`) or exits abandons its
//! slot: a queued request is withdrawn (nothing was decided), a taken one is freed by the
//! worker when it is done. A worker that exits with a request taken answers it with an error.

use crate::pg::shmem;
use core::ffi::CStr;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use core::time::Duration;
use pgrx::bgworkers::{BackgroundWorker, BackgroundWorkerBuilder, SignalWakeFlags};
use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::PgSqlErrorCode;

/// Requests that can wait at once, in every database together. A caller finding none free waits
/// for one (each is held for one call).
pub const SLOTS: usize = 64;

/// Databases whose registry can run at once (one worker each).
pub const WORKERS: usize = 8;

/// How long a worker waits for work before it exits.
pub const IDLE_EXIT: Duration = Duration::from_secs(1);

/// How long a worker may take to start before a waiting caller starts another.
const START_TIMEOUT_US: i64 = 30_000_000;

/// How many times one call starts a worker before it gives up.
const MAX_STARTS: u32 = 3;

/// What a call asks the registry.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum Kind {
    Acquire,
    Renew,
    Release,
    TakeOver,
}

/// A name as PostgreSQL keeps it (`NAMEDATALEN` bytes with its terminator).
pub type Name = [u8; 64];

/// A request, as the caller's session saw it: the calling role and the settings that apply to
/// it (a role's `ALTER ROLE ... SET` values are its session's, not the worker's).
#[derive(Clone, Copy)]
#[repr(C)]
pub struct Ask {
    pub kind: Kind,
    /// The calling role (`current_user`), whose leases these are.
    pub role: u32,
    pub role_name: Name,
    /// The login role, which the HINTs name (`ALTER ROLE ... SET` takes effect there).
    pub session_role: Name,
    pub holder: [u8; crate::generator::lease::MAX_HOLDER_BYTES],
    pub holder_len: u16,
    /// TTL in 4 ms units (checked by the caller against its `sno.lease_max_ttl`).
    pub ttl: i64,
    pub sequences: u32,
    pub lease: i64,
    pub token: [u8; 16],
    /// The caller's `sno.lease_limit`, `sno.reserved_limit`, `sno.lease_max_ttl`.
    pub lease_limit: i32,
    pub reserved_limit: i32,
    pub max_ttl_s: i32,
}

/// A lease as the registry granted or renewed it.
#[derive(Clone, Copy)]
#[repr(C)]
pub struct Granted {
    pub lease: i64,
    pub token: [u8; 16],
    pub partition: u16,
    pub min: u16,
    pub max: u16,
    pub not_before: i64,
    pub expires: i64,
    pub renew_after: i64,
    pub holder: [u8; crate::generator::lease::MAX_HOLDER_BYTES],
    pub holder_len: u16,
}

impl Default for Granted {
    fn default() -> Self {
        Granted {
            lease: 0,
            token: [0; 16],
            partition: 0,
            min: 0,
            max: 0,
            not_before: 0,
            expires: 0,
            renew_after: 0,
            holder: [0; crate::generator::lease::MAX_HOLDER_BYTES],
            holder_len: 0,
        }
    }
}

impl Default for Ask {
    fn default() -> Self {
        Ask {
            kind: Kind::Acquire,
            role: 0,
            role_name: [0; 64],
            session_role: [0; 64],
            holder: [0; crate::generator::lease::MAX_HOLDER_BYTES],
            holder_len: 0,
            ttl: 0,
            sequences: 0,
            lease: 0,
            token: [0; 16],
            lease_limit: 0,
            reserved_limit: 0,
            max_ttl_s: 0,
        }
    }
}

/// An error the worker raised, to be raised again in the caller.
#[derive(Clone, Copy)]
#[repr(C)]
pub struct Failure {
    pub code: i32,
    pub message: [u8; 1024],
    pub message_len: u16,
    pub detail: [u8; 2048],
    pub detail_len: u16,
    pub hint: [u8; 2048],
    pub hint_len: u16,
}

/// What the worker answered.
// In shared memory, where every slot has the size of the largest answer anyway.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Copy)]
#[repr(C)]
pub enum Answer {
    /// A lease (acquire, renew).
    Lease(Granted),
    /// A count (take-over), or nothing (release: 0).
    Count(i64),
    /// An error.
    Failed(Failure),
}

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

/// The queue in shared memory.
#[repr(C)]
pub struct Queue {
    lock: *mut pg_sys::LWLock,
    next_seq: u64,
    workers: [Worker; WORKERS],
    requests: [Request; SLOTS],
}

// SAFETY: shared memory mapped at the same address in every process; every field is read and
// written under `lock`.
unsafe impl Sync for Queue {}

/// Bytes of shared memory the queue needs.
pub const fn size() -> usize {
    core::mem::size_of::<Queue>()
}

/// Sets up the queue in a new shared segment (the postmaster, at start and crash-restart).
///
/// # Safety
/// `q` points to `size()` bytes of shared memory nobody else uses yet.
pub unsafe fn init(q: *mut Queue, lock: *mut pg_sys::LWLock) {
    core::ptr::write_bytes(q.cast::<u8>(), 0, size());
    (*q).lock = lock;
    (*q).workers = [NO_WORKER; WORKERS];
}

fn queue() -> &'static mut Queue {
    let q = shmem::lease_queue();
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

/// The slot this backend's request is in while it waits (for the exit callback), or
/// `usize::MAX`. Atomics only for a safe static: a backend is single-threaded.
static MINE: AtomicUsize = AtomicUsize::new(usize::MAX);
static EXIT_HOOKED: AtomicBool = AtomicBool::new(false);

/// Withdraws or abandons this backend's request, if it has one.
fn abandon() {
    let i = MINE.swap(usize::MAX, Relaxed);
    if i == usize::MAX {
        return;
    }
    with_queue(|q| {
        let r = &mut q.requests[i];
        if r.owner != my_pid() {
            return;
        }
        r.state = match r.state {
            TAKEN => ABANDONED,
            ABANDONED => ABANDONED,
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

fn wait_for_answer(a: Ask) -> Answer {
    let db = my_database();
    // SAFETY: MyLatch is this process's latch, in shared memory.
    let latch = unsafe { pg_sys::MyLatch };
    let slot = loop {
        let got = with_queue(|q| {
            let i = q.requests.iter().position(|r| r.state == FREE)?;
            q.next_seq += 1;
            let seq = q.next_seq;
            let r = &mut q.requests[i];
            r.state = QUEUED;
            r.owner = my_pid();
            r.owner_latch = latch;
            r.taker = 0;
            r.database = db;
            r.seq = seq;
            r.ask = a;
            Some(i)
        });
        if let Some(i) = got {
            MINE.store(i, Relaxed);
            break i;
        }
        nap(10);
    };
    let mut starts = 0u32;
    loop {
        // Copied once out of shared memory per call: no allocation on the way.
        #[allow(clippy::large_enum_variant)]
        enum Next {
            Answer(Answer),
            Start,
            Wait,
        }
        let next = with_queue(|q| {
            let r = &mut q.requests[slot];
            if r.state == DONE {
                r.state = FREE;
                return Next::Answer(r.answer);
            }
            let now = now_us();
            match q.workers.iter_mut().find(|w| w.database == db) {
                Some(w) if w.pid != 0 => {
                    if r.state == QUEUED && !w.latch.is_null() {
                        // SAFETY: a worker's latch lives as long as its entry.
                        unsafe { pg_sys::SetLatch(w.latch) };
                    }
                    Next::Wait
                }
                Some(w) if now - w.since < START_TIMEOUT_US => Next::Wait,
                // A worker that never came up: start another.
                Some(w) => {
                    w.since = now;
                    Next::Start
                }
                None if r.state == QUEUED => match q.workers.iter_mut().find(|w| w.database == 0) {
                    Some(w) => {
                        *w = Worker {
                            database: db,
                            pid: 0,
                            latch: core::ptr::null_mut(),
                            since: now,
                        };
                        Next::Start
                    }
                    // Every worker serves another database: wait for one to go idle.
                    None => Next::Wait,
                },
                None => Next::Wait,
            }
        });
        match next {
            Next::Answer(a) => {
                MINE.store(usize::MAX, Relaxed);
                return a;
            }
            Next::Start => {
                starts += 1;
                if let Err(why) = start_worker(db) {
                    forget_worker(db);
                    abandon();
                    raise_start_failure(why);
                }
                if starts > MAX_STARTS {
                    forget_worker(db);
                    abandon();
                    raise_start_failure("it stopped before it took the call, more than once");
                }
            }
            Next::Wait => nap(100),
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

fn forget_worker(db: u32) {
    with_queue(|q| {
        for w in q.workers.iter_mut() {
            if w.database == db && w.pid == 0 {
                *w = NO_WORKER;
            }
        }
    });
}

/// Starts this database's worker and waits until the postmaster has started it.
fn start_worker(db: u32) -> Result<(), &'static str> {
    let handle = BackgroundWorkerBuilder::new("sno lease registry")
        .set_type("sno lease registry")
        .set_library("sno")
        .set_function("sno_lease_registry_main")
        .set_argument(Some(pg_sys::Datum::from(db)))
        .enable_spi_access()
        .set_start_time(pgrx::bgworkers::BgWorkerStartTime::RecoveryFinished)
        .set_restart_time(None)
        .set_notify_pid(my_pid())
        .load_dynamic()
        .map_err(|_| "no background worker slot is free (max_worker_processes)")?;
    match handle.wait_for_startup() {
        Ok(_) => Ok(()),
        Err(_) => Err("the postmaster could not start it"),
    }
}

fn raise_start_failure(why: &str) -> ! {
    crate::pg::errors::raise(crate::pg::errors::Problem::LeaseRegistryNotStarted {
        why,
        // SAFETY: plain read of a server global.
        max_worker_processes: unsafe { pg_sys::max_worker_processes },
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

/// Copies `s` into `buf` (cut at a character boundary), returning its length.
fn put(buf: &mut [u8], s: &str) -> u16 {
    let mut n = s.len().min(buf.len());
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    buf[..n].copy_from_slice(&s.as_bytes()[..n]);
    n as u16
}

/// A failure with these texts.
pub fn failure(
    code: PgSqlErrorCode,
    message: &str,
    detail: Option<&str>,
    hint: Option<&str>,
) -> Failure {
    let mut f = Failure {
        code: code as i32,
        message: [0; 1024],
        message_len: 0,
        detail: [0; 2048],
        detail_len: 0,
        hint: [0; 2048],
        hint_len: 0,
    };
    f.message_len = put(&mut f.message, message);
    f.detail_len = put(&mut f.detail, detail.unwrap_or(""));
    f.hint_len = put(&mut f.hint, hint.unwrap_or(""));
    f
}

/// Fills a name buffer.
pub fn name(s: &str) -> Name {
    let mut n = [0u8; 64];
    put(&mut n[..63], s);
    n
}

/// A name buffer's text.
pub fn name_str(n: &Name) -> String {
    let len = n.iter().position(|&b| b == 0).unwrap_or(n.len());
    String::from_utf8_lossy(&n[..len]).into_owned()
}

/// The worker's entry for this database, claimed at start: false if another worker serves it.
fn claim_entry(db: u32) -> bool {
    let (pid, latch, now) = (my_pid(), unsafe { pg_sys::MyLatch }, now_us());
    with_queue(|q| {
        if q.workers.iter().any(|w| w.database == db && w.pid != 0) {
            return false;
        }
        let w = match q.workers.iter_mut().position(|w| w.database == db) {
            Some(i) => &mut q.workers[i],
            None => match q.workers.iter_mut().position(|w| w.database == 0) {
                Some(i) => &mut q.workers[i],
                None => return false,
            },
        };
        *w = Worker {
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
        for r in q.requests.iter_mut() {
            if r.taker == pid && matches!(r.state, TAKEN | ABANDONED) {
                if r.state == TAKEN {
                    r.answer = Answer::Failed(f);
                    r.state = DONE;
                    if !r.owner_latch.is_null() {
                        pg_sys::SetLatch(r.owner_latch);
                    }
                } else {
                    r.state = FREE;
                }
            }
        }
    });
}

/// The registry's worker for one database (its OID is the argument).
#[pg_guard]
#[no_mangle]
pub extern "C-unwind" fn sno_lease_registry_main(arg: pg_sys::Datum) {
    BackgroundWorker::attach_signal_handlers(SignalWakeFlags::SIGHUP | SignalWakeFlags::SIGTERM);
    let db = arg.value() as u32;
    BackgroundWorker::connect_worker_to_spi_by_oid(Some(pg_sys::Oid::from(db)), None);
    // Its own transactions: read committed (each statement sees what committed before it, the
    // table lock's waits included), writable, flushed locally at commit and not waiting for a
    // synchronous standby (a promoted standby never grants from its old primary's partitions),
    // bounded waits for locks, nothing another role put on a search path.
    for (name, value) in [
        (c"default_transaction_isolation", c"read committed"),
        (c"default_transaction_read_only", c"off"),
        (c"synchronous_commit", c"local"),
        (c"lock_timeout", c"5s"),
        (c"statement_timeout", c"30s"),
        (c"idle_in_transaction_session_timeout", c"0"),
        (c"search_path", c"pg_catalog, pg_temp"),
        (c"session_replication_role", c"origin"),
    ] {
        set(name, value);
    }
    // SAFETY: registers an exit callback once for this process.
    unsafe { pg_sys::before_shmem_exit(Some(on_worker_exit), pg_sys::Datum::from(0)) };
    if !claim_entry(db) {
        return;
    }
    let mut idle_since = now_us();
    loop {
        if BackgroundWorker::sigterm_received() {
            break;
        }
        if BackgroundWorker::sighup_received() {
            // SAFETY: the standard reload of a process that received SIGHUP.
            unsafe { pg_sys::ProcessConfigFile(pg_sys::GucContext::PGC_SIGHUP) };
        }
        let pid = my_pid();
        let idle_for = Duration::from_micros((now_us() - idle_since).max(0) as u64);
        let taken = with_queue(|q| {
            let next = q
                .requests
                .iter()
                .enumerate()
                .filter(|(_, r)| r.state == QUEUED && r.database == db)
                .min_by_key(|(_, r)| r.seq)
                .map(|(i, _)| i);
            match next {
                Some(i) => {
                    let r = &mut q.requests[i];
                    r.state = TAKEN;
                    r.taker = pid;
                    Some((i, r.ask))
                }
                None => {
                    if idle_for >= IDLE_EXIT {
                        // Leaves under the lock: a caller queueing after this starts another.
                        for w in q.workers.iter_mut() {
                            if w.pid == pid {
                                *w = NO_WORKER;
                            }
                        }
                    }
                    None
                }
            }
        });
        let Some((i, a)) = taken else {
            if idle_for >= IDLE_EXIT {
                break;
            }
            BackgroundWorker::wait_latch(Some(Duration::from_millis(100)));
            continue;
        };
        let answer = super::lease_registry::decide(&a);
        with_queue(|q| {
            let r = &mut q.requests[i];
            match r.state {
                TAKEN => {
                    r.answer = answer;
                    r.state = DONE;
                    // SAFETY: the owner's latch lives as long as its process, which abandons
                    // its slot before it exits.
                    unsafe { pg_sys::SetLatch(r.owner_latch) };
                }
                _ => r.state = FREE,
            }
        });
        idle_since = now_us();
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

/// Runs `f` in a transaction of its own: committed if it returns, rolled back (its error
/// turned into a [`Failure`]) if it raises.
pub fn in_transaction(f: impl FnOnce() -> Answer + std::panic::UnwindSafe) -> Answer {
    // SAFETY: a background worker between transactions; SPI needs an outer snapshot, and every
    // registry statement takes a new one of its own (lease_registry's `run`).
    unsafe {
        pg_sys::SetCurrentStatementStartTimestamp();
        pg_sys::StartTransactionCommand();
        pg_sys::PushActiveSnapshot(pg_sys::GetTransactionSnapshot());
    }
    let answer = PgTryBuilder::new(move || {
        let a = f();
        // SAFETY: the transaction started above; a commit that fails is caught below.
        unsafe {
            pg_sys::PopActiveSnapshot();
            pg_sys::CommitTransactionCommand();
        }
        a
    })
    .catch_others(|e| {
        let f = match &e {
            pgrx::pg_sys::panic::CaughtError::PostgresError(r)
            | pgrx::pg_sys::panic::CaughtError::ErrorReport(r)
            | pgrx::pg_sys::panic::CaughtError::RustPanic { ereport: r, .. } => {
                failure(r.sql_error_code(), r.message(), r.detail(), r.hint())
            }
        };
        // SAFETY: rolls back whatever the failed decision did (its locks, its snapshots).
        unsafe { pg_sys::AbortCurrentTransaction() };
        Answer::Failed(f)
    })
    .execute();
    // SAFETY: statistics as a backend sends them between statements.
    unsafe { pg_sys::pgstat_report_stat(false) };
    answer
}
