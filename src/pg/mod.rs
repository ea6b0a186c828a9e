//! The PostgreSQL extension: a thin glue between PostgreSQL and the pure layers ([`crate::id`],
//! [`crate::generator`]). Built with a `pgNN` feature only.
//!
//! - [`fmgr`]: the version-1 calling convention (arguments, results, memory);
//!   [`report`]: errors and warnings as PostgreSQL shows them, and [`errors`], the one place
//!   every user-facing error, its SQLSTATE, DETAIL and HINT is written;
//! - the type: [`io`] (text and binary I/O), [`ops`] (comparison, hashing, BRIN, casts),
//!   [`parts`] (field functions), [`planner`] (time predicates as bounds on the key, and on
//!   TimescaleDB hypertables ([`hypertable`]) bounds on the key as time predicates);
//! - the generator: [`gucs`] (settings), [`shmem`] (shared memory, the state file at start-up),
//!   [`issuer`] (`sno_generate`, `sno_generate_at`, leases, the durable state,
//!   `sno_generator_initialize`, monitoring),
//!   [`wal`] (the lineage WAL record), [`worker`] (the background worker that judges the
//!   lineage after a promotion);
//! - replication: [`arrival`] (the trigger that keeps sno's own tables out of logical
//!   replication on the receiving side), [`handshake`] (members of a replicating group compare
//!   partitions over each subscription's connection);
//! - time-partitioned tables: [`time_partitions`] (a partition's bounds read from the catalog
//!   without opening it, for the views of `sql/sno_time_partitions.sql`);
//! - the SQL: every `CREATE` statement is in `sql/` (the type by hand, the functions pgrx
//!   generates listed in each file's header).

pub mod arrival;
pub mod citus;
pub mod encoded_text;
pub mod errors;
pub mod fmgr;
pub mod gucs;
pub mod handshake;
pub mod hypertable;
pub mod io;
pub mod issuer;
pub mod ops;
pub mod parts;
pub mod planner;
pub mod report;
pub mod shmem;
pub mod text_ops;
pub mod time_partitions;
pub mod wal;
pub mod worker;

#[cfg(feature = "pg_test")]
mod tests;

::pgrx::pg_module_magic!();

::pgrx::extension_sql_file!("../../sql/sno_type.sql", name = "sno_type", bootstrap);
::pgrx::extension_sql_file!(
    "../../sql/sno_generate.sql",
    name = "sno_generate",
    requires = ["sno_type"]
);
::pgrx::extension_sql_file!(
    "../../sql/sno_monitoring.sql",
    name = "sno_monitoring",
    requires = [
        issuer::monitor::generator_info,
        issuer::monitor::generator_backends,
        issuer::monitor::sno_generator_lineage,
        issuer::monitor::sno_generator_slice,
        issuer::monitor::sno_generator_status,
        issuer::durable::generator_initialize
    ]
);
::pgrx::extension_sql_file!(
    "../../sql/sno_reserved.sql",
    name = "sno_reserved",
    requires = [
        "sno_monitoring",
        issuer::monitor::sno_reserved_space,
        issuer::at::sno_reserved_grants_noted
    ]
);
::pgrx::extension_sql_file!(
    "../../sql/sno_time_partitions.sql",
    name = "sno_time_partitions",
    requires = ["sno_reserved"]
);
::pgrx::extension_sql_file!(
    "../../sql/sno_leases.sql",
    name = "sno_leases",
    requires = ["sno_time_partitions"]
);
::pgrx::extension_sql_file!(
    "../../sql/sno_leases_views.sql",
    name = "sno_leases_views",
    requires = [
        "sno_leases",
        issuer::lease::lease_acquire,
        issuer::lease::lease_renew,
        issuer::lease::sno_lease_release,
        issuer::lease::sno_lease_take_over,
        issuer::lease::sno_lease_partition_noted,
        issuer::lease::sno_lease_incarnation,
        issuer::lease::sno_lease_space
    ]
);

::pgrx::extension_sql_file!(
    "../../sql/sno_replication.sql",
    name = "sno_replication",
    requires = [
        "sno_leases_views",
        arrival::sno_internal_arrival,
        handshake::sno_member_hello,
        handshake::sno_member_check
    ]
);

/// Loads the extension: settings always; the shard table only while the postmaster preloads
/// libraries (`shared_preload_libraries`). Loaded any other way, the type and every function
/// but the generator work, and `sno_generate` explains what to add to postgresql.conf.
#[pgrx::pg_guard]
pub extern "C-unwind" fn _PG_init() {
    // An error's DETAIL is for the DBA: pgrx appends a Rust backtrace to it when one is
    // captured, which RUST_BACKTRACE=1 in the server's environment turns on. Backtraces stay
    // off for errors unless RUST_LIB_BACKTRACE asks for them explicitly.
    if std::env::var_os("RUST_LIB_BACKTRACE").is_none() {
        std::env::set_var("RUST_LIB_BACKTRACE", "0");
    }
    wal::init_hooks();
    gucs::init(shmem::assign_partition);
    planner::init();
    // SAFETY: plain read of a server global.
    if unsafe { pgrx::pg_sys::process_shared_preload_libraries_in_progress } {
        // A slice the generator cannot use stops the server here, as PostgreSQL's own
        // inconsistent settings do, not at the first sno_generate.
        if let Err((min, max, why)) = gucs::slice() {
            errors::raise(errors::Problem::BadSlice { min, max, why });
        }
        shmem::init();
        issuer::lease_worker::init();
        wal::init_redo(wal::Redo {
            lineage: issuer::replay,
            grant: issuer::replay_grant,
            member: issuer::members::replay,
            unrecorded_read_back: issuer::durable::replay_unrecorded_read_back,
            member_lifted: issuer::members::replay_lifted,
        });
        worker::init();
    }
}
