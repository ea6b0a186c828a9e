//! The `sno lineage` background worker: it keeps the durable lineage state in step with the
//! server's configuration and WAL timeline without waiting for the next `sno_generate`.
//!
//! Why: a copy of the data directory (a base backup, a clone) learns which partitions its
//! original uses from the state file it receives. A partition set with `sno.partition` and a
//! reload must be in that file before any copy is taken, even if the server makes no ID in
//! between; and a promoted standby should record its new incarnation (and its WAL record,
//! which cascaded standbys replay) at once. The worker judges the lineage
//! ([`crate::generator::lineage::State::judge`]) and writes it at start, at every configuration reload,
//! and once a second otherwise.
//!
//! Every 10 seconds it also starts the check of the server's partition against the publisher of
//! each of its subscriptions, when it has any ([`crate::pg::handshake::Rounds`]).
//!
//! It also renews the durable horizon ahead of need: `sno_generate` sets its latch when the
//! high-water mark comes within a second of the horizon on disk, and the worker writes and
//! flushes the state file and its WAL record while backends go on generating (holding only the
//! writer lock, see [`crate::pg::issuer::durable`]). It starts once recovery is over (on a standby: at promotion),
//! needs no database, and does nothing while the state is missing or unusable (that is for
//! `sno_generate`'s HINT and the administrator).

use crate::pg::shmem;
use core::time::Duration;
use pgrx::bgworkers::{BackgroundWorker, BackgroundWorkerBuilder, SignalWakeFlags};
use pgrx::prelude::*;

/// Registers the worker. Called from `_PG_init` while the postmaster preloads libraries.
pub fn init() {
    BackgroundWorkerBuilder::new("sno lineage")
        .set_type("sno lineage")
        .set_library("sno")
        .set_function("sno_lineage_main")
        .enable_spi_access()
        .set_restart_time(Some(Duration::from_secs(1)))
        .load();
}

/// The worker's main loop.
#[pg_guard]
#[no_mangle]
pub extern "C-unwind" fn sno_lineage_main(_arg: pg_sys::Datum) {
    BackgroundWorker::attach_signal_handlers(SignalWakeFlags::SIGHUP | SignalWakeFlags::SIGTERM);
    // No database: a full backend initialisation is what WAL insertion needs.
    BackgroundWorker::connect_worker_to_spi(None, None);
    let Some(s) = shmem::shared() else {
        return;
    };
    // Backends set it when the horizon needs renewing (`ask_for_renewal`).
    // SAFETY: MyLatch is this process's latch, in its PGPROC in shared memory.
    s.worker_latch.store(
        unsafe { pg_sys::MyLatch },
        core::sync::atomic::Ordering::Relaxed,
    );
    // Units opened when the worker last looked: none opened since means the server is idle
    // (at start too, so that the lease is written before the first ID if none comes at once).
    let mut opened = shmem::units_opened(s);
    // The member checks of a replicating group (every 10 s, only with subscriptions).
    let mut rounds = crate::pg::handshake::Rounds::new();
    loop {
        rounds.tick();
        // Every 200 ms while an idle lease is still to be written once IDs stop (so it is
        // written well within the short horizon), every second otherwise.
        let soon = crate::pg::issuer::settle(s, &mut opened);
        let nap = Duration::from_millis(if soon { 200 } else { 1000 });
        if !BackgroundWorker::wait_latch(Some(nap)) {
            break;
        }
        if BackgroundWorker::sighup_received() {
            // SAFETY: the standard reload of a process that received SIGHUP.
            unsafe { pg_sys::ProcessConfigFile(pg_sys::GucContext::PGC_SIGHUP) };
        }
    }
    // A clean stop (or the postmaster's death): the state file gets the last unit used instead
    // of the lease ahead of it. Safe whoever still makes IDs: the horizon in memory comes down
    // first, so a backend going on past it writes again (a terminated worker, not a shutdown,
    // does the same: the next write renews the lease).
    crate::pg::issuer::stop(s);
    // Exit code 1: the postmaster starts the worker again (a worker that exits with 0 is
    // unregistered), so an administrator's pg_terminate_backend does not silently turn it off.
    // At shutdown the postmaster restarts nothing.
    // SAFETY: the normal way out of a background worker.
    unsafe { pg_sys::proc_exit(1) }
}
