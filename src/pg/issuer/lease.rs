//! Partition leases in PostgreSQL: `sno_lease_acquire`, `sno_lease_renew`, `sno_lease_release`,
//! `sno_lease_take_over` and the view's functions. Each call checks its arguments against the
//! calling session's settings and asks the registry ([`super::lease_worker`]), which decides
//! ([`super::lease_registry`]) and commits in a transaction of its own before the answer
//! comes back: a grant, renewal or release a caller receives is durable whatever the caller
//! does next (a rollback, a failing DO block, a procedure's ROLLBACK, a pipeline's failing next
//! statement), and no caller's statement or transaction holds the registry's lock. So the
//! calls work anywhere a function can be called, like `nextval`: inside `BEGIN ... COMMIT`, in
//! procedures and DO blocks, at any isolation level; only a standby, a read-only transaction and
//! a parallel worker refuse them.

use super::at::{citus_role, CitusRole};
use super::lease_registry::{at_unit, incarnation, OWN_INSERT};
use super::lease_request::{self as request, Answer, Ask, Kind};
use super::lease_worker as worker;
use crate::generator::lease::{self as decide, BadRequest, MAX_HOLDER_BYTES};
use crate::generator::reserved;
use crate::pg::encoded_text::EncodedText;
use crate::pg::errors::{self, Problem};
use crate::pg::shmem;
use pgrx::datum::{Interval, Uuid};
use pgrx::prelude::*;

/// The checks every call that writes the registry makes first: a primary, not a read-only
/// transaction, not a parallel worker; sno preloaded.
fn writable(function: &'static core::ffi::CStr) {
    if shmem::shared().is_none() {
        errors::raise(if shmem::preloaded() {
            Problem::NoSharedMemory
        } else {
            Problem::LeaseNotPreloaded
        });
    }
    // SAFETY: reads of server state; the Prevent* calls raise PostgreSQL's own errors.
    unsafe {
        if pg_sys::RecoveryInProgress() {
            errors::raise(Problem::LeaseInRecovery);
        }
        pg_sys::PreventCommandIfReadOnly(function.as_ptr());
        pg_sys::PreventCommandIfParallelMode(function.as_ptr());
    }
}

/// The TTL in units, checked against the calling role's `sno.lease_max_ttl`.
fn ttl_units(ttl: Option<Interval>, a: &Ask) -> i64 {
    let Some(ttl) = ttl else {
        errors::raise(Problem::LeaseNull("ttl"))
    };
    let max = i128::from(a.max_ttl_s) * 1_000_000;
    decide::ttl_units(ttl.as_micros(), max).unwrap_or_else(|e| {
        errors::raise(Problem::LeaseBadTtl {
            ttl: &ttl.to_string(),
            too_long: e == BadRequest::TtlTooLong,
            max_s: a.max_ttl_s,
            asked_s: i32::try_from((ttl.as_micros() + 999_999).div_euclid(1_000_000))
                .unwrap_or(i32::MAX),
            role: request::name_str(&a.role_name).as_str(),
        })
    })
}

/// The calling role (`current_user`) and its name.
fn current_role() -> (u32, String) {
    // SAFETY: GetUserNameFromId returns a palloc'd name (error if the role is gone).
    unsafe {
        let oid = pg_sys::GetUserId();
        let name = pg_sys::GetUserNameFromId(oid, false);
        (
            oid.to_u32(),
            core::ffi::CStr::from_ptr(name)
                .to_string_lossy()
                .into_owned(),
        )
    }
}

/// A request of `kind` from this session: its role and the settings that apply to it, read
/// for that role in one query.
fn request(kind: Kind) -> Ask {
    let (role, role_name) = current_role();
    let settings = crate::pg::gucs::lease_settings();
    Ask {
        kind,
        role,
        role_name: request::name(&role_name),
        lease_limit: settings.lease_limit,
        reserved_limit: settings.reserved_limit,
        max_ttl_s: settings.lease_max_ttl_s,
        ..Ask::default()
    }
}

/// A lease as the function returns it.
type LeaseRow = pgrx::composite_type!('static, "sno_lease");

/// The answer's lease as an `sno_lease` value of sno's schema.
fn lease_tuple(answer: Answer) -> LeaseRow {
    let Answer::Lease(g) = answer else {
        error!("sno: the lease registry answered no lease")
    };
    let schema = super::at::Extension::find().schema;
    let mut t = PgHeapTuple::new_composite_type(&format!("{schema}.sno_lease"))
        .unwrap_or_else(|e| error!("sno: type sno_lease: {e}"));
    macro_rules! set {
        ($name:literal, $v:expr) => {
            t.set_by_name($name, $v)
                .unwrap_or_else(|e| error!("sno: sno_lease.{}: {e}", $name))
        };
    }
    let holder = g.holder[..usize::from(g.holder_len)].to_vec();
    set!("lease", g.lease);
    set!("token", Uuid::from_bytes(g.token));
    set!("partition", i32::from(g.partition));
    set!("sequence_min", i32::from(g.min));
    set!("sequence_max", i32::from(g.max));
    set!("not_before", at_unit(g.not_before));
    set!("expires_at", at_unit(g.expires));
    set!("holder", EncodedText(holder));
    set!("renew_after", at_unit(g.renew_after));
    t
}

/// The request of `sno_lease_acquire`, checked.
fn acquire_request(
    holder: Option<EncodedText>,
    ttl: Option<Interval>,
    sequences: Option<i32>,
) -> Ask {
    writable(c"sno_lease_acquire()");
    let Some(EncodedText(holder)) = holder else {
        errors::raise(Problem::LeaseNull("holder"))
    };
    if holder.is_empty() || holder.len() > MAX_HOLDER_BYTES {
        errors::raise(Problem::LeaseBadHolder {
            holder: &holder,
            max: MAX_HOLDER_BYTES,
        });
    }
    let mut a = request(Kind::Acquire);
    let ttl = ttl_units(ttl, &a);
    let Some(sequences) = sequences else {
        errors::raise(Problem::LeaseNull("sequences"))
    };
    let size = decide::check_sequences(i64::from(sequences))
        .unwrap_or_else(|_| errors::raise(Problem::LeaseBadSequences(sequences)));
    a.holder[..holder.len()].copy_from_slice(&holder);
    a.holder_len = holder.len() as u16;
    a.ttl = ttl;
    a.sequences = size;
    a
}

/// `sno_lease_acquire(holder text, ttl interval, sequences int DEFAULT 1024) → SETOF sno_lease`:
/// one row. A set-returning function (since 0.8.1) because PostgreSQL evaluates a function
/// that returns a composite once per column in `SELECT (f(...)).*`: each column would come
/// from another lease, a row that matches no lease; a set-returning function is called once.
#[pg_extern(name = "sno_lease_acquire", volatile, parallel_unsafe, requires = ["sno_leases"])]
#[search_path(pg_catalog, pg_temp)]
fn lease_acquire(
    holder: Option<EncodedText>,
    ttl: Option<Interval>,
    sequences: default!(Option<i32>, 1024),
) -> SetOfIterator<'static, pgrx::composite_type!('static, "sno_lease")> {
    let a = acquire_request(holder, ttl, sequences);
    SetOfIterator::new(core::iter::once(lease_tuple(worker::ask(a))))
}

/// 0.8.0's `sno_lease_acquire(...) → sno_lease` (one composite), for a database not yet
/// updated (see `compat.rs`).
#[pg_extern(sql = false, volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn sno_lease_acquire(
    holder: Option<EncodedText>,
    ttl: Option<Interval>,
    sequences: default!(Option<i32>, 1024),
) -> pgrx::composite_type!('static, "sno_lease") {
    let a = acquire_request(holder, ttl, sequences);
    lease_tuple(worker::ask(a))
}

/// The lease number and token of a renewal or release, not NULL.
fn lease_and_token(lease: Option<i64>, token: Option<Uuid>) -> (i64, [u8; 16]) {
    match (lease, token) {
        (Some(l), Some(t)) => (l, *t.as_bytes()),
        (None, _) => errors::raise(Problem::LeaseNull("lease")),
        (_, None) => errors::raise(Problem::LeaseNull("token")),
    }
}

/// The request of `sno_lease_renew`, checked.
fn renew_request(lease: Option<i64>, token: Option<Uuid>, ttl: Option<Interval>) -> Ask {
    writable(c"sno_lease_renew()");
    let mut a = request(Kind::Renew);
    let ttl = ttl_units(ttl, &a);
    let (lease, token) = lease_and_token(lease, token);
    a.lease = lease;
    a.token = token;
    a.ttl = ttl;
    a
}

/// `sno_lease_renew(lease bigint, token uuid, ttl interval) → SETOF sno_lease`: the same lease,
/// with a later end; one row (set-returning, as `sno_lease_acquire`).
#[pg_extern(name = "sno_lease_renew", volatile, parallel_unsafe, requires = ["sno_leases"])]
#[search_path(pg_catalog, pg_temp)]
fn lease_renew(
    lease: Option<i64>,
    token: Option<Uuid>,
    ttl: Option<Interval>,
) -> SetOfIterator<'static, pgrx::composite_type!('static, "sno_lease")> {
    let a = renew_request(lease, token, ttl);
    SetOfIterator::new(core::iter::once(lease_tuple(worker::ask(a))))
}

/// 0.8.0's `sno_lease_renew(...) → sno_lease`, for a database not yet updated.
#[pg_extern(sql = false, volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn sno_lease_renew(
    lease: Option<i64>,
    token: Option<Uuid>,
    ttl: Option<Interval>,
) -> pgrx::composite_type!('static, "sno_lease") {
    lease_tuple(worker::ask(renew_request(lease, token, ttl)))
}

/// `sno_lease_release(lease bigint, token uuid)`: its holder stopped. Its slice is granted
/// again only for windows after its end, since the holder may have stamped units up to it.
#[pg_extern(volatile, parallel_unsafe, requires = ["sno_leases"])]
#[search_path(pg_catalog, pg_temp)]
fn sno_lease_release(lease: Option<i64>, token: Option<Uuid>) {
    writable(c"sno_lease_release()");
    let (lease, token) = lease_and_token(lease, token);
    let mut a = request(Kind::Release);
    a.lease = lease;
    a.token = token;
    worker::ask(a);
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
    match worker::ask(request(Kind::TakeOver)) {
        Answer::Count(n) => n as i32,
        _ => 0,
    }
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
    let Some(p) = p else {
        return 2;
    };
    let Some(s) = shmem::shared() else {
        // sno is not preloaded: nothing to record the grant in (see note_unrecorded).
        super::durable::note_unrecorded();
        return 2;
    };
    let known = shmem::locked(s, |g| g.lineage.granted.contains(p));
    // SAFETY: reads a shared flag.
    if !unsafe { pg_sys::RecoveryInProgress() } {
        super::durable::note_restored_grant(s, p);
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
