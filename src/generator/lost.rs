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
//! Format: one line, `partition N` (the explicit partition) or `partition -1` (none: derived,
//! or a Citus group's).

/// The file's name in the data directory.
pub const FILE_NAME: &str = "sno_generator.lost";

/// The file's contents for `key` (an explicit partition, or -1).
pub fn encode(key: i64) -> String {
    format!("partition {key}\n")
}

/// The key a record holds; `None` when the text is not one (then the caller treats the file
/// as absent and writes a new one).
pub fn decode(text: &[u8]) -> Option<i64> {
    let text = core::str::from_utf8(text).ok()?;
    let n: i64 = text
        .strip_prefix("partition ")?
        .strip_suffix('\n')?
        .parse()
        .ok()?;
    (-1..=65535).contains(&n).then_some(n)
}

/// The record in `dir`, if there is a valid one.
pub fn read(dir: &std::path::Path) -> Option<i64> {
    decode(&std::fs::read(dir.join(FILE_NAME)).ok()?)
}

/// Writes the record for `key` in `dir` (a temporary file, flushed, renamed; the directory
/// flushed), unless `fsync` is off.
pub fn write(dir: &std::path::Path, key: i64, fsync: bool) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = dir.join(format!("{FILE_NAME}.tmp"));
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(encode(key).as_bytes())?;
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

/// Removes the record in `dir` (none there is not an error).
pub fn remove(dir: &std::path::Path) -> std::io::Result<()> {
    match std::fs::remove_file(dir.join(FILE_NAME)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
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
        write(&dir, 14, true).unwrap();
        assert_eq!(read(&dir), Some(14));
        // A later start keeps the first record: the caller writes only when there is none.
        write(&dir, -1, false).unwrap();
        assert_eq!(read(&dir), Some(-1));
        remove(&dir).unwrap();
        assert_eq!(read(&dir), None);
        remove(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn only_a_well_formed_record_is_one() {
        assert_eq!(decode(b"partition 61439\n"), Some(61439));
        assert_eq!(decode(b"partition -1\n"), Some(-1));
        for bad in [
            &b"partition 65536\n"[..],
            b"partition -2\n",
            b"partition 7",
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
        fn every_key_round_trips_and_no_bytes_panic(key in -1i64..=65535, junk in proptest::collection::vec(any::<u8>(), 0..40)) {
            prop_assert_eq!(decode(encode(key).as_bytes()), Some(key));
            let _ = decode(&junk);
        }
    }
}
