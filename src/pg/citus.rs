//! Citus: this server's node group, read from Citus's own catalog, for the partition the
//! lineage judges ([`crate::generator::citus`] holds the decisions).
//!
//! The group lives in a table of the database Citus is installed in (`pg_dist_local_group`),
//! so a backend reads it, once, the first time it needs the generator in such a database, and
//! publishes it in shared memory for the whole server ([`Shared::citus_node`]); the lineage
//! keeps it ([`crate::generator::lineage::State::citus_group`]) so that sessions in other
//! databases, the `sno lineage` worker and later starts go on with the group's partitions.
//!
//! Plain reads of two tables Citus grants to PUBLIC, no Citus function: they work whether or not
//! the Citus library is loaded in this backend, and cost one query per backend.
//!
//! One database decides: the node's group is read in the database that holds the node's Citus
//! metadata, `sno.citus_database` when it is set (sessions in every other database go on with
//! what it published and read nothing), else whichever database with Citus a session makes IDs
//! in, as long as all agree with what was published and with the group the lineage keeps. A
//! second database with Citus that disagrees (not activated, or another cluster's metadata)
//! changes nothing: `sno_generate` refuses there, with a HINT naming the setting. The
//! monitoring functions never read Citus: any role may call them, in any database.

use crate::generator::citus::Node;
use crate::pg::shmem::Shared;
use core::sync::atomic::Ordering::Relaxed;
use pgrx::prelude::*;

/// [`Shared::citus_node`] before any backend read Citus.
pub const UNREAD: u32 = u32::MAX;
/// [`Shared::citus_node`] of a server with Citus installed but not a node of a cluster.
pub const NOT_ACTIVATED: u32 = u32::MAX - 1;

/// Whether this backend has found Citus in its database and read its group. A backend belongs to
/// one database for its whole life, and a node's group changes only when it is added to a
/// cluster (rare, and then the new group is read by every new session). Not finding Citus is not
/// kept: `CREATE EXTENSION citus` may come later in this session.
static READ: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// [`loaded`], looked up once per process: 0 not yet, 1 no, 2 yes.
static LOADED: core::sync::atomic::AtomicU8 = core::sync::atomic::AtomicU8::new(0);

/// Whether the Citus library is loaded in this server (`shared_preload_libraries`): its
/// settings exist. That cannot change while the server runs, so it is looked up once per
/// process, and a server without Citus never looks further.
pub fn loaded() -> bool {
    match LOADED.load(Relaxed) {
        0 => {
            // SAFETY: a lookup of a setting by name; `true`: NULL when there is none.
            let yes = !unsafe { pg_sys::GetConfigOption(c"citus.version".as_ptr(), true, false) }
                .is_null();
            LOADED.store(if yes { 2 } else { 1 }, Relaxed);
            yes
        }
        v => v == 2,
    }
}

/// What Citus says of this server in the current database; `None` without the citus
/// extension here.
fn local_node() -> Option<Node> {
    // SAFETY: a catalog lookup by name; `true`: no error when missing.
    let oid = unsafe { pg_sys::get_extension_oid(c"citus".as_ptr(), true) };
    if oid == pg_sys::InvalidOid {
        return None;
    }
    // Group 0 is the coordinator only if the cluster has nodes: a worker reads 0 until the
    // coordinator activates it (citus_is_coordinator() decides the same way).
    let row = Spi::get_two::<i32, bool>(
        "SELECT (SELECT groupid FROM pg_catalog.pg_dist_local_group LIMIT 1), \
                EXISTS (SELECT FROM pg_catalog.pg_dist_node WHERE isactive)",
    );
    Some(match row {
        Ok((Some(g), _)) if g > 0 => Node::Group(g as u32),
        Ok((Some(0), Some(true))) => Node::Group(0),
        _ => Node::NotActivated,
    })
}

/// A database's Citus metadata disagrees with the node's group the server goes on with.
pub struct Disagreement {
    /// What this database's Citus metadata says.
    pub here: Node,
    /// The group the server goes on with (published by another database, or kept by the
    /// lineage).
    pub server: Node,
}

/// Reads Citus once per backend and publishes what it found. Whether the server-wide value
/// changed (the lineage must be judged again). Called by `sno_generate` only.
pub fn publish(s: &Shared) -> Result<bool, Disagreement> {
    // Cheapest first: a server without Citus stops at `loaded`. A standby makes no IDs, and
    // reading Citus's catalog there fails inside Citus (it asks for a transaction ID): its group
    // is read once it is promoted. A parallel worker takes the group its leader published (the
    // leader made IDs or read the view first), and runs no query through Citus's planner.
    // SAFETY: plain reads of a shared flag and of a process global.
    if READ.load(Relaxed)
        || !loaded()
        || unsafe { pg_sys::RecoveryInProgress() }
        || unsafe { pg_sys::ParallelWorkerNumber } >= 0
    {
        return Ok(false);
    }
    let named = crate::pg::gucs::citus_database();
    if let Some(db) = &named {
        if !this_database_is(db) {
            // Another database decides: go on with what it published.
            READ.store(true, Relaxed);
            return Ok(false);
        }
    }
    let Some(node) = local_node() else {
        return Ok(false);
    };
    if named.is_none() {
        let kept = crate::pg::shmem::lineage_snapshot(s).citus_group;
        let kept = (kept != crate::generator::lineage::NO_GROUP).then_some(kept);
        if let Err(server) = crate::generator::citus::agrees(node, published(s), kept) {
            return Err(Disagreement { here: node, server });
        }
    }
    let code = match node {
        Node::Group(g) => g,
        Node::NotActivated => NOT_ACTIVATED,
    };
    READ.store(true, Relaxed);
    Ok(s.citus_node.swap(code, Relaxed) != code)
}

/// Where `sno_generate` in this database would take the partition from, and whether this
/// database's Citus metadata disagrees with what the server goes on with: read as
/// [`publish`] reads it, but nothing is published (the monitoring views,
/// [`crate::generator::forecast`]). Reads Citus's catalog only where `publish` would: in the
/// database that decides, in a backend that has not read it yet, outside recovery and parallel
/// workers; elsewhere it goes by what was published, as `sno_generate` there does.
pub fn peek(s: &Shared) -> (crate::generator::citus::Source, Option<(Node, Node)>) {
    let explicit = crate::pg::gucs::partition();
    let kept = crate::pg::shmem::lineage_snapshot(s).citus_group;
    let kept = (kept != crate::generator::lineage::NO_GROUP).then_some(kept);
    let named = crate::pg::gucs::citus_database();
    // SAFETY: plain reads of a shared flag and of a process global.
    let may_read = explicit.is_none()
        && !READ.load(Relaxed)
        && loaded()
        && !unsafe { pg_sys::RecoveryInProgress() }
        && unsafe { pg_sys::ParallelWorkerNumber } < 0
        && named.as_deref().is_none_or(this_database_is);
    let here = if may_read { local_node() } else { None };
    crate::generator::forecast::source(explicit, here, published(s), kept, named.is_some())
}

/// A node as the messages name it.
pub fn describe(n: Node) -> String {
    match n {
        Node::Group(g) => format!("the node of Citus group {g}"),
        Node::NotActivated => "not a node of a Citus cluster".to_string(),
    }
}

/// Whether this backend's database is named `name`.
fn this_database_is(name: &core::ffi::CStr) -> bool {
    // SAFETY: a catalog lookup of this backend's own database; NULL if it is gone.
    let mine = unsafe { pg_sys::get_database_name(pg_sys::MyDatabaseId) };
    // SAFETY: a NUL-terminated string palloc'd above, or NULL.
    !mine.is_null() && unsafe { core::ffi::CStr::from_ptr(mine) } == name
}

/// This backend's database name, for messages.
pub fn this_database() -> String {
    // SAFETY: as in this_database_is.
    let mine = unsafe { pg_sys::get_database_name(pg_sys::MyDatabaseId) };
    if mine.is_null() {
        return String::new();
    }
    // SAFETY: a NUL-terminated string.
    unsafe { core::ffi::CStr::from_ptr(mine) }
        .to_string_lossy()
        .into_owned()
}

/// What was published, if anything.
pub fn published(s: &Shared) -> Option<Node> {
    match s.citus_node.load(Relaxed) {
        UNREAD => None,
        NOT_ACTIVATED => Some(Node::NotActivated),
        g => Some(Node::Group(g)),
    }
}
