//! Comparisons between `sno` and the string types: `sno = text`, `text = sno` and the other
//! five, and the btree support function of each direction, so that `WHERE id = $1::varchar`
//! (what SQLAlchemy sends for a string) scans the index on `id` and prunes partitions, as
//! `WHERE id = $1::sno` does.
//!
//! Three readings of the string side, each with its own functions:
//! * `text` (and `varchar`, which has no operators of its own in PostgreSQL: it reaches the
//!   `text` ones through a binary coercion);
//! * `bpchar` (`char(n)`): trailing spaces are padding, as for every `bpchar` comparison, and
//!   as `bpchar::text` (which 0.4.0's `sno = text` compared) drops them;
//! * `name`: a NUL-terminated string of at most `NAMEDATALEN - 1` bytes, not a varlena.
//!
//! `bpchar` and `name` have operators of their own in sno's schema (0.4.1), so that
//! `id = $1::bpchar` resolves to sno's operator by exact match. `varchar` cannot: an operator
//! with a `varchar` argument would be the exact match of every `varchar_column = 'literal'` in
//! the database (PostgreSQL has no `(varchar, varchar)` operators), reading the literal as an ID.
//!
//! The string side is read with the type's own input rules ([`crate::id::encoding::parse`]): a
//! string that is not a sno ID is the same 22P02 error as `'...'::sno`, never `false`. That is
//! why these functions are not LEAKPROOF, unlike `sno = sno`. The comparison is the ID's order,
//! which is also the order of the lower-case text under `COLLATE "C"`; collations play no part.
//!
//! Parsing needs no allocation: a short text is read in place (a long one is detoasted first,
//! and is an error anyway).

use crate::id::encoding::parse;
use crate::id::layout::Sno;
use crate::pg::errors::Problem;
use crate::pg::fmgr::{arg, arg_sno, bool_datum, finfo_v1, i32_datum};
use core::cmp::Ordering;
use pgrx::pg_guard;
use pgrx::pg_sys;

finfo_v1!(
    pg_finfo_sno_cmp_text,
    pg_finfo_sno_eq_text,
    pg_finfo_sno_ne_text,
    pg_finfo_sno_lt_text,
    pg_finfo_sno_le_text,
    pg_finfo_sno_gt_text,
    pg_finfo_sno_ge_text,
    pg_finfo_text_cmp_sno,
    pg_finfo_text_eq_sno,
    pg_finfo_text_ne_sno,
    pg_finfo_text_lt_sno,
    pg_finfo_text_le_sno,
    pg_finfo_text_gt_sno,
    pg_finfo_text_ge_sno,
    pg_finfo_sno_cmp_texts,
    pg_finfo_sno_cmp_bpchar,
    pg_finfo_sno_eq_bpchar,
    pg_finfo_sno_ne_bpchar,
    pg_finfo_sno_lt_bpchar,
    pg_finfo_sno_le_bpchar,
    pg_finfo_sno_gt_bpchar,
    pg_finfo_sno_ge_bpchar,
    pg_finfo_bpchar_cmp_sno,
    pg_finfo_bpchar_eq_sno,
    pg_finfo_bpchar_ne_sno,
    pg_finfo_bpchar_lt_sno,
    pg_finfo_bpchar_le_sno,
    pg_finfo_bpchar_gt_sno,
    pg_finfo_bpchar_ge_sno,
    pg_finfo_sno_cmp_bpchars,
    pg_finfo_sno_cmp_name,
    pg_finfo_sno_eq_name,
    pg_finfo_sno_ne_name,
    pg_finfo_sno_lt_name,
    pg_finfo_sno_le_name,
    pg_finfo_sno_gt_name,
    pg_finfo_sno_ge_name,
    pg_finfo_name_cmp_sno,
    pg_finfo_name_eq_sno,
    pg_finfo_name_ne_sno,
    pg_finfo_name_lt_sno,
    pg_finfo_name_le_sno,
    pg_finfo_name_gt_sno,
    pg_finfo_name_ge_sno,
    pg_finfo_sno_cmp_names,
);

/// `bytes` parsed as a sno ID; raises the input error otherwise.
#[inline(always)]
fn parse_or_raise(bytes: &[u8]) -> Sno {
    match parse(bytes) {
        Ok(id) => id,
        Err(why) => crate::pg::errors::raise(Problem::InvalidText { input: bytes, why }),
    }
}

/// Argument `n`, a `text` (or `varchar`), parsed as a sno ID; raises the input error otherwise.
///
/// # Safety
/// Argument `n` must be a non-null `text` datum.
#[inline(always)]
unsafe fn arg_text_sno(fcinfo: pg_sys::FunctionCallInfo, n: usize) -> Sno {
    let v = pg_sys::pg_detoast_datum_packed(arg(fcinfo, n).cast_mut_ptr());
    parse_or_raise(pgrx::varlena::varlena_to_byte_slice(v))
}

/// Argument `n`, a `bpchar`, parsed as a sno ID without its trailing spaces (the padding of
/// `char(n)`, insignificant in every `bpchar` comparison); raises the input error otherwise.
///
/// # Safety
/// Argument `n` must be a non-null `bpchar` datum.
#[inline(always)]
unsafe fn arg_bpchar_sno(fcinfo: pg_sys::FunctionCallInfo, n: usize) -> Sno {
    let v = pg_sys::pg_detoast_datum_packed(arg(fcinfo, n).cast_mut_ptr());
    parse_or_raise(trim_padding(pgrx::varlena::varlena_to_byte_slice(v)))
}

/// A `bpchar` value without its trailing spaces (only spaces: `char(n)` pads with them).
fn trim_padding(bytes: &[u8]) -> &[u8] {
    let end = bytes.iter().rposition(|&b| b != b' ').map_or(0, |i| i + 1);
    &bytes[..end]
}

/// Argument `n`, a `name`, parsed as a sno ID; raises the input error otherwise.
///
/// # Safety
/// Argument `n` must be a non-null `name` datum (a pointer to `NAMEDATALEN` bytes).
#[inline(always)]
unsafe fn arg_name_sno(fcinfo: pg_sys::FunctionCallInfo, n: usize) -> Sno {
    let all = core::slice::from_raw_parts(
        arg(fcinfo, n).cast_mut_ptr::<u8>().cast_const(),
        pg_sys::NAMEDATALEN as usize,
    );
    parse_or_raise(name_bytes(all))
}

/// The string of a `NameData`: up to its first NUL (all of it if none, which a valid `name`
/// never is).
fn name_bytes(all: &[u8]) -> &[u8] {
    &all[..all.iter().position(|&b| b == 0).unwrap_or(all.len())]
}

/// Defines the order of `sno` (argument 0) against a string type read by `$read` (argument 1),
/// and of that string type against `sno`.
macro_rules! orders {
    ($read:ident, $sno_str:ident, $str_sno:ident) => {
        /// `sno` (argument 0) against the string (argument 1).
        #[inline(always)]
        unsafe fn $sno_str(fcinfo: pg_sys::FunctionCallInfo) -> Ordering {
            let right = $read(fcinfo, 1);
            arg_sno(fcinfo, 0).cmp(&right)
        }

        /// The string (argument 0) against `sno` (argument 1).
        #[inline(always)]
        unsafe fn $str_sno(fcinfo: pg_sys::FunctionCallInfo) -> Ordering {
            let left = $read(fcinfo, 0);
            left.cmp(arg_sno(fcinfo, 1))
        }
    };
}

orders!(arg_text_sno, sno_text, text_sno);
orders!(arg_bpchar_sno, sno_bpchar, bpchar_sno);
orders!(arg_name_sno, sno_name, name_sno);

/// Defines the seven functions of one direction: `cmp` (btree support 1) and the six tests.
macro_rules! direction {
    ($order:ident, $cmp:ident, [$(($name:ident, $test:expr)),* $(,)?]) => {
        /// btree support function 1 of this direction: -1, 0 or 1.
        ///
        /// # Safety
        /// Called only by PostgreSQL's function manager, with two non-null arguments.
        #[pg_guard]
        #[no_mangle]
        pub unsafe extern "C-unwind" fn $cmp(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
            i32_datum($order(fcinfo) as i32)
        }
        $(
            /// A comparison operator's function.
            ///
            /// # Safety
            /// Called only by PostgreSQL's function manager, with two non-null arguments.
            #[pg_guard]
            #[no_mangle]
            pub unsafe extern "C-unwind" fn $name(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
                let test: fn(Ordering) -> bool = $test;
                bool_datum(test($order(fcinfo)))
            }
        )*
    };
}

direction!(
    sno_text,
    sno_cmp_text,
    [
        (sno_eq_text, Ordering::is_eq),
        (sno_ne_text, Ordering::is_ne),
        (sno_lt_text, Ordering::is_lt),
        (sno_le_text, Ordering::is_le),
        (sno_gt_text, Ordering::is_gt),
        (sno_ge_text, Ordering::is_ge),
    ]
);

direction!(
    text_sno,
    text_cmp_sno,
    [
        (text_eq_sno, Ordering::is_eq),
        (text_ne_sno, Ordering::is_ne),
        (text_lt_sno, Ordering::is_lt),
        (text_le_sno, Ordering::is_le),
        (text_gt_sno, Ordering::is_gt),
        (text_ge_sno, Ordering::is_ge),
    ]
);

direction!(
    sno_bpchar,
    sno_cmp_bpchar,
    [
        (sno_eq_bpchar, Ordering::is_eq),
        (sno_ne_bpchar, Ordering::is_ne),
        (sno_lt_bpchar, Ordering::is_lt),
        (sno_le_bpchar, Ordering::is_le),
        (sno_gt_bpchar, Ordering::is_gt),
        (sno_ge_bpchar, Ordering::is_ge),
    ]
);

direction!(
    bpchar_sno,
    bpchar_cmp_sno,
    [
        (bpchar_eq_sno, Ordering::is_eq),
        (bpchar_ne_sno, Ordering::is_ne),
        (bpchar_lt_sno, Ordering::is_lt),
        (bpchar_le_sno, Ordering::is_le),
        (bpchar_gt_sno, Ordering::is_gt),
        (bpchar_ge_sno, Ordering::is_ge),
    ]
);

direction!(
    sno_name,
    sno_cmp_name,
    [
        (sno_eq_name, Ordering::is_eq),
        (sno_ne_name, Ordering::is_ne),
        (sno_lt_name, Ordering::is_lt),
        (sno_le_name, Ordering::is_le),
        (sno_gt_name, Ordering::is_gt),
        (sno_ge_name, Ordering::is_ge),
    ]
);

direction!(
    name_sno,
    name_cmp_sno,
    [
        (name_eq_sno, Ordering::is_eq),
        (name_ne_sno, Ordering::is_ne),
        (name_lt_sno, Ordering::is_lt),
        (name_le_sno, Ordering::is_le),
        (name_gt_sno, Ordering::is_gt),
        (name_ge_sno, Ordering::is_ge),
    ]
);

/// Defines the btree support function 1 for two values of one string type, compared as the
/// sno IDs they are.
macro_rules! pair {
    ($(#[$doc:meta])* $name:ident, $read:ident) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// Called only by PostgreSQL's function manager, with two non-null arguments of the type.
        #[pg_guard]
        #[no_mangle]
        pub unsafe extern "C-unwind" fn $name(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
            let left = $read(fcinfo, 0);
            let right = $read(fcinfo, 1);
            i32_datum(left.cmp(&right) as i32)
        }
    };
}

pair!(
    /// `sno_cmp_texts(text, text) → int`: two strings
    /// compared as the sno IDs they are, btree support function 1 for (text, text) in sno's
    /// family. The btree scan sorts the elements of `id = ANY($1::text[])` (and `id IN (...)`
    /// of text values) with it, in sno order. There are no (text, text) operators in the
    /// family: text's own are collation-aware.
    sno_cmp_texts,
    arg_text_sno
);
pair!(
    /// `sno_cmp_bpchars(bpchar, bpchar) → int`: as `sno_cmp_texts`, for `id = ANY($1::char(16)[])`.
    sno_cmp_bpchars,
    arg_bpchar_sno
);
pair!(
    /// `sno_cmp_names(name, name) → int`: as `sno_cmp_texts`, for `id = ANY($1::name[])`.
    sno_cmp_names,
    arg_name_sno
);
