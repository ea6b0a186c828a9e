//! Leases through `tokio-postgres` (feature `lease-tokio-postgres`): the three calls
//! ([`acquire`], [`renew`], [`release`]) on a [`Client`], and a [`LeaseKeeper`] that acquires
//! a lease, renews it in a tokio task with a connection of its own, switches to a new lease
//! when the old one cannot be renewed, and releases it on [`LeaseKeeper::shutdown`].
//!
//! ```no_run
//! use sno::lease::{tokio_postgres::LeaseKeeper, LeaseConfig};
//! use std::time::Duration;
//!
//! # async fn service() -> Result<(), Box<dyn std::error::Error>> {
//! let dsn = "host=/var/run/postgresql dbname=app user=orders";
//! let keeper = LeaseKeeper::start(
//!     LeaseConfig::new("orders-api").ttl(Duration::from_secs(60)),
//!     // Called again whenever the connection is lost: its own connection, in autocommit.
//!     move || async move {
//!         let (client, connection) = tokio_postgres::connect(dsn, tokio_postgres::NoTls).await?;
//!         tokio::spawn(connection);
//!         Ok(client)
//!     },
//! )
//! .await?;
//! let id = keeper.generate()?; // no round trip, no await
//! keeper.shutdown().await; // releases the lease
//! # Ok(()) }
//! ```
//!
//! The task runs on the runtime `start` is called on, which needs its timers (`enable_time`,
//! or `enable_all`). Each call is bounded by [`LeaseConfig::call_timeout`]: past it the
//! connection is dropped and the keeper connects again. While renewals fail the generator
//! stamps until the window's end, then refuses ([`GenerateError::Expired`]). `generate` never
//! awaits; it may sleep (block) up to [`LeaseConfig::max_clock_wait`] when this host's clock
//! is behind the registry's at the start of a lease: set it to zero to refuse at once instead.
//!
//! Dropping the keeper without `shutdown` stops the task, which still releases the lease if
//! the runtime goes on. A forked child (tokio does not survive a fork) cannot use the parent's
//! keeper: its generator refuses with [`GenerateError::Forked`] and dropping the keeper there
//! does nothing; start a new runtime and keeper in the child.

use super::config::LeaseConfig;
use super::driver::{self, forget_if_lost, read_grant, CallError, KeeperHandle, Renewal};
use super::generator::{GenerateError, LeasedGenerator};
use super::keeper::{BadRow, KeeperStatus, LeaseGrant};
use super::window::{Lease, LeaseError};
use crate::Sno;
use ::tokio_postgres::Client;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// An error of a lease call or of starting a keeper.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The server's error or the connection's. The SQLSTATEs of `sno_lease_*`: 42501 (the role
    /// may not lease, or a wrong token), 22023 (a TTL or a slice size out of range), 55000
    /// (the lease cannot be renewed: acquire another), 53400 (the role's limit of active
    /// leases, `sno.lease_limit`), 54000 (the reserved space used up), 25006 (a standby:
    /// connect to the primary), 22001 (a holder over 256 bytes).
    Db(::tokio_postgres::Error),
    /// The server returned a lease the generator cannot take.
    Lease(LeaseError),
    /// The server's row had a bad column.
    Row(BadRow),
    /// A call took longer than [`LeaseConfig::call_timeout`].
    Timeout,
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
        match self {
            Error::Db(e) => driver::connection_lost(e),
            Error::Timeout => true,
            _ => false,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Db(e) => driver::fmt_db(e, f),
            Error::Lease(e) => write!(f, "{e}"),
            Error::Row(e) => write!(f, "{e}"),
            Error::Timeout => f.write_str("a sno lease call timed out"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Db(e) => Some(e),
            Error::Lease(e) => Some(e),
            Error::Row(e) => Some(e),
            Error::Timeout => None,
        }
    }
}

impl From<::tokio_postgres::Error> for Error {
    fn from(e: ::tokio_postgres::Error) -> Error {
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

/// A call bounded by `config.call_timeout`.
async fn bounded<T>(
    config: &LeaseConfig,
    f: impl Future<Output = Result<T, ::tokio_postgres::Error>>,
) -> Result<T, Error> {
    match tokio::time::timeout(config.call_timeout, f).await {
        Ok(r) => Ok(r?),
        Err(_) => Err(Error::Timeout),
    }
}

/// `sno_lease_acquire`: a new lease for `config.holder`, `config.ttl` and `config.sequences`.
pub async fn acquire(client: &Client, config: &LeaseConfig) -> Result<LeaseGrant, Error> {
    let sequences = i32::try_from(config.sequences).unwrap_or(i32::MAX);
    let sql = config.sql().acquire;
    let row = bounded(
        config,
        client.query_one(&sql, &[&config.holder, &config.ttl_micros(), &sequences]),
    )
    .await?;
    read_grant(&row)
}

/// `sno_lease_renew`: the same lease with a later `expires_at`.
pub async fn renew(
    client: &Client,
    config: &LeaseConfig,
    lease: &Lease,
) -> Result<LeaseGrant, Error> {
    let sql = config.sql().renew;
    let token = lease.token.to_string();
    let row = bounded(
        config,
        client.query_one(&sql, &[&lease.lease, &token, &config.ttl_micros()]),
    )
    .await?;
    read_grant(&row)
}

/// `sno_lease_release` (idempotent).
pub async fn release(client: &Client, config: &LeaseConfig, lease: &Lease) -> Result<(), Error> {
    let sql = config.sql().release;
    let token = lease.token.to_string();
    bounded(config, client.execute(&sql, &[&lease.lease, &token])).await?;
    Ok(())
}

/// A leased generator kept alive by a tokio task: see the [module](self).
pub struct LeaseKeeper {
    handle: KeeperHandle,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl fmt::Debug for LeaseKeeper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaseKeeper")
            .field("generator", self.handle.generator())
            .finish_non_exhaustive()
    }
}

impl LeaseKeeper {
    /// Connects, acquires a lease and spawns the renewal task on the current runtime.
    /// `connect` makes the keeper's own connection (and spawns its connection future), now and
    /// after each loss. An error here (the server's, such as 42501 for a role that may not
    /// lease, or the connection's) is returned as it is, without retrying.
    pub async fn start<F, Fut>(config: LeaseConfig, mut connect: F) -> Result<LeaseKeeper, Error>
    where
        F: FnMut() -> Fut + Send + 'static,
        Fut: Future<Output = Result<Client, ::tokio_postgres::Error>> + Send + 'static,
    {
        let client = bounded(&config, connect()).await?;
        let first = acquire(&client, &config).await?;
        let (handle, renewal) = Renewal::start(config, &first)?;
        let (stop, stopped) = oneshot::channel();
        let worker = RenewalTask {
            renewal,
            connect,
            client: Some(client),
        };
        let task = tokio::spawn(worker.run(stopped, first.renew_due()));
        Ok(LeaseKeeper {
            handle,
            stop: Some(stop),
            task: Some(task),
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

    /// Stops the renewals, stops the generator and releases the lease (best effort, within
    /// the call timeout), waiting for the task.
    pub async fn shutdown(mut self) {
        if self.handle.is_fork() {
            return; // Drop forgets the parent's task.
        }
        drop(self.stop.take());
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for LeaseKeeper {
    fn drop(&mut self) {
        if self.handle.is_fork() {
            // A fork: the task, its runtime and the lease are the parent's.
            std::mem::forget(self.stop.take());
            std::mem::forget(self.task.take());
            return;
        }
        // The task sees its channel closed, releases and ends (if the runtime goes on).
        drop(self.stop.take());
    }
}

/// The renewal task's state: the renewal, and the connection its calls await.
struct RenewalTask<F> {
    renewal: Renewal,
    connect: F,
    client: Option<Client>,
}

impl<F, Fut> RenewalTask<F>
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: Future<Output = Result<Client, ::tokio_postgres::Error>> + Send + 'static,
{
    async fn run(mut self, mut stopped: oneshot::Receiver<()>, mut due: Instant) {
        // Until stopped (a message, or the keeper dropped its sender).
        while tokio::time::timeout_at(tokio::time::Instant::from_std(due), &mut stopped)
            .await
            .is_err()
        {
            let r = self.step().await;
            due = self.renewal.next_due(r);
        }
        self.renewal.stop();
        let _ = self.call(release).await;
    }

    /// A call on the keeper's connection, connecting first if there is none (each bounded by
    /// the call timeout); a connection the call lost is forgotten (the next call connects
    /// again).
    async fn call<T>(
        &mut self,
        f: impl AsyncFnOnce(&Client, &LeaseConfig, &Lease) -> Result<T, Error>,
    ) -> Result<T, Error> {
        if self.client.is_none() {
            let fut = (self.connect)();
            self.client = Some(bounded(self.renewal.config(), fut).await?);
        }
        let client = self.client.as_ref().expect("connected");
        let r = f(client, self.renewal.config(), self.renewal.lease()).await;
        forget_if_lost(&mut self.client, r)
    }

    /// One renewal (or acquisition): when the next is due.
    async fn step(&mut self) -> Result<Instant, Error> {
        if self.renewal.renewing() {
            let r = self.call(renew).await;
            if let Some(due) = self.renewal.renewed(r)? {
                return Ok(due);
            }
        }
        let g = self
            .call(async |c, config, _| acquire(c, config).await)
            .await?;
        let old = self.renewal.acquired(&g)?;
        let _ = self
            .call(async |c, config, _| release(c, config, &old).await)
            .await;
        Ok(g.renew_due())
    }
}
