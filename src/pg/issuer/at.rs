//! `sno_generate_at(meta, at)`: IDs for any time, from a reserved partition granted to the
//! session, so that they can never meet an ID of `sno_generate` or of another session.
//!
//! Fast path: the session's grant and the meta byte's [`GrantCursor`] give the sequence number;
//! no lock, no shared memory, no allocation but the result.
//!
//! Slow path (a session's first call, a used-up grant, a grant whose row was rolled back): the
//! lineage is judged as `sno_generate` judges it (the same refusals), the role's limit is
//! checked, the grants this database's table names are noted (a restored database brings them),
//! and the lineage's allocator grants the next reserved partition: state file, then WAL, flushed
//! and confirmed by synchronous standbys, before any ID uses it
//! ([`super::durable::grant_reserved`]). The grant's row goes into `sno_reserved_grants` in the
//! caller's transaction (so that `pg_dump` carries it with the rows holding its IDs); if that
//! transaction or subtransaction rolls back, the next call writes it again.

use super::durable::{grant_reserved, judge, raise_slow, GrantRequest};
use super::hot::publish_or_raise;
use super::{shared_or_raise, wal_timeline};
use crate::generator::reserved::GrantCursor;
use crate::id::layout::Sno;
use crate::id::time::pg_micros_to_units;
use crate::pg::errors::{self, Problem};
use crate::pg::fmgr::{arg_i32, arg_i64, finfo_v1, sno_datum};
use crate::pg::shmem;
use core::cell::UnsafeCell;
use pgrx::pg_sys;
use pgrx::prelude::*;

finfo_v1!(pg_finfo_sno_generate_at);

/// Whether the grant's row is in `sno_reserved_grants` for what this session writes now.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Row {
    /// Not written, or rolled back.
    Missing,
    /// Written in the current transaction, by this subtransaction.
    Written(pg_sys::SubTransactionId),
    /// Committed.
    Committed,
}

/// This session's grant.
struct At {
    /// The reserved partition granted to this session.
    partition: Option<u16>,
    /// One cursor per meta byte (allocated at the first grant).
    cursors: Vec<GrantCursor>,
    row: Row,
    callbacks: bool,
}

struct AtCell(UnsafeCell<At>);
// SAFETY: a PostgreSQL backend runs SQL functions on one thread (it is PARALLEL RESTRICTED,
// so no worker has one either).
unsafe impl Sync for AtCell {}

static AT: AtCell = AtCell(UnsafeCell::new(At {
    partition: None,
    cursors: Vec::new(),
    row: Row::Missing,
    callbacks: false,
}));

/// `sno_generate_at(meta int, "at" timestamptz) → sno`
#[pg_guard]
#[no_mangle]
pub unsafe extern "C-unwind" fn sno_generate_at(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    let meta = arg_i32(fcinfo, 0);
    if !(0..=255).contains(&meta) {
        errors::raise(Problem::Meta(meta));
    }
    let at = arg_i64(fcinfo, 1);
    let Ok(unit) = pg_micros_to_units(at) else {
        errors::raise(Problem::TimeOutOfRange(at));
    };
    // SAFETY: single-threaded backend (see AtCell).
    let a = &mut *AT.0.get();
    if let (Some(p), false) = (a.partition, a.row == Row::Missing) {
        if let Some(seq) = a.cursors[meta as usize].take(unit) {
            return sno_datum(Sno::new(unit, 0, meta as u8, p, seq));
        }
    }
    sno_datum(generate_at_slow(a, meta as u8, unit))
}

#[cold]
#[inline(never)]
fn generate_at_slow(a: &mut At, meta: u8, unit: u64) -> Sno {
    if !a.callbacks {
        // SAFETY: registered once per backend; the callbacks touch only this backend's cell.
        unsafe {
            pg_sys::RegisterXactCallback(Some(on_xact), core::ptr::null_mut());
            pg_sys::RegisterSubXactCallback(Some(on_subxact), core::ptr::null_mut());
        }
        a.callbacks = true;
    }
    // Before anything reads the catalog through SPI (which takes a transaction ID): on a
    // standby, the error sno_generate gives.
    // SAFETY: reads a shared flag.
    if unsafe { pg_sys::RecoveryInProgress() } {
        errors::raise(Problem::GenerateInRecovery);
    }
    // A grant or its row is written: not in a read-only transaction (a grant taken there could
    // never be recorded in the table, and would be lost to the role's limit), nor in parallel
    // mode (a function wrongly declared PARALLEL SAFE around it).
    // SAFETY: raise 25006 in a read-only transaction and in parallel mode, as PostgreSQL's own
    // commands do.
    unsafe {
        pg_sys::PreventCommandIfReadOnly(c"sno_generate_at()".as_ptr());
        pg_sys::PreventCommandIfParallelMode(c"sno_generate_at()".as_ptr());
    }
    let extension = Extension::find();
    loop {
        if let Some(p) = a.partition {
            if a.row == Row::Missing {
                extension.record(p);
                // SAFETY: plain read of a per-process global.
                a.row = Row::Written(unsafe { pg_sys::GetCurrentSubTransactionId() });
            }
            if let Some(seq) = a.cursors[meta as usize].take(unit) {
                return Sno::new(unit, 0, meta, p, seq);
            }
        }
        // No grant yet, or this one has no number left for `unit`: a new one, above every
        // earlier one (so IDs of this session in one unit still increase).
        let p = grant(&extension, a.partition);
        a.partition = Some(p);
        a.cursors.clear();
        a.cursors.resize(256, GrantCursor::NEW);
        a.row = Row::Missing;
    }
}

/// A new grant for this session, after the checks `sno_generate` makes: from this server's
/// allocator, or on a Citus worker from the coordinator's (recorded here too, the same way);
/// above the session's last grant `above`, if any.
fn grant(extension: &Extension, above: Option<u16>) -> u16 {
    let s = judged();
    match citus_role(s) {
        CitusRole::None => grant_here(s, extension, None, above),
        CitusRole::Coordinator(k) => grant_here(s, extension, Some(k), above),
        CitusRole::CoordinatorWithoutShare { explicit } => {
            errors::raise(Problem::CoordinatorWithoutShare { explicit })
        }
        CitusRole::Worker => {
            let p = from_coordinator(extension, above);
            grant_reserved(
                s,
                &GrantRequest {
                    known: &[],
                    share: None,
                    leases: false,
                    above: None,
                    given: Some(p),
                    role: extension.role_oid,
                    role_name: &extension.role,
                    limit: None,
                },
            )
        }
        CitusRole::Elsewhere => errors::raise(Problem::GenerateAtOnCitus),
    }
}

/// The shard table, once the lineage is judged as for `sno_generate` (its refusals raised).
pub(super) fn judged() -> &'static crate::pg::shmem::Shared {
    let s = shared_or_raise();
    // SAFETY: reads a shared flag.
    if unsafe { pg_sys::RecoveryInProgress() } {
        errors::raise(Problem::GenerateInRecovery);
    }
    publish_or_raise(s);
    let timeline = wal_timeline();
    shmem::locked(s, |g| judge(s, g, timeline, false)).unwrap_or_else(|e| raise_slow(s, e));
    s
}

/// A grant of this server's allocator (of a Citus coordinator's, from generation `share`'s
/// share), within the calling role's limit, after noting the grants this database's table names.
fn grant_here(
    s: &'static crate::pg::shmem::Shared,
    extension: &Extension,
    share: Option<u32>,
    above: Option<u16>,
) -> u16 {
    let known = extension.grants();
    grant_reserved(
        s,
        &GrantRequest {
            known: &known,
            share,
            leases: false,
            above,
            given: None,
            role: extension.role_oid,
            role_name: &extension.role,
            limit: Some(crate::pg::gucs::reserved_limit()),
        },
    )
}

/// Where a grant comes from on this server.
pub(super) enum CitusRole {
    /// No Citus: this server's allocator.
    None,
    /// A Citus coordinator, whose live partition is of this generation: its allocator, from
    /// the generation's share.
    Coordinator(u32),
    /// A Citus coordinator with an explicit partition (`explicit`) or on its group's reserved
    /// generation: no grant.
    CoordinatorWithoutShare { explicit: bool },
    /// A Citus worker: the coordinator grants.
    Worker,
    /// A Citus node, in a database without Citus's metadata: no grant.
    Elsewhere,
}

pub(super) fn citus_role(s: &crate::pg::shmem::Shared) -> CitusRole {
    use core::sync::atomic::Ordering::Relaxed;
    // SAFETY: a catalog lookup by name; `true`: no error when missing.
    let here = unsafe { pg_sys::get_extension_oid(c"citus".as_ptr(), true) } != pg_sys::InvalidOid;
    if !here {
        // With the Citus library loaded, a database without the citus extension cannot reach
        // the coordinator: no grant there, whatever this node's partition.
        return if crate::pg::citus::loaded() {
            CitusRole::Elsewhere
        } else {
            CitusRole::None
        };
    }
    match Spi::get_one::<bool>("SELECT pg_catalog.citus_is_coordinator()") {
        Ok(Some(true)) => {
            // An explicit partition has no generation: share 0.
            // Only a coordinator making IDs with its group's live partitions has a share: with
            // an explicit partition, or its group's reserved generation 15 (kept from before
            // 0.6.0), a promotion takes no new generation, so no share is its own.
            let k = crate::generator::citus::generation_of(s.partition.load(Relaxed) as u16);
            if s.citus_group.load(Relaxed) != 0 {
                CitusRole::CoordinatorWithoutShare { explicit: true }
            } else if k >= crate::generator::citus::LIVE_GENERATIONS {
                CitusRole::CoordinatorWithoutShare { explicit: false }
            } else {
                CitusRole::Coordinator(k)
            }
        }
        _ => CitusRole::Worker,
    }
}

/// A reserved partition the coordinator grants to this worker's session
/// (`sno_reserved_grant()` there, through Citus's own connection, committed there at once).
fn from_coordinator(extension: &Extension, above: Option<u16>) -> u16 {
    let command = match above {
        Some(a) => format!("SELECT {}.sno_reserved_grant({a})", extension.schema),
        None => format!("SELECT {}.sno_reserved_grant()", extension.schema),
    };
    let (ok, result) = Spi::get_two_with_args::<bool, String>(
        "SELECT c.success, c.result FROM pg_catalog.run_command_on_coordinator($1) c",
        &[command.into()],
    )
    .unwrap_or_else(|e| {
        error!("sno: cannot ask the Citus coordinator for a reserved partition: {e}")
    });
    let result = result.unwrap_or_default();
    match (ok, result.parse::<u16>()) {
        (Some(true), Ok(p)) if crate::generator::reserved::is_reserved(p) => p,
        // Citus hands the coordinator's error over as "ERROR:  message".
        _ => errors::raise(Problem::CoordinatorRefused {
            message: result.strip_prefix("ERROR:  ").unwrap_or(&result),
        }),
    }
}

/// `sno_reserved_grant() → int`: on a Citus coordinator, a reserved partition for a session on
/// a worker (its `sno_generate_at` asks through `run_command_on_coordinator`), within the
/// calling role's limit; its row in `sno_reserved_grants` names the role. Only for roles that may
/// execute `sno_generate_at`.
///
/// `above`: the worker session's last grant, which the new one must sort after (see
/// [`GrantRequest::above`]).
#[pg_extern(volatile, parallel_unsafe)]
fn sno_reserved_grant(above: default!(Option<i32>, "NULL")) -> i32 {
    let extension = Extension::find();
    let allowed = Spi::get_one::<bool>(&format!(
        "SELECT pg_catalog.has_function_privilege('{}.sno_generate_at(pg_catalog.int4, pg_catalog.timestamptz)'::pg_catalog.regprocedure, 'EXECUTE')",
        extension.schema.replace('\'', "''")
    ));
    if allowed != Ok(Some(true)) {
        errors::raise(Problem::ReservedGrantDenied);
    }
    let s = judged();
    let k = match citus_role(s) {
        CitusRole::Coordinator(k) => k,
        CitusRole::CoordinatorWithoutShare { explicit } => {
            errors::raise(Problem::CoordinatorWithoutShare { explicit })
        }
        _ => errors::raise(Problem::ReservedGrantNotCoordinator),
    };
    let above = above.and_then(|a| u16::try_from(a).ok());
    let p = grant_here(s, &extension, Some(k), above);
    extension.record(p);
    i32::from(p)
}

/// Where sno is installed in this database, and who calls.
pub(super) struct Extension {
    /// sno's schema, quoted.
    pub(super) schema: String,
    /// The grants table, `sno_internal.reserved_grants`.
    table: String,
    /// The extension's owner: the grant's row is written as it.
    pub(super) owner: pg_sys::Oid,
    /// The calling role's name and OID.
    pub(super) role: String,
    pub(super) role_oid: u32,
}

impl Extension {
    pub(super) fn find() -> Extension {
        let (owner, schema) = Spi::get_two::<pg_sys::Oid, String>(
            "SELECT e.extowner, n.nspname::pg_catalog.text FROM pg_catalog.pg_extension e \
             JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace \
             WHERE e.extname OPERATOR(pg_catalog.=) 'sno'",
        )
        .unwrap_or_else(|e| error!("sno: cannot find extension sno: {e}"));
        let (Some(owner), Some(schema)) = (owner, schema) else {
            error!("sno: extension sno is not installed in this database");
        };
        let schema = std::ffi::CString::new(schema).unwrap_or_default();
        // SAFETY: quote_identifier returns its argument or a palloc'd copy, NUL-terminated;
        // GetUserNameFromId a palloc'd name (error if the role is gone).
        unsafe {
            let quoted = pg_sys::quote_identifier(schema.as_ptr());
            let schema = core::ffi::CStr::from_ptr(quoted)
                .to_string_lossy()
                .into_owned();
            let table = "sno_internal.reserved_grants".to_string();
            let role_oid = pg_sys::GetUserId();
            let name = pg_sys::GetUserNameFromId(role_oid, false);
            let role_oid = role_oid.to_u32();
            let role = core::ffi::CStr::from_ptr(name)
                .to_string_lossy()
                .into_owned();
            Extension {
                schema,
                table,
                owner,
                role,
                role_oid,
            }
        }
    }

    /// Runs `f` as the extension's owner, in a restricted security context (no temporary
    /// objects, no SET ROLE): an error or an abort restores the caller's identity, as
    /// PostgreSQL does for SECURITY DEFINER functions.
    pub(super) fn as_owner<R>(&self, f: impl FnOnce() -> R) -> R {
        let (mut user, mut context) = (pg_sys::InvalidOid, 0);
        // SAFETY: saved and restored around `f`; (sub)transaction abort restores them too.
        unsafe {
            pg_sys::GetUserIdAndSecContext(&mut user, &mut context);
            pg_sys::SetUserIdAndSecContext(
                self.owner,
                context
                    | pg_sys::SECURITY_LOCAL_USERID_CHANGE as i32
                    | pg_sys::SECURITY_RESTRICTED_OPERATION as i32,
            );
        }
        let r = f();
        // SAFETY: restores what was saved above.
        unsafe { pg_sys::SetUserIdAndSecContext(user, context) };
        r
    }

    /// The OID of this database's `sno_reserved_grants`.
    fn table_oid(&self) -> pg_sys::Oid {
        Spi::get_one::<pg_sys::Oid>(&format!(
            "SELECT '{}'::pg_catalog.regclass::pg_catalog.oid",
            self.table.replace('\'', "''")
        ))
        .ok()
        .flatten()
        .unwrap_or(pg_sys::InvalidOid)
    }

    /// Every reserved partition this database's tables name: its sessions' grants, and its
    /// lease pool's partitions (both granted by a lineage allocator, whichever server's).
    pub(super) fn grants(&self) -> Vec<u16> {
        self.as_owner(|| {
            Spi::get_one::<Vec<i32>>(&format!(
                "SELECT pg_catalog.array_agg(g.partition) FROM (SELECT partition FROM {} \
                 UNION SELECT partition FROM sno_internal.lease_partitions) g",
                self.table
            ))
            .unwrap_or_else(|e| error!("sno: cannot read {}: {e}", self.table))
            .unwrap_or_default()
            .into_iter()
            .filter_map(|p| u16::try_from(p).ok())
            .collect()
        })
    }

    /// Writes the grant's row, in the caller's transaction.
    fn record(&self, partition: u16) {
        // sno's own row: written in any process, a logical replication worker's included (a
        // subscriber's trigger or default calling sno_generate_at while it applies).
        let _own = crate::pg::arrival::OwnRow::writing();
        self.as_owner(|| {
            Spi::run_with_args(
                &format!(
                    "INSERT INTO {} (partition, granted_at, grantee) \
                     VALUES ($1, pg_catalog.now(), $2::pg_catalog.name) ON CONFLICT DO NOTHING",
                    self.table
                ),
                &[i32::from(partition).into(), self.role.clone().into()],
            )
        })
        .unwrap_or_else(|e| error!("sno: cannot record the grant in {}: {e}", self.table));
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn on_xact(event: pg_sys::XactEvent::Type, _arg: *mut core::ffi::c_void) {
    let a = &mut *AT.0.get();
    if let Row::Written(_) = a.row {
        a.row = match event {
            pg_sys::XactEvent::XACT_EVENT_COMMIT
            | pg_sys::XactEvent::XACT_EVENT_PARALLEL_COMMIT => Row::Committed,
            // Rolled back: written again when needed.
            pg_sys::XactEvent::XACT_EVENT_ABORT | pg_sys::XactEvent::XACT_EVENT_PARALLEL_ABORT => {
                Row::Missing
            }
            // Prepared: its fate is decided later, by another session; writing the row again
            // would wait for it. The session takes a new grant at its next call instead.
            pg_sys::XactEvent::XACT_EVENT_PREPARE => {
                a.partition = None;
                Row::Missing
            }
            _ => a.row,
        };
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn on_subxact(
    event: pg_sys::SubXactEvent::Type,
    sub: pg_sys::SubTransactionId,
    parent: pg_sys::SubTransactionId,
    _arg: *mut core::ffi::c_void,
) {
    let a = &mut *AT.0.get();
    if a.row == Row::Written(sub) {
        a.row = match event {
            pg_sys::SubXactEvent::SUBXACT_EVENT_ABORT_SUB => Row::Missing,
            pg_sys::SubXactEvent::SUBXACT_EVENT_COMMIT_SUB => Row::Written(parent),
            _ => a.row,
        };
    }
}

/// The trigger on `sno_reserved_grants` (AFTER INSERT, each row): a grant a restored database
/// brings (`pg_dump`'s data for the table, loaded with COPY) is recorded in this server's
/// lineage at once, so that no database of this server is granted it again. A row
/// `sno_generate_at` writes names a partition the lineage already has: nothing is written.
///
/// It acts only as that table's AFTER INSERT row trigger: attached by another role to a table of
/// its own, it would let that role use up the reserved space (EXECUTE is revoked from PUBLIC
/// too, but a trigger's function is not checked for EXECUTE when it fires).
#[pg_trigger]
fn sno_reserved_grants_noted<'a>(
    trigger: &'a PgTrigger<'a>,
) -> Result<Option<PgHeapTuple<'a, AllocatedByPostgres>>, pgrx::heap_tuple::PgHeapTupleError> {
    let ours = Extension::find().table_oid();
    // SAFETY: the trigger data of this call.
    let (rel, event) = unsafe {
        let td = trigger.trigger_data();
        ((*td.tg_relation).rd_id, td.tg_event)
    };
    let fires_as_ours = rel == ours
        && event & pg_sys::TRIGGER_EVENT_OPMASK == pg_sys::TRIGGER_EVENT_INSERT
        && event & pg_sys::TRIGGER_EVENT_ROW != 0
        && event & pg_sys::TRIGGER_EVENT_TIMINGMASK == pg_sys::TRIGGER_EVENT_AFTER;
    if !fires_as_ours {
        pgrx::ereport!(
            PgLogLevel::ERROR,
            PgSqlErrorCode::ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED,
            "sno_reserved_grants_noted() is the AFTER INSERT trigger of sno's own sno_reserved_grants table only"
        );
    }
    if let Some(row) = trigger.new() {
        let partition = row.get_by_name::<i32>("partition").ok().flatten();
        match (
            partition.and_then(|p| u16::try_from(p).ok()),
            shmem::shared(),
        ) {
            (Some(p), Some(s)) => super::durable::note_restored_grant(s, p),
            // sno is not preloaded: nothing to record the grant in; the record left blocks
            // grants once it is, until the rows are read back.
            (Some(_), None) => super::durable::note_unrecorded(),
            _ => {}
        }
    }
    Ok(None)
}

/// `sno_reserved_relearn() → int`: superusers. Records every grant this database's
/// `sno_reserved_grants` names in the server's lineage (state file and WAL), as a restore's
/// trigger does: after the state file was lost (or not copied by pg_upgrade), run in every
/// database that has sno before `sno_generator_initialize(take_over => true)` lets the server
/// grant again. Returns how many partitions it names (its lease pool's included, since 0.9.0).
#[pg_extern(volatile, parallel_unsafe)]
fn sno_reserved_relearn() -> i32 {
    // SAFETY: plain read of the current user's attribute.
    if !unsafe { pg_sys::superuser() } {
        errors::raise(Problem::RelearnNotSuperuser);
    }
    // SAFETY: reads a shared flag.
    if unsafe { pg_sys::RecoveryInProgress() } {
        errors::raise(Problem::GenerateInRecovery);
    }
    let s = shared_or_raise();
    let known = Extension::find().grants();
    for &p in &known {
        super::durable::note_restored_grant(s, p);
    }
    known.len() as i32
}
