//! Leases through the blocking `postgres` driver (feature `lease-postgres`): the three calls
//! ([`acquire`], [`renew`], [`release`]) on a [`Client`], and a [`LeaseKeeper`] that acquires
//! a lease, renews it on a thread of its own with a connection of its own, switches to a new
//! lease when the old one cannot be renewed, and releases it when dropped.
//!
//! ```no_run
//! use sno::lease::{postgres::LeaseKeeper, LeaseConfig};
//! use std::time::Duration;
//!
//! let dsn = "host=/var/run/postgresql dbname=app user=orders";
//! let keeper = LeaseKeeper::start(
//!     LeaseConfig::new("orders-api").ttl(Duration::from_secs(60)),
//!     // Called again whenever the connection is lost: its own connection, in autocommit.
//!     move || postgres::Client::connect(dsn, postgres::NoTls),
//! )?;
//! let id = keeper.generate()?; // no round trip
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The keeper's connection is used for nothing else (calls must not run inside a transaction
//! block). The blocking driver cannot bound a call's time: give the connection TCP keepalives
//! or a `tcp_user_timeout` in the connect closure, so that a dead network ends the call and
//! the keeper reconnects. While renewals fail the generator stamps until the window's end,
//! then refuses ([`GenerateError::Expired`](super::GenerateError::Expired)).
//!
//! A forked child cannot use the parent's keeper: its generator refuses with
//! [`GenerateError::Forked`](super::GenerateError::Forked), and dropping the keeper there does
//! nothing (no join of a thread the child does not have, no release of the parent's lease, no
//! use of the parent's connection). Start a new keeper in the child.

use super::config::LeaseConfig;
use super::generator::{process_id, LeasedGenerator};
use super::keeper::{
    after_renew_error, lease_from_columns, AfterRenewError, BadRow, KeeperStatus, LeaseGrant,
};
use super::window::{Lease, LeaseError};
use crate::Sno;
use ::postgres::{Client, Row};
use std::fmt;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Instant, SystemTime};

/// An error of a lease call or of starting a keeper.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The server's error or the connection's. The SQLSTATEs of `sno_lease_*`: 42501 (the role
    /// may not lease, or a wrong token), 22023 (a TTL or a slice size out of range), 55000
    /// (the lease cannot be renewed: acquire another), 53400 (the role's limit of active
    /// leases, `sno.lease_limit`), 54000 (the reserved space used up), 25006 (a standby:
    /// connect to the primary), 22001 (a holder over 256 bytes).
    Db(::postgres::Error),
    /// The server returned a lease the generator cannot take.
    Lease(LeaseError),
    /// The server's row had a bad column.
    Row(BadRow),
    /// The renewal thread could not be started.
    Thread(std::io::Error),
}

impl Error {
    /// The server's SQLSTATE, if the server answered with an error.
    pub fn sqlstate(&self) -> Option<&str> {
        match self {
            Error::Db(e) => e.code().map(|c| c.code()),
            _ => None,
        }
    }

    /// Whether the connection is unusable (lost, or no server error to show for it): the
    /// keeper connects again.
    fn connection_lost(&self) -> bool {
        match self {
            Error::Db(e) => e.is_closed() || e.as_db_error().is_none(),
            _ => false,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Db(e) => match e.as_db_error() {
                Some(db) => write!(f, "{} (SQLSTATE {})", db.message(), db.code().code()),
                None => write!(f, "{e}"),
            },
            Error::Lease(e) => write!(f, "{e}"),
            Error::Row(e) => write!(f, "{e}"),
            Error::Thread(e) => write!(f, "the sno lease renewal thread could not start: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Db(e) => Some(e),
            Error::Lease(e) => Some(e),
            Error::Row(e) => Some(e),
            Error::Thread(e) => Some(e),
        }
    }
}

impl From<::postgres::Error> for Error {
    fn from(e: ::postgres::Error) -> Error {
        Error::Db(e)
    }
}

impl From<LeaseError> for Error {
    fn from(e: LeaseError) -> Error {
        Error::Lease(e)
    }
}

fn granted(row: &Row) -> Result<LeaseGrant, Error> {
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
    )
    .map_err(Error::Row)?;
    let server_now: SystemTime = row.try_get(9)?;
    Ok(LeaseGrant {
        lease,
        server_now,
        received,
    })
}

/// `sno_lease_acquire`: a new lease for `config.holder`, `config.ttl` and `config.sequences`.
pub fn acquire(client: &mut Client, config: &LeaseConfig) -> Result<LeaseGrant, Error> {
    let sequences = i32::try_from(config.sequences).unwrap_or(i32::MAX);
    let row = client.query_one(
        &config.sql().acquire,
        &[&config.holder, &config.ttl_micros(), &sequences],
    )?;
    granted(&row)
}

/// `sno_lease_renew`: the same lease with a later `expires_at`.
pub fn renew(
    client: &mut Client,
    config: &LeaseConfig,
    lease: &Lease,
) -> Result<LeaseGrant, Error> {
    let row = client.query_one(
        &config.sql().renew,
        &[&lease.lease, &lease.token.to_string(), &config.ttl_micros()],
    )?;
    granted(&row)
}

/// `sno_lease_release` (idempotent).
pub fn release(client: &mut Client, config: &LeaseConfig, lease: &Lease) -> Result<(), Error> {
    client.execute(
        &config.sql().release,
        &[&lease.lease, &lease.token.to_string()],
    )?;
    Ok(())
}

/// A leased generator kept alive by a thread: see the [module](self).
pub struct LeaseKeeper {
    generator: Arc<LeasedGenerator>,
    status: Arc<Mutex<KeeperStatus>>,
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    pid: u32,
}

impl fmt::Debug for LeaseKeeper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaseKeeper")
            .field("generator", &self.generator)
            .finish_non_exhaustive()
    }
}

impl LeaseKeeper {
    /// Connects, acquires a lease and starts the renewal thread. `connect` makes the keeper's
    /// own connection, now and after each loss. An error here (the server's, such as 42501
    /// for a role that may not lease, or the connection's) is returned as it is, without
    /// retrying.
    pub fn start<F>(config: LeaseConfig, mut connect: F) -> Result<LeaseKeeper, Error>
    where
        F: FnMut() -> Result<Client, ::postgres::Error> + Send + 'static,
    {
        let mut client = connect()?;
        let first = acquire(&mut client, &config)?;
        let generator = Arc::new(LeasedGenerator::with_options(
            &first.lease,
            config.generator_options(),
        )?);
        let mut status = KeeperStatus::default();
        status.granted(&first.lease, true);
        let status = Arc::new(Mutex::new(status));
        let (stop, stopped) = mpsc::channel();
        let worker = Worker {
            backoff: config.backoff(),
            config,
            connect,
            client: Some(client),
            lease: first.lease.clone(),
            need_new: false,
            generator: generator.clone(),
            status: status.clone(),
        };
        let due = first.renew_due();
        let thread = std::thread::Builder::new()
            .name("sno-lease".into())
            .spawn(move || worker.run(stopped, due))
            .map_err(Error::Thread)?;
        Ok(LeaseKeeper {
            generator,
            status,
            stop: Some(stop),
            thread: Some(thread),
            pid: process_id(),
        })
    }

    /// The generator (to share: it is an `Arc`).
    pub fn generator(&self) -> &Arc<LeasedGenerator> {
        &self.generator
    }

    /// A new ID (meta 0): [`LeasedGenerator::generate`].
    pub fn generate(&self) -> Result<Sno, super::GenerateError> {
        self.generator.generate()
    }

    /// The lease in use (its latest renewal).
    pub fn lease(&self) -> Option<Lease> {
        self.generator.lease()
    }

    /// What the keeper has seen (renewals, failures, the last error).
    pub fn status(&self) -> KeeperStatus {
        if process_id() != self.pid {
            return KeeperStatus::default();
        }
        self.status
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Stops the renewals, stops the generator and releases the lease (best effort), waiting
    /// for the thread. Dropping the keeper does the same.
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        if process_id() != self.pid {
            // A fork: the thread, the connection and the lease are the parent's.
            std::mem::forget(self.stop.take());
            std::mem::forget(self.thread.take());
            return;
        }
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for LeaseKeeper {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// The renewal thread's state.
struct Worker<F> {
    config: LeaseConfig,
    connect: F,
    client: Option<Client>,
    lease: Lease,
    /// The lease cannot be renewed (55000, 42501): acquire a new one.
    need_new: bool,
    generator: Arc<LeasedGenerator>,
    status: Arc<Mutex<KeeperStatus>>,
    backoff: super::Backoff,
}

impl<F> Worker<F>
where
    F: FnMut() -> Result<Client, ::postgres::Error>,
{
    fn run(mut self, stop: mpsc::Receiver<()>, mut due: Instant) {
        // Until stopped (the keeper dropped its sender).
        while let Err(RecvTimeoutError::Timeout) =
            stop.recv_timeout(due.saturating_duration_since(Instant::now()))
        {
            due = match self.step() {
                Ok(next) => {
                    self.backoff.reset();
                    next
                }
                Err(e) => {
                    self.note(|s| s.failed(&e));
                    Instant::now() + self.backoff.next_delay()
                }
            };
        }
        self.generator.revoke();
        let (lease, config) = (self.lease.clone(), self.config.clone());
        if let Ok(c) = self.client() {
            let _ = release(c, &config, &lease);
        }
    }

    fn note(&self, f: impl FnOnce(&mut KeeperStatus)) {
        f(&mut self.status.lock().unwrap_or_else(|e| e.into_inner()));
    }

    fn client(&mut self) -> Result<&mut Client, Error> {
        if self.client.is_none() {
            self.client = Some((self.connect)()?);
        }
        Ok(self.client.as_mut().expect("just connected"))
    }

    /// Forgets a connection that is lost (the next step connects again).
    fn check<T>(&mut self, r: Result<T, Error>) -> Result<T, Error> {
        if let Err(e) = &r {
            if e.connection_lost() {
                self.client = None;
            }
        }
        r
    }

    /// One renewal (or acquisition): when the next is due.
    fn step(&mut self) -> Result<Instant, Error> {
        if !self.need_new {
            let lease = self.lease.clone();
            let config = self.config.clone();
            let r = self.client().and_then(|c| renew(c, &config, &lease));
            match self.check(r) {
                Ok(g) => match self.generator.renewed(&g.lease) {
                    Ok(()) => {
                        self.note(|s| s.granted(&g.lease, false));
                        self.lease = g.lease.clone();
                        return Ok(g.renew_due());
                    }
                    Err(e) => {
                        // Not the lease renewed: a server fault; take another lease.
                        self.note(|s| s.failed(&e));
                        self.need_new = true;
                    }
                },
                Err(e) if after_renew_error(e.sqlstate()) == AfterRenewError::AcquireNew => {
                    self.note(|s| s.failed(&e));
                    self.need_new = true;
                }
                Err(e) => return Err(e),
            }
        }
        let config = self.config.clone();
        let r = self.client().and_then(|c| acquire(c, &config));
        let g = self.check(r)?;
        self.generator.replace(&g.lease)?;
        self.note(|s| s.granted(&g.lease, true));
        let old = std::mem::replace(&mut self.lease, g.lease.clone());
        self.need_new = false;
        // The old lease: released (it may still be stamped until its end meanwhile, which the
        // registry allows for: its slice is granted again only after that end).
        let r = self.client().and_then(|c| release(c, &config, &old));
        let _ = self.check(r);
        Ok(g.renew_due())
    }
}
