//! The issuer: where the generator's decisions meet PostgreSQL. `sno_generate` ([`hot`]: the
//! fast path, the slow path under the lock, waiting for the clock), the durable state and the
//! lineage ([`durable`]: the state file and WAL record, `sno_generator_initialize`, the judgment
//! after a copy or promotion; [`host`]: PostgreSQL's clock, lock, files and WAL handed to the
//! pure room), IDs for past times ([`at`]), partition leases ([`lease`], decided by the registry
//! worker: [`lease_worker`], [`lease_registry`], [`lease_request`]), monitoring ([`monitor`]:
//! the views' functions), a replicating group's members ([`members`]: the refusal of a partition
//! another member came first with), and [`compat`]: the C symbols of released versions whose SQL changed
//! since, for a database not yet updated. The decisions are pure, in [`crate::generator`]
//! ([`crate::generator::server`] above all); this is where they meet shared memory, the lock,
//! files and WAL.
//!
//! `sno_generate(meta)`: IDs made inside the database, never twice the same.
//!
//! Fast path (almost every call): read the wall clock, and if the shared cursor serves that
//! unit, increment it (one atomic instruction, no lock) and check that the partition this
//! backend read is still the judged one (the epoch). No allocation but the 10-byte result.
//!
//! Slow path (the first call in a new unit, a used-up unit, a clock regression, a new epoch):
//! take the shard table's LWLock, read the clock again under it (so that two backends reading
//! the clock a moment apart never mistake each other's readings for a regression), and let the
//! [`Timeline`] open the cursor on the clock's unit. A wait (full unit, clock behind) happens
//! outside the lock, on the process latch, so a query cancel or a postmaster death ends it;
//! `sno.max_clock_wait` bounds it. A write of the durable state happens outside the lock too
//! (holding only the writer lock), and only when the horizon on disk does not cover the unit.
//!
//! [`Timeline`]: crate::generator::timeline::Timeline

pub mod at;
pub mod compat;
pub mod durable;
pub mod host;
pub mod hot;
pub mod lease;
pub mod lease_registry;
pub mod lease_request;
pub mod lease_worker;
pub mod members;
pub mod monitor;

pub use durable::{replay, replay_grant, settle, stop};

use crate::pg::errors::{self, Problem};

use crate::pg::shmem::{self, Shared};
use pgrx::pg_sys;

/// The shard table, or the error a user can act on.
pub(super) fn shared_or_raise() -> &'static Shared {
    match shmem::shared() {
        Some(s) => s,
        None if shmem::preloaded() => errors::raise(Problem::NoSharedMemory),
        None => errors::raise(Problem::NotPreloaded),
    }
}

/// The WAL timeline new WAL is written on (outside recovery).
pub(super) fn wal_timeline() -> u32 {
    // SAFETY: plain read of shared state; only called once recovery has ended.
    unsafe { pg_sys::GetWALInsertionTimeLine() }
}
