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

use crate::id::time::{units_to_unix_nanos, unix_nanos_to_units};
use crate::Sno;
use std::fmt;
#[cfg(unix)]
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[cfg(feature = "lease-postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "lease-postgres")))]
pub mod postgres;
#[cfg(feature = "lease-tokio-postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "lease-tokio-postgres")))]
pub mod tokio_postgres;

#[cfg(test)]
mod tests;

// --- Time ------------------------------------------------------------------------------------

/// The 4 ms unit holding an instant (floor), or `None` outside the format's range.
pub fn unit_of(t: SystemTime) -> Option<u64> {
    unix_nanos_to_units(unix_nanos(t)).ok()
}

/// The instant at which a unit starts.
pub fn unit_start(unit: u64) -> SystemTime {
    let nanos = units_to_unix_nanos(unit);
    UNIX_EPOCH + Duration::from_nanos(nanos as u64)
}

/// Unix time in nanoseconds (negative before 1970).
fn unix_nanos(t: SystemTime) -> i128 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i128,
        Err(e) => -(e.duration().as_nanos() as i128),
    }
}

/// The first unit that starts at or after an instant (the unit itself when the instant is a
/// boundary).
fn unit_ceil(t: SystemTime) -> Option<u64> {
    let n = unix_nanos(t);
    let floor = unix_nanos_to_units(n).ok()?;
    if units_to_unix_nanos(floor) == n {
        Some(floor)
    } else {
        Some(floor + 1)
    }
}

// --- The lease -------------------------------------------------------------------------------

/// A lease's token: the secret (a UUID) that renews and releases it. Its `Debug` does not
/// show it; `Display` does (the hyphenated UUID the server takes).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Token(pub [u8; 16]);

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, b) in self.0.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                f.write_str("-")?;
            }
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(..)")
    }
}

/// A token that is not a UUID's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadToken;

impl fmt::Display for BadToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a lease token is a UUID (32 hexadecimal digits, hyphens allowed)")
    }
}

impl std::error::Error for BadToken {}

impl std::str::FromStr for Token {
    type Err = BadToken;

    /// PostgreSQL's text forms of a UUID: 32 hex digits, with hyphens and braces allowed.
    fn from_str(s: &str) -> Result<Token, BadToken> {
        let s = s
            .strip_prefix('{')
            .and_then(|s| s.strip_suffix('}'))
            .unwrap_or(s);
        let mut out = [0u8; 16];
        let mut n = 0;
        for c in s.chars() {
            if c == '-' {
                continue;
            }
            let v = c.to_digit(16).ok_or(BadToken)? as u8;
            if n >= 32 {
                return Err(BadToken);
            }
            out[n / 2] |= if n % 2 == 0 { v << 4 } else { v };
            n += 1;
        }
        if n == 32 {
            Ok(Token(out))
        } else {
            Err(BadToken)
        }
    }
}

/// A lease: the fields of a `sno_lease` row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    /// The lease's number (per database).
    pub lease: i64,
    /// The secret that renews and releases it.
    pub token: Token,
    /// The partition of every ID stamped under it.
    pub partition: u16,
    /// The first sequence number of the slice.
    pub sequence_min: u16,
    /// The last one (inclusive).
    pub sequence_max: u16,
    /// The window's start (inclusive), a 4 ms unit boundary.
    pub not_before: SystemTime,
    /// The window's end (exclusive), a 4 ms unit boundary; a renewal moves it later.
    pub expires_at: SystemTime,
    /// The holder's name, as given to `sno_lease_acquire`.
    pub holder: String,
    /// When to renew (about a third of the TTL after the grant or the last renewal).
    pub renew_after: SystemTime,
}

/// A lease's window in 4 ms units: stamp `not_before <= unit < expires_at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Window {
    /// The first unit that may be stamped.
    pub not_before: u64,
    /// The first unit that may not (exclusive end).
    pub expires_at: u64,
}

impl Window {
    /// Whether a unit is inside the window.
    pub const fn contains(&self, unit: u64) -> bool {
        self.not_before <= unit && unit < self.expires_at
    }

    /// How many units it has.
    pub const fn len(&self) -> u64 {
        self.expires_at.saturating_sub(self.not_before)
    }

    /// Whether it has no unit.
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Lease {
    /// The window in units. Both ends are exact unit boundaries in a lease the server granted;
    /// were they not, the window is narrowed to the whole units inside it (never widened).
    pub fn window(&self) -> Result<Window, LeaseError> {
        let nb = unit_ceil(self.not_before).ok_or(LeaseError::OutOfRange)?;
        let ex = unit_of(self.expires_at).ok_or(LeaseError::OutOfRange)?;
        Ok(Window {
            not_before: nb,
            expires_at: ex.max(nb),
        })
    }

    /// The number of sequence numbers of the slice.
    pub fn sequences(&self) -> u32 {
        (self.sequence_max as u32 + 1).saturating_sub(self.sequence_min as u32)
    }

    /// Whether an ID could have been stamped under this lease as it is now: its partition,
    /// a sequence number in the slice and a unit in the window.
    pub fn covers(&self, id: Sno) -> bool {
        let Ok(w) = self.window() else { return false };
        id.partition() == self.partition
            && (self.sequence_min..=self.sequence_max).contains(&id.sequence())
            && w.contains(id.units())
    }

    fn check(&self) -> Result<Window, LeaseError> {
        if self.sequence_min > self.sequence_max {
            return Err(LeaseError::EmptySlice);
        }
        self.window()
    }
}

/// A lease the generator cannot take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeaseError {
    /// A time outside the range of the sno format (before 2010 or after 2079).
    OutOfRange,
    /// `sequence_min > sequence_max`.
    EmptySlice,
    /// A renewal of a lease the generator does not hold, or one that changed its partition,
    /// slice or `not_before` (a renewal changes only `expires_at`).
    Mismatch {
        /// The lease given.
        lease: i64,
    },
}

impl fmt::Display for LeaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LeaseError::OutOfRange => {
                f.write_str("the lease's window is outside the sno time range")
            }
            LeaseError::EmptySlice => {
                f.write_str("the lease's sequence_min is above its sequence_max")
            }
            LeaseError::Mismatch { lease } => write!(
                f,
                "lease {lease} is not the generator's, or its renewal changed more than expires_at"
            ),
        }
    }
}

impl std::error::Error for LeaseError {}

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
    /// ([`LeaseConfig::max_clock_wait`]): this host's clock is behind the registry's.
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

// --- Clock and process ----------------------------------------------------------------------

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
struct Slot {
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
enum Refusal {
    /// The clock (and the floor) are before the window, which starts at this unit.
    Behind(u64),
    NoLease,
    Expired(u64),
    UsedUp,
}

impl Slot {
    fn new(lease: &Lease, window: Window) -> Slot {
        Slot {
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
    fn take(&mut self, now: u64, floor: u64) -> Result<(u64, u16), Refusal> {
        let unit = if self.started {
            self.unit.max(now)
        } else {
            now.max(floor)
        };
        if unit < self.window.not_before {
            return Err(Refusal::Behind(self.window.not_before));
        }
        if unit >= self.window.expires_at {
            return Err(Refusal::Expired(unit));
        }
        if !self.started || unit > self.unit {
            self.unit = unit;
            self.next = self.seq_min as u32;
            self.started = true;
        } else if self.next > self.seq_max as u32 {
            // The unit's slice is used up: the next unit, while inside the window.
            let next_unit = self.unit + 1;
            if next_unit >= self.window.expires_at {
                return Err(Refusal::UsedUp);
            }
            self.unit = next_unit;
            self.next = self.seq_min as u32;
        }
        let seq = self.next as u16;
        self.next += 1;
        Ok((self.unit, seq))
    }
}

#[derive(Debug, Default)]
struct State {
    current: Option<Slot>,
    /// The lease `current` replaced, used while `current` cannot start yet (the clock before
    /// its window) and its own window lasts.
    previous: Option<Slot>,
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
    state: Mutex<State>,
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
            state: Mutex::new(State {
                current: Some(Slot::new(lease, window)),
                previous: None,
                last: None,
                lease: Some(lease.clone()),
            }),
            clock,
            options,
            pid: process_id(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
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
                    Err(Refusal::Behind(not_before)) => not_before,
                    Err(Refusal::NoLease) => return Err(GenerateError::NoLease),
                    Err(Refusal::Expired(unit)) => {
                        let expires_at = st.current.as_ref().map_or(0, |s| s.window.expires_at);
                        return Err(GenerateError::Expired { unit, expires_at });
                    }
                    Err(Refusal::UsedUp) => {
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
    fn take(st: &mut State, now: u64) -> Result<(u64, u16, u16), Refusal> {
        let floor = st.last.map_or(0, |u| u + 1);
        let Some(cur) = st.current.as_mut() else {
            return Err(Refusal::NoLease);
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
                        Err(Refusal::Behind(_)) => {}
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
        let State {
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
        let old = st.current.replace(Slot::new(lease, window));
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

// --- What the keepers share ------------------------------------------------------------------

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

/// A lease as a call returned it, with the registry's clock at the time and the local instant
/// the answer came.
#[derive(Clone, Debug)]
pub struct Granted {
    /// The lease.
    pub lease: Lease,
    /// The registry's clock (`clock_timestamp()`) when it answered.
    pub server_now: SystemTime,
    /// When the answer came, by this host's monotonic clock.
    pub received: Instant,
}

impl Granted {
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
/// [`lease_from_columns`], then the registry's `clock_timestamp()`; tokens go as text, TTLs as
/// microseconds (`int8`).
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

/// What a keeper has seen: for logs and metrics (renewals failing).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Status {
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

impl Status {
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
