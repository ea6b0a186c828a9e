//! The trigger that keeps sno's own tables out of logical replication on the receiving side
//! (the decisions: [`crate::generator::arrival`]; the triggers: `sql/sno_replication.sql`).

use crate::generator::arrival::{self, Arrival, Change, Internal};
use pgrx::prelude::*;

/// Set while sno writes a row of its own tables in this process (`OwnRow::writing`): the
/// trigger lets it through, in a replication worker too.
static OWN_ROW: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// A row sno writes itself, while the guard lives (cleared on drop, and at an error's unwind).
pub struct OwnRow(bool);

impl OwnRow {
    pub fn writing() -> OwnRow {
        OwnRow(OWN_ROW.swap(true, core::sync::atomic::Ordering::Relaxed))
    }
}

impl Drop for OwnRow {
    fn drop(&mut self) {
        OWN_ROW.store(self.0, core::sync::atomic::Ordering::Relaxed);
    }
}

/// Whether this process applies changes another server published (a logical replication
/// apply or table-synchronization worker, or a replication extension's), by its background
/// worker entry.
fn replicating() -> bool {
    // SAFETY: MyBgworkerEntry is this process's own entry, set at its start (NULL in a
    // backend); its names are NUL-terminated within their arrays.
    unsafe {
        let w = pg_sys::MyBgworkerEntry;
        if w.is_null() {
            return false;
        }
        let library = core::ffi::CStr::from_ptr((*w).bgw_library_name.as_ptr());
        let function = core::ffi::CStr::from_ptr((*w).bgw_function_name.as_ptr());
        arrival::applies_replication(
            library.to_str().unwrap_or(""),
            function.to_str().unwrap_or(""),
        )
    }
}

/// `sno_internal_arrival()`, the first `BEFORE` row trigger (`ENABLE ALWAYS`) of each of sno's
/// own tables: a row another server's change brings by logical replication is dropped (a grant
/// it names noted in this server's lineage first); every other change happens.
///
/// It acts only as such a trigger of a table in `sno_internal` (which no other role can create
/// tables in): attached elsewhere, it refuses.
#[pg_trigger]
fn sno_internal_arrival<'a>(
    trigger: &'a PgTrigger<'a>,
) -> Result<Option<PgHeapTuple<'a, AllocatedByPostgres>>, pgrx::heap_tuple::PgHeapTupleError> {
    // SAFETY: the trigger data of this call; its relation is open.
    let (table, event) = unsafe {
        let td = trigger.trigger_data();
        let rel = (*td.tg_relation).rd_rel;
        let schema = pg_sys::get_namespace_name((*rel).relnamespace);
        let ours = !schema.is_null() && core::ffi::CStr::from_ptr(schema) == c"sno_internal";
        let name = core::ffi::CStr::from_ptr((*rel).relname.data.as_ptr());
        let table = if ours {
            name.to_str().ok().and_then(Internal::named)
        } else {
            None
        };
        (table, td.tg_event)
    };
    let row_before = event & pg_sys::TRIGGER_EVENT_ROW != 0
        && event & pg_sys::TRIGGER_EVENT_TIMINGMASK == pg_sys::TRIGGER_EVENT_BEFORE;
    let change = match event & pg_sys::TRIGGER_EVENT_OPMASK {
        pg_sys::TRIGGER_EVENT_INSERT => Some(Change::Insert),
        pg_sys::TRIGGER_EVENT_UPDATE => Some(Change::Update),
        pg_sys::TRIGGER_EVENT_DELETE => Some(Change::Delete),
        _ => None,
    };
    let (Some(table), Some(change), true) = (table, change, row_before) else {
        pgrx::ereport!(
            PgLogLevel::ERROR,
            PgSqlErrorCode::ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED,
            "sno_internal_arrival() is a BEFORE row trigger of sno's own tables in schema sno_internal only"
        );
        unreachable!()
    };
    let replicated = replicating() && !OWN_ROW.load(core::sync::atomic::Ordering::Relaxed);
    match arrival::arrival(table, change, replicated) {
        Arrival::Apply => Ok(match change {
            Change::Delete => trigger.old(),
            _ => trigger.new(),
        }),
        Arrival::Drop => Ok(None),
        Arrival::DropNotingGrant => {
            let partition = trigger
                .new()
                .and_then(|row| row.get_by_name::<i32>("partition").ok().flatten())
                .and_then(|p| u16::try_from(p).ok());
            match (partition, crate::pg::shmem::shared()) {
                (Some(p), Some(s)) => crate::pg::issuer::durable::note_restored_grant(s, p),
                // Dropped unrecorded, its partition could be granted here once sno is
                // preloaded: the apply fails (and is retried) until it is.
                (Some(p), None) => {
                    crate::pg::errors::raise(crate::pg::errors::Problem::ArrivalNotPreloaded(p))
                }
                _ => {}
            }
            Ok(None)
        }
    }
}
