//! sno: 10-byte, time-sortable unique IDs in the format of the Go library
//! [muyo/sno](https://github.com/muyo/sno), for Rust applications and, as a PostgreSQL
//! extension, a native `sno` column type with an in-database generator.
//!
//! One crate, three layers and a generator for services, each in its own folder:
//! - [`id`]: the value. [`Sno`], its 10-byte layout, the 16-character text form, time
//!   conversions; with the features `serde`, `postgres` (`postgres-types`: `tokio-postgres`,
//!   `postgres`), `sqlx`, `diesel` and `sea-orm`, its support in those crates. This is what a Rust service uses.
//! - [`generator`]: the generator's pure decisions. The tick-tock timeline that never issues an
//!   ID twice, the durable state file format, and the lineage of a data directory (which
//!   partitions its copies, standbys and upgrades may use).
//! - `pg` (features `pg15`..`pg18`): the PostgreSQL extension, a thin glue over the two others.
//! - `lease` (feature `lease`): a generator for services that stamps IDs only inside a
//!   partition lease the database granted (`sno_lease_acquire`), so that no two generators
//!   anywhere make the same ID. Pure; with `lease-postgres` or `lease-tokio-postgres`, a keeper
//!   that takes and renews the lease through the application's driver (`postgres` or
//!   `tokio-postgres`, the one exception to "no driver in the library's features").
//!
//! The first two never depend on pgrx: without a `pgNN` feature the crate has no pgrx at all,
//! so the compiler, not a convention, keeps PostgreSQL out of them.
//!
//! ```
//! use sno::Sno;
//!
//! // Text: the 16 characters Go's `String()` and PostgreSQL's `sno_out` write.
//! let id: Sno = "ffquantgjfxw7l67".parse().unwrap();
//! assert_eq!(id.to_string(), "ffquantgjfxw7l67");
//! assert!("ffquantgjfxw7l6".parse::<Sno>().is_err());
//!
//! // Fields, as sno_meta, sno_partition, sno_sequence and sno_tick give them.
//! assert_eq!((id.meta(), id.partition(), id.sequence(), id.tick()), (139, 32738, 52357, 0));
//! // Time: Unix milliseconds, as sno_time gives it (a multiple of 4 ms).
//! assert_eq!(sno::id::time::units_to_unix_millis(id.units()), 2_185_244_387_036);
//!
//! // Bytes: Go's `Bytes()`, PostgreSQL's binary format and `id::bytea`.
//! let bytes: [u8; 10] = id.into();
//! assert_eq!(Sno::from(bytes), id);
//!
//! // Construction from parts, and order: bytes, time first.
//! let earlier = Sno::new(id.units() - 1, 0, 255, 65535, 65535);
//! assert!(earlier < id);
//! assert!(Sno::ZERO.is_zero() && Sno::default() == Sno::ZERO);
//! ```

#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod generator;
pub mod id;
#[cfg(feature = "lease")]
#[cfg_attr(docsrs, doc(cfg(feature = "lease")))]
pub mod lease;

pub use id::Sno;

#[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17", feature = "pg18"))]
pub mod pg;

/// Hooks of the `#[pg_test]` harness (`cargo pgrx test`).
#[cfg(all(
    test,
    any(feature = "pg15", feature = "pg16", feature = "pg17", feature = "pg18")
))]
pub mod pg_test {
    /// Runs once before the in-database tests.
    pub fn setup(_options: Vec<&str>) {}

    /// Extra `postgresql.conf` lines for the test cluster.
    pub fn postgresql_conf_options() -> Vec<&'static str> {
        vec!["shared_preload_libraries = 'sno'"]
    }
}
