//! The generator's durable state: what must survive a restart, a crash or a copy of the data
//! directory so that no ID is ever made twice, and its on-disk form (`sno_generator.state` in
//! the data directory).
//!
//! Pure Rust, no PostgreSQL. The server keeps, durably, a *horizon*: a unit that no ID of the
//! current timeline has passed, kept a few seconds ahead of the clock, plus the tick-tock state
//! (`drifts`) and the safe mark of the other timeline. It writes the file before it issues an
//! ID beyond the horizon or on a new timeline, so the file always covers every ID already
//! made. On start-up the timeline resumes as if everything up to the horizon had been used
//! ([`crate::generator::timeline::Timeline::restore`]): a clock behind it is a clock regression, handled
//! by the tick-tock rule like any other. The file also holds the lineage table
//! ([`crate::generator::lineage`]): which partitions this data directory and the servers it shares
//! history with used, and a bound on each.
//!
//! File format (text, one `key=value` per line, so an operator can read it):
//!
//! ```text
//! sno generator state 2
//! system_identifier=7310000000000000000
//! incarnation=12157665459056928801
//! timeline=1
//! control_inode=1835021
//! copied=0
//! horizon=531234567
//! safe=-1
//! drifts=0
//! retired=0,-1,0
//! used=7,1,531234567,-1,0
//! used=9,0,531230000,-1,0
//! crc32=1c291ca3
//! ```
//!
//! A node of a Citus cluster writes version 3: the same, with `citus_group=N` (its node group,
//! see [`crate::generator::citus`]) after `retired`.
//!
//! A lineage that used more partitions than the table holds ([`MAX_ENTRIES`]) writes version
//! 4: version 2 or 3 (with `citus_group` only on a Citus node), then, before the `used` lines,
//!
//! ```text
//! retired_others=1000-1063,4099
//! retired_mine=12
//! ```
//!
//! the partitions known without an entry ([`State::folded`]): those other members of the
//! lineage used (within `retired`), and those this incarnation used (within its horizon), as
//! ascending ranges `first-last` or single numbers, separated by commas (an empty list is an
//! empty value). Only such a lineage writes it, so every other file stays readable by the
//! versions before; a version that does not know it refuses the file as corrupt rather than
//! forget which partitions were used.
//!
//! `used=partition,mine,horizon,safe,drifts` lines are the lineage entries (`mine` 1: this
//! incarnation used it). `retired` is the bound of entries dropped when the table was full.
//! `crc32` is the CRC-32 (IEEE) of every byte before that line. Anything else — a missing
//! line, an unknown version, a bad checksum — is [`StateError::Corrupt`]. Version 1 files
//! (sno 0.1.0) are read too.

use crate::generator::bound::Persisted;
use crate::generator::lineage::{Partitions, State, MAX_ENTRIES, NO_GROUP};

/// The state file's name, relative to the data directory.
pub const FILE_NAME: &str = "sno_generator.state";
const HEADER: &str = "sno generator state 2";
const HEADER_V1: &str = "sno generator state 1";
/// Version 3 adds `citus_group=N` after `retired`; it is written only by a node of a Citus
/// cluster, so every other server's file stays readable by sno 0.3.0.
const HEADER_V3: &str = "sno generator state 3";
/// Version 4 adds `retired_others=` and `retired_mine=` (the partitions without an entry)
/// before the `used` lines; it is written only by a lineage that has such partitions.
const HEADER_V4: &str = "sno generator state 4";
/// Version 5 is version 4 (with `citus_group` optional) and then `grants_blocked=` (0: no; 1:
/// until a promotion or `take_over`; 2: until `take_over`) and
/// `granted=` (the reserved partitions the allocator granted) before the `used` lines; it is
/// written only by a lineage that granted one or is a copy that may not grant.
const HEADER_V5: &str = "sno generator state 5";

/// Why a state file cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateError {
    /// Not a valid state file; holds what is wrong.
    Corrupt(String),
    /// The file exists but cannot be read.
    Unreadable(String),
}

impl core::fmt::Display for StateError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            StateError::Corrupt(why) => write!(f, "the file is corrupt ({why})"),
            StateError::Unreadable(e) => write!(f, "the file cannot be read ({e})"),
        }
    }
}

fn bound_text(p: &Persisted) -> String {
    format!("{},{},{}", p.horizon, p.safe, p.drifts)
}

/// The partitions of `st` without an entry: other members', this incarnation's.
fn folded(st: &State) -> (Partitions, Partitions) {
    let (mut others, mut mine) = (Partitions::NONE, Partitions::NONE);
    for e in st.folded() {
        if e.mine {
            mine.insert(e.partition);
        } else {
            others.insert(e.partition);
        }
    }
    (others, mine)
}

fn ranges_text(set: &Partitions) -> String {
    let mut out = String::new();
    for (a, b) in set.ranges() {
        if !out.is_empty() {
            out.push(',');
        }
        if a == b {
            out.push_str(&a.to_string());
        } else {
            out.push_str(&format!("{a}-{b}"));
        }
    }
    out
}

fn parse_ranges(text: &str) -> Result<Partitions, StateError> {
    let bad = || StateError::Corrupt("bad partition list".into());
    let mut set = Partitions::NONE;
    if text.is_empty() {
        return Ok(set);
    }
    let mut next = 0u32;
    for item in text.split(',') {
        let (a, b) = item.split_once('-').unwrap_or((item, item));
        let a: u16 = a.parse().map_err(|_| bad())?;
        let b: u16 = b.parse().map_err(|_| bad())?;
        // Ascending and disjoint, as encode writes them.
        if u32::from(a) < next || b < a {
            return Err(bad());
        }
        for p in a..=b {
            set.insert(p);
        }
        next = u32::from(b) + 1;
    }
    Ok(set)
}

/// The file's contents for `st`.
pub fn encode(st: &State) -> String {
    let citus = st.citus_group != NO_GROUP;
    let (folded_others, folded_mine) = folded(st);
    let v5 = st.grants_blocked || !st.granted.is_empty();
    let v4 = v5 || !(folded_others.is_empty() && folded_mine.is_empty());
    let mut body = format!(
        "{}\nsystem_identifier={}\nincarnation={}\ntimeline={}\ncontrol_inode={}\ncopied={}\nhorizon={}\nsafe={}\ndrifts={}\nretired={}\n",
        if v5 {
            HEADER_V5
        } else if v4 {
            HEADER_V4
        } else if citus {
            HEADER_V3
        } else {
            HEADER
        },
        st.system_identifier,
        st.incarnation,
        st.timeline,
        st.control_inode,
        st.copied as u8,
        st.me.horizon,
        st.me.safe,
        st.me.drifts,
        bound_text(&st.retired),
    );
    if citus {
        body.push_str(&format!("citus_group={}\n", st.citus_group));
    }
    if v4 {
        body.push_str(&format!(
            "retired_others={}\nretired_mine={}\n",
            ranges_text(&folded_others),
            ranges_text(&folded_mine)
        ));
    }
    if v5 {
        let grantees: Vec<String> = st
            .granted
            .iter()
            .filter(|&p| st.grantee(p) != 0)
            .map(|p| format!("{p}:{}", st.grantee(p)))
            .collect();
        body.push_str(&format!(
            "grants_blocked={}\ngranted={}\ngrantees={}\n",
            st.grants_blocked as u8 + (st.grants_blocked && st.grants_blocked_lasting) as u8,
            ranges_text(&st.granted),
            grantees.join(",")
        ));
    }
    for e in st.entries() {
        body.push_str(&format!(
            "used={},{},{}\n",
            e.partition,
            e.mine as u8,
            bound_text(&e.bound)
        ));
    }
    format!("{body}crc32={:08x}\n", crc32(body.as_bytes()))
}

fn check_bound(p: Persisted) -> Result<Persisted, StateError> {
    let max = crate::id::layout::MAX_UNITS;
    if p.horizon > max || p.safe > max as i64 || p.safe < -1 {
        return Err(StateError::Corrupt("value out of range".into()));
    }
    Ok(p)
}

fn parse_bound(text: &str) -> Result<Persisted, StateError> {
    let bad = || StateError::Corrupt(format!("bad bound \"{text}\""));
    let mut it = text.split(',');
    let mut next = || it.next().ok_or_else(bad);
    let p = Persisted {
        horizon: next()?.parse().map_err(|_| bad())?,
        safe: next()?.parse().map_err(|_| bad())?,
        drifts: next()?.parse().map_err(|_| bad())?,
    };
    if it.next().is_some() {
        return Err(bad());
    }
    check_bound(p)
}

/// Reads a state file. The caller compares its system identifier with the cluster's.
pub fn decode(text: &[u8]) -> Result<State, StateError> {
    let corrupt = |why: &str| StateError::Corrupt(why.to_string());
    let text = core::str::from_utf8(text).map_err(|_| corrupt("not UTF-8"))?;
    let crc_at = text.rfind("crc32=").ok_or_else(|| corrupt("no checksum"))?;
    let (body, crc_line) = text.split_at(crc_at);
    // Exactly the line encode writes (no other spelling of the same number).
    if crc_line != format!("crc32={:08x}\n", crc32(body.as_bytes())) {
        return Err(corrupt("checksum mismatch"));
    }
    let mut lines = body.lines().peekable();
    let (v1, v3, v4, v5) = match lines.next() {
        Some(HEADER) => (false, false, false, false),
        Some(HEADER_V1) => (true, false, false, false),
        Some(HEADER_V3) => (false, true, false, false),
        Some(HEADER_V4) => (false, false, true, false),
        Some(HEADER_V5) => (false, false, true, true),
        _ => return Err(corrupt("unknown header")),
    };
    // The next line if it is `name=...` (else none is taken).
    let mut field = |name: &str| -> Result<&str, StateError> {
        lines
            .next_if(|l| l.strip_prefix(name).is_some_and(|l| l.starts_with('=')))
            .map(|l| &l[name.len() + 1..])
            .ok_or_else(|| corrupt(&format!("no {name}")))
    };
    macro_rules! num {
        ($name:literal) => {
            field($name)?
                .parse()
                .map_err(|_| corrupt(concat!("bad ", $name)))?
        };
    }
    let sysid: u64 = num!("system_identifier");
    let mut st;
    if v1 {
        // sno 0.1.0: an instance number, the partition a copy found in its configuration
        // (not trustworthy: it may be the copy's own), and one timeline.
        let instance: u64 = num!("instance");
        let _inherited: i32 = num!("inherited");
        st = State::fresh(sysid, instance, 0, 0);
    } else {
        let incarnation: u64 = num!("incarnation");
        let timeline: u32 = num!("timeline");
        let inode: u64 = num!("control_inode");
        st = State::fresh(sysid, incarnation, timeline, inode);
        let copied: u8 = num!("copied");
        if copied > 1 {
            return Err(corrupt("bad copied"));
        }
        st.copied = copied == 1;
    }
    st.me = check_bound(Persisted {
        horizon: num!("horizon"),
        safe: num!("safe"),
        drifts: num!("drifts"),
    })?;
    if v1 {
        // The partition derived for this instance was the one in use unless sno.partition
        // was set; the glue notes the configured one too.
        st.note(st.derived(), true, st.me);
    } else {
        st.retired = parse_bound(field("retired")?)?;
        // Version 4: `citus_group` only on a Citus node.
        let group = match (v3, v4) {
            (true, _) => Some(field("citus_group")?),
            (_, true) => field("citus_group").ok(),
            _ => None,
        };
        if let Some(group) = group {
            let group: u32 = group.parse().map_err(|_| corrupt("bad citus_group"))?;
            if group == NO_GROUP {
                return Err(corrupt("bad citus_group"));
            }
            st.citus_group = group;
        }
        let mut folded = (Partitions::NONE, Partitions::NONE);
        if v4 {
            folded = (
                parse_ranges(field("retired_others")?)?,
                parse_ranges(field("retired_mine")?)?,
            );
        }
        if v5 {
            let blocked: u8 = num!("grants_blocked");
            if blocked > 2 {
                return Err(corrupt("bad grants_blocked"));
            }
            st.grants_blocked = blocked >= 1;
            st.grants_blocked_lasting = blocked == 2;
            st.granted = parse_ranges(field("granted")?)?;
            if st
                .granted
                .iter()
                .any(|p| !crate::generator::reserved::is_reserved(p))
            {
                return Err(corrupt("granted partition outside the reserved range"));
            }
            let grantees = field("grantees")?;
            let mut last = None;
            for item in grantees.split(',').filter(|i| !i.is_empty()) {
                let bad = || corrupt("bad grantees");
                let (p, role) = item.split_once(':').ok_or_else(bad)?;
                let p: u16 = p.parse().map_err(|_| bad())?;
                let role: u32 = role.parse().map_err(|_| bad())?;
                // Ascending, each a granted partition once, a real OID: as encode writes them.
                if role == 0 || !st.granted.contains(p) || last.is_some_and(|l| l >= p) {
                    return Err(bad());
                }
                last = Some(p);
                st.note_grant_to(p, role);
            }
        }
        for line in lines.by_ref() {
            let rest = line
                .strip_prefix("used=")
                .ok_or_else(|| corrupt("trailing lines"))?;
            let (p, rest) = rest.split_once(',').ok_or_else(|| corrupt("bad used"))?;
            let (m, rest) = rest.split_once(',').ok_or_else(|| corrupt("bad used"))?;
            let partition: u16 = p.parse().map_err(|_| corrupt("bad used"))?;
            let mine = match m {
                "0" => false,
                "1" => true,
                _ => return Err(corrupt("bad used")),
            };
            if st.len as usize >= MAX_ENTRIES {
                return Err(corrupt("too many used lines"));
            }
            st.note(partition, mine, parse_bound(rest)?);
        }
        // Known without an entry: within `retired`, or within this incarnation's horizon.
        st.used_by_others.union(&folded.0);
        st.used_by_me.union(&folded.1);
    }
    if lines.next().is_some() {
        return Err(corrupt("trailing lines"));
    }
    Ok(st)
}

/// Reads the state file in `dir`: `Ok(None)` when there is none.
pub fn read(dir: &std::path::Path) -> Result<Option<State>, StateError> {
    match std::fs::read(dir.join(FILE_NAME)) {
        Ok(bytes) => decode(&bytes).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(StateError::Unreadable(e.to_string())),
    }
}

/// Writes the state file in `dir` so that a crash at any moment leaves either the old or the
/// new contents: a temporary file, flushed, renamed over the old one, and the directory
/// flushed. `fsync = false` (PostgreSQL's `fsync = off`) skips the flushes. As PostgreSQL does,
/// a directory flush refused by the file system (EINVAL, EBADF) is not an error.
pub fn write(dir: &std::path::Path, st: &State, fsync: bool) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = dir.join(format!("{FILE_NAME}.tmp"));
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(encode(st).as_bytes())?;
        if fsync {
            f.sync_all()?;
        }
    }
    std::fs::rename(&tmp, dir.join(FILE_NAME))?;
    if fsync {
        match std::fs::File::open(dir)?.sync_all() {
            Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::EBADF)) => {}
            r => r?,
        }
    }
    Ok(())
}

/// `why` cut to at most `max` bytes at a character boundary: a reason why the state file is
/// unusable, for a fixed buffer in shared memory (a cut in the middle of a UTF-8 character
/// would make the whole reason unreadable).
pub fn reason_prefix(why: &str, max: usize) -> &str {
    let mut n = why.len().min(max);
    while !why.is_char_boundary(n) {
        n -= 1;
    }
    &why[..n]
}

/// CRC-32 (IEEE 802.3, reflected, as zlib's `crc32`).
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[cfg(test)]
mod tests;
