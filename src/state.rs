//! The generator's durable state: what must survive a restart or a crash so that no ID is ever
//! made twice, and its on-disk form (`sno_generator.state` in the data directory).
//!
//! Pure Rust, no PostgreSQL. The server keeps, durably, a *horizon*: a unit that no ID of the
//! current timeline has passed, kept a few seconds ahead of the clock, plus the tick-tock state
//! (`drifts`) and the safe mark of the other timeline. It writes the file before it issues an
//! ID beyond the horizon or on a new timeline, so the file always covers every ID already
//! made. On start-up the timeline resumes as if everything up to the horizon had been used
//! ([`crate::generator::Timeline::restore`]): a clock behind it is a clock regression, handled
//! by the tick-tock rule like any other.
//!
//! File format (text, one `key=value` per line, so an operator can read it):
//!
//! ```text
//! sno generator state 1
//! system_identifier=7310000000000000000
//! instance=12157665459056928801
//! inherited=-1
//! horizon=531234567
//! safe=-1
//! drifts=0
//! crc32=1c291ca3
//! ```
//!
//! `instance` is a random number drawn when the file is created, and again when the data
//! directory turns out to be a copy (a base backup): the partition derived for a server whose
//! `sno.partition` is not set comes from the system identifier *and* this number, so a standby
//! or a clone made with pg_basebackup does not inherit its original's partition.
//!
//! `inherited` is the explicit `sno.partition` a copy found in its configuration when it was
//! made (-1: none): the copy refuses to make IDs with its original's partition until it is
//! given its own, or an administrator accepts it.
//!
//! `crc32` is the CRC-32 (IEEE) of every byte before that line. Anything else — a missing
//! line, an unknown version, a bad checksum — is [`StateError::Corrupt`].

/// The durable part of a timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Persisted {
    /// Every ID of the current timeline is in a unit `<= horizon`.
    pub horizon: u64,
    /// Every ID of the other timeline is in a unit `<= safe` (-1: none).
    pub safe: i64,
    /// Tick-tock flips so far; the current tick is `drifts & 1`.
    pub drifts: u64,
}

/// Who this data directory is: see the module documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Identity {
    /// Random, new for every copy of a data directory.
    pub instance: u64,
    /// The original's explicit partition, inherited by a copy (-1: none).
    pub inherited: i32,
}

/// The state file's name, relative to the data directory.
pub const FILE_NAME: &str = "sno_generator.state";
const HEADER: &str = "sno generator state 1";

/// Why a state file cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateError {
    /// Not a valid state file; holds what is wrong.
    Corrupt(String),
    /// A valid file of another cluster (holds its system identifier): the data directory was
    /// copied from another cluster, or the file was.
    OtherCluster(u64),
    /// The file exists but cannot be read.
    Unreadable(String),
}

impl core::fmt::Display for StateError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            StateError::Corrupt(why) => write!(f, "the file is corrupt ({why})"),
            StateError::OtherCluster(id) => {
                write!(
                    f,
                    "the file belongs to the cluster with system identifier {id}"
                )
            }
            StateError::Unreadable(e) => write!(f, "the file cannot be read ({e})"),
        }
    }
}

/// The file's contents for a state of the cluster `system_identifier`.
pub fn encode(system_identifier: u64, id: &Identity, p: &Persisted) -> String {
    let body = format!(
        "{HEADER}\nsystem_identifier={system_identifier}\ninstance={}\ninherited={}\nhorizon={}\nsafe={}\ndrifts={}\n",
        id.instance, id.inherited, p.horizon, p.safe, p.drifts
    );
    format!("{body}crc32={:08x}\n", crc32(body.as_bytes()))
}

/// Reads a state file of the cluster `system_identifier`: its identity and state.
pub fn decode(system_identifier: u64, text: &[u8]) -> Result<(Identity, Persisted), StateError> {
    let corrupt = |why: &str| StateError::Corrupt(why.to_string());
    let text = core::str::from_utf8(text).map_err(|_| corrupt("not UTF-8"))?;
    let crc_at = text.rfind("crc32=").ok_or_else(|| corrupt("no checksum"))?;
    let (body, crc_line) = text.split_at(crc_at);
    let want = u32::from_str_radix(crc_line.trim_start_matches("crc32=").trim_end(), 16)
        .map_err(|_| corrupt("unreadable checksum"))?;
    if crc32(body.as_bytes()) != want || !crc_line.ends_with('\n') {
        return Err(corrupt("checksum mismatch"));
    }
    let mut lines = body.lines();
    if lines.next() != Some(HEADER) {
        return Err(corrupt("unknown header"));
    }
    let mut field = |name: &str| -> Result<&str, StateError> {
        lines
            .next()
            .and_then(|l| l.strip_prefix(name))
            .and_then(|l| l.strip_prefix('='))
            .ok_or_else(|| corrupt(&format!("no {name}")))
    };
    let sysid: u64 = field("system_identifier")?
        .parse()
        .map_err(|_| corrupt("bad system_identifier"))?;
    let instance: u64 = field("instance")?
        .parse()
        .map_err(|_| corrupt("bad instance"))?;
    let inherited: i32 = field("inherited")?
        .parse()
        .map_err(|_| corrupt("bad inherited"))?;
    let horizon: u64 = field("horizon")?
        .parse()
        .map_err(|_| corrupt("bad horizon"))?;
    let safe: i64 = field("safe")?.parse().map_err(|_| corrupt("bad safe"))?;
    let drifts: u64 = field("drifts")?
        .parse()
        .map_err(|_| corrupt("bad drifts"))?;
    if lines.next().is_some() {
        return Err(corrupt("trailing lines"));
    }
    if sysid != system_identifier {
        return Err(StateError::OtherCluster(sysid));
    }
    if horizon > crate::layout::MAX_UNITS || safe > crate::layout::MAX_UNITS as i64 || safe < -1 {
        return Err(corrupt("value out of range"));
    }
    if !(-1..=65535).contains(&inherited) {
        return Err(corrupt("value out of range"));
    }
    Ok((
        Identity {
            instance,
            inherited,
        },
        Persisted {
            horizon,
            safe,
            drifts,
        },
    ))
}

/// Reads the state file in `dir`: `Ok(None)` when there is none.
pub fn read(
    dir: &std::path::Path,
    system_identifier: u64,
) -> Result<Option<(Identity, Persisted)>, StateError> {
    match std::fs::read(dir.join(FILE_NAME)) {
        Ok(bytes) => decode(system_identifier, &bytes).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(StateError::Unreadable(e.to_string())),
    }
}

/// Writes the state file in `dir` so that a crash at any moment leaves either the old or the
/// new contents: a temporary file, flushed, renamed over the old one, and the directory
/// flushed. `fsync = false` (PostgreSQL's `fsync = off`) skips the flushes.
pub fn write(
    dir: &std::path::Path,
    system_identifier: u64,
    id: &Identity,
    p: &Persisted,
    fsync: bool,
) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = dir.join(format!("{FILE_NAME}.tmp"));
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(encode(system_identifier, id, p).as_bytes())?;
        if fsync {
            f.sync_all()?;
        }
    }
    std::fs::rename(&tmp, dir.join(FILE_NAME))?;
    if fsync {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
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
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn crc32_check_value() {
        // The standard check value of CRC-32/ISO-HDLC.
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
    }

    #[test]
    fn round_trip_and_other_cluster() {
        let p = Persisted {
            horizon: 531_234_567,
            safe: -1,
            drifts: 3,
        };
        let id = Identity {
            instance: 5,
            inherited: 9,
        };
        let text = encode(42, &id, &p);
        assert_eq!(decode(42, text.as_bytes()), Ok((id, p)));
        assert_eq!(
            decode(43, text.as_bytes()),
            Err(StateError::OtherCluster(42))
        );
    }

    #[test]
    fn rejects_empty_and_truncated() {
        assert!(matches!(decode(1, b""), Err(StateError::Corrupt(_))));
        let text = encode(
            1,
            &Identity {
                instance: 3,
                inherited: -1,
            },
            &Persisted {
                horizon: 5,
                safe: 2,
                drifts: 1,
            },
        );
        for cut in 0..text.len() {
            assert!(
                decode(1, &text.as_bytes()[..cut]).is_err(),
                "accepted a file cut at {cut}"
            );
        }
    }

    #[test]
    fn file_write_read_replace() {
        let dir = std::env::temp_dir().join(format!("sno-state-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(read(&dir, 9), Ok(None));
        let a = Persisted {
            horizon: 10,
            safe: -1,
            drifts: 0,
        };
        let b = Persisted {
            horizon: 20,
            safe: 10,
            drifts: 1,
        };
        let i1 = Identity {
            instance: 1,
            inherited: -1,
        };
        let i2 = Identity {
            instance: 2,
            inherited: 7,
        };
        write(&dir, 9, &i1, &a, true).unwrap();
        assert_eq!(read(&dir, 9), Ok(Some((i1, a))));
        write(&dir, 9, &i2, &b, false).unwrap();
        assert_eq!(read(&dir, 9), Ok(Some((i2, b))));
        assert!(!dir.join(format!("{FILE_NAME}.tmp")).exists());
        std::fs::write(dir.join(FILE_NAME), b"garbage").unwrap();
        assert!(matches!(read(&dir, 9), Err(StateError::Corrupt(_))));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    proptest! {
        #[test]
        fn any_single_byte_change_is_detected(h in 0u64..(1 << 39), s in -1i64..(1 << 39), d: u64, i: u64, at: usize, x in 1u8..=255) {
            let text = encode(7, &Identity { instance: i, inherited: (i % 65537) as i32 - 1 }, &Persisted { horizon: h, safe: s, drifts: d });
            let mut bytes = text.into_bytes();
            let i = at % bytes.len();
            bytes[i] ^= x;
            prop_assert!(decode(7, &bytes).is_err());
        }
    }
}
