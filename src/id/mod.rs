//! The value: an ID's 10 bytes ([`layout`]), its 16-character text ([`encoding`]) and its time
//! ([`time`]). Pure Rust, no PostgreSQL. With the features of the same names, its support in
//! `serde` (module `serde`), in `postgres-types` for `tokio-postgres` and `postgres` (module
//! `postgres`), in `sqlx` 0.8 (module `sqlx`), in Diesel 2 (feature `diesel`, module `diesel`)
//! and in SeaORM 2 (feature `sea-orm`, module `sea_orm`); none of them pulls in pgrx.

pub mod encoding;
pub mod layout;
pub mod time;

#[cfg(feature = "diesel")]
#[cfg_attr(docsrs, doc(cfg(feature = "diesel")))]
pub mod diesel;
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub mod postgres;
#[cfg(feature = "sea-orm")]
#[cfg_attr(docsrs, doc(cfg(feature = "sea-orm")))]
pub mod sea_orm;
#[cfg(feature = "serde")]
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
pub mod serde;
#[cfg(feature = "sqlx")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlx")))]
pub mod sqlx;

pub use layout::Sno;
