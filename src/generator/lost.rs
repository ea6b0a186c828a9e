//! The record of a lost state file: `sno_generator.lost` in the data directory.
//!
//! When a start finds the state file (`sno_generator.state`) missing or unusable, the
//! partition configured at that moment is the one whose earlier IDs the lost file covered:
//! `sno_generator_initialize` must not start a new state file with it. Restarts in between
//! (a DBA who changes `sno.partition` and restarts instead of reloading, a crash) must not
//! forget it, nor take the new partition for the lost one: so the first start that finds the
//! file missing writes this record, later starts read it, and the first state file written
//! afterwards removes it. Pure Rust: `std::fs` only.
//!
//! Format: a line `partition N` (the explicit partition) or `partition -1` (none: derived, or
//! a Citus group's), then `refused` once `sno_generate` has refused for want of the file: sno
//! was in use here, so a later `CREATE EXTENSION` (in another database, or after a `DROP
//! EXTENSION`) is no new cluster's first and must not start a state file afresh either.

/// The file's name in the data directory.
pub const FILE_NAME: &str = "sno_generator.lost";

/// What a record says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lost {
    /// The partition configured when the file was found missing or unusable (-1: none).
    pub key: i64,
    /// `sno_generate` refused since, for want of the file.
    pub refused: bool,
}

/// The file's contents for `l`.
pub fn encode(l: Lost) -> String {
    let refused = if l.refused { "refused\n" } else { "" };
    format!("partition {}\n{refused}", l.key)
}

/// What a record holds; `None` when the text is not one (then the caller treats the file as
/// absent and writes a new one).
pub fn decode(text: &[u8]) -> Option<Lost> {
    let text = core::str::from_utf8(text).ok()?;
    let rest = text.strip_prefix("partition ")?;
    let (n, rest) = rest.split_once('\n')?;
    let key: i64 = n.parse().ok()?;
    let refused = match rest {
        "" => false,
        "refused\n" => true,
        _ => return None,
    };
    (-1..=65535).contains(&key).then_some(Lost { key, refused })
}

/// The record in `dir`, if there is a valid one.
pub fn read(dir: &std::path::Path) -> Option<Lost> {
    decode(&std::fs::read(dir.join(FILE_NAME)).ok()?)
}

/// Writes the record `l` in `dir` (a temporary file, flushed, renamed; the directory flushed),
/// unless `fsync` is off.
pub fn write(dir: &std::path::Path, l: Lost, fsync: bool) -> std::io::Result<()> {
    put_whole(dir, FILE_NAME, &encode(l), fsync)
}

/// Removes the record in `dir` (none there is not an error), the directory flushed so that a
/// crash cannot bring it back, unless `fsync` is off.
pub fn remove(dir: &std::path::Path, fsync: bool) -> std::io::Result<()> {
    remove_whole(dir, FILE_NAME, fsync)
}

/// Writes the small record file `name` in `dir` whole: a temporary file, flushed, renamed, the
/// directory flushed (the flushes unless `fsync` is off). The data directory's records
/// (`sno_generator.lost`, `.unrecorded`, `.member_conflict`, `.member_made`) are written so.
pub(crate) fn put_whole(
    dir: &std::path::Path,
    name: &str,
    text: &str,
    fsync: bool,
) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = dir.join(format!("{name}.tmp"));
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        if fsync {
            f.sync_all()?;
        }
    }
    std::fs::rename(&tmp, dir.join(name))?;
    if fsync {
        sync_dir(dir)?;
    }
    Ok(())
}

/// Removes the record file `name` from `dir` (none there is not an error), the directory
/// flushed so that a crash cannot bring it back, unless `fsync` is off.
pub(crate) fn remove_whole(dir: &std::path::Path, name: &str, fsync: bool) -> std::io::Result<()> {
    match std::fs::remove_file(dir.join(name)) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
        Ok(()) if fsync => sync_dir(dir),
        Ok(()) => Ok(()),
    }
}

/// Flushes the directory `dir` (a refusal by the file system, EINVAL or EBADF, is not an
/// error, as for PostgreSQL).
pub(crate) fn sync_dir(dir: &std::path::Path) -> std::io::Result<()> {
    match std::fs::File::open(dir)?.sync_all() {
        Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::EBADF)) => Ok(()),
        r => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_record_is_written_read_and_removed() {
        let dir = std::env::temp_dir().join(format!("sno-lost-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(read(&dir), None);
        let l = Lost {
            key: 14,
            refused: false,
        };
        write(&dir, l, true).unwrap();
        assert_eq!(read(&dir), Some(l));
        let r = Lost { refused: true, ..l };
        write(&dir, r, false).unwrap();
        assert_eq!(read(&dir), Some(r));
        remove(&dir, true).unwrap();
        assert_eq!(read(&dir), None);
        remove(&dir, false).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn only_a_well_formed_record_is_one() {
        let l = |key, refused| Some(Lost { key, refused });
        assert_eq!(decode(b"partition 61439\n"), l(61439, false));
        assert_eq!(decode(b"partition -1\n"), l(-1, false));
        assert_eq!(decode(b"partition 7\nrefused\n"), l(7, true));
        for bad in [
            &b"partition 65536\n"[..],
            b"partition -2\n",
            b"partition 7",
            b"partition 7\nrefused",
            b"partition 7\nrefused\nrefused\n",
            b"partition 7\nok\n",
            b"partition  7\n",
            b"7\n",
            b"",
            b"partition \xff\n",
        ] {
            assert_eq!(decode(bad), None, "{bad:?}");
        }
    }

    proptest! {
        #[test]
        fn every_record_round_trips_and_no_bytes_panic(
            key in -1i64..=65535,
            refused in any::<bool>(),
            junk in proptest::collection::vec(any::<u8>(), 0..40),
        ) {
            let l = Lost { key, refused };
            prop_assert_eq!(decode(encode(l).as_bytes()), Some(l));
            let _ = decode(&junk);
        }
    }
}
