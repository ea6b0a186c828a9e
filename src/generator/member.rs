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

/// How a server learned what it knows of a member.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Provenance {
    /// Another member said it of it: used for this server's own decision; it never replaces
    /// what the member said of itself, and is never told to others.
    Hearsay = 1,
    /// The member said it of itself, calling this server (`sno_member_hello`): used here, not
    /// told to others (a role allowed to call it must not be able to refuse other servers).
    Itself = 2,
    /// The member said it of itself over this server's own connection (a publisher of one of
    /// its subscriptions): told to others.
    Connected = 3,
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
    /// How each of `peers` was learned ([`Provenance`]): only what a member said of itself over this
    /// server's own connection is told to others.
    pub heard: [Provenance; MAX_KNOWN],
    /// This server's refusal.
    pub conflict: Option<Conflict>,
    /// The partition this server made IDs with since its data directory first had sno (the
    /// latest; kept in [`MADE_FILE`]): what a handshake says of it (`made_ids`).
    pub made: Option<u16>,
    /// The partition in force when this server last met the group with it checked (its first
    /// handshake, or a full round): a partition changed since, while the server has peers, is
    /// refused until a round checks it ([`Known::refuses`]).
    pub checked: Option<u16>,
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
        heard: [Provenance::Hearsay; MAX_KNOWN],
        conflict: None,
        made: None,
        checked: None,
    };

    /// The members met.
    pub fn peers(&self) -> &[Member] {
        &self.peers[..self.len as usize]
    }

    /// The members that said what this server knows of them over its own connections (what it
    /// tells others).
    pub fn verified_peers(&self) -> impl Iterator<Item = Member> + '_ {
        self.peers()
            .iter()
            .zip(self.heard.iter())
            .filter(|(_, &h)| h == Provenance::Connected)
            .map(|(&p, _)| p)
    }

    /// Notes `peer`, met by `me` as `heard`, and returns what `me` decides. What a member says
    /// of itself replaces what was known of it; hearsay replaces only hearsay (the decision
    /// then uses the record kept). A refusal for `me`'s partition is kept (the first one stands
    /// until [`Known::lift`]); one for another partition (the configuration changed since) is
    /// replaced.
    pub fn meet(&mut self, me: &Member, peer: Member, heard: Provenance) -> Verdict {
        let mut peer = peer;
        let mut heard = heard;
        if let Some(i) = self.peers().iter().position(|p| p.id == peer.id) {
            if heard == Provenance::Hearsay && self.heard[i] > Provenance::Hearsay {
                peer = self.peers[i];
                heard = self.heard[i];
            }
            self.peers.copy_within(i + 1..self.len as usize, i);
            self.heard.copy_within(i + 1..self.len as usize, i);
            self.len -= 1;
        }
        if self.len as usize == MAX_KNOWN {
            self.peers.copy_within(1.., 0);
            self.heard.copy_within(1.., 0);
            self.len -= 1;
        }
        self.peers[self.len as usize] = peer;
        self.heard[self.len as usize] = heard;
        self.len += 1;
        // The first contact is the baseline: the partition in force then counts as checked
        // with the members met from then on.
        if self.checked.is_none() {
            self.checked = Some(me.partition);
        }
        let v = verdict(me, &peer);
        if v == Verdict::Second && self.conflict.is_none_or(|c| c.partition != me.partition) {
            self.conflict = Some(Conflict {
                partition: me.partition,
                peer,
            });
        }
        v
    }

    /// The refusal in force for a server using `partition`, if any: for that partition, or for
    /// one the configuration left since; or, for a server that has met members, a partition
    /// changed since it last did and not checked yet (a [`Conflict`] naming the partition
    /// checked last, its peer unknown) until a round of handshakes checks it ([`Known::lift`]).
    pub fn refuses(&self, partition: u16) -> Option<Conflict> {
        self.conflict.or_else(|| match self.checked {
            Some(c) if self.len > 0 && c != partition => Some(Conflict {
                partition: c,
                peer: Member::default(),
            }),
            _ => None,
        })
    }

    /// Notes that this server made IDs with `partition` (whether it must be recorded).
    pub fn made_with(&mut self, partition: u16) -> bool {
        let new = self.made != Some(partition);
        self.made = Some(partition);
        new
    }

    /// After a full round of handshakes (every subscription's publisher answered) with the
    /// configured `partition`: lifts a refusal that no longer applies (it was for another
    /// partition; the round found no member first with this one, or it would have replaced
    /// it). Returns whether one was lifted.
    pub fn lift(&mut self, partition: Option<u16>) -> bool {
        let Some(p) = partition else {
            return false;
        };
        if self.conflict.is_some_and(|c| c.partition == p) {
            // The round found the member that came first with it again.
            return false;
        }
        let unchecked = self.len > 0 && self.checked.is_some_and(|c| c != p);
        self.checked = Some(p);
        self.conflict.take().is_some() || unchecked
    }

    /// A partition to suggest instead of `from`: the next live one (below `live_end`, wrapping
    /// round) that no member met uses and `taken` does not rule out (the lineage's own past).
    pub fn suggest(&self, from: u16, live_end: u16, taken: impl Fn(u16) -> bool) -> Option<u16> {
        (1..u32::from(live_end))
            .map(|k| ((u32::from(from) + k) % u32::from(live_end)) as u16)
            .find(|&p| !taken(p) && !self.peers().iter().any(|m| m.partition == p))
    }
}

/// The record, in the data directory, of the partition this server made IDs with.
pub const MADE_FILE: &str = "sno_generator.member_made";

/// Writes the record that this server made IDs with `partition` (flushed when `fsync`).
pub fn save_made(dir: &std::path::Path, partition: u16, fsync: bool) -> std::io::Result<()> {
    let text = format!("made_ids_with={partition}\n");
    super::lost::put_whole(dir, MADE_FILE, &text, fsync)
}

/// The partition the record says this server made IDs with.
pub fn load_made(dir: &std::path::Path) -> Option<u16> {
    std::fs::read_to_string(dir.join(MADE_FILE))
        .ok()?
        .strip_prefix("made_ids_with=")?
        .trim()
        .parse()
        .ok()
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
    super::lost::put_whole(dir, FILE_NAME, &to_text(c), fsync)
}

/// The refusal recorded in `dir`, if any (an unreadable record counts as none: it is written
/// whole by a rename).
pub fn load(dir: &std::path::Path) -> Option<Conflict> {
    from_text(&std::fs::read_to_string(dir.join(FILE_NAME)).ok()?)
}

/// Removes the record from `dir`, if it is there.
pub fn forget(dir: &std::path::Path, fsync: bool) -> std::io::Result<()> {
    super::lost::remove_whole(dir, FILE_NAME, fsync)
}

#[cfg(test)]
mod tests;
