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
mod tests;
