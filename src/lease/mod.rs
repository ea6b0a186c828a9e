//! Partition leases on the client side: a generator for services that stamps sno IDs only
//! inside a lease the database granted (`sno_lease_acquire`), so that no two generators can
//! make the same ID, whatever their clocks say.
//!
//! A lease is a partition of the reserved range, a slice `[sequence_min, sequence_max]` of its
//! sequence numbers and a window `[not_before, expires_at)` of whole 4 ms units. A
//! [`LeasedGenerator`] stamps IDs only with units inside the window and sequence numbers inside
//! the slice, never one (unit, sequence) twice within a lease; outside the window the caller
//! gets a [`GenerateError`], never an ID. It is pure: no database driver, no runtime (feature
//! `lease`). Taking the lease and renewing it in the background is the job of a driver's
//! keeper: `lease::postgres::LeaseKeeper` (feature `lease-postgres`, a thread) and
//! `lease::tokio_postgres::LeaseKeeper` (feature `lease-tokio-postgres`, a tokio task), which
//! follow the rules every client must follow:
//!
//! 1. stamp only inside the window and the slice ([`LeasedGenerator`]); when the clock is
//!    before `not_before` (behind the registry's), wait up to [`LeaseConfig::max_clock_wait`],
//!    then refuse;
//! 2. renew at `renew_after` with the same TTL and adopt the later `expires_at`
//!    ([`LeasedGenerator::renewed`]); on SQLSTATE 55000 or 42501 acquire a new lease, switch to
//!    it ([`LeasedGenerator::replace`]) and release the old one; on any other error retry with
//!    a [`Backoff`], stamping until the window's end and refusing after it;
//! 3. a forked child never uses its parent's lease: the generator records the process that
//!    acquired it and refuses in any other ([`GenerateError::Forked`]);
//! 4. release on shutdown (best effort).
//!
//! Generation makes no round trip: one clock reading and a short critical section that updates
//! (unit, sequence) together. When a unit's slice is used up the generator goes on with the next
//! unit while it is inside the window (IDs stay increasing; a burst borrows units ahead of the
//! clock, so the sustained rate is the slice's size times 250 a second); when the clock goes
//! back it keeps stamping from the last unit it used, inside the window, with the tick-tock bit
//! always 0.
//!
//! ```
//! use sno::lease::{Lease, LeasedGenerator, Token};
//! use std::time::{Duration, SystemTime};
//!
//! // A lease as sno_lease_acquire returns it (here made up: a window of the next minute).
//! let unit = |t: SystemTime| sno::lease::unit_of(t).unwrap();
//! let now = SystemTime::now();
//! let not_before = sno::lease::unit_start(unit(now));
//! let lease = Lease {
//!     lease: 1,
//!     token: "0b6e4fd4-4b8e-4a43-8d2f-6d1c6a2f9e01".parse::<Token>().unwrap(),
//!     partition: 61440,
//!     sequence_min: 1024,
//!     sequence_max: 2047,
//!     not_before,
//!     expires_at: not_before + Duration::from_secs(60),
//!     holder: "example".into(),
//!     renew_after: not_before + Duration::from_secs(20),
//! };
//! let generator = LeasedGenerator::new(&lease).unwrap();
//! let id = generator.generate().unwrap();
//! assert_eq!(id.partition(), 61440);
//! assert!((1024..=2047).contains(&id.sequence()));
//! assert!(generator.generate().unwrap() > id);
//! ```

// The rooms, each importing only the ones before it here: `window` (the lease, its window,
// tokens, time in units), `generator` (the leased generator, its clock, fork detection),
// `config` (a keeper's configuration, the SQL of its calls, backoff), `keeper` (what a keeper
// deals in: grants, rows, the renewal rule, status), `driver` (what the two drivers share: the
// keeper less its calls, the row, the server's errors), then the drivers, which keep only
// their calls (blocking on a thread, awaited in a task).
mod config;
#[cfg(any(feature = "lease-postgres", feature = "lease-tokio-postgres"))]
mod driver;
mod generator;
mod keeper;
mod window;

#[cfg(feature = "lease-postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "lease-postgres")))]
pub mod postgres;
#[cfg(feature = "lease-tokio-postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "lease-tokio-postgres")))]
pub mod tokio_postgres;

#[cfg(test)]
mod tests;

pub use config::{Backoff, LeaseConfig, Sql};
pub use generator::{
    process_id, Clock, GenerateError, GeneratorOptions, LeasedGenerator, SystemClock,
};
pub use keeper::{
    after_renew_error, lease_from_columns, AfterRenewError, BadRow, KeeperStatus, LeaseGrant,
};
pub use window::{unit_of, unit_start, BadToken, Lease, LeaseError, Token, Window};
