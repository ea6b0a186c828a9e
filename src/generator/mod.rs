//! The generator's pure decisions, with no PostgreSQL in them (the extension's glue in `pg`
//! gives them shared memory, a lock, a clock, files and WAL):
//! - [`bound`]: the durable bound ([`bound::Persisted`]) every other room speaks: what is known
//!   on disk of the IDs a timeline made, on both tick-tock timelines, and how two are merged;
//! - [`cursor`]: the server's shared cursor, one atomic word `sno_generate` takes IDs from with
//!   no lock, and the slice of the sequence pool it numbers from;
//! - [`partition`]: the partition a server derives when `sno.partition` is not set, from the
//!   cluster's system identifier and the state file's random instance number;
//! - [`timeline`]: the tick-tock timeline that opens the shared cursor on a unit, which never
//!   gives out an ID twice, whatever the clock does;
//! - [`state_file`]: the durable state file (`sno_generator.state`), encoded and decoded;
//! - [`lost`]: the record of a lost state file (`sno_generator.lost`): the partition
//!   configured when a start found it missing or unusable;
//! - [`unrecorded`]: the record of grants a restore loaded while sno was not preloaded
//!   (`sno_generator.unrecorded`), which blocks grants until they are read back;
//! - [`wal_record`]: the payload of the `sno` WAL record (a lineage bound), encoded and decoded,
//!   every field checked before redo merges it;
//! - [`citus`]: the partitions of a Citus cluster's node groups, two groups never sharing one;
//! - [`reserved`]: the reserved partitions (61440 up), granted by the lineage's allocator, and
//!   the cursor of `sno_generate_at`, which stamps any unit of a grant without repeating one;
//! - [`forecast`]: what the next `sno_generate` would do, told without doing it (the views);
//! - [`lease`]: partition leases for generators outside the database: which (partition, slice,
//!   window) the registry grants, renews and refuses, so that no two leases can stamp one ID;
//! - [`server`]: a running server's generator: when to judge, write and refuse, and the slow
//!   path of `sno_generate`, over a host (the glue's shared memory and files, or a model's
//!   memory);
//! - [`arrival`]: rows of sno's own tables that arrive by logical replication, kept out (the
//!   grants they name noted);
//! - [`member`]: members of a replicating group: which of two servers with one partition goes
//!   on and which is refused, and the record of a refusal (`sno_generator.member_conflict`);
//! - [`lineage`]: which partitions a data directory and the servers it shares history with
//!   (standbys, copies, upgrades) have used, and what a server may do about them.

pub mod arrival;
pub mod bound;
pub mod citus;
pub mod cursor;
pub mod forecast;
pub mod lease;
pub mod lineage;
pub mod lost;
pub mod member;
pub mod partition;
pub mod reserved;
pub mod server;
pub mod state_file;
pub mod timeline;
pub mod unrecorded;
pub mod wal_record;
