//! sno: a native 10-byte, time-sortable unique ID type for PostgreSQL, in the format of the Go
//! library muyo/sno.
//!
//! Pure ID logic (no PostgreSQL): [`layout`], [`encoding`], [`time`].
//! PostgreSQL glue: [`fmgr`] (calling convention, errors), [`io`], [`ops`], [`parts`]; the
//! SQL declarations are in `sql/sno_type.sql`.

pub mod encoding;
pub mod layout;
pub mod time;

pub mod fmgr;
pub mod io;
pub mod ops;
pub mod parts;

#[cfg(feature = "pg_test")]
mod pg_tests;

::pgrx::pg_module_magic!();

::pgrx::extension_sql_file!("../sql/sno_type.sql", name = "sno_type", bootstrap);

/// Hooks of the `#[pg_test]` harness (`cargo pgrx test`).
#[cfg(test)]
pub mod pg_test {
    /// Runs once before the in-database tests.
    pub fn setup(_options: Vec<&str>) {}

    /// Extra `postgresql.conf` lines for the test cluster.
    pub fn postgresql_conf_options() -> Vec<&'static str> {
        vec![]
    }
}
