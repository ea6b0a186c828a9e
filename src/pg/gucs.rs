//! Every configuration setting of the extension. All names are under the `sno.` prefix, which
//! is reserved: a misspelt `sno.*` setting in postgresql.conf is reported, not silently kept.

use crate::generator::cursor::{Slice, SliceError};
use pgrx::{GucContext, GucFlags, GucRegistry, GucSetting};

/// `sno.partition`: the partition written into generated IDs (0..65535), or -1 (the default) to
/// derive it from the cluster's system identifier. Server configuration only (`SIGHUP`): a
/// partition names a server, so a session must not be able to change it with `SET`.
static PARTITION: GucSetting<i32> = GucSetting::<i32>::new(-1);

/// `sno.max_clock_wait`: how long (ms) `sno_generate` may wait for the clock to come back to
/// time it may use (after a second clock regression), or past the start of the unit its turn
/// comes in (a clock that does not advance), before it fails. A unit used up by other callers
/// is not clock trouble: the caller waits for its turn in a later unit, and only time past
/// that unit's start counts. Superuser-settable, per session if wanted.
static MAX_CLOCK_WAIT_MS: GucSetting<i32> = GucSetting::<i32>::new(10_000);

/// `sno.idle_horizon`: how far past the clock (s) the durable horizon is written once when the
/// server stops making IDs (the idle lease), so that the first ID after a pause up to that
/// long does not wait for the state file; 0 turns it off. After an unclean stop within it, the
/// restart flips the tick-tock bit and horizons stay short until the clock passes it.
/// Server configuration only (`SIGHUP`).
static IDLE_HORIZON_S: GucSetting<i32> = GucSetting::<i32>::new(60);

/// `sno.reserved_limit`: how many reserved partitions a role may be granted on this server (the
/// grants to it the lineage records, in any database). Superuser-settable, so that a superuser sets it
/// per role (`ALTER ROLE ... SET`) and the role cannot raise its own.
static RESERVED_LIMIT: GucSetting<i32> = GucSetting::<i32>::new(16);

/// `sno.reserved_limit`, as the catalog says it now for the calling role ([`per_role_now`]).
pub fn reserved_limit() -> i32 {
    let [v] = per_role_now([RESERVED_LIMIT_READ]);
    v.unwrap_or_else(|| RESERVED_LIMIT.get())
}

/// How [`per_role_now`] reads one setting: its name, its unit flags and the values it accepts.
type Read = (&'static str, u32, std::ops::RangeInclusive<i32>);

const RESERVED_LIMIT_READ: Read = ("sno.reserved_limit", 0, 0..=4096);
const LEASE_LIMIT_READ: Read = ("sno.lease_limit", 0, 0..=65_536);
const LEASE_MAX_TTL_READ: Read = ("sno.lease_max_ttl", pgrx::pg_sys::GUC_UNIT_S, 1..=86_400);

/// The per-role settings a lease call needs, read in one query.
#[derive(Clone, Copy, Debug)]
pub struct LeaseSettings {
    /// `sno.reserved_limit`.
    pub reserved_limit: i32,
    /// `sno.lease_limit`.
    pub lease_limit: i32,
    /// `sno.lease_max_ttl`, in seconds.
    pub lease_max_ttl_s: i32,
}

/// [`LeaseSettings`] as the catalog says them now for the calling role ([`per_role_now`]).
pub fn lease_settings() -> LeaseSettings {
    let [reserved, leases, ttl] =
        per_role_now([RESERVED_LIMIT_READ, LEASE_LIMIT_READ, LEASE_MAX_TTL_READ]);
    LeaseSettings {
        reserved_limit: reserved.unwrap_or_else(|| RESERVED_LIMIT.get()),
        lease_limit: leases.unwrap_or_else(|| LEASE_LIMIT.get()),
        lease_max_ttl_s: ttl.unwrap_or_else(|| LEASE_MAX_TTL_S.get()),
    }
}

/// What `ALTER ROLE ... SET` and `ALTER DATABASE ... SET` give each setting now, for the
/// calling role (`current_user`, the role whose grants and leases count against the limits) in
/// this database, in PostgreSQL's order (the role in this database, the role, the database),
/// read from `pg_db_role_setting` at the call, in one query, and parsed with the setting's unit
/// flags (a value outside its range is ignored, as a session's start ignores it with a
/// warning). A session reads those settings once, when it starts, and for its login role; a
/// pooler keeps its server sessions for an hour, so a limit a superuser raised or lowered as a
/// HINT says would not count for them until then, and a `SET ROLE` would count against one
/// role under another's limit. The per-role limits are read this way, so that each counts for
/// its role at the next call. `None` for a setting whose session value holds: set in the
/// session (a superuser's `SET`, a function's `SET` clause), or from postgresql.conf with no
/// catalog setting; or outside a transaction.
fn per_role_now<const N: usize>(reads: [Read; N]) -> [Option<i32>; N] {
    use pgrx::prelude::*;
    // SAFETY: plain reads of this backend's state.
    let (in_xact, role, db) = unsafe {
        (
            pg_sys::IsTransactionState(),
            pg_sys::GetUserId(),
            pg_sys::MyDatabaseId,
        )
    };
    if !in_xact {
        return [const { None }; N];
    }
    // The session's own value stands when it came from the session (a superuser's SET, a
    // function's SET clause); otherwise what the catalog says now, in PostgreSQL's order (the
    // role in this database, the role, the database, ALTER ROLE ALL); and when the catalog says
    // nothing now but said something at the session's start (since reset, or another role's),
    // the built-in default.
    let names: Vec<String> = reads.iter().map(|r| r.0.to_string()).collect();
    let values = Spi::get_one_with_args::<Vec<Option<String>>>(
        "SELECT pg_catalog.array_agg(v.value ORDER BY v.ord) FROM ( \
         SELECT n.ord, CASE WHEN cur.source OPERATOR(pg_catalog.=) ANY (ARRAY['default', 'configuration file', \
                     'command line', 'environment variable', 'global', 'database', 'user', 'database user']) \
           THEN coalesce( \
             (SELECT pg_catalog.substr(c.kv, pg_catalog.length(n.name) OPERATOR(pg_catalog.+) 2) \
              FROM pg_catalog.pg_db_role_setting s, pg_catalog.unnest(s.setconfig) AS c(kv) \
              WHERE s.setrole OPERATOR(pg_catalog.=) ANY (ARRAY[$1, 0::pg_catalog.oid]) \
                AND s.setdatabase OPERATOR(pg_catalog.=) ANY (ARRAY[$2, 0::pg_catalog.oid]) \
                AND pg_catalog.starts_with(c.kv, n.name OPERATOR(pg_catalog.||) '=') \
              ORDER BY s.setrole OPERATOR(pg_catalog.=) 0, s.setdatabase OPERATOR(pg_catalog.=) 0 \
              LIMIT 1), \
             CASE WHEN cur.source OPERATOR(pg_catalog.=) ANY (ARRAY['global', 'database', 'user', 'database user']) \
               THEN cur.boot_val END) \
           END AS value \
         FROM pg_catalog.unnest($3::pg_catalog.text[]) WITH ORDINALITY AS n(name, ord) \
         LEFT JOIN pg_catalog.pg_settings cur ON cur.name OPERATOR(pg_catalog.=) n.name) v",
        &[role.into(), db.into(), names.into()],
    )
    .ok()
    .flatten()
    .unwrap_or_default();
    let mut out = [const { None }; N];
    for (i, (_, flags, range)) in reads.iter().enumerate() {
        out[i] = values
            .get(i)
            .cloned()
            .flatten()
            .and_then(|v| parse(&v, *flags, range));
    }
    out
}

/// A setting's value as PostgreSQL parses an integer setting with unit `flags`, if in `range`.
fn parse(value: &str, flags: u32, range: &std::ops::RangeInclusive<i32>) -> Option<i32> {
    let value = std::ffi::CString::new(value).ok()?;
    let mut parsed: i32 = 0;
    // SAFETY: a NUL-terminated string; parse_int writes the result only, and the hint pointer
    // may be NULL.
    let ok = unsafe {
        pgrx::pg_sys::parse_int(
            value.as_ptr(),
            &mut parsed,
            flags as i32,
            std::ptr::null_mut(),
        )
    };
    (ok && range.contains(&parsed)).then_some(parsed)
}

/// What a HINT's `ALTER ROLE` names so that the setting `name` it sets for role `role` counts:
/// the role (`"bob"`), or, when the role's setting in this database holds `name` (it outranks
/// the role's own, as [`per_role_now`] reads it), the role in this database (`"bob" IN DATABASE
/// "app"`). `quoted` is the role's name as the HINT prints it.
pub fn alter_role_target(name: &str, role: &str, quoted: String) -> String {
    use pgrx::prelude::*;
    // SAFETY: plain read of a backend global.
    if !unsafe { pg_sys::IsTransactionState() } {
        return quoted;
    }
    let db = Spi::get_one_with_args::<String>(
        "SELECT pg_catalog.current_database()::pg_catalog.text \
         FROM pg_catalog.pg_db_role_setting s JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) s.setrole, \
              pg_catalog.unnest(s.setconfig) AS c(kv) \
         WHERE r.rolname OPERATOR(pg_catalog.=) $1 \
           AND s.setdatabase OPERATOR(pg_catalog.=) (SELECT oid FROM pg_catalog.pg_database WHERE datname OPERATOR(pg_catalog.=) pg_catalog.current_database()) \
           AND pg_catalog.starts_with(c.kv, $2 OPERATOR(pg_catalog.||) '=') \
         LIMIT 1",
        &[role.into(), name.into()],
    )
    .ok()
    .flatten();
    match db {
        Some(db) => format!("{quoted} IN DATABASE \"{}\"", db.replace('"', "\"\"")),
        None => quoted,
    }
}

/// `sno.lease_max_ttl`: the longest TTL a partition lease may be acquired or renewed for (s).
/// Superuser-settable (per role: `ALTER ROLE ... SET`).
static LEASE_MAX_TTL_S: GucSetting<i32> = GucSetting::<i32>::new(600);

/// `sno.lease_limit`: how many partition leases whose window has not ended (released or not) a
/// role may hold in one database, and so how many rows it has in the registry. Superuser-settable
/// (per role: `ALTER ROLE ... SET`).
static LEASE_LIMIT: GucSetting<i32> = GucSetting::<i32>::new(64);

/// `sno.sequence_min` / `sno.sequence_max`: the slice of the sequence pool `sno_generate`
/// numbers every unit from (muyo/sno's `SequenceMin`/`SequenceMax`), so that generators
/// outside the server on the rest of the pool may share its partition. Server start only
/// (`POSTMASTER`): the cursor's end is fixed in shared memory, and a restart resumes past the
/// durable horizon, so no unit is numbered from two slices.
static SEQUENCE_MIN: GucSetting<i32> = GucSetting::<i32>::new(0);
static SEQUENCE_MAX: GucSetting<i32> = GucSetting::<i32>::new(65535);

/// `sno.citus_database`: the database whose Citus metadata decides this node's group (see
/// [`crate::pg::citus`]); empty: any database with Citus that agrees with the others.
/// Server configuration only (`SIGHUP`).
static CITUS_DATABASE: GucSetting<Option<std::ffi::CString>> =
    GucSetting::<Option<std::ffi::CString>>::new(None);

/// `sno.citus_database`, if set (not empty).
pub fn citus_database() -> Option<std::ffi::CString> {
    CITUS_DATABASE.get().filter(|s| !s.is_empty())
}

/// The configured slice (the whole pool when sno is not preloaded), or why it is refused.
pub fn slice() -> Result<Slice, (i32, i32, SliceError)> {
    let (min, max) = (SEQUENCE_MIN.get(), SEQUENCE_MAX.get());
    Slice::new(min.into(), max.into()).map_err(|e| (min, max, e))
}

/// This process's own `sno.partition` (-1 for derived).
pub fn partition_setting() -> i32 {
    PARTITION.get()
}

/// `sno.max_clock_wait`.
pub fn max_clock_wait() -> core::time::Duration {
    core::time::Duration::from_millis(u64::try_from(MAX_CLOCK_WAIT_MS.get()).unwrap_or(0))
}

/// `sno.idle_horizon` in 4 ms units.
pub fn idle_horizon_units() -> u64 {
    u64::try_from(IDLE_HORIZON_S.get()).unwrap_or(0) * 250
}

/// Defines the settings and reserves the prefix. Called once from `_PG_init`.
/// `assign_partition`: the assign hook of `sno.partition`, which publishes a reload's value to
/// the running generator ([`crate::pg::shmem::assign_partition`]).
pub fn init(assign_partition: unsafe extern "C-unwind" fn(i32, *mut core::ffi::c_void)) {
    // SAFETY: the hook is guarded and touches only atomics in shared memory.
    unsafe {
        GucRegistry::define_int_guc_with_hooks(
            c"sno.partition",
            c"Partition (server number, 0-65535) written into IDs made by sno_generate.",
            c"-1 derives it from the cluster's system identifier. Every server that makes IDs \
              which meet in one place needs its own partition.",
            &PARTITION,
            -1,
            65535,
            GucContext::Sighup,
            GucFlags::default(),
            None,
            Some(assign_partition),
            None,
        );
    }
    GucRegistry::define_int_guc(
        c"sno.max_clock_wait",
        c"Longest wait of sno_generate for the system clock before it fails.",
        c"Counts the time spent waiting for a clock that went back into time already used twice \
          in a row, or that does not reach the 4 ms unit a caller's turn comes in after every \
          sequence number of a unit was taken. Waiting for that turn itself does not count.",
        &MAX_CLOCK_WAIT_MS,
        0,
        3_600_000,
        GucContext::Suset,
        GucFlags::UNIT_MS,
    );
    GucRegistry::define_int_guc(
        c"sno.idle_horizon",
        c"How far past the clock the generator's durable horizon is written when IDs stop being made.",
        c"The first ID after a pause up to this long does not wait for the state file. After a \
          crash within it, the restart flips the tick-tock bit. 0 turns it off.",
        &IDLE_HORIZON_S,
        0,
        3600,
        GucContext::Sighup,
        GucFlags::UNIT_S,
    );
    GucRegistry::define_int_guc(
        c"sno.reserved_limit",
        c"How many reserved partitions may be granted on this server for a role (sno_generate_at, lease pools).",
        c"Each session that calls sno_generate_at is granted one of the 2048 reserved partitions \
          for good, and a role's lease pool takes one when every slice of its partitions is \
          leased. Set per role by a superuser: ALTER ROLE name SET sno.reserved_limit = n.",
        &RESERVED_LIMIT,
        0,
        4096,
        GucContext::Suset,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"sno.lease_max_ttl",
        c"The longest TTL a sno partition lease may be acquired or renewed for.",
        c"A lease's window ends at most this long after its last renewal; after a failover of \
          the registry, leases of the old primary end within it. Set per role by a superuser: \
          ALTER ROLE name SET sno.lease_max_ttl = '10min'.",
        &LEASE_MAX_TTL_S,
        1,
        86_400,
        GucContext::Suset,
        GucFlags::UNIT_S,
    );
    GucRegistry::define_int_guc(
        c"sno.lease_limit",
        c"How many sno partition leases whose window has not ended a role may hold in one database.",
        c"Released leases count until their end. It also bounds the role's rows in the registry: \
          ended leases are forgotten to make room. Set per role by a superuser: ALTER ROLE name \
          SET sno.lease_limit = n.",
        &LEASE_LIMIT,
        0,
        65_536,
        GucContext::Suset,
        GucFlags::default(),
    );
    GucRegistry::define_string_guc(
        c"sno.citus_database",
        c"Database whose Citus metadata decides this node's Citus group for sno_generate.",
        c"Empty: any database with Citus in which sno_generate runs, as long as all agree. Set \
          it on a node with Citus in more than one database.",
        &CITUS_DATABASE,
        GucContext::Sighup,
        GucFlags::default(),
    );
    // Server-start settings can be defined only while the postmaster preloads the library
    // (PostgreSQL refuses them later, ending the session); loaded any other way, sno has no
    // generator, so it has no slice either.
    // SAFETY: plain read of a server global.
    if unsafe { pgrx::pg_sys::process_shared_preload_libraries_in_progress } {
        GucRegistry::define_int_guc(
            c"sno.sequence_min",
            c"First sequence number sno_generate uses in each 4 ms unit.",
            c"With sno.sequence_max, the slice of the sequence pool this server numbers IDs from \
              (muyo/sno's SequenceMin and SequenceMax): generators on the rest of the pool may \
              share the partition.",
            &SEQUENCE_MIN,
            0,
            65535,
            GucContext::Postmaster,
            GucFlags::default(),
        );
        GucRegistry::define_int_guc(
            c"sno.sequence_max",
            c"Last sequence number sno_generate uses in each 4 ms unit.",
            c"Must be at least 3 above sno.sequence_min (a slice of at least 4 numbers).",
            &SEQUENCE_MAX,
            0,
            65535,
            GucContext::Postmaster,
            GucFlags::default(),
        );
    }
    reserve_prefix();
}

fn reserve_prefix() {
    // SAFETY: called from _PG_init with a static NUL-terminated name.
    unsafe { pgrx::pg_sys::MarkGUCPrefixReserved(c"sno".as_ptr()) }
}
