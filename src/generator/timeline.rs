//! The generator state machine: a server-wide timeline, and the shared cursor that hands out
//! its sequence numbers one at a time.
//!
//! Pure Rust, no PostgreSQL, no clock: every function takes the current time (in 4 ms units)
//! as an argument, so tests drive it with a fake clock that jumps backwards.
//!
//! Design: one shared cursor per server, so IDs are numbered in the order they are made.
//! * The [`Timeline`] lives in shared memory behind a lock. It holds the high-water unit of the
//!   current timeline, the tick-tock state, the safe mark and the durable horizon last written.
//! * The [`Cursor`] is one 64-bit atomic word beside it: the unit it serves, its tick-tock bit
//!   and the next sequence number of that unit. A backend makes an ID with one atomic
//!   increment of the word ([`Cursor::take`]), no lock, as long as the clock reads the word's
//!   unit. Unit, tick and sequence number change together, in one word (muyo/sno updates them
//!   separately and can repeat a sequence number under concurrency).
//! * The first backend to read a new unit (or to find the word used up) takes the lock and
//!   asks the timeline ([`Timeline::advance`]): it closes the word, decides the next unit,
//!   flip or wait, and opens the word on the new unit only once the durable state on disk
//!   covers it. So the cursor never serves an ID past the horizon on disk.
//! * Why one counter and not per-backend blocks: with blocks, concurrent backends spend
//!   interleaved ranges of a unit, so keys reach the primary-key index out of order and its
//!   rightmost leaf splits in the middle, leaving half-empty pages behind (an index as large as
//!   one on random UUIDs). Numbered in the order they are made, concurrent inserts append.
//! * Clock regressions follow muyo/sno's tick-tock rule: the first one
//!   flips T at once; one into time already used on the current timeline waits.

use crate::generator::bound::{ticks, Persisted};
use crate::generator::cursor::{word_seq, word_tick, word_unit, Cursor, Slice, POOL};

/// The server-wide timeline. `#[repr(C)]` because it lives in shared memory.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeline {
    /// High-water mark (muyo/sno's `wallHi`): the latest unit opened on the current timeline.
    pub hi: u64,
    /// Next free sequence number of unit `hi` when the cursor was last closed ([`Timeline::close`]
    /// brings it up to date); [`POOL`] once the unit is used up.
    pub next: u32,
    /// Every unit ever opened on the *other* timeline is `<= safe` (`wallSafe`); -1 when the
    /// other timeline has never been used.
    pub safe: i64,
    /// Clock regressions turned into a tick-tock flip. The current tick is `drifts & 1`.
    pub drifts: u64,
    /// The durable horizon last written ([`crate::generator::state_file`]): no ID of the current timeline is
    /// beyond it.
    pub horizon: u64,
    /// `drifts` as last written.
    pub written_drifts: u64,
    /// The slice of the pool every unit is numbered from (fixed for the server's life).
    pub slice: Slice,
    /// Numbers of later units promised to callers that found a unit used up, in the order
    /// they asked ([`Timeline::promise`]): every unit after `hi` and before `promised_unit`
    /// is promised whole, and `promised_unit` from the slice's min up to `promised` numbers.
    /// The cursor opens a unit past what is promised of it.
    pub promised_unit: u64,
    /// How many numbers of `promised_unit` are promised.
    pub promised: u32,
    /// Bumped whenever the timeline moves in a way that voids the promises made before (a
    /// flip, an absorb, a restore over a running server): a promise of another round is not
    /// kept ([`Timeline::claim`]).
    pub round: u64,
    /// Promises of this round given back unclaimed (a cancelled or failed call), as
    /// `unit << 16 | seq`, 0 for none: promised again before the frontier moves on, so that
    /// calls given up do not push everyone's turn ahead ([`Timeline::give_back`]).
    pub returned: [u64; RETURNED],
    /// Per tick-tock bit, the highest bound any durable record gave it: the state file, and
    /// the WAL records a crash recovery or a standby replays (which only ever raise bounds).
    /// Not lowered by a flip (whose `safe` is the exact high-water mark) nor by a clean stop.
    /// A long horizon is written on one timeline only once the other's is behind the clock
    /// ([`Timeline::idle_lease`]).
    pub durable_max: [i64; 2],
    /// The highest clock reading the slow path was given since start-up (0: none yet). A flip
    /// with the clock behind it is the clock's doing; one with the clock at or past it resumes
    /// before time known only from a durable bound (a restart or promotion within a lease, a
    /// partition taken over): no clock moved back.
    pub seen: u64,
    /// The slow path's previous clock reading (0: none yet).
    pub last: u64,
    /// Tick-tock flips since start-up, of any cause.
    pub flips: u64,
    /// Clock regressions since start-up: readings behind the previous one, each step back
    /// counted once, whether it flips the tick-tock bit or waits.
    pub regressions: u64,
}

/// How many promises given back a timeline keeps for the next callers (more are lost like
/// numbers the cursor skips: none is more than [`MAX_LEAD`] units ahead, so they hold nothing
/// back for longer).
pub const RETURNED: usize = 64;

/// How far ahead of the clock a promise may be, in units (16 ms): a caller that would be
/// promised a later unit gets none, waits for the next unit and asks again (as every caller
/// did before promises). A queue served in order whose callers give up (statement_timeout)
/// before their turn comes serves no one once it is longer than their patience; bounded this
/// short, every promised caller is served within 16 ms, and what promises given up and not
/// kept ([`RETURNED`]) can hold back is bounded too.
pub const MAX_LEAD: u64 = 4;

/// A sequence number of a later unit, promised to a caller that found its unit used up: it
/// is that caller's turn, kept for it whoever else asks meanwhile ([`Timeline::promise`],
/// [`Timeline::claim`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Promise {
    /// The unit the number is in.
    pub unit: u64,
    /// The tick-tock bit of the timeline it was promised on.
    pub tick: u8,
    /// The sequence number.
    pub seq: u16,
    /// The [`Timeline::round`] it was promised in.
    pub round: u64,
}

/// What the timeline answers a caller that comes to claim its [`Promise`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Claim {
    /// The promised ID: unit, tick-tock bit, sequence number.
    Take((u64, u8, u16)),
    /// The durable state must be written before the promised unit may be handed out.
    Write,
    /// The clock has not reached the promised unit: wait for it.
    Wait {
        /// The promised unit.
        until: u64,
    },
    /// The timeline moved since the promise (a flip, an absorb): ask again from the start.
    Void,
}

/// What the timeline answers a backend whose clock reads a unit the cursor does not serve.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grant {
    /// The cursor serves the clock's unit: take from it.
    Open {
        /// Whether this request opened it (else another backend had, a moment before).
        opened: bool,
        /// Whether this request turned a clock regression into a new timeline.
        flipped: bool,
    },
    /// The durable state must be written before the cursor may serve the clock's unit (the
    /// horizon on disk is behind it, the tick-tock state changed, or the lineage did). The
    /// timeline has moved (a flip stays flipped); the cursor stays closed until the write.
    Write {
        /// Whether this request turned a clock regression into a new timeline.
        flipped: bool,
    },
    /// Every sequence number of the current unit is taken: wait for unit `until`.
    FullUnit {
        /// The first unit worth asking again in.
        until: u64,
    },
    /// The clock went back into time already used on this timeline, and flipping again would
    /// collide with the other timeline: wait until the clock reaches `until`.
    ClockBehind {
        /// The first unit worth asking again in.
        until: u64,
    },
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline::new(Slice::FULL)
    }
}

impl Timeline {
    /// A timeline on which nothing has been issued yet, numbering units from `slice`.
    pub const fn new(slice: Slice) -> Timeline {
        Timeline {
            hi: 0,
            next: slice.min as u32,
            safe: -1,
            drifts: 0,
            horizon: 0,
            written_drifts: 0,
            slice,
            promised_unit: 0,
            promised: 0,
            round: 0,
            returned: [0; RETURNED],
            durable_max: [0, -1],
            seen: 0,
            last: 0,
            flips: 0,
            regressions: 0,
        }
    }

    /// The timeline after a restart or a crash, from its durable state: every unit up to the
    /// horizon counts as used (whatever slice numbered it), so a clock behind it is a
    /// regression like any other.
    pub const fn restore(p: Persisted, slice: Slice) -> Timeline {
        Timeline {
            hi: p.horizon,
            next: POOL,
            safe: p.safe,
            drifts: p.drifts,
            horizon: p.horizon,
            written_drifts: p.drifts,
            slice,
            promised_unit: 0,
            promised: 0,
            round: 0,
            returned: [0; RETURNED],
            durable_max: ticks(&p),
            seen: 0,
            last: 0,
            flips: 0,
            regressions: 0,
        }
    }

    /// What is due to be written durably: a horizon `ahead` units past the high-water mark
    /// once it comes within `margin` units of the written one (a renewal, written ahead of
    /// need by the `sno lineage` worker), or the new tick-tock state after a flip. `None`:
    /// nothing to write.
    pub fn due(&self, ahead: u64, margin: u64) -> Option<Persisted> {
        // Near the end of the format's range the horizon cannot move past its last unit:
        // once it is there, it is written once, not at every lease.
        let max = crate::id::layout::MAX_UNITS;
        let renew = self.hi.saturating_add(margin) > self.horizon && self.horizon < max;
        if self.drifts != self.written_drifts || renew {
            Some(Persisted {
                horizon: self
                    .hi
                    .saturating_add(ahead)
                    .min(crate::id::layout::MAX_UNITS),
                safe: self.safe,
                drifts: self.drifts,
            })
        } else {
            None
        }
    }

    /// The *idle lease*, written once by the `sno lineage` worker when no unit was opened for a
    /// while: a horizon `lead` units past the clock `now`, so that the first ID after a pause of
    /// up to `lead` finds the durable state already covering it and does not wait for a write.
    /// `None` when none is due or allowed:
    /// * `lead` is `slack` or less (turned off), or a horizon at least `lead - slack` past the
    ///   high-water mark is already on disk ([`Timeline::lease_wanted`]: an idle server writes
    ///   it once, then nothing until IDs move the high-water mark more than `slack`);
    /// * the clock is behind the high-water mark (a flip or a wait comes first), or a new
    ///   tick-tock state is not written yet;
    /// * the other tick-tock timeline is used, or was ever written durably, up to the clock or
    ///   past it ([`Timeline::durable_max`]: after a flip within a lease, and after a restart
    ///   that resumed past a lease written before a crash): a long horizon on this timeline
    ///   now would make a crash, or a standby promoted with both bounds, wait for it, since a
    ///   restart could not flip back. Until the clock passes that mark, horizons are the short
    ///   ones renewed under load, and a crash there costs at most their length in waiting.
    pub fn idle_lease(&self, now: u64, lead: u64, slack: u64) -> Option<Persisted> {
        let max = crate::id::layout::MAX_UNITS;
        let other = 1 - self.tick() as usize;
        let allowed = now >= self.hi
            && now < max
            && self.drifts == self.written_drifts
            && self.safe < now as i64
            && self.durable_max[other] < now as i64;
        if !allowed || !self.lease_wanted(lead, slack) {
            return None;
        }
        Some(Persisted {
            horizon: now.saturating_add(lead).min(max),
            safe: self.safe,
            drifts: self.drifts,
        })
    }

    /// Whether no horizon reaching `lead - slack` past the high-water mark is on disk (the
    /// idle lease, [`Timeline::idle_lease`], is then written once the server is idle). Measured
    /// from the high-water mark, not the clock: an idle server's lease never comes due again
    /// until IDs move that mark more than `slack` past where it was written. So a pause up to
    /// `lead - slack` after any burst finds a lease covering it, and a server making IDs now
    /// and then writes a lease at most once per `slack` of its clock. `lead <= slack`: never.
    pub fn lease_wanted(&self, lead: u64, slack: u64) -> bool {
        let max = crate::id::layout::MAX_UNITS;
        let reach = lead.saturating_sub(slack);
        reach > 0 && self.horizon < self.hi.saturating_add(reach).min(max)
    }

    /// At a clean stop (the worker's last act at shutdown): the durable state with the horizon
    /// at the high-water mark itself, since nothing was made past it, so that a restart with
    /// the clock past it flips nothing. The horizon in memory is lowered to it at once: from
    /// here on, a unit past it is opened only after another write. Under the lock, holding
    /// the writer lock until [`Timeline::written`] records it.
    pub fn stop(&mut self) -> Persisted {
        self.horizon = self.horizon.min(self.hi);
        Persisted {
            horizon: self.hi,
            safe: self.safe,
            drifts: self.drifts,
        }
    }

    /// What is known durably of this timeline: the written horizon, or the high-water mark
    /// if that is later.
    pub fn durable(&self) -> Persisted {
        Persisted {
            horizon: self.horizon.max(self.hi),
            safe: self.safe,
            drifts: self.drifts,
        }
    }

    /// Records that `p` is now on disk.
    pub fn written(&mut self, p: Persisted) {
        self.horizon = p.horizon;
        self.written_drifts = p.drifts;
        self.note_durable(&p);
    }

    /// At start-up: what was written durably before, beyond `me` (the lineage's bound on this
    /// incarnation's partitions, which keeps a lease a clean stop gave back: standbys still
    /// have it in WAL).
    pub fn recall(&mut self, written: Persisted) {
        self.note_durable(&written);
    }

    /// Raises [`Timeline::durable_max`] to what `p` says of each tick-tock timeline.
    fn note_durable(&mut self, p: &Persisted) {
        let t = ticks(p);
        for (m, b) in self.durable_max.iter_mut().zip(t) {
            *m = (*m).max(b);
        }
    }

    /// Makes the timeline respect `b` too: every unit within it counts as used on its
    /// tick-tock timeline (what another member of the lineage made, see [`crate::generator::lineage`]).
    /// The cursor is closed first: what it served may now be another's.
    pub fn absorb(&mut self, b: Persisted, c: &Cursor) {
        self.close(c);
        self.void_promises();
        self.note_durable(&b);
        let t = self.tick() as usize;
        let theirs = ticks(&b);
        if theirs[t] >= self.hi as i64 {
            self.hi = theirs[t] as u64;
            self.next = POOL;
        }
        self.safe = self.safe.max(theirs[1 - t]);
    }

    /// The current tick-tock bit.
    #[inline]
    pub const fn tick(&self) -> u8 {
        (self.drifts & 1) as u8
    }

    /// Whether the durable state on disk covers unit `unit` of the current timeline: the
    /// tick-tock state was written, and the horizon is not behind `unit`.
    #[inline]
    pub fn covers(&self, unit: u64) -> bool {
        self.drifts == self.written_drifts && unit <= self.horizon
    }

    /// Closes the cursor (no increment hands out an ID after this) and takes back how far it
    /// went in unit `hi`. Under the lock, before anything that moves the timeline.
    pub fn close(&mut self, c: &Cursor) {
        let old = c.close();
        if word_unit(old) == self.hi && word_tick(old) == self.tick() {
            self.next = self.next.max(word_seq(old).min(POOL));
        }
    }

    /// The slow path, under the lock, at clock `now` (read under the lock): makes the cursor
    /// serve unit `now` if it may. `dirty`: the lineage changed and must be written first.
    pub fn advance(&mut self, c: &Cursor, now: u64, dirty: bool) -> Grant {
        // Another backend opened it a moment ago (an open cursor is always covered).
        if !dirty && c.serves(now) {
            return Grant::Open {
                opened: false,
                flipped: false,
            };
        }
        self.close(c);
        let mut flipped = false;
        self.regressions += u64::from(now < self.last);
        self.last = now;
        self.seen = self.seen.max(now);
        if now > self.hi {
            self.hi = now;
            // Past what callers waiting for their turn were promised of it.
            self.next = self.slice.min as u32 + self.promised_in(now);
        } else if now < self.hi {
            if now as i64 > self.safe {
                // First regression (or one past every unit of the other timeline): flip T and
                // go on at once. Units up to the old high-water mark stay taken on the old
                // timeline; what was promised past it is not kept (every unit of the old
                // timeline must stay within the safe mark).
                self.void_promises();
                self.safe = self.hi as i64;
                self.drifts += 1;
                self.flips += 1;
                self.hi = now;
                self.next = self.slice.min as u32;
                flipped = true;
            } else {
                // Back into time used on this timeline, and the other one is used here too:
                // wait until the clock is back at the high-water mark, or past the safe mark.
                return Grant::ClockBehind {
                    until: self.hi.min((self.safe + 1) as u64),
                };
            }
        }
        if self.next >= self.slice.end() {
            return Grant::FullUnit { until: self.hi + 1 };
        }
        if dirty || !self.covers(self.hi) {
            return Grant::Write { flipped };
        }
        c.open(self.hi, self.tick(), self.next);
        Grant::Open {
            opened: true,
            flipped,
        }
    }

    /// How many numbers of unit `unit` (after `hi`) are promised.
    fn promised_in(&self, unit: u64) -> u32 {
        match self.promised_unit.cmp(&unit) {
            core::cmp::Ordering::Greater => self.slice.capacity(),
            core::cmp::Ordering::Equal => self.promised,
            core::cmp::Ordering::Less => 0,
        }
    }

    /// Voids every promise made so far (their callers ask again).
    pub fn void_promises(&mut self) {
        self.round += 1;
        self.promised_unit = 0;
        self.promised = 0;
        self.returned = [0; RETURNED];
    }

    /// For a caller that found unit `hi` used up ([`Grant::FullUnit`]) at clock `now`: the
    /// next number no one was promised in the units after `hi`, in the order callers ask, so
    /// that a caller waits for its turn instead of racing everyone at every new unit. A number
    /// given back by a caller that gave up is promised again first. `None` when the next
    /// number is more than [`MAX_LEAD`] units ahead of the clock (the caller waits for the next
    /// unit and asks again) or past the last unit of the format. Under the lock.
    pub fn promise(&mut self, now: u64) -> Option<Promise> {
        let (unit, n) = match self.take_returned() {
            Some(x) => x,
            None => {
                let (mut unit, mut n) = (self.promised_unit, self.promised);
                if unit <= self.hi {
                    (unit, n) = (self.hi + 1, 0);
                }
                if n >= self.slice.capacity() {
                    (unit, n) = (unit + 1, 0);
                }
                if unit > crate::id::layout::MAX_UNITS || unit > now.max(self.hi) + MAX_LEAD {
                    return None;
                }
                (self.promised_unit, self.promised) = (unit, n + 1);
                (unit, n)
            }
        };
        Some(Promise {
            unit,
            tick: self.tick(),
            seq: (self.slice.min as u32 + n) as u16,
            round: self.round,
        })
    }

    /// The earliest number given back that is still ahead of `hi` (its unit not opened yet),
    /// as (unit, index in the slice); those of units already reached are dropped.
    fn take_returned(&mut self) -> Option<(u64, u32)> {
        let mut best: Option<usize> = None;
        for i in 0..RETURNED {
            let r = self.returned[i];
            if r == 0 {
                continue;
            }
            if r >> 16 <= self.hi {
                self.returned[i] = 0;
            } else if best.is_none_or(|b| r < self.returned[b]) {
                best = Some(i);
            }
        }
        let r = core::mem::take(&mut self.returned[best?]);
        Some((r >> 16, (r & 0xffff) as u32 - self.slice.min as u32))
    }

    /// A caller gives its promise `p` back unclaimed (its call was cancelled or failed): the
    /// last number promised is simply not promised any more, another is kept for the next
    /// caller (up to [`RETURNED`] of them; past that it is lost, as a number the cursor skips).
    /// Under the lock.
    pub fn give_back(&mut self, p: Promise) {
        if p.round != self.round || p.tick != self.tick() || p.unit <= self.hi {
            return;
        }
        let n = p.seq as u32 - self.slice.min as u32;
        if p.unit == self.promised_unit && n + 1 == self.promised {
            self.promised = n;
            return;
        }
        let packed = (p.unit << 16) | p.seq as u64;
        if let Some(slot) = self.returned.iter_mut().find(|r| **r == 0) {
            *slot = packed;
        }
    }

    /// A caller comes for its promise `p` at clock `now`: the promised ID once the clock has
    /// reached its unit and the durable state covers it. The timeline moves to the unit if no
    /// one has yet (the cursor then serves what is not promised of it). `dirty` as for
    /// [`Timeline::advance`]. Under the lock.
    pub fn claim(&mut self, c: &Cursor, p: Promise, now: u64, dirty: bool) -> Claim {
        if p.round != self.round || p.tick != self.tick() {
            return Claim::Void;
        }
        if now < p.unit {
            return Claim::Wait { until: p.unit };
        }
        if self.hi < p.unit {
            // The clock is at or past the unit and nobody reached it: as the slow path would.
            // No flip (the clock is ahead of `hi`), so the promise stays in force.
            self.advance(c, now, dirty);
        }
        if dirty || !self.covers(p.unit) {
            return Claim::Write;
        }
        Claim::Take((p.unit, p.tick, p.seq))
    }
}

#[cfg(test)]
mod tests;
