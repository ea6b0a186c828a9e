//! The leased generator: it stamps IDs only inside its lease, with the clock it reads (the
//! system's, or one a test drives) and the process that took the lease (a fork refuses). Pure:
//! it neither takes nor renews a lease; whoever does (a keeper) hands it each [`Lease`].

use super::window::{unix_nanos, Lease, LeaseError, Window};
use crate::id::time::{units_to_unix_nanos, unix_nanos_to_units};
use crate::Sno;
use std::fmt;
#[cfg(unix)]
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

// --- Why no ID -------------------------------------------------------------------------------

/// Why the generator gave no ID. Each is the caller's to see: the generator never stamps
/// outside its lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum GenerateError {
    /// No lease: not acquired yet, or released (the keeper was shut down).
    NoLease,
    /// The clock is at or past the window's end: the lease was not renewed in time (the
    /// database unreachable, or the lease lost). IDs come again once a renewal or a new lease
    /// works.
    Expired {
        /// The unit the clock is in.
        unit: u64,
        /// The window's end.
        expires_at: u64,
    },
    /// Every sequence number of the slice is used in every unit from the clock's to the
    /// window's end: more IDs than the slice makes (its size times 250 a second) for longer
    /// than the window has left. Acquire with more `sequences`.
    SliceUsedUp {
        /// The window's end.
        expires_at: u64,
    },
    /// The clock is still before the window's start after waiting
    /// ([`LeaseConfig::max_clock_wait`](crate::lease::LeaseConfig::max_clock_wait)): this
    /// host's clock is behind the registry's.
    ClockBehind {
        /// The unit the clock is in.
        unit: u64,
        /// The window's start.
        not_before: u64,
    },
    /// The clock is outside the format's range (before 2010 or after 2079).
    ClockOutOfRange,
    /// This process is a fork of the one that acquired the lease: it must acquire its own
    /// (start a new keeper in the child).
    Forked {
        /// The process that acquired the lease.
        acquired_by: u32,
        /// This process.
        this_process: u32,
    },
}

impl fmt::Display for GenerateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GenerateError::NoLease => f.write_str("no sno lease: not acquired yet, or released"),
            GenerateError::Expired { unit, expires_at } => write!(
                f,
                "the sno lease has expired (clock at unit {unit}, window ends at {expires_at}): \
                 not renewed in time; IDs come again when a renewal or a new lease works"
            ),
            GenerateError::SliceUsedUp { expires_at } => write!(
                f,
                "the sno lease's slice is used up to the end of its window (unit {expires_at}): \
                 more IDs than it makes; acquire with more sequences"
            ),
            GenerateError::ClockBehind { unit, not_before } => write!(
                f,
                "this host's clock (unit {unit}) is behind the sno lease's window, which starts \
                 at unit {not_before}: fix the clock (the registry's is ahead)"
            ),
            GenerateError::ClockOutOfRange => {
                f.write_str("the clock is outside the sno time range (2010 to 2079)")
            }
            GenerateError::Forked {
                acquired_by,
                this_process,
            } => write!(
                f,
                "the sno lease was acquired by process {acquired_by}, not this one \
                 ({this_process}, a fork): acquire a lease of its own"
            ),
        }
    }
}

impl std::error::Error for GenerateError {}

/// The generator's clock, injectable for tests.
pub trait Clock: Send + Sync {
    /// Unix time now, in nanoseconds.
    fn unix_nanos(&self) -> i128;

    /// Waits (while the clock is before the window's start).
    fn sleep(&self, d: Duration) {
        std::thread::sleep(d)
    }
}

/// The system's wall clock (`SystemTime::now`).
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[inline]
    fn unix_nanos(&self) -> i128 {
        unix_nanos(SystemTime::now())
    }
}

/// This process's id, as `std::process::id()` gives it, without a system call per ID: cached,
/// and the cache cleared in a forked child by a `pthread_atfork` handler (a child made by a raw
/// `clone` system call, bypassing the C library's `fork`, is not seen).
#[inline]
pub fn process_id() -> u32 {
    #[cfg(unix)]
    {
        let pid = PID.load(Ordering::Relaxed);
        if pid != 0 {
            return pid;
        }
        process_id_slow()
    }
    #[cfg(not(unix))]
    {
        std::process::id()
    }
}

#[cfg(unix)]
static PID: AtomicU32 = AtomicU32::new(0);

#[cfg(unix)]
#[cold]
fn process_id_slow() -> u32 {
    static REGISTER: std::sync::Once = std::sync::Once::new();
    extern "C" fn in_child() {
        PID.store(0, Ordering::Relaxed);
    }
    REGISTER.call_once(|| {
        // SAFETY: registers a handler that only stores to an atomic (async-signal-safe).
        unsafe {
            libc::pthread_atfork(None, None, Some(in_child));
        }
    });
    let pid = std::process::id();
    PID.store(pid, Ordering::Relaxed);
    pid
}

// --- The generator ---------------------------------------------------------------------------

/// One lease's stamping state.
#[derive(Clone, Debug)]
struct LeaseSlot {
    lease: i64,
    partition: u16,
    seq_min: u16,
    seq_max: u16,
    window: Window,
    /// The last unit stamped (when `started`).
    unit: u64,
    /// The next sequence number in `unit` (`seq_max + 1`: used up).
    next: u32,
    started: bool,
}

/// Why a slot gave no ID.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SlotRefusal {
    /// The clock (and the floor) are before the window, which starts at this unit.
    Behind(u64),
    NoLease,
    Expired(u64),
    UsedUp,
}

impl LeaseSlot {
    fn new(lease: &Lease, window: Window) -> LeaseSlot {
        LeaseSlot {
            lease: lease.lease,
            partition: lease.partition,
            seq_min: lease.sequence_min,
            seq_max: lease.sequence_max,
            window,
            unit: 0,
            next: 0,
            started: false,
        }
    }

    /// The next (unit, sequence) at clock unit `now`; a slot not started yet starts no earlier
    /// than `floor` (after the units of the lease it replaced, so IDs stay increasing).
    #[inline]
    fn take(&mut self, now: u64, floor: u64) -> Result<(u64, u16), SlotRefusal> {
        let unit = if self.started {
            self.unit.max(now)
        } else {
            now.max(floor)
        };
        if unit < self.window.not_before {
            return Err(SlotRefusal::Behind(self.window.not_before));
        }
        if unit >= self.window.expires_at {
            return Err(SlotRefusal::Expired(unit));
        }
        if !self.started || unit > self.unit {
            self.unit = unit;
            self.next = self.seq_min as u32;
            self.started = true;
        } else if self.next > self.seq_max as u32 {
            // The unit's slice is used up: the next unit, while inside the window.
            let next_unit = self.unit + 1;
            if next_unit >= self.window.expires_at {
                return Err(SlotRefusal::UsedUp);
            }
            self.unit = next_unit;
            self.next = self.seq_min as u32;
        }
        let seq = self.next as u16;
        self.next += 1;
        Ok((self.unit, seq))
    }
}

/// What the generator's lock guards: the lease it stamps under and the one that lease
/// replaced, the last unit stamped, the lease as last given.
#[derive(Debug, Default)]
struct Stamping {
    current: Option<LeaseSlot>,
    /// The lease `current` replaced, used while `current` cannot start yet (the clock before
    /// its window) and its own window lasts.
    previous: Option<LeaseSlot>,
    /// The last unit stamped under any lease.
    last: Option<u64>,
    /// The lease as last given (renewals included).
    lease: Option<Lease>,
}

/// Options of a [`LeasedGenerator`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GeneratorOptions {
    /// How long [`LeasedGenerator::generate`] waits when the clock is before the window's
    /// start (a clock behind the registry's) before refusing with
    /// [`GenerateError::ClockBehind`]. Default: 1 s; zero refuses at once.
    pub max_clock_wait: Duration,
}

impl Default for GeneratorOptions {
    fn default() -> Self {
        GeneratorOptions {
            max_clock_wait: Duration::from_secs(1),
        }
    }
}

/// A generator that stamps IDs only inside its lease: units in the window, sequence numbers in
/// the slice, never one twice. Thread-safe (`&self`; share it in an `Arc`); each ID costs one
/// clock reading and a short critical section, no round trip.
///
/// It does not renew: [`renewed`](Self::renewed) and [`replace`](Self::replace) are called by
/// whoever renews (a keeper of the `lease-postgres` or `lease-tokio-postgres` feature, or the
/// application).
pub struct LeasedGenerator {
    state: Mutex<Stamping>,
    clock: Option<Arc<dyn Clock>>,
    options: GeneratorOptions,
    pid: u32,
}

impl fmt::Debug for LeasedGenerator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeasedGenerator")
            .field("lease", &self.lease().map(|l| l.lease))
            .field("options", &self.options)
            .field("pid", &self.pid)
            .finish()
    }
}

impl LeasedGenerator {
    /// A generator on a lease, with the system clock and the default options. The lease
    /// belongs to this process: in a fork, [`generate`](Self::generate) refuses.
    pub fn new(lease: &Lease) -> Result<LeasedGenerator, LeaseError> {
        Self::with_options(lease, GeneratorOptions::default())
    }

    /// A generator with options.
    pub fn with_options(
        lease: &Lease,
        options: GeneratorOptions,
    ) -> Result<LeasedGenerator, LeaseError> {
        Self::build(lease, None, options)
    }

    /// A generator with another clock (tests).
    pub fn with_clock(
        lease: &Lease,
        clock: Arc<dyn Clock>,
        options: GeneratorOptions,
    ) -> Result<LeasedGenerator, LeaseError> {
        Self::build(lease, Some(clock), options)
    }

    fn build(
        lease: &Lease,
        clock: Option<Arc<dyn Clock>>,
        options: GeneratorOptions,
    ) -> Result<LeasedGenerator, LeaseError> {
        let window = lease.check()?;
        Ok(LeasedGenerator {
            state: Mutex::new(Stamping {
                current: Some(LeaseSlot::new(lease, window)),
                previous: None,
                last: None,
                lease: Some(lease.clone()),
            }),
            clock,
            options,
            pid: process_id(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Stamping> {
        // Nothing panics while the lock is held; a poisoned lock's state is whole.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    #[inline]
    fn now_nanos(&self) -> i128 {
        match &self.clock {
            None => unix_nanos(SystemTime::now()),
            Some(c) => c.unix_nanos(),
        }
    }

    #[inline]
    fn check_process(&self) -> Result<(), GenerateError> {
        let this = process_id();
        if this != self.pid {
            return Err(GenerateError::Forked {
                acquired_by: self.pid,
                this_process: this,
            });
        }
        Ok(())
    }

    /// Whether this process is not the one that made the generator (a fork).
    pub fn is_forked(&self) -> bool {
        self.check_process().is_err()
    }

    /// The process that made the generator (and acquired its lease).
    pub fn process(&self) -> u32 {
        self.pid
    }

    /// A new ID with meta byte 0.
    #[inline]
    pub fn generate(&self) -> Result<Sno, GenerateError> {
        self.generate_with_meta(0)
    }

    /// A new ID with a meta byte (the user's metadata; sequence numbers are not reused across
    /// meta values).
    pub fn generate_with_meta(&self, meta: u8) -> Result<Sno, GenerateError> {
        self.check_process()?;
        let mut waited = Duration::ZERO;
        loop {
            let nanos = self.now_nanos();
            let now = unix_nanos_to_units(nanos).map_err(|_| GenerateError::ClockOutOfRange)?;
            let wait_until = {
                let mut st = self.lock();
                match Self::take(&mut st, now) {
                    Ok((unit, partition, seq)) => {
                        return Ok(Sno::new(unit, 0, meta, partition, seq))
                    }
                    Err(SlotRefusal::Behind(not_before)) => not_before,
                    Err(SlotRefusal::NoLease) => return Err(GenerateError::NoLease),
                    Err(SlotRefusal::Expired(unit)) => {
                        let expires_at = st.current.as_ref().map_or(0, |s| s.window.expires_at);
                        return Err(GenerateError::Expired { unit, expires_at });
                    }
                    Err(SlotRefusal::UsedUp) => {
                        let expires_at = st.current.as_ref().map_or(0, |s| s.window.expires_at);
                        return Err(GenerateError::SliceUsedUp { expires_at });
                    }
                }
            };
            // The clock is before the window (behind the registry's): wait for it, a while.
            let behind = GenerateError::ClockBehind {
                unit: now,
                not_before: wait_until,
            };
            let need = units_to_unix_nanos(wait_until) - nanos;
            let need = Duration::from_nanos(need.clamp(1, u64::MAX as i128) as u64);
            if waited + need > self.options.max_clock_wait {
                return Err(behind);
            }
            match &self.clock {
                None => std::thread::sleep(need),
                Some(c) => c.sleep(need),
            }
            waited += need;
        }
    }

    /// The decision under the lock: (unit, partition, sequence) or why not.
    #[inline]
    fn take(st: &mut Stamping, now: u64) -> Result<(u64, u16, u16), SlotRefusal> {
        let floor = st.last.map_or(0, |u| u + 1);
        let Some(cur) = st.current.as_mut() else {
            return Err(SlotRefusal::NoLease);
        };
        let was_started = cur.started;
        match cur.take(now, floor) {
            Ok((unit, seq)) => {
                let partition = cur.partition;
                if !was_started {
                    st.previous = None;
                }
                st.last = Some(unit);
                Ok((unit, partition, seq))
            }
            Err(refusal) if !was_started => {
                // The new lease cannot start yet: the one it replaced, while it lasts.
                if let Some(prev) = st.previous.as_mut() {
                    match prev.take(now, floor) {
                        Ok((unit, seq)) => {
                            let partition = prev.partition;
                            st.last = Some(st.last.map_or(unit, |l| l.max(unit)));
                            return Ok((unit, partition, seq));
                        }
                        Err(SlotRefusal::Behind(_)) => {}
                        Err(_) => st.previous = None,
                    }
                }
                Err(refusal)
            }
            Err(refusal) => Err(refusal),
        }
    }

    /// Adopts a renewal of the current lease (or of the one it replaced): its later
    /// `expires_at`. A renewal changes nothing else; one that does is refused
    /// ([`LeaseError::Mismatch`]), as is one of a lease the generator does not hold. An earlier
    /// `expires_at` than the generator knows is ignored (the window granted stays granted).
    pub fn renewed(&self, lease: &Lease) -> Result<(), LeaseError> {
        let window = lease.check()?;
        let mut st = self.lock();
        let Stamping {
            current,
            previous,
            lease: known,
            ..
        } = &mut *st;
        for (slot, is_current) in [(current, true), (previous, false)] {
            let Some(slot) = slot.as_mut() else { continue };
            if slot.lease != lease.lease {
                continue;
            }
            if slot.partition != lease.partition
                || slot.seq_min != lease.sequence_min
                || slot.seq_max != lease.sequence_max
                || slot.window.not_before != window.not_before
            {
                return Err(LeaseError::Mismatch { lease: lease.lease });
            }
            if window.expires_at > slot.window.expires_at {
                slot.window.expires_at = window.expires_at;
            }
            if is_current {
                if let Some(k) = known.as_mut() {
                    if lease.expires_at > k.expires_at {
                        k.expires_at = lease.expires_at;
                    }
                    k.renew_after = lease.renew_after;
                }
            }
            return Ok(());
        }
        Err(LeaseError::Mismatch { lease: lease.lease })
    }

    /// Switches to a new lease (a new slice, after the old one could not be renewed). The old
    /// one is still used while the clock is before the new one's window and its own lasts;
    /// IDs stay increasing (the new lease starts after the last unit stamped). A lease with
    /// the current one's number is a renewal ([`renewed`](Self::renewed)).
    pub fn replace(&self, lease: &Lease) -> Result<(), LeaseError> {
        let window = lease.check()?;
        let mut st = self.lock();
        if st.current.as_ref().is_some_and(|s| s.lease == lease.lease) {
            drop(st);
            return self.renewed(lease);
        }
        let old = st.current.replace(LeaseSlot::new(lease, window));
        if let Some(old) = old {
            st.previous = Some(old);
        }
        st.lease = Some(lease.clone());
        Ok(())
    }

    /// Stops stamping (the lease was released or lost): every later call refuses with
    /// [`GenerateError::NoLease`] until [`replace`](Self::replace).
    pub fn revoke(&self) {
        let mut st = self.lock();
        st.current = None;
        st.previous = None;
        st.lease = None;
    }

    /// The current lease (its latest renewal), if any.
    pub fn lease(&self) -> Option<Lease> {
        if self.is_forked() {
            // The parent's lock may have been held by a thread that does not exist here.
            return None;
        }
        self.lock().lease.clone()
    }

    /// The current lease's window in units, if any.
    pub fn window(&self) -> Option<Window> {
        if self.is_forked() {
            return None;
        }
        self.lock().current.as_ref().map(|s| s.window)
    }
}
