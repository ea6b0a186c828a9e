//! What the two drivers share (with feature `lease-postgres` or `lease-tokio-postgres`): a
//! keeper's state and its decisions after each call, less the calls themselves; the reading of
//! a call's row; the server's errors. `postgres.rs` and `tokio_postgres.rs` keep only what
//! differs: blocking calls on a thread, awaited calls (each bounded in time) in a task.
//!
//! The row and the error are tokio-postgres's in both drivers: the blocking `postgres` crate
//! runs tokio-postgres on a runtime of its own and re-exports its `Row` and `Error`. With both
//! features on, the two names are one type (a `postgres` built on another tokio-postgres would
//! not compile, rather than read rows another way).

use super::config::{Backoff, LeaseConfig};
use super::generator::{process_id, LeasedGenerator};
use super::keeper::{
    after_renew_error, lease_from_columns, AfterRenewError, BadRow, KeeperStatus, LeaseGrant,
};
use super::window::{Lease, LeaseError};
#[cfg(feature = "lease-postgres")]
use ::postgres::{Error as DbError, Row};
#[cfg(not(feature = "lease-postgres"))]
use ::tokio_postgres::{Error as DbError, Row};
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

// --- The row and the server's errors ---------------------------------------------------------

/// The lease a call's row grants (the columns of [`super::config::Sql`], in order), received
/// now.
pub(super) fn read_grant<E: From<DbError> + From<BadRow>>(row: &Row) -> Result<LeaseGrant, E> {
    let received = Instant::now();
    let lease = lease_from_columns(
        row.try_get(0)?,
        row.try_get::<_, &str>(1)?,
        row.try_get(2)?,
        row.try_get(3)?,
        row.try_get(4)?,
        row.try_get(5)?,
        row.try_get(6)?,
        row.try_get(7)?,
        row.try_get(8)?,
    )?;
    let server_now: SystemTime = row.try_get(9)?;
    Ok(LeaseGrant {
        lease,
        server_now,
        received,
    })
}

/// The server's SQLSTATE, if the server answered with an error.
pub(super) fn sqlstate(e: &DbError) -> Option<&str> {
    e.code().map(|c| c.code())
}

/// Whether the connection is unusable after this error (lost, or no server error to show for
/// it).
pub(super) fn connection_lost(e: &DbError) -> bool {
    e.is_closed() || e.as_db_error().is_none()
}

/// The server's message and SQLSTATE, or the connection's error.
pub(super) fn fmt_db(e: &DbError, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match e.as_db_error() {
        Some(db) => write!(f, "{} (SQLSTATE {})", db.message(), db.code().code()),
        None => write!(f, "{e}"),
    }
}

/// A driver's error, as the renewal sees it.
pub(super) trait CallError: fmt::Display {
    /// The server's SQLSTATE, if the server answered with an error.
    fn sqlstate(&self) -> Option<&str>;

    /// Whether the connection is unusable: the keeper connects again.
    fn connection_lost(&self) -> bool;
}

/// A call's result, the connection forgotten if the call lost it (the next call connects
/// again).
pub(super) fn forget_if_lost<C, T, E: CallError>(
    client: &mut Option<C>,
    r: Result<T, E>,
) -> Result<T, E> {
    if let Err(e) = &r {
        if e.connection_lost() {
            *client = None;
        }
    }
    r
}

// --- The keeper, less its calls --------------------------------------------------------------

/// What a keeper's handle holds: the generator, the status its renewal writes, and the process
/// that started it (in a fork the handle sees neither, and must not stop the renewal).
pub(super) struct KeeperHandle {
    generator: Arc<LeasedGenerator>,
    status: Arc<Mutex<KeeperStatus>>,
    pid: u32,
}

impl KeeperHandle {
    /// The generator.
    pub(super) fn generator(&self) -> &Arc<LeasedGenerator> {
        &self.generator
    }

    /// What the renewal has seen (nothing, in a fork).
    pub(super) fn status(&self) -> KeeperStatus {
        if self.is_fork() {
            return KeeperStatus::default();
        }
        self.status
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Whether this process is a fork of the one that started the keeper: the thread or task,
    /// the connection and the lease are the parent's.
    pub(super) fn is_fork(&self) -> bool {
        process_id() != self.pid
    }
}

/// A keeper's renewal between calls: the lease in use and what it decides after each call. The
/// driver makes the calls (on the keeper's own connection) and hands each result here.
pub(super) struct Renewal {
    config: LeaseConfig,
    lease: Lease,
    /// The lease cannot be renewed (55000, 42501): acquire a new one.
    need_new: bool,
    generator: Arc<LeasedGenerator>,
    status: Arc<Mutex<KeeperStatus>>,
    backoff: Backoff,
}

impl Renewal {
    /// A keeper started on its first lease: the generator on it, the handle and the renewal.
    pub(super) fn start(
        config: LeaseConfig,
        first: &LeaseGrant,
    ) -> Result<(KeeperHandle, Renewal), LeaseError> {
        let generator = Arc::new(LeasedGenerator::with_options(
            &first.lease,
            config.generator_options(),
        )?);
        let mut status = KeeperStatus::default();
        status.granted(&first.lease, true);
        let status = Arc::new(Mutex::new(status));
        let renewal = Renewal {
            backoff: config.backoff(),
            config,
            lease: first.lease.clone(),
            need_new: false,
            generator: generator.clone(),
            status: status.clone(),
        };
        let handle = KeeperHandle {
            generator,
            status,
            pid: process_id(),
        };
        Ok((handle, renewal))
    }

    /// The configuration, for the calls.
    pub(super) fn config(&self) -> &LeaseConfig {
        &self.config
    }

    /// The lease in use (its latest renewal), for the calls.
    pub(super) fn lease(&self) -> &Lease {
        &self.lease
    }

    /// Whether a step starts with a renewal (else with an acquisition).
    pub(super) fn renewing(&self) -> bool {
        !self.need_new
    }

    /// After a renewal: `Some` when to renew next; `None` when a new lease must be acquired now
    /// (the renewal was refused with 55000 or 42501, or renewed another lease than ours); an
    /// error to retry later.
    pub(super) fn renewed<E: CallError>(
        &mut self,
        r: Result<LeaseGrant, E>,
    ) -> Result<Option<Instant>, E> {
        match r {
            Ok(g) => match self.generator.renewed(&g.lease) {
                Ok(()) => {
                    self.note(|s| s.granted(&g.lease, false));
                    self.lease = g.lease.clone();
                    Ok(Some(g.renew_due()))
                }
                Err(e) => {
                    // Not the lease renewed: a server fault; take another lease.
                    self.note(|s| s.failed(&e));
                    self.need_new = true;
                    Ok(None)
                }
            },
            Err(e) if after_renew_error(e.sqlstate()) == AfterRenewError::AcquireNew => {
                self.note(|s| s.failed(&e));
                self.need_new = true;
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// After an acquisition: the generator switches to the new lease. The old one is returned,
    /// to be released (it may still be stamped until its end meanwhile, which the registry
    /// allows for: its slice is granted again only after that end).
    pub(super) fn acquired(&mut self, g: &LeaseGrant) -> Result<Lease, LeaseError> {
        self.generator.replace(&g.lease)?;
        self.note(|s| s.granted(&g.lease, true));
        let old = std::mem::replace(&mut self.lease, g.lease.clone());
        self.need_new = false;
        Ok(old)
    }

    /// After a step (a renewal, or an acquisition): when the next is due; after an error, noted,
    /// a backoff from now.
    pub(super) fn next_due<E: fmt::Display>(&mut self, r: Result<Instant, E>) -> Instant {
        match r {
            Ok(next) => {
                self.backoff.reset();
                next
            }
            Err(e) => {
                self.note(|s| s.failed(&e));
                Instant::now() + self.backoff.next_delay()
            }
        }
    }

    /// The keeper stopped: the generator stops stamping (the lease is released next).
    pub(super) fn stop(&self) {
        self.generator.revoke();
    }

    fn note(&self, f: impl FnOnce(&mut KeeperStatus)) {
        f(&mut self.status.lock().unwrap_or_else(|e| e.into_inner()));
    }
}
