//! What a keeper deals in, whatever its driver: a lease as a call granted it and when to renew
//! it, the lease read from a `sno_lease` row, the rule after a failed renewal, and the status a
//! keeper reports.

use super::window::Lease;
use std::fmt;
use std::time::{Duration, Instant, SystemTime};

/// A lease as a call returned it, with the registry's clock at the time and the local instant
/// the answer came.
#[derive(Clone, Debug)]
pub struct LeaseGrant {
    /// The lease.
    pub lease: Lease,
    /// The registry's clock (`clock_timestamp()`) when it answered.
    pub server_now: SystemTime,
    /// When the answer came, by this host's monotonic clock.
    pub received: Instant,
}

impl LeaseGrant {
    /// When to renew, by this host's monotonic clock: `renew_after` as far after the answer as
    /// it was after the registry's clock then (so skew between the clocks does not matter),
    /// never later than halfway to `expires_at` and never sooner than 10 ms.
    pub fn renew_due(&self) -> Instant {
        let until = |t: SystemTime| t.duration_since(self.server_now).unwrap_or(Duration::ZERO);
        let delay = until(self.lease.renew_after)
            .min(until(self.lease.expires_at) / 2)
            .max(Duration::from_millis(10));
        self.received + delay
    }
}

/// Builds a lease from the columns of a `sno_lease` row, as a driver reads them.
#[allow(clippy::too_many_arguments)]
pub fn lease_from_columns(
    lease: i64,
    token: &str,
    partition: i32,
    sequence_min: i32,
    sequence_max: i32,
    not_before: SystemTime,
    expires_at: SystemTime,
    holder: Option<String>,
    renew_after: SystemTime,
) -> Result<Lease, BadRow> {
    let u16_of = |what: &'static str, v: i32| u16::try_from(v).map_err(|_| BadRow(what));
    Ok(Lease {
        lease,
        token: token.parse().map_err(|_| BadRow("token"))?,
        partition: u16_of("partition", partition)?,
        sequence_min: u16_of("sequence_min", sequence_min)?,
        sequence_max: u16_of("sequence_max", sequence_max)?,
        not_before,
        expires_at,
        holder: holder.unwrap_or_default(),
        renew_after,
    })
}

/// A `sno_lease` row with a column out of its range (or NULL): the column's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadRow(pub &'static str);

impl fmt::Display for BadRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the server's sno_lease row has a bad {}", self.0)
    }
}

impl std::error::Error for BadRow {}

/// What a keeper does after an error from `sno_lease_renew`, by SQLSTATE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterRenewError {
    /// 55000 (the lease expired, was released or handed on, or predates a failover) or 42501
    /// (the token no longer matches): acquire a new lease and switch to it.
    AcquireNew,
    /// Anything else (no SQLSTATE: the connection): retry with backoff, stamping until the
    /// window's end.
    Retry,
}

/// The rule for an error of `sno_lease_renew` with this SQLSTATE (`None`: no server error).
pub fn after_renew_error(sqlstate: Option<&str>) -> AfterRenewError {
    match sqlstate {
        Some("55000") | Some("42501") => AfterRenewError::AcquireNew,
        _ => AfterRenewError::Retry,
    }
}

/// What a keeper has seen: for logs and metrics (renewals failing).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeeperStatus {
    /// The lease in use.
    pub lease: Option<i64>,
    /// Its window's end as last renewed.
    pub expires_at: Option<SystemTime>,
    /// Renewals that worked.
    pub renewals: u64,
    /// Leases acquired (the first one included).
    pub acquired: u64,
    /// Calls that failed (renewals, acquisitions, connections).
    pub failures: u64,
    /// Failures since the last call that worked.
    pub failing: u64,
    /// The last failure's message.
    pub last_error: Option<String>,
}

impl KeeperStatus {
    /// Notes a lease acquired (`new`) or renewed.
    pub fn granted(&mut self, lease: &Lease, new: bool) {
        self.lease = Some(lease.lease);
        self.expires_at = Some(lease.expires_at);
        if new {
            self.acquired += 1;
        } else {
            self.renewals += 1;
        }
        self.failing = 0;
    }

    /// Notes a failed call.
    pub fn failed(&mut self, error: &dyn fmt::Display) {
        self.failures += 1;
        self.failing += 1;
        self.last_error = Some(error.to_string());
    }
}
