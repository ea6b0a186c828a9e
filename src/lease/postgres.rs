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
//! then refuses ([`GenerateError::Expired`]).
//!
//! A forked child cannot use the parent's keeper: its generator refuses with
//! [`GenerateError::Forked`], and dropping the keeper there does nothing (no join of a thread
//! the child does not have, no release of the parent's lease, no use of the parent's
//! connection). Start a new keeper in the child.

use super::config::LeaseConfig;
use super::driver::{self, forget_if_lost, read_grant, CallError, KeeperHandle, Renewal};
use super::generator::{GenerateError, LeasedGenerator};
use super::keeper::{BadRow, KeeperStatus, LeaseGrant};
use super::window::{Lease, LeaseError};
use crate::Sno;
use ::postgres::Client;
use std::fmt;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

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
            Error::Db(e) => driver::sqlstate(e),
            _ => None,
        }
    }
}

impl CallError for Error {
    fn sqlstate(&self) -> Option<&str> {
        Error::sqlstate(self)
    }

    fn connection_lost(&self) -> bool {
        matches!(self, Error::Db(e) if driver::connection_lost(e))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Db(e) => driver::fmt_db(e, f),
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

impl From<BadRow> for Error {
    fn from(e: BadRow) -> Error {
        Error::Row(e)
    }
}

/// `sno_lease_acquire`: a new lease for `config.holder`, `config.ttl` and `config.sequences`.
pub fn acquire(client: &mut Client, config: &LeaseConfig) -> Result<LeaseGrant, Error> {
    let sequences = i32::try_from(config.sequences).unwrap_or(i32::MAX);
    let row = client.query_one(
        &config.sql().acquire,
        &[&config.holder, &config.ttl_micros(), &sequences],
    )?;
    read_grant(&row)
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
    read_grant(&row)
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
    handle: KeeperHandle,
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl fmt::Debug for LeaseKeeper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaseKeeper")
            .field("generator", self.handle.generator())
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
        let (handle, renewal) = Renewal::start(config, &first)?;
        let (stop, stopped) = mpsc::channel();
        let worker = RenewalThread {
            renewal,
            connect,
            client: Some(client),
        };
        let due = first.renew_due();
        let thread = std::thread::Builder::new()
            .name("sno-lease".into())
            .spawn(move || worker.run(stopped, due))
            .map_err(Error::Thread)?;
        Ok(LeaseKeeper {
            handle,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The generator (to share: it is an `Arc`).
    pub fn generator(&self) -> &Arc<LeasedGenerator> {
        self.handle.generator()
    }

    /// A new ID (meta 0): [`LeasedGenerator::generate`].
    pub fn generate(&self) -> Result<Sno, GenerateError> {
        self.handle.generator().generate()
    }

    /// The lease in use (its latest renewal).
    pub fn lease(&self) -> Option<Lease> {
        self.handle.generator().lease()
    }

    /// What the keeper has seen (renewals, failures, the last error).
    pub fn status(&self) -> KeeperStatus {
        self.handle.status()
    }

    /// Stops the renewals, stops the generator and releases the lease (best effort), waiting
    /// for the thread. Dropping the keeper does the same.
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        if self.handle.is_fork() {
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

/// The renewal thread's state: the renewal, and the connection its calls block on.
struct RenewalThread<F> {
    renewal: Renewal,
    connect: F,
    client: Option<Client>,
}

impl<F> RenewalThread<F>
where
    F: FnMut() -> Result<Client, ::postgres::Error>,
{
    fn run(mut self, stop: mpsc::Receiver<()>, mut due: Instant) {
        // Until stopped (the keeper dropped its sender).
        while let Err(RecvTimeoutError::Timeout) =
            stop.recv_timeout(due.saturating_duration_since(Instant::now()))
        {
            let r = self.step();
            due = self.renewal.next_due(r);
        }
        self.renewal.stop();
        let _ = self.call(release);
    }

    /// A call on the keeper's connection, connecting first if there is none; a connection the
    /// call lost is forgotten (the next call connects again).
    fn call<T>(
        &mut self,
        f: impl FnOnce(&mut Client, &LeaseConfig, &Lease) -> Result<T, Error>,
    ) -> Result<T, Error> {
        if self.client.is_none() {
            self.client = Some((self.connect)()?);
        }
        let client = self.client.as_mut().expect("just connected");
        let r = f(client, self.renewal.config(), self.renewal.lease());
        forget_if_lost(&mut self.client, r)
    }

    /// One renewal (or acquisition): when the next is due.
    fn step(&mut self) -> Result<Instant, Error> {
        if self.renewal.renewing() {
            let r = self.call(renew);
            if let Some(due) = self.renewal.renewed(r)? {
                return Ok(due);
            }
        }
        let g = self.call(|c, config, _| acquire(c, config))?;
        let old = self.renewal.acquired(&g)?;
        let _ = self.call(|c, config, _| release(c, config, &old));
        Ok(g.renew_due())
    }
}
