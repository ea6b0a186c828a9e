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
//! monitoring functions read the group as `sno_generate` would ([`peek`]) but publish nothing:
//! any role may call them, in any database.

use crate::generator::citus::Node;
use crate::pg::shmem::{Shared, CITUS_UNREAD};
use core::sync::atomic::Ordering::Relaxed;
use pgrx::prelude::*;

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

/// Why `sno_generate` may not take the group [`publish`] read.
pub enum Refused {
    /// This database's Citus metadata disagrees with the group the server goes on with.
    Disagreement(Disagreement),
    /// In parallel mode, in a database with Citus, on a server where nothing decided the group
    /// yet: Citus's catalog cannot be read ([`parallel_unread`]).
    ParallelUnread,
}

/// Whether a call in parallel mode would have to read the node's group and cannot: the Citus
/// library loaded, no explicit partition, no group published or kept in the lineage, and this
/// database the one whose Citus metadata decides (it has the citus extension, and
/// `sno.citus_database` names it or nothing). A serial call would read the group there (or be
/// refused: not a node yet, a disagreeing database), so this one must not go on with a derived
/// partition.
fn parallel_unread(s: &'static Shared, kept: Option<u32>) -> bool {
    if crate::pg::shmem::partition().is_some() || published(s).is_some() || kept.is_some() {
        return false;
    }
    if let Some(db) = crate::pg::gucs::citus_database() {
        if !this_database_is(&db) {
            return false;
        }
    }
    // SAFETY: a catalog lookup by name (syscache); `true`: no error when missing.
    unsafe { pg_sys::get_extension_oid(c"citus".as_ptr(), true) != pg_sys::InvalidOid }
}

/// The Citus group the lineage keeps, if any.
fn kept(s: &'static Shared) -> Option<u32> {
    let kept = crate::pg::shmem::read(s, |g| g.lineage.citus_group);
    (kept != crate::generator::lineage::NO_GROUP).then_some(kept)
}

/// Reads Citus once per backend and publishes what it found. Whether the server-wide value
/// changed (the lineage must be judged again). Called by `sno_generate` only.
pub fn publish(s: &'static Shared) -> Result<bool, Refused> {
    // Cheapest first: a server without Citus stops at `loaded`. A standby makes no IDs, and
    // reading Citus's catalog there fails inside Citus (it asks for a transaction ID): its group
    // is read once it is promoted. In parallel mode (a parallel worker, or its leader while the
    // workers run) no query goes through Citus's planner (it would ask for a transaction ID,
    // which parallel mode forbids): the group published or kept is taken, and with neither where
    // a serial call would read it, the call is refused.
    // SAFETY: plain reads of a shared flag and of a process global.
    if READ.load(Relaxed) || !loaded() || unsafe { pg_sys::RecoveryInProgress() } {
        return Ok(false);
    }
    // SAFETY: plain read of a process global.
    if unsafe { pg_sys::IsInParallelMode() } {
        return if parallel_unread(s, kept(s)) {
            Err(Refused::ParallelUnread)
        } else {
            Ok(false)
        };
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
        if let Err(server) = crate::generator::citus::agrees(node, published(s), kept(s)) {
            return Err(Refused::Disagreement(Disagreement { here: node, server }));
        }
    }
    let code = match node {
        Node::Group(g) => g,
        Node::NotActivated => NOT_ACTIVATED,
    };
    READ.store(true, Relaxed);
    Ok(s.citus_node.swap(code, Relaxed) != code)
}

/// A group this backend's [`peek`] read (a node's group never changes once it has one), or
/// [`CITUS_UNREAD`].
static PEEKED: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(CITUS_UNREAD);

/// What the monitoring views tell of the partition's source in this database.
pub struct Peek {
    /// Where `sno_generate` here would take the partition from.
    pub source: crate::generator::citus::Source,
    /// This database's Citus metadata disagrees with what the server goes on with (here, the
    /// server).
    pub disagreement: Option<(Node, Node)>,
    /// A parallel worker that would be refused ([`Refused::ParallelUnread`]).
    pub parallel_unread: bool,
}

/// Where `sno_generate` in this database would take the partition from, and whether it would
/// refuse for Citus's sake: read as [`publish`] reads it, but nothing is published (the
/// monitoring views, [`crate::generator::forecast`]). Reads Citus's catalog only where
/// `publish` would (the database that decides, a backend that has not read it yet, outside
/// recovery and parallel mode), once per backend when it finds a group, and only if the
/// caller may read the two tables (PUBLIC may, unless an administrator revoked it: then the
/// views go by what was published). Elsewhere it goes by what was published, as
/// `sno_generate` there does.
pub fn peek(s: &'static Shared) -> Peek {
    let explicit = crate::pg::shmem::partition();
    let kept = kept(s);
    // SAFETY: plain reads of a shared flag and of process globals.
    let (recovery, worker) = unsafe { (pg_sys::RecoveryInProgress(), pg_sys::IsInParallelMode()) };
    let named = crate::pg::gucs::citus_database();
    let unread = !READ.load(Relaxed) && loaded() && !recovery;
    let may_read = unread && !worker && named.as_deref().is_none_or(this_database_is);
    let here = match PEEKED.load(Relaxed) {
        _ if !may_read => None,
        CITUS_UNREAD => {
            let node = readable().then(local_node).flatten();
            if let Some(Node::Group(g)) = node {
                PEEKED.store(g, Relaxed);
            }
            node
        }
        g => Some(Node::Group(g)),
    };
    let (source, disagreement) =
        crate::generator::forecast::source(explicit, here, published(s), kept, named.is_some());
    Peek {
        source,
        disagreement,
        parallel_unread: unread && worker && parallel_unread(s, kept),
    }
}

/// Whether the current role may read the two Citus tables [`local_node`] reads.
fn readable() -> bool {
    [c"pg_dist_local_group", c"pg_dist_node"].iter().all(|t| {
        // SAFETY: a catalog lookup by name, and an ACL check of the current role.
        unsafe {
            let rel = pg_sys::get_relname_relid(t.as_ptr(), pg_sys::PG_CATALOG_NAMESPACE.into());
            rel != pg_sys::InvalidOid
                && pg_sys::pg_class_aclcheck(rel, pg_sys::GetUserId(), pg_sys::ACL_SELECT as _)
                    == pg_sys::AclResult::ACLCHECK_OK
        }
    })
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
        CITUS_UNREAD => None,
        NOT_ACTIVATED => Some(Node::NotActivated),
        g => Some(Node::Group(g)),
    }
}
