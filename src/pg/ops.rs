//! Ordering and hashing of `sno` values: the comparison operators, the btree support
//! functions (compare, sort support with abbreviated keys), the hash support functions, and
//! the transition functions of `min(sno)` / `max(sno)`.
//!
//! The order is plain byte order (memcmp), like `uuid`'s; see [`crate::id::layout`] for why that
//! is time order. Hashes are PostgreSQL's own `hash_bytes` / `hash_bytes_extended` over the 10
//! bytes, exactly what `hash_any` gives core types. Once a hash partition or hash index holds
//! values, its hash function is cast in stone; using the server's byte hash rather than a Rust
//! hasher (whose output may change between compiler releases) is what makes that safe.

use crate::id::layout::{Sno, LEN};
use crate::pg::fmgr::{arg, arg_i64, arg_sno, bool_datum, finfo_v1, i32_datum};
use core::cmp::Ordering;
use core::ffi::c_int;
use pgrx::pg_guard;
use pgrx::pg_sys;

extern "C-unwind" {
    /// `hash_bytes` from `src/common/hashfn.c` (what the `hash_any()` macro calls). It cannot
    /// raise an error, so it needs no guard.
    #[link_name = "hash_bytes"]
    fn pg_hash_bytes(k: *const u8, keylen: c_int) -> u32;
    /// `hash_bytes_extended` from `src/common/hashfn.c` (what `hash_any_extended()` calls).
    #[link_name = "hash_bytes_extended"]
    fn pg_hash_bytes_extended(k: *const u8, keylen: c_int, seed: u64) -> u64;
}

extern "C-unwind" {
    /// PostgreSQL 15+'s comparator for unsigned abbreviated keys. Tuplesort recognises this
    /// exact function and switches to its specialised, inlined quicksort for it, so it must be
    /// the server's own function, not a copy.
    #[link_name = "ssup_datum_unsigned_cmp"]
    fn pg_ssup_datum_unsigned_cmp(
        x: pg_sys::Datum,
        y: pg_sys::Datum,
        ssup: pg_sys::SortSupport,
    ) -> c_int;
}

finfo_v1!(
    pg_finfo_sno_cmp,
    pg_finfo_sno_eq,
    pg_finfo_sno_ne,
    pg_finfo_sno_lt,
    pg_finfo_sno_le,
    pg_finfo_sno_gt,
    pg_finfo_sno_ge,
    pg_finfo_sno_sortsupport,
    pg_finfo_sno_hash,
    pg_finfo_sno_hash_extended,
    pg_finfo_sno_smaller,
    pg_finfo_sno_larger,
);

/// Compares the two `sno` arguments.
#[inline(always)]
unsafe fn compare_args(fcinfo: pg_sys::FunctionCallInfo) -> Ordering {
    arg_sno(fcinfo, 0).cmp(arg_sno(fcinfo, 1))
}

/// Defines a boolean comparison operator function.
macro_rules! comparison {
    ($(#[$doc:meta])* $name:ident, $test:expr) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// Called only by PostgreSQL's function manager, with two non-null `sno` arguments.
        #[pg_guard]
        #[no_mangle]
        pub unsafe extern "C-unwind" fn $name(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
            let test: fn(Ordering) -> bool = $test;
            bool_datum(test(compare_args(fcinfo)))
        }
    };
}

comparison!(
    /// `sno = sno`
    sno_eq, Ordering::is_eq
);
comparison!(
    /// `sno <> sno`
    sno_ne, Ordering::is_ne
);
comparison!(
    /// `sno < sno`
    sno_lt, Ordering::is_lt
);
comparison!(
    /// `sno <= sno`
    sno_le, Ordering::is_le
);
comparison!(
    /// `sno > sno`
    sno_gt, Ordering::is_gt
);
comparison!(
    /// `sno >= sno`
    sno_ge, Ordering::is_ge
);

/// `sno_cmp(sno, sno) → int`: btree support function 1.
#[pg_guard]
#[no_mangle]
pub unsafe extern "C-unwind" fn sno_cmp(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    i32_datum(compare_args(fcinfo) as i32)
}

/// `sno_smaller(sno, sno) → sno`: transition function of `min(sno)`. Returns one of its
/// arguments unchanged (no copy), as `uuid`'s and `text`'s do.
#[pg_guard]
#[no_mangle]
pub unsafe extern "C-unwind" fn sno_smaller(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    if compare_args(fcinfo).is_le() {
        arg(fcinfo, 0)
    } else {
        arg(fcinfo, 1)
    }
}

/// `sno_larger(sno, sno) → sno`: transition function of `max(sno)`.
#[pg_guard]
#[no_mangle]
pub unsafe extern "C-unwind" fn sno_larger(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    if compare_args(fcinfo).is_ge() {
        arg(fcinfo, 0)
    } else {
        arg(fcinfo, 1)
    }
}

/// Full comparison for sort support: both datums are pointers to 10 bytes.
unsafe extern "C-unwind" fn sort_cmp(
    x: pg_sys::Datum,
    y: pg_sys::Datum,
    _: pg_sys::SortSupport,
) -> c_int {
    let a = &*x.cast_mut_ptr::<Sno>();
    let b = &*y.cast_mut_ptr::<Sno>();
    a.cmp(b) as c_int
}

/// The abbreviated key: the first 8 bytes as a big-endian integer (time, tick, meta,
/// partition). Comparing it unsigned agrees with memcmp of the whole ID, so tuplesort only
/// falls back to [`sort_cmp`] on ties, i.e. between IDs of one 4 ms unit of one partition.
unsafe extern "C-unwind" fn abbrev_convert(
    original: pg_sys::Datum,
    _: pg_sys::SortSupport,
) -> pg_sys::Datum {
    let id = &*original.cast_mut_ptr::<Sno>();
    pg_sys::Datum::from(id.prefix_u64() as usize)
}

/// Never abandons abbreviation. `uuid` estimates the cardinality of its keys to decide; for
/// sno the full comparator is a 10-byte memcmp, so abbreviating costs one load and shift per
/// tuple and saves a pointer chase per comparison even when many keys tie.
unsafe extern "C-unwind" fn abbrev_abort(_: c_int, _: pg_sys::SortSupport) -> bool {
    false
}

/// `sno_sortsupport(internal)`: btree support function 2.
#[pg_guard]
#[no_mangle]
pub unsafe extern "C-unwind" fn sno_sortsupport(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    let ssup = arg(fcinfo, 0).cast_mut_ptr::<pg_sys::SortSupportData>();
    (*ssup).comparator = Some(sort_cmp);
    // Abbreviated keys need 8-byte datums; on 32-bit builds we keep the plain comparator.
    if (*ssup).abbreviate && core::mem::size_of::<pg_sys::Datum>() == 8 {
        (*ssup).abbrev_full_comparator = Some(sort_cmp);
        (*ssup).abbrev_converter = Some(abbrev_convert);
        (*ssup).abbrev_abort = Some(abbrev_abort);
        (*ssup).comparator = Some(pg_ssup_datum_unsigned_cmp);
    }
    pg_sys::Datum::from(0)
}

/// `sno_hash(sno) → int`: hash support function 1, `hash_any` over the 10 bytes.
#[pg_guard]
#[no_mangle]
pub unsafe extern "C-unwind" fn sno_hash(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    let id = arg_sno(fcinfo, 0);
    pg_sys::Datum::from(pg_hash_bytes(id.0.as_ptr(), LEN as c_int))
}

/// `sno_hash_extended(sno, int8) → int8`: hash support function 2 (needed by
/// `PARTITION BY HASH`), `hash_any_extended` over the 10 bytes.
#[pg_guard]
#[no_mangle]
pub unsafe extern "C-unwind" fn sno_hash_extended(
    fcinfo: pg_sys::FunctionCallInfo,
) -> pg_sys::Datum {
    let id = arg_sno(fcinfo, 0);
    let seed = arg_i64(fcinfo, 1) as u64;
    pg_sys::Datum::from(pg_hash_bytes_extended(id.0.as_ptr(), LEN as c_int, seed))
}
