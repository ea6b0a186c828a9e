//! `serde` support for [`Sno`] (feature `serde`), compatible with muyo/sno's Go marshalers.
//!
//! | format | writes | reads |
//! |---|---|---|
//! | human-readable (JSON, YAML, TOML, ...) | the 16-character text, as Go's `MarshalText` and `String()` | that text (strictly, as [`crate::id::encoding::decode`]: upper case accepted; not the bytea hex form the SQL input and `FromStr` also take), `null` / unit as [`Sno::ZERO`], or an array of 10 byte values |
//! | binary (postcard, bincode, CBOR, ...) | the 10 raw bytes (`serialize_bytes`), as Go's `Bytes()` | 10 bytes, a byte buffer, or a sequence of 10 `u8` |
//!
//! Which of the two a format is, is its [`is_human_readable`](::serde::Serializer::is_human_readable).
//! A human-readable format is read with `deserialize_any`, so it must be self-describing (JSON,
//! YAML, TOML, RON, ... all are).
//!
//! The array of 10 numbers is what Go's `encoding/json` writes for a `sno.ID` it cannot take
//! the address of (a field of a struct marshalled by value): muyo/sno's `MarshalJSON` has a
//! pointer receiver, so Go then falls back to its plain array encoding.
//!
//! # Go's `null`
//!
//! Go's `MarshalJSON` writes the zero ID as `null` (and every other ID as the quoted text);
//! its `UnmarshalJSON` reads `null` as the zero ID. On this side:
//!
//! * a plain `Sno` reads `null` as [`Sno::ZERO`], so everything Go writes can be read; it writes
//!   the zero ID as `"2222222222222222"`, which Go reads back as its zero ID too;
//! * a `Sno` field with `#[serde(with = "sno::id::serde::go")]` ([`go`]) also *writes* the zero
//!   ID as `null`, byte for byte what Go writes;
//! * an `Option<Sno>` reads Go's `null` as `None` and writes `None` as `null`. `Some(Sno::ZERO)`
//!   is written as `"2222222222222222"`: Go reads both as its zero ID, which it cannot tell from
//!   "no ID".
//!
//! ```
//! use serde::{Deserialize, Serialize};
//! use sno::Sno;
//!
//! #[derive(Serialize, Deserialize, Debug, PartialEq)]
//! struct Event {
//!     id: Sno,
//!     // Written exactly as Go writes a sno.ID field: zero as null.
//!     #[serde(with = "sno::id::serde::go")]
//!     parent: Sno,
//!     // Go's null is None.
//!     cause: Option<Sno>,
//! }
//!
//! let id: Sno = "brpk4q72xwf2m63l".parse().unwrap();
//! let event = Event { id, parent: Sno::ZERO, cause: None };
//! let json = serde_json::to_string(&event).unwrap();
//! assert_eq!(json, r#"{"id":"brpk4q72xwf2m63l","parent":null,"cause":null}"#);
//! assert_eq!(serde_json::from_str::<Event>(&json).unwrap(), event);
//!
//! // What Go's json.Marshal writes for the zero ID reads as zero, or as None.
//! assert_eq!(serde_json::from_str::<Sno>("null").unwrap(), Sno::ZERO);
//! assert_eq!(serde_json::from_str::<Option<Sno>>("null").unwrap(), None);
//! assert_eq!(
//!     serde_json::from_str::<Option<Sno>>(r#""BRPK4Q72XWF2M63L""#).unwrap(),
//!     Some(id)
//! );
//!
//! // Bad input is an error that says what is wrong.
//! let err = serde_json::from_str::<Sno>(r#""brpk4q72xwf2m63_""#).unwrap_err();
//! assert!(err.to_string().contains(r#"Character "_" at position 16"#), "{err}");
//! ```

use core::fmt;

use ::serde::de::{self, Deserialize, Deserializer, SeqAccess, Visitor};
use ::serde::ser::{Serialize, Serializer};

use crate::id::encoding::{decode, encode, TEXT_LEN};
use crate::id::layout::{Sno, LEN};

impl Serialize for Sno {
    /// Human-readable formats get the 16-character text, binary formats the 10 raw bytes.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            let text = encode(self);
            // The alphabet is ASCII, so this is always valid UTF-8.
            let text = core::str::from_utf8(&text).map_err(::serde::ser::Error::custom)?;
            serializer.serialize_str(text)
        } else {
            serializer.serialize_bytes(&self.0)
        }
    }
}

impl<'de> Deserialize<'de> for Sno {
    /// Human-readable formats: the text, `null`/unit for [`Sno::ZERO`], or 10 byte values.
    /// Binary formats: the 10 raw bytes.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Sno, D::Error> {
        if deserializer.is_human_readable() {
            // Whatever the input is: a string, null (visit_unit in JSON), an array.
            deserializer.deserialize_any(SnoVisitor)
        } else {
            deserializer.deserialize_bytes(SnoVisitor)
        }
    }
}

/// Accepts every representation a format may hand over; which one is asked for is decided in
/// [`Sno::deserialize`].
struct SnoVisitor;

impl<'de> Visitor<'de> for SnoVisitor {
    type Value = Sno;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a sno ID: {TEXT_LEN} characters from 2-9 and a-x, {LEN} bytes, or null"
        )
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Sno, E> {
        decode(s.as_bytes())
            .map_err(|e| E::custom(format_args!("invalid sno ID {}: {e}", Shown(s))))
    }

    fn visit_bytes<E: de::Error>(self, b: &[u8]) -> Result<Sno, E> {
        Sno::from_slice(b).ok_or_else(|| E::invalid_length(b.len(), &self))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Sno, A::Error> {
        let mut out = [0u8; LEN];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = seq
                .next_element()?
                .ok_or_else(|| de::Error::invalid_length(i, &self))?;
        }
        let mut extra = 0;
        while seq.next_element::<de::IgnoredAny>()?.is_some() {
            extra += 1;
        }
        if extra > 0 {
            return Err(de::Error::invalid_length(LEN + extra, &self));
        }
        Ok(Sno(out))
    }

    /// Go's `MarshalJSON` writes the zero ID as `null`.
    fn visit_none<E: de::Error>(self) -> Result<Sno, E> {
        Ok(Sno::ZERO)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Sno, E> {
        Ok(Sno::ZERO)
    }

    /// A format whose input wraps the value (RON's `Some(...)`, a self-describing binary
    /// format's option tag).
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Sno, D::Error> {
        Sno::deserialize(deserializer)
    }
}

/// A string for an error message: quoted, and cut if long (the input may be anything).
struct Shown<'a>(&'a str);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const MAX: usize = 40;
        match self.0.char_indices().nth(MAX) {
            Some((cut, _)) => write!(f, "{:?}...", &self.0[..cut]),
            None => write!(f, "{:?}", self.0),
        }
    }
}

/// Go's JSON convention for a `Sno` field: the zero ID is `null`, as muyo/sno's `MarshalJSON`
/// writes it. Use with `#[serde(with = "sno::id::serde::go")]`.
///
/// The field is (de)serialized as an `Option<Sno>` that is `None` exactly for the zero ID: in
/// JSON that is Go's form byte for byte; in a binary format it is the format's option (a tag,
/// then the 10 bytes), so the attribute must be the same on the writing and the reading side.
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use sno::Sno;
///
/// #[derive(Serialize, Deserialize)]
/// struct Row {
///     #[serde(with = "sno::id::serde::go")]
///     id: Sno,
/// }
///
/// assert_eq!(serde_json::to_string(&Row { id: Sno::ZERO }).unwrap(), r#"{"id":null}"#);
/// assert_eq!(serde_json::from_str::<Row>(r#"{"id":null}"#).unwrap().id, Sno::ZERO);
/// let id = Sno::MAX;
/// assert_eq!(serde_json::to_string(&Row { id }).unwrap(), r#"{"id":"xxxxxxxxxxxxxxxx"}"#);
/// ```
pub mod go {
    use ::serde::{Deserialize, Deserializer, Serializer};

    use crate::id::layout::Sno;

    /// Writes the zero ID as none (`null`), any other as [`Sno`]'s own form.
    pub fn serialize<S: Serializer>(id: &Sno, serializer: S) -> Result<S::Ok, S::Error> {
        if id.is_zero() {
            serializer.serialize_none()
        } else {
            serializer.serialize_some(id)
        }
    }

    /// Reads none (`null`) as the zero ID, anything else as [`Sno`] does.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Sno, D::Error> {
        Ok(Option::<Sno>::deserialize(deserializer)?.unwrap_or(Sno::ZERO))
    }
}
