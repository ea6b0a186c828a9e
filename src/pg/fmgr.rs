//! The thin layer between PostgreSQL's function manager and the pure ID logic.
//!
//! The SQL-callable functions of this extension are plain version-1 fmgr functions
//! (`PG_FUNCTION_INFO_V1` in C terms), declared in `sql/sno_type.sql` by hand. Going without
//! pgrx's `#[pg_extern]` wrappers keeps the per-row paths (in/out, compare, hash) to a few
//! instructions around the pure code, and keeps the SQL labels (`IMMUTABLE STRICT PARALLEL
//! SAFE`, `COST`, `LEAKPROOF`) where a reviewer can read them.
//!
//! Every function here is STRICT in SQL, so PostgreSQL never calls it with a NULL argument and
//! the helpers do not look at null flags.

use crate::id::layout::{Sno, LEN};
use pgrx::pg_sys;

/// Declares the `pg_finfo_<name>` records that tell PostgreSQL a symbol is a version-1
/// function (what `PG_FUNCTION_INFO_V1(name)` does in C).
macro_rules! finfo_v1 {
    ($($finfo:ident),* $(,)?) => {
        $(
            #[no_mangle]
            #[doc(hidden)]
            pub extern "C" fn $finfo() -> &'static ::pgrx::pg_sys::Pg_finfo_record {
                const V1: ::pgrx::pg_sys::Pg_finfo_record =
                    ::pgrx::pg_sys::Pg_finfo_record { api_version: 1 };
                &V1
            }
        )*
    };
}
pub(crate) use finfo_v1;

/// Argument `n` as a raw datum.
///
/// # Safety
/// `fcinfo` must be a valid call frame with at least `n + 1` arguments.
#[inline(always)]
pub unsafe fn arg(fcinfo: pg_sys::FunctionCallInfo, n: usize) -> pg_sys::Datum {
    (*(*fcinfo).args.as_ptr().add(n)).value
}

/// Argument `n`, a `sno`, read in place (no copy, no detoasting: the type is fixed-length).
///
/// # Safety
/// Argument `n` must be a non-null `sno` datum that outlives the returned reference.
#[inline(always)]
pub unsafe fn arg_sno<'a>(fcinfo: pg_sys::FunctionCallInfo, n: usize) -> &'a Sno {
    &*(arg(fcinfo, n).cast_mut_ptr::<Sno>())
}

/// Argument `n` as an `int4`.
///
/// # Safety
/// Argument `n` must be an `int4` datum.
#[inline(always)]
pub unsafe fn arg_i32(fcinfo: pg_sys::FunctionCallInfo, n: usize) -> i32 {
    arg(fcinfo, n).value() as i32
}

/// Argument `n` as an `int8` or `timestamptz` (both by value on every supported platform).
///
/// # Safety
/// Argument `n` must be an 8-byte by-value datum.
#[inline(always)]
pub unsafe fn arg_i64(fcinfo: pg_sys::FunctionCallInfo, n: usize) -> i64 {
    arg(fcinfo, n).value() as i64
}

extern "C-unwind" {
    /// `MemoryContextAllocExtended` from `mcxt.c`, declared here without pgrx's
    /// setjmp guard (about 10 ns a call, measured): with `MCXT_ALLOC_NO_OOM` and a valid size
    /// it cannot raise an error, it returns NULL when out of memory.
    #[link_name = "MemoryContextAllocExtended"]
    fn alloc_no_oom(
        context: pg_sys::MemoryContext,
        size: usize,
        flags: core::ffi::c_int,
    ) -> *mut core::ffi::c_void;
}

/// Allocates `size` bytes (a small constant) in the current memory context; raises
/// PostgreSQL's out-of-memory error when that fails.
#[inline(always)]
pub fn palloc_small(size: usize) -> *mut u8 {
    // SAFETY: CurrentMemoryContext is always valid in a backend; the call cannot longjmp.
    let p = unsafe {
        alloc_no_oom(
            pg_sys::CurrentMemoryContext,
            size,
            pg_sys::MCXT_ALLOC_NO_OOM as _,
        )
    };
    if p.is_null() {
        out_of_memory(size);
    }
    p.cast()
}

#[cold]
#[inline(never)]
fn out_of_memory(size: usize) -> ! {
    crate::pg::errors::raise(crate::pg::errors::Problem::OutOfMemory(size))
}

/// Copies an ID into memory of the current memory context and returns it as a datum.
#[inline(always)]
pub fn sno_datum(id: Sno) -> pg_sys::Datum {
    let p = palloc_small(LEN).cast::<Sno>();
    // SAFETY: p points to LEN writable bytes; Sno has alignment 1.
    unsafe { p.write(id) };
    pg_sys::Datum::from(p)
}

/// An `int4` result.
#[inline(always)]
pub fn i32_datum(v: i32) -> pg_sys::Datum {
    pg_sys::Datum::from(v)
}

/// A `bool` result.
#[inline(always)]
pub fn bool_datum(v: bool) -> pg_sys::Datum {
    pg_sys::Datum::from(v)
}
