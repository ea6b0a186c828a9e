//! The generator in PostgreSQL: `sno_generate` ([`hot`]: the fast path, the slow path under
//! the lock, waiting for the clock), the durable state and the lineage ([`durable`]: the state
//! file and WAL record, `sno_generator_initialize`, the judgment after a copy or promotion) and
//! monitoring ([`monitor`]: the views' functions). The decisions are pure, in
//! [`crate::generator`]; this is where they meet shared memory, the lock, files and WAL.
//!
//! `sno_generate(meta)`: IDs made inside the database, never twice the same.
//!
//! Fast path (almost every call): read the wall clock, and if it is still in the unit of this
//! backend's lease, take the lease's next sequence number. No lock, no shared memory write
//! other than this backend's own statistics slot, no allocation but the 10-byte result.
//!
//! Slow path (a new unit, a used-up lease, a clock regression): take the shard table's LWLock,
//! read the clock again under it (so that two backends reading the clock a moment apart never
//! mistake each other's readings for a regression), and ask the [`Timeline`] for a lease. A
//! wait (full unit, clock behind) happens outside the lock, on the process latch, so a query
//! cancel or a postmaster death ends it; `sno.max_clock_wait` bounds it.
//!
//! A backend that exits leaves its unused lease unused: leases only move forward within a
//! (unit, timeline), so nobody can be handed those numbers again.

pub mod durable;
pub mod hot;
pub mod monitor;

pub use durable::{replay, settle};

use crate::pg::errors::{self, Problem};

use crate::pg::gucs;
use crate::pg::shmem::{self, Shared};
use core::sync::atomic::Ordering::Relaxed;
use pgrx::pg_sys;

/// The shard table, or the error a user can act on.
pub(super) fn shared_or_raise() -> &'static Shared {
    match shmem::shared() {
        Some(s) => s,
        None if shmem::preloaded() => errors::raise(Problem::NoSharedMemory),
        None => errors::raise(Problem::NotPreloaded),
    }
}

/// The partition to write: `sno.partition`, or the one derived from the system identifier.
pub fn effective_partition(s: &Shared) -> (u16, &'static str) {
    match gucs::partition() {
        Some(p) => (p, "sno.partition"),
        None => (
            s.derived_partition.load(Relaxed) as u16,
            "system identifier",
        ),
    }
}

/// The WAL timeline new WAL is written on (outside recovery).
pub(super) fn wal_timeline() -> u32 {
    // SAFETY: plain read of shared state; only called once recovery has ended.
    unsafe { pg_sys::GetWALInsertionTimeLine() }
}
