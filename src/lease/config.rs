//! How a keeper takes and renews its lease: its configuration, the SQL of the three calls, and
//! the backoff between retries. No driver: the drivers run this SQL and read its rows.

use super::generator::GeneratorOptions;
use std::time::Duration;

/// How a keeper takes and renews its lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseConfig {
    /// The holder's name, recorded with the lease (shown in `sno_leases`).
    pub holder: String,
    /// The lease's time to live: each renewal moves its end to about this far after the
    /// registry's clock. At most the server's `sno.lease_max_ttl` (default 10 minutes).
    /// Default: 1 minute.
    pub ttl: Duration,
    /// The slice's size: a power of two in 8..=65536 (default 1024). The generator makes at
    /// most this many IDs per 4 ms unit, 250 times that a second, sustained.
    pub sequences: u32,
    /// The schema of the extension's functions (unset: found on the search path).
    pub schema: Option<String>,
    /// How long `generate` waits when this host's clock is before the window (behind the
    /// registry's) before refusing. Default: 1 s.
    pub max_clock_wait: Duration,
    /// The longest pause between retries after an error (default 5 s; never more than a
    /// quarter of the TTL).
    pub max_backoff: Duration,
    /// The longest a call to the server may take before the keeper gives up on the connection
    /// and retries on a new one (tokio-postgres; the blocking `postgres` driver cannot bound
    /// a call: set TCP keepalives or `tcp_user_timeout` in its connect closure). Default 10 s.
    pub call_timeout: Duration,
}

impl LeaseConfig {
    /// The defaults with a holder name.
    pub fn new(holder: impl Into<String>) -> LeaseConfig {
        LeaseConfig {
            holder: holder.into(),
            ttl: Duration::from_secs(60),
            sequences: 1024,
            schema: None,
            max_clock_wait: Duration::from_secs(1),
            max_backoff: Duration::from_secs(5),
            call_timeout: Duration::from_secs(10),
        }
    }

    /// With another TTL.
    pub fn ttl(mut self, ttl: Duration) -> LeaseConfig {
        self.ttl = ttl;
        self
    }

    /// With another slice size.
    pub fn sequences(mut self, sequences: u32) -> LeaseConfig {
        self.sequences = sequences;
        self
    }

    /// With the functions' schema.
    pub fn schema(mut self, schema: impl Into<String>) -> LeaseConfig {
        self.schema = Some(schema.into());
        self
    }

    /// The generator's options.
    pub fn generator_options(&self) -> GeneratorOptions {
        GeneratorOptions {
            max_clock_wait: self.max_clock_wait,
        }
    }

    /// The TTL in whole microseconds (PostgreSQL's resolution), at least 1.
    pub fn ttl_micros(&self) -> i64 {
        i64::try_from(self.ttl.as_micros())
            .unwrap_or(i64::MAX)
            .max(1)
    }

    /// The backoff after errors.
    pub fn backoff(&self) -> Backoff {
        let max = self
            .max_backoff
            .min(self.ttl / 4)
            .max(Duration::from_millis(10));
        Backoff::new(Duration::from_millis(100).min(max), max)
    }

    /// The SQL of the three calls, with `schema` if set.
    pub fn sql(&self) -> Sql {
        Sql::new(self.schema.as_deref())
    }
}

/// Pauses between retries: doubling from `initial` up to `max`, each with a random quarter
/// off (so that a fleet does not retry in step).
#[derive(Clone, Debug)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    /// A backoff from `initial` to `max`.
    pub fn new(initial: Duration, max: Duration) -> Backoff {
        Backoff {
            initial,
            max,
            next: initial,
        }
    }

    /// The next pause.
    pub fn next_delay(&mut self) -> Duration {
        use std::hash::{BuildHasher, Hasher};
        let d = self.next;
        self.next = (self.next * 2).min(self.max);
        // RandomState's keys are random: a cheap jitter without a random number crate.
        let r = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        d - d.mul_f64((r % 1024) as f64 / 4096.0)
    }

    /// Back to the first pause (after a success).
    pub fn reset(&mut self) {
        self.next = self.initial;
    }
}

/// The three calls' SQL. Each returns the lease's columns in the order of
/// [`lease_from_columns`](crate::lease::lease_from_columns), then the registry's
/// `clock_timestamp()`; tokens go as text, TTLs as microseconds (`int8`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sql {
    /// `$1` holder, `$2` TTL (µs), `$3` sequences.
    pub acquire: String,
    /// `$1` lease, `$2` token, `$3` TTL (µs).
    pub renew: String,
    /// `$1` lease, `$2` token.
    pub release: String,
}

impl Sql {
    /// The calls, with the functions in `schema` (quoted) or on the search path.
    pub fn new(schema: Option<&str>) -> Sql {
        let prefix = match schema {
            Some(s) => format!("\"{}\".", s.replace('"', "\"\"")),
            None => String::new(),
        };
        let cols = "l.lease, l.token::text, l.partition, l.sequence_min, l.sequence_max, \
                    l.not_before, l.expires_at, l.holder, l.renew_after, \
                    pg_catalog.clock_timestamp()";
        let ttl = |n: u8| format!("${n}::int8 * interval '1 microsecond'");
        Sql {
            acquire: format!(
                "SELECT {cols} FROM {prefix}sno_lease_acquire(holder => $1::text, ttl => {}, \
                 sequences => $3::int4) AS l",
                ttl(2)
            ),
            renew: format!(
                "SELECT {cols} FROM {prefix}sno_lease_renew(lease => $1::int8, \
                 token => $2::text::uuid, ttl => {}) AS l",
                ttl(3)
            ),
            release: format!(
                "SELECT {prefix}sno_lease_release(lease => $1::int8, token => $2::text::uuid)"
            ),
        }
    }
}
