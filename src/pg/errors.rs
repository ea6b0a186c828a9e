//! Every error and warning a user of sno can see, in one place: what went wrong (a
//! [`Problem`], carrying the data: the pure layers' error types, the offending value) and, in
//! [`Problem::report`], the one mapping to the SQLSTATE, message, DETAIL and HINT PostgreSQL
//! shows. Messages name the value the way PostgreSQL's own types do. A HINT is an instruction
//! a DBA will follow literally: the client tests follow each one and check what happens next.

use crate::generator::cursor::{SliceError, MIN_PEER_SLICE, MIN_SLICE};
use crate::generator::state_file::FILE_NAME;
use crate::id::encoding::DecodeError;
use crate::id::layout::{PartsError, LEN};
use crate::pg::report::{quoted, quoted_cut, timestamptz_text, Report};
use pgrx::PgSqlErrorCode as Code;

/// An explicit partition beside a Citus cluster's derived ones: group numbers grow from 0, so a
/// partition of the highest group is the last any node would derive; partitions from 61440 up
/// are reserved (../PARTITION-SPACE: generation 15 of every group), so its generations 14 down
/// to 0.
const CITUS_TOP: &str = "one no other server uses from the top of the range, whose group (the partition modulo 4096) the cluster's group numbers will not reach, and below 61440 (sno reserves 61440-65535): 61439, 57343, 53247, ... (4095 + 4096 * k, k from 14 down to 0)";

/// An explicit partition for a server outside a Citus cluster.
const NEW_PARTITION: &str = "a sno.partition no server has used, below 61440 (sno reserves 61440-65535), for example the first of 61439, 57343, 53247, ... (4095 + 4096 * k, k from 14 down to 0) that no server has used";

/// The setting that forces parallel plans, as this major names it.
#[cfg(feature = "pg15")]
const PARALLEL_DEBUG: &str = "force_parallel_mode";
#[cfg(not(feature = "pg15"))]
const PARALLEL_DEBUG: &str = "debug_parallel_query";

/// The time range of the format, for DETAILs.
const RANGE: &str = "2010-01-01 00:00:00 UTC to 2079-09-07 15:47:35.551999 UTC";

/// Why the lease registry's worker could not be started ([`Problem::LeaseRegistryNotStarted`]).
#[derive(Clone, Copy, Debug)]
pub enum StartFailure {
    /// No background worker slot was free for the time the caller waits for one.
    NoSlot,
    /// It stopped before it took its entry (it could not connect to the database).
    Stopped,
    /// The postmaster died or could not start it.
    NotStarted,
}

/// Something a user is told about.
pub enum Problem<'a> {
    // --- The type ------------------------------------------------------------------------
    /// `sno_in`: text that is not an ID.
    InvalidText { input: &'a [u8], why: DecodeError },
    /// `sno_recv`: a binary value of the wrong length.
    BinaryLength(usize),
    /// `sno(bytea)`: a bytea value of the wrong length.
    ByteaLength(&'a [u8]),
    /// A timestamptz outside the range of the format.
    TimeOutOfRange(i64),
    /// `sno_from_parts`: a field that does not fit.
    Parts(PartsError),
    /// `sno_generate`: a meta outside 0..=255.
    Meta(i32),
    /// palloc failed.
    OutOfMemory(usize),

    // --- The generator: its prerequisites -------------------------------------------------
    /// sno is not in `shared_preload_libraries`.
    NotPreloaded,
    /// Preloaded, but the shared memory is missing (cannot happen after a normal start).
    NoSharedMemory,
    /// `sno_generate` on a server in recovery.
    GenerateInRecovery,
    /// `sno_generator_initialize` on a server in recovery.
    InitializeInRecovery,
    /// `sno_generator_initialize` by a non-superuser.
    InitializeNotSuperuser,

    // --- The generator: its durable state and lineage ------------------------------------
    /// No state file, and an explicit partition or a Citus node (`citus`).
    NoStateFile { citus: bool },
    /// An unusable state file, and an explicit partition or a Citus node (`citus`).
    BadStateFile { reason: &'a str, citus: bool },
    /// `sno_generator_initialize` without a valid state file while `sno.partition` is still
    /// what was in force when the file was found missing or unusable (`None`: derived, on a
    /// server with Citus).
    SamePartitionAfterLoss { partition: Option<u16>, citus: bool },
    /// The state file could not be written.
    WriteFailed(&'a std::io::Error),
    /// A copy configured with its original's explicit partition; `maybe_moved` when the copy
    /// was noticed at this start without a `backup_label` and its original used the partition
    /// itself (so a data directory moved while stopped may go on with it); `citus` on a server
    /// with Citus.
    Inherited {
        partition: u16,
        maybe_moved: bool,
        citus: bool,
    },
    /// A copy of a Citus node, started beside it, generating for its original's group.
    CitusCopy(u32),
    /// A Citus node group past the groups that have partitions.
    CitusGroupTooLarge(u32),
    /// Citus is installed but the server is not a node of a cluster yet (its port, for the
    /// HINT).
    CitusNotActivated(i32),
    /// This database's Citus metadata (`here`, as "group N" or "not a node") disagrees with the
    /// group the server goes on with (`server`), and no `sno.citus_database` names the
    /// deciding database.
    /// A parallel worker cannot read the node's Citus group, and nothing decided it yet.
    CitusParallelUnread,
    CitusDisagreement {
        database: &'a str,
        here: &'a str,
        server: &'a str,
    },
    /// The wait for the synchronous standbys to confirm the lineage record ending at `lsn` was
    /// cancelled (query cancel, `statement_timeout`, termination): no ID is handed out.
    SyncNotConfirmed { lsn: u64 },
    /// A WAL record of the `sno` resource manager that does not decode.
    BadWalRecord,
    /// The configured `sno.partition` is reserved (61440 up) and was never this lineage's live
    /// partition (`granted`: the allocator granted it); `citus` on a server with Citus.
    ReservedPartition {
        partition: u16,
        granted: bool,
        citus: bool,
    },

    // --- The reserved space and `sno_generate_at` --------------------------------------
    /// A copy that may run beside its original grants no reserved partition.
    GrantOnCopy,
    /// A restore loaded grants while sno was not preloaded (`sno_generator.unrecorded`): none
    /// is granted (nor leased from a new pool partition) until they are read back.
    GrantsUnrecorded { leases: bool },
    /// A publisher's grant arrived by logical replication where sno is not preloaded.
    ArrivalNotPreloaded(u16),
    /// The record of such a restore could not be written or removed.
    UnrecordedNotWritten(&'a std::io::Error),
    // --- Members of a replicating group ---------------------------------------------------
    /// Another member of a replicating group came first with this server's partition.
    MemberConflict {
        partition: u16,
        peer: u64,
        peer_made_ids: bool,
        explicit: bool,
        suggest: Option<u16>,
    },
    /// The partition changed (after such a refusal, or while the server has met members), and
    /// was not compared with every member yet.
    MemberUnchecked { was: u16, now: u16, refused: bool },
    /// `sno_member_hello()` by a role that is neither a superuser nor has REPLICATION.
    MemberHelloDenied,
    /// `sno_member_check()` by a non-superuser.
    MemberCheckNotSuperuser,
    /// Every reserved partition is granted or used.
    ReservedExhausted,
    /// The role was granted as many reserved partitions on this server as its limit allows.
    ReservedLimit { role: &'a str, limit: i32 },
    /// `sno_generate_at` on a Citus node, in a database without Citus's metadata.
    GenerateAtOnCitus,
    /// The Citus coordinator did not grant a worker's session a reserved partition.
    CoordinatorRefused { message: &'a str },
    /// A Citus coordinator with an explicit `sno.partition` (`explicit`), or on its group's
    /// reserved generation, has no share of the reserved range to grant from.
    CoordinatorWithoutShare { explicit: bool },
    /// `sno_reserved_relearn()` by a non-superuser.
    RelearnNotSuperuser,
    /// `sno_reserved_grant()` by a role that may not execute `sno_generate_at`.
    ReservedGrantDenied,
    /// `sno_reserved_grant()` on a server that is not a Citus coordinator.
    ReservedGrantNotCoordinator,
    // --- Partition leases ----------------------------------------------------------------
    /// A lease function on a standby.
    LeaseInRecovery,
    /// A NULL argument (its name).
    LeaseNull(&'a str),
    /// A TTL under 1 s or over `sno.lease_max_ttl`.
    LeaseBadTtl {
        ttl: &'a str,
        too_long: bool,
        max_s: i32,
        asked_s: i32,
        role: &'a str,
    },
    /// A holder that is empty or longer than `max` bytes (in the database's encoding).
    LeaseBadHolder { holder: &'a [u8], max: usize },
    /// A lease function on a server where sno is not preloaded.
    LeaseNotPreloaded,
    /// The lease registry's worker could not be started.
    LeaseRegistryNotStarted {
        why: StartFailure,
        max_worker_processes: i32,
        max_parallel_workers: i32,
        /// Parallel workers running when no slot was free.
        parallel_now: i32,
    },
    /// The role caused as many reserved partitions to be granted as `sno.reserved_limit` allows.
    LeasePoolLimit { role: &'a str, limit: i32 },
    /// A slice size that is not a power of two in 8..65536.
    LeaseBadSequences(i32),
    /// A copy that may run beside its original grants no lease.
    LeaseOnCopy,
    /// Leases on a Citus worker: the coordinator grants them.
    LeaseOnCitusWorker,
    /// This database's lease pool was restored from another server.
    LeasesRestored { max_ttl_s: i32 },
    /// The role holds as many active leases as `sno.lease_limit` allows.
    LeaseLimit { role: &'a str, limit: i32 },
    /// No lease of that number with that token.
    LeaseToken(i64),
    /// The renewal is refused: the holder must stop with it and acquire a new one.
    LeaseNotRenewed {
        lease: i64,
        why: crate::generator::lease::RenewRefusal,
        expires_at: &'a str,
    },
    /// `sno_lease_take_over()` by a non-superuser.
    LeaseTakeOverNotSuperuser,
    /// Every slice of the role's pool is leased and the share has no partition left.
    LeaseShareExhausted {
        share: u32,
        pool: usize,
        role: &'a str,
    },
    /// `sno.sequence_min` / `sno.sequence_max` do not make a usable slice (at server start).
    BadSlice { min: i32, max: i32, why: SliceError },

    // --- Time partitions (sql/sno_time_partitions.sql) ----------------------------------
    /// `sno_time_partition_bound`: a node tree that is not a partition bound (its text).
    NotAPartitionBound(&'a [u8]),
    /// `sno_time_partition_bound`: a partition bound that is not a RANGE bound of one column
    /// (`strategy`: PostgreSQL's letter, `columns`: the range bound's).
    NotARangeBound { strategy: u8, columns: usize },
    /// `sno_time_partition_bound`: a range bound of another type than sno (its name).
    BoundNotSno(&'a str),

    // --- The generator: the clock ---------------------------------------------------------
    /// The system clock is outside the range of the format.
    ClockOutOfRange,
    /// `sno.max_clock_wait` passed before the clock reached usable time.
    ClockWaitGaveUp {
        waited_ms: u128,
        until_pg_micros: i64,
        why: &'a str,
    },

    // --- Warnings ---------------------------------------------------------------------------
    /// A derived partition went on with a new partition after the state file was lost.
    NewDerivedPartition { lost: &'a str },
    /// A partition of the lineage was taken over.
    TookOver { partition: u16, by_take_over: bool },
    /// `sno_generator_initialize(force => true)` replaced an unusable file.
    ReplacingStateFile { reason: &'a str },
    /// The state file could not be written at start-up (kept in memory, written later).
    WriteAtStartFailed(&'a std::io::Error),
    /// The state file could not be read at start-up.
    StateFileUnusableAtStart { reason: &'a str },
}

impl Problem<'_> {
    /// What PostgreSQL shows for it.
    pub fn report(&self) -> Report {
        match self {
            Problem::InvalidText { input, why } => Report::new(
                Code::ERRCODE_INVALID_TEXT_REPRESENTATION,
                format!("invalid input syntax for type sno: {}", quoted_cut(input)),
            )
            .detail(why.to_string()),
            Problem::BinaryLength(n) => Report::new(
                Code::ERRCODE_INVALID_BINARY_REPRESENTATION,
                format!("invalid binary length for type sno: {n} bytes"),
            )
            .detail(format!("The binary form of a sno ID is exactly {LEN} bytes.")),
            Problem::ByteaLength(bytes) => Report::new(
                Code::ERRCODE_INVALID_BINARY_REPRESENTATION,
                format!(
                    "invalid length for type sno: bytea value {} has {} bytes",
                    bytea_text(bytes),
                    bytes.len()
                ),
            )
            .detail(format!("A sno ID is exactly {LEN} bytes.")),
            Problem::TimeOutOfRange(ts) => Report::new(
                Code::ERRCODE_DATETIME_FIELD_OVERFLOW,
                format!(
                    "timestamp out of range for type sno: \"{}\"",
                    timestamptz_text(*ts)
                ),
            )
            .detail(format!("A sno ID holds times from {RANGE}.")),
            Problem::Parts(e) => {
                let range = match e {
                    PartsError::Tick(_) => "0 or 1",
                    PartsError::Meta(_) => "0 to 255",
                    PartsError::Partition(_) | PartsError::Sequence(_) => "0 to 65535",
                    PartsError::Units(_) => "0 to 2^39-1",
                };
                Report::new(Code::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE, e.to_string())
                    .detail(format!("The value must be {range}."))
            }
            Problem::Meta(meta) => Report::new(
                Code::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
                format!("meta {meta} is out of range for type sno"),
            )
            .detail("The value must be 0 to 255."),
            Problem::OutOfMemory(size) => Report::new(Code::ERRCODE_OUT_OF_MEMORY, "out of memory")
                .detail(format!("Failed on request of size {size}.")),

            Problem::NotPreloaded => Report::new(
                Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                "sno_generate needs the sno library in shared_preload_libraries",
            )
            .hint("Add sno to shared_preload_libraries in postgresql.conf (shared_preload_libraries = 'sno') and restart the server."),
            Problem::NoSharedMemory => Report::new(
                Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                "sno: shared memory is not initialised",
            )
            .hint("Restart the server."),
            Problem::GenerateInRecovery => Report::new(
                Code::ERRCODE_READ_ONLY_SQL_TRANSACTION,
                "cannot generate sno IDs during recovery",
            )
            .detail("A standby makes IDs once it is promoted; until then its primary makes them.")
            .hint("Generate IDs on the primary."),
            Problem::InitializeInRecovery => Report::new(
                Code::ERRCODE_READ_ONLY_SQL_TRANSACTION,
                "cannot initialize the sno generator during recovery",
            )
            .hint("Run it once this server is promoted."),
            Problem::InitializeNotSuperuser => Report::new(
                Code::ERRCODE_INSUFFICIENT_PRIVILEGE,
                "only superusers can initialize the sno generator",
            ),

            Problem::NoStateFile { citus } => Report::new(
                Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                format!("sno generator has no state file (\"{FILE_NAME}\" in the data directory)"),
            )
            .detail(if *citus {
                "The file records up to when this server's partitions were used and which generations of its Citus group's partitions it used, so that no ID is repeated."
            } else {
                "The file records up to when this server's partition was used, so that a restart with the clock set back cannot repeat IDs."
            })
            .hint(format!("If the file was moved away, put it back (after pg_upgrade: copy the one in the old data directory) and run SELECT sno_generator_initialize(); as a superuser; a copy from an older backup is not enough. Otherwise first give this server {}, and reload the configuration, then run SELECT sno_generator_initialize();.", new_partition(*citus))),
            Problem::BadStateFile { reason, citus } => Report::new(
                Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                format!("cannot use the sno generator state file \"{FILE_NAME}\": {reason}"),
            )
            .detail("Without it a restart with the clock set back could repeat IDs, so none are made.")
            .hint(format!("Give this server {}, and reload the configuration, then run SELECT sno_generator_initialize(force => true); as a superuser. A copy of the file from a backup is not enough: IDs made after it could repeat.", new_partition(*citus))),
            Problem::SamePartitionAfterLoss { partition, citus } => Report::new(
                Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                match partition {
                    Some(p) => format!("cannot initialize the sno generator with partition {p}: it was in force when the state file was lost"),
                    None => "cannot initialize the sno generator with its Citus group's partitions: they were in force when the state file was lost".to_string(),
                },
            )
            .detail("The lost file recorded up to when those partitions were used; without it, IDs made now with them could repeat earlier ones.")
            .hint(format!("Give this server {}, and reload the configuration, then run this again. Only if no other server makes IDs with the old partition and no ID made with it can ever be repeated (every one of them is older than the clock now and the clock will never be set back), run SELECT sno_generator_initialize(force => true, take_over => true); instead.", new_partition(*citus))),
            Problem::WriteFailed(e) => Report::new(
                Code::ERRCODE_IO_ERROR,
                format!("could not write sno generator state file \"{FILE_NAME}\": {e}"),
            )
            .detail("No ID is made beyond the time recorded in that file.")
            .hint("Check the data directory's free space and permissions."),
            Problem::Inherited {
                partition: p,
                maybe_moved,
                citus,
            } => {
                let first = format!("Give this server {}, in postgresql.conf or with ALTER SYSTEM, and reload the configuration.", new_partition(*citus));
                let r = Report::new(
                    Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                    format!("this server is a copy of one that made IDs with partition {p}"),
                )
                .detail(format!("sno.partition is {p} here too; two servers making IDs with one partition could repeat IDs."));
                if *maybe_moved {
                    r.hint(format!("{first} If instead this data directory was moved or copied while its server was stopped, and the old directory will never be started again, run SELECT sno_generator_initialize(take_over => true); as a superuser."))
                } else {
                    r.hint(first)
                }
            }
            Problem::CitusCopy(g) => Report::new(
                Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                format!("this server is a copy of a node of Citus group {g}"),
            )
            .detail(format!("Group {g}'s partitions belong to the node it was copied from (or to that node's promoted standby); two servers making IDs with one partition could repeat IDs."))
            .hint(format!("Give this server its own sno.partition, {CITUS_TOP}, and reload the configuration. If it replaces the node it was copied from, and that node and its standbys will never run again, run SELECT sno_generator_initialize(take_over => true); as a superuser.")),
            Problem::CitusGroupTooLarge(g) => Report::new(
                Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                format!("Citus node group {g} has no sno partitions"),
            )
            .detail(format!("sno gives the Citus node groups 0 to {} fifteen partitions each (group + 4096 * generation, generations 0 to 14), and this node's group number is past them.", crate::generator::citus::GROUPS - 1))
            .hint(format!("Give this node its own sno.partition, {CITUS_TOP}, and reload the configuration.")),
            Problem::CitusNotActivated(port) => Report::new(
                Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                "this server has Citus but is not a node of a Citus cluster yet",
            )
            .detail("sno gives each Citus node group its own partitions, and this server has no group yet: pg_dist_local_group reads 0 and it knows no nodes.")
            .hint(format!("If this server is the coordinator, run SELECT citus_set_coordinator_host('<host>', {port}); here, with <host> the name the workers reach it by. If it is to be a worker, run SELECT citus_add_node('<host>', {port}); on the coordinator, with <host> the name the coordinator reaches it by. Otherwise give it its own sno.partition, {CITUS_TOP}, and reload the configuration.")),
            Problem::CitusParallelUnread => Report::new(
                Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                "sno_generate cannot read this server's Citus node group in a parallel query",
            )
            .detail("No session has made an ID in this database since the server started, so none has read the node's group in Citus's catalog yet, and a query running in parallel cannot read it.")
            .hint(format!("Run SET {PARALLEL_DEBUG} = off; SELECT sno_generate(0); in this database: that first ID, made outside a parallel query, reads the group (or its error says why this server makes no IDs). Then run your query again.")),
            Problem::CitusDisagreement {
                database,
                here,
                server,
            } => Report::new(
                Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                format!("the Citus metadata of database {} disagrees with this server's Citus node group", quoted(database.as_bytes())),
            )
            .detail(format!("Here this server is {here}; it makes IDs as {server}, which another database's Citus metadata or this server's lineage says. Only one database decides a node's group."))
            .hint("Set sno.citus_database to the name of the database that holds this node's Citus metadata, in postgresql.conf or with ALTER SYSTEM, and reload the configuration: only that database's metadata then decides the node's group, and sessions in every other database make IDs as it says."),
            Problem::BadSlice { min, max, why } => {
                let detail = match why {
                    SliceError::Reversed => {
                        "sno.sequence_min must be below sno.sequence_max.".to_string()
                    }
                    _ => format!(
                        "The slice holds sno.sequence_max - sno.sequence_min + 1 sequence \
                         numbers per 4 ms unit, at least {MIN_SLICE}."
                    ),
                };
                // Only the bounds swapped is proposed as numbers (the same numbers, in order):
                // any other slice could overlap another generator's on the partition.
                let set = match (*max, *min) {
                    (lo, hi) if *min > *max && hi - lo + 1 >= MIN_SLICE as i32 => {
                        format!("Set sno.sequence_min = {lo} and sno.sequence_max = {hi} in postgresql.conf,")
                    }
                    _ => format!("Set sno.sequence_min and sno.sequence_max in postgresql.conf to a slice of at least {MIN_SLICE} numbers (sno.sequence_max at least sno.sequence_min + {}) that no other generator of this server's partition uses (a muyo/sno generator's own slice needs at least {MIN_PEER_SLICE}), or delete both lines there if no other generator shares the partition;", MIN_SLICE - 1),
                };
                Report::new(
                    Code::ERRCODE_INVALID_PARAMETER_VALUE,
                    format!("invalid sequence slice for sno: sno.sequence_min = {min}, sno.sequence_max = {max}"),
                )
                .detail(detail)
                .hint(format!(
                    "{set} delete any sno.sequence_min or sno.sequence_max line ALTER SYSTEM left in postgresql.auto.conf (it overrides postgresql.conf), and start the server."
                ))
            }
            Problem::NotAPartitionBound(tree) => Report::new(
                Code::ERRCODE_INVALID_PARAMETER_VALUE,
                format!("sno_time_partition_bound: node tree {} is not a partition bound", quoted_cut(tree)),
            )
            .detail("It reads the bound of a partition, the column relpartbound of the partition's row in pg_class."),
            Problem::NotARangeBound { strategy, columns } => Report::new(
                Code::ERRCODE_WRONG_OBJECT_TYPE,
                format!(
                    "sno_time_partition_bound: {}, not a RANGE bound of one column",
                    match strategy {
                        b'r' => format!("a RANGE partition bound of {columns} columns"),
                        b'l' => "a LIST partition bound".to_string(),
                        b'h' => "a HASH partition bound".to_string(),
                        s => format!("a partition bound of strategy \"{}\"", s.escape_ascii()),
                    }
                ),
            ),
            Problem::BoundNotSno(type_name) => Report::new(
                Code::ERRCODE_DATATYPE_MISMATCH,
                format!("sno_time_partition_bound: a partition bound of type {type_name}, not sno"),
            )
            .detail("It reads the bounds of tables partitioned by RANGE on one sno column."),
            Problem::SyncNotConfirmed { lsn } => Report::new(
                Code::ERRCODE_QUERY_CANCELED,
                "canceling sno_generate: no synchronous standby confirmed the generator's bound",
            )
            .detail(format!(
                "No ID was handed out. The bound covering the next IDs is flushed locally (WAL location {:X}/{:X}), but the wait for the synchronous standbys (synchronous_standby_names) to confirm it was canceled; a standby promoted now could make an ID handed out now again.",
                lsn >> 32,
                *lsn as u32
            ))
            .hint("Check that a synchronous standby is connected and streaming (SELECT application_name, state, sync_state FROM pg_stat_replication;); sno_generate goes on as soon as one confirms, as commits do."),
            Problem::BadWalRecord => Report::new(
                Code::ERRCODE_DATA_CORRUPTED,
                "sno: invalid lineage record in WAL",
            ),
            Problem::ReservedPartition {
                partition,
                granted,
                citus,
            } => Report::new(
                Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                format!("sno.partition {partition} is in the reserved range 61440-65535"),
            )
            .detail(if *granted {
                format!("Partition {partition} was granted to sno_generate_at: IDs made for past times use it, and a generator using it too could repeat them.")
            } else {
                "sno reserves partitions 61440-65535 for IDs made for past times (sno_generate_at); a live generator that used one could repeat them. Only a server that already made IDs with such a partition before it was reserved keeps it.".to_string()
            })
            .hint(format!("Give this server {}, in postgresql.conf or with ALTER SYSTEM, and reload the configuration.", new_partition(*citus))),

            Problem::GrantOnCopy => Report::new(
                Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                "this server is a copy of another and grants no reserved sno partition",
            )
            .detail("sno_generate_at makes IDs with a reserved partition granted to its session. The server this one was copied from may grant the same partitions, so a copy running beside it grants none until it is promoted or replaces its original. A server that started without its generator state file (lost, or not copied by pg_upgrade) is refused the same way: it no longer knows which partitions were granted.")
            .hint("Make IDs for past times on the server this one was copied from. If this server replaces it, and that server and its standbys will never make IDs again, run SELECT sno_generator_initialize(take_over => true); as a superuser. If instead this server lost its state file, first run SELECT sno_reserved_relearn(); as a superuser in every database of this server that has sno, then that."),
            Problem::GrantsUnrecorded { leases } => Report::new(
                Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                if *leases {
                    "this server grants no sno partition lease until the grants a restore loaded are read back"
                } else {
                    "this server grants no reserved sno partition until the grants a restore loaded are read back"
                },
            )
            .detail(format!("A restore loaded a database's reserved grants (sno_reserved_grants, the lease pool) while sno was not preloaded, so this server did not record them (the file \"{}\" in the data directory says so); a partition granted now could be one their rows use.", crate::generator::unrecorded::FILE_NAME))
            .hint("As a superuser, run SELECT sno_reserved_relearn(); in every database of this server that has sno, then, in one of them, SELECT sno_generator_initialize(take_over => true);"),
            Problem::ArrivalNotPreloaded(p) => Report::new(
                Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                format!("cannot apply another server's grant of reserved sno partition {p}: sno is not preloaded here"),
            )
            .detail("Rows of sno's own tables that arrive by logical replication are kept out, and the reserved partitions they name are recorded as granted, so that this server never grants them; without the sno library loaded at start-up there is nothing to record them in. The apply is retried.")
            .hint("Add sno to shared_preload_libraries in postgresql.conf (shared_preload_libraries = 'sno') and restart the server; the replication goes on then."),
            Problem::MemberConflict {
                partition,
                peer,
                peer_made_ids,
                explicit,
                suggest,
            } => Report::new(
                Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                format!("sno partition {partition} is also used by the server with system identifier {peer}, which replicates with this one"),
            )
            .detail(format!(
                "Servers that exchange rows by logical replication make the same IDs if they share a partition. That server came first ({}), so this one makes no ID with partition {partition}: sno_generate, sno_generate_at and the lease functions are refused here until this server's {} changes. That server goes on.",
                if *peer_made_ids { "it made IDs with the partition" } else { "neither server made IDs with it, and its cluster is older" },
                if *explicit { "sno.partition" } else { "derived partition" }
            ))
            .hint(match suggest {
                Some(p) => format!("Give this server a partition no other server uses ({p}: none of the servers it met uses it); as a superuser, run ALTER SYSTEM SET sno.partition = {p}; then SELECT pg_reload_conf(); then, once SHOW sno.partition says {p} (the reload takes a moment), compare it with every member before any ID is made with it: SELECT * FROM sno_member_check();"),
                None => "Give this server a partition no other server uses; as a superuser, run ALTER SYSTEM SET sno.partition = <a number below 61440>; then SELECT pg_reload_conf(); then, once SHOW sno.partition says it, compare it with every member before any ID is made with it: SELECT * FROM sno_member_check();".to_string(),
            }),
            Problem::MemberUnchecked { was, now, refused } => Report::new(
                Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                format!("sno partition {now} is not compared with the members of this server's replicating group yet"),
            )
            .detail(if *refused {
                format!("Partition {was} was refused here (another member came first with it), and sno.partition is now {now}. No ID is made with {now} until every subscription's publisher was compared with it, so that two refused servers that took the same new partition never both make IDs with it.")
            } else {
                format!("sno.partition changed from {was} to {now} while this server replicates with other members that have sno. No ID is made with {now} until every subscription's publisher was compared with it: another member may use it.")
            })
            .hint("As a superuser, SELECT * FROM sno_member_check(); (sno also runs it every 10 seconds): once every row says apart or goes on, the next call uses the new partition. A row that says failed is a publisher that did not answer: bring it back, or disable that subscription (ALTER SUBSCRIPTION ... DISABLE), then run the check again."),
            Problem::MemberHelloDenied => Report::new(
                Code::ERRCODE_INSUFFICIENT_PRIVILEGE,
                "permission denied for sno_member_hello()",
            )
            .detail("Another server's sno calls it over its subscription's connection to compare partitions; what it is told can make this server refuse its own partition, so only a superuser or a role with the REPLICATION attribute may call it.")
            .hint("Connect as the role the subscription connects as (one with REPLICATION, or a superuser)."),
            Problem::MemberCheckNotSuperuser => Report::new(
                Code::ERRCODE_INSUFFICIENT_PRIVILEGE,
                "only a superuser may run sno_member_check()",
            )
            .detail("It connects to every subscription's publisher with the subscription's connection string, which holds its credentials.")
            .hint("Run it as a superuser; sno runs the same check every 10 seconds (the sno member check worker)."),
            Problem::UnrecordedNotWritten(e) => Report::new(
                Code::ERRCODE_IO_ERROR,
                format!("could not write or remove \"{}\": {e}", crate::generator::unrecorded::FILE_NAME),
            )
            .detail("The file records that a restore loaded reserved sno grants while sno was not preloaded; without it, this server could grant their partitions again once sno is preloaded.")
            .hint("Check the data directory's free space and permissions, then run the restore (or the statement) again."),
            Problem::ReservedExhausted => Report::new(
                Code::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
                "no reserved sno partition is left to grant",
            )
            .detail("Each session that calls sno_generate_at is granted one of the 2048 reserved partitions below the lease region (61440-63487) for good, and every one is granted or used in this server's lineage; see the sno_reserved view."),
            Problem::ReservedLimit { role, limit } => Report::new(
                Code::ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
                format!("role {} has used its limit of {limit} reserved sno partitions", quoted(role.as_bytes())),
            )
            .detail("Each session that calls sno_generate_at is granted a reserved partition for good; every grant to the role on this server (on Citus, by the coordinator), in any database and whether or not its transaction committed, counts against sno.reserved_limit.")
            .hint(format!("A superuser can raise the role's limit: ALTER ROLE {} SET sno.reserved_limit = {}; it counts from the role's next call, in every session. Calls in one session share its partition: make many IDs per session.", crate::pg::gucs::alter_role_target("sno.reserved_limit", role, quote_ident(role)), (*limit).max(0).saturating_mul(2).clamp(1, 4096))),
            Problem::GenerateAtOnCitus => Report::new(
                Code::ERRCODE_FEATURE_NOT_SUPPORTED,
                "sno_generate_at on a Citus node runs only in the database that holds Citus's metadata",
            )
            .detail("On a Citus cluster the coordinator grants the reserved partitions of every node, through the citus extension of that database; this database has no citus extension.")
            .hint("Call sno_generate_at in the database where the citus extension is installed."),
            Problem::CoordinatorRefused { message } => Report::new(
                Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                format!("the Citus coordinator granted no reserved sno partition: {message}"),
            )
            .detail("On a Citus worker, sno_generate_at is granted its reserved partition by the coordinator (sno_reserved_grant() there, through run_command_on_coordinator), so that no two nodes of the cluster are ever granted one."),
            Problem::CoordinatorWithoutShare { explicit } => {
                let r = Report::new(
                    Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                    "this Citus coordinator grants no reserved sno partition",
                )
                .detail(format!("The coordinator grants every node's reserved partitions from the share of its group's current generation, which a promotion changes, so that a coordinator promoted after an asynchronous failover never grants what the old one may have granted. {}", if *explicit {
                    "With an explicit sno.partition the coordinator has no generation."
                } else {
                    "This coordinator makes IDs with its group's reserved generation 15 (used before sno 0.6.0), which has no share."
                }));
                if *explicit {
                    r.hint("If no other cluster's IDs meet this cluster's (what an explicit partition on a Citus node is for), remove sno.partition from the coordinator's configuration (ALTER SYSTEM RESET sno.partition; if it was set with ALTER SYSTEM, else delete its line in postgresql.conf), and reload the configuration: the coordinator then makes IDs with its Citus group's partitions, and grants.")
                } else {
                    r
                }
            }
            Problem::RelearnNotSuperuser => Report::new(
                Code::ERRCODE_INSUFFICIENT_PRIVILEGE,
                "only superusers can run sno_reserved_relearn",
            ),
            Problem::ReservedGrantDenied => Report::new(
                Code::ERRCODE_INSUFFICIENT_PRIVILEGE,
                "permission denied for function sno_reserved_grant",
            )
            .detail("It grants reserved partitions to roles that may execute sno_generate_at."),
            Problem::ReservedGrantNotCoordinator => Report::new(
                Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                "sno_reserved_grant() runs only on a Citus coordinator",
            )
            .detail("A Citus worker's sno_generate_at calls it on its coordinator; elsewhere sno_generate_at grants from this server."),

            Problem::LeaseInRecovery => Report::new(
                Code::ERRCODE_READ_ONLY_SQL_TRANSACTION,
                "sno partition leases are granted, renewed and released only on a primary",
            )
            .detail("This server is in recovery (a standby): the registry's primary records leases.")
            .hint("Connect to the primary server and call it there."),
            Problem::LeaseNull(arg) => Report::new(
                Code::ERRCODE_NULL_VALUE_NOT_ALLOWED,
                format!("{arg} must not be NULL"),
            ),
            Problem::LeaseBadTtl {
                ttl,
                too_long,
                max_s,
                asked_s,
                role,
            } => {
                let r = Report::new(
                    Code::ERRCODE_INVALID_PARAMETER_VALUE,
                    format!("lease TTL {ttl} is out of range"),
                )
                .detail(format!("A lease's TTL is at least 1 s and at most sno.lease_max_ttl, {max_s} s for this session."));
                if *too_long && *asked_s > 86_400 {
                    // No setting allows more than a day: a shorter TTL, renewed, is the answer.
                    r.hint(format!("Ask for ttl => '{max_s} s' or less (renewals extend a lease as long as its holder runs); no role may have a TTL over 1 day."))
                } else if *too_long {
                    let raise_to = (*asked_s).max(max_s.saturating_mul(2)).min(86_400);
                    r.hint(format!("Ask for ttl => '{max_s} s' or less (renewals extend a lease), or have a superuser raise the role's maximum: ALTER ROLE {} SET sno.lease_max_ttl = '{raise_to}s'; (it counts from the next call; at most 86400s).", crate::pg::gucs::alter_role_target("sno.lease_max_ttl", role, quote_ident(role))))
                } else {
                    r.hint("Ask for ttl => '1 s' or more; '1 min' suits most services.")
                }
            }
            Problem::LeaseBadHolder { holder, max } => {
                if holder.is_empty() {
                    Report::new(Code::ERRCODE_INVALID_PARAMETER_VALUE, "a sno lease holder must not be empty")
                        .hint("Name the process that holds the lease, e.g. holder => 'billing-api@host-3/4711'.")
                } else {
                    Report::new(
                        Code::ERRCODE_STRING_DATA_RIGHT_TRUNCATION,
                        format!("sno lease holder {} is too long", quoted_cut(holder)),
                    )
                    .detail(format!("A holder names the process that holds the lease in at most {max} bytes; the registry keeps it with the lease."))
                    .hint(format!("Give a shorter holder, e.g. the host and process ID, at most {max} bytes."))
                }
            }
            Problem::LeaseNotPreloaded => Report::new(
                Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                "sno partition leases need the sno library in shared_preload_libraries",
            )
            .hint("Add sno to shared_preload_libraries in postgresql.conf (shared_preload_libraries = 'sno') and restart the server."),
            Problem::LeaseRegistryNotStarted { why, max_worker_processes, max_parallel_workers, parallel_now } => {
                let detail = "Leases are granted, renewed and released by a background worker of the database (one per database while calls come, gone after a second without), in a transaction of its own, so that no caller's rollback or open transaction can undo or hold them.";
                match why {
                    StartFailure::NoSlot => {
                        // Every slot was taken: by parallel workers (which a lower
                        // max_parallel_workers leaves one free of, after a reload), or by other
                        // background workers (a larger max_worker_processes, after a restart).
                        let r = Report::new(
                            Code::ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
                            format!("could not start the sno lease registry's worker: no background worker slot was free for 5 s (max_worker_processes = {max_worker_processes}, {parallel_now} taken by parallel workers)"),
                        )
                        .detail(detail);
                        if *parallel_now > 0 {
                            let keep = (*parallel_now - 1).min(*max_parallel_workers - 1).max(0);
                            r.hint(format!("Keep a slot free of parallel workers: ALTER SYSTEM SET max_parallel_workers = {keep}; SELECT pg_reload_conf(); (or raise max_worker_processes by one, which needs a restart), then call it again."))
                        } else {
                            r.hint(format!("Raise max_worker_processes by one for each database whose leases are in use at once, then restart the server: ALTER SYSTEM SET max_worker_processes = {};", max_worker_processes.saturating_add(1)))
                        }
                    }
                    StartFailure::Stopped => Report::new(
                        Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                        "the sno lease registry's worker of this database stopped as it started",
                    )
                    .detail(detail)
                    .hint("The server log says why (a database that allows no connections, ALTER DATABASE ... ALLOW_CONNECTIONS false, or one being dropped, cannot lease)."),
                    StartFailure::NotStarted => Report::new(
                        Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                        "the postmaster did not start the sno lease registry's worker",
                    )
                    .detail(detail)
                    .hint("The server log says why; call it again."),
                }
            }
            Problem::LeasePoolLimit { role, limit } => Report::new(
                Code::ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
                format!("role {} has caused its limit of {limit} reserved sno partitions to be granted", quoted(role.as_bytes())),
            )
            .detail("Every slice of the role's lease partitions is leased, and a new pool partition would be granted to this role. A role's leases come only from the partitions granted to it; these and its sno_generate_at sessions' partitions count against its sno.reserved_limit, for good.")
            .hint(format!("Wait for leases to end, or ask for smaller slices (sequences => 64), or have a superuser raise the role's limit: ALTER ROLE {} SET sno.reserved_limit = {}; (it counts from the next call).", crate::pg::gucs::alter_role_target("sno.reserved_limit", role, quote_ident(role)), (*limit).max(0).saturating_mul(2).clamp(1, 4096))),
            Problem::LeaseBadSequences(n) => Report::new(
                Code::ERRCODE_INVALID_PARAMETER_VALUE,
                format!("a lease of {n} sequence numbers is not possible"),
            )
            .detail("A lease's sequence slice is a power of two from 8 to 65536 numbers (muyo/sno's generator needs at least 6); the holder makes at most that many IDs per 4 ms per meta byte.")
            .hint(format!("Ask for sequences => {}.", ((*n).clamp(8, 65536) as u32).next_power_of_two())),
            Problem::LeaseOnCopy => Report::new(
                Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                "this server is a copy of another and grants no sno partition lease",
            )
            .detail("The server this one was copied from may grant the same slices, so a copy running beside it grants none until it is promoted or replaces its original.")
            .hint("Acquire leases from the server this one was copied from. If this server replaces it: stop that server and its standbys for good, wait until every lease they granted has ended (on it, before the stop, SELECT max(expires_at) FROM sno_leases WHERE state IN ('active', 'released'); tells when), then run SELECT sno_generator_initialize(take_over => true); as a superuser."),
            Problem::LeaseOnCitusWorker => Report::new(
                Code::ERRCODE_FEATURE_NOT_SUPPORTED,
                "sno partition leases are granted by the Citus coordinator",
            )
            .detail("On a Citus cluster the coordinator grants every lease, so that no two nodes hand out one slice.")
            .hint("Connect to the coordinator and call it there."),
            Problem::LeasesRestored { max_ttl_s } => Report::new(
                Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                "this database's sno lease pool was restored from another server",
            )
            .detail("The server it was dumped from may still grant leases, and may have granted partitions after the dump that this server cannot know of, so this database grants none until a superuser says that server is gone.")
            .hint(format!("Acquire leases from the server the dump came from. If that server will never grant leases again (stopped, or sno dropped there) and every lease it granted has ended (sno.lease_max_ttl after its last grant: {max_ttl_s} s unless a role there has a longer one, at most a day), run SELECT sno_lease_take_over(); as a superuser in this database.")),
            Problem::LeaseLimit { role, limit } => Report::new(
                Code::ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
                format!("role {} holds its limit of {limit} sno partition leases", quoted(role.as_bytes())),
            )
            .detail("A lease counts until its window ends, released or not (its slice stays taken until then); sno_leases shows them. The limit is per role and per database, and bounds the role's rows in the registry too: ended leases are forgotten to make room.")
            .hint(format!("Wait for the role's leases to end, or have a superuser raise the role's limit: ALTER ROLE {} SET sno.lease_limit = {}; (it counts from the next call).", crate::pg::gucs::alter_role_target("sno.lease_limit", role, quote_ident(role)), (*limit).max(0).saturating_mul(2).clamp(1, 65536))),
            Problem::LeaseToken(lease) => Report::new(
                Code::ERRCODE_INSUFFICIENT_PRIVILEGE,
                format!("no sno partition lease {lease} with this token"),
            )
            .detail("Renewing or releasing a lease takes the token sno_lease_acquire returned with it.")
            .hint("Stop making IDs with that lease by its expires_at at the latest, and acquire a new one: SELECT * FROM sno_lease_acquire(holder => ..., ttl => ...);"),
            Problem::LeaseNotRenewed { lease, why, expires_at } => {
                use crate::generator::lease::RenewRefusal;
                Report::new(
                    Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                    format!("sno partition lease {lease} cannot be renewed: {}", match why {
                        RenewRefusal::Released => "it was released",
                        RenewRefusal::Expired => "it has ended",
                        RenewRefusal::HandedOn => "its slice was granted again after its end",
                        RenewRefusal::NotOurs => "it was granted before a failover, copy or restore of this server",
                    }),
                )
                .detail(format!("Its window ends at {expires_at}: its holder makes no ID with it from then on. {}", match why {
                    RenewRefusal::NotOurs => "A promoted standby never extends what its old primary granted, since the old primary may have granted more than it ever sent.",
                    _ => "A lease is renewed only before it ends, and only while no later lease shares its slice.",
                }))
                .hint("Acquire a new lease (SELECT * FROM sno_lease_acquire(holder => ..., ttl => ...);) and make IDs with it instead.")
            }
            Problem::LeaseShareExhausted { share, pool, role } => {
                let r = Report::new(
                    Code::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
                    format!("no sno partition lease is free for role {}: every slice of its {pool} lease partitions is leased, and share {share} of the reserved range has no partition left", quoted(role.as_bytes())),
                )
                .detail("Each role leases only from the partitions granted to it, for good, so that no role's leases take another's slices; new partitions come only from the WAL timeline's share (timeline mod 15), so that a promoted standby never grants what its old primary may have granted. SELECT grantee, count(DISTINCT partition) FROM sno_leases GROUP BY 1; shows which roles' pools hold the share; sno_lease_space what is left.");
                if *pool > 0 {
                    r.hint("Ask for smaller slices (sequences => 64 holds 1024 leases a partition) or release leases that are no longer used: slices come back as their leases end.")
                } else {
                    r.hint("Lease for this service under a role that has partitions (its owner can GRANT it to this role, then SET ROLE to it before the call), and, as a superuser, lower sno.reserved_limit for the roles that hold many, so that the next share (after a promotion) is not used up too.")
                }
            }
            Problem::LeaseTakeOverNotSuperuser => Report::new(
                Code::ERRCODE_INSUFFICIENT_PRIVILEGE,
                "only superusers can run sno_lease_take_over",
            ),

            Problem::ClockOutOfRange => Report::new(
                Code::ERRCODE_DATETIME_FIELD_OVERFLOW,
                "the system clock is out of range for type sno",
            )
            .detail(format!("sno IDs hold times from {RANGE}."))
            .hint("Check the server's clock."),
            Problem::ClockWaitGaveUp {
                waited_ms,
                until_pg_micros,
                why,
            } => Report::new(
                Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                format!(
                    "sno_generate gave up after waiting {waited_ms} ms for the system clock to reach {}",
                    timestamptz_text(*until_pg_micros)
                ),
            )
            .detail(format!("{why}; making an ID now could repeat one already made."))
            .hint("Check the server's clock (NTP). sno.max_clock_wait sets how long to wait."),

            Problem::NewDerivedPartition { lost } => Report::new(
                Code::ERRCODE_SUCCESSFUL_COMPLETION,
                format!("sno: {lost}; IDs are now made with a new derived partition, so they cannot repeat earlier ones"),
            ),
            Problem::TookOver {
                partition,
                by_take_over,
            } => Report::new(
                if *by_take_over {
                    Code::ERRCODE_WARNING
                } else {
                    Code::ERRCODE_SUCCESSFUL_COMPLETION
                },
                format!(
                    "sno: partition {partition} was used before this server's {}; IDs go on after the last of them this server knows of",
                    if *by_take_over {
                        "copy was taken over (take_over => true)"
                    } else {
                        "promotion, point-in-time restore or upgrade"
                    }
                ),
            ),
            Problem::ReplacingStateFile { reason } => Report::new(
                Code::ERRCODE_WARNING,
                format!("sno: replacing the unusable generator state file ({reason}); what this server knows is kept"),
            ),
            Problem::WriteAtStartFailed(e) => Report::new(
                Code::ERRCODE_WARNING,
                format!("sno: could not write the generator state file: {e}"),
            ),
            Problem::StateFileUnusableAtStart { reason } => Report::new(
                Code::ERRCODE_WARNING,
                format!("sno: cannot use the generator state file {FILE_NAME}: {reason}; see the HINT of sno_generate"),
            ),
        }
    }
}

/// Raises `p` as an ERROR.
#[cold]
#[inline(never)]
pub fn raise(p: Problem<'_>) -> ! {
    p.report().raise()
}

/// Reports `p` as a WARNING and goes on.
#[cold]
#[inline(never)]
pub fn warn(p: Problem<'_>) {
    p.report().warn()
}

/// Messages noted under the shard table's lock, written once it is released
/// ([`crate::pg::shmem::locked`]): nothing is written to a client or the log while the lock
/// is held, where a slow client would hold up every generating session.
struct Deferred(core::cell::RefCell<Vec<(Report, bool)>>);
// SAFETY: a PostgreSQL backend runs SQL on one thread.
unsafe impl Sync for Deferred {}
static DEFERRED: Deferred = Deferred(core::cell::RefCell::new(Vec::new()));

/// Notes a server-level event (a takeover at promotion, a new derived partition after a lost
/// state file) for the server log only (LOG_SERVER_ONLY): it concerns the server, not the
/// session whose call happened to notice it.
#[cold]
#[inline(never)]
pub fn log_later(p: Problem<'_>) {
    DEFERRED.0.borrow_mut().push((p.report(), false));
}

/// Notes a WARNING for the session that asked for what it reports (an administrator's
/// `sno_generator_initialize`).
#[cold]
#[inline(never)]
pub fn warn_later(p: Problem<'_>) {
    DEFERRED.0.borrow_mut().push((p.report(), true));
}

/// How many messages are noted and not yet written (for the in-database tests).
#[cfg(any(test, feature = "pg_test"))]
pub fn deferred_len() -> usize {
    DEFERRED.0.borrow().len()
}

/// Writes what [`log_later`] and [`warn_later`] noted. Outside the lock.
#[inline]
pub fn emit_deferred() {
    if DEFERRED.0.borrow().is_empty() {
        return;
    }
    let noted: Vec<(Report, bool)> = DEFERRED.0.borrow_mut().drain(..).collect();
    for (r, to_session) in noted {
        if to_session {
            r.warn();
        } else {
            r.log_server_only();
        }
    }
}

/// A role name as an SQL identifier: double-quoted, inner quotes doubled.
fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The explicit partition a HINT proposes after a lost state file.
fn new_partition(citus: bool) -> String {
    if citus {
        format!("its own sno.partition, {CITUS_TOP}")
    } else {
        NEW_PARTITION.to_string()
    }
}

/// A bytea value as `bytea_out` prints it (hex format), for error messages; long values are
/// cut so a mistaken multi-megabyte cast does not produce a multi-megabyte message.
fn bytea_text(bytes: &[u8]) -> String {
    const SHOWN: usize = 32;
    let mut s = String::from("\"\\x");
    for b in bytes.iter().take(SHOWN) {
        s.push_str(&format!("{b:02x}"));
    }
    if bytes.len() > SHOWN {
        s.push_str("...");
    }
    s.push('"');
    s
}
