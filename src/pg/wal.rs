//! The `sno` custom WAL resource manager: the generator's lineage state travels in WAL, so
//! every standby, PITR restore and rewound server knows, for each partition its primary used,
//! a bound on the IDs in the data it holds.
//!
//! A primary writes one record (about 40 bytes) each time it writes its state file: before it
//! hands out IDs past its durable horizon (about once a second while IDs are made), and when
//! its lineage state changes. The record precedes in WAL every row holding those IDs, so a
//! server that replayed a row also replayed the bound that covers it. Redo merges the record
//! into the replaying server's lineage state and writes its state file.
//!
//! A custom resource manager needs `shared_preload_libraries = 'sno'` on every server that
//! replays WAL (standbys, restores, and the primary's own crash recovery): without it,
//! PostgreSQL stops replay at the first sno record, with its own error and a HINT to add the
//! library. That is deliberate: a standby that skipped these records could not tell, when
//! promoted, which IDs its primary already made.
//!
//! ID 213 is not taken in PostgreSQL's list of custom resource managers (wiki page
//! "CustomWALResourceManagers"); it must be reserved there before a release.

use crate::generator::wal_record;
use crate::pg::errors::{self, Problem};
use crate::pg::shmem;
use core::ffi::{c_char, CStr};
use pgrx::pg_sys;
use pgrx::prelude::*;

/// The resource manager ID (custom IDs are 128-255; 128 is for experiments).
pub const RM_ID: u8 = 213;
/// A lineage bound. The low four bits of `xl_info` belong to PostgreSQL.
const XLOG_SNO_LINEAGE: u8 = 0x10;
/// A reserved partition granted by the lineage's allocator (since 0.6.0: a standby running an
/// older sno stops at it, so standbys are updated first, as for any new WAL record).
const XLOG_SNO_GRANT: u8 = 0x20;
/// A partition refused because another member of a replicating group came first with it
/// (since 0.9.0; standbys are updated first).
const XLOG_SNO_MEMBER: u8 = 0x30;
/// The grants a restore loaded while sno was not preloaded were read back
/// (`sno_generator.unrecorded` removed; since 0.9.0): standbys remove their copy of the record.
const XLOG_SNO_UNRECORDED_READ_BACK: u8 = 0x40;
/// A refusal of the kind [`XLOG_SNO_MEMBER`] records was lifted (the partition changed and was
/// checked with every member; since 0.9.0).
const XLOG_SNO_MEMBER_LIFTED: u8 = 0x50;

/// Registers the resource manager. Called from `_PG_init` while the postmaster preloads
/// libraries.
/// What redo does with the `sno` records: the generator's (`crate::pg::issuer::replay`,
/// `replay_grant`), given by `_PG_init` so that this file, below the generator, does not
/// import it.
pub struct Redo {
    pub lineage: fn(&'static crate::pg::shmem::Shared, &crate::generator::wal_record::Record),
    pub grant: fn(&'static crate::pg::shmem::Shared, u16, u32),
    pub member: fn(&'static crate::pg::shmem::Shared, crate::generator::member::Conflict),
    pub unrecorded_read_back: fn(&'static crate::pg::shmem::Shared),
    pub member_lifted: fn(&'static crate::pg::shmem::Shared),
}

static REDO: std::sync::OnceLock<Redo> = std::sync::OnceLock::new();

/// The redo callbacks `_PG_init` gave ([`init_redo`]).
fn callbacks() -> &'static Redo {
    REDO.get().expect("sno: redo callbacks set at start")
}

/// Registers the resource manager, whose redo calls `redo`.
pub fn init_redo(redo: Redo) {
    let _ = REDO.set(redo);
    init();
}

fn init() {
    let mut rmgr = pg_sys::RmgrData {
        rm_name: c"sno".as_ptr(),
        rm_redo: Some(redo),
        rm_desc: Some(desc),
        rm_identify: Some(identify),
        rm_startup: None,
        rm_cleanup: None,
        rm_mask: None,
        rm_decode: None,
    };
    // SAFETY: called once, during shared_preload_libraries; PostgreSQL copies the struct, and
    // the name is a static string.
    unsafe { pg_sys::RegisterCustomRmgr(RM_ID, &mut rmgr) }
}

/// Writes a lineage record for the state in `s` on WAL timeline `timeline`, and returns its
/// end. Call holding the writer lock, after the state file is written; [`flush`] it before the
/// cursor serves anything it covers. Before any ID it covers leaves the server,
/// [`make_durable`] must also have run for it in the backend handing the ID out: the rows holding IDs come
/// after the record in WAL, but an ID a client reads without writing anything (`SELECT
/// sno_generate()`) must not outlive a failover either.
///
/// `unimportant`: the record is marked `XLOG_MARK_UNIMPORTANT`, as PostgreSQL marks its
/// standby snapshots: it is replayed and replicated like any other, but it is not activity
/// that makes a checkpoint worth taking or `archive_timeout` switch segments (the idle lease,
/// written once when IDs stop being made).
pub fn log_lineage(st: &crate::generator::lineage::State, timeline: u32, unimportant: bool) -> u64 {
    let rec = wal_record::encode(st, timeline);
    insert(XLOG_SNO_LINEAGE, &rec, unimportant)
}

/// Writes one `sno` record of type `info` holding `data` (marked unimportant if asked), and
/// returns its end.
fn insert(info: u8, data: &[u8], unimportant: bool) -> u64 {
    // SAFETY: the data outlives XLogInsert, which copies it.
    unsafe {
        pg_sys::XLogBeginInsert();
        if unimportant {
            pg_sys::XLogSetRecordFlags(pg_sys::XLOG_MARK_UNIMPORTANT as u8);
        }
        pg_sys::XLogRegisterData(data.as_ptr() as *mut _, data.len() as _);
        pg_sys::XLogInsert(RM_ID, info)
    }
}

/// Writes a grant record: this incarnation granted reserved partition `partition`. Call
/// holding the writer lock, after the state file recording the grant is written; the granting
/// backend then makes it durable ([`make_durable`]) before any ID uses the partition.
pub fn log_grant(incarnation: u64, partition: u16, role: u32) -> u64 {
    let rec = wal_record::encode_grant(&wal_record::GrantRecord {
        incarnation,
        partition,
        role,
    });
    insert(XLOG_SNO_GRANT, &rec, false)
}

/// Writes a member record: this server refuses partition `c.partition` (a member of its
/// replicating group came first with it), so that a promoted standby refuses it too. Returns
/// its end.
pub fn log_member(c: &crate::generator::member::Conflict) -> u64 {
    let rec = crate::generator::member::encode_record(c);
    insert(XLOG_SNO_MEMBER, &rec, false)
}

/// Writes the record that a member refusal was lifted. Returns its end.
pub fn log_member_lifted() -> u64 {
    let marker = [1u8];
    insert(XLOG_SNO_MEMBER_LIFTED, &marker, false)
}

/// Writes the record that the grants a restore loaded were read back (no data). Returns its end.
pub fn log_unrecorded_read_back() -> u64 {
    let marker = [1u8];
    insert(XLOG_SNO_UNRECORDED_READ_BACK, &marker, false)
}

/// Flushes WAL up to `lsn` (the end of a lineage record written by [`log_lineage`]). No waiting
/// for standbys: the writer of the record may be the background worker, which must stay free to
/// exit at shutdown.
pub fn flush(lsn: u64) {
    // SAFETY: plain call outside any critical section.
    unsafe { pg_sys::XLogFlush(lsn) }
}

/// Flushes WAL up to `lsn` (the end of a lineage record) and waits for synchronous standbys to
/// confirm it, as a commit does: what `nextval()` gets by assigning a transaction ID. Called
/// outside the shard table's lock, once per backend and record (about once a second: each
/// record starts a new epoch, which sends every backend through the slow path once), by
/// parallel workers too (a read-only query's leader commits nothing, so nothing else would
/// wait for the IDs its workers make).
///
/// The wait ends like a commit's (a query cancel, `statement_timeout`, termination), but where
/// a commit then goes on (its transaction is committed locally), an ID must not: the bound it
/// needs is not confirmed, and a standby promoted now could make it again. So a cancelled wait
/// raises [`Problem::SyncNotConfirmed`] (SQLSTATE 57014, as for any cancel), and
/// PostgreSQL's WARNING about a transaction "already committed locally", which is not what
/// happened here, goes to the server log only; a termination (or the postmaster's death) ends
/// the session at once, as PostgreSQL does after a commit.
///
/// Returns whether `lsn` stays covered for this session: true when the session waits for
/// synchronous standbys (its `synchronous_commit` asks for it and `synchronous_standby_names`
/// is set) and they confirmed; false when it did not wait, so that the next ID asks again (the
/// session may turn `synchronous_commit` on, or the standbys be named, in the meantime: the
/// call is then cheap, a flush already done and PostgreSQL's own fast exit).
pub fn make_durable(lsn: u64) -> bool {
    // SAFETY: plain calls and reads of process globals outside any critical section.
    unsafe {
        pg_sys::XLogFlush(lsn);
        let expected = sync_expected();
        let guard = WaitGuard::start();
        // As a commit calls it, interrupts held (PostgreSQL 16+ asserts it): the wait looks at
        // the cancel and termination flags itself, and returns after a cancel or termination
        // with a WARNING, which the hook below sees. An error inside it resets the holdoff
        // count itself (errfinish) and the guard the rest.
        pg_sys::InterruptHoldoffCount += 1;
        pg_sys::SyncRepWaitForLSN(lsn, false);
        pg_sys::InterruptHoldoffCount -= 1;
        let cancelled = guard.finish();
        if pg_sys::ProcDiePending != 0 {
            // Terminated, or the postmaster died: end the session now (FATAL), not with an
            // ERROR nobody receives (the wait already stopped output to the client).
            pg_sys::InterruptPending = 1;
            pgrx::check_for_interrupts!();
        }
        if cancelled || pg_sys::ProcDiePending != 0 {
            errors::raise(Problem::SyncNotConfirmed { lsn });
        }
        expected
    }
}

/// Whether this session waits for synchronous standbys, as its commits do: its
/// `synchronous_commit` asks for it and its `synchronous_standby_names` is set.
#[inline]
pub fn sync_expected() -> bool {
    // SAFETY: plain reads of process globals (the GUC string is NUL-terminated or null).
    unsafe {
        let names = pg_sys::SyncRepStandbyNames;
        pg_sys::max_wal_senders > 0
            && pg_sys::synchronous_commit
                > pg_sys::SyncCommitLevel::SYNCHRONOUS_COMMIT_LOCAL_FLUSH as i32
            && !names.is_null()
            && *names != 0
    }
}

/// The hook's state and `log_min_messages` during the wait, restored however it ends.
struct WaitGuard {
    level: i32,
}

impl WaitGuard {
    /// The WARNING of a cancelled wait reaches the hook only if it is logged: during the wait
    /// the server log takes warnings whatever log_min_messages says (a cancelled wait is worth
    /// a line there). LOG ranks above WARNING for the server log.
    unsafe fn start() -> WaitGuard {
        let level = pg_sys::log_min_messages;
        if level == pg_sys::LOG as i32 || level > pg_sys::WARNING as i32 {
            pg_sys::log_min_messages = pg_sys::WARNING as i32;
        }
        SYNC_WAIT.with(|w| w.set(Wait::Waiting));
        WaitGuard { level }
    }

    /// Whether the wait was cancelled.
    fn finish(self) -> bool {
        SYNC_WAIT.with(|w| w.get()) == Wait::Cancelled
    }
}

impl Drop for WaitGuard {
    fn drop(&mut self) {
        SYNC_WAIT.with(|w| w.set(Wait::Idle));
        // SAFETY: plain write of a process global, restoring its value.
        unsafe { pg_sys::log_min_messages = self.level };
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Wait {
    Idle,
    Waiting,
    Cancelled,
}

std::thread_local! {
    /// Whether this process is in [`make_durable`]'s wait, and whether the wait was cancelled.
    static SYNC_WAIT: core::cell::Cell<Wait> = const { core::cell::Cell::new(Wait::Idle) };
}

static mut PREV_EMIT_LOG_HOOK: pg_sys::emit_log_hook_type = None;

/// Installs the hook that tells a cancelled wait in [`make_durable`]: `SyncRepWaitForLSN`
/// reports nothing but the WARNING it gives when a cancel or termination ends its wait. Called
/// from `_PG_init`.
pub fn init_hooks() {
    // SAFETY: _PG_init, before any query; the previous hook is chained.
    unsafe {
        PREV_EMIT_LOG_HOOK = pg_sys::emit_log_hook;
        pg_sys::emit_log_hook = Some(on_emit_log);
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn on_emit_log(edata: *mut pg_sys::ErrorData) {
    if (*edata).elevel == pg_sys::WARNING as i32 && SYNC_WAIT.with(|w| w.get()) == Wait::Waiting {
        SYNC_WAIT.with(|w| w.set(Wait::Cancelled));
        // The server log keeps it; the client gets sno's ERROR instead.
        (*edata).output_to_client = false;
    }
    if let Some(prev) = PREV_EMIT_LOG_HOOK {
        prev(edata);
    }
}

/// The main data of the record being replayed; empty when it has none (a NULL `main_data`,
/// which `from_raw_parts` must never see), so that the decoder rejects it.
unsafe fn record_data<'a>(record: *mut pg_sys::XLogReaderState) -> &'a [u8] {
    let decoded = (*record).record;
    if decoded.is_null() || (*decoded).main_data.is_null() || (*decoded).main_data_len == 0 {
        return &[];
    }
    core::slice::from_raw_parts(
        (*decoded).main_data as *const u8,
        (*decoded).main_data_len as usize,
    )
}

#[pg_guard]
unsafe extern "C-unwind" fn redo(record: *mut pg_sys::XLogReaderState) {
    let Some(s) = shmem::shared() else {
        // Registered only together with the shared memory, so this cannot happen.
        errors::raise(Problem::NoSharedMemory);
    };
    let data = record_data(record);
    match record_info(record) {
        XLOG_SNO_MEMBER_LIFTED => (callbacks().member_lifted)(s),
        XLOG_SNO_UNRECORDED_READ_BACK => (callbacks().unrecorded_read_back)(s),
        XLOG_SNO_MEMBER => match crate::generator::member::decode_record(data) {
            Some(c) => (callbacks().member)(s, c),
            None => errors::raise(Problem::BadWalRecord),
        },
        XLOG_SNO_GRANT => match wal_record::decode_grant(data) {
            Some(g) => (callbacks().grant)(s, g.partition, g.role),
            None => errors::raise(Problem::BadWalRecord),
        },
        _ => match wal_record::decode(data) {
            Ok(rec) => (callbacks().lineage)(s, &rec),
            Err(_) => errors::raise(Problem::BadWalRecord),
        },
    }
}

/// The record's type (the high four bits of `xl_info`).
unsafe fn record_info(record: *mut pg_sys::XLogReaderState) -> u8 {
    let decoded = (*record).record;
    if decoded.is_null() {
        return 0;
    }
    (*decoded).header.xl_info & !0x0f
}

#[pg_guard]
unsafe extern "C-unwind" fn desc(buf: pg_sys::StringInfo, record: *mut pg_sys::XLogReaderState) {
    let grant = (record_info(record) == XLOG_SNO_GRANT).then(|| {
        match wal_record::decode_grant(record_data(record)) {
            Some(g) => format!(
                "incarnation {} granted reserved partition {} to role {}",
                g.incarnation, g.partition, g.role
            ),
            None => "invalid grant".to_string(),
        }
    });
    let member = (record_info(record) == XLOG_SNO_MEMBER).then(|| {
        match crate::generator::member::decode_record(record_data(record)) {
            Some(c) => format!(
                "partition {} refused: the member with system identifier {} came first",
                c.partition, c.peer.id
            ),
            None => "invalid member record".to_string(),
        }
    });
    let read_back = (record_info(record) == XLOG_SNO_UNRECORDED_READ_BACK)
        .then(|| "the grants a restore loaded were read back".to_string())
        .or_else(|| {
            (record_info(record) == XLOG_SNO_MEMBER_LIFTED)
                .then(|| "the refusal of a member's partition was lifted".to_string())
        });
    let text = if let Some(t) = grant.or(member).or(read_back) {
        t
    } else {
        match wal_record::decode(record_data(record)) {
            Ok(r) => format!(
                "incarnation {} timeline {} partitions {:?} horizon {} safe {} drifts {}",
                r.incarnation,
                r.timeline,
                r.partitions,
                r.bound.horizon,
                r.bound.safe,
                r.bound.drifts
            ),
            Err(e) => format!("invalid ({e})"),
        }
    };
    let c = std::ffi::CString::new(text).unwrap_or_default();
    pg_sys::appendStringInfoString(buf, c.as_ptr());
}

#[pg_guard]
unsafe extern "C-unwind" fn identify(info: u8) -> *const c_char {
    const LINEAGE: &CStr = c"LINEAGE";
    const GRANT: &CStr = c"GRANT";
    const MEMBER: &CStr = c"MEMBER";
    const READ_BACK: &CStr = c"UNRECORDED_READ_BACK";
    const LIFTED: &CStr = c"MEMBER_LIFTED";
    match info & !0x0f {
        XLOG_SNO_LINEAGE => LINEAGE.as_ptr(),
        XLOG_SNO_GRANT => GRANT.as_ptr(),
        XLOG_SNO_MEMBER => MEMBER.as_ptr(),
        XLOG_SNO_UNRECORDED_READ_BACK => READ_BACK.as_ptr(),
        XLOG_SNO_MEMBER_LIFTED => LIFTED.as_ptr(),
        _ => core::ptr::null(),
    }
}
