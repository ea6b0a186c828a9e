//! The handshake between members of a replicating group, over each subscription's own
//! connection (the decisions: [`crate::generator::member`]; the refusal: [`issuer::members`]).
//!
//! Every [`EVERY`] the `sno lineage` background worker reads `pg_subscription` (a shared catalog:
//! every database's subscriptions, no database needed) and, if there are any, starts a
//! short-lived worker, `sno member check` ([`Rounds`]), which for each enabled subscription
//! connects to its publisher as the apply worker does (libpqwalreceiver, the
//! subscription's connection string, a `replication=database` connection, so the same
//! `pg_hba.conf` line and credentials), and calls `sno_member_hello()` in the publisher's
//! database: each side tells the other its system identifier, partition and whether it made IDs
//! with it, and each decides for itself ([`crate::generator::member::verdict`]), so the server
//! that came first goes on without any word from its peer. Where the publisher's database has
//! no sno (or an older one), its `sno.partition` setting stands in (the publisher then cannot
//! tell, and the subscriber is refused if the partition is its own). `sno_member_check()` runs
//! the same round at once, as a superuser (a join recipe runs it before the new node's first
//! ID).
//!
//! Citus's own subscriptions (shard moves, `citus_`) are skipped: Citus nodes are one
//! cluster's, with partitions of their own ([`crate::generator::citus`]).
//!
//! [`issuer::members`]: crate::pg::issuer::members

use crate::generator::member::{Member, Verdict};
use crate::pg::errors::{self, Problem};
use crate::pg::issuer::members;
use core::ffi::{c_char, CStr};
use core::time::Duration;
use pgrx::bgworkers::{BackgroundWorker, BackgroundWorkerBuilder, SignalWakeFlags};
use pgrx::prelude::*;
use std::ffi::CString;

/// How often the worker checks every subscription: a conflict is found within this (plus a
/// connection) of the replication being up.
const EVERY: Duration = Duration::from_secs(10);

/// How long one handshake may take (a publisher that does not answer).
const HANDSHAKE_TIMEOUT_MS: i32 = 20_000;

/// PostgreSQL's `STATEMENT_TIMEOUT` (utils/timeout.h, the same in 15 to 18), which pgrx does
/// not bind.
const STATEMENT_TIMEOUT: u32 = 3;

extern "C-unwind" {
    fn enable_timeout_after(id: u32, delay_ms: i32);
    fn disable_timeout(id: u32, keep_indicator: bool);
}

/// `pg_subscription`'s OID (catalog/pg_subscription.h, the same in 15 to 18), which pgrx does
/// not bind.
const SUBSCRIPTION_RELATION_ID: pg_sys::Oid = pg_sys::Oid::from_u32(6100);

/// One subscription, as `pg_subscription` has it.
struct Subscription {
    name: String,
    /// The database it is in.
    database: pg_sys::Oid,
    conninfo: CString,
    /// The connection must use a password (16+: `password_required` of a subscription a
    /// non-superuser owns), as its apply worker's must.
    must_use_password: bool,
}

/// What one handshake found.
enum Outcome {
    /// The publisher described itself and this server decided; and a member the publisher knows
    /// that refused this server, if one did.
    Met(Member, Verdict, Option<Member>),
    /// The publisher's server makes no sno IDs (no partition set, no sno there).
    NoSno,
    /// This server has no partition yet (a derived one is drawn at the first ID).
    Undecided,
    /// The connection or a query failed.
    Failed(String),
}

/// Every enabled subscription but Citus's. In a transaction.
fn subscriptions() -> Vec<Subscription> {
    let mut out = Vec::new();
    // SAFETY: a catalog scan in a transaction, as the logical replication launcher reads
    // pg_subscription; the columns are found by name (their numbers differ between majors).
    unsafe {
        let rel = pg_sys::table_open(
            SUBSCRIPTION_RELATION_ID,
            pg_sys::AccessShareLock as pg_sys::LOCKMODE,
        );
        let desc = (*rel).rd_att;
        let tupdesc = pgrx::PgTupleDesc::from_pg_unchecked(desc);
        let col = |name: &str| {
            tupdesc
                .iter()
                .position(|a| a.name() == name && !a.attisdropped)
        };
        let (name_at, enabled_at, conninfo_at) =
            (col("subname"), col("subenabled"), col("subconninfo"));
        let (password_at, owner_at) = (col("subpasswordrequired"), col("subowner"));
        let database_at = col("subdbid");
        let natts = tupdesc.len();
        let scan = pg_sys::table_beginscan_catalog(rel, 0, core::ptr::null_mut());
        loop {
            let tup = pg_sys::heap_getnext(scan, pg_sys::ScanDirection::ForwardScanDirection);
            if tup.is_null() {
                break;
            }
            let mut values = vec![pg_sys::Datum::from(0); natts];
            let mut nulls = vec![true; natts];
            pg_sys::heap_deform_tuple(tup, desc, values.as_mut_ptr(), nulls.as_mut_ptr());
            let get = |at: Option<usize>| at.filter(|&i| !nulls[i]).map(|i| values[i]);
            let (Some(name), Some(enabled), Some(conninfo)) =
                (get(name_at), get(enabled_at), get(conninfo_at))
            else {
                continue;
            };
            let name = CStr::from_ptr(name.cast_mut_ptr::<c_char>())
                .to_string_lossy()
                .into_owned();
            if enabled.value() == 0 || name.starts_with("citus_") {
                continue;
            }
            let conninfo =
                CStr::from_ptr(pg_sys::text_to_cstring(conninfo.cast_mut_ptr())).to_owned();
            let password_required = get(password_at).is_some_and(|d| d.value() != 0);
            let owner =
                get(owner_at).map_or(pg_sys::InvalidOid, |d| pg_sys::Oid::from(d.value() as u32));
            let database = get(database_at)
                .map_or(pg_sys::InvalidOid, |d| pg_sys::Oid::from(d.value() as u32));
            out.push(Subscription {
                name,
                database,
                conninfo,
                must_use_password: password_required && !pg_sys::superuser_arg(owner),
            });
        }
        pg_sys::table_endscan(scan);
        pg_sys::table_close(rel, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
    }
    out
}

/// libpqwalreceiver's functions (loaded once).
fn walrcv() -> &'static pg_sys::WalReceiverFunctionsType {
    // SAFETY: loading libpqwalreceiver sets WalReceiverFunctions, as CREATE SUBSCRIPTION does;
    // it stays loaded for the life of the process.
    unsafe {
        if pg_sys::WalReceiverFunctions.is_null() {
            pg_sys::load_file(c"libpqwalreceiver".as_ptr(), false);
        }
        &*pg_sys::WalReceiverFunctions
    }
}

/// Calls a function of libpqwalreceiver (reached through a pointer, so not wrapped by pgrx)
/// within pgrx's guard: a PostgreSQL ERROR becomes a Rust panic, never a longjmp across Rust.
///
/// # Safety
/// `f` calls PostgreSQL code.
unsafe fn guarded<T>(f: impl FnOnce() -> T) -> T {
    pg_sys::ffi::pg_guard_ffi_boundary(f)
}

/// A text from libpqwalreceiver.
fn text(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: a NUL-terminated string libpqwalreceiver made.
    unsafe { CStr::from_ptr(p) }
        .to_string_lossy()
        .trim()
        .to_string()
}

/// Runs `sql` over `conn`, every column read as text.
///
/// # Safety
/// `conn` is an open connection.
unsafe fn exec(
    conn: *mut pg_sys::WalReceiverConn,
    sql: &str,
    ncols: usize,
) -> Result<Vec<Vec<Option<String>>>, String> {
    let f = walrcv();
    let q = CString::new(sql).map_err(|e| e.to_string())?;
    let types = vec![pg_sys::TEXTOID; ncols];
    // Through pgrx's guard, as every call of a PostgreSQL function: an ERROR raised inside
    // becomes a Rust panic that the handshake's catch turns into a failure.
    let exec = f.walrcv_exec.expect("walrcv_exec");
    let res = guarded(|| exec(conn, q.as_ptr(), ncols as i32, types.as_ptr()));
    if (*res).status != pg_sys::WalRcvExecStatus::WALRCV_OK_TUPLES {
        let e = text((*res).err);
        pg_sys::walrcv_clear_result(res);
        return Err(e);
    }
    let mut rows = Vec::new();
    let slot =
        pg_sys::MakeSingleTupleTableSlot((*res).tupledesc, &raw const pg_sys::TTSOpsMinimalTuple);
    while pg_sys::tuplestore_gettupleslot((*res).tuplestore, true, false, slot) {
        pg_sys::slot_getsomeattrs_int(slot, ncols as i32);
        let row = (0..ncols)
            .map(|i| {
                (!*(*slot).tts_isnull.add(i)).then(|| {
                    text(pg_sys::text_to_cstring(
                        (*(*slot).tts_values.add(i)).cast_mut_ptr(),
                    ))
                })
            })
            .collect();
        rows.push(row);
    }
    pg_sys::ExecDropSingleTupleTableSlot(slot);
    pg_sys::walrcv_clear_result(res);
    Ok(rows)
}

/// What a publisher answered.
struct Answer {
    /// The publisher.
    publisher: Member,
    /// The members it met (the group beyond it: their rows may meet this server's there).
    known: Vec<Member>,
}

/// The publisher's answer over `conn`, `None` where it makes no sno IDs.
///
/// # Safety
/// `conn` is an open connection.
unsafe fn ask(conn: *mut pg_sys::WalReceiverConn, me: &Member) -> Result<Option<Answer>, String> {
    let schema = exec(
        conn,
        "SELECT n.nspname FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace \
         WHERE e.extname = 'sno' AND pg_catalog.to_regprocedure(pg_catalog.quote_ident(n.nspname) || '.sno_member_hello(bigint,integer,boolean,text)') IS NOT NULL",
        1,
    )?;
    if let Some(Some(schema)) = schema.first().and_then(|r| r.first()) {
        let sql = format!(
            "SELECT system_identifier::text, partition::text, made_ids::text, verdict FROM {}.sno_member_hello({}, {}, {}, '{}')",
            quote_ident(schema),
            me.id as i64,
            me.partition,
            me.made_ids,
            encode_known(&members::known())
        );
        let mut publisher = None;
        let mut known = Vec::new();
        for row in exec(conn, &sql, 4)? {
            let field = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
            let id: i64 = field(0)
                .parse()
                .map_err(|_| "a malformed answer".to_string())?;
            let partition: u16 = field(1)
                .parse()
                .map_err(|_| "a malformed answer".to_string())?;
            let m = Member {
                id: id as u64,
                partition,
                made_ids: field(2) == "true",
            };
            if field(3) == KNOWN {
                known.push(m);
            } else {
                publisher = Some(m);
            }
        }
        return Ok(publisher.map(|publisher| Answer { publisher, known }));
    }
    // No sno here (or an older one): the server's setting stands in; its IDs, if any, are
    // taken to have come first.
    let rows = exec(
        conn,
        "SELECT pg_catalog.current_setting('sno.partition', true)",
        1,
    )?;
    let partition = rows
        .first()
        .and_then(|r| r.first().cloned().flatten())
        .and_then(|v| v.parse::<i32>().ok())
        .and_then(|v| u16::try_from(v).ok());
    let Some(partition) = partition else {
        return Ok(None);
    };
    let mut tli: pg_sys::TimeLineID = 0;
    let f = walrcv();
    let identify = f.walrcv_identify_system.expect("walrcv_identify_system");
    let sysid = text(guarded(|| identify(conn, &mut tli)));
    let id: u64 = sysid
        .parse()
        .map_err(|_| format!("IDENTIFY_SYSTEM gave \"{sysid}\""))?;
    Ok(Some(Answer {
        publisher: Member {
            id,
            partition,
            made_ids: true,
        },
        known: Vec::new(),
    }))
}

/// The members a server met, as `sno_member_hello`'s `caller_known` carries them:
/// `id:partition:made_ids` (made_ids 0 or 1), comma-separated.
fn encode_known(known: &[Member]) -> String {
    known
        .iter()
        .map(|k| format!("{}:{}:{}", k.id, k.partition, u8::from(k.made_ids)))
        .collect::<Vec<_>>()
        .join(",")
}

/// The members in a `caller_known` text (what does not parse is left out).
fn decode_known(text: &str) -> Vec<Member> {
    text.split(',')
        .filter_map(|m| {
            let mut f = m.split(':');
            let id = f.next()?.parse().ok()?;
            let partition = f.next()?.parse().ok()?;
            let made_ids = match f.next()? {
                "0" => false,
                "1" => true,
                _ => return None,
            };
            Some(Member {
                id,
                partition,
                made_ids,
            })
        })
        .take(crate::generator::member::MAX_KNOWN)
        .collect()
}

fn quote_ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// Connects to `sub`'s publisher as its apply worker does.
///
/// # Safety
/// In a transaction.
unsafe fn connect(sub: &Subscription) -> Result<*mut pg_sys::WalReceiverConn, String> {
    let f = walrcv();
    let connect = f.walrcv_connect.expect("walrcv_connect");
    let app = c"sno member check";
    let mut err: *mut c_char = core::ptr::null_mut();
    #[cfg(feature = "pg15")]
    let conn = {
        let _ = sub.must_use_password;
        guarded(|| connect(sub.conninfo.as_ptr(), true, app.as_ptr(), &mut err))
    };
    #[cfg(feature = "pg16")]
    let conn = guarded(|| {
        connect(
            sub.conninfo.as_ptr(),
            true,
            sub.must_use_password,
            app.as_ptr(),
            &mut err,
        )
    });
    #[cfg(any(feature = "pg17", feature = "pg18"))]
    let conn = guarded(|| {
        connect(
            sub.conninfo.as_ptr(),
            true,
            true,
            sub.must_use_password,
            app.as_ptr(),
            &mut err,
        )
    });
    if conn.is_null() {
        Err(text(err))
    } else {
        Ok(conn)
    }
}

/// One handshake over `sub`, its errors caught (in a subtransaction, rolled back on an error),
/// within [`HANDSHAKE_TIMEOUT_MS`].
fn handshake(sub: &Subscription) -> Outcome {
    let Some(me) = members::me() else {
        return Outcome::Undecided;
    };
    let conn = std::cell::Cell::new(core::ptr::null_mut::<pg_sys::WalReceiverConn>());
    // SAFETY: PostgreSQL's pattern for an error caught and recovered from (as PL/pgSQL's
    // exception blocks): a subtransaction, released or rolled back, the memory context and
    // resource owner restored; the connection closed either way.
    unsafe {
        let context = pg_sys::CurrentMemoryContext;
        let owner = pg_sys::CurrentResourceOwner;
        pg_sys::BeginInternalSubTransaction(core::ptr::null());
        pg_sys::MemoryContextSwitchTo(context);
        // The worker bounds each handshake; a backend keeps its own statement_timeout.
        let worker = !pg_sys::MyBgworkerEntry.is_null();
        if worker {
            enable_timeout_after(STATEMENT_TIMEOUT, HANDSHAKE_TIMEOUT_MS);
        }
        let conn_ref = std::panic::AssertUnwindSafe(&conn);
        let outcome = PgTryBuilder::new(move || {
            let c = connect(sub).map_err(Outcome::Failed);
            let answer = match c {
                Ok(c) => {
                    conn_ref.set(c);
                    ask(c, &me)
                }
                Err(o) => {
                    return o;
                }
            };
            match answer {
                Ok(Some(a)) => match members::hear(a.publisher, &a.known, true) {
                    Some(h) => Outcome::Met(a.publisher, h.verdict, h.via),
                    None => Outcome::Undecided,
                },
                Ok(None) => Outcome::NoSno,
                Err(e) => Outcome::Failed(e),
            }
        })
        .catch_others(|e| {
            let message = match &e {
                pgrx::pg_sys::panic::CaughtError::PostgresError(r)
                | pgrx::pg_sys::panic::CaughtError::ErrorReport(r)
                | pgrx::pg_sys::panic::CaughtError::RustPanic { ereport: r, .. } => {
                    r.message().to_string()
                }
            };
            Outcome::Failed(message)
        })
        .execute();
        if worker {
            disable_timeout(STATEMENT_TIMEOUT, false);
        }
        let c = conn.replace(core::ptr::null_mut());
        if !c.is_null() {
            let disconnect = walrcv().walrcv_disconnect.expect("walrcv_disconnect");
            guarded(|| disconnect(c));
        }
        if matches!(outcome, Outcome::Failed(_)) {
            pg_sys::MemoryContextSwitchTo(context);
            pg_sys::RollbackAndReleaseCurrentSubTransaction();
        } else {
            pg_sys::ReleaseCurrentSubTransaction();
        }
        pg_sys::MemoryContextSwitchTo(context);
        pg_sys::CurrentResourceOwner = owner;
        outcome
    }
}

/// Compares this server with the other end of every subscription (`sno_member_check()` runs it
/// at once; the worker every 10 seconds). If every publisher answered, a refusal for a
/// partition this server no longer uses is lifted: the new one was compared with all of them.
fn round() -> Vec<(String, Outcome)> {
    let outcomes: Vec<_> = subscriptions()
        .into_iter()
        .map(|sub| {
            let o = handshake(&sub);
            (sub.name, o)
        })
        .collect();
    if !outcomes
        .iter()
        .any(|(_, o)| matches!(o, Outcome::Failed(_)))
    {
        members::lift_if_checked();
    }
    outcomes
}

/// The `verdict` of `sno_member_hello`'s rows that describe the members the answering server
/// met (the first row describes the answering server itself).
const KNOWN: &str = "known";

/// The publisher's half of a handshake: the caller (another server's sno, over its
/// subscription's connection) describes itself and the members it met; this server notes them,
/// decides for itself, and describes itself back, then the members it met (no row where it has
/// no partition yet, or sno is not preloaded). Each side thus learns the group beyond the
/// other: rows of a member with its partition would meet its own there.
#[pg_extern(volatile, parallel_unsafe)]
fn sno_member_hello(
    caller_id: i64,
    caller_partition: i32,
    caller_made_ids: bool,
    caller_known: &str,
) -> TableIterator<
    'static,
    (
        name!(system_identifier, i64),
        name!(partition, i32),
        name!(made_ids, bool),
        name!(verdict, String),
    ),
> {
    // SAFETY: plain reads of the current role's attributes.
    let allowed = unsafe { pg_sys::superuser() || pg_sys::has_rolreplication(pg_sys::GetUserId()) };
    if !allowed {
        errors::raise(Problem::MemberHelloDenied);
    }
    let Ok(partition) = u16::try_from(caller_partition) else {
        return TableIterator::new(None);
    };
    let peer = Member {
        id: caller_id as u64,
        partition,
        made_ids: caller_made_ids,
    };
    let row = |m: Member, v: &str| {
        (
            m.id as i64,
            i32::from(m.partition),
            m.made_ids,
            v.to_string(),
        )
    };
    let rows: Vec<_> = match members::hear(peer, &decode_known(caller_known), false) {
        Some(h) => std::iter::once(row(h.me, verdict_name(h.verdict)))
            .chain(h.known.into_iter().map(|k| row(k, KNOWN)))
            .collect(),
        None => Vec::new(),
    };
    TableIterator::new(rows)
}

fn verdict_name(v: Verdict) -> &'static str {
    match v {
        Verdict::Apart => "apart",
        Verdict::First => "goes on",
        Verdict::Second => "refused",
    }
}

/// The handshake with every subscription's publisher, at once: what each said and what this
/// server decided. Superusers only (it uses the subscriptions' credentials).
#[allow(clippy::type_complexity)]
#[pg_extern(volatile, parallel_unsafe)]
fn sno_member_check() -> TableIterator<
    'static,
    (
        name!(subscription, String),
        name!(peer_system_identifier, Option<i64>),
        name!(peer_partition, Option<i32>),
        name!(peer_made_ids, Option<bool>),
        name!(this_server, String),
    ),
> {
    // SAFETY: plain read of the current role's attribute.
    if !unsafe { pg_sys::superuser() } {
        errors::raise(Problem::MemberCheckNotSuperuser);
    }
    let rows: Vec<_> = round()
        .into_iter()
        .map(|(name, o)| match o {
            Outcome::Met(p, v, via) => (
                name,
                Some(p.id as i64),
                Some(i32::from(p.partition)),
                Some(p.made_ids),
                match via {
                    Some(k) if v != Verdict::Second => format!(
                        "refused: the server with system identifier {}, which this publisher met, uses partition {} and came first",
                        k.id, k.partition
                    ),
                    _ => verdict_name(v).to_string(),
                },
            ),
            Outcome::NoSno => (name, None, None, None, "apart: no sno there".to_string()),
            Outcome::Undecided => (
                name,
                None,
                None,
                None,
                "undecided: this server's derived partition is drawn at its first ID".to_string(),
            ),
            Outcome::Failed(e) => (name, None, None, None, format!("failed: {e}")),
        })
        .collect();
    TableIterator::new(rows)
}

/// The `sno lineage` worker's share of the member checks: every [`EVERY`], if there are
/// subscriptions, a round runs in a short-lived worker of its own (`sno member check`)
/// connected to the database of one of them (libpqwalreceiver reads query results through a
/// database's catalog; the lineage worker has none, so that it never holds a database someone
/// wants to drop or copy); without subscriptions, a refusal for a partition left is lifted at
/// once (there is nothing to compare a new one with). No worker slot is taken while there is no
/// subscription.
pub struct Rounds {
    next: std::time::Instant,
    running: Option<pgrx::bgworkers::DynamicBackgroundWorker>,
    /// The partition last recorded as made IDs with ([`members::keep_made`]).
    made: Option<u16>,
    /// When the server log was last told that no worker slot was free for a round.
    no_slot_told: Option<std::time::Instant>,
}

impl Rounds {
    pub fn new() -> Rounds {
        Rounds {
            next: std::time::Instant::now(),
            running: None,
            made: crate::generator::member::load_made(std::path::Path::new(".")),
            no_slot_told: None,
        }
    }

    /// Called by the lineage worker at each wake-up (a background worker between
    /// transactions).
    pub fn tick(&mut self) {
        members::keep_made(&mut self.made);
        let now = std::time::Instant::now();
        if now < self.next {
            return;
        }
        self.next = now + EVERY;
        if let Some(h) = &self.running {
            use pgrx::bgworkers::BackgroundWorkerStatus::NotYetStarted;
            if matches!(h.pid(), Ok(_) | Err(NotYetStarted)) {
                return;
            }
        }
        self.running = None;
        // SAFETY: a background worker between transactions.
        unsafe {
            pg_sys::SetCurrentStatementStartTimestamp();
            pg_sys::StartTransactionCommand();
        }
        let database = subscriptions().first().map(|s| s.database);
        // SAFETY: the transaction started above.
        unsafe { pg_sys::CommitTransactionCommand() };
        match database {
            None => members::lift_if_checked(),
            Some(db) => {
                self.running = BackgroundWorkerBuilder::new("sno member check")
                    .set_type("sno member check")
                    .set_library("sno")
                    .set_function("sno_member_check_main")
                    .set_argument(Some(pg_sys::Datum::from(u32::from(db))))
                    .enable_spi_access()
                    .set_start_time(pgrx::bgworkers::BgWorkerStartTime::RecoveryFinished)
                    .set_restart_time(None)
                    .load_dynamic()
                    .ok();
                if self.running.is_none()
                    && self
                        .no_slot_told
                        .is_none_or(|t| now.duration_since(t) >= std::time::Duration::from_secs(60))
                {
                    self.no_slot_told = Some(now);
                    pgrx::warning!("sno: no background worker slot was free for the sno member check worker: this server's partition is not compared with its subscriptions' publishers (tried every 10 s; raise max_worker_processes by one and restart the server)");
                }
            }
        }
    }
}

impl Default for Rounds {
    fn default() -> Self {
        Rounds::new()
    }
}

/// One round, in the database named by the argument, then out.
#[pg_guard]
#[no_mangle]
pub extern "C-unwind" fn sno_member_check_main(arg: pg_sys::Datum) {
    BackgroundWorker::attach_signal_handlers(SignalWakeFlags::SIGHUP | SignalWakeFlags::SIGTERM);
    let db = pg_sys::Oid::from(arg.value() as u32);
    BackgroundWorker::connect_worker_to_spi_by_oid(Some(db), None);
    // SAFETY: a background worker between transactions.
    unsafe {
        pg_sys::SetCurrentStatementStartTimestamp();
        pg_sys::StartTransactionCommand();
    }
    for (name, o) in round() {
        if let Outcome::Failed(e) = o {
            pgrx::log!("sno: could not compare partitions with the publisher of subscription \"{name}\": {e} (tried again every 10 s; SELECT * FROM sno_member_check(); shows it)");
        }
    }
    // SAFETY: the transaction started above; the normal way out of a background worker.
    unsafe {
        pg_sys::CommitTransactionCommand();
        pg_sys::pgstat_report_stat(false);
        pg_sys::proc_exit(0)
    }
}
