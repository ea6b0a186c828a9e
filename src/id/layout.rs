//! The 10-byte sno ID: its byte layout, its fields, and construction from parts.
//!
//! Pure Rust, no PostgreSQL: everything here is unit-tested with plain `cargo test`.
//! The format is muyo/sno v1.2.1's, byte for byte.
//!
//! | byte  | 0        | 1        | 2        | 3        | 4         | 5    | 6..7      | 8..9     |
//! |-------|----------|----------|----------|----------|-----------|------|-----------|----------|
//! | bits  | tttttttt | tttttttt | tttttttt | tttttttt | tttttttT  | meta | partition | sequence |
//!
//! * `t`: a 39-bit count of 4 ms units since 2010-01-01T00:00:00Z, big-endian.
//! * `T`: the tick-tock bit, flipped by a generator each time its clock regresses.
//! * `meta`: one byte whose meaning is the user's.
//! * `partition`: big-endian u16 naming the generating server (or group of servers).
//! * `sequence`: big-endian u16 counter within one 4 ms unit.
//!
//! Because every field is big-endian and laid out most significant first, comparing the raw
//! bytes (memcmp) orders IDs by time, then T, meta, partition and sequence. `Sno`'s derived
//! `Ord` is exactly that byte order, and so is the SQL order of the `sno` type.

use core::fmt;

/// Size of an ID in bytes (`pg_type.typlen`).
pub const LEN: usize = 10;
/// Number of bits of the timestamp field.
pub const TIMESTAMP_BITS: u32 = 39;
/// Largest representable timestamp, in 4 ms units (2079-09-07T15:47:35.548Z).
pub const MAX_UNITS: u64 = (1 << TIMESTAMP_BITS) - 1;

/// A sno ID: 10 bytes in canonical (big-endian, sortable) order.
///
/// `#[repr(transparent)]` so a pointer to a PostgreSQL datum of type `sno` can be read as a
/// `&Sno` without copying.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Sno(pub [u8; LEN]);

/// A field given to [`Sno::from_parts`] that does not fit its place in the layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartsError {
    /// The timestamp (in 4 ms units) is above [`MAX_UNITS`].
    Units(u64),
    /// The tick-tock bit is neither 0 nor 1.
    Tick(i64),
    /// The meta byte is outside 0..=255.
    Meta(i64),
    /// The partition is outside 0..=65535.
    Partition(i64),
    /// The sequence is outside 0..=65535.
    Sequence(i64),
}

impl fmt::Display for PartsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            PartsError::Units(u) => write!(f, "timestamp unit {u} is out of range for type sno"),
            PartsError::Tick(v) => write!(f, "tick {v} is out of range for type sno"),
            PartsError::Meta(v) => write!(f, "meta {v} is out of range for type sno"),
            PartsError::Partition(v) => write!(f, "partition {v} is out of range for type sno"),
            PartsError::Sequence(v) => write!(f, "sequence {v} is out of range for type sno"),
        }
    }
}

impl Sno {
    /// The zero ID, `2222222222222222` in text.
    pub const ZERO: Sno = Sno([0; LEN]);
    /// The largest ID, `xxxxxxxxxxxxxxxx` in text.
    pub const MAX: Sno = Sno([0xff; LEN]);

    /// Builds an ID from already validated fields. `units` is masked to 39 bits and `tick` to
    /// one bit; use [`Sno::from_parts`] for values that come from a user.
    #[inline]
    pub const fn new(units: u64, tick: u8, meta: u8, partition: u16, sequence: u16) -> Sno {
        // The top 40 bits of the first five bytes hold `units << 1 | T`.
        let head = ((units & MAX_UNITS) << 1) | (tick as u64 & 1);
        let p = partition.to_be_bytes();
        let s = sequence.to_be_bytes();
        Sno([
            (head >> 32) as u8,
            (head >> 24) as u8,
            (head >> 16) as u8,
            (head >> 8) as u8,
            head as u8,
            meta,
            p[0],
            p[1],
            s[0],
            s[1],
        ])
    }

    /// Builds an ID from fields given as wide integers, rejecting any that does not fit.
    pub fn from_parts(
        units: u64,
        tick: i64,
        meta: i64,
        partition: i64,
        sequence: i64,
    ) -> Result<Sno, PartsError> {
        if units > MAX_UNITS {
            return Err(PartsError::Units(units));
        }
        let tick = u8::try_from(tick)
            .ok()
            .filter(|t| *t <= 1)
            .ok_or(PartsError::Tick(tick))?;
        let meta = u8::try_from(meta).map_err(|_| PartsError::Meta(meta))?;
        let partition = u16::try_from(partition).map_err(|_| PartsError::Partition(partition))?;
        let sequence = u16::try_from(sequence).map_err(|_| PartsError::Sequence(sequence))?;
        Ok(Sno::new(units, tick, meta, partition, sequence))
    }

    /// The smallest ID of a 4 ms unit: T = 0 and every other field 0.
    #[inline]
    pub const fn min_of_unit(units: u64) -> Sno {
        Sno::new(units, 0, 0, 0, 0)
    }

    /// The largest ID of a 4 ms unit: T = 1 and every other field at its maximum.
    #[inline]
    pub const fn max_of_unit(units: u64) -> Sno {
        Sno::new(units, 1, u8::MAX, u16::MAX, u16::MAX)
    }

    /// The 10 bytes, as Go's `Bytes()` and PostgreSQL's binary format give them.
    #[inline]
    pub const fn to_bytes(self) -> [u8; LEN] {
        self.0
    }

    /// An ID from its 10 bytes (every value is a valid ID).
    #[inline]
    pub const fn from_bytes(bytes: [u8; LEN]) -> Sno {
        Sno(bytes)
    }

    /// Reads an ID from a slice of exactly [`LEN`] bytes.
    #[inline]
    pub fn from_slice(b: &[u8]) -> Option<Sno> {
        <[u8; LEN]>::try_from(b).ok().map(Sno)
    }

    /// The first eight bytes as a big-endian integer: time, T, meta and partition. Used as the
    /// abbreviated sort key, since comparing it as an unsigned integer agrees with memcmp.
    #[inline]
    pub const fn prefix_u64(&self) -> u64 {
        let b = &self.0;
        u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
    }

    /// The timestamp in 4 ms units since 2010-01-01T00:00:00Z (`BE64(b[0..8]) >> 25`).
    #[inline]
    pub const fn units(&self) -> u64 {
        self.prefix_u64() >> 25
    }

    /// The tick-tock bit (0 or 1).
    #[inline]
    pub const fn tick(&self) -> u8 {
        self.0[4] & 1
    }

    /// The user's metadata byte.
    #[inline]
    pub const fn meta(&self) -> u8 {
        self.0[5]
    }

    /// The partition (generating server or group of servers).
    #[inline]
    pub const fn partition(&self) -> u16 {
        u16::from_be_bytes([self.0[6], self.0[7]])
    }

    /// The sequence number within the 4 ms unit.
    #[inline]
    pub const fn sequence(&self) -> u16 {
        u16::from_be_bytes([self.0[8], self.0[9]])
    }

    /// Whether this is the zero ID.
    #[inline]
    pub fn is_zero(&self) -> bool {
        *self == Sno::ZERO
    }
}

impl From<[u8; LEN]> for Sno {
    fn from(bytes: [u8; LEN]) -> Sno {
        Sno(bytes)
    }
}

impl From<Sno> for [u8; LEN] {
    fn from(id: Sno) -> [u8; LEN] {
        id.0
    }
}

impl TryFrom<&[u8]> for Sno {
    type Error = LengthError;
    /// Exactly [`LEN`] bytes, or an error that gives the length.
    fn try_from(b: &[u8]) -> Result<Sno, LengthError> {
        Sno::from_slice(b).ok_or(LengthError(b.len()))
    }
}

impl AsRef<[u8]> for Sno {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// A byte string that is not [`LEN`] bytes long; holds its length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LengthError(pub usize);

impl fmt::Display for LengthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a sno ID is exactly {LEN} bytes, not {}", self.0)
    }
}

impl std::error::Error for LengthError {}
impl std::error::Error for PartsError {}

impl fmt::Debug for Sno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = crate::id::encoding::encode(self);
        // The alphabet is ASCII, so this never fails.
        f.write_str(core::str::from_utf8(&text).unwrap_or("?"))
    }
}

impl fmt::Display for Sno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn spec_worked_example_fields() {
        // The format's worked example: 4e6f2160a0ff9a0a1033 has T = 0, meta 255, partition 39434, sequence 4147.
        let id = Sno([0x4e, 0x6f, 0x21, 0x60, 0xa0, 0xff, 0x9a, 0x0a, 0x10, 0x33]);
        assert_eq!(id.tick(), 0);
        assert_eq!(id.meta(), 255);
        assert_eq!(id.partition(), 39434);
        assert_eq!(id.sequence(), 4147);
        assert_eq!(Sno::new(id.units(), 0, 255, 39434, 4147), id);
    }

    #[test]
    fn extremes() {
        assert_eq!(Sno::new(0, 0, 0, 0, 0), Sno::ZERO);
        assert_eq!(Sno::new(MAX_UNITS, 1, 255, 65535, 65535), Sno::MAX);
        assert_eq!(Sno::MAX.units(), MAX_UNITS);
        assert!(Sno::ZERO.is_zero());
        assert!(!Sno::MAX.is_zero());
    }

    #[test]
    fn from_parts_rejects_each_field() {
        assert_eq!(
            Sno::from_parts(MAX_UNITS + 1, 0, 0, 0, 0),
            Err(PartsError::Units(MAX_UNITS + 1))
        );
        assert_eq!(Sno::from_parts(0, 2, 0, 0, 0), Err(PartsError::Tick(2)));
        assert_eq!(Sno::from_parts(0, -1, 0, 0, 0), Err(PartsError::Tick(-1)));
        assert_eq!(Sno::from_parts(0, 0, 256, 0, 0), Err(PartsError::Meta(256)));
        assert_eq!(Sno::from_parts(0, 0, -1, 0, 0), Err(PartsError::Meta(-1)));
        assert_eq!(
            Sno::from_parts(0, 0, 0, 65536, 0),
            Err(PartsError::Partition(65536))
        );
        assert_eq!(
            Sno::from_parts(0, 0, 0, -1, 0),
            Err(PartsError::Partition(-1))
        );
        assert_eq!(
            Sno::from_parts(0, 0, 0, 0, 65536),
            Err(PartsError::Sequence(65536))
        );
        assert_eq!(
            Sno::from_parts(0, 0, 0, 0, -7),
            Err(PartsError::Sequence(-7))
        );
        assert_eq!(
            Sno::from_parts(MAX_UNITS, 1, 255, 65535, 65535),
            Ok(Sno::MAX)
        );
    }

    #[test]
    fn unit_bounds_bracket_the_unit() {
        let u = 123_456_789;
        let lo = Sno::min_of_unit(u);
        let hi = Sno::max_of_unit(u);
        assert!(Sno::max_of_unit(u - 1) < lo);
        assert!(hi < Sno::min_of_unit(u + 1));
        assert_eq!(lo.units(), u);
        assert_eq!(hi.units(), u);
        assert_eq!(hi.tick(), 1);
    }

    proptest! {
        #[test]
        fn fields_round_trip(u in 0..=MAX_UNITS, t in 0u8..=1, m: u8, p: u16, s: u16) {
            let id = Sno::new(u, t, m, p, s);
            prop_assert_eq!((id.units(), id.tick(), id.meta(), id.partition(), id.sequence()), (u, t, m, p, s));
        }

        #[test]
        fn bytes_round_trip_through_fields(b: [u8; LEN]) {
            let id = Sno(b);
            prop_assert_eq!(Sno::new(id.units(), id.tick(), id.meta(), id.partition(), id.sequence()), id);
        }

        #[test]
        fn order_is_field_order(a: [u8; LEN], b: [u8; LEN]) {
            let (x, y) = (Sno(a), Sno(b));
            let fx = (x.units(), x.tick(), x.meta(), x.partition(), x.sequence());
            let fy = (y.units(), y.tick(), y.meta(), y.partition(), y.sequence());
            prop_assert_eq!(x.cmp(&y), fx.cmp(&fy));
            prop_assert_eq!(x.cmp(&y), a.as_slice().cmp(b.as_slice()));
        }

        #[test]
        fn prefix_order_agrees_with_byte_order(a: [u8; LEN], b: [u8; LEN]) {
            let (x, y) = (Sno(a), Sno(b));
            if x.prefix_u64() < y.prefix_u64() {
                prop_assert!(x < y);
            }
        }
    }
}
