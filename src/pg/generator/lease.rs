//! Partition leases in PostgreSQL: `sno_lease_acquire`, `sno_lease_renew`, `sno_lease_release`,
//! `sno_lease_take_over` and the view's functions. The decisions are pure
//! ([`crate::generator::lease`]); this reads and writes their records
//! (`sno_internal.leases`, `sno_internal.lease_partitions`, as the extension's owner, under a
//! table lock that serialises the registry's decisions in this database) and takes new pool
//! partitions from the lineage's allocator ([`super::durable::grant_reserved`]: state file and
//! WAL, flushed, before the partition is used).
//!
//! A lease is granted or renewed only by a statement that is its own transaction (never inside
//! `BEGIN ... COMMIT`, where a rollback would take back a lease its holder already has), and
//! that transaction commits with at least a local flush (`synchronous_commit` is raised from
//! `off` to `local` for it), so that no crash forgets a lease that was handed out.

use super::at::{citus_role, judged, CitusRole, Extension};
use super::durable::{grant_reserved, note_restored_grant, GrantRequest};
use crate::generator::lease::{self as decide, BadRequest, Choice, Granted, Pooled, Slice};
use crate::generator::reserved;
use crate::id::time::{units_to_pg_micros, EPOCH_PG_MICROS, UNIT_MICROS};
use crate::pg::errors::{self, Problem};
use crate::pg::shmem;
use pgrx::datum::{Interval, TimestampWithTimeZone, Uuid};
use pgrx::prelude::*;
use pgrx::spi::SpiClient;

/// The registry's clock in 4 ms units (the statement's, not the transaction's, start).
fn now_units() -> i64 {
    // SAFETY: plain clock read.
    units_of(unsafe { pg_sys::GetCurrentTimestamp() })
}

/// The unit a timestamp (µs since 2000) is in; ±infinity as `i64::MIN`/`i64::MAX`.
fn units_of(pg_micros: i64) -> i64 {
    match pg_micros {
        i64::MIN => i64::MIN,
        i64::MAX => i64::MAX,
        m => (m - EPOCH_PG_MICROS).div_euclid(UNIT_MICROS),
    }
}

/// The start of a unit, as a timestamp.
fn at_unit(units: i64) -> TimestampWithTimeZone {
    let micros = if units < 0 {
        EPOCH_PG_MICROS + units * UNIT_MICROS
    } else {
        units_to_pg_micros(units as u64)
    };
    TimestampWithTimeZone::try_from(micros)
        .unwrap_or_else(|_| TimestampWithTimeZone::positive_infinity())
}

fn micros_of(t: Option<TimestampWithTimeZone>) -> i64 {
    t.map_or(i64::MIN, |t| t.into_inner())
}

/// The checks every call that writes a lease makes first: a primary; a statement that is its
/// own transaction (not in a transaction block or a subtransaction, not in a DO block or a
/// procedure, which may roll back after it, and committed at once even in a pipeline of the
/// extended protocol); read committed (a later snapshot than the statement's, so that what the
/// table lock waited for is seen); not read-only, not parallel.
fn writable(function: &'static core::ffi::CStr) {
    // SAFETY: reads of transaction state and of the active portal; the Prevent* calls raise
    // PostgreSQL's own errors.
    unsafe {
        if pg_sys::RecoveryInProgress() {
            errors::raise(Problem::LeaseInRecovery);
        }
        let portal = pg_sys::ActivePortal;
        let nonatomic = !portal.is_null()
            && matches!(
                (*portal).commandTag,
                pg_sys::CommandTag::CMDTAG_DO | pg_sys::CommandTag::CMDTAG_CALL
            );
        if pg_sys::IsTransactionBlock() || nonatomic {
            errors::raise(Problem::LeaseInTransactionBlock);
        }
        if pg_sys::XactIsoLevel >= pg_sys::XACT_REPEATABLE_READ as i32 {
            errors::raise(Problem::LeaseIsolation);
        }
        pg_sys::PreventCommandIfReadOnly(function.as_ptr());
        pg_sys::PreventCommandIfParallelMode(function.as_ptr());
        // As PreventInTransactionBlock does: the statement commits at once, also when it is one
        // of several in a pipeline before its Sync.
        pg_sys::MyXactFlags |= pg_sys::XACT_FLAGS_NEEDIMMEDIATECOMMIT as i32;
    }
}

/// The TTL in units, checked against `sno.lease_max_ttl`.
fn ttl_units(ttl: Option<Interval>) -> i64 {
    let Some(ttl) = ttl else {
        errors::raise(Problem::LeaseNull("ttl"))
    };
    let max = i128::from(crate::pg::gucs::lease_max_ttl_s()) * 1_000_000;
    decide::ttl_units(ttl.as_micros(), max).unwrap_or_else(|e| {
        errors::raise(Problem::LeaseBadTtl {
            ttl: &ttl.to_string(),
            too_long: e == BadRequest::TtlTooLong,
            max_s: crate::pg::gucs::lease_max_ttl_s(),
            asked_s: i32::try_from((ttl.as_micros() + 999_999).div_euclid(1_000_000))
                .unwrap_or(i32::MAX),
            role: &session_user(),
        })
    })
}

/// The session's login role: where `ALTER ROLE ... SET` settings take effect.
fn session_user() -> String {
    // SAFETY: GetUserNameFromId returns a palloc'd name (error if the role is gone).
    unsafe {
        let name = pg_sys::GetUserNameFromId(pg_sys::GetSessionUserId(), false);
        core::ffi::CStr::from_ptr(name)
            .to_string_lossy()
            .into_owned()
    }
}

/// Runs the lease's SQL as the extension's owner, after locking the leases table against other
/// registry decisions of this database (reads go on).
fn locked_as_owner<R>(ext: &Extension, f: impl FnOnce(&mut SpiClient<'_>) -> R) -> R {
    ext.as_owner(|| {
        Spi::connect_mut(|c| {
            c.update(
                "LOCK TABLE sno_internal.leases IN SHARE ROW EXCLUSIVE MODE",
                None,
                &[],
            )
            .unwrap_or_else(|e| error!("sno: cannot lock sno_internal.leases: {e}"));
            f(c)
        })
    })
}

/// A commit of this transaction flushes its WAL locally at least: a lease handed out must
/// survive a crash of the registry.
fn durable_commit(c: &mut SpiClient<'_>) {
    c.update(
        "SELECT pg_catalog.set_config('synchronous_commit', 'local', true) \
         WHERE pg_catalog.current_setting('synchronous_commit') OPERATOR(pg_catalog.=) 'off'",
        None,
        &[],
    )
    .unwrap_or_else(|e| error!("sno: cannot set synchronous_commit: {e}"));
}

/// Forgets leases that ended more than a day ago (a hundred at a time), keeping the latest of
/// their ends as their partition's `busy_until`: no slice of it is granted for a window before
/// that, even if the registry's clock goes back by more than a day.
fn prune(c: &mut SpiClient<'_>) {
    c.update(
        "WITH old AS (DELETE FROM sno_internal.leases WHERE ctid OPERATOR(pg_catalog.=) ANY (ARRAY( \
             SELECT ctid FROM sno_internal.leases \
             WHERE expires_at OPERATOR(pg_catalog.<) (pg_catalog.now() OPERATOR(pg_catalog.-) '1 day'::pg_catalog.interval) \
             LIMIT 100)) RETURNING partition, expires_at) \
         UPDATE sno_internal.lease_partitions p SET busy_until = GREATEST(p.busy_until, m.ended) \
         FROM (SELECT partition, pg_catalog.max(expires_at) AS ended FROM old GROUP BY partition) m \
         WHERE p.partition OPERATOR(pg_catalog.=) m.partition",
        None,
        &[],
    )
    .unwrap_or_else(|e| error!("sno: cannot prune sno_internal.leases: {e}"));
}

/// Set while this backend's registry inserts a pool partition of its own: any other insert
/// into `sno_internal.lease_partitions` is a restore (pg_restore, a data-only load), whose rows
/// are never trusted as this registry's (leases granted after the dump are not in them).
static OWN_INSERT: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// One partition of the pool, as recorded.
struct PoolRow {
    partition: u16,
    incarnation: i64,
    database: u32,
    busy_until: i64,
    restored: bool,
}

fn pool_rows(c: &mut SpiClient<'_>) -> Vec<PoolRow> {
    let t = c
        .select(
            "SELECT partition, incarnation, database, busy_until, restored \
             FROM sno_internal.lease_partitions ORDER BY partition",
            None,
            &[],
        )
        .unwrap_or_else(|e| error!("sno: cannot read sno_internal.lease_partitions: {e}"));
    t.map(|r| PoolRow {
        partition: r.get::<i32>(1).ok().flatten().unwrap_or(0) as u16,
        incarnation: r.get::<i64>(2).ok().flatten().unwrap_or(0),
        database: r
            .get::<pg_sys::Oid>(3)
            .ok()
            .flatten()
            .map_or(0, |o| o.to_u32()),
        busy_until: units_of(micros_of(r.get::<TimestampWithTimeZone>(4).ok().flatten())),
        restored: r.get::<bool>(5).ok().flatten().unwrap_or(true),
    })
    .collect()
}

/// This registry's lineage incarnation (as stored: the bits of the u64), and whether it may
/// grant (not a copy that may run beside its original).
fn incarnation(s: &'static shmem::Shared) -> (i64, bool) {
    shmem::locked(s, |g| {
        (g.lineage.incarnation as i64, !g.lineage.grants_blocked)
    })
}

fn my_database() -> u32 {
    // SAFETY: plain read of a backend global.
    unsafe { pg_sys::MyDatabaseId }.to_u32()
}

impl PoolRow {
    fn ours(&self, incarnation: i64) -> bool {
        self.incarnation == incarnation && self.database == my_database() && !self.restored
    }
}

/// A lease as the function returns it.
type LeaseRow = pgrx::composite_type!('static, "sno_lease");

fn lease_tuple(
    ext: &Extension,
    lease: i64,
    token: Uuid,
    g: &Granted,
    holder: &str,
    renew_after: i64,
) -> LeaseRow {
    let mut t = PgHeapTuple::new_composite_type(&format!("{}.sno_lease", ext.schema))
        .unwrap_or_else(|e| error!("sno: type sno_lease: {e}"));
    macro_rules! set {
        ($name:literal, $v:expr) => {
            t.set_by_name($name, $v)
                .unwrap_or_else(|e| error!("sno: sno_lease.{}: {e}", $name))
        };
    }
    set!("lease", lease);
    set!("token", token);
    set!("partition", i32::from(g.slice.partition));
    set!("sequence_min", i32::from(g.slice.min));
    set!("sequence_max", i32::from(g.slice.max));
    set!("not_before", at_unit(g.not_before));
    set!("expires_at", at_unit(g.expires));
    set!("holder", holder.to_string());
    set!("renew_after", at_unit(renew_after));
    t
}

/// A new unguessable token: 122 random bits from the operating system's strong source, as a
/// version-4 UUID.
fn new_token() -> Uuid {
    let mut b = [0u8; 16];
    // SAFETY: fills the buffer it is given.
    if !unsafe { pg_sys::pg_strong_random(b.as_mut_ptr().cast(), b.len()) } {
        error!("sno: could not generate a random lease token");
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    Uuid::from_bytes(b)
}

/// The share of the reserved range this registry takes new pool partitions from, after the
/// refusals of a server that grants none.
fn share(s: &'static shmem::Shared) -> u32 {
    match citus_role(s) {
        CitusRole::None => decide::share_of_timeline(super::wal_timeline()),
        CitusRole::Coordinator(k) => k,
        CitusRole::CoordinatorWithoutShare { explicit } => {
            errors::raise(Problem::CoordinatorWithoutShare { explicit })
        }
        CitusRole::Worker => errors::raise(Problem::LeaseOnCitusWorker),
        CitusRole::Elsewhere => errors::raise(Problem::GenerateAtOnCitus),
    }
}

/// `sno_lease_acquire(holder text, ttl interval, sequences int DEFAULT 1024) → sno_lease`
#[pg_extern(volatile, parallel_unsafe, requires = ["sno_leases"])]
#[search_path(pg_catalog, pg_temp)]
fn sno_lease_acquire(
    holder: Option<&str>,
    ttl: Option<Interval>,
    sequences: default!(Option<i32>, 1024),
) -> pgrx::composite_type!('static, "sno_lease") {
    writable(c"sno_lease_acquire()");
    let Some(holder) = holder else {
        errors::raise(Problem::LeaseNull("holder"))
    };
    let ttl = ttl_units(ttl);
    let Some(sequences) = sequences else {
        errors::raise(Problem::LeaseNull("sequences"))
    };
    let size = decide::check_sequences(i64::from(sequences))
        .unwrap_or_else(|_| errors::raise(Problem::LeaseBadSequences(sequences)));
    let s = judged();
    let k = share(s);
    let (me, may_grant) = incarnation(s);
    if !may_grant {
        errors::raise(Problem::LeaseOnCopy);
    }
    let ext = Extension::find();
    let limit = crate::pg::gucs::lease_limit();
    let (lease, token, g, renew_after) = locked_as_owner(&ext, |c| {
        durable_commit(c);
        prune(c);
        let rows = pool_rows(c);
        // A row the lineage does not know came from a restore that skipped the trigger.
        let unknown = shmem::locked(s, |g| {
            rows.iter()
                .any(|r| !g.lineage.granted.contains(r.partition))
        });
        if unknown || rows.iter().any(|r| r.restored) {
            errors::raise(Problem::LeasesRestored {
                max_ttl_s: crate::pg::gucs::lease_max_ttl_s(),
            });
        }
        let now = now_units();
        let active: i64 = c
            .select(
                "SELECT pg_catalog.count(*) FROM sno_internal.leases \
                 WHERE grantee OPERATOR(pg_catalog.=) $1::pg_catalog.name \
                 AND expires_at OPERATOR(pg_catalog.>) $2",
                None,
                &[ext.role.clone().into(), at_unit(now).into()],
            )
            .ok()
            .and_then(|t| t.first().get::<i64>(1).ok().flatten())
            .unwrap_or(0);
        if active >= i64::from(limit) {
            errors::raise(Problem::LeaseLimit {
                role: &ext.role,
                session_role: &session_user(),
                limit,
            });
        }
        let mut pool: Vec<Pooled> = rows
            .iter()
            .filter(|r| r.ours(me))
            .map(|r| Pooled {
                partition: r.partition,
                floor: r.busy_until,
            })
            .collect();
        let granted = granted_on(c, &pool, now - decide::SLACK_UNITS);
        let g = match decide::acquire(&pool, &granted, size, now, ttl) {
            Choice::Grant(g) => g,
            Choice::NeedPartition => {
                let free_in_share = shmem::locked(s, |g| {
                    (reserved::FIRST..=u16::MAX)
                        .any(|p| reserved::for_leases(p, k) && !g.lineage.reserved_taken(p))
                });
                let (pool_grants, pool_limit) = (
                    shmem::locked(s, |g| g.lineage.grants_of(ext.role_oid)),
                    crate::pg::gucs::reserved_limit(),
                );
                if i64::from(pool_grants) >= i64::from(pool_limit) {
                    errors::raise(Problem::LeasePoolLimit {
                        role: &ext.role,
                        session_role: &session_user(),
                        limit: pool_limit,
                    });
                }
                if !free_in_share {
                    errors::raise(Problem::LeaseShareExhausted {
                        share: k,
                        pool: pool.len(),
                    });
                }
                let mut known = ext.grants();
                known.extend(rows.iter().map(|r| r.partition));
                let p = grant_reserved(
                    s,
                    &GrantRequest {
                        known: &known,
                        share: Some(k),
                        leases: true,
                        above: None,
                        given: None,
                        role: ext.role_oid,
                        role_name: &ext.role,
                        limit: Some(crate::pg::gucs::reserved_limit()),
                    },
                );
                OWN_INSERT.store(true, core::sync::atomic::Ordering::Relaxed);
                let inserted = c.update(
                    "INSERT INTO sno_internal.lease_partitions (partition, incarnation, database, granted_at) \
                     VALUES ($1, $2, $3, pg_catalog.now())",
                    None,
                    &[
                        i32::from(p).into(),
                        me.into(),
                        pg_sys::Oid::from(my_database()).into(),
                    ],
                );
                OWN_INSERT.store(false, core::sync::atomic::Ordering::Relaxed);
                inserted.unwrap_or_else(|e| error!("sno: cannot record lease partition {p}: {e}"));
                pool.push(Pooled {
                    partition: p,
                    floor: i64::MIN,
                });
                match decide::acquire(&pool, &granted, size, now, ttl) {
                    Choice::Grant(g) => g,
                    Choice::NeedPartition => error!("sno: a new lease partition has no free slice"),
                }
            }
        };
        let lease: i64 = c
            .select(
                "SELECT COALESCE(pg_catalog.max(lease), 0) OPERATOR(pg_catalog.+) 1 FROM sno_internal.leases",
                None,
                &[],
            )
            .ok()
            .and_then(|t| t.first().get::<i64>(1).ok().flatten())
            .unwrap_or(1);
        let token = new_token();
        let renew_after = decide::renew_after(now, ttl).min(g.expires - 1);
        c.update(
            "INSERT INTO sno_internal.leases (lease, token_sha256, holder, grantee, partition, \
             sequence_min, sequence_max, not_before, expires_at, ttl, acquired_at, renew_after) \
             VALUES ($1, pg_catalog.sha256(pg_catalog.uuid_send($2)), $3, $4::pg_catalog.name, $5, $6, $7, $8, $9, \
             $10, pg_catalog.clock_timestamp(), $11)",
            None,
            &[
                lease.into(),
                token.into(),
                holder.into(),
                ext.role.clone().into(),
                i32::from(g.slice.partition).into(),
                i32::from(g.slice.min).into(),
                i32::from(g.slice.max).into(),
                at_unit(g.not_before).into(),
                at_unit(g.expires).into(),
                Interval::from_micros(ttl * UNIT_MICROS).into(),
                at_unit(renew_after).into(),
            ],
        )
        .unwrap_or_else(|e| error!("sno: cannot record the lease: {e}"));
        (lease, token, g, renew_after)
    });
    lease_tuple(&ext, lease, token, &g, holder, renew_after)
}

/// The leases on `pool`'s partitions that end after `since`.
fn granted_on(c: &mut SpiClient<'_>, pool: &[Pooled], since: i64) -> Vec<Granted> {
    if pool.is_empty() {
        return Vec::new();
    }
    let partitions: Vec<i32> = pool.iter().map(|p| i32::from(p.partition)).collect();
    let t = c
        .select(
            "SELECT partition, sequence_min, sequence_max, not_before, expires_at \
             FROM sno_internal.leases WHERE partition OPERATOR(pg_catalog.=) ANY ($1) \
             AND expires_at OPERATOR(pg_catalog.>) $2",
            None,
            &[partitions.into(), at_unit(since).into()],
        )
        .unwrap_or_else(|e| error!("sno: cannot read sno_internal.leases: {e}"));
    t.map(|r| granted_of(&r, 1)).collect()
}

/// A lease's slice and window from columns `first`.. (partition, sequence_min, sequence_max,
/// not_before, expires_at).
fn granted_of(r: &pgrx::spi::SpiHeapTupleData<'_>, first: usize) -> Granted {
    let int = |i: usize| r.get::<i32>(first + i).ok().flatten().unwrap_or(0);
    let time = |i: usize| {
        units_of(micros_of(
            r.get::<TimestampWithTimeZone>(first + i).ok().flatten(),
        ))
    };
    Granted {
        slice: Slice {
            partition: int(0) as u16,
            min: int(1) as u16,
            max: int(2) as u16,
        },
        not_before: time(3),
        expires: time(4),
    }
}

/// The lease `lease` if `token` is its token, with its holder and release time.
fn find_lease(
    c: &mut SpiClient<'_>,
    lease: Option<i64>,
    token: Option<Uuid>,
) -> (Granted, String, bool) {
    let (Some(lease), Some(token)) = (lease, token) else {
        errors::raise(Problem::LeaseNull(if lease.is_none() {
            "lease"
        } else {
            "token"
        }))
    };
    let t = c
        .select(
            "SELECT partition, sequence_min, sequence_max, not_before, expires_at, holder, \
             released_at IS NOT NULL FROM sno_internal.leases \
             WHERE lease OPERATOR(pg_catalog.=) $1 \
             AND token_sha256 OPERATOR(pg_catalog.=) pg_catalog.sha256(pg_catalog.uuid_send($2))",
            None,
            &[lease.into(), token.into()],
        )
        .unwrap_or_else(|e| error!("sno: cannot read sno_internal.leases: {e}"));
    if t.is_empty() {
        errors::raise(Problem::LeaseToken(lease));
    }
    let r = t.first();
    let g = r
        .get_heap_tuple()
        .ok()
        .flatten()
        .map(|r| granted_of(&r, 1))
        .unwrap_or_else(|| errors::raise(Problem::LeaseToken(lease)));
    let holder = r.get::<String>(6).ok().flatten().unwrap_or_default();
    let released = r.get::<bool>(7).ok().flatten().unwrap_or(true);
    (g, holder, released)
}

/// `sno_lease_renew(lease bigint, token uuid, ttl interval) → sno_lease`: the same lease, with
/// a later end.
#[pg_extern(volatile, parallel_unsafe, requires = ["sno_leases"])]
#[search_path(pg_catalog, pg_temp)]
fn sno_lease_renew(
    lease: Option<i64>,
    token: Option<Uuid>,
    ttl: Option<Interval>,
) -> pgrx::composite_type!('static, "sno_lease") {
    writable(c"sno_lease_renew()");
    let ttl = ttl_units(ttl);
    let s = judged();
    let (me, _) = incarnation(s);
    let ext = Extension::find();
    let (id, token, g, holder, renew_after) = locked_as_owner(&ext, |c| {
        durable_commit(c);
        let (g, holder, released) = find_lease(c, lease, token);
        let id = lease.unwrap_or(0);
        let ours = pool_rows(c)
            .iter()
            .any(|r| r.partition == g.slice.partition && r.ours(me));
        let later = c
            .select(
                "SELECT EXISTS (SELECT FROM sno_internal.leases WHERE partition OPERATOR(pg_catalog.=) $1 \
                 AND sequence_min OPERATOR(pg_catalog.<=) $3 AND sequence_max OPERATOR(pg_catalog.>=) $2 \
                 AND not_before OPERATOR(pg_catalog.>=) $4)",
                None,
                &[
                    i32::from(g.slice.partition).into(),
                    i32::from(g.slice.min).into(),
                    i32::from(g.slice.max).into(),
                    at_unit(g.expires).into(),
                ],
            )
            .ok()
            .and_then(|t| t.first().get::<bool>(1).ok().flatten())
            .unwrap_or(true);
        let now = now_units();
        let standing = decide::Standing {
            released,
            ours,
            handed_on: later,
        };
        let expires = decide::renew(&g, standing, now, ttl).unwrap_or_else(|why| {
            errors::raise(Problem::LeaseNotRenewed {
                lease: id,
                why,
                expires_at: &crate::pg::report::timestamptz_text(at_unit(g.expires).into_inner()),
            })
        });
        let renew_after = decide::renew_after(now, ttl).min(expires - 1);
        c.update(
            "UPDATE sno_internal.leases SET expires_at = $2, renewed_at = pg_catalog.clock_timestamp(), \
             renew_after = $3, ttl = $4 WHERE lease OPERATOR(pg_catalog.=) $1",
            None,
            &[
                id.into(),
                at_unit(expires).into(),
                at_unit(renew_after).into(),
                Interval::from_micros(ttl * UNIT_MICROS).into(),
            ],
        )
        .unwrap_or_else(|e| error!("sno: cannot record the renewal: {e}"));
        let g = Granted { expires, ..g };
        (id, token.unwrap_or_else(new_token), g, holder, renew_after)
    });
    lease_tuple(&ext, id, token, &g, &holder, renew_after)
}

/// `sno_lease_release(lease bigint, token uuid)`: its holder stopped. Its slice is granted
/// again only for windows after its end, since the holder may have stamped units up to it.
#[pg_extern(volatile, parallel_unsafe, requires = ["sno_leases"])]
#[search_path(pg_catalog, pg_temp)]
fn sno_lease_release(lease: Option<i64>, token: Option<Uuid>) {
    writable(c"sno_lease_release()");
    let ext = Extension::find();
    locked_as_owner(&ext, |c| {
        find_lease(c, lease, token);
        c.update(
            "UPDATE sno_internal.leases SET released_at = pg_catalog.clock_timestamp() \
             WHERE lease OPERATOR(pg_catalog.=) $1 AND released_at IS NULL",
            None,
            &[lease.unwrap_or(0).into()],
        )
        .unwrap_or_else(|e| error!("sno: cannot record the release: {e}"));
    });
}

/// `sno_lease_take_over() → int`: a superuser says that the server this database's leases were
/// restored from grants no more leases, and that every lease it granted has ended. Its pool
/// partitions are noted as granted on this server (never granted again) and leases are granted
/// here again. Returns how many partitions were restored.
#[pg_extern(volatile, parallel_unsafe, requires = ["sno_leases"])]
#[search_path(pg_catalog, pg_temp)]
fn sno_lease_take_over() -> i32 {
    // SAFETY: plain catalog check.
    if !unsafe { pg_sys::superuser() } {
        errors::raise(Problem::LeaseTakeOverNotSuperuser);
    }
    writable(c"sno_lease_take_over()");
    let s = judged();
    let ext = Extension::find();
    let rows = locked_as_owner(&ext, pool_rows);
    for r in &rows {
        note_restored_grant(s, r.partition);
    }
    ext.as_owner(|| {
        Spi::get_one::<i64>(
            "WITH u AS (UPDATE sno_internal.lease_partitions SET restored = false WHERE restored RETURNING 1) \
             SELECT pg_catalog.count(*) FROM u",
        )
    })
    .ok()
    .flatten()
    .unwrap_or(0) as i32
}

/// The trigger's judgment of a pool partition row as it is inserted: 0 for the registry's own
/// insert; otherwise a restore, whose pool partition is noted as granted on this server (never
/// granted again) and never leased from here: 1 when this server's lineage had granted it (a
/// restore of one of its own databases, even into the same one: leases granted after the dump
/// are not in it), which the trigger records as of no incarnation; 2 when it came from another
/// server, whose later grants this one cannot know: restored, no lease is granted in this
/// database until `sno_lease_take_over()`.
#[pg_extern(volatile, parallel_unsafe, requires = ["sno_leases"])]
#[search_path(pg_catalog, pg_temp)]
fn sno_lease_partition_noted(partition: i32) -> i32 {
    if OWN_INSERT.load(core::sync::atomic::Ordering::Relaxed) {
        return 0;
    }
    let p = u16::try_from(partition)
        .ok()
        .filter(|&p| reserved::is_reserved(p));
    let (Some(s), Some(p)) = (shmem::shared(), p) else {
        return 2;
    };
    let known = shmem::locked(s, |g| g.lineage.granted.contains(p));
    // SAFETY: reads a shared flag.
    if !unsafe { pg_sys::RecoveryInProgress() } {
        note_restored_grant(s, p);
    }
    if known {
        1
    } else {
        2
    }
}

/// `sno_lease_incarnation() → bigint`: this server's lineage incarnation, as pool partitions
/// record it (NULL when sno is not preloaded).
#[pg_extern(volatile, parallel_safe, requires = ["sno_leases"])]
fn sno_lease_incarnation() -> Option<i64> {
    shmem::shared().map(|s| incarnation(s).0)
}

/// `sno_lease_space()`: the share of the reserved range new pool partitions come from here
/// (NULL on a server that grants none), and how many reserved partitions are left in it and
/// in all.
#[pg_extern(volatile, parallel_safe, requires = ["sno_leases"])]
fn sno_lease_space() -> TableIterator<
    'static,
    (
        name!(share, Option<i32>),
        name!(share_left, Option<i32>),
        name!(reserved_left, Option<i32>),
    ),
> {
    let Some(s) = shmem::shared() else {
        return TableIterator::once((None, None, None));
    };
    // A standby grants nothing (and has no WAL timeline of its own to write on yet); a Citus
    // worker's leases come from its coordinator.
    // SAFETY: reads a shared flag.
    let k = if unsafe { pg_sys::RecoveryInProgress() } {
        None
    } else {
        match citus_role(s) {
            CitusRole::None => Some(decide::share_of_timeline(super::wal_timeline())),
            CitusRole::Coordinator(k) => Some(k),
            _ => None,
        }
    };
    let (share_left, left) = shmem::locked(s, |g| {
        let free = |p: &u16| !g.lineage.reserved_taken(*p);
        let all = (reserved::FIRST..=u16::MAX).filter(free).count() as i32;
        let share = k.map(|k| {
            (reserved::FIRST..=u16::MAX)
                .filter(|&p| reserved::for_leases(p, k) && free(&p))
                .count() as i32
        });
        (share, all)
    });
    TableIterator::once((k.map(|k| k as i32), share_left, Some(left)))
}
