//! `sno_time_partition_bound(pg_node_tree)`: a partition's bounds read from its catalog entry
//! (`pg_class.relpartbound`) without opening any relation, for the views and functions of
//! `sql/sno_time_partitions.sql`.
//!
//! Why not `pg_get_expr(relpartbound, partition)`, which sno 0.7.0 and 0.8.0 used: to print the
//! bound it builds a deparse context for the partition, which opens the partition with
//! `AccessShareLock`. That lock waits behind any `ACCESS EXCLUSIVE` one, so the public views
//! `sno_time_partitions` and `sno_time_partitioned_tables` (and through them the exporter's
//! query and the alert `SnoTimePartitionMissing`) waited for any session that held such a lock
//! on any partition of any table partitioned by a sno column: another role's table locked in an
//! open transaction, or a temporary one another session created or locked.
//!
//! The bound is in the node tree itself: a `PartitionBoundSpec` whose range bounds are
//! `PartitionRangeDatum`s holding `Const`s of the key's type (`MINVALUE` and `MAXVALUE` have
//! none). It is parsed with PostgreSQL's own `stringToNode`, as `pg_get_expr` parses it first,
//! and only read: no relation, no lock, nothing but the text. The argument's type can only come
//! from the catalogs (`pg_node_tree`'s input and receive functions refuse every value), so the
//! tree parsed is one PostgreSQL wrote.
//!
//! Declared by hand in `sql/sno_time_partitions.sql` (`IMMUTABLE STRICT PARALLEL SAFE`: the
//! result depends only on the argument), like the type's functions ([`crate::pg::fmgr`]).

use crate::pg::errors::{self, Problem};
use crate::pg::fmgr::{arg, bool_datum, finfo_v1};
use core::ffi::CStr;
use core::ptr::null_mut;
use pgrx::pg_guard;
use pgrx::pg_sys::{self, NodeTag};

finfo_v1!(pg_finfo_sno_time_partition_bound);

/// `sno_time_partition_bound(bound pg_node_tree, OUT from_value sno, OUT to_value sno,
/// OUT is_default boolean)`: the lower and upper bound of a partition of a table partitioned
/// by RANGE on one sno column (NULL: `MINVALUE` / `MAXVALUE`), or `is_default` (both NULL) for
/// its default partition. Any other node tree is an error: one that is not a partition bound
/// (22023), the bound of a LIST, HASH or several-column partitioning (42809), a range bound of
/// another type (42804).
#[pg_guard]
#[no_mangle]
pub unsafe extern "C-unwind" fn sno_time_partition_bound(
    fcinfo: pg_sys::FunctionCallInfo,
) -> pg_sys::Datum {
    let mut tupdesc: pg_sys::TupleDesc = null_mut();
    if pg_sys::get_call_result_type(fcinfo, null_mut(), &mut tupdesc)
        != pg_sys::TypeFuncClass::TYPEFUNC_COMPOSITE
        || (*tupdesc).natts != 3
    {
        pgrx::error!(
            "sno_time_partition_bound: declared with a result other than (sno, sno, boolean)"
        );
    }
    // The declared type of from_value is sno's OID, whatever schema sno is in (read through
    // pgrx: the attributes' layout differs from PostgreSQL 18 on).
    let sno_type = match pgrx::PgTupleDesc::from_pg_unchecked(tupdesc).get(0) {
        Some(att) => att.atttypid,
        None => pgrx::error!("sno_time_partition_bound: declared with no result columns"),
    };

    let text = pg_sys::text_to_cstring(arg(fcinfo, 0).cast_mut_ptr());
    let node = pg_sys::stringToNode(text).cast::<pg_sys::Node>();
    if node.is_null() || (*node).type_ != NodeTag::T_PartitionBoundSpec {
        errors::raise(Problem::NotAPartitionBound(CStr::from_ptr(text).to_bytes()));
    }
    let spec = node.cast::<pg_sys::PartitionBoundSpec>();

    let mut values = [pg_sys::Datum::from(0usize); 3];
    let mut nulls = [true, true, false];
    values[2] = bool_datum((*spec).is_default);
    if !(*spec).is_default {
        let strategy = (*spec).strategy as u8;
        let lower = (*spec).lowerdatums;
        let upper = (*spec).upperdatums;
        let columns = pg_sys::list_length(lower) as usize;
        if strategy != b'r' || columns != 1 || pg_sys::list_length(upper) != 1 {
            errors::raise(Problem::NotARangeBound { strategy, columns });
        }
        for (k, list) in [lower, upper].into_iter().enumerate() {
            let datum = pg_sys::list_nth(list, 0).cast::<pg_sys::PartitionRangeDatum>();
            if (*datum).kind != pg_sys::PartitionRangeDatumKind::PARTITION_RANGE_DATUM_VALUE {
                continue; // MINVALUE or MAXVALUE: NULL
            }
            let value = (*datum).value;
            if value.is_null() || (*value).type_ != NodeTag::T_Const {
                errors::raise(Problem::NotAPartitionBound(CStr::from_ptr(text).to_bytes()));
            }
            let c = value.cast::<pg_sys::Const>();
            if (*c).consttype != sno_type {
                let name = CStr::from_ptr(pg_sys::format_type_be((*c).consttype));
                errors::raise(Problem::BoundNotSno(&name.to_string_lossy()));
            }
            // A range bound is never NULL (CREATE TABLE refuses one); the value is the 10
            // bytes readDatum allocated, which heap_form_tuple copies.
            if !(*c).constisnull {
                values[k] = (*c).constvalue;
                nulls[k] = false;
            }
        }
    }
    let tuple = pg_sys::heap_form_tuple(
        pg_sys::BlessTupleDesc(tupdesc),
        values.as_mut_ptr(),
        nulls.as_mut_ptr(),
    );
    pg_sys::HeapTupleHeaderGetDatum((*tuple).t_data)
}
