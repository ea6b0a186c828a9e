//! A lease call's request and answer as they travel between the caller and the registry's
//! worker ([`super::lease_worker`]) through shared memory: fixed-size, plain data, with the
//! texts of an error the worker raised, to be raised again in the caller.

use pgrx::PgSqlErrorCode;

/// What a call asks the registry.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum Kind {
    Acquire,
    Renew,
    Release,
    TakeOver,
}

/// A name as PostgreSQL keeps it (`NAMEDATALEN` bytes with its terminator).
pub type Name = [u8; 64];

/// A holder's name: its bytes in the database's encoding.
pub type Holder = [u8; crate::generator::lease::MAX_HOLDER_BYTES];

/// A request, as the caller's session saw it: the calling role and the settings that apply to
/// it (a role's `ALTER ROLE ... SET` values are its session's, not the worker's).
#[derive(Clone, Copy)]
#[repr(C)]
pub struct Ask {
    pub kind: Kind,
    /// The calling role (`current_user`), whose leases these are.
    pub role: u32,
    pub role_name: Name,
    pub holder: Holder,
    pub holder_len: u16,
    /// TTL in 4 ms units (checked by the caller against its `sno.lease_max_ttl`).
    pub ttl: i64,
    pub sequences: u32,
    pub lease: i64,
    pub token: [u8; 16],
    /// The caller's `sno.lease_limit`, `sno.reserved_limit`, `sno.lease_max_ttl`.
    pub lease_limit: i32,
    pub reserved_limit: i32,
    pub max_ttl_s: i32,
}

impl Default for Ask {
    fn default() -> Self {
        Ask {
            kind: Kind::Acquire,
            role: 0,
            role_name: [0; 64],
            holder: [0; crate::generator::lease::MAX_HOLDER_BYTES],
            holder_len: 0,
            ttl: 0,
            sequences: 0,
            lease: 0,
            token: [0; 16],
            lease_limit: 0,
            reserved_limit: 0,
            max_ttl_s: 0,
        }
    }
}

/// A lease as the registry granted or renewed it.
#[derive(Clone, Copy)]
#[repr(C)]
pub struct LeaseReply {
    pub lease: i64,
    pub token: [u8; 16],
    pub partition: u16,
    pub min: u16,
    pub max: u16,
    pub not_before: i64,
    pub expires: i64,
    pub renew_after: i64,
    pub holder: Holder,
    pub holder_len: u16,
}

impl Default for LeaseReply {
    fn default() -> Self {
        LeaseReply {
            lease: 0,
            token: [0; 16],
            partition: 0,
            min: 0,
            max: 0,
            not_before: 0,
            expires: 0,
            renew_after: 0,
            holder: [0; crate::generator::lease::MAX_HOLDER_BYTES],
            holder_len: 0,
        }
    }
}

/// An error the worker raised, to be raised again in the caller.
#[derive(Clone, Copy)]
#[repr(C)]
pub struct Failure {
    pub code: i32,
    pub message: [u8; 1024],
    pub message_len: u16,
    pub detail: [u8; 2048],
    pub detail_len: u16,
    pub hint: [u8; 2048],
    pub hint_len: u16,
}

/// What the worker answered.
// In shared memory, where every slot has the size of the largest answer anyway.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Copy)]
#[repr(C)]
pub enum Answer {
    /// A lease (acquire, renew).
    Lease(LeaseReply),
    /// A count (take-over), or nothing (release: 0).
    Count(i64),
    /// An error.
    Failed(Failure),
}

/// Copies `s` into `buf` (cut at a character boundary), returning its length.
fn put(buf: &mut [u8], s: &str) -> u16 {
    let mut n = s.len().min(buf.len());
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    buf[..n].copy_from_slice(&s.as_bytes()[..n]);
    n as u16
}

/// A failure with these texts.
pub fn failure(
    code: PgSqlErrorCode,
    message: &str,
    detail: Option<&str>,
    hint: Option<&str>,
) -> Failure {
    let mut f = Failure {
        code: code as i32,
        message: [0; 1024],
        message_len: 0,
        detail: [0; 2048],
        detail_len: 0,
        hint: [0; 2048],
        hint_len: 0,
    };
    f.message_len = put(&mut f.message, message);
    f.detail_len = put(&mut f.detail, detail.unwrap_or(""));
    f.hint_len = put(&mut f.hint, hint.unwrap_or(""));
    f
}

/// Fills a name buffer.
pub fn name(s: &str) -> Name {
    let mut n = [0u8; 64];
    put(&mut n[..63], s);
    n
}

/// A name buffer's text.
pub fn name_str(n: &Name) -> String {
    let len = n.iter().position(|&b| b == 0).unwrap_or(n.len());
    String::from_utf8_lossy(&n[..len]).into_owned()
}
