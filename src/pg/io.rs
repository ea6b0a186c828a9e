//! Input and output of `sno` values: text (`sno_in`, `sno_out`), binary (`sno_recv`,
//! `sno_send`) and the `bytea` casts Go clients rely on.
//!
//! The text form is the 16-character sno32 encoding ([`crate::id::encoding`]); the binary form is
//! exactly the 10 raw bytes, as for `uuid`. A wrong length is always an error, never a silent
//! truncation.

use crate::id::encoding::{encode, parse, TEXT_LEN};
use crate::id::layout::{Sno, LEN};
use crate::pg::errors::{self, Problem};
use crate::pg::fmgr::{arg, arg_sno, finfo_v1, sno_datum};
use pgrx::pg_guard;
use pgrx::pg_sys;

finfo_v1!(
    pg_finfo_sno_in,
    pg_finfo_sno_out,
    pg_finfo_sno_recv,
    pg_finfo_sno_send,
    pg_finfo_sno_from_bytea,
    pg_finfo_sno_to_bytea,
);

/// `sno_in(cstring) → sno`: the 16-character text form; upper case accepted.
///
/// On PostgreSQL 16+ a bad input is reported softly when the caller asks for it
/// (`pg_input_is_valid`, `COPY ... ON_ERROR ignore`).
#[pg_guard]
#[no_mangle]
pub unsafe extern "C-unwind" fn sno_in(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    let text = core::ffi::CStr::from_ptr(arg(fcinfo, 0).cast_mut_ptr()).to_bytes();
    match parse(text) {
        Ok(id) => sno_datum(id),
        Err(e) => {
            Problem::InvalidText {
                input: text,
                why: e,
            }
            .report()
            .save_or_raise(fcinfo);
            pgrx::fcinfo::pg_return_null(fcinfo)
        }
    }
}

/// `sno_out(sno) → cstring`: 16 lower-case characters.
#[pg_guard]
#[no_mangle]
pub unsafe extern "C-unwind" fn sno_out(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    let text = encode(arg_sno(fcinfo, 0));
    let out = crate::pg::fmgr::palloc_small(TEXT_LEN + 1);
    core::ptr::copy_nonoverlapping(text.as_ptr(), out, TEXT_LEN);
    *out.add(TEXT_LEN) = 0;
    pg_sys::Datum::from(out)
}

/// `sno_recv(internal) → sno`: exactly the 10 raw bytes of the binary wire form.
#[pg_guard]
#[no_mangle]
pub unsafe extern "C-unwind" fn sno_recv(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    let buf = arg(fcinfo, 0).cast_mut_ptr::<pg_sys::StringInfoData>();
    let left = ((*buf).len - (*buf).cursor).max(0) as usize;
    let rest: &[u8] = if left == 0 || (*buf).data.is_null() {
        &[]
    } else {
        core::slice::from_raw_parts((*buf).data.add((*buf).cursor as usize).cast(), left)
    };
    // The same check as the bytea cast's: exactly 10 bytes, whatever they hold.
    let Some(id) = Sno::from_slice(rest) else {
        errors::raise(Problem::BinaryLength(left));
    };
    (*buf).cursor += LEN as i32;
    sno_datum(id)
}

/// `sno_send(sno) → bytea`: the 10 raw bytes.
#[pg_guard]
#[no_mangle]
pub unsafe extern "C-unwind" fn sno_send(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    bytea_datum(arg_sno(fcinfo, 0))
}

/// `sno(bytea) → sno`, the cast Go clients use (they send IDs as 10-byte `bytea`).
#[pg_guard]
#[no_mangle]
pub unsafe extern "C-unwind" fn sno_from_bytea(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    let raw = arg(fcinfo, 0).cast_mut_ptr::<pg_sys::varlena>();
    let v = pg_sys::pg_detoast_datum_packed(raw);
    let bytes = pgrx::varlena::varlena_to_byte_slice(v);
    match Sno::from_slice(bytes) {
        Some(id) => sno_datum(id),
        None => errors::raise(Problem::ByteaLength(bytes)),
    }
}

/// `bytea(sno) → bytea`: the 10 raw bytes.
#[pg_guard]
#[no_mangle]
pub unsafe extern "C-unwind" fn sno_to_bytea(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    bytea_datum(arg_sno(fcinfo, 0))
}

/// A new `bytea` holding the 10 bytes of `id` (also the `send` result: a send function
/// returns the message body as a bytea).
unsafe fn bytea_datum(id: &Sno) -> pg_sys::Datum {
    let total = pg_sys::VARHDRSZ + LEN;
    let v = pg_sys::palloc(total).cast::<pg_sys::varlena>();
    pgrx::varlena::set_varsize_4b(v, total as i32);
    core::ptr::copy_nonoverlapping(
        id.0.as_ptr(),
        pgrx::varlena::vardata_any(v).cast_mut().cast::<u8>(),
        LEN,
    );
    pg_sys::Datum::from(v)
}
