//! [`Sno`] as a SeaORM 2 value, column type and primary key with PostgreSQL (feature
//! `sea-orm`).
//!
//! An entity names the type and nothing else: `pub id: Sno` (with
//! `#[sea_orm(primary_key, auto_increment = false)]` for a key), `Option<Sno>` for a nullable
//! column. What SeaORM then does with it:
//!
//! * the column type is the database type `sno` ([`ValueType::column_type`] is a
//!   `ColumnType::Enum` named `sno` with no variants: SeaORM's way to name a type of the
//!   database's own), so `Schema::create_table_from_entity` makes a `sno` column;
//! * a value is sent as its 16 characters with a cast, `$1::"sno"` (the way SeaORM sends a
//!   value of a database enum type), so the server compares `sno` with `sno`, uses the index
//!   and needs no cross-type operator (any sno version);
//! * a column is read as text: SeaORM selects such a column as `CAST(id AS text)` (also in
//!   `RETURNING`), and the 16 characters are parsed strictly ([`FromStr`](core::str::FromStr));
//!   a raw `SELECT` read into a `Sno` must select `id::text` likewise.
//!
//! The feature enables SeaORM without its default features: no driver and no runtime (the
//! application picks `sqlx-postgres` and a runtime).
//!
//! ```
//! use sea_orm::sea_query::{ColumnType, Nullable, ValueType};
//! use sea_orm::Value;
//! use sno::Sno;
//!
//! let id: Sno = "brpk4q72xwf2m63l".parse().unwrap();
//! let value: Value = id.into();
//! assert_eq!(<Sno as ValueType>::try_from(value).unwrap(), id);
//! assert!(matches!(<Sno as ValueType>::column_type(), ColumnType::Enum { name, .. } if name.to_string() == "sno"));
//! assert_eq!(<Sno as Nullable>::null(), Value::from(None::<Sno>));
//! ```

use sea_orm::sea_query::{
    Alias, ArrayType, ColumnType, Enum, IntoIden, Nullable, OptionEnum, ValueType, ValueTypeErr,
};
use sea_orm::{
    ActiveValue, ColIdx, DbErr, IntoActiveValue, QueryResult, TryFromU64, TryGetError, TryGetable,
    Value,
};

use crate::id::layout::Sno;

/// The database type's name.
const SNO: &str = "sno";

impl From<Sno> for Value {
    /// The 16 characters, typed `sno` (`$1::"sno"` in the statement).
    fn from(id: Sno) -> Value {
        Value::Enum(OptionEnum::Some(Box::new(Enum {
            type_name: SNO.into(),
            value: id.to_string().into(),
        })))
    }
}

impl Nullable for Sno {
    /// `NULL::"sno"`.
    fn null() -> Value {
        Value::Enum(OptionEnum::None(SNO.into()))
    }
}

impl ValueType for Sno {
    /// A value made by `From<Sno>` (or a plain string), parsed strictly.
    fn try_from(v: Value) -> Result<Sno, ValueTypeErr> {
        match v {
            Value::Enum(OptionEnum::Some(e)) => e.value.parse().map_err(|_| ValueTypeErr),
            Value::String(Some(s)) => s.parse().map_err(|_| ValueTypeErr),
            _ => Err(ValueTypeErr),
        }
    }

    fn type_name() -> String {
        "Sno".to_owned()
    }

    fn array_type() -> ArrayType {
        ArrayType::Enum(Box::new(SNO.into()))
    }

    /// The database type `sno`.
    fn column_type() -> ColumnType {
        ColumnType::Enum {
            name: Alias::new(SNO).into_iden(),
            variants: Vec::new(),
        }
    }

    fn enum_type_name() -> Option<&'static str> {
        Some(SNO)
    }
}

impl TryGetable for Sno {
    /// The column as text (SeaORM selects a `sno` column as `CAST(.. AS text)`), parsed
    /// strictly: anything but 16 characters of the alphabet is an error.
    fn try_get_by<I: ColIdx>(res: &QueryResult, idx: I) -> Result<Sno, TryGetError> {
        let text = String::try_get_by(res, idx)?;
        text.parse().map_err(|err| {
            TryGetError::DbErr(DbErr::TryIntoErr {
                from: "String",
                into: "Sno",
                source: std::sync::Arc::new(err),
            })
        })
    }
}

impl TryFromU64 for Sno {
    /// Never: a `sno` key is not a sequence number (declare it `auto_increment = false`).
    fn try_from_u64(_: u64) -> Result<Sno, DbErr> {
        Err(DbErr::ConvertFromU64("Sno"))
    }
}

impl IntoActiveValue<Sno> for Sno {
    fn into_active_value(self) -> ActiveValue<Sno> {
        ActiveValue::Set(self)
    }
}
