//! The lease registry's decisions against its records, run by the registry's worker
//! ([`super::lease_worker`]) in a transaction of its own: what `sno_lease_acquire`,
//! `sno_lease_renew`, `sno_lease_release` and `sno_lease_take_over` decide. The decisions are
//! pure ([`crate::generator::lease`]); this reads and writes their records as the extension's
//! owner (the worker is its database's only one: decisions never race), and takes new pool
//! partitions from the lineage's allocator
//! ([`super::durable::grant_reserved`]: state file and WAL, flushed, before the partition is
//! used).
//!
//! The records:
//! * `sno_internal.lease_partitions`: the pool, each partition the lineage granted for one
//!   role's leases (the grantee the lineage records: a partition is charged to the role whose
//!   request needed it, and only that role's leases use it, so that no role's demand spends
//!   another's `sno.reserved_limit` or fills its slices); `stamp`, bumped by each grant and
//!   renewal on it. pg_dump carries it.
//! * `sno_internal.leases`: every lease, until it is forgotten: a day after its end, or sooner
//!   when its role needs the room (a role's rows never outnumber its `sno.lease_limit`); a
//!   forgotten lease's end becomes its partition's `busy_until`. pg_dump carries it.
//! * `sno_internal.lease_ledger`: per pool partition, the stamp of the last grant or renewal and
//!   the latest window end ever granted on it. No dump carries it, so after a data-only restore
//!   of older rows into this database (their stamps behind the ledger's), the registry knows
//!   that leases granted or renewed since the dump are missing from the table, and keeps every
//!   slice of that partition busy until the latest end the ledger knows (and refuses to renew
//!   the restored leases, whose slices may have been handed on since).
//! * `sno_internal.lease_ids`: lease numbers, never handed out twice in this database (not
//!   dumped either: a restore cannot bring an older number back).

use super::at::{citus_role, judged, CitusRole, Extension};
use super::durable::{grant_reserved, note_restored_grant, GrantRequest};
use super::lease_request::{self as request, failure, Answer, Ask, Failure, Kind, LeaseReply};
use crate::generator::lease::{self as decide, Choice, Granted, Kept, LeaseSlice, Ledger, Pooled};
use crate::generator::reserved;
use crate::id::time::{units_to_pg_micros, EPOCH_PG_MICROS, UNIT_MICROS};
use crate::pg::encoded_text::EncodedText;
use crate::pg::errors::{self, Problem};
use crate::pg::shmem;
use pgrx::datum::{Interval, TimestampWithTimeZone, Uuid};
use pgrx::prelude::*;
use pgrx::spi::{SpiClient, SpiHeapTupleData, SpiTupleTable};

/// The registry's clock in 4 ms units (now, not the transaction's start).
pub(super) fn now_units() -> i64 {
    // SAFETY: plain clock read.
    units_of(unsafe { pg_sys::GetCurrentTimestamp() })
}

/// The unit a timestamp (µs since 2000) is in; ±infinity as `i64::MIN`/`i64::MAX`.
pub(super) fn units_of(pg_micros: i64) -> i64 {
    match pg_micros {
        i64::MIN => i64::MIN,
        i64::MAX => i64::MAX,
        m => (m - EPOCH_PG_MICROS).div_euclid(UNIT_MICROS),
    }
}

/// The start of a unit, as a timestamp.
pub(super) fn at_unit(units: i64) -> TimestampWithTimeZone {
    let micros = if units == i64::MIN {
        i64::MIN
    } else if units < 0 {
        EPOCH_PG_MICROS.saturating_add(units.saturating_mul(UNIT_MICROS))
    } else {
        units_to_pg_micros(units as u64)
    };
    match micros {
        i64::MIN => TimestampWithTimeZone::negative_infinity(),
        m => TimestampWithTimeZone::try_from(m)
            .unwrap_or_else(|_| TimestampWithTimeZone::positive_infinity()),
    }
}

fn micros_of(t: Option<TimestampWithTimeZone>) -> i64 {
    t.map_or(i64::MIN, |t| t.into_inner())
}

fn time_of(r: &SpiHeapTupleData<'_>, i: usize) -> i64 {
    units_of(micros_of(r.get::<TimestampWithTimeZone>(i).ok().flatten()))
}

/// Runs a statement of the registry. Every one is run as a writing statement, so that it takes
/// a new snapshot in this read committed transaction: it sees what committed before it, while
/// this worker waited for the table lock too.
fn run<'c>(
    c: &mut SpiClient<'c>,
    what: &str,
    sql: &str,
    args: &[pgrx::datum::DatumWithOid<'_>],
) -> SpiTupleTable<'c> {
    c.update(sql, None, args)
        .unwrap_or_else(|e| error!("sno: cannot {what}: {e}"))
}

/// Runs the registry's SQL as the extension's owner. No table lock: this worker is the only one
/// of its database (so decisions never race), and a lock the registry took would conflict with
/// what another role may hold on its tables (a database owner's ANALYZE in an open
/// transaction); its writes take only ROW EXCLUSIVE.
fn as_owner<R>(ext: &Extension, f: impl FnOnce(&mut SpiClient<'_>) -> R) -> R {
    ext.as_owner(|| Spi::connect_mut(f))
}

/// Forgets leases whose windows ended more than a day ago (a hundred at a time), and `forget`,
/// keeping the latest of their ends as their partition's `busy_until`: no slice of it is
/// granted for a window before that, whatever the registry's clock does later.
fn prune(c: &mut SpiClient<'_>, forget: &[i64]) {
    run(
        c,
        "prune sno_internal.leases",
        "WITH old AS (DELETE FROM sno_internal.leases WHERE lease OPERATOR(pg_catalog.=) ANY (ARRAY( \
             SELECT lease FROM sno_internal.leases \
             WHERE expires_at OPERATOR(pg_catalog.<) (pg_catalog.now() OPERATOR(pg_catalog.-) '1 day'::pg_catalog.interval) \
             LIMIT 100) OPERATOR(pg_catalog.||) $1) RETURNING partition, expires_at) \
         UPDATE sno_internal.lease_partitions p SET busy_until = GREATEST(p.busy_until, m.ended) \
         FROM (SELECT partition, pg_catalog.max(expires_at) AS ended FROM old GROUP BY partition) m \
         WHERE p.partition OPERATOR(pg_catalog.=) m.partition",
        &[forget.to_vec().into()],
    );
}

/// Set while this worker inserts a pool partition of its own: any other insert into
/// `sno_internal.lease_partitions` is a restore (pg_restore, a data-only load), whose rows are
/// never trusted as this registry's (leases granted after the dump are not in them).
pub(super) static OWN_INSERT: core::sync::atomic::AtomicBool =
    core::sync::atomic::AtomicBool::new(false);

/// One partition of the pool, as recorded, with its ledger.
struct PoolRow {
    partition: u16,
    incarnation: i64,
    database: u32,
    busy_until: i64,
    restored: bool,
    stamp: i64,
    ledger: Option<Ledger>,
}

/// Whether this database's catalog has the ledger (0.8.1 on): a database not yet updated from
/// 0.8.0 (its library replaced, `ALTER EXTENSION sno UPDATE` not run yet) leases as 0.8.0 did,
/// without the ledger, its stamps and its lease numbers, so that its services go on renewing
/// through a rolling update.
fn has_ledger(c: &mut SpiClient<'_>) -> bool {
    run(
        c,
        "look for sno_internal.lease_ledger",
        "SELECT pg_catalog.to_regclass('sno_internal.lease_ledger') IS NOT NULL",
        &[],
    )
    .first()
    .get::<bool>(1)
    .ok()
    .flatten()
    .unwrap_or(false)
}

fn pool_rows(c: &mut SpiClient<'_>, ledger: bool) -> Vec<PoolRow> {
    let sql = if ledger {
        "SELECT p.partition, p.incarnation, p.database, p.busy_until, p.restored, p.stamp, \
                l.stamp, l.leased_until \
         FROM sno_internal.lease_partitions p \
         LEFT JOIN sno_internal.lease_ledger l USING (partition) ORDER BY p.partition"
    } else {
        "SELECT p.partition, p.incarnation, p.database, p.busy_until, p.restored, 0::pg_catalog.int8, \
                0::pg_catalog.int8, NULL::pg_catalog.timestamptz \
         FROM sno_internal.lease_partitions p ORDER BY p.partition"
    };
    let t = run(c, "read sno_internal.lease_partitions", sql, &[]);
    t.map(|r| PoolRow {
        partition: r.get::<i32>(1).ok().flatten().unwrap_or(0) as u16,
        incarnation: r.get::<i64>(2).ok().flatten().unwrap_or(0),
        database: r
            .get::<pg_sys::Oid>(3)
            .ok()
            .flatten()
            .map_or(0, |o| o.to_u32()),
        busy_until: time_of(&r, 4),
        restored: r.get::<bool>(5).ok().flatten().unwrap_or(true),
        stamp: r.get::<i64>(6).ok().flatten().unwrap_or(0),
        ledger: r.get::<i64>(7).ok().flatten().map(|stamp| Ledger {
            stamp,
            leased_until: time_of(&r, 8),
        }),
    })
    .collect()
}

/// This registry's lineage incarnation (as stored: the bits of the u64), and whether it may
/// grant (not a copy that may run beside its original).
pub(super) fn incarnation(s: &'static shmem::Shared) -> (i64, bool) {
    shmem::locked(s, |g| {
        (g.lineage.incarnation as i64, !g.lineage.grants_blocked)
    })
}

fn my_database() -> u32 {
    // SAFETY: plain read of a backend global.
    unsafe { pg_sys::MyDatabaseId }.to_u32()
}

impl PoolRow {
    /// Of this incarnation and database, not restored: the registry's own.
    fn ours(&self, incarnation: i64) -> bool {
        self.incarnation == incarnation && self.database == my_database() && !self.restored
    }
}

/// The partitions of `rows` this registry leases from after checking each against its ledger:
/// a partition whose rows are older than its ledger (a data-only restore) gets the floor the
/// ledger gives, recorded with the ledger's stamp, and a line in the server log; one with no
/// ledger (its ledger row was deleted) is not leased from. `role`: only the partitions the
/// lineage granted to it (every one of the registry's own, for a renewal's check).
fn relearned(
    c: &mut SpiClient<'_>,
    s: &'static shmem::Shared,
    rows: &mut [PoolRow],
    me: i64,
    role: Option<u32>,
) {
    for r in rows.iter_mut().filter(|r| r.ours(me)) {
        if let Some(role) = role {
            if shmem::locked(s, |g| g.lineage.grantee(r.partition)) != role {
                continue;
            }
        }
        let Some(ledger) = r.ledger else {
            r.restored = true;
            pgrx::log!(
                "sno: lease pool partition {} has no row in sno_internal.lease_ledger: it is not leased from",
                r.partition
            );
            continue;
        };
        if let Some(floor) = decide::relearned_floor(r.stamp, r.busy_until, ledger) {
            run(
                c,
                "relearn sno_internal.lease_partitions",
                "UPDATE sno_internal.lease_partitions SET busy_until = $2, stamp = $3 \
                 WHERE partition OPERATOR(pg_catalog.=) $1",
                &[
                    i32::from(r.partition).into(),
                    at_unit(floor).into(),
                    ledger.stamp.into(),
                ],
            );
            pgrx::log!(
                "sno: lease pool partition {}: its rows are older than the registry's ledger (stamp {} against {}; a data-only restore?): none of its slices is leased for a window before {}",
                r.partition,
                r.stamp,
                ledger.stamp,
                crate::pg::report::timestamptz_text(at_unit(floor).into_inner())
            );
            r.busy_until = floor;
            r.stamp = ledger.stamp;
        }
    }
}

/// Records a grant or renewal that ends at `expires` on `partition`: a new stamp in the pool's
/// row and the ledger, and the ledger's latest end.
fn stamp(c: &mut SpiClient<'_>, partition: u16, expires: i64) {
    run(
        c,
        "record the grant in sno_internal.lease_ledger",
        "WITH l AS (INSERT INTO sno_internal.lease_ledger AS l (partition, stamp, leased_until) \
             VALUES ($1, 1, $2) \
             ON CONFLICT (partition) DO UPDATE SET stamp = l.stamp OPERATOR(pg_catalog.+) 1, \
                 leased_until = GREATEST(l.leased_until, EXCLUDED.leased_until) \
             RETURNING stamp) \
         UPDATE sno_internal.lease_partitions SET stamp = (SELECT stamp FROM l) \
         WHERE partition OPERATOR(pg_catalog.=) $1",
        &[i32::from(partition).into(), at_unit(expires).into()],
    );
}

/// A new unguessable token: 122 random bits from the operating system's strong source, as a
/// version-4 UUID.
fn new_token() -> [u8; 16] {
    let mut b = [0u8; 16];
    // SAFETY: fills the buffer it is given.
    if !unsafe { pg_sys::pg_strong_random(b.as_mut_ptr().cast(), b.len()) } {
        error!("sno: could not generate a random lease token");
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    b
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

/// The extension as the calling role sees it: its owner runs the SQL, the caller's role is
/// charged.
fn extension_for(a: &Ask) -> Extension {
    let mut ext = Extension::find();
    ext.role = request::name_str(&a.role_name);
    ext.role_oid = a.role;
    ext
}

/// Decides `a` in a transaction of its own (committed before the answer leaves).
pub(super) fn decide(a: &Ask) -> Answer {
    let a = *a;
    in_transaction(move || match a.kind {
        Kind::Acquire => acquire(&a),
        Kind::Renew => renew(&a),
        Kind::Release => release(&a),
        Kind::TakeOver => take_over(),
    })
}

fn lease_answer(
    lease: i64,
    token: [u8; 16],
    g: &Granted,
    holder: &[u8],
    renew_after: i64,
) -> Answer {
    let mut out = LeaseReply {
        lease,
        token,
        partition: g.slice.partition,
        min: g.slice.min,
        max: g.slice.max,
        not_before: g.not_before,
        expires: g.expires,
        renew_after,
        ..Default::default()
    };
    let n = holder.len().min(out.holder.len());
    out.holder[..n].copy_from_slice(&holder[..n]);
    out.holder_len = n as u16;
    Answer::Lease(out)
}

fn acquire(a: &Ask) -> Answer {
    // SAFETY: plain read of a server global.
    if unsafe { pg_sys::RecoveryInProgress() } {
        errors::raise(Problem::LeaseInRecovery);
    }
    let holder = &a.holder[..usize::from(a.holder_len)];
    let (size, ttl) = (a.sequences, a.ttl);
    let s = judged();
    let k = share(s);
    let (me, may_grant) = incarnation(s);
    if !may_grant && super::durable::unrecorded() {
        errors::raise(Problem::GrantsUnrecorded { leases: true });
    }
    if !may_grant {
        errors::raise(Problem::LeaseOnCopy);
    }
    let ext = extension_for(a);
    let (lease, token, g, renew_after) = as_owner(&ext, |c| {
        let now = now_units();
        // The role's rows: room for one more, or its limit.
        let mine: Vec<Kept> = run(
            c,
            "read sno_internal.leases",
            "SELECT lease, expires_at FROM sno_internal.leases \
             WHERE grantee OPERATOR(pg_catalog.=) $1::pg_catalog.name",
            &[ext.role.clone().into()],
        )
        .map(|r| Kept {
            lease: r.get::<i64>(1).ok().flatten().unwrap_or(0),
            expires: time_of(&r, 2),
        })
        .collect();
        let limit = u32::try_from(a.lease_limit).unwrap_or(0);
        let forget = decide::make_room(&mine, limit, now).unwrap_or_else(|_| {
            errors::raise(Problem::LeaseLimit {
                role: &ext.role,
                limit: a.lease_limit,
            })
        });
        prune(c, &forget);
        let ledger = has_ledger(c);
        let mut rows = pool_rows(c, ledger);
        // A row the lineage does not know came from a restore that skipped the trigger.
        let unknown = shmem::locked(s, |g| {
            rows.iter()
                .any(|r| !g.lineage.granted.contains(r.partition))
        });
        if unknown || rows.iter().any(|r| r.restored) {
            errors::raise(Problem::LeasesRestored {
                max_ttl_s: a.max_ttl_s,
            });
        }
        relearned(c, s, &mut rows, me, Some(a.role));
        let mut pool: Vec<Pooled> = rows
            .iter()
            .filter(|r| {
                r.ours(me) && shmem::locked(s, |g| g.lineage.grantee(r.partition)) == a.role
            })
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
                let pool_grants = shmem::locked(s, |g| g.lineage.grants_of(ext.role_oid));
                if i64::from(pool_grants) >= i64::from(a.reserved_limit) {
                    errors::raise(Problem::LeasePoolLimit {
                        role: &ext.role,
                        limit: a.reserved_limit,
                    });
                }
                if !free_in_share {
                    errors::raise(Problem::LeaseShareExhausted {
                        share: k,
                        pool: pool.len(),
                        role: &ext.role,
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
                        limit: Some(a.reserved_limit),
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
        // Never a number this database handed out before, whatever a restore brought back.
        let number = if ledger {
            "SELECT GREATEST(pg_catalog.nextval('sno_internal.lease_ids'::pg_catalog.regclass), \
                 (SELECT COALESCE(pg_catalog.max(lease), 0) OPERATOR(pg_catalog.+) 1 FROM sno_internal.leases))"
        } else {
            "SELECT COALESCE(pg_catalog.max(lease), 0) OPERATOR(pg_catalog.+) 1 FROM sno_internal.leases"
        };
        let lease: i64 = run(c, "number the lease", number, &[])
            .first()
            .get::<i64>(1)
            .ok()
            .flatten()
            .unwrap_or_else(|| error!("sno: cannot number the lease"));
        if ledger {
            run(
                c,
                "advance sno_internal.lease_ids",
                "SELECT pg_catalog.setval('sno_internal.lease_ids'::pg_catalog.regclass, $1) \
                 WHERE $1 OPERATOR(pg_catalog.>) (SELECT last_value FROM sno_internal.lease_ids)",
                &[lease.into()],
            );
        }
        let token = new_token();
        let renew_after = decide::renew_after(now, ttl).min(g.expires - 1);
        run(
            c,
            "record the lease",
            "INSERT INTO sno_internal.leases (lease, token_sha256, holder, grantee, partition, \
             sequence_min, sequence_max, not_before, expires_at, ttl, acquired_at, renew_after) \
             VALUES ($1, pg_catalog.sha256(pg_catalog.uuid_send($2)), $3, $4::pg_catalog.name, $5, $6, $7, $8, $9, \
             $10, pg_catalog.clock_timestamp(), $11)",
            &[
                lease.into(),
                Uuid::from_bytes(token).into(),
                EncodedText(holder.to_vec()).into(),
                ext.role.clone().into(),
                i32::from(g.slice.partition).into(),
                i32::from(g.slice.min).into(),
                i32::from(g.slice.max).into(),
                at_unit(g.not_before).into(),
                at_unit(g.expires).into(),
                Interval::from_micros(ttl * UNIT_MICROS).into(),
                at_unit(renew_after).into(),
            ],
        );
        if ledger {
            stamp(c, g.slice.partition, g.expires);
        }
        (lease, token, g, renew_after)
    });
    lease_answer(lease, token, &g, holder, renew_after)
}

/// The leases on `pool`'s partitions that end after `since`.
fn granted_on(c: &mut SpiClient<'_>, pool: &[Pooled], since: i64) -> Vec<Granted> {
    if pool.is_empty() {
        return Vec::new();
    }
    let partitions: Vec<i32> = pool.iter().map(|p| i32::from(p.partition)).collect();
    run(
        c,
        "read sno_internal.leases",
        "SELECT partition, sequence_min, sequence_max, not_before, expires_at \
         FROM sno_internal.leases WHERE partition OPERATOR(pg_catalog.=) ANY ($1) \
         AND expires_at OPERATOR(pg_catalog.>) $2",
        &[partitions.into(), at_unit(since).into()],
    )
    .map(|r| granted_of(&r, 1))
    .collect()
}

/// A lease's slice and window from columns `first`.. (partition, sequence_min, sequence_max,
/// not_before, expires_at).
fn granted_of(r: &SpiHeapTupleData<'_>, first: usize) -> Granted {
    let int = |i: usize| r.get::<i32>(first + i).ok().flatten().unwrap_or(0);
    Granted {
        slice: LeaseSlice {
            partition: int(0) as u16,
            min: int(1) as u16,
            max: int(2) as u16,
        },
        not_before: time_of(r, first + 3),
        expires: time_of(r, first + 4),
    }
}

/// The lease `lease` if `token` is its token, with its holder and whether it was released.
fn find_lease(c: &mut SpiClient<'_>, lease: i64, token: [u8; 16]) -> (Granted, Vec<u8>, bool) {
    let t = run(
        c,
        "read sno_internal.leases",
        "SELECT partition, sequence_min, sequence_max, not_before, expires_at, holder, \
         released_at IS NOT NULL FROM sno_internal.leases \
         WHERE lease OPERATOR(pg_catalog.=) $1 \
         AND token_sha256 OPERATOR(pg_catalog.=) pg_catalog.sha256(pg_catalog.uuid_send($2))",
        &[lease.into(), Uuid::from_bytes(token).into()],
    );
    let Some(r) = t.into_iter().next() else {
        errors::raise(Problem::LeaseToken(lease));
    };
    let g = granted_of(&r, 1);
    let holder = r.get::<EncodedText>(6).ok().flatten().unwrap_or_default().0;
    let released = r.get::<bool>(7).ok().flatten().unwrap_or(true);
    (g, holder, released)
}

fn renew(a: &Ask) -> Answer {
    // SAFETY: plain read of a server global.
    if unsafe { pg_sys::RecoveryInProgress() } {
        errors::raise(Problem::LeaseInRecovery);
    }
    let s = judged();
    let (me, _) = incarnation(s);
    let ext = extension_for(a);
    let (id, ttl) = (a.lease, a.ttl);
    let (g, holder, renew_after) = as_owner(&ext, |c| {
        let (g, holder, released) = find_lease(c, id, a.token);
        let ledger = has_ledger(c);
        let mut rows = pool_rows(c, ledger);
        relearned(c, s, &mut rows, me, None);
        let row = rows.iter().find(|r| r.partition == g.slice.partition);
        let ours = row.is_some_and(|r| r.ours(me));
        // A later lease on its slice, recorded or forgotten (a partition's floor past this
        // lease's end: a forgotten lease ended there, or a restore lost leases up to there).
        let later = row.is_some_and(|r| r.busy_until > g.expires)
            || run(
                c,
                "read sno_internal.leases",
                "SELECT EXISTS (SELECT FROM sno_internal.leases WHERE partition OPERATOR(pg_catalog.=) $1 \
                 AND sequence_min OPERATOR(pg_catalog.<=) $3 AND sequence_max OPERATOR(pg_catalog.>=) $2 \
                 AND not_before OPERATOR(pg_catalog.>=) $4)",
                &[
                    i32::from(g.slice.partition).into(),
                    i32::from(g.slice.min).into(),
                    i32::from(g.slice.max).into(),
                    at_unit(g.expires).into(),
                ],
            )
            .first()
            .get::<bool>(1)
            .ok()
            .flatten()
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
        run(
            c,
            "record the renewal",
            "UPDATE sno_internal.leases SET expires_at = $2, renewed_at = pg_catalog.clock_timestamp(), \
             renew_after = $3, ttl = $4 WHERE lease OPERATOR(pg_catalog.=) $1",
            &[
                id.into(),
                at_unit(expires).into(),
                at_unit(renew_after).into(),
                Interval::from_micros(ttl * UNIT_MICROS).into(),
            ],
        );
        if ledger {
            stamp(c, g.slice.partition, expires);
        }
        (Granted { expires, ..g }, holder, renew_after)
    });
    lease_answer(id, a.token, &g, &holder, renew_after)
}

fn release(a: &Ask) -> Answer {
    // SAFETY: plain read of a server global.
    if unsafe { pg_sys::RecoveryInProgress() } {
        errors::raise(Problem::LeaseInRecovery);
    }
    let ext = extension_for(a);
    as_owner(&ext, |c| {
        find_lease(c, a.lease, a.token);
        run(
            c,
            "record the release",
            "UPDATE sno_internal.leases SET released_at = pg_catalog.clock_timestamp() \
             WHERE lease OPERATOR(pg_catalog.=) $1 AND released_at IS NULL",
            &[a.lease.into()],
        );
    });
    Answer::Count(0)
}

fn take_over() -> Answer {
    let s = judged();
    let ext = Extension::find();
    let n = as_owner(&ext, |c| {
        let ledger = has_ledger(c);
        let rows = pool_rows(c, ledger);
        for r in &rows {
            note_restored_grant(s, r.partition);
        }
        run(
            c,
            "take over sno_internal.lease_partitions",
            "WITH u AS (UPDATE sno_internal.lease_partitions SET restored = false WHERE restored RETURNING 1) \
             SELECT pg_catalog.count(*) FROM u",
            &[],
        )
        .first()
        .get::<i64>(1)
        .ok()
        .flatten()
        .unwrap_or(0)
    });
    Answer::Count(n)
}

/// How long a decision may take (a wait for the lineage's state file or a synchronous standby
/// included) before the worker cancels it.
const DECISION_TIMEOUT_MS: i32 = 30_000;

/// PostgreSQL's `STATEMENT_TIMEOUT` (utils/timeout.h, the same in 15 to 18), which pgrx does
/// not bind: a background worker arms it itself.
const STATEMENT_TIMEOUT: u32 = 3;

extern "C-unwind" {
    fn enable_timeout_after(id: u32, delay_ms: i32);
    fn disable_timeout(id: u32, keep_indicator: bool);
}

/// Runs `f` in a transaction of its own, within [`DECISION_TIMEOUT_MS`]: committed if it
/// returns, rolled back (its error turned into a [`Failure`]) if it raises.
fn in_transaction(f: impl FnOnce() -> Answer + std::panic::UnwindSafe) -> Answer {
    // SAFETY: a background worker between transactions; SPI needs an outer snapshot, and every
    // registry statement takes a new one of its own (lease_registry's `run`). The statement
    // timeout is armed as PostgreSQL arms it for a client's statement.
    unsafe {
        pg_sys::SetCurrentStatementStartTimestamp();
        pg_sys::StartTransactionCommand();
        pg_sys::PushActiveSnapshot(pg_sys::GetTransactionSnapshot());
        enable_timeout_after(STATEMENT_TIMEOUT, DECISION_TIMEOUT_MS);
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
                if r.sql_error_code() == PgSqlErrorCode::ERRCODE_LOCK_NOT_AVAILABLE {
                    lock_failure()
                } else {
                    failure(r.sql_error_code(), r.message(), r.detail(), r.hint())
                }
            }
        };
        // SAFETY: rolls back whatever the failed decision did (its locks, its snapshots).
        unsafe { pg_sys::AbortCurrentTransaction() };
        Answer::Failed(f)
    })
    .execute();
    // SAFETY: disarms the timeout; statistics as a backend sends them between statements.
    unsafe {
        disable_timeout(STATEMENT_TIMEOUT, false);
        pg_sys::pgstat_report_stat(false);
    }
    answer
}

/// The answer to a decision that waited `lock_timeout` for a lock on the registry's tables.
fn lock_failure() -> Failure {
    failure(
        PgSqlErrorCode::ERRCODE_LOCK_NOT_AVAILABLE,
        "the sno lease registry of this database waited 5 s for a lock on its tables",
        Some("Another session holds a lock on sno_internal.leases, sno_internal.lease_partitions or sno_internal.lease_ledger that conflicts with writing them (LOCK TABLE, VACUUM FULL, ALTER TABLE, CREATE INDEX, TRUNCATE): every call of this database queued now got this answer."),
        Some("Find that session: SELECT l.pid, l.mode, a.usename, a.state, a.query FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE l.relation IN ('sno_internal.leases'::regclass, 'sno_internal.lease_partitions'::regclass, 'sno_internal.lease_ledger'::regclass) AND l.granted; end its transaction, then call again."),
    )
}
