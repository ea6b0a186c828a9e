//! Partition leases: the registry's decisions for generators outside the database.
//!
//! Pure Rust, no PostgreSQL. A lease is a (partition, sequence slice) of the reserved range and
//! a window `[not_before, expires)` of whole 4 ms units; its holder stamps only units inside
//! the window and sequence numbers inside the slice. So two leases can share IDs only if their
//! slices overlap and their windows overlap, and the registry never grants such a pair:
//!
//! * a slice is granted ([`acquire`]) only when every lease on an overlapping slice has ended
//!   by the registry's clock (`expires <= now`), and the new window starts no earlier than the
//!   latest of their ends: a comparison of windows, not of clocks, so whatever either clock
//!   does later, the new window begins after every earlier one on that slice;
//! * a renewal ([`renew`]) only moves `expires` later, and only while no later lease shares
//!   the slice (the registry's clock may have gone back since one was granted).
//!
//! The partitions come from the lineage's allocator ([`crate::generator::lineage::State`]),
//! granted to the lease pool of one database and one lineage incarnation for good: a
//! promotion, a PITR or a copy is a new incarnation, which never grants a slice of the old
//! one's partitions (its old primary may have granted more of them than it knows, in WAL it
//! never received), and takes new partitions from the share of its own WAL timeline
//! ([`share_of_timeline`]), which the old one's lost grants cannot be in.

use crate::generator::citus::LIVE_GENERATIONS;

/// The fewest sequence numbers a lease has: muyo/sno's generator needs 6 (`SequenceMax -
/// SequenceMin - 1 >= 4`); slices are powers of two.
pub const MIN_SEQUENCES: u32 = 8;

/// The most: a whole partition.
pub const MAX_SEQUENCES: u32 = 1 << 16;

/// The longest holder name, in bytes: a holder names a process (a host, a service, a process
/// ID), as `application_name` does, with room for a UUID or two. The registry keeps it in every
/// lease's row, so a role cannot make the registry's rows large.
pub const MAX_HOLDER_BYTES: usize = 256;

/// How far back a new window reaches before the registry's clock (250 units, 1 s), so that a
/// holder whose clock is a little behind the registry's can stamp at once. Only over units the
/// slice's earlier leases had ended by.
pub const SLACK_UNITS: i64 = 250;

/// The share of the reserved range a registry on WAL timeline `timeline` takes new lease
/// partitions from: `timeline mod 15`, as a Citus coordinator's generation
/// ([`crate::generator::reserved::in_generation_share`]). A promoted standby or a PITR runs on a
/// new timeline, the next one: it never takes a partition its old primary may have taken in WAL
/// it never received, unless 15 promotions or PITRs happen within one lease TTL.
pub const fn share_of_timeline(timeline: u32) -> u32 {
    timeline % LIVE_GENERATIONS
}

/// A partition and an inclusive range of its sequence numbers: what a lease stamps. (The slice
/// of the pool a server's own generator numbers from is [`crate::generator::cursor::Slice`].)
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LeaseSlice {
    pub partition: u16,
    pub min: u16,
    pub max: u16,
}

impl LeaseSlice {
    /// Whether the two share a (partition, sequence number).
    pub const fn overlaps(&self, other: &LeaseSlice) -> bool {
        self.partition == other.partition && self.min <= other.max && other.min <= self.max
    }

    /// How many sequence numbers it has.
    pub const fn len(&self) -> u32 {
        self.max as u32 - self.min as u32 + 1
    }

    /// Never: a slice has at least one number (for clippy's `len` convention).
    pub const fn is_empty(&self) -> bool {
        false
    }
}

/// A lease as the registry recorded it: its slice and window, in 4 ms units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Granted {
    pub slice: LeaseSlice,
    pub not_before: i64,
    pub expires: i64,
}

impl Granted {
    /// Whether the two could stamp one ID: overlapping slices and overlapping windows.
    pub const fn conflicts(&self, other: &Granted) -> bool {
        self.slice.overlaps(&other.slice)
            && self.not_before < other.expires
            && other.not_before < self.expires
    }
}

/// A partition of the lease pool this registry may grant from, busy in all its slices until
/// `floor` (the latest end of the leases whose records were pruned).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pooled {
    pub partition: u16,
    pub floor: i64,
}

/// What [`acquire`] decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    /// Grant this slice for this window.
    Grant(Granted),
    /// No slice of the pool is free: the pool needs a new partition from the allocator.
    NeedPartition,
}

/// Why a TTL or a slice size is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadRequest {
    /// The TTL is not positive, or under one second.
    TtlTooShort,
    /// The TTL is over the maximum.
    TtlTooLong,
    /// The slice size is not a power of two in [`MIN_SEQUENCES`]..=[`MAX_SEQUENCES`].
    Sequences,
    /// The holder is empty or longer than [`MAX_HOLDER_BYTES`].
    Holder,
}

/// Checks a holder name: 1 to [`MAX_HOLDER_BYTES`] bytes.
pub fn check_holder(holder: &str) -> Result<(), BadRequest> {
    if holder.is_empty() || holder.len() > MAX_HOLDER_BYTES {
        return Err(BadRequest::Holder);
    }
    Ok(())
}

/// One of a role's rows in the registry: a lease and the end of its window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kept {
    pub lease: i64,
    pub expires: i64,
}

/// A role asked for a new lease while `limit` of its leases have windows that have not ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AtLimit;

/// Room for one more lease of a role whose rows are `rows` (every lease of its still recorded,
/// ended or not) under its limit `limit`, at `now`: the ended leases to forget first (their
/// ends become their partition's floor), oldest end first, so that the role has at most
/// `limit` rows once the new lease is recorded; or [`AtLimit`] when `limit` of its leases have
/// not ended (released ones count until their end: their holder may stamp until it, and a role
/// that releases and acquires again would otherwise hold any number of slices).
///
/// So a role's rows never outnumber its limit, whatever it asks for and however often.
pub fn make_room(rows: &[Kept], limit: u32, now: i64) -> Result<Vec<i64>, AtLimit> {
    let live = rows.iter().filter(|r| r.expires > now).count();
    if live >= limit as usize {
        return Err(AtLimit);
    }
    let excess = (rows.len() + 1).saturating_sub(limit as usize);
    let mut ended: Vec<Kept> = rows.iter().copied().filter(|r| r.expires <= now).collect();
    ended.sort_by_key(|r| (r.expires, r.lease));
    Ok(ended.into_iter().take(excess).map(|r| r.lease).collect())
}

/// A pool partition's record as the registry's table holds it (`stamp`: bumped by every grant
/// and renewal on it) and as its ledger, which no dump carries, holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ledger {
    /// The stamp of the registry's last grant or renewal on the partition.
    pub stamp: i64,
    /// The latest end of a window the registry ever granted or renewed on it.
    pub leased_until: i64,
}

/// What a pool partition's floor must be before its slices are leased again: `None` when the
/// table is the registry's own record (its stamp is the ledger's), else the latest end the
/// ledger knows (a data-only restore brought back older rows: the leases granted or renewed
/// after the dump are missing from the table, and every slice stays busy until the latest of
/// their possible ends).
pub fn relearned_floor(table_stamp: i64, floor: i64, ledger: Ledger) -> Option<i64> {
    (table_stamp != ledger.stamp).then_some(floor.max(ledger.leased_until))
}

/// The TTL in whole 4 ms units (rounded up), if it is at least 1 s and at most `max_micros`.
pub fn ttl_units(ttl_micros: i128, max_micros: i128) -> Result<i64, BadRequest> {
    if ttl_micros < 1_000_000 {
        return Err(BadRequest::TtlTooShort);
    }
    if ttl_micros > max_micros {
        return Err(BadRequest::TtlTooLong);
    }
    let units = (ttl_micros + 3_999) / 4_000;
    i64::try_from(units).map_err(|_| BadRequest::TtlTooLong)
}

/// Checks a slice size.
pub fn check_sequences(sequences: i64) -> Result<u32, BadRequest> {
    match u32::try_from(sequences) {
        Ok(n) if n.is_power_of_two() && (MIN_SEQUENCES..=MAX_SEQUENCES).contains(&n) => Ok(n),
        _ => Err(BadRequest::Sequences),
    }
}

/// A new lease of `sequences` numbers for `ttl` units from `now` (the registry's clock), on the
/// first free aligned slice of `pool`, given `granted`: the leases on the pool's partitions
/// that end after `now - SLACK_UNITS` (older ones cannot matter at this `now`).
///
/// Free: every lease on an overlapping slice ended by `now`. The window starts at the latest of
/// those ends, or `now - SLACK_UNITS` if later, and ends at `now + ttl` (at least one unit past
/// its start).
pub fn acquire(pool: &[Pooled], granted: &[Granted], sequences: u32, now: i64, ttl: i64) -> Choice {
    debug_assert!(check_sequences(sequences as i64).is_ok());
    let slices = (MAX_SEQUENCES / sequences) as usize;
    // Each slice's latest end among the leases on it, in one pass over the leases: the cost is
    // that of the leases and the slices, not their product, so a pool of thousands of small
    // leases answers in microseconds.
    let mut busy = vec![i64::MIN; slices];
    for p in pool {
        busy.fill(p.floor);
        for g in granted.iter().filter(|g| g.slice.partition == p.partition) {
            let first = g.slice.min as usize / sequences as usize;
            let last = g.slice.max as usize / sequences as usize;
            for b in &mut busy[first..=last] {
                *b = (*b).max(g.expires);
            }
        }
        if let Some(k) = busy.iter().position(|&b| b <= now) {
            let min = k as u32 * sequences;
            let slice = LeaseSlice {
                partition: p.partition,
                min: min as u16,
                max: (min + sequences - 1) as u16,
            };
            let not_before = busy[k].max(now - SLACK_UNITS);
            let expires = (now + ttl).max(not_before + 1);
            return Choice::Grant(Granted {
                slice,
                not_before,
                expires,
            });
        }
    }
    Choice::NeedPartition
}

/// Where the lease to renew stands, as the registry knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Standing {
    /// It was released (its holder stopped).
    pub released: bool,
    /// Its partition is of this registry's incarnation and database (not of an old primary, a
    /// copy's original or a restored dump).
    pub ours: bool,
    /// Another lease on an overlapping slice was granted after it (its window starts at or
    /// after this one's end: the registry's clock went back since).
    pub handed_on: bool,
}

/// Why a renewal is refused: the holder must stop using the lease (at its end at the latest)
/// and acquire a new one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RenewRefusal {
    Released,
    Expired,
    HandedOn,
    NotOurs,
}

/// The renewed end of `lease` for `ttl` more units from `now`: never earlier than its end now.
pub fn renew(lease: &Granted, standing: Standing, now: i64, ttl: i64) -> Result<i64, RenewRefusal> {
    if standing.released {
        return Err(RenewRefusal::Released);
    }
    if !standing.ours {
        return Err(RenewRefusal::NotOurs);
    }
    if standing.handed_on {
        return Err(RenewRefusal::HandedOn);
    }
    if now >= lease.expires {
        return Err(RenewRefusal::Expired);
    }
    Ok(lease.expires.max(now + ttl))
}

/// Whether `other` was handed on after `lease`: a lease on an overlapping slice whose window
/// starts at or after `lease`'s end. (Windows on overlapping slices never overlap, and each
/// grant's window starts after every earlier one's end, so these are exactly the later grants.)
pub const fn handed_on(lease: &Granted, other: &Granted) -> bool {
    other.slice.overlaps(&lease.slice) && other.not_before >= lease.expires
}

/// When a holder should renew: a third of the TTL from `now`.
pub const fn renew_after(now: i64, ttl: i64) -> i64 {
    now + ttl / 3
}

#[cfg(test)]
mod tests;
