//! Lineage: what a data directory knows of the IDs made by every server it descends from or
//! shares history with (its primary, the standbys promoted from it, the copies it was made
//! from), and the decisions that keep those servers from ever making one ID twice.
//!
//! Pure Rust, no PostgreSQL: the glue passes in what it observes (the WAL timeline, whether a
//! `backup_label` was present at start, the inode of `global/pg_control`, the configured
//! partition) and a source of random numbers, and stores the result durably
//! ([`crate::generator::state_file`]) and in WAL (the `sno` resource manager), so that standbys, copies and
//! restores receive it.
//!
//! The knowledge is a small table of *entries*, one per partition that some member of the
//! lineage used, each with a bound ([`Persisted`]) on every ID made with that partition, and
//! a flag saying whether it was this data directory's *incarnation* that used it. An
//! incarnation is a random number drawn again whenever the data directory may have become a
//! second, independent server:
//!
//! | event                               | how it is seen                                      |
//! |-------------------------------------|-----------------------------------------------------|
//! | a copy (base backup, clone, rewind) | `backup_label` at start, or `global/pg_control` has another inode than the one recorded |
//! | a promotion, a PITR                 | the WAL timeline differs from the one recorded       |
//! | pg_upgrade                          | the adopted state file names another system identifier |
//! | a lost or unusable state file       | nothing is known: see [`State::fresh`]               |
//!
//! After such an event, the entries of the old incarnation count as *others'*. Then:
//! * a derived partition (no `sno.partition`) is drawn again until it differs from every
//!   partition others used, so copies, promoted standbys and their originals never share one;
//! * an explicit partition that others used and this incarnation did not is
//!   - after a promotion or PITR (a new WAL timeline): taken over, resuming after the bound
//!     the lineage recorded for it (a standby receives every bound in WAL before the IDs it
//!     covers, so every ID in the data it holds is covered; IDs its original made but never
//!     sent may be made again, as with PostgreSQL's sequences);
//!   - on a copy on the same timeline (a clone meant to run beside its original): refused
//!     ([`Refusal::Inherited`]) until the server gets its own partition, or an administrator
//!     says the original will never make IDs again (`force`).
//!
//! The table holds [`MAX_ENTRIES`] entries; a lineage may use more partitions (a server given
//! many `sno.partition` values in turn, many promotions and copies, many Citus generations).
//! What is never forgotten, at any size, is *which* partitions were used and by whom: two
//! fixed bitmaps of all 65,536 partitions ([`State::used_by_others`], [`State::used_by_me`])
//! hold every partition the lineage used, whether or not it still has an entry. Only bounds
//! are folded: an entry that must leave the table gives its bound to [`State::retired`], and
//! a partition known without an entry is treated as used within that bound (one of this
//! incarnation's, within [`State::me`]). So a partition used by another member of the lineage
//! is refused to a copy, avoided by a derived draw and counted as a used Citus generation
//! exactly as if its entry were still there (its bound, for a takeover, is the retired one,
//! which covers it): a folded partition is never handed out as unused, and a server is never
//! refused a partition its own incarnation used.

use crate::generator::bound::{merge, ticks, Persisted, NOTHING};
use crate::generator::citus::{self, Node, Source};
use crate::generator::partition::derived_partition;
use crate::generator::reserved;

/// How many partitions the table holds with a bound of their own. Past that, an entry leaves
/// the table and its bound is folded into [`State::retired`], a bound applied to every
/// partition; the partition itself stays known (see [`Partitions`]).
pub const MAX_ENTRIES: usize = 64;

/// How many partitions there are.
pub const PARTITIONS: usize = 1 << 16;

const WORDS: usize = PARTITIONS / 64;

/// A set of partitions: a fixed bitmap of all 65,536 (8 KiB), so that it can live in shared
/// memory and nothing is ever dropped from it.
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Partitions {
    bits: [u64; WORDS],
}

impl Partitions {
    /// The empty set.
    pub const NONE: Partitions = Partitions { bits: [0; WORDS] };

    /// Whether `p` is in the set.
    #[inline]
    pub fn contains(&self, p: u16) -> bool {
        self.bits[p as usize / 64] & (1u64 << (p % 64)) != 0
    }

    /// Adds `p`.
    #[inline]
    pub fn insert(&mut self, p: u16) {
        self.bits[p as usize / 64] |= 1u64 << (p % 64);
    }

    /// Removes `p`.
    #[inline]
    pub fn remove(&mut self, p: u16) {
        self.bits[p as usize / 64] &= !(1u64 << (p % 64));
    }

    /// Adds every partition of `other`.
    pub fn union(&mut self, other: &Partitions) {
        for (a, b) in self.bits.iter_mut().zip(other.bits.iter()) {
            *a |= b;
        }
    }

    /// How many partitions the set holds.
    pub fn len(&self) -> usize {
        self.bits.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.bits.iter().all(|&w| w == 0)
    }

    /// The partitions, in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = u16> + '_ {
        self.bits.iter().enumerate().flat_map(|(i, &w)| {
            let mut w = w;
            core::iter::from_fn(move || {
                (w != 0).then(|| {
                    let b = w.trailing_zeros();
                    w &= w - 1;
                    (i * 64) as u16 + b as u16
                })
            })
        })
    }

    /// The set as ascending, disjoint, non-adjacent ranges `(first, last)`.
    pub fn ranges(&self) -> impl Iterator<Item = (u16, u16)> + '_ {
        let mut it = self.iter().peekable();
        core::iter::from_fn(move || {
            let first = it.next()?;
            let mut last = first;
            while it.peek() == Some(&last.wrapping_add(1)) && last != u16::MAX {
                last = it.next().unwrap_or(last);
            }
            Some((first, last))
        })
    }
}

impl core::fmt::Debug for Partitions {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("{")?;
        for (i, (a, b)) in self.ranges().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            if a == b {
                write!(f, "{sep}{a}")?;
            } else {
                write!(f, "{sep}{a}-{b}")?;
            }
        }
        f.write_str("}")
    }
}

/// One partition used in the lineage.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The partition.
    pub partition: u16,
    /// Whether this incarnation used it (else another member of the lineage did).
    pub mine: bool,
    /// Every ID made with this partition is within this bound.
    pub bound: Persisted,
}

/// The `timeline` of a state adopted from the cluster this one was made from by pg_upgrade:
/// it differs from every real WAL timeline, so the first judgment treats the upgrade like a
/// promotion (the old cluster no longer runs).
pub const UPGRADED: u32 = u32::MAX;

/// [`State::citus_group`] of a lineage that was never a node of a Citus cluster.
pub const NO_GROUP: u32 = u32::MAX;

/// An unused slot of the table (kept zeroed so that equal states compare equal).
const UNUSED: Entry = Entry {
    partition: 0,
    mine: false,
    bound: NOTHING,
};

/// The lineage state of one data directory. `#[repr(C)]` and fixed-size: it lives in shared
/// memory.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct State {
    /// The cluster's system identifier.
    pub system_identifier: u64,
    /// This data directory's incarnation (random).
    pub incarnation: u64,
    /// The WAL timeline the state was last judged or replayed on (0: unknown).
    pub timeline: u32,
    /// The inode of `global/pg_control` of the data directory that owns `incarnation` (0:
    /// unknown).
    pub control_inode: u64,
    /// A copy was seen (a `backup_label` or another inode) and not yet judged.
    pub copied: bool,
    /// This incarnation started as a copy and was not promoted since, nor told by
    /// `take_over` that its original will never run again: it grants no reserved partition
    /// ([`State::grant`]), since its original may grant the same one.
    pub grants_blocked: bool,
    /// [`State::grants_blocked`] that a promotion does not lift, only `take_over`: set when the
    /// copy was started as a server of its own (no `standby.signal` or `recovery.signal`: a
    /// clone, a moved data directory), and kept by every copy of such a state, so that a standby
    /// of a clone, promoted, or a PITR or upgrade of it, does not grant what the clone's original
    /// grants.
    pub grants_blocked_lasting: bool,
    /// The Citus node group this lineage last generated for ([`NO_GROUP`]: none). A node keeps
    /// its group's partitions while Citus is not read (a session in another database, a node
    /// removed from its cluster: Citus never gives its number to another group).
    pub citus_group: u32,
    /// This incarnation's own timeline, as last written: every ID it made is within it.
    pub me: Persisted,
    /// A bound on the IDs of every partition whose entry had to leave the table.
    pub retired: Persisted,
    /// Number of entries in use.
    pub len: u32,
    /// The entries (the first `len`).
    pub entries: [Entry; MAX_ENTRIES],
    /// Every partition another member of the lineage used: those of the entries that are not
    /// `mine`, and those whose entries left the table (their IDs are within
    /// [`State::retired`]).
    pub used_by_others: Partitions,
    /// Every partition this incarnation used: those of the `mine` entries, and those whose
    /// entries left the table (their IDs are within [`State::me`], which covers every ID of
    /// this incarnation).
    pub used_by_me: Partitions,
    /// Every reserved partition the lineage's allocator granted ([`State::grant`]), or that a
    /// restored database's grants table names: never granted again, never a live partition.
    pub granted: Partitions,
    /// The role each reserved partition was granted to (by OID; 0: unknown, as for one a
    /// restored table names), indexed by `partition - 61440`: the per-role limit counts these,
    /// so a grant whose transaction rolled back still counts.
    pub grantees: [u32; reserved::COUNT as usize],
}

/// Why `sno_generate` may not go on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The configured partition was used by the server this one is a copy of.
    Inherited(u16),
    /// A copy of a node of Citus group `.0`, started beside it on the same WAL timeline: it is
    /// not that group's node (the group's node is its original, or the original's promoted
    /// standby, which will take the group's next generation).
    CitusCopy(u32),
    /// The server's Citus group is past the groups that have partitions ([`citus::GROUPS`]).
    CitusGroupTooLarge(u32),
    /// Citus is installed but this server is not a node of a cluster yet, and its lineage never
    /// was one.
    CitusNotActivated,
    /// The configured partition is reserved ([`reserved::FIRST`] up) and the lineage never used
    /// it as a live partition, or its allocator granted it (`granted`).
    Reserved { partition: u16, granted: bool },
}

/// Why the allocator grants no reserved partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GrantRefusal {
    /// A copy that may run beside its original ([`State::grants_blocked`]).
    Copy,
    /// Every reserved partition is granted or used.
    Exhausted,
}

/// What [`State::judge`] decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Judgment {
    /// The partition to write into IDs.
    pub partition: u16,
    /// The bound the live timeline must absorb before it hands out IDs with `partition`
    /// (everything others made with it, and the retired bound); [`NOTHING`] when none.
    pub absorb: Persisted,
    /// An explicit partition others used was taken over (after a promotion, or forced).
    pub took_over: bool,
    /// The state changed and must be written (and logged in WAL) before any ID is made.
    pub changed: bool,
    /// A new incarnation was started (a promotion or an unjudged copy).
    pub new_incarnation: bool,
}

/// The WAL timeline a copy starts on: the latest of its `backup_label`'s `START TIMELINE` and
/// the timelines pg_control names (its last checkpoint's and its minimum recovery point's); 0
/// for what cannot be read. Recovery without archive recovery ends on it, so a copy is judged
/// on the timeline its original made IDs on, never as a promotion of its own.
pub fn start_timeline(label: u32, control: u32) -> u32 {
    label.max(control)
}

impl State {
    /// A state with nothing known: a new cluster, or one whose state was lost.
    pub fn fresh(system_identifier: u64, incarnation: u64, timeline: u32, inode: u64) -> State {
        State {
            system_identifier,
            incarnation,
            timeline,
            control_inode: inode,
            copied: false,
            grants_blocked: false,
            grants_blocked_lasting: false,
            citus_group: NO_GROUP,
            me: NOTHING,
            retired: NOTHING,
            len: 0,
            entries: [UNUSED; MAX_ENTRIES],
            used_by_others: Partitions::NONE,
            used_by_me: Partitions::NONE,
            granted: Partitions::NONE,
            grantees: [0; reserved::COUNT as usize],
        }
    }

    /// The reserved partition the allocator grants next: the lowest that is neither granted
    /// nor used by any member of the lineage (an install that used one as its live partition
    /// before the range was reserved keeps it). Refused to a copy that may run beside its
    /// original. The caller records it ([`State::granted`]) durably before any ID uses it.
    /// Grants only grow, so each is above every earlier one of the lineage's history.
    pub fn grant(&self) -> Result<u16, GrantRefusal> {
        self.grant_where(|_| true)
    }

    /// [`State::grant`] among the reserved partitions `allowed` accepts (a Citus coordinator's
    /// generation share: [`reserved::in_generation_share`]).
    pub fn grant_where(&self, allowed: impl Fn(u16) -> bool) -> Result<u16, GrantRefusal> {
        if self.grants_blocked {
            return Err(GrantRefusal::Copy);
        }
        (reserved::FIRST..=u16::MAX)
            .find(|&p| allowed(p) && !self.reserved_taken(p))
            .ok_or(GrantRefusal::Exhausted)
    }

    /// Records that reserved partition `p` was granted (by this lineage's allocator, as its WAL
    /// record or a restored grants table says): it is never granted again. Partitions outside
    /// the reserved range are ignored (no grant names one).
    pub fn note_granted(&mut self, p: u16) {
        self.note_grant_to(p, 0);
    }

    /// [`State::note_granted`], to role `role` (an OID; 0: unknown). A grantee once known is kept.
    pub fn note_grant_to(&mut self, p: u16, role: u32) {
        if reserved::is_reserved(p) {
            self.granted.insert(p);
            let g = &mut self.grantees[(p - reserved::FIRST) as usize];
            if *g == 0 {
                *g = role;
            }
        }
    }

    /// The role reserved partition `p` was granted to (0: unknown or not granted).
    pub fn grantee(&self, p: u16) -> u32 {
        if reserved::is_reserved(p) {
            self.grantees[(p - reserved::FIRST) as usize]
        } else {
            0
        }
    }

    /// How many reserved partitions were granted to role `role`.
    pub fn grants_of(&self, role: u32) -> u32 {
        if role == 0 {
            return 0;
        }
        self.grantees.iter().filter(|&&g| g == role).count() as u32
    }

    /// Whether reserved partition `p` is granted or used.
    pub fn reserved_taken(&self, p: u16) -> bool {
        self.granted.contains(p) || self.used_by_me.contains(p) || self.used_by_others.contains(p)
    }

    /// How many reserved partitions are granted or used.
    pub fn reserved_used(&self) -> u32 {
        (reserved::FIRST..=u16::MAX)
            .filter(|&p| self.reserved_taken(p))
            .count() as u32
    }

    /// The entries in use.
    pub fn entries(&self) -> &[Entry] {
        &self.entries[..self.len as usize]
    }

    fn find(&self, partition: u16, mine: bool) -> Option<usize> {
        self.entries()
            .iter()
            .position(|e| e.partition == partition && e.mine == mine)
    }

    /// Records that `partition` was used (by this incarnation when `mine`) within `bound`. The
    /// partition gets an entry (the table holds the partitions noted last); when the table is
    /// full, another entry leaves it ([`State::fold`]), its partition staying known.
    pub fn note(&mut self, partition: u16, mine: bool, bound: Persisted) {
        if mine {
            self.used_by_me.insert(partition);
        } else {
            self.used_by_others.insert(partition);
        }
        if let Some(i) = self.find(partition, mine) {
            self.entries[i].bound = merge(self.entries[i].bound, bound);
            return;
        }
        if self.len as usize == MAX_ENTRIES {
            self.fold();
        }
        self.entries[self.len as usize] = Entry {
            partition,
            mine,
            bound,
        };
        self.len += 1;
    }

    /// Makes room in the full table. Its partition stays in [`State::used_by_others`] or
    /// [`State::used_by_me`]; only its bound leaves. The entry chosen is one that loses
    /// nothing if there is one (this incarnation's, within [`State::me`]), else the one
    /// whose IDs are oldest: its bound goes into [`State::retired`], which every judgment
    /// absorbs, so the oldest keeps that bound low.
    fn fold(&mut self) {
        let me = self.me;
        let key = |e: &Entry| {
            let lossless = e.mine && merge(me, e.bound) == me;
            let t = ticks(&e.bound);
            (!lossless, t[0].max(t[1]), e.mine)
        };
        let i = (0..self.len as usize)
            .min_by_key(|&i| key(&self.entries[i]))
            .unwrap_or(0);
        let e = self.entries[i];
        if !(e.mine && merge(me, e.bound) == me) {
            self.retired = merge(self.retired, e.bound);
        }
        self.entries[i] = self.entries[self.len as usize - 1];
        self.len -= 1;
        self.entries[self.len as usize] = UNUSED;
    }

    /// Whether this incarnation used `partition`.
    pub fn is_mine(&self, partition: u16) -> bool {
        self.used_by_me.contains(partition)
    }

    /// The bound on what others made with `partition`, if any did: its entry's, or for a
    /// partition whose entry left the table, the retired bound (which covers it).
    pub fn others(&self, partition: u16) -> Option<Persisted> {
        match self.find(partition, false) {
            Some(i) => Some(self.entries[i].bound),
            None => self
                .used_by_others
                .contains(partition)
                .then_some(self.retired),
        }
    }

    /// The partitions known without an entry (they left the table), as entries: another
    /// member's within [`State::retired`], this incarnation's within [`State::me`]. With
    /// [`State::entries`], every partition the lineage used.
    pub fn folded(&self) -> impl Iterator<Item = Entry> + '_ {
        let (retired, me) = (self.retired, self.me);
        let mine = self
            .used_by_me
            .iter()
            .filter(|&p| self.find(p, true).is_none())
            .map(move |partition| Entry {
                partition,
                mine: true,
                bound: me,
            });
        let others = self
            .used_by_others
            .iter()
            .filter(|&p| self.find(p, false).is_none())
            .map(move |partition| Entry {
                partition,
                mine: false,
                bound: retired,
            });
        mine.chain(others)
    }

    /// Whether a partition of this incarnation has no entry.
    fn folded_mine(&self) -> bool {
        self.used_by_me.len() > self.entries().iter().filter(|e| e.mine).count()
    }

    /// Merges in what `other`, another state of this same data directory, knows (what WAL
    /// replay taught the server in memory while it had no usable state file, when a file is
    /// adopted): a partition this state says is this incarnation's stays its own, with the
    /// later bound; every other one is another member's. Unlike a loop over
    /// [`State::entries`], it also carries the partitions that left `other`'s table and their
    /// bound. Returns how many of `other`'s partitions were taken as this incarnation's.
    pub fn learn(&mut self, other: &State) -> usize {
        for p in other.granted.iter() {
            self.note_grant_to(p, other.grantee(p));
        }
        let mut adopted = 0;
        for e in other.entries() {
            let mine = self.is_mine(e.partition);
            self.note(e.partition, mine, e.bound);
            if mine {
                self.written(e.bound);
                adopted += 1;
            }
        }
        // Without an entry, `other`'s partitions are within its retired bound, its own ones
        // within its `me`: noted here without an entry, within the same bound.
        let bound = if other.folded_mine() {
            merge(other.retired, other.me)
        } else {
            other.retired
        };
        let mut any = false;
        for e in other.folded() {
            if self.is_mine(e.partition) {
                self.written(bound);
                adopted += 1;
            } else if self.find(e.partition, false).is_some() {
                self.note(e.partition, false, bound);
            } else {
                self.used_by_others.insert(e.partition);
                any = true;
            }
        }
        if any {
            self.retired = merge(self.retired, bound);
        }
        adopted
    }

    /// This incarnation's timeline is now durably `me`: every partition it used is bounded
    /// by it.
    pub fn written(&mut self, me: Persisted) {
        self.me = merge(self.me, me);
        let me = self.me;
        for e in self.entries[..self.len as usize].iter_mut() {
            if e.mine {
                e.bound = merge(e.bound, me);
            }
        }
    }

    /// At a clean stop: this incarnation's timeline is exactly `me`, the high-water mark of the
    /// live timeline ([`crate::generator::timeline::Timeline::stop`]), which covers every ID it
    /// made and every bound it absorbed; a lease written past it is given back, so that the
    /// restart resumes right after the last ID instead of after the lease. The entries keep
    /// their bounds: standbys have them in WAL, so the restart must know them
    /// ([`State::written_bound`]), and a copy never needs less than what it was told.
    pub fn stopped(&mut self, me: Persisted) {
        self.me = me;
    }

    /// Every bound this incarnation wrote for itself, a lease a clean stop gave back included:
    /// `me` and the bounds of its own entries.
    pub fn written_bound(&self) -> Persisted {
        self.entries()
            .iter()
            .filter(|e| e.mine)
            .fold(self.me, |b, e| merge(b, e.bound))
    }

    /// Starts a new incarnation: what this one made becomes others'.
    fn become_new(&mut self, incarnation: u64) {
        let me = self.me;
        // This incarnation's partitions without an entry become others' without an entry:
        // their IDs are within `me`, which the retired bound must now cover.
        if self.folded_mine() {
            self.retired = merge(self.retired, me);
        }
        let mine = self.used_by_me;
        self.used_by_others.union(&mine);
        self.used_by_me = Partitions::NONE;
        for e in self.entries[..self.len as usize].iter_mut() {
            if e.mine {
                e.mine = false;
                e.bound = merge(e.bound, me);
            }
        }
        // Entries that are now duplicates (the same partition, others') are merged.
        let old: Vec<Entry> = self.entries().to_vec();
        self.len = 0;
        self.entries = [UNUSED; MAX_ENTRIES];
        for e in old {
            self.note(e.partition, e.mine, e.bound);
        }
        self.me = NOTHING;
        self.incarnation = incarnation;
    }

    /// At server start: a `backup_label` in the data directory, or a `global/pg_control` with
    /// another inode than the one recorded, means this data directory is a copy. It starts a
    /// new incarnation at once (so a standby's derived partition already differs from its
    /// primary's), and is judged at its first ID ([`State::judge`]). `start_timeline` is the
    /// WAL timeline the copy starts on (its `backup_label`'s, or its last checkpoint's; 0:
    /// unknown): what the copy's judgment compares with, since the state it received may have
    /// been written before its original's own promotion. Returns whether it is a copy.
    pub fn at_start(
        &mut self,
        backup_label: bool,
        inode: u64,
        incarnation: u64,
        start_timeline: u32,
    ) -> bool {
        self.at_start_as(backup_label, inode, incarnation, start_timeline, true)
    }

    /// [`State::at_start`], saying whether the data directory starts as a standby or a restore
    /// (`recovering`: `standby.signal` or `recovery.signal`, or an upgrade's adoption): a copy
    /// that starts otherwise is a server of its own beside its original, whose grants block
    /// lifts only with `take_over` ([`State::grants_blocked_lasting`]).
    pub fn at_start_as(
        &mut self,
        backup_label: bool,
        inode: u64,
        incarnation: u64,
        start_timeline: u32,
        recovering: bool,
    ) -> bool {
        let moved = self.control_inode != 0 && inode != 0 && inode != self.control_inode;
        if self.control_inode == 0 {
            self.control_inode = inode;
        }
        if backup_label || moved {
            self.become_new(incarnation);
            self.control_inode = inode;
            self.copied = true;
            // A copy of a lasting block keeps it (a standby of a clone, a backup of one).
            self.grants_blocked_lasting =
                !recovering || (self.grants_blocked && self.grants_blocked_lasting);
            self.grants_blocked = true;
            // Also over UPGRADED: a copy of a cluster just upgraded, taken before it judged,
            // is not the upgrade (its original is), so it must not take the old one's over.
            if start_timeline != 0 {
                self.timeline = start_timeline;
            }
            true
        } else {
            false
        }
    }

    /// What another member of the lineage (or this incarnation, replaying its own WAL after a
    /// crash) wrote to WAL: it made IDs with `partitions` within `bound`, on WAL timeline
    /// `timeline`.
    pub fn replay(
        &mut self,
        incarnation: u64,
        timeline: u32,
        partitions: &[u16],
        bound: Persisted,
    ) {
        let mine = incarnation == self.incarnation;
        for &p in partitions {
            self.note(p, mine, bound);
        }
        if mine {
            self.written(bound);
        } else {
            // A base backup's WAL can begin before its original's promotion: never back. An
            // adoption not yet judged (UPGRADED) takes the timeline its lineage writes on.
            self.timeline = if self.timeline == UPGRADED {
                timeline
            } else {
                self.timeline.max(timeline)
            };
        }
    }

    /// The derived partition of this incarnation.
    pub fn derived(&self) -> u16 {
        derived_partition(self.system_identifier, self.incarnation)
    }

    /// Decides, before IDs are made on WAL timeline `timeline` with `configured` (the
    /// `sno.partition` setting, `None` for a derived one), which partition to use and what
    /// the live timeline must respect first. `draw` gives random incarnations. `force` takes
    /// over an explicit partition a copy's original used (the administrator says it will
    /// never make IDs again).
    pub fn judge(
        &mut self,
        timeline: u32,
        configured: Option<u16>,
        force: bool,
        draw: impl FnMut() -> u64,
    ) -> Result<Judgment, Refusal> {
        let source = configured.map_or(Source::Derived, Source::Explicit);
        self.judge_source(timeline, source, force, draw)
    }

    /// [`State::judge`] for any [`Source`] of the partition, a Citus node group included: a
    /// lineage that generated for a group goes on with that group's partitions when nothing
    /// else is configured and Citus is not read (see [`State::citus_group`]).
    pub fn judge_source(
        &mut self,
        timeline: u32,
        source: Source,
        force: bool,
        mut draw: impl FnMut() -> u64,
    ) -> Result<Judgment, Refusal> {
        let known = (self.citus_group != NO_GROUP).then_some(self.citus_group);
        let group = match source {
            Source::Explicit(_) => None,
            Source::Citus(Node::Group(g)) => Some(g),
            Source::Derived | Source::Citus(Node::NotActivated) => known,
        };
        if source == Source::Citus(Node::NotActivated) && group.is_none() {
            return Err(Refusal::CitusNotActivated);
        }
        if let Some(g) = group {
            if g >= citus::GROUPS {
                return Err(Refusal::CitusGroupTooLarge(g));
            }
        }
        if let Source::Explicit(p) = source {
            // A reserved partition only where the lineage already used it as a live one (an
            // install older than the range), never one its allocator granted.
            let used = self.is_mine(p) || self.others(p).is_some();
            if reserved::is_reserved(p) && (self.granted.contains(p) || !used) {
                return Err(Refusal::Reserved {
                    partition: p,
                    granted: self.granted.contains(p),
                });
            }
        }
        let promoted = self.timeline != 0 && self.timeline != timeline;
        if let (Some(g), false) = (group, promoted || force) {
            // A copy beside its original, which generated for this group: the group is the
            // original's. Checked before anything changes, so that the refusal leaves the state
            // as it was. (A partition of the group that the lineage used before it had a group,
            // a derived one that happens to be among them, is no sign of the group.)
            let mine = citus::partitions(g).any(|p| self.is_mine(p));
            if self.copied && !mine && self.citus_group == g {
                return Err(Refusal::CitusCopy(g));
            }
        }
        let mut new_incarnation = false;
        if promoted {
            // A promotion or a PITR: the old timeline may still run elsewhere (the old
            // primary), so this server is a new incarnation from here on.
            self.become_new(draw());
            new_incarnation = true;
        }
        let partition = match (source, group) {
            (Source::Explicit(p), _) => p,
            (_, Some(g)) => self.citus_partition(g),
            (_, None) => {
                // Drawn again while others used it. If every partition is others' (and none
                // this incarnation's), no draw can succeed: the last one stays, refused to a
                // copy and taken over after its bound by a promotion (as a Citus group reuses
                // its oldest generation).
                // A reserved partition is drawn again too, unless this incarnation already
                // uses it (drawn before the range was reserved).
                if self.free_partitions() > 0 {
                    while !self.is_mine(self.derived())
                        && (self.others(self.derived()).is_some()
                            || reserved::is_reserved(self.derived()))
                    {
                        self.incarnation = draw();
                    }
                }
                self.derived()
            }
        };
        let mut took_over = false;
        let mut absorb = self.retired;
        let new_group = group.is_some_and(|g| g != self.citus_group);
        // A partition of this incarnation without an entry gets one back: the table changes.
        // A promotion lifts a block it may lift, `take_over` any: recorded at once.
        let unblock = self.grants_blocked && (force || (promoted && !self.grants_blocked_lasting));
        let changed = promoted
            || self.copied
            || self.timeline == 0
            || self.find(partition, true).is_none()
            || new_group
            || unblock;
        if let Some(theirs) = self.others(partition) {
            if !self.is_mine(partition) {
                // Either a copy meant to run beside its original (refused), or a server
                // that replaces it: after a promotion, or by an administrator's word. A Citus
                // group's partition is taken over only once every generation was used.
                if !(promoted || force || group.is_some()) {
                    return Err(Refusal::Inherited(partition));
                }
                took_over = true;
            }
            absorb = merge(absorb, theirs);
        }
        if let Some(g) = group {
            self.citus_group = g;
        }
        if unblock {
            // A promotion, a PITR or an upgrade replaces the old server; `take_over` says the
            // original never runs again: the allocator's grants are this server's to go on.
            self.grants_blocked = false;
            self.grants_blocked_lasting = false;
        }
        self.timeline = timeline;
        self.copied = false;
        let me = self.me;
        self.note(partition, true, me);
        Ok(Judgment {
            partition,
            absorb,
            took_over,
            changed,
            new_incarnation,
        })
    }

    /// How many partitions a derived draw may give: those below the reserved range no other
    /// member of the lineage used, and this incarnation's own.
    fn free_partitions(&self) -> usize {
        let live = reserved::FIRST as usize / 64;
        self.used_by_others.bits[..live]
            .iter()
            .zip(self.used_by_me.bits[..live].iter())
            .map(|(&o, &m)| (!o | m).count_ones() as usize)
            .sum::<usize>()
            + self.used_by_me.bits[live..]
                .iter()
                .map(|m| m.count_ones() as usize)
                .sum::<usize>()
    }

    /// The partition of Citus group `g` for this incarnation: the one it already uses (the
    /// reserved generation 15 included, for a lineage that used it before it was reserved),
    /// else the lowest live generation no member of the lineage is known to have used, else
    /// (every live generation used) the one whose recorded bound is oldest.
    fn citus_partition(&self, g: u32) -> u16 {
        citus::partitions(g)
            .find(|&p| self.is_mine(p))
            .or_else(|| citus::live_partitions(g).find(|&p| self.others(p).is_none()))
            .or_else(|| {
                citus::live_partitions(g).min_by_key(|&p| {
                    let b = ticks(&self.others(p).unwrap_or(NOTHING));
                    b[0].max(b[1])
                })
            })
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(horizon: u64, safe: i64, drifts: u64) -> Persisted {
        Persisted {
            horizon,
            safe,
            drifts,
        }
    }

    #[test]
    fn a_copy_of_a_freshly_promoted_server_is_a_clone_not_a_promotion() {
        // B, a standby of a primary that used partition 1 on WAL timeline 1, was just
        // promoted to timeline 2 and has not judged yet: its state still says timeline 1.
        let mut b = State::fresh(7, 100, 1, 11);
        b.note(1, false, p(500, -1, 0));
        // C, a base backup of B, starts on timeline 2 (its backup_label's START TIMELINE).
        let mut c = b;
        assert!(c.at_start(true, 12, 200, 2));
        assert_eq!(
            c.judge(2, Some(1), false, || 300),
            Err(Refusal::Inherited(1))
        );
        // B itself is a promotion: it takes partition 1 over, after its bound.
        let j = b.judge(2, Some(1), false, || 400).unwrap();
        assert!(j.took_over && j.new_incarnation);
        assert_eq!(j.absorb, p(500, -1, 0));
    }

    #[test]
    fn a_copy_of_a_server_promoted_since_its_last_checkpoint_is_a_clone() {
        // B was promoted to timeline 2; its pg_control still names checkpoint timeline 1 but
        // minimum recovery point timeline 2 (the promotion's end-of-recovery record).
        let mut b = State::fresh(7, 100, 1, 11);
        b.note(1, false, p(500, -1, 0));
        let mut c = b;
        assert!(c.at_start(false, 12, 200, start_timeline(0, 2)));
        assert_eq!(
            c.judge(2, Some(1), false, || 300),
            Err(Refusal::Inherited(1))
        );
        // A base backup of a standby that followed that promotion before its next restartpoint:
        // START TIMELINE 1, the standby's replay on timeline 2.
        let mut d = b;
        assert!(d.at_start(true, 13, 201, start_timeline(1, 2)));
        assert_eq!(
            d.judge(2, Some(1), false, || 301),
            Err(Refusal::Inherited(1))
        );
    }

    #[test]
    fn a_copy_of_a_just_upgraded_cluster_is_not_the_upgrade() {
        // N adopted the old cluster's file at its first start (pg_upgrade), not yet judged.
        let mut old = State::fresh(5, 100, 1, 10);
        let me = p(900, -1, 0);
        old.note(7, true, me);
        let mut n = old;
        n.system_identifier = 6;
        n.timeline = UPGRADED;
        assert!(n.at_start(true, 20, 300, 0));
        // C, a copy of N's files, starts on timeline 1 and refuses partition 7.
        let mut c = n;
        assert!(c.at_start(false, 21, 301, start_timeline(0, 1)));
        assert_eq!(
            c.judge(1, Some(7), false, || 302),
            Err(Refusal::Inherited(7))
        );
        // N itself takes partition 7 over, after the old cluster's IDs.
        let j = n.judge(1, Some(7), false, || 303).unwrap();
        assert!(j.took_over);
        assert_eq!(j.absorb, me);
        // A record replayed by an adoption not yet judged sets its timeline.
        let mut r = State::fresh(6, 1, UPGRADED, 22);
        r.replay(9, 1, &[8], p(10, -1, 0));
        assert_eq!(r.timeline, 1);
    }

    #[test]
    fn a_clean_stop_lowers_me_but_remembers_the_lease_it_gave_back() {
        let mut st = State::fresh(7, 1, 1, 11);
        st.judge(1, Some(5), false, || 2).unwrap();
        // A lease, then the exact high-water mark at a clean stop.
        st.written(p(1060, -1, 0));
        st.stopped(p(1000, -1, 0));
        assert_eq!(st.me, p(1000, -1, 0));
        assert_eq!(st.written_bound(), p(1060, -1, 0));
        // What a copy or a standby is told of the partition never comes down.
        let mut copy = st;
        copy.at_start(true, 12, 3, 1);
        assert_eq!(copy.others(5), Some(p(1060, -1, 0)));
    }

    #[test]
    fn replay_never_moves_the_timeline_back() {
        let mut st = State::fresh(7, 1, 3, 11);
        st.replay(2, 2, &[5], p(10, -1, 0));
        assert_eq!(st.timeline, 3);
        st.replay(2, 4, &[5], p(20, -1, 0));
        assert_eq!(st.timeline, 4);
        assert_eq!(st.others(5), Some(p(20, -1, 0)));
    }

    #[test]
    fn equal_knowledge_is_an_equal_state() {
        // Entries folded away or rebuilt leave no trace in the unused slots.
        let mut a = State::fresh(7, 1, 1, 11);
        for i in 0..(MAX_ENTRIES as u16 + 3) {
            a.note(i, false, p(u64::from(i), -1, 0));
        }
        let mut b = a;
        b.become_new(2);
        let mut c = a;
        c.become_new(2);
        assert_eq!(b, c);
        let text = crate::generator::state_file::encode(&b);
        assert_eq!(crate::generator::state_file::decode(text.as_bytes()), Ok(b));
    }

    const G3: Source = Source::Citus(Node::Group(3));

    #[test]
    fn a_citus_group_takes_a_new_generation_at_each_promotion() {
        // A worker of group 3 makes IDs with generation 0.
        let mut a = State::fresh(7, 100, 1, 11);
        let j = a.judge_source(1, G3, false, || 1).unwrap();
        assert_eq!((j.partition, j.took_over, j.changed), (3, false, true));
        a.written(p(500, -1, 0));
        // Its standby (a base backup) is promoted: generation 1, whatever the standby replayed.
        let mut b = a;
        assert!(b.at_start(true, 12, 200, 1));
        let j = b.judge_source(2, G3, false, || 201).unwrap();
        assert_eq!((j.partition, j.took_over), (3 + 4096, false));
        assert!(j.new_incarnation);
        // Sessions in a database without Citus go on with the group's partition.
        assert_eq!(
            b.judge_source(2, Source::Derived, false, || 0)
                .unwrap()
                .partition,
            4099
        );
        // A standby of b promoted in its turn knows generations 0 and 1: generation 2.
        let mut c = b;
        assert!(c.at_start(true, 13, 300, 2));
        assert_eq!(
            c.judge_source(3, G3, false, || 301).unwrap().partition,
            3 + 8192
        );
        // The original primary, rewound and promoted again later: it knows 0, 1 and 2.
        let mut a2 = c;
        assert!(a2.at_start(true, 11, 400, 3));
        assert_eq!(
            a2.judge_source(4, G3, false, || 401).unwrap().partition,
            3 + 3 * 4096
        );
    }

    #[test]
    fn a_citus_group_reuses_its_oldest_generation_after_its_bound() {
        let mut st = State::fresh(7, 1, 1, 11);
        for k in 0..citus::GENERATIONS {
            let q = citus::partition(3, k).unwrap();
            // Generation 5 has the oldest bound.
            let h = if k == 5 { 10 } else { 1000 + u64::from(k) };
            st.note(q, false, p(h, -1, 0));
        }
        let j = st.judge_source(2, G3, false, || 9).unwrap();
        assert_eq!(j.partition, citus::partition(3, 5).unwrap());
        assert!(j.took_over);
        assert_eq!(j.absorb, p(10, -1, 0));
    }

    #[test]
    fn a_citus_copy_beside_its_original_is_refused_until_it_has_a_group_of_its_own() {
        let mut a = State::fresh(7, 100, 1, 11);
        a.judge_source(1, G3, false, || 1).unwrap();
        a.written(p(500, -1, 0));
        let mut clone = a;
        assert!(clone.at_start(true, 12, 200, 1));
        let before = clone;
        assert_eq!(
            clone.judge_source(1, G3, false, || 2),
            Err(Refusal::CitusCopy(3))
        );
        // Through another database too, and the refusal changed nothing.
        assert_eq!(
            clone.judge_source(1, Source::Derived, false, || 2),
            Err(Refusal::CitusCopy(3))
        );
        assert_eq!(clone, before);
        // Added to the cluster, Citus gives it group 5: its generation 0.
        let j = clone.judge_source(1, Source::Citus(Node::Group(5)), false, || 3);
        assert_eq!(j.unwrap().partition, 5);
        // The original's word that it is gone (take_over): a new generation of group 3.
        let mut moved = before;
        assert_eq!(
            moved.judge_source(1, G3, true, || 4).unwrap().partition,
            4099
        );
    }

    #[test]
    fn citus_bad_states_are_refused() {
        let mut st = State::fresh(7, 1, 1, 11);
        let none = Source::Citus(Node::NotActivated);
        assert_eq!(
            st.judge_source(1, none, false, || 2),
            Err(Refusal::CitusNotActivated)
        );
        assert_eq!(
            st.judge_source(1, Source::Citus(Node::Group(4096)), false, || 2),
            Err(Refusal::CitusGroupTooLarge(4096))
        );
        // A node removed from its cluster (it reads "not activated") keeps its group.
        st.judge_source(1, Source::Citus(Node::Group(9)), false, || 2)
            .unwrap();
        assert_eq!(st.judge_source(1, none, false, || 2).unwrap().partition, 9);
        // An explicit partition wins over the group.
        let j = st
            .judge_source(1, Source::Explicit(42), false, || 2)
            .unwrap();
        assert_eq!(j.partition, 42);
    }

    #[test]
    fn a_server_that_joins_citus_keeps_honouring_its_derived_partition() {
        let mut st = State::fresh(7, 1, 1, 11);
        let derived = st
            .judge_source(1, Source::Derived, false, || 2)
            .unwrap()
            .partition;
        st.written(p(800, -1, 0));
        let j = st
            .judge_source(1, Source::Citus(Node::Group(2)), false, || 3)
            .unwrap();
        assert_eq!((j.partition, j.changed), (2, true));
        // Its standby, promoted, knows both as used by its primary.
        let mut b = st;
        b.at_start(true, 12, 5, 1);
        b.judge_source(2, Source::Citus(Node::Group(2)), false, || 6)
            .unwrap();
        assert_eq!(b.others(derived), Some(p(800, -1, 0)));
        assert!(b.others(2).is_some());
    }

    // Issue 21: a lineage that used more than MAX_ENTRIES partitions. Each test below failed
    // when the table folded whole entries (their partition numbers with them) into `retired`.

    /// Notes `n` partitions from `first` on, used by other members of the lineage, with bounds
    /// newer than `after` (the lineage went on making IDs with them).
    fn many_newer(st: &mut State, first: u16, n: u16, after: u64) {
        for i in 0..n {
            st.note(first + i, false, p(after + 1 + u64::from(i), -1, 0));
        }
    }

    #[test]
    fn a_clone_is_refused_its_originals_partition_past_the_table_size() {
        // S, a standby of P, which uses partition 5 (copied configuration) and has been idle
        // for a while: its bound is older than those of the 64 partitions the lineage used
        // since (derived ones of promoted standbys, PITR restores, ...).
        let mut s = State::fresh(7, 100, 1, 11);
        s.replay(1, 1, &[5], p(500, -1, 0));
        many_newer(&mut s, 1000, MAX_ENTRIES as u16, 500);
        // C, a base backup of S started beside P on P's timeline with the same setting: P
        // still makes IDs with 5, so C must be refused it.
        let mut c = s;
        assert!(c.at_start(true, 12, 200, 1));
        assert_eq!(
            c.judge(1, Some(5), false, || 300),
            Err(Refusal::Inherited(5))
        );
        // Through the state file too.
        let text = crate::generator::state_file::encode(&s);
        let mut d = crate::generator::state_file::decode(text.as_bytes()).unwrap();
        assert!(d.at_start(true, 13, 201, 1));
        assert_eq!(
            d.judge(1, Some(5), false, || 301),
            Err(Refusal::Inherited(5))
        );
    }

    #[test]
    fn a_derived_draw_avoids_a_partition_past_the_table_size() {
        // The lineage knows partition q, the derived partition of a server that may still
        // run (an old primary in split brain), then 64 newer ones.
        let q = derived_partition(7, 42);
        let mut s = State::fresh(7, 100, 1, 11);
        s.replay(1, 1, &[q], p(500, -1, 0));
        many_newer(&mut s, 1000, MAX_ENTRIES as u16, 500);
        // A promotion whose first draw gives q again must draw again: the retired bound only
        // covers what q's server made so far, and it goes on.
        let mut draws = [42u64, 43, 44, 45].into_iter();
        let j = s.judge(2, None, false, || draws.next().unwrap()).unwrap();
        assert_ne!(j.partition, q);
        assert!(!j.took_over);
    }

    #[test]
    fn a_citus_generation_past_the_table_size_is_not_reused() {
        // Group 3's generation 0 (its old primary, which may still run), then 64 newer
        // partitions: the promoted standby takes generation 1, not 0 again.
        let mut s = State::fresh(7, 100, 1, 11);
        s.replay(1, 1, &[3], p(500, -1, 0));
        s.citus_group = 3;
        many_newer(&mut s, 1000, MAX_ENTRIES as u16, 500);
        let j = s.judge_source(2, G3, false, || 9).unwrap();
        assert_eq!((j.partition, j.took_over), (3 + 4096, false));
    }

    #[test]
    fn a_server_that_used_more_partitions_than_the_table_forgets_none() {
        // P is given 70 explicit partitions in turn (reloads): every entry is its own.
        let mut pr = State::fresh(7, 100, 1, 11);
        for k in 0..70u16 {
            pr.judge(1, Some(k), false, || 1).unwrap();
            pr.written(p(1000 + u64::from(k), -1, 0));
        }
        // A clone of P (it may go back to any of them) is refused every one.
        for k in 0..70u16 {
            let mut c = pr;
            assert!(c.at_start(true, 12, 200, 1));
            assert_eq!(
                c.judge(1, Some(k), false, || 300),
                Err(Refusal::Inherited(k)),
                "partition {k}"
            );
        }
        for k in 0..70u16 {
            assert!(pr.is_mine(k), "P forgot it used {k}");
        }
        // Back to partition 0: its own, no refusal, nothing to take over.
        let mut again = pr;
        let j = again.judge(1, Some(0), false, || 2).unwrap();
        assert!(!j.took_over);
        // Folding its own entries lost nothing: they were within its horizon.
        assert_eq!(pr.retired, NOTHING);
        assert_eq!(pr.entries().len() + pr.folded().count(), 70);
        // Taken over by the administrator's word, any of them resumes after all P made.
        for k in 0..70u16 {
            let mut c = pr;
            assert!(c.at_start(true, 12, 200, 1));
            let j = c.judge(1, Some(k), true, || 300).unwrap();
            assert!(j.took_over);
            assert_eq!(j.absorb, p(1069, -1, 0), "partition {k}");
        }
        // The state file keeps every one of them, P's own.
        let text = crate::generator::state_file::encode(&pr);
        assert!(text.starts_with("sno generator state 4\n"), "{text}");
        let back = crate::generator::state_file::decode(text.as_bytes()).unwrap();
        assert_eq!(back, pr);
    }

    #[test]
    fn a_derived_draw_ends_when_the_lineage_used_every_partition() {
        let mut s = State::fresh(7, 100, 1, 11);
        s.replay(1, 1, &[9], p(800, -1, 0));
        s.used_by_others = Partitions {
            bits: [u64::MAX; WORDS],
        };
        s.retired = p(700, -1, 0);
        // A copy beside its original: no partition is free, refused (no endless draw).
        let mut c = s;
        assert!(c.at_start(true, 12, 200, 1));
        let mut n = 0;
        let r = c.judge(1, None, false, || {
            n += 1;
            n
        });
        assert!(matches!(r, Err(Refusal::Inherited(_))), "{r:?}");
        // A promotion takes the one it drew over, after everything known of it.
        let mut pr = s;
        let j = pr.judge(2, None, false, || 5).unwrap();
        assert!(j.took_over);
        assert_eq!(j.partition, derived_partition(7, 5));
        let want = if j.partition == 9 {
            p(800, -1, 0)
        } else {
            p(700, -1, 0)
        };
        assert_eq!(j.absorb, want);
        // One partition left: drawn until it comes.
        let q = derived_partition(7, 1234);
        let mut one = s;
        one.used_by_others.remove(q);
        let mut n = 1000u64;
        let j = one
            .judge(2, None, false, || {
                n += 1;
                if n > 1200 {
                    1234
                } else {
                    n
                }
            })
            .unwrap();
        assert_eq!((j.partition, j.took_over), (q, false));
    }

    #[test]
    fn a_derived_draw_never_lands_in_the_reserved_range() {
        let mut drawn = 0u64;
        for sysid in 0..300u64 {
            let mut s = State::fresh(sysid, sysid * 7 + 1, 1, 11);
            let mut n = sysid * 1000;
            let j = s
                .judge(1, None, false, || {
                    n += 1;
                    drawn += 1;
                    n
                })
                .unwrap();
            assert!(!reserved::is_reserved(j.partition), "{}", j.partition);
        }
        // About 1 in 16 first draws lands there and is drawn again.
        assert!(drawn > 0);
    }

    #[test]
    fn a_derived_partition_drawn_before_the_range_was_reserved_is_kept() {
        // An incarnation whose derived partition is reserved and was used (sno 0.5.0).
        let inc = (0..u64::MAX)
            .find(|&i| reserved::is_reserved(derived_partition(7, i)))
            .unwrap();
        let mut s = State::fresh(7, inc, 1, 11);
        let d = s.derived();
        s.note(d, true, p(100, -1, 0));
        let j = s.judge(1, None, false, || unreachable!()).unwrap();
        assert_eq!(j.partition, d);
        // It is never granted.
        assert!(s.grant().unwrap() != d || !reserved::is_reserved(d));
        assert!(s.reserved_taken(d));
        // Its promoted standby draws a new one, below the range.
        let mut sb = s;
        sb.become_new(inc ^ 1);
        let mut n = 0;
        let j = sb
            .judge(2, None, false, || {
                n += 1;
                n
            })
            .unwrap();
        assert!(!reserved::is_reserved(j.partition));
    }

    #[test]
    fn a_new_explicit_reserved_partition_is_refused_an_old_one_kept() {
        let mut s = State::fresh(7, 100, 1, 11);
        assert_eq!(
            s.judge(1, Some(62_000), false, || 1),
            Err(Refusal::Reserved {
                partition: 62_000,
                granted: false
            })
        );
        // Nothing changed.
        assert_eq!(s, State::fresh(7, 100, 1, 11));
        // Used before the range was reserved: kept, and taken over by a promotion.
        s.note(62_000, true, p(50, -1, 0));
        assert_eq!(
            s.judge(1, Some(62_000), false, || 1).unwrap().partition,
            62_000
        );
        let mut sb = s;
        sb.become_new(200);
        let j = sb.judge(2, Some(62_000), false, || 3).unwrap();
        assert!(j.took_over);
        // A granted one is refused even then.
        let mut g = State::fresh(7, 100, 1, 11);
        let q = g.grant().unwrap();
        g.note_granted(q);
        assert_eq!(
            g.judge(1, Some(q), false, || 1),
            Err(Refusal::Reserved {
                partition: q,
                granted: true
            })
        );
    }

    #[test]
    fn the_allocator_grants_the_lowest_free_reserved_partition_once() {
        let mut s = State::fresh(7, 100, 1, 11);
        s.note(reserved::FIRST + 1, true, p(10, -1, 0));
        let mut got = Vec::new();
        for _ in 0..4 {
            let q = s.grant().unwrap();
            s.note_granted(q);
            got.push(q);
        }
        assert_eq!(got, vec![61_440, 61_442, 61_443, 61_444]);
        assert_eq!(s.reserved_used(), 5);
        // Outside the range, nothing is noted as granted.
        s.note_granted(5);
        assert!(!s.granted.contains(5));
        // All taken: refused.
        for q in reserved::FIRST..=u16::MAX {
            s.note_granted(q);
        }
        assert_eq!(s.grant(), Err(GrantRefusal::Exhausted));
    }

    #[test]
    fn a_copy_grants_nothing_until_promoted_or_taken_over() {
        let mut s = State::fresh(7, 100, 1, 11);
        let q = s.grant().unwrap();
        s.note_granted(q);
        // A clone beside its original, on the same timeline.
        let mut c = s;
        assert!(c.at_start(true, 12, 200, 1));
        assert_eq!(c.grant(), Err(GrantRefusal::Copy));
        // Its first sno_generate (a derived partition) does not lift it.
        c.judge(1, None, false, || 300).unwrap();
        assert_eq!(c.grant(), Err(GrantRefusal::Copy));
        // take_over does; the grant is after the original's.
        let mut t = c;
        t.judge(1, None, true, || 301).unwrap();
        assert_eq!(t.grant(), Ok(q + 1));
        // A promotion (a new WAL timeline) does too.
        let mut pr = c;
        pr.judge(2, None, false, || 302).unwrap();
        assert_eq!(pr.grant(), Ok(q + 1));
        // What it learns in WAL from its original is never granted.
        let mut sb = s;
        assert!(sb.at_start(true, 13, 400, 1));
        sb.note_granted(q + 1);
        sb.judge(2, None, false, || 401).unwrap();
        assert_eq!(sb.grant(), Ok(q + 2));
    }

    #[test]
    fn a_citus_group_never_takes_its_reserved_generation() {
        let mut s = State::fresh(7, 100, 1, 11);
        let mut seen = Vec::new();
        for tl in 1..=20u32 {
            let j = s
                .judge_source(tl, Source::Citus(Node::Group(3)), false, || tl as u64 * 13)
                .unwrap();
            seen.push(j.partition);
            assert_ne!(j.partition, 3 + 61_440);
        }
        // 15 live generations, then the oldest again.
        assert_eq!(
            seen[..15],
            (0..15).map(|k| 3 + 4096 * k).collect::<Vec<u16>>()[..]
        );
        assert_eq!(seen[15], 3);
        // A lineage that used generation 15 before it was reserved keeps it.
        let mut old = State::fresh(7, 100, 1, 11);
        old.note(3 + 61_440, true, p(5, -1, 0));
        old.citus_group = 3;
        let j = old
            .judge_source(1, Source::Citus(Node::Group(3)), false, || 9)
            .unwrap();
        assert_eq!(j.partition, 3 + 61_440);
    }

    #[test]
    fn the_table_folds_what_loses_nothing_first() {
        // Own entries within the horizon leave first; then the oldest bound.
        let mut s = State::fresh(7, 100, 1, 11);
        s.note(1, true, NOTHING);
        s.written(p(900, -1, 0));
        many_newer(&mut s, 1000, MAX_ENTRIES as u16 - 1, 10);
        s.note(2000, false, p(5, -1, 0));
        assert_eq!(s.retired, NOTHING);
        assert!(s.is_mine(1) && s.find(1, true).is_none());
        s.note(2001, false, p(6, -1, 0));
        // 2000's bound was the oldest: it went into the retired bound.
        assert_eq!(s.retired, p(5, -1, 0));
        assert_eq!(s.others(2000), Some(p(5, -1, 0)));
        assert_eq!(s.others(2001), Some(p(6, -1, 0)));
        assert_eq!(s.others(1), None);
        // A new incarnation: 1 becomes another's, within the old horizon.
        let mut c = s;
        assert!(c.at_start(true, 12, 200, 1));
        assert_eq!(c.others(1), Some(p(900, -1, 0)));
        assert!(!c.is_mine(1));
        assert_eq!(c.judge(1, Some(1), false, || 3), Err(Refusal::Inherited(1)));
        // The Debug form lists the sets as ranges.
        let d = format!("{:?}", c.used_by_others);
        assert!(d.starts_with("{1,1000-1062,2000-2001}"), "{d}");
    }

    #[test]
    fn learning_from_another_state_keeps_what_left_its_table() {
        // What WAL replay taught a server without a usable file: 100 partitions of another
        // member, and one of the file's own.
        let mut mem = State::fresh(7, 100, 1, 11);
        let parts: Vec<u16> = (3000..3100).collect();
        mem.replay(1, 1, &parts, p(700, -1, 0));
        mem.replay(1, 1, &[42], p(750, -1, 0));
        // The file put back: partition 42 is its own.
        let mut file = State::fresh(7, 1, 1, 11);
        file.note(42, true, p(600, -1, 0));
        file.written(p(600, -1, 0));
        assert_eq!(file.learn(&mem), 1);
        assert!(file.is_mine(42));
        assert_eq!(file.me, p(750, -1, 0));
        for &q in &parts {
            assert_eq!(file.others(q), Some(p(700, -1, 0)), "{q}");
        }
        let mut c = file;
        assert!(c.at_start(true, 12, 200, 1));
        assert_eq!(
            c.judge(1, Some(3000), false, || 3),
            Err(Refusal::Inherited(3000))
        );
    }

    #[test]
    fn partitions_iterate_in_order_and_as_ranges() {
        let mut set = Partitions::NONE;
        for q in [0u16, 1, 2, 5, 63, 64, 65, 1000, 65_534, 65_535] {
            set.insert(q);
        }
        assert_eq!(set.len(), 10);
        assert_eq!(
            set.iter().collect::<Vec<_>>(),
            vec![0, 1, 2, 5, 63, 64, 65, 1000, 65_534, 65_535]
        );
        assert_eq!(
            set.ranges().collect::<Vec<_>>(),
            vec![(0, 2), (5, 5), (63, 65), (1000, 1000), (65_534, 65_535)]
        );
        let all = Partitions {
            bits: [u64::MAX; WORDS],
        };
        assert_eq!(all.ranges().collect::<Vec<_>>(), vec![(0, 65_535)]);
        assert_eq!(all.len(), PARTITIONS);
        set.remove(1000);
        assert!(!set.contains(1000) && set.contains(65));
        assert!(Partitions::NONE.is_empty());
    }

    #[test]
    fn a_standby_learns_every_partition_of_a_primary_that_used_many() {
        let mut pr = State::fresh(7, 100, 1, 11);
        for k in 0..70u16 {
            pr.judge(1, Some(k), false, || 1).unwrap();
            pr.written(p(1000 + u64::from(k), -1, 0));
        }
        // Promoted, a standby that replayed P's record takes each over after P's bound.
        let rec = crate::generator::wal_record::encode(&pr, 1);
        let rec = crate::generator::wal_record::decode(&rec).unwrap();
        let mut s = State::fresh(7, 500, 1, 13);
        s.replay(rec.incarnation, rec.timeline, &rec.partitions, rec.bound);
        for k in 0..70u16 {
            let mut t = s;
            let j = t.judge(2, Some(k), false, || 600).unwrap();
            assert!(j.took_over, "partition {k}");
            assert_eq!(j.absorb, p(1069, -1, 0), "partition {k}");
        }
    }

    #[test]
    fn a_standby_replaying_a_record_of_many_partitions_forgets_none() {
        let parts: Vec<u16> = (2000..2200).collect();
        let mut s = State::fresh(7, 100, 1, 11);
        s.replay(1, 1, &parts, p(700, -1, 0));
        // Its file round-trips, and a clone of it refuses each of them.
        let text = crate::generator::state_file::encode(&s);
        let back = crate::generator::state_file::decode(text.as_bytes()).unwrap();
        assert_eq!(back, s);
        for &q in &parts {
            let mut c = back;
            assert!(c.at_start(true, 12, 200, 1));
            assert_eq!(c.judge(1, Some(q), false, || 3), Err(Refusal::Inherited(q)));
        }
        for &q in &parts {
            assert_eq!(s.others(q), Some(p(700, -1, 0)), "forgot {q}");
        }
    }
}
