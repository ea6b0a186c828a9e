//! The generator's side of a handshake with another member of a replicating group
//! ([`crate::generator::member`], the decisions; [`crate::pg::handshake`], the connections):
//! what this server tells a peer, what it decides on hearing one, the refusal kept in shared
//! memory and recorded in the data directory, and the error that names it.

use super::host::PgHost;
use crate::generator::member::{self, Conflict, Member};
use crate::generator::server::{self, Heard};
use crate::pg::errors::{self, Problem};
use crate::pg::shmem::{self, Shared};

/// This server's description for a handshake (`None` while a derived partition is not drawn
/// yet, or without shared memory).
pub(crate) fn me() -> Option<Member> {
    let s = shmem::shared()?;
    shmem::read(s, |g| server::member(&PgHost(s), g))
}

/// The members this server met.
pub(crate) fn known() -> Vec<Member> {
    shmem::shared().map_or_else(Vec::new, |s| shmem::read(s, |g| g.members.peers().to_vec()))
}

/// One side of a handshake with `peer`, which met `beyond` ([`server::hear`]; `verified`: over
/// this server's own connection); a refusal it
/// makes is recorded in the data directory and WAL before this returns.
pub(crate) fn hear(peer: Member, beyond: &[Member], verified: bool) -> Option<Heard> {
    let s = shmem::shared()?;
    let heard = shmem::locked(s, |g| server::hear(&PgHost(s), g, peer, beyond, verified))?;
    if let Some(c) = heard.refused {
        pgrx::log!(
            "sno: partition {} is refused here: the server with system identifier {} uses it and came first",
            c.partition,
            c.peer.id
        );
        record(Some(&c));
        // Logged for the standbys (a promoted one refuses it too), unless this is one (a
        // publisher in recovery answering a hello: its primary decides for itself).
        // SAFETY: plain read of a shared flag.
        if !unsafe { pgrx::pg_sys::RecoveryInProgress() } {
            crate::pg::wal::flush(crate::pg::wal::log_member(&c));
        }
    }
    Some(heard)
}

/// Redo of the record of a lifted refusal.
pub fn replay_lifted(s: &'static Shared) {
    shmem::locked(s, |g| g.members.conflict = None);
    record(None);
}

/// Records (in the lineage worker, outside the lock) the partition this server made IDs with,
/// when it changed since `written`.
pub(crate) fn keep_made(written: &mut Option<u16>) {
    let Some(s) = shmem::shared() else {
        return;
    };
    let made = shmem::read(s, |g| g.members.made);
    if let (Some(p), true) = (made, made != *written) {
        match member::save_made(std::path::Path::new("."), p, shmem::fsync_enabled()) {
            Ok(()) => *written = made,
            Err(e) => pgrx::warning!("sno: could not write \"{}\": {e}", member::MADE_FILE),
        }
    }
}

/// Redo of a member record: the refusal kept in shared memory and recorded here too.
pub fn replay(s: &'static Shared, c: Conflict) {
    let was = shmem::locked(s, |g| g.members.conflict.replace(c));
    if was != Some(c) {
        record(Some(&c));
    }
}

/// After a full round of handshakes (or with no subscription to compare over): lifts a refusal
/// for a partition this server no longer uses ([`server::checked`]) and removes its record.
pub(crate) fn lift_if_checked() {
    let Some(s) = shmem::shared() else {
        return;
    };
    let (was, lifted, left) = shmem::locked(s, |g| {
        let was = g.members.conflict;
        (was, server::checked(&PgHost(s), g), g.members.conflict)
    });
    if let (Some(c), true, None) = (was, lifted, left) {
        pgrx::log!("sno: the refusal of partition {} is lifted: every member was compared with the partition configured now", c.partition);
        // In WAL too: a crash recovery (or a standby) that replays the refusal replays this.
        // SAFETY: plain read of a shared flag.
        if !unsafe { pgrx::pg_sys::RecoveryInProgress() } {
            crate::pg::wal::flush(crate::pg::wal::log_member_lifted());
        }
    }
    if left.is_none() && member::load(std::path::Path::new(".")).is_some() {
        record(None);
    }
}

/// Writes (or removes) the record of the refusal. A failure is logged: the refusal holds in
/// memory until the next start either way.
fn record(c: Option<&Conflict>) {
    let dir = std::path::Path::new(".");
    let fsync = shmem::fsync_enabled();
    let r = match c {
        Some(c) => member::save(dir, c, fsync),
        None => member::forget(dir, fsync),
    };
    if let Err(e) = r {
        pgrx::warning!("sno: could not write \"{}\": {e}", member::FILE_NAME);
    }
}

/// At start-up (the postmaster, before any other process): the refusal recorded here.
pub(crate) fn restore(s: &mut Shared) {
    let dir = std::path::Path::new(".");
    // SAFETY: the postmaster, before any other process exists.
    let g = unsafe { &mut *s.guarded.get() };
    g.members.conflict = member::load(dir);
    g.members.made = member::load_made(dir);
}

/// Raises the refusal `c`, with a partition to use instead.
pub(super) fn raise(c: Conflict) -> ! {
    let Some(s) = shmem::shared() else {
        errors::raise(Problem::NoSharedMemory)
    };
    let now = shmem::partition()
        .unwrap_or_else(|| s.partition.load(core::sync::atomic::Ordering::Relaxed) as u16);
    if now != c.partition {
        errors::raise(Problem::MemberUnchecked {
            was: c.partition,
            now,
            refused: c.peer.id != 0,
        })
    }
    let suggest = shmem::read(s, |g| server::suggest(g, &c));
    errors::raise(Problem::MemberConflict {
        partition: c.partition,
        peer: c.peer.id,
        peer_made_ids: c.peer.made_ids,
        explicit: shmem::partition().is_some(),
        suggest,
    })
}
