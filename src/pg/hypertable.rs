//! TimescaleDB hypertables cut by the time of a `sno` key: which column of a relation, if any,
//! is the key whose `sno_time` is the hypertable's dimension (`create_hypertable(...,
//! by_range('id', ..., partition_func => 'sno_time'))`). The planner hook
//! ([`crate::pg::planner`]) adds, next to `id op X` on such a column, the comparison of times it
//! implies, which TimescaleDB's chunk exclusion at executor startup can use.
//!
//! Asked only in a backend where one of TimescaleDB's settings exists (its versioned library is
//! loaded once a session used a database with the extension): elsewhere nothing is looked up.
//! That setting is only a hint: a line in postgresql.conf, or a placeholder a role was let set
//! on its database, makes it exist without TimescaleDB. The answer comes from TimescaleDB's
//! catalog tables, and only when they are the extension `timescaledb`'s own in this database
//! ([`timescaledb_catalog`]): a schema `_timescaledb_catalog` another role made (with views
//! that run its code as whoever plans the query) is never read. Looked up once per relation
//! and backend, and forgotten at every relcache invalidation (TimescaleDB signals changes to
//! hypertables as one, on `_timescaledb_cache.cache_inval_hypertable`; creating or dropping
//! the extension's tables sends one too).

use core::cell::{Cell, RefCell};
use pgrx::pg_sys::{self, Oid};
use pgrx::spi::Spi;
use std::collections::HashMap;

thread_local! {
    /// relation → the attribute number of its sno_time dimension's column (None: not such a
    /// hypertable). A backend is single-threaded: no lock.
    static KNOWN: RefCell<HashMap<Oid, Option<i16>>> = RefCell::new(HashMap::new());
    /// Bumped at each relcache invalidation: an answer looked up across one is not kept.
    static EPOCH: Cell<u64> = const { Cell::new(0) };
    static REGISTERED: Cell<bool> = const { Cell::new(false) };
}

/// Whether TimescaleDB's versioned library may be loaded in this backend (one of its settings
/// exists; its preloaded loader defines none of them). A cheap hint, nothing more: the setting
/// can exist without TimescaleDB (above), so what is read is checked by [`timescaledb_catalog`].
pub fn timescaledb_loaded() -> bool {
    // SAFETY: GetConfigOption with missing_ok only reads the settings table.
    unsafe {
        !pg_sys::GetConfigOption(c"timescaledb.enable_chunk_append".as_ptr(), true, false).is_null()
    }
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn forget(_arg: pg_sys::Datum, _relid: Oid) {
    EPOCH.with(|e| e.set(e.get().wrapping_add(1)));
    KNOWN.with(|k| {
        if let Ok(mut k) = k.try_borrow_mut() {
            k.clear();
        }
    });
}

/// The attribute number of the column of `relid` whose `sno_time` (the function of schema
/// `sno_schema`) is the hypertable's dimension; None for any other relation.
pub fn sno_time_dimension(relid: Oid, sno_schema: &str) -> Option<i16> {
    if let Some(known) = KNOWN.with(|k| k.borrow().get(&relid).copied()) {
        return known;
    }
    if !REGISTERED.with(|r| r.replace(true)) {
        // SAFETY: registers a callback for the life of the backend (once).
        unsafe { pg_sys::CacheRegisterRelcacheCallback(Some(forget), pg_sys::Datum::from(0)) };
    }
    let epoch = EPOCH.with(|e| e.get());
    let found = look_up(relid, sno_schema);
    if EPOCH.with(|e| e.get()) == epoch {
        KNOWN.with(|k| k.borrow_mut().insert(relid, found));
    }
    found
}

/// The tables `_timescaledb_catalog.hypertable` and `.dimension` when they are the extension
/// `timescaledb`'s own: the extension exists in this database, and the schema and both tables
/// are its members (pg_depend, deptype 'e') and the tables plain tables. None otherwise, as
/// where another role made a schema of that name: its views or functions would run its code
/// as the role planning the query, a superuser's too. A schema name is unique in a database:
/// while the extension's exists no other can be made, and one made before makes CREATE
/// EXTENSION fail (its script creates the schema without IF NOT EXISTS). The objects its script
/// made belong to a superuser (the bootstrap superuser when a role without that right created
/// the trusted extension), so no other role can rename, replace or drop them, nor add a rule,
/// policy or trigger, between this check and the query that reads them by name. Checked with
/// each lookup, so as seldom ([`KNOWN`]): a few index scans of pg_extension and pg_depend,
/// less than the query it guards, which a database without TimescaleDB no longer runs at all.
fn timescaledb_catalog() -> Option<[Oid; 2]> {
    // SAFETY: catalog lookups by name (missing_ok) and by OID; pg_depend index scans.
    unsafe {
        let ext = pg_sys::get_extension_oid(c"timescaledb".as_ptr(), true);
        if ext == pg_sys::InvalidOid {
            return None;
        }
        let member = |class: Oid, oid: Oid| {
            oid != pg_sys::InvalidOid && pg_sys::getExtensionOfObject(class, oid) == ext
        };
        let nsp = pg_sys::get_namespace_oid(c"_timescaledb_catalog".as_ptr(), true);
        if !member(pg_sys::NamespaceRelationId, nsp) {
            return None;
        }
        let mut tables = [pg_sys::InvalidOid; 2];
        for (k, name) in [c"hypertable", c"dimension"].into_iter().enumerate() {
            let t = pg_sys::get_relname_relid(name.as_ptr(), nsp);
            if !member(pg_sys::RelationRelationId, t)
                || pg_sys::get_rel_relkind(t) != pg_sys::RELKIND_RELATION as core::ffi::c_char
            {
                return None;
            }
            tables[k] = t;
        }
        Some(tables)
    }
}

fn look_up(relid: Oid, sno_schema: &str) -> Option<i16> {
    let tables = timescaledb_catalog()?;
    // A role that may not read TimescaleDB's catalog gets no added clause (and no error).
    for t in tables {
        // SAFETY: the ACL check of the current user on a table that exists.
        let readable = unsafe {
            pg_sys::pg_class_aclcheck(t, pg_sys::GetUserId(), pg_sys::ACL_SELECT as _)
                == pg_sys::AclResult::ACLCHECK_OK
        };
        if !readable {
            return None;
        }
    }
    // The tables checked above, by name (a schema-qualified name finds no other); every name
    // and operator qualified: the session's search_path changes nothing here.
    Spi::connect(|c| {
        c.select(
            "SELECT a.attnum FROM pg_catalog.pg_class c
             JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
             JOIN _timescaledb_catalog.hypertable h
               ON h.schema_name OPERATOR(pg_catalog.=) n.nspname
              AND h.table_name OPERATOR(pg_catalog.=) c.relname
             JOIN _timescaledb_catalog.dimension d ON d.hypertable_id OPERATOR(pg_catalog.=) h.id
             JOIN pg_catalog.pg_attribute a
               ON a.attrelid OPERATOR(pg_catalog.=) c.oid AND a.attname OPERATOR(pg_catalog.=) d.column_name
             WHERE c.oid OPERATOR(pg_catalog.=) $1
               AND d.partitioning_func OPERATOR(pg_catalog.=) 'sno_time'
               AND d.partitioning_func_schema OPERATOR(pg_catalog.=) $2::pg_catalog.name
             LIMIT 1",
            Some(1),
            &[relid.into(), sno_schema.into()],
        )?
        .first()
        .get_one::<i16>()
    })
    .ok()
    .flatten()
}
