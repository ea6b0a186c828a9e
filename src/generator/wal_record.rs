//! The payload of the `sno` WAL record (a lineage bound), encoded and decoded.
//!
//! Pure Rust, no PostgreSQL: the resource manager in the glue (`pg::wal`) writes what
//! [`encode`] gives and replays what [`decode`] accepts. Redo merges the record into the
//! lineage state and the live timeline of the replaying server, so the decoder takes only what
//! [`encode`] can write: a bound within the format's range, a real WAL timeline, the exact
//! length. Anything else is a [`RecordError`], never a panic and never a merged value (a horizon
//! past [`MAX_UNITS`] would stop the generator; one past `i64::MAX` would read as negative).
//!
//! Layout (little-endian, 39 bytes and 2 per partition):
//!
//! | offset | size | field                                                      |
//! |--------|------|------------------------------------------------------------|
//! | 0      | 1    | format version, 1                                          |
//! | 1      | 8    | incarnation that wrote it                                  |
//! | 9      | 4    | WAL timeline, 1 to 2^32 - 2                                |
//! | 13     | 8    | horizon, 0 to [`MAX_UNITS`]                                |
//! | 21     | 8    | safe mark (as `i64`), -1 to [`MAX_UNITS`]                  |
//! | 29     | 8    | drifts (tick-tock flips)                                   |
//! | 37     | 2    | number of partitions, n                                    |
//! | 39     | 2n   | the partitions                                             |

use crate::generator::bound::Persisted;
use crate::generator::lineage::{State, UPGRADED};
use crate::id::layout::MAX_UNITS;

/// The format version, the record's first byte.
pub const VERSION: u8 = 1;
/// The bytes before the partitions.
pub const HEAD_LEN: usize = 39;

/// A decoded lineage record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// The incarnation that wrote it.
    pub incarnation: u64,
    /// Its WAL timeline.
    pub timeline: u32,
    /// Every ID it made is within this bound.
    pub bound: Persisted,
    /// The partitions it used.
    pub partitions: Vec<u16>,
}

/// Why bytes are not a lineage record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordError {
    /// No bytes at all (a record without main data).
    Empty,
    /// A first byte other than [`VERSION`].
    Version(u8),
    /// Shorter than the fixed part; holds the length.
    Short(usize),
    /// Not exactly the fixed part and two bytes per partition.
    Length {
        /// The record's length.
        len: usize,
        /// The number of partitions it announces.
        count: u16,
    },
    /// A WAL timeline PostgreSQL never uses (0), or the lineage's "not judged yet" mark.
    Timeline(u32),
    /// A horizon past the last unit of the format.
    Horizon(u64),
    /// A safe mark outside -1 and the last unit of the format.
    Safe(i64),
}

impl core::fmt::Display for RecordError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            RecordError::Empty => write!(f, "no data"),
            RecordError::Version(v) => write!(f, "unknown format version {v}"),
            RecordError::Short(n) => write!(f, "{n} bytes, fewer than {HEAD_LEN}"),
            RecordError::Length { len, count } => write!(
                f,
                "{len} bytes for {count} partitions ({} expected)",
                HEAD_LEN + 2 * count as usize
            ),
            RecordError::Timeline(t) => write!(f, "timeline {t} out of range"),
            RecordError::Horizon(h) => write!(f, "horizon {h} out of range"),
            RecordError::Safe(s) => write!(f, "safe mark {s} out of range"),
        }
    }
}

impl std::error::Error for RecordError {}

/// A lineage record for `st` on WAL timeline `timeline`: incarnation, timeline, bound,
/// partitions.
///
/// The partitions are every one this incarnation used ([`State::used_by_me`]), those with an
/// entry first, then those without (2 bytes each: a server that used many partitions writes
/// longer records), so that a standby or a restore learns them all from WAL alone. The count
/// is 16 bits: of an incarnation that used all 65,536 partitions, one without an entry is
/// left out (it was in the records written when it was used, with an entry).
pub fn encode(st: &State, timeline: u32) -> Vec<u8> {
    let mut mine: Vec<u16> = st
        .entries()
        .iter()
        .filter(|e| e.mine)
        .map(|e| e.partition)
        .collect();
    mine.extend(st.folded().filter(|e| e.mine).map(|e| e.partition));
    mine.truncate(u16::MAX as usize);
    let mut v = Vec::with_capacity(HEAD_LEN + 2 * mine.len());
    v.push(VERSION);
    v.extend_from_slice(&st.incarnation.to_le_bytes());
    v.extend_from_slice(&timeline.to_le_bytes());
    v.extend_from_slice(&st.me.horizon.to_le_bytes());
    v.extend_from_slice(&st.me.safe.to_le_bytes());
    v.extend_from_slice(&st.me.drifts.to_le_bytes());
    v.extend_from_slice(&(mine.len() as u16).to_le_bytes());
    for p in mine {
        v.extend_from_slice(&p.to_le_bytes());
    }
    v
}

/// Reads a lineage record, checking every field against what [`encode`] can write.
pub fn decode(b: &[u8]) -> Result<Record, RecordError> {
    match b.first() {
        None => return Err(RecordError::Empty),
        Some(&VERSION) => {}
        Some(&v) => return Err(RecordError::Version(v)),
    }
    let Some(head) = b.first_chunk::<HEAD_LEN>() else {
        return Err(RecordError::Short(b.len()));
    };
    let u64_at = |i: usize| u64::from_le_bytes(head[i..i + 8].try_into().unwrap_or([0; 8]));
    let count = u16::from_le_bytes([head[37], head[38]]);
    if b.len() != HEAD_LEN + 2 * count as usize {
        return Err(RecordError::Length {
            len: b.len(),
            count,
        });
    }
    let timeline = u32::from_le_bytes([head[9], head[10], head[11], head[12]]);
    if timeline == 0 || timeline == UPGRADED {
        return Err(RecordError::Timeline(timeline));
    }
    let bound = Persisted {
        horizon: u64_at(13),
        safe: u64_at(21) as i64,
        drifts: u64_at(29),
    };
    if bound.horizon > MAX_UNITS {
        return Err(RecordError::Horizon(bound.horizon));
    }
    if bound.safe < -1 || bound.safe > MAX_UNITS as i64 {
        return Err(RecordError::Safe(bound.safe));
    }
    Ok(Record {
        incarnation: u64_at(1),
        timeline,
        bound,
        partitions: b[HEAD_LEN..]
            .chunks_exact(2)
            .map(|p| u16::from_le_bytes([p[0], p[1]]))
            .collect(),
    })
}

/// The payload of a grant record: the lineage's allocator granted `partition` (reserved) in
/// `incarnation`, to role `role` (an OID, 0: unknown). Little-endian, 15 bytes: format version 1
/// (1 byte), incarnation (8), partition (2), role (4). Written before any ID uses the partition; redo records the grant
/// ([`State::note_granted`]), so that no server carrying the WAL grants it again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GrantRecord {
    /// The incarnation that granted it.
    pub incarnation: u64,
    /// The reserved partition granted.
    pub partition: u16,
    /// The role it was granted to (0: unknown).
    pub role: u32,
}

/// The length of a grant record.
pub const GRANT_LEN: usize = 15;

/// The bytes of a grant record.
pub fn encode_grant(g: &GrantRecord) -> [u8; GRANT_LEN] {
    let mut b = [0u8; GRANT_LEN];
    b[0] = VERSION;
    b[1..9].copy_from_slice(&g.incarnation.to_le_bytes());
    b[9..11].copy_from_slice(&g.partition.to_le_bytes());
    b[11..15].copy_from_slice(&g.role.to_le_bytes());
    b
}

/// Reads a grant record: exactly [`GRANT_LEN`] bytes, version 1, a reserved partition.
pub fn decode_grant(b: &[u8]) -> Option<GrantRecord> {
    if b.len() != GRANT_LEN || b[0] != VERSION {
        return None;
    }
    let incarnation = u64::from_le_bytes(b[1..9].try_into().ok()?);
    let partition = u16::from_le_bytes([b[9], b[10]]);
    let role = u32::from_le_bytes(b[11..15].try_into().ok()?);
    crate::generator::reserved::is_reserved(partition).then_some(GrantRecord {
        incarnation,
        partition,
        role,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn grant_records_round_trip_and_reject_what_encode_cannot_write() {
        let g = GrantRecord {
            incarnation: 0x0102_0304_0506_0708,
            partition: 61_441,
            role: 16_384,
        };
        assert_eq!(decode_grant(&encode_grant(&g)), Some(g));
        let b = encode_grant(&g);
        assert_eq!(decode_grant(&b[..14]), None);
        let mut long = b.to_vec();
        long.push(0);
        assert_eq!(decode_grant(&long), None);
        let mut v2 = b;
        v2[0] = 2;
        assert_eq!(decode_grant(&v2), None);
        let live = encode_grant(&GrantRecord {
            partition: 61_439,
            ..g
        });
        assert_eq!(decode_grant(&live), None);
    }

    use super::*;
    use proptest::prelude::*;

    fn sample() -> State {
        let mut st = State::fresh(42, 5, 3, 77);
        st.me = Persisted {
            horizon: 531_234_567,
            safe: -1,
            drifts: 3,
        };
        st.note(7, true, st.me);
        st.note(
            9,
            false,
            Persisted {
                horizon: 100,
                safe: 50,
                drifts: 1,
            },
        );
        st
    }

    /// `bytes` with `value` written at `at`.
    fn with(mut bytes: Vec<u8>, at: usize, value: &[u8]) -> Vec<u8> {
        bytes[at..at + value.len()].copy_from_slice(value);
        bytes
    }

    #[test]
    fn round_trip() {
        let st = sample();
        let bytes = encode(&st, 4);
        assert_eq!(bytes.len(), HEAD_LEN + 2);
        assert_eq!(
            decode(&bytes),
            Ok(Record {
                incarnation: 5,
                timeline: 4,
                bound: st.me,
                partitions: vec![7]
            })
        );
    }

    #[test]
    fn every_cut_is_rejected() {
        let bytes = encode(&sample(), 4);
        assert_eq!(decode(&[]), Err(RecordError::Empty));
        for cut in 1..HEAD_LEN {
            assert_eq!(decode(&bytes[..cut]), Err(RecordError::Short(cut)));
        }
        assert_eq!(
            decode(&bytes[..HEAD_LEN]),
            Err(RecordError::Length {
                len: HEAD_LEN,
                count: 1
            })
        );
        assert_eq!(
            decode(&bytes[..HEAD_LEN + 1]),
            Err(RecordError::Length {
                len: HEAD_LEN + 1,
                count: 1
            })
        );
        let mut longer = bytes.clone();
        longer.extend_from_slice(&[0, 0]);
        assert_eq!(
            decode(&longer),
            Err(RecordError::Length {
                len: HEAD_LEN + 4,
                count: 1
            })
        );
    }

    #[test]
    fn an_unknown_version_is_rejected() {
        let bytes = encode(&sample(), 4);
        for v in [0u8, 2, 0x10, 0xff] {
            assert_eq!(
                decode(&with(bytes.clone(), 0, &[v])),
                Err(RecordError::Version(v))
            );
        }
    }

    #[test]
    fn a_timeline_postgresql_never_uses_is_rejected() {
        let bytes = encode(&sample(), 4);
        for t in [0, UPGRADED] {
            assert_eq!(
                decode(&with(bytes.clone(), 9, &t.to_le_bytes())),
                Err(RecordError::Timeline(t))
            );
        }
        let last = UPGRADED - 1;
        assert_eq!(
            decode(&with(bytes, 9, &last.to_le_bytes())).map(|r| r.timeline),
            Ok(last)
        );
    }

    #[test]
    fn a_horizon_past_the_format_is_rejected() {
        let bytes = encode(&sample(), 4);
        for h in [MAX_UNITS + 1, 1 << 63, u64::MAX] {
            assert_eq!(
                decode(&with(bytes.clone(), 13, &h.to_le_bytes())),
                Err(RecordError::Horizon(h))
            );
        }
        let r = decode(&with(bytes, 13, &MAX_UNITS.to_le_bytes())).unwrap();
        assert_eq!(r.bound.horizon, MAX_UNITS);
    }

    #[test]
    fn a_safe_mark_outside_the_format_is_rejected() {
        let bytes = encode(&sample(), 4);
        for s in [-2i64, i64::MIN, MAX_UNITS as i64 + 1, i64::MAX] {
            assert_eq!(
                decode(&with(bytes.clone(), 21, &s.to_le_bytes())),
                Err(RecordError::Safe(s))
            );
        }
        for s in [-1i64, 0, MAX_UNITS as i64] {
            let r = decode(&with(bytes.clone(), 21, &s.to_le_bytes())).unwrap();
            assert_eq!(r.bound.safe, s);
        }
    }

    #[test]
    fn errors_say_what_is_wrong() {
        assert_eq!(
            RecordError::Horizon(u64::MAX).to_string(),
            "horizon 18446744073709551615 out of range"
        );
        assert_eq!(
            RecordError::Length { len: 40, count: 1 }.to_string(),
            "40 bytes for 1 partitions (41 expected)"
        );
    }

    /// A record as [`encode`] writes it for any in-range values.
    fn valid() -> impl Strategy<Value = (Record, Vec<u8>)> {
        (
            any::<u64>(),
            1u32..UPGRADED,
            0..=MAX_UNITS,
            -1..=MAX_UNITS as i64,
            any::<u64>(),
            proptest::collection::vec(any::<u16>(), 0..8),
        )
            .prop_map(
                |(incarnation, timeline, horizon, safe, drifts, partitions)| {
                    let mut st = State::fresh(1, incarnation, timeline, 0);
                    st.me = Persisted {
                        horizon,
                        safe,
                        drifts,
                    };
                    let mut want = Vec::new();
                    for &p in &partitions {
                        if !st.is_mine(p) {
                            st.note(p, true, st.me);
                            want.push(p);
                        }
                    }
                    let bytes = encode(&st, timeline);
                    let rec = Record {
                        incarnation,
                        timeline,
                        bound: st.me,
                        partitions: want,
                    };
                    (rec, bytes)
                },
            )
    }

    /// What a correct decoder must say of `b`, written independently of [`decode`].
    fn verdict(b: &[u8]) -> Result<(), RecordError> {
        if b.is_empty() {
            return Err(RecordError::Empty);
        }
        if b[0] != VERSION {
            return Err(RecordError::Version(b[0]));
        }
        if b.len() < HEAD_LEN {
            return Err(RecordError::Short(b.len()));
        }
        let count = b[37] as usize | (b[38] as usize) << 8;
        if b.len() != HEAD_LEN + 2 * count {
            return Err(RecordError::Length {
                len: b.len(),
                count: count as u16,
            });
        }
        let le = |r: core::ops::Range<usize>| {
            b[r].iter()
                .rev()
                .fold(0u64, |acc, &x| (acc << 8) | x as u64)
        };
        let t = le(9..13) as u32;
        if t == 0 || t == u32::MAX {
            return Err(RecordError::Timeline(t));
        }
        if le(13..21) >= 1 << 39 {
            return Err(RecordError::Horizon(le(13..21)));
        }
        let s = le(21..29) as i64;
        if !(-1..1 << 39).contains(&s) {
            return Err(RecordError::Safe(s));
        }
        Ok(())
    }

    proptest! {
        #[test]
        fn valid_records_round_trip((rec, bytes) in valid()) {
            let got = decode(&bytes).unwrap();
            prop_assert_eq!(&got, &rec);
            // And encode again to the same bytes.
            let mut st = State::fresh(1, got.incarnation, got.timeline, 0);
            st.me = got.bound;
            for &p in &got.partitions {
                st.note(p, true, st.me);
            }
            prop_assert_eq!(encode(&st, got.timeline), bytes);
        }

        #[test]
        fn arbitrary_bytes_never_panic_and_get_the_right_verdict(
            mut b in proptest::collection::vec(any::<u8>(), 0..60),
            version: bool,
            count: bool,
            small: bool,
        ) {
            // Past the first checks often enough: the version byte, a count that fits the
            // length, fields with their high bytes cleared.
            if version && !b.is_empty() {
                b[0] = VERSION;
            }
            if count && b.len() >= HEAD_LEN && (b.len() - HEAD_LEN) % 2 == 0 {
                let n = ((b.len() - HEAD_LEN) / 2) as u16;
                b[37..39].copy_from_slice(&n.to_le_bytes());
            }
            if small && b.len() >= HEAD_LEN {
                for i in [12, 17, 18, 19, 20, 25, 26, 27, 28] {
                    b[i] = 0;
                }
            }
            prop_assert_eq!(decode(&b).map(|_| ()), verdict(&b));
        }

        #[test]
        fn a_mutated_record_is_decoded_or_rejected_for_its_reason(
            (_, bytes) in valid(),
            at: usize,
            x in 1u8..=255,
            cut in proptest::option::of(0usize..60),
        ) {
            let mut b = bytes;
            let i = at % b.len();
            b[i] ^= x;
            if let Some(c) = cut {
                b.truncate(c);
            }
            match decode(&b) {
                Ok(r) => {
                    prop_assert_eq!(verdict(&b), Ok(()));
                    prop_assert!(r.bound.horizon <= MAX_UNITS);
                    prop_assert!((-1..=MAX_UNITS as i64).contains(&r.bound.safe));
                    prop_assert_eq!(b.len(), HEAD_LEN + 2 * r.partitions.len());
                }
                Err(e) => prop_assert_eq!(Err(e), verdict(&b)),
            }
        }
    }
}
