//! Members of a replicating group: servers that are not copies of each other and exchange rows
//! by logical replication (one way or both). Two members with the same live partition would
//! make the same IDs; this room decides which of the two goes on and which is refused, and
//! keeps what a server learned of the members it met. Pure Rust: the handshake itself (over
//! each subscription's connection) and the record in the data directory are the glue's
//! (`crate::pg::member`), `std::fs` apart.
//!
//! **Who goes on.** Both servers of a handshake see the same two descriptions and order them the
//! same way, so exactly one of them is refused, and each decides only for itself: the server
//! that goes on needs no word from its peer. A member that has made IDs with the partition
//! comes before one that has not (a newcomer is refused before its first ID, the established
//! node never stops); between two that both did (or neither), the older cluster (the `initdb`
//! time in the top 32 bits of the system identifier) comes first, then the lower identifier.
//!
//! **Refused until a new partition is checked.** The refusal is kept in memory and in the file
//! [`FILE_NAME`], read back at every start: a restart does not lift it. A new `sno.partition`
//! lifts it once a full round of handshakes with every subscription's publisher found no member
//! with the new one first ([`Known::lift`]): two refused servers that both took the same new
//! partition are compared before either makes an ID with it.

/// How many members a server remembers (the peers of its subscriptions and those that called
/// it); the oldest is forgotten first.
pub const MAX_KNOWN: usize = 32;

/// The record of a refusal in the data directory.
pub const FILE_NAME: &str = "sno_generator.member_conflict";

/// One server as a handshake describes it.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Member {
    /// Its lineage's system identifier.
    pub id: u64,
    /// Its live partition (what `sno_generate` writes, or would).
    pub partition: u16,
    /// Whether its lineage may have made IDs with that partition.
    pub made_ids: bool,
}

/// What a server decides about itself after meeting a peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Different partitions, or the same lineage (copies are the lineage's business).
    Apart,
    /// The same partition, and this server came first: it goes on.
    First,
    /// The same partition, and the peer came first: this server is refused.
    Second,
}

/// A refusal: the partition this server may not use, and the member that uses it.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The partition.
    pub partition: u16,
    /// The member that came first with it.
    pub peer: Member,
}

/// The order of "first": lower comes first.
fn rank(m: &Member) -> (bool, u64, u64) {
    (!m.made_ids, m.id >> 32, m.id)
}

/// What `me` decides about itself on meeting `peer`.
pub fn verdict(me: &Member, peer: &Member) -> Verdict {
    if me.partition != peer.partition || me.id == peer.id {
        Verdict::Apart
    } else if rank(me) < rank(peer) {
        Verdict::First
    } else {
        Verdict::Second
    }
}

/// What a server knows of the members it met, and its refusal if any. Fixed-size: it lives in
/// shared memory.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Known {
    /// Number of `peers` in use.
    pub len: u32,
    /// The members met, most recent last.
    pub peers: [Member; MAX_KNOWN],
    /// This server's refusal.
    pub conflict: Option<Conflict>,
}

impl Known {
    /// Nothing known.
    pub const NONE: Known = Known {
        len: 0,
        peers: [Member {
            id: 0,
            partition: 0,
            made_ids: false,
        }; MAX_KNOWN],
        conflict: None,
    };

    /// The members met.
    pub fn peers(&self) -> &[Member] {
        &self.peers[..self.len as usize]
    }

    /// Notes `peer`, met by `me`, and returns what `me` decides. A refusal for `me`'s partition
    /// is kept (the first one stands until [`Known::lift`]); one for another partition (the
    /// configuration changed since) is replaced.
    pub fn meet(&mut self, me: &Member, peer: Member) -> Verdict {
        if let Some(i) = self.peers().iter().position(|p| p.id == peer.id) {
            self.peers.copy_within(i + 1..self.len as usize, i);
            self.len -= 1;
        }
        if self.len as usize == MAX_KNOWN {
            self.peers.copy_within(1.., 0);
            self.len -= 1;
        }
        self.peers[self.len as usize] = peer;
        self.len += 1;
        let v = verdict(me, &peer);
        if v == Verdict::Second && self.conflict.is_none_or(|c| c.partition != me.partition) {
            self.conflict = Some(Conflict {
                partition: me.partition,
                peer,
            });
        }
        v
    }

    /// The refusal in force, if any: for the partition in force, or for one the configuration
    /// left since, until a round of handshakes has checked the new one ([`Known::lift`]).
    pub fn refuses(&self) -> Option<Conflict> {
        self.conflict
    }

    /// After a full round of handshakes (every subscription's publisher answered) with the
    /// configured `partition`: lifts a refusal that no longer applies (it was for another
    /// partition; the round found no member first with this one, or it would have replaced
    /// it). Returns whether one was lifted.
    pub fn lift(&mut self, partition: Option<u16>) -> bool {
        match self.conflict {
            Some(c) if partition.is_some_and(|p| p != c.partition) => {
                self.conflict = None;
                true
            }
            _ => false,
        }
    }

    /// A partition to suggest instead of `from`: the next live one (below `live_end`, wrapping
    /// round) that no member met uses and `taken` does not rule out (the lineage's own past).
    pub fn suggest(&self, from: u16, live_end: u16, taken: impl Fn(u16) -> bool) -> Option<u16> {
        (1..u32::from(live_end))
            .map(|k| ((u32::from(from) + k) % u32::from(live_end)) as u16)
            .find(|&p| !taken(p) && !self.peers().iter().any(|m| m.partition == p))
    }
}

/// The length of a refusal's WAL record: format version 1 (1 byte), partition (2), the peer's
/// system identifier (8), whether it made IDs (1); little-endian. Standbys replay it, so a
/// promoted standby keeps its primary's refusal.
pub const RECORD_LEN: usize = 12;

/// The bytes of a refusal's WAL record.
pub fn encode_record(c: &Conflict) -> [u8; RECORD_LEN] {
    let mut b = [0u8; RECORD_LEN];
    b[0] = 1;
    b[1..3].copy_from_slice(&c.partition.to_le_bytes());
    b[3..11].copy_from_slice(&c.peer.id.to_le_bytes());
    b[11] = u8::from(c.peer.made_ids);
    b
}

/// Reads a refusal's WAL record: exactly [`RECORD_LEN`] bytes, version 1.
pub fn decode_record(b: &[u8]) -> Option<Conflict> {
    if b.len() != RECORD_LEN || b[0] != 1 || b[11] > 1 {
        return None;
    }
    let partition = u16::from_le_bytes([b[1], b[2]]);
    let id = u64::from_le_bytes(b[3..11].try_into().ok()?);
    Some(Conflict {
        partition,
        peer: Member {
            id,
            partition,
            made_ids: b[11] == 1,
        },
    })
}

/// The record's text: what a DBA who finds it reads, then the refusal.
pub fn to_text(c: &Conflict) -> String {
    format!(
        "sno.partition {p} is refused here: the member with system identifier {id} used it first; set another sno.partition to lift this\npartition={p}\npeer={id}\nmade_ids={m}\n",
        p = c.partition,
        id = c.peer.id,
        m = u8::from(c.peer.made_ids)
    )
}

/// The refusal a record's text holds (`None` for anything else).
pub fn from_text(text: &str) -> Option<Conflict> {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix('='))
    };
    let partition = field("partition")?.parse().ok()?;
    let id = field("peer")?.parse().ok()?;
    let made_ids = match field("made_ids")? {
        "0" => false,
        "1" => true,
        _ => return None,
    };
    Some(Conflict {
        partition,
        peer: Member {
            id,
            partition,
            made_ids,
        },
    })
}

/// Writes the record of `c` in `dir` (flushed with its directory when `fsync`).
pub fn save(dir: &std::path::Path, c: &Conflict, fsync: bool) -> std::io::Result<()> {
    let tmp = dir.join(format!("{FILE_NAME}.tmp"));
    std::fs::write(&tmp, to_text(c))?;
    if fsync {
        std::fs::File::open(&tmp)?.sync_all()?;
    }
    std::fs::rename(&tmp, dir.join(FILE_NAME))?;
    if fsync {
        super::lost::sync_dir(dir)?;
    }
    Ok(())
}

/// The refusal recorded in `dir`, if any (an unreadable record counts as none: it is written
/// whole by a rename).
pub fn load(dir: &std::path::Path) -> Option<Conflict> {
    from_text(&std::fs::read_to_string(dir.join(FILE_NAME)).ok()?)
}

/// Removes the record from `dir`, if it is there.
pub fn forget(dir: &std::path::Path, fsync: bool) -> std::io::Result<()> {
    match std::fs::remove_file(dir.join(FILE_NAME)) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
        Ok(()) if fsync => super::lost::sync_dir(dir),
        Ok(()) => Ok(()),
    }
}

#[cfg(test)]
mod tests;
