//! The builder every message of sno goes through, errors and warnings alike: a SQLSTATE, a
//! message naming the value, a DETAIL and a HINT. What each says is written in one place,
//! [`crate::pg::errors`].

use pgrx::pg_sys;
use pgrx::{PgLogLevel, PgSqlErrorCode};

/// An error to raise, with everything PostgreSQL shows a user.
pub struct Report {
    /// The SQLSTATE.
    pub code: PgSqlErrorCode,
    /// The primary message, naming the offending value.
    pub message: String,
    /// What exactly is wrong, if there is more to say.
    pub detail: Option<String>,
    /// What the user can do about it.
    pub hint: Option<String>,
}

impl Report {
    /// An error with only a code and a message.
    pub fn new(code: PgSqlErrorCode, message: impl Into<String>) -> Self {
        Report {
            code,
            message: message.into(),
            detail: None,
            hint: None,
        }
    }

    /// Adds a DETAIL line.
    pub fn detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    /// Adds a HINT line.
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// The report with its texts valid in the server encoding: unchanged on a UTF-8 server;
    /// on any other, every non-ASCII character (a value read from a file, a server's own
    /// output taken as UTF-8) written as the `\xNN` escapes of its bytes. Sno's own texts are
    /// ASCII, and the values users give are already shown so ([`quoted`]).
    fn in_server_encoding(self) -> Self {
        if server_is_utf8() {
            return self;
        }
        Report {
            code: self.code,
            message: ascii_only(self.message),
            detail: self.detail.map(ascii_only),
            hint: self.hint.map(ascii_only),
        }
    }

    /// `ereport` at `level`, with the DETAIL and HINT.
    fn emit(self, level: PgLogLevel) {
        let this = self.in_server_encoding();
        let mut report = pgrx::pg_sys::panic::ErrorReport::new(this.code, this.message, "sno");
        if let Some(d) = this.detail {
            report = report.set_detail(d);
        }
        if let Some(h) = this.hint {
            report = report.set_hint(h);
        }
        report.report(level);
    }

    /// Raises the error (`ereport(ERROR, ...)`); never returns.
    pub fn raise(self) -> ! {
        self.emit(PgLogLevel::ERROR);
        unreachable!("ereport(ERROR) returned")
    }

    /// Reports it as a WARNING (to the client and the server log) and goes on.
    pub fn warn(self) {
        self.emit(PgLogLevel::WARNING);
    }

    /// Writes it to the server log (LOG; sent to a client only with client_min_messages at
    /// log or lower).
    pub fn log(self) {
        self.emit(PgLogLevel::LOG);
    }

    /// Writes it to the server log only, never to a client (LOG_SERVER_ONLY).
    pub fn log_server_only(self) {
        self.emit(PgLogLevel::LOG_SERVER_ONLY);
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
                let this = self.in_server_encoding();
                let es = ctx.cast::<pg_sys::ErrorSaveContext>();
                (*es).error_occurred = true;
                if (*es).details_wanted {
                    // What errsave_finish() leaves behind: an ErrorData in the caller's context.
                    let ed = pg_sys::palloc0(core::mem::size_of::<pg_sys::ErrorData>())
                        .cast::<pg_sys::ErrorData>();
                    (*ed).elevel = PgLogLevel::ERROR as i32;
                    (*ed).sqlerrcode = this.code as i32;
                    (*ed).message = pstrdup(&this.message);
                    (*ed).detail = this
                        .detail
                        .as_deref()
                        .map_or(core::ptr::null_mut(), |d| pstrdup(d));
                    (*ed).hint = this
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

/// Quotes a value for an error message, as PostgreSQL's own input functions do (between
/// double quotes), in a form valid in any server encoding: printable ASCII as is, other bytes
/// as `\xNN`, and on a UTF-8 server its characters ([`crate::id::encoding::shown`]).
pub fn quoted(bytes: &[u8]) -> String {
    format!(
        "\"{}\"",
        crate::id::encoding::shown(bytes, server_is_utf8())
    )
}

/// [`quoted`] for a value of any length a user typed: cut after its first 40 bytes, with its
/// length, so that a mistaken multi-megabyte value does not make a multi-megabyte error
/// ([`crate::id::encoding::quote_input`]).
pub fn quoted_cut(bytes: &[u8]) -> String {
    crate::id::encoding::quote_input(bytes, server_is_utf8())
}

/// Whether the current database's encoding is UTF-8. Elsewhere (and in processes not
/// connected to a database, whose encoding is SQL_ASCII) a message must not carry non-ASCII
/// bytes: they may be invalid in the encoding, which turns the error into another one
/// (SQLSTATE 22021) and writes them to the server log.
fn server_is_utf8() -> bool {
    // SAFETY: reads a process global, set before any query runs.
    unsafe { pg_sys::GetDatabaseEncoding() == pg_sys::pg_enc::PG_UTF8 as i32 }
}

/// `text` with every non-ASCII character written as the `\xNN` escapes of its UTF-8 bytes.
fn ascii_only(text: String) -> String {
    if text.is_ascii() {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            for b in c.encode_utf8(&mut [0; 4]).bytes() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        }
    }
    out
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
