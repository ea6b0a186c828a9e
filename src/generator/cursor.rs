//! The server's shared cursor ([`Cursor`]) and the slice of the sequence pool it numbers from
//! ([`Slice`]): where `sno_generate`'s fast path takes its IDs, with no lock.
//!
//! Pure Rust, no PostgreSQL. The cursor is one 64-bit atomic word in shared memory: the unit
//! it serves, its tick-tock bit and the next sequence number of that unit ([`word`]). A backend
//! makes an ID with one atomic increment of the word ([`Cursor::take`]) as long as the clock
//! reads the word's unit. Unit, tick and sequence number change together, in one word. Only
//! the timeline opens the word, under the lock, on a unit the durable state on disk covers
//! ([`crate::generator::timeline::Timeline::advance`]); it closes it ([`CLOSED`]) before
//! anything that moves the timeline.

/// Sequence numbers per unit and partition.
pub const POOL: u32 = 1 << 16;

/// The smallest slice of the pool sno's generator may be confined to: 4 numbers. (muyo/sno's
/// own generator needs more: it refuses `SequenceMax - SequenceMin - 1 < 4`, so a slice of at
/// least [`MIN_PEER_SLICE`] numbers.)
pub const MIN_SLICE: u32 = 4;

/// The smallest slice a muyo/sno generator accepts (`SequenceMax - SequenceMin - 1 >=
/// minSequencePoolSize`, 4): 6 numbers.
pub const MIN_PEER_SLICE: u32 = 6;

/// The slice of the sequence pool a generator uses, `min..=max` (muyo/sno's `SequenceMin` and
/// `SequenceMax`, its "sequence sharding"): generators on disjoint slices may share a
/// partition. Every unit offers `max - min + 1` IDs.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slice {
    /// The first sequence number of every unit.
    pub min: u16,
    /// The last sequence number of every unit.
    pub max: u16,
}

/// Why a slice was refused ([`Slice::new`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SliceError {
    /// A bound outside 0..=65535.
    OutOfRange,
    /// `min >= max`.
    Reversed,
    /// Fewer than [`MIN_SLICE`] sequence numbers.
    TooSmall,
}

impl Slice {
    /// The whole pool, 0..=65535 (the default).
    pub const FULL: Slice = Slice {
        min: 0,
        max: u16::MAX,
    };

    /// The slice `min..=max`, if a generator may use it: both in 0..=65535, `min < max`, and
    /// at least [`MIN_SLICE`] numbers.
    pub const fn new(min: i64, max: i64) -> Result<Slice, SliceError> {
        if min < 0 || max < 0 || min > u16::MAX as i64 || max > u16::MAX as i64 {
            return Err(SliceError::OutOfRange);
        }
        if min >= max {
            return Err(SliceError::Reversed);
        }
        if max - min + 1 < MIN_SLICE as i64 {
            return Err(SliceError::TooSmall);
        }
        Ok(Slice {
            min: min as u16,
            max: max as u16,
        })
    }

    /// IDs per unit: `max - min + 1`.
    #[inline(always)]
    pub const fn capacity(self) -> u32 {
        self.max as u32 - self.min as u32 + 1
    }

    /// One past the last sequence number (`max + 1`).
    #[inline(always)]
    pub const fn end(self) -> u32 {
        self.max as u32 + 1
    }

    /// Whether sequence number `seq` is in the slice.
    #[inline(always)]
    pub const fn contains(self, seq: u16) -> bool {
        self.min <= seq && seq <= self.max
    }
}

/// Bits of the cursor word: the unit (39 bits), the tick-tock bit, then 24 bits of sequence
/// number. The sequence field holds [`POOL`] and more: increments that find the unit used up
/// (at most one per backend racing past the end, and backends are fewer than 2^18), and the
/// [`CLOSED`] bit, never reaching the tick-tock bit.
const SEQ_BITS: u32 = 24;
const SEQ_MASK: u64 = (1 << SEQ_BITS) - 1;
/// Set in the sequence field of a closed cursor: no increment of it is below [`POOL`].
pub const CLOSED: u64 = 1 << (SEQ_BITS - 1);

/// The cursor word for unit `unit`, tick `tick`, next sequence number `next`.
#[inline(always)]
pub const fn word(unit: u64, tick: u8, next: u32) -> u64 {
    (unit << (SEQ_BITS + 1)) | ((tick as u64 & 1) << SEQ_BITS) | next as u64
}

/// The unit of a cursor word.
#[inline(always)]
pub const fn word_unit(w: u64) -> u64 {
    w >> (SEQ_BITS + 1)
}

/// The tick-tock bit of a cursor word.
#[inline(always)]
pub const fn word_tick(w: u64) -> u8 {
    ((w >> SEQ_BITS) & 1) as u8
}

/// The next sequence number of a cursor word (without the [`CLOSED`] bit).
#[inline(always)]
pub const fn word_seq(w: u64) -> u32 {
    (w & SEQ_MASK & !CLOSED) as u32
}

/// The ID a cursor word hands out to a backend whose clock reads unit `now`, if it may:
/// the word serves that unit, is open, and has numbers left below `end` (one past the last
/// sequence number of the slice).
#[inline(always)]
pub const fn id_of(w: u64, now: u64, end: u64) -> Option<(u64, u8, u16)> {
    if word_unit(w) == now && (w & SEQ_MASK) < end {
        Some((now, word_tick(w), (w & SEQ_MASK) as u16))
    } else {
        None
    }
}

/// The server's shared cursor: which unit, timeline and next sequence number IDs are made
/// with now. One atomic word in shared memory, and beside it the end of the slice, fixed when
/// the cursor is made; only [`Timeline::advance`] opens it, under the lock, and only on a unit
/// the durable state covers; [`Cursor::take`] spends it with one atomic increment and no lock.
///
/// [`Timeline::advance`]: crate::generator::timeline::Timeline::advance
#[repr(C)]
#[derive(Debug)]
pub struct Cursor {
    word: core::sync::atomic::AtomicU64,
    /// One past the last sequence number of the slice ([`Slice::end`]).
    end: u64,
}

impl Clone for Cursor {
    /// A cursor with the same word (for models that copy a server's memory).
    fn clone(&self) -> Cursor {
        Cursor {
            word: core::sync::atomic::AtomicU64::new(self.load()),
            end: self.end,
        }
    }
}

impl Default for Cursor {
    fn default() -> Self {
        Cursor::new(Slice::FULL)
    }
}

impl Cursor {
    /// A closed cursor for `slice`: it serves nothing until the timeline opens it.
    pub const fn new(slice: Slice) -> Cursor {
        Cursor {
            word: core::sync::atomic::AtomicU64::new(CLOSED),
            end: slice.end() as u64,
        }
    }

    /// The word as it is now.
    #[inline(always)]
    pub fn load(&self) -> u64 {
        self.word.load(core::sync::atomic::Ordering::Acquire)
    }

    /// Whether the cursor serves unit `now` (a read, no increment).
    #[inline(always)]
    pub fn serves(&self, now: u64) -> bool {
        id_of(self.load(), now, self.end).is_some()
    }

    /// One increment: the ID it hands out if the word served unit `now` at that moment. An
    /// increment that hands out nothing wastes nothing anyone else can use.
    #[inline(always)]
    pub fn bump(&self, now: u64) -> Option<(u64, u8, u16)> {
        id_of(
            self.word
                .fetch_add(1, core::sync::atomic::Ordering::Acquire),
            now,
            self.end,
        )
    }

    /// The fast path: the next ID of unit `now`, if the cursor serves it. The read first keeps
    /// increments of a used-up or closed word to backends already racing on it.
    #[inline(always)]
    pub fn take(&self, now: u64) -> Option<(u64, u8, u16)> {
        if self.serves(now) {
            self.bump(now)
        } else {
            None
        }
    }

    /// Spends `n` sequence numbers of the unit the cursor serves at once, as `n` calls of
    /// [`Cursor::bump`] would: for the in-database tests, which must see a unit used up
    /// however slowly the machine runs (`n` is at most [`POOL`], which the sequence field has
    /// room for past the end on top of every backend's increments).
    #[cfg(feature = "pg_test")]
    pub fn spend(&self, n: u32) {
        debug_assert!(n <= POOL);
        self.word
            .fetch_add(u64::from(n), core::sync::atomic::Ordering::AcqRel);
    }

    /// Closes the cursor, returning the word before. Under the lock ([`Timeline::close`]).
    ///
    /// [`Timeline::close`]: crate::generator::timeline::Timeline::close
    pub fn close(&self) -> u64 {
        self.word
            .fetch_or(CLOSED, core::sync::atomic::Ordering::AcqRel)
    }

    /// Opens the cursor on unit `unit`, tick `tick`, from sequence number `next`. Under the
    /// lock, on a closed cursor ([`Timeline::advance`]).
    ///
    /// [`Timeline::advance`]: crate::generator::timeline::Timeline::advance
    pub fn open(&self, unit: u64, tick: u8, next: u32) {
        self.word.store(
            word(unit, tick, next),
            core::sync::atomic::Ordering::Release,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_are_validated_like_muyo_sno() {
        assert_eq!(Slice::new(0, 65535), Ok(Slice::FULL));
        assert_eq!(Slice::FULL.capacity(), POOL);
        assert_eq!(Slice::new(0, 3).map(Slice::capacity), Ok(MIN_SLICE));
        assert_eq!(Slice::new(0, 2), Err(SliceError::TooSmall));
        assert_eq!(Slice::new(7, 7), Err(SliceError::Reversed));
        assert_eq!(Slice::new(9, 8), Err(SliceError::Reversed));
        assert_eq!(Slice::new(-1, 8), Err(SliceError::OutOfRange));
        assert_eq!(Slice::new(0, 65536), Err(SliceError::OutOfRange));
        let s = Slice::new(32768, 65535).unwrap();
        assert_eq!((s.capacity(), s.end()), (32768, 65536));
        assert!(s.contains(32768) && s.contains(65535) && !s.contains(32767));
    }

    #[test]
    fn cursor_words_keep_their_fields_apart() {
        let w = word(crate::id::layout::MAX_UNITS, 1, 0);
        assert_eq!(
            (word_unit(w), word_tick(w), word_seq(w)),
            (crate::id::layout::MAX_UNITS, 1, 0)
        );
        // The most a sequence field can hold: closed, past the pool, and one increment from
        // each of the most backends PostgreSQL allows (2^18 - 1) racing past it.
        let most = CLOSED + POOL as u64 + (1 << 18);
        assert!(most <= SEQ_MASK);
        let w = word(5, 0, 0) + most;
        assert_eq!((word_unit(w), word_tick(w)), (5, 0));
        let end = POOL as u64;
        assert_eq!(id_of(w, 5, end), None);
        assert_eq!(id_of(word(5, 1, 7), 5, end), Some((5, 1, 7)));
        assert_eq!(id_of(word(5, 1, 7), 6, end), None);
        assert_eq!(id_of(word(5, 1, POOL), 5, end), None);
        assert_eq!(id_of(word(5, 1, 7) | CLOSED, 5, end), None);
        // The end of a slice.
        assert_eq!(id_of(word(5, 1, 7), 5, 8), Some((5, 1, 7)));
        assert_eq!(id_of(word(5, 1, 8), 5, 8), None);
        // A new cursor serves nothing, not even unit 0.
        let c = Cursor::default();
        assert_eq!(c.take(0), None);
        c.open(9, 1, 3);
        assert_eq!(c.take(9), Some((9, 1, 3)));
        assert_eq!(c.take(10), None);
        assert_eq!(word_seq(c.close()), 4);
        assert_eq!(c.take(9), None);
        assert_eq!(
            c.bump(9),
            None,
            "an increment of a closed word hands out nothing"
        );
    }
}
