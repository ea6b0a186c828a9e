//! The server's generator ([`crate::generator::server`]) hosted by PostgreSQL: its lock is the
//! shard table's LWLock, its memory the shard table in shared memory, its clock
//! `CLOCK_REALTIME`, its file the state file, its WAL the `sno` resource manager's records, its
//! notes the server log, its waits the process latch. Translation only: every decision is the
//! pure room's.

use crate::generator::citus::Source;
use crate::generator::cursor::Cursor;
use crate::generator::lineage::State;
use crate::generator::server::{self, FileState, Host, Memory, Note, SlowError, Wait};
use crate::id::time::{units_from_timespec, units_to_pg_micros, units_to_unix_nanos};
use crate::pg::errors::{self, Problem};
use crate::pg::gucs;
use crate::pg::shmem::{self, Shared};
use core::sync::atomic::Ordering::{Acquire, Relaxed};
use pgrx::pg_sys;

/// The shard table as the pure room's host.
#[derive(Clone, Copy)]
pub(super) struct PgHost(pub(super) &'static Shared);

impl Host for PgHost {
    type Instant = std::time::Instant;

    fn locked<R>(&self, f: impl FnOnce(&mut Memory) -> R) -> R {
        shmem::locked(self.0, f)
    }

    fn locked_silently(&self, f: impl FnOnce(&mut Memory)) {
        shmem::locked_silently(self.0, f)
    }

    fn cursor(&self) -> &Cursor {
        &self.0.hot.cursor
    }

    fn clock(&self) -> u64 {
        clock_units()
    }

    fn file_state(&self) -> FileState {
        FileState::from_u32(self.0.state.load(Relaxed))
    }

    fn set_file_ready(&self) {
        self.0.state.store(shmem::STATE_READY, Relaxed);
    }

    fn source(&self) -> Source {
        source(self.0)
    }

    fn citus_loaded(&self) -> bool {
        crate::pg::citus::loaded()
    }

    fn draw(&self) -> u64 {
        shmem::draw()
    }

    fn lineage_changed(&self, st: &State) {
        shmem::publish_lineage(self.0, *st);
    }

    fn publish(&self, partition: u16, group: u32) {
        self.0.partition.store(u32::from(partition), Relaxed);
        self.0.citus_group.store(group, Relaxed);
    }

    fn new_epoch(&self) {
        shmem::new_epoch(self.0);
    }

    fn epoch(&self) -> u64 {
        self.0.epoch.load(Acquire)
    }

    fn partition(&self) -> u16 {
        self.0.partition.load(Relaxed) as u16
    }

    fn round(&self) -> u64 {
        self.0.round.load(Relaxed)
    }

    fn note(&self, n: Note) {
        match n {
            // Under the lock: written once it is released.
            Note::NewDerivedPartition { file } => {
                let lost = if file == FileState::Missing {
                    "the generator state file was missing".to_string()
                } else {
                    format!(
                        "the generator state file was unusable ({})",
                        self.0.reason()
                    )
                };
                errors::log_later(Problem::NewDerivedPartition { lost: &lost });
            }
            Note::TookOver {
                partition,
                by_take_over,
            } => {
                let p = Problem::TookOver {
                    partition,
                    by_take_over,
                };
                // At a promotion it is the server's news, not the session's that noticed it.
                if by_take_over {
                    errors::warn_later(p);
                } else {
                    errors::log_later(p);
                }
            }
            // Outside the lock.
            Note::Flip {
                tick,
                clock_went_back,
            } => {
                if clock_went_back {
                    pgrx::log!("sno: the system clock went back; IDs now use tick-tock bit {tick}");
                } else {
                    pgrx::log!(
                        "sno: time already used with this partition (before a restart, or by the server this one took over from) is ahead of the clock; IDs now use tick-tock bit {tick}"
                    );
                }
            }
        }
    }

    fn put_file(&self, st: &State) -> std::io::Result<()> {
        put_file(self.0, st)
    }

    fn log_record(&self, st: &State, timeline: u32, unimportant: bool) -> u64 {
        crate::pg::wal::log_lineage(st, timeline, unimportant)
    }

    fn flush(&self, lsn: u64) {
        crate::pg::wal::flush(lsn)
    }

    fn set_lineage_lsn(&self, lsn: u64) {
        self.0.lineage_lsn.store(lsn, Relaxed);
    }

    fn count_write(&self) {
        self.0.state_writes.fetch_add(1, Relaxed);
    }

    fn ask_for_renewal(&self) {
        ask_for_renewal(self.0);
    }

    fn turn_counts_from(&self, unit: u64) -> std::time::Instant {
        // The unit's start as far as the clock can tell now, plus one unit of grace for the
        // timers (the wall and the monotonic clock).
        let ahead_ns =
            (units_to_unix_nanos(unit) - wall_nanos()).clamp(0, i128::from(u64::MAX)) as u64;
        std::time::Instant::now()
            + std::time::Duration::from_nanos(ahead_ns.saturating_add(4_000_000))
    }

    fn now(&self) -> std::time::Instant {
        std::time::Instant::now()
    }

    fn wait_for_unit(
        &self,
        until: u64,
        from: std::time::Instant,
        why: Wait,
        given_up: &dyn Fn() -> bool,
    ) -> Result<bool, SlowError> {
        wait_for_unit(self.0, until, from, why, given_up)
    }
}

/// The wall clock in nanoseconds since the Unix epoch (0 before it).
fn wall_nanos() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0)
}

/// Sleeps on the process latch until the wall clock reaches unit `until` (true), or until
/// `given_up` says the wait is pointless (false; looked at every 100 ms at most). Waiting
/// counts against `sno.max_clock_wait` from the instant `from` on; past it the call fails.
/// Cancel and `statement_timeout` end the wait.
pub(super) fn wait_for_unit(
    s: &Shared,
    until: u64,
    from: std::time::Instant,
    why: Wait,
    given_up: &dyn Fn() -> bool,
) -> Result<bool, SlowError> {
    if until > crate::id::layout::MAX_UNITS {
        // The last unit of the format is used up: no later unit exists to wait for.
        return Err(SlowError::Clock);
    }
    let max_ms = gucs::max_clock_wait().as_millis();
    let target_ns = units_to_unix_nanos(until);
    loop {
        pgrx::check_for_interrupts!();
        let now_ns = wall_nanos();
        if now_ns >= target_ns {
            return Ok(true);
        }
        if given_up() {
            return Ok(false);
        }
        let now = std::time::Instant::now();
        let budget_ms = if now >= from {
            let waited = (now - from).as_millis();
            if waited >= max_ms {
                s.clock_wait_failures.fetch_add(1, Relaxed);
                return Err(SlowError::GaveUp {
                    waited_ms: waited,
                    until,
                    why,
                });
            }
            max_ms - waited
        } else {
            (from - now).as_millis() + max_ms
        };
        let left_ms = ((target_ns - now_ns) / 1_000_000 + 1) as i64;
        let timeout = left_ms.min(budget_ms.min(100) as i64).clamp(1, 100);
        // SAFETY: MyLatch is this process's latch; the wait returns on timeout, latch or
        // interrupt, and exits the process if the postmaster dies.
        unsafe {
            pg_sys::WaitLatch(
                pg_sys::MyLatch,
                (pg_sys::WL_LATCH_SET | pg_sys::WL_TIMEOUT | pg_sys::WL_EXIT_ON_PM_DEATH) as i32,
                timeout as _,
                pg_sys::PG_WAIT_EXTENSION,
            );
            pg_sys::ResetLatch(pg_sys::MyLatch);
        }
    }
}

/// What a wait that gave up says it waited for.
pub(super) fn wait_reason(why: Wait) -> &'static str {
    match why {
        Wait::ClockBehind => "The system clock went back into time already used for IDs",
        Wait::Turn => "Every sequence number of the current 4 ms unit is taken, and the system clock does not reach the unit this call's turn comes in",
    }
}

/// The `until` of a wait that gave up, as a timestamp (µs since 2000).
pub(super) fn until_pg_micros(until: u64) -> i64 {
    units_to_pg_micros(until)
}

/// A clock reading outside the range of the format.
pub(super) const OUT_OF_RANGE: u64 = server::OUT_OF_RANGE;

/// The wall clock (CLOCK_REALTIME) in 4 ms units, or [`OUT_OF_RANGE`].
#[inline(always)]
pub(super) fn clock_units() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer; CLOCK_REALTIME always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    units_from_timespec(ts.tv_sec, ts.tv_nsec).unwrap_or(OUT_OF_RANGE)
}

/// Where the partition comes from now: `sno.partition`, else what a backend read in Citus's
/// catalog, else derived.
pub(super) fn source(s: &Shared) -> Source {
    match (shmem::partition(), crate::pg::citus::published(s)) {
        (Some(p), _) => Source::Explicit(p),
        (None, Some(node)) => Source::Citus(node),
        (None, None) => Source::Derived,
    }
}

/// Asks the `sno lineage` worker to renew the durable horizon (it is within
/// [`server::HORIZON_MARGIN`] of the high-water mark). Outside the lock.
pub(super) fn ask_for_renewal(s: &Shared) {
    if !s.renew_wanted.swap(true, Relaxed) {
        let latch = s.worker_latch.load(Relaxed);
        if !latch.is_null() {
            // SAFETY: the worker's process latch, in shared memory; setting a latch nobody
            // owns any more is harmless.
            unsafe { pg_sys::SetLatch(latch) };
        }
    }
}

/// Writes `st` to the state file (flushed as PostgreSQL's `fsync` setting says) and notes it.
pub(super) fn put_file(s: &Shared, st: &crate::generator::lineage::State) -> std::io::Result<()> {
    crate::generator::state_file::write(std::path::Path::new("."), st, shmem::fsync_enabled())
        .inspect_err(|_| {
            s.state_write_failures.fetch_add(1, Relaxed);
        })?;
    shmem::state_written(s);
    Ok(())
}
