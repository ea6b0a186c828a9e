//! `text` as its bytes in the database's encoding, for `#[pg_extern]` functions and SPI.
//!
//! pgrx's `&str` and `String` insist on UTF-8: in a LATIN1, EUC_JP or SQL_ASCII database a
//! non-ASCII value makes them panic (an XX000 error naming no value). A value the server
//! accepted as text is valid in the database's encoding, and what sno does with such a value
//! (keep it, send it back, quote it in a message) needs nothing more: [`EncodedText`] carries
//! its bytes unchanged, in and out.

use pgrx::callconv::{Arg, ArgAbi};
use pgrx::datum::{FromDatum, IntoDatum};
use pgrx::pg_sys;
use pgrx::pgrx_sql_entity_graph::metadata::{
    ArgumentError, ReturnsError, ReturnsRef, SqlMappingRef, SqlTranslatable, TypeOrigin,
};

/// A `text` value's bytes, in the database's encoding.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EncodedText(pub Vec<u8>);

// SAFETY: it is `text` in SQL, as its FromDatum and IntoDatum read and write it.
unsafe impl SqlTranslatable for EncodedText {
    const TYPE_IDENT: &'static str = "sno::pg::encoded_text::EncodedText";
    const TYPE_ORIGIN: TypeOrigin = TypeOrigin::External;
    const ARGUMENT_SQL: Result<SqlMappingRef, ArgumentError> = Ok(SqlMappingRef::literal("TEXT"));
    const RETURN_SQL: Result<ReturnsRef, ReturnsError> =
        Ok(ReturnsRef::One(SqlMappingRef::literal("TEXT")));
}

impl FromDatum for EncodedText {
    unsafe fn from_polymorphic_datum(
        datum: pg_sys::Datum,
        is_null: bool,
        _typoid: pg_sys::Oid,
    ) -> Option<Self> {
        if is_null || datum.is_null() {
            return None;
        }
        // SAFETY: a text datum; detoasted (a copy when it was compressed or external).
        unsafe {
            let v = pg_sys::pg_detoast_datum_packed(datum.cast_mut_ptr());
            Some(EncodedText(
                pgrx::varlena::varlena_to_byte_slice(v).to_vec(),
            ))
        }
    }
}

impl IntoDatum for EncodedText {
    fn into_datum(self) -> Option<pg_sys::Datum> {
        // SAFETY: copies the bytes into a new text value in the current memory context.
        let t = unsafe {
            pg_sys::cstring_to_text_with_len(self.0.as_ptr().cast(), self.0.len() as i32)
        };
        Some(pg_sys::Datum::from(t))
    }

    fn type_oid() -> pg_sys::Oid {
        pg_sys::TEXTOID
    }
}

// SAFETY: unboxed through FromDatum, as pgrx unboxes String.
unsafe impl<'fcx> ArgAbi<'fcx> for EncodedText {
    unsafe fn unbox_arg_unchecked(arg: Arg<'_, 'fcx>) -> Self {
        let index = arg.index();
        // SAFETY: the argument is text (the function's SQL says so).
        unsafe { arg.unbox_arg_using_from_datum() }
            .unwrap_or_else(|| panic!("argument {index} must not be null"))
    }

    unsafe fn unbox_nullable_arg(arg: Arg<'_, 'fcx>) -> pgrx::nullable::Nullable<Self> {
        // SAFETY: as above.
        unsafe { arg.unbox_arg_using_from_datum() }.into()
    }
}
