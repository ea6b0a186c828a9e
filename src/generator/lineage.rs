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

    /// A grant record replayed from WAL: the partition is granted, and a named grantee replaces
    /// the one a state file alone named (a grant written to the file, then lost in a crash before
    /// its record, names a role whose grant never happened; the record is what was granted).
    pub fn replay_grant(&mut self, p: u16, role: u32) {
        self.note_grant_to(p, role);
        if role != 0 && reserved::is_reserved(p) {
            self.grantees[(p - reserved::FIRST) as usize] = role;
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
    /// full, another entry leaves it (`State::fold`), its partition staying known.
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

    /// Whether another member of the lineage (the primary a promoted standby replaced) may have
    /// made IDs with `partition`: an entry of another incarnation, with a bound. (This
    /// incarnation's own IDs are known better: `crate::generator::member::Known::made`.)
    pub fn inherited_ids_with(&self, partition: u16) -> bool {
        self.entries()
            .iter()
            .any(|e| e.partition == partition && !e.mine && e.bound != NOTHING)
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
mod tests;
