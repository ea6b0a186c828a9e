//! The record of grants no server recorded: `sno_generator.unrecorded` in the data directory.
//!
//! A restore (pg_restore, a data-only load) brings a database's `sno_reserved_grants` and lease
//! pool rows; their triggers record each partition in the server's lineage, so that no database
//! of the server is granted one again. Where sno is not preloaded there is no lineage to record
//! them in: the triggers leave this record instead. Its presence at a start (or when the state
//! file is first made) blocks every grant, as a lost state file does, until a superuser has had
//! every database's rows read back (`sno_reserved_relearn()`) and says so
//! (`sno_generator_initialize(take_over => true)`), which removes it. Pure Rust: `std::fs` only.

/// The file's name in the data directory.
pub const FILE_NAME: &str = "sno_generator.unrecorded";

/// What the file says (for a DBA who finds it).
const TEXT: &str = "a restore loaded reserved sno grants while sno was not preloaded: run SELECT sno_reserved_relearn(); in every database that has sno, then, in one of them, SELECT sno_generator_initialize(take_over => true);\n";

/// Whether `dir` holds the record.
pub fn exists(dir: &std::path::Path) -> bool {
    dir.join(FILE_NAME).exists()
}

/// Leaves the record in `dir` (flushed with its directory when `fsync`), unless it is there.
pub fn note(dir: &std::path::Path, fsync: bool) -> std::io::Result<()> {
    if exists(dir) {
        return Ok(());
    }
    super::lost::put_whole(dir, FILE_NAME, TEXT, fsync)
}

/// Removes the record from `dir`, if it is there.
pub fn forget(dir: &std::path::Path, fsync: bool) -> std::io::Result<()> {
    super::lost::remove_whole(dir, FILE_NAME, fsync)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noted_once_then_forgotten() {
        let dir = std::env::temp_dir().join(format!("sno-unrecorded-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(!exists(&dir));
        forget(&dir, true).unwrap();
        note(&dir, true).unwrap();
        assert!(exists(&dir));
        let text = std::fs::read_to_string(dir.join(FILE_NAME)).unwrap();
        assert!(text.contains("sno_reserved_relearn()"));
        note(&dir, false).unwrap();
        assert!(!dir.join(format!("{FILE_NAME}.tmp")).exists());
        forget(&dir, true).unwrap();
        assert!(!exists(&dir));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
