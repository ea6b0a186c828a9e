//! [`Sno`] as a Diesel 2 SQL type and Rust type with PostgreSQL (feature `diesel`).
//!
//! * [`sql_types::Sno`] is the SQL type, declared by name (`#[diesel(postgres_type(name =
//!   "sno"))]`): Diesel looks its OID up once per connection, as it must, since the type's OID
//!   differs from database to database. It is the name `diesel print-schema` gives the
//!   extension's type, so a `table!` says `id -> Sno` with `sno::id::diesel::sql_types::Sno`
//!   imported (see `import_types` in doc/orms.md), or names it in full.
//! * [`Sno`] (the value) is its Rust type: `ToSql`/`FromSql` in binary, the 10 raw bytes that
//!   `sno_send`/`sno_recv` write and read (a value of any other length is an error, never a
//!   panic nor a truncation), and `AsExpression`/`FromSqlRow`, so a struct field `id: Sno`
//!   works in `Queryable`, `Selectable`, `Insertable` and `AsChangeset`, `Option<Sno>` in a
//!   `Nullable<Sno>` column, and `.eq(id)`, `.gt(id)`, `.eq_any(ids)` and `ORDER BY` compare
//!   `sno` with `sno` on the server.
//!
//! Only Diesel's `postgres_backend` is enabled here, not libpq: the application enables
//! Diesel's `postgres` feature (or uses another connection crate) itself.
//!
//! ```
//! use diesel::pg::Pg;
//! use sno::Sno;
//!
//! diesel::table! {
//!     use diesel::sql_types::*;
//!     use sno::id::diesel::sql_types::Sno;
//!
//!     items (id) {
//!         id -> Sno,
//!         name -> Text,
//!     }
//! }
//!
//! use diesel::prelude::*;
//! let id: Sno = "brpk4q72xwf2m63l".parse().unwrap();
//! let query = items::table.filter(items::id.gt(id)).order(items::id).select(items::name);
//! let sql = diesel::debug_query::<Pg, _>(&query).to_string();
//! assert!(sql.starts_with(r#"SELECT "items"."name" FROM "items" WHERE ("items"."id" > $1) ORDER BY "items"."id""#));
//! ```
//!
//! With a connection (what `tests/drivers/rust` runs against a real server):
//!
//! ```ignore
//! #[derive(Queryable, Selectable, Insertable)]
//! #[diesel(table_name = items, check_for_backend(diesel::pg::Pg))]
//! struct Item { id: Sno, name: String }
//!
//! let id: Sno = diesel::insert_into(items::table)
//!     .values(items::name.eq("first"))
//!     .returning(items::id)
//!     .get_result(&mut conn)?;
//! let item: Item = items::table.find(id).select(Item::as_select()).first(&mut conn)?;
//! ```

use std::io::Write;

use diesel::deserialize::FromSqlRow;
use diesel::deserialize::{self, FromSql};
use diesel::expression::AsExpression;
use diesel::pg::{Pg, PgValue};
use diesel::serialize::{self, IsNull, Output, ToSql};

use crate::id::layout::Sno;

/// The SQL types of the extension, as `diesel print-schema` names them.
pub mod sql_types {
    /// The extension's `sno` type, found by name (its OID differs from database to database).
    #[derive(
        Clone, Copy, Debug, Default, diesel::sql_types::SqlType, diesel::query_builder::QueryId,
    )]
    #[diesel(postgres_type(name = "sno"))]
    pub struct Sno;
}

/// Diesel's derives for a type defined elsewhere ([`Sno`], in `layout`): the `AsExpression`
/// (for `Sno`, `&Sno` and their `Nullable` forms) and `FromSqlRow` impls are generated for
/// [`Sno`], not for this proxy, which is never built.
#[allow(dead_code)]
#[derive(AsExpression, FromSqlRow)]
#[diesel(foreign_derive)]
#[diesel(sql_type = sql_types::Sno)]
struct SnoProxy(Sno);

impl ToSql<sql_types::Sno, Pg> for Sno {
    /// The 10 raw bytes, as `sno_recv` reads them.
    fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Pg>) -> serialize::Result {
        out.write_all(&self.0)?;
        Ok(IsNull::No)
    }
}

impl FromSql<sql_types::Sno, Pg> for Sno {
    /// Exactly the 10 raw bytes `sno_send` writes; any other length is an error.
    fn from_sql(value: PgValue<'_>) -> deserialize::Result<Sno> {
        Ok(Sno::try_from(value.as_bytes())?)
    }
}
