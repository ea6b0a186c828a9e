//! A lease and its window: the 4 ms units of time, the token, the lease as the registry grants
//! it, its window in units, and the error of a lease no generator can take. Nothing here
//! stamps, keeps or calls: the generator (`generator.rs`) stamps inside a [`Window`], and the
//! keepers (`keeper.rs` and the drivers) fetch and renew the [`Lease`].

use crate::id::time::{units_to_unix_nanos, unix_nanos_to_units};
use crate::Sno;
use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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
pub(super) fn unix_nanos(t: SystemTime) -> i128 {
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

    /// The window, for a generator to take the lease: refused when the slice is empty or the
    /// window outside the format's range.
    pub(super) fn check(&self) -> Result<Window, LeaseError> {
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
