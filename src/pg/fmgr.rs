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
use pgrx::{PgLogLevel, PgSqlErrorCode};

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
    UserError::new(
        PgSqlErrorCode::ERRCODE_OUT_OF_MEMORY,
        "out of memory".into(),
    )
    .detail(format!("Failed on request of size {size}."))
    .raise()
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

/// An error to raise, with everything PostgreSQL shows a user.
pub struct UserError {
    /// The SQLSTATE.
    pub code: PgSqlErrorCode,
    /// The primary message, naming the offending value.
    pub message: String,
    /// What exactly is wrong, if there is more to say.
    pub detail: Option<String>,
    /// What the user can do about it.
    pub hint: Option<String>,
}

impl UserError {
    /// An error with only a code and a message.
    pub fn new(code: PgSqlErrorCode, message: String) -> Self {
        UserError {
            code,
            message,
            detail: None,
            hint: None,
        }
    }

    /// Adds a DETAIL line.
    pub fn detail(mut self, detail: String) -> Self {
        self.detail = Some(detail);
        self
    }

    /// Adds a HINT line.
    pub fn hint(mut self, hint: &str) -> Self {
        self.hint = Some(hint.to_string());
        self
    }

    /// Raises the error (`ereport(ERROR, ...)`); never returns.
    pub fn raise(self) -> ! {
        let mut report = pgrx::pg_sys::panic::ErrorReport::new(self.code, self.message, "sno");
        if let Some(d) = self.detail {
            report = report.set_detail(d);
        }
        if let Some(h) = self.hint {
            report = report.set_hint(h);
        }
        report.report(PgLogLevel::ERROR);
        unreachable!("ereport(ERROR) returned")
    }

    /// Reports the error softly when the caller asked for that (PostgreSQL 16+'s
    /// `ErrorSaveContext`, used by `pg_input_is_valid` and `pg_input_error_info`), and raises
    /// it otherwise. Returns only after a soft report; the caller then returns NULL.
    ///
    /// # Safety
    /// `fcinfo` must be a valid call frame.
    #[allow(unused_variables)]
    pub unsafe fn save_or_raise(self, fcinfo: pg_sys::FunctionCallInfo) {
        #[cfg(any(feature = "pg16", feature = "pg17", feature = "pg18"))]
        {
            let ctx = (*fcinfo).context;
            if !ctx.is_null() && (*ctx).type_ == pg_sys::NodeTag::T_ErrorSaveContext {
                let es = ctx.cast::<pg_sys::ErrorSaveContext>();
                (*es).error_occurred = true;
                if (*es).details_wanted {
                    // What errsave_finish() leaves behind: an ErrorData in the caller's context.
                    let ed = pg_sys::palloc0(core::mem::size_of::<pg_sys::ErrorData>())
                        .cast::<pg_sys::ErrorData>();
                    (*ed).elevel = PgLogLevel::ERROR as i32;
                    (*ed).sqlerrcode = self.code as i32;
                    (*ed).message = pstrdup(&self.message);
                    (*ed).detail = self
                        .detail
                        .as_deref()
                        .map_or(core::ptr::null_mut(), |d| pstrdup(d));
                    (*ed).hint = self
                        .hint
                        .as_deref()
                        .map_or(core::ptr::null_mut(), |h| pstrdup(h));
                    (*ed).assoc_context = pg_sys::CurrentMemoryContext;
                    (*es).error_data = ed;
                }
                return;
            }
        }
        self.raise()
    }
}

/// A palloc'd NUL-terminated copy of `s` (interior NULs, which cannot occur in our
/// messages, would end the string early).
#[cfg(any(feature = "pg16", feature = "pg17", feature = "pg18"))]
unsafe fn pstrdup(s: &str) -> *mut core::ffi::c_char {
    let p = pg_sys::palloc(s.len() + 1).cast::<u8>();
    core::ptr::copy_nonoverlapping(s.as_ptr(), p, s.len());
    *p.add(s.len()) = 0;
    p.cast()
}

/// Quotes a value for an error message the way PostgreSQL's own input functions do:
/// the raw text between double quotes, with bytes that are not UTF-8 replaced.
pub fn quoted(bytes: &[u8]) -> String {
    format!("\"{}\"", String::from_utf8_lossy(bytes))
}

/// A `timestamptz` as PostgreSQL prints it under the session's settings.
pub fn timestamptz_text(ts: i64) -> String {
    // SAFETY: timestamptz_out accepts every int8 value (including ±infinity).
    let text: Option<&core::ffi::CStr> = unsafe {
        pgrx::direct_function_call(pg_sys::timestamptz_out, &[Some(pg_sys::Datum::from(ts))])
    };
    text.map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_default()
}
