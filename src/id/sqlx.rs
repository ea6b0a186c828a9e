//! [`Sno`] as a parameter and a column value in `sqlx` 0.8 with PostgreSQL (feature `sqlx`).
//!
//! The implementations are those of `sqlx-core`/`sqlx-postgres` 0.8, the crates `sqlx`
//! re-exports, so they are the `sqlx::Type`, `sqlx::Encode`, `sqlx::Decode` and
//! `sqlx::postgres::PgHasArrayType` an application uses:
//!
//! * the SQL type is declared by name, `sno` (sqlx looks its OID up once per connection), and
//!   its array as an array of `sno` (`_sno`, `sno[]`), so `Vec<Sno>` and `&[Sno]` bind to and
//!   read from `sno[]`; `Option<Sno>` is a nullable `sno`;
//! * parameters are sent in binary, the 10 raw bytes `sno_recv` reads;
//! * values are read in binary (prepared statements, what `query`, `query_as` and
//!   `query_scalar` use: exactly 10 bytes, any other length is an error) or in text (the simple
//!   protocol of `raw_sql`, or of a bare `&str` given to an executor: the 16 characters,
//!   parsed strictly as [`FromStr`](core::str::FromStr) does).
//!
//! `Row::try_get` checks the column type first, so reading a column of another type as `Sno`
//! is a mismatched-types error.
//!
//! ```
//! use sqlx_core::encode::{Encode, IsNull};
//! use sqlx_core::type_info::TypeInfo;
//! use sqlx_core::types::Type;
//! use sqlx_postgres::{PgArgumentBuffer, PgHasArrayType, Postgres};
//! use sno::Sno;
//!
//! assert_eq!(<Sno as Type<Postgres>>::type_info().name(), "sno");
//! assert_eq!(<Sno as PgHasArrayType>::array_type_info().name(), "sno[]");
//!
//! let id: Sno = "brpk4q72xwf2m63l".parse().unwrap();
//! let mut buf = PgArgumentBuffer::default();
//! assert!(matches!(Encode::<Postgres>::encode_by_ref(&id, &mut buf), Ok(IsNull::No)));
//! assert_eq!(&buf[..], &id.to_bytes()[..]);
//! ```
//!
//! With a pool (what `tests/drivers/rust` runs against a real server):
//!
//! ```ignore
//! let id: Sno = sqlx::query_scalar("INSERT INTO events (id) VALUES (sno_generate(7)) RETURNING id")
//!     .fetch_one(&pool)
//!     .await?;
//! let (parent, tags): (Option<Sno>, Vec<Sno>) =
//!     sqlx::query_as("SELECT parent, tags FROM events WHERE id = $1")
//!         .bind(id)
//!         .fetch_one(&pool)
//!         .await?;
//! ```

use sqlx_core::decode::Decode;
use sqlx_core::encode::{Encode, IsNull};
use sqlx_core::error::BoxDynError;
use sqlx_core::types::Type;
use sqlx_postgres::{
    PgArgumentBuffer, PgHasArrayType, PgTypeInfo, PgValueFormat, PgValueRef, Postgres,
};

use crate::id::encoding::decode;
use crate::id::layout::Sno;

/// The extension's type, by name: its OID differs from database to database.
const SNO: PgTypeInfo = PgTypeInfo::with_name("sno");

impl Type<Postgres> for Sno {
    fn type_info() -> PgTypeInfo {
        SNO
    }
}

impl PgHasArrayType for Sno {
    /// `sno[]` (`_sno` in `pg_type`), found from its element type as sqlx 0.8 recommends.
    fn array_type_info() -> PgTypeInfo {
        PgTypeInfo::array_of("sno")
    }
}

impl Encode<'_, Postgres> for Sno {
    /// The 10 raw bytes, as `sno_recv` reads them.
    fn encode_by_ref(&self, buf: &mut PgArgumentBuffer) -> Result<IsNull, BoxDynError> {
        buf.extend_from_slice(&self.0);
        Ok(IsNull::No)
    }

    fn size_hint(&self) -> usize {
        self.0.len()
    }
}

impl Decode<'_, Postgres> for Sno {
    /// Binary: exactly the 10 bytes `sno_send` writes. Text: the 16 characters `sno_out`
    /// writes. Anything else is an error.
    fn decode(value: PgValueRef<'_>) -> Result<Sno, BoxDynError> {
        match value.format() {
            PgValueFormat::Binary => Ok(Sno::try_from(value.as_bytes()?)?),
            PgValueFormat::Text => Ok(decode(value.as_bytes()?)?),
        }
    }
}
