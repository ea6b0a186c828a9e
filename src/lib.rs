//! sno: a native 10-byte, time-sortable unique ID type for PostgreSQL, in the format of the Go
//! library muyo/sno.
//!
//! Pure logic (no PostgreSQL): [`layout`], [`encoding`], [`time`], [`generator`], [`state`].
//! PostgreSQL glue: [`fmgr`] (calling convention, errors), [`io`], [`ops`], [`parts`],
//! [`gucs`], [`shmem`], [`generate`]; hand-written SQL in `sql/`.

pub mod encoding;
pub mod generator;
pub mod layout;
pub mod lineage;
pub mod state;
pub mod time;

pub mod fmgr;
pub mod generate;
pub mod gucs;
pub mod io;
pub mod ops;
pub mod parts;
pub mod shmem;
pub mod wal;
pub mod worker;

#[cfg(feature = "pg_test")]
mod pg_tests;

::pgrx::pg_module_magic!();

::pgrx::extension_sql_file!("../sql/sno_type.sql", name = "sno_type", bootstrap);
::pgrx::extension_sql_file!(
    "../sql/sno_generate.sql",
    name = "sno_generate",
    requires = ["sno_type"]
);
::pgrx::extension_sql!(
    r#"
CREATE VIEW sno_generator AS SELECT * FROM sno_generator_info();
COMMENT ON VIEW sno_generator IS 'the server''s sno generator: partition, timeline, counters';
GRANT SELECT ON sno_generator TO PUBLIC;
-- Per-backend detail is for superusers and pg_monitor members only.
REVOKE ALL ON FUNCTION sno_generator_backends() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sno_generator_backends() TO pg_monitor;
CREATE VIEW sno_generator_backends AS SELECT * FROM sno_generator_backends();
COMMENT ON VIEW sno_generator_backends IS 'sno generator usage per backend (superusers and pg_monitor)';
GRANT SELECT ON sno_generator_backends TO pg_monitor;
CREATE VIEW sno_generator_lineage AS SELECT * FROM sno_generator_lineage();
COMMENT ON VIEW sno_generator_lineage IS 'partitions used in this data directory''s lineage, and up to when';
GRANT SELECT ON sno_generator_lineage TO PUBLIC;
REVOKE ALL ON FUNCTION sno_generator_initialize(bool, bool) FROM PUBLIC;
-- A new cluster gets its generator state file here (a no-op when it has one, or when sno is
-- not preloaded).
SELECT sno_generator_initialize();
"#,
    name = "sno_generator_views",
    requires = [
        generate::sno_generator_info,
        generate::sno_generator_backends,
        generate::sno_generator_lineage,
        generate::sno_generator_initialize
    ]
);

/// Loads the extension: settings always; the shard table only while the postmaster preloads
/// libraries (`shared_preload_libraries`). Loaded any other way, the type and every function
/// but the generator work, and `sno_generate` explains what to add to postgresql.conf.
#[pgrx::pg_guard]
pub extern "C-unwind" fn _PG_init() {
    gucs::init();
    // SAFETY: plain read of a server global.
    if unsafe { pgrx::pg_sys::process_shared_preload_libraries_in_progress } {
        shmem::init();
        wal::init();
        worker::init();
    }
}

/// Hooks of the `#[pg_test]` harness (`cargo pgrx test`).
#[cfg(test)]
pub mod pg_test {
    /// Runs once before the in-database tests.
    pub fn setup(_options: Vec<&str>) {}

    /// Extra `postgresql.conf` lines for the test cluster.
    pub fn postgresql_conf_options() -> Vec<&'static str> {
        vec!["shared_preload_libraries = 'sno'"]
    }
}
