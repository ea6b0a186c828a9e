//! The value: an ID's 10 bytes ([`layout`]), its 16-character text ([`encoding`]) and its time
//! ([`time`]). Pure Rust, no PostgreSQL. With features, its support in `serde`, in
//! `postgres-types` (for `tokio-postgres` and `postgres`) and in `sqlx`.

pub mod encoding;
pub mod layout;
pub mod time;

pub use layout::Sno;
