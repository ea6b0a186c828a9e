//! Comparisons between `sno` and `text` (and so `varchar`, which PostgreSQL coerces to `text`
//! for free): `sno = text`, `text = sno` and the other five, and the btree support function of
//! each direction, so that `WHERE id = $1::varchar` (what SQLAlchemy sends for a string) scans
//! the index on `id` and prunes partitions, as `WHERE id = $1::sno` does.
//!
//! The text side is read with the type's own input rules ([`crate::id::encoding::parse`]): a
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
);

/// Argument `n`, a `text`, parsed as a sno ID; raises the input error otherwise.
///
/// # Safety
/// Argument `n` must be a non-null `text` datum.
#[inline(always)]
unsafe fn arg_text_sno(fcinfo: pg_sys::FunctionCallInfo, n: usize) -> Sno {
    let v = pg_sys::pg_detoast_datum_packed(arg(fcinfo, n).cast_mut_ptr());
    let bytes = pgrx::varlena::varlena_to_byte_slice(v);
    match parse(bytes) {
        Ok(id) => id,
        Err(why) => crate::pg::errors::raise(Problem::InvalidText { input: bytes, why }),
    }
}

/// `sno` (argument 0) against `text` (argument 1).
#[inline(always)]
unsafe fn sno_text(fcinfo: pg_sys::FunctionCallInfo) -> Ordering {
    let right = arg_text_sno(fcinfo, 1);
    arg_sno(fcinfo, 0).cmp(&right)
}

/// `text` (argument 0) against `sno` (argument 1).
#[inline(always)]
unsafe fn text_sno(fcinfo: pg_sys::FunctionCallInfo) -> Ordering {
    let left = arg_text_sno(fcinfo, 0);
    left.cmp(arg_sno(fcinfo, 1))
}

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

/// `sno_cmp_texts(text, text) → int`: two strings compared as the sno IDs they are, btree
/// support function 1 for (text, text) in sno's family. The btree scan sorts the elements of
/// `id = ANY($1::varchar[])` (and `id IN (...)` of varchar values) with it, in sno order.
/// There are no (text, text) operators in the family: text's own are collation-aware.
///
/// # Safety
/// Called only by PostgreSQL's function manager, with two non-null `text` arguments.
#[pg_guard]
#[no_mangle]
pub unsafe extern "C-unwind" fn sno_cmp_texts(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    let left = arg_text_sno(fcinfo, 0);
    let right = arg_text_sno(fcinfo, 1);
    i32_datum(left.cmp(&right) as i32)
}
