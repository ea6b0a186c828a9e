//! [`Sno`] as a parameter and a column value in `tokio-postgres` and `postgres` (feature
//! `postgres`, through their `postgres-types`).
//!
//! The PostgreSQL type is recognised by its name, `sno` (its OID differs from database to
//! database); the value travels in binary form, the 10 raw bytes that the extension's
//! `sno_send`/`sno_recv` write and read. A value of any other length is an error, never a
//! panic nor a truncation.
//!
//! postgres-types' generic impls then give the rest: `Option<Sno>` for nullable columns and
//! parameters (`None` is SQL `NULL`), `Vec<Sno>` and `&[Sno]` for `sno[]`. Reading a column of
//! another type as `Sno` is refused by the driver before any byte is looked at (a `WrongType`
//! error), as is binding a `Sno` to a parameter of another type.
//!
//! ```
//! use bytes::BytesMut;
//! use postgres_types::{FromSql, IsNull, Kind, ToSql, Type};
//! use sno::Sno;
//!
//! // What the driver knows of the column after asking the server (the OID varies).
//! let sno_type = Type::new("sno".into(), 16_385, Kind::Simple, "public".into());
//! let id: Sno = "brpk4q72xwf2m63l".parse().unwrap();
//!
//! let mut buf = BytesMut::new();
//! assert!(matches!(id.to_sql_checked(&sno_type, &mut buf), Ok(IsNull::No)));
//! assert_eq!(&buf[..], &id.to_bytes()[..]);
//! assert_eq!(Sno::from_sql(&sno_type, &buf).unwrap(), id);
//!
//! // Other lengths and other types are errors.
//! assert!(Sno::from_sql(&sno_type, &buf[..9]).is_err());
//! assert!(!<Sno as FromSql>::accepts(&Type::TEXT));
//! assert!(id.to_sql_checked(&Type::BYTEA, &mut buf).is_err());
//! ```
//!
//! With a client (what `tests/drivers/rust` runs against a real server):
//!
//! ```ignore
//! let id: Sno = client
//!     .query_one("INSERT INTO events (id) VALUES (sno_generate(7)) RETURNING id", &[])
//!     .await?
//!     .get(0);
//! let row = client.query_one("SELECT parent, tags FROM events WHERE id = $1", &[&id]).await?;
//! let parent: Option<Sno> = row.get(0);
//! let tags: Vec<Sno> = row.get(1);
//! ```

use std::error::Error;

use bytes::BytesMut;
use postgres_types::{to_sql_checked, FromSql, IsNull, ToSql, Type};

use crate::id::layout::Sno;

/// The error type postgres-types uses.
type BoxError = Box<dyn Error + Sync + Send>;

/// Whether a PostgreSQL type is the extension's `sno` (by name: its OID is per database).
fn is_sno(ty: &Type) -> bool {
    ty.name() == "sno"
}

impl ToSql for Sno {
    /// The 10 raw bytes, as `sno_recv` reads them.
    fn to_sql(&self, _ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        out.extend_from_slice(&self.0);
        Ok(IsNull::No)
    }

    fn accepts(ty: &Type) -> bool {
        is_sno(ty)
    }

    to_sql_checked!();
}

impl<'a> FromSql<'a> for Sno {
    /// Exactly the 10 raw bytes `sno_send` writes; any other length is an error.
    fn from_sql(_ty: &Type, raw: &'a [u8]) -> Result<Sno, BoxError> {
        Ok(Sno::try_from(raw)?)
    }

    fn accepts(ty: &Type) -> bool {
        is_sno(ty)
    }
}
