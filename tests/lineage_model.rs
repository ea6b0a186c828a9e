//! A model of a *lineage* of PostgreSQL servers (primaries, standbys, clones, PITR restores,
//! rewound and upgraded servers) driven by random event orders and clocks, checking that
//! `sno_generate` never hands out one ID twice.
//!
//! A running server's generator is the crate's own: its decisions are those of
//! [`sno::generator::server`] (`judge`, `write`, `settle`, `generate_slow`), hosted in memory by
//! the models' harness (`tests/model`: [`Side`] supplies the world's clocks, files, WAL and
//! waits around the room's shared memory), and observed, not repeated: what each locked section
//! judged and published is checked ([`World::judged`]), and every state file the room writes
//! ([`World::put_file`]). Around the room the model follows the PostgreSQL glue with the crate's
//! pure code ([`State`], [`Timeline`], the cursor, the state file and WAL record formats):
//! `sno_generate`'s fast path (`src/pg/issuer/hot.rs`), `replay` and
//! `sno_generator_initialize` (`src/pg/issuer/durable.rs`), `restore_state` and
//! `start_timeline` (`src/pg/shmem.rs`). Each server has its lineage
//! state, timeline and status in memory, a state file (real bytes from `state_file::encode`, read back
//! with `state_file::decode`), a WAL (lineage records from `wal_record::encode`, decoded with
//! `wal_record::decode` on replay, interleaved with data rows holding the IDs it issued), a WAL
//! timeline, the timelines its `pg_control` names (its last checkpoint's and its minimum recovery
//! point's, `minRecoveryPointTLI`) and its `backup_label`'s, whether its recovery is archive
//! recovery (a standby, a PITR, a rewound server: PostgreSQL's `ArchiveRecoveryRequested`) or
//! crash recovery, the inode of its `pg_control`, a role, a clock offset and a configured
//! partition.
//!
//! The WAL timeline a copy starts on (what `State::at_start` is given) is, as in the glue
//! (`shmem::start_timeline`, through the crate's `lineage::start_timeline`), the latest of its
//! `backup_label`'s `START TIMELINE` and of the two timelines its `pg_control` names: the one
//! its recovery ends on when it is not archive recovery. A base backup's `START TIMELINE` is the
//! timeline of the checkpoint the backup starts from: on a primary the one `pg_backup_start`
//! forces, on its current WAL timeline (a freshly promoted server's new one, even before it
//! judged); on a standby its last restartpoint's, at the last checkpoint record of its upstream
//! it replayed (so it may still be the timeline before its upstream's promotion), but its
//! `pg_control`, copied last, names the timeline the standby replays on as its minimum recovery
//! point's. pg_rewind's `backup_label` has no `START TIMELINE` (its `pg_control` names the
//! source's timeline as the minimum recovery point's), and a copy of the files has no
//! `backup_label`. A standby's promotion (`pg_ctl promote`) writes an end-of-recovery record
//! and only requests the checkpoint on its new timeline: until the next checkpoint its
//! `pg_control` still names the previous timeline as the checkpoint's, and the new one as the
//! minimum recovery point's; a checkpoint on a primary resets the latter. The end of a crash
//! recovery, of a clone's recovery and of a PITR (a recovery target reached) checkpoint at
//! once.
//!
//! Events: IDs made on running primaries (several backends, with the glue's fast path on the shared
//! cursor; the lineage record covering an ID is flushed when it is written, before the cursor
//! serves what it covers, `wal::make_durable`; another backend sometimes makes IDs while a write
//! of the durable state is in flight, before its file, its record or its flush: [`Busy`]), time
//! passing,
//! clocks jumping forward or back by up to 6 s, streaming and cascading replication, checkpoints,
//! clean and crash restarts (a crash loses unflushed WAL and replays the WAL after the last
//! checkpoint), base backups (sometimes first started without sno preloaded, so only the inode
//! reveals the copy), clones run beside their original on the same WAL timeline, promotions (split
//! brain or not), pg_rewind, PITR, pg_upgrade (with or without the old state file copied in), lost,
//! corrupt and put-back (latest or older) state files, `sno_generator_initialize`, changes of
//! `sno.partition` (on a running primary the reload wakes the `sno lineage` worker, which records
//! it at once), servers stopped for good, other passes of that worker (`settle`; the model makes
//! them at random moments, not at each start or promotion, so that copies taken before them are
//! covered). Refusals are answered the way their HINTs say (the Inherited refusal's HINT: a new
//! partition; or, once every other server that used it is stopped for good and made no ID after the
//! copy, `take_over` as the README documents; the missing or unusable state's HINT: the data
//! directory's latest state file put back, else a new partition).
//!
//! Checked: no ID is issued twice, except the documented exclusion, like PostgreSQL's
//! sequences. For every ID the model keeps the server that made it and its place in WAL (a
//! *stream*: the rows one server made between two starts, and a serial number), and for every
//! state in memory and every state file the ground truth of what it covers: the rows it made,
//! the rows it replayed after the lineage record covering them, and what the file it started
//! from covered. A repeated ID fails the case if the server that made it again knew of the
//! first one. Otherwise it is allowed only
//! * if both were made with an explicit partition, by two servers of one family (one copied,
//!   rewound or upgraded from the other, or both from a third), on different WAL timelines: a
//!   promotion, a PITR, a pg_upgrade, a rewind, or `take_over` let the later one take the
//!   partition over, and it may repeat what its original made after the last WAL it received
//!   (in per-node mode, only a server repeating what pg_rewind discarded from its own WAL);
//! * or if the server that made it again forgot it through a state file older than the
//!   latest, put back by an administrator (any partition); or if either server's state came
//!   from such a file (directly or through copies), which may not say its explicit partition
//!   was in use.
//!
//! So with derived partitions, or with distinct per-node explicit partitions, no two servers
//! may ever make one ID, even in split brain; and a copy running beside its original on the
//! same WAL timeline (which must be refused its original's explicit partition) may not either.
//! Also checked: every ID is within the state its server last wrote; the state file and WAL
//! records round-trip (`State` compares structurally); a changed byte in a state file is
//! detected; a server whose explicit partition no other server used or was given is never
//! refused as a copy ("wrong refusal", except after an older state file was put back: then its
//! own WAL may name an incarnation the file does not know, and the refusal, whose HINT is a
//! new partition, is the safe side); a copy run beside its original on the WAL timeline it was
//! copied on never takes its original's explicit partition over as if promoted; every state
//! file the room writes puts the horizon `server::HORIZON_AHEAD` past the high-water mark, as
//! the constant promises (a shorter one repeats no ID, but writes more often than the design
//! says).
//!
//! After the main property: regression tests, the minimal cases of the bugs this model found
//! and that are now fixed (a crash after the state file was lost; a copy of a freshly promoted
//! server; a copy made before its original's first ID; a clone whose start timeline was not the
//! one its recovery ends on, judged as promoted beside its original: a copy of the files of a
//! server promoted since its last checkpoint, a base backup of a standby whose upstream was
//! promoted since its last restartpoint, a copy of a cluster just made by pg_upgrade); cases of
//! the documented exclusions (they do happen); and the one case not covered, which the model
//! does not make (a copy of the files of a cluster just made by pg_upgrade, taken after the old
//! cluster's state file was put into it and before its first start, adopts that file as the
//! upgrade just as its original does: see [`World::foreign_file`]).
//!
//! Not covered (inherent or out of scope): copies that keep the inode of `pg_control` and have
//! no `backup_label` (block-level snapshots: nothing reveals the copy); collisions of derived
//! partitions between servers that cannot know each other (a 16-bit value: the model draws
//! incarnations whose derived partitions differ from every one drawn before, except on
//! purpose, values the drawing server knows); two independent clusters configured with the
//! same explicit partition, or a copy keeping (in its copied configuration) an explicit
//! partition its original was given but had not recorded yet (a server stopped, or promoted or
//! started and not yet passed by the worker: nothing links the two settings; such copies'
//! repeated IDs are counted in `dups_unrecorded`); an explicit partition equal to a derived
//! one; full 4 ms units
//! (65,536 IDs); failures to write the state file; WAL shipped to a standby before it is
//! flushed. A lineage that uses more partitions than its table holds (`MAX_ENTRIES`) is made
//! by bursts of `sno.partition` changes ([`Ev::Burst`]): what leaves the table must stay
//! known (refusals, draws, files and records).

mod model;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use sno::generator::bound::ticks;
use sno::generator::citus::Source;
use sno::generator::cursor::Slice;
use sno::generator::forecast::{forecast, File, Inputs, Status as ViewStatus};
use sno::generator::lineage::{start_timeline, Refusal, State, MAX_ENTRIES, UPGRADED};
use sno::generator::partition::derived_partition;
use sno::generator::server::{self, FileState, Host as _, Memory, SlowError, Wait, HORIZON_AHEAD};
use sno::generator::state_file::{decode, encode};
use sno::generator::timeline::Timeline;
use sno::generator::wal_record;
use sno::id::layout::{Sno, MAX_UNITS};
use std::cell::{Cell, RefCell};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::rc::Rc;

/// `sno.max_clock_wait` (10 s) in 4 ms units.
const MAX_WAIT: u64 = 2_500;
/// `sno.idle_horizon` (60 s) in 4 ms units: the worker's idle lease.
const IDLE_HORIZON: u64 = 15_000;
/// Backends per server.
const BACKENDS: usize = 2;
/// Explicit partitions are below this, derived ones at or above it.
const EXPLICIT_LIMIT: u16 = 1_000;
/// Servers a case may create.
const MAX_SERVERS: usize = 16;
/// The clock at the start of a case (4 ms units since 2010).
const START_UNITS: u64 = 300_000_000;
/// Versions of the state file each server keeps in its history.
const HISTORY: usize = 24;

/// How partitions are configured in a case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// No server sets `sno.partition`.
    Derived,
    /// Every server has its own explicit partition, never shared.
    PerNode,
    /// Derived and explicit ones; copies keep their original's setting.
    Mixed,
}

/// One event of a case. Server numbers are taken modulo the servers the event applies to.
#[derive(Clone, Debug)]
enum Ev {
    /// Backend `b` of a running primary makes `n` IDs; `flush`: the transaction commits with
    /// its WAL flushed (else `synchronous_commit = off`); `busy`: another backend makes IDs
    /// during the first write of the durable state.
    Gen {
        s: u8,
        b: u8,
        n: u8,
        flush: bool,
        busy: Option<Busy>,
    },
    /// Time passes (every clock moves).
    Time { d: u16 },
    /// One server's clock is set forward or back.
    Clock { s: u8, back: bool, d: u16 },
    /// A running standby replays some of its upstream's flushed WAL.
    Replicate { s: u8, n: u16 },
    /// A checkpoint (a restartpoint on a standby).
    Checkpoint { s: u8 },
    /// A clean restart.
    Restart { s: u8 },
    /// A crash and restart: memory and unflushed WAL are lost.
    Crash { s: u8 },
    /// A clean stop.
    Stop { s: u8 },
    /// A start of a stopped server.
    Start { s: u8 },
    /// A standby made with pg_basebackup; `sno_first`: its first start has sno preloaded.
    Standby { s: u8, at: u16, sno_first: bool },
    /// A copy run as an independent primary on the same WAL timeline; `label`: made with
    /// pg_basebackup (else a copy of the files).
    Clone {
        s: u8,
        at: u16,
        label: bool,
        sno_first: bool,
    },
    /// A standby is promoted; `keep_old`: its old primary goes on (split brain).
    Promote { s: u8, keep_old: bool },
    /// pg_rewind of an old primary to follow a new one.
    Rewind { s: u8, src: u8 },
    /// A restore of an older base backup, replayed to a target, then promoted.
    Pitr {
        s: u8,
        base: u8,
        target: u16,
        sno_first: bool,
    },
    /// pg_upgrade to a new cluster.
    Upgrade {
        s: u8,
        copy_file: bool,
        retire: bool,
    },
    /// The state file is deleted.
    LoseFile { s: u8 },
    /// One byte of the state file changes.
    CorruptFile { s: u8, at: u16 },
    /// A copy of the state file is put back (0: the latest, else an older one), then
    /// `sno_generator_initialize()` on a primary.
    PutBack { s: u8, older: u8 },
    /// `sno_generator_initialize(force)` (as its HINT says: with an explicit partition and no
    /// usable state, after putting back the file or giving the server a new partition).
    Initialize { s: u8, force: bool },
    /// `sno.partition` changes (and the configuration is reloaded).
    SetPartition { s: u8, choice: u8 },
    /// A running primary is given `MAX_ENTRIES + n % 16` new explicit partitions in turn,
    /// each recorded by the worker and used for an ID, then its setting back: more partitions
    /// than its lineage table holds (not in `Mode::Derived`; at most two a case).
    Burst { s: u8, n: u8 },
    /// A server is stopped for good.
    Retire { s: u8 },
    /// The `sno lineage` background worker's pass (at start, at a reload, once a second);
    /// `busy`: a backend makes IDs during its write of the durable state.
    Settle { s: u8, busy: Option<Busy> },
}

/// A backend making IDs while a write of the durable state is in flight (the writer lock held,
/// not the lock): before the write's step `at`, `1 + n % 4` IDs (or fewer: it cannot write).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Busy {
    at: Step,
    n: u8,
}

/// The steps of the room's write of the durable state (`server::write`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// The state file.
    File,
    /// Its WAL record.
    Record,
    /// The flush of that record.
    Flush,
}

/// One case: a mode, a seed for the random numbers the code draws, and events.
#[derive(Clone, Debug)]
struct Scenario {
    mode: Mode,
    seed: u64,
    clusters: u8,
    events: Vec<Ev>,
}

/// Counters over a run, printed at the end.
#[derive(Clone, Debug, Default)]
struct Stats {
    cases: u64,
    steps: u64,
    ids: u64,
    dups_takeover: u64,
    dups_stale: u64,
    dups_rewound: u64,
    refused_inherited: u64,
    refused_missing: u64,
    refused_broken: u64,
    refused_clock: u64,
    takeovers: u64,
    forced_takeovers: u64,
    promotions: u64,
    copies: u64,
    pitrs: u64,
    rewinds: u64,
    upgrades: u64,
    crashes: u64,
    writes: u64,
    put_backs: u64,
    colliding_draws: u64,
    max_entries: u64,
    /// The most partitions a written state knew (with an entry or not).
    max_known: u64,
    /// Bursts of `sno.partition` changes.
    bursts: u64,
    /// Lineage records replayed by crash recovery with no usable state: learnt in memory only.
    learnt_in_memory: u64,
    /// Partitions a put-back file says are this server's, merged as its own at adoption.
    adopted_mine: u64,
    /// Inherited refusals `sno_generator_initialize` left to `sno_generate`.
    deferred_refusals: u64,
    /// Copies whose start timeline differs from the state file's.
    start_timeline_moved: u64,
    /// Copies not made of a never-started upgraded cluster holding the old cluster's state
    /// file (not covered, see [`World::foreign_file`]).
    foreign_clones_skipped: u64,
    /// Inherited refusals of a server's own partition after an older state file was put back.
    stale_refusals: u64,
    /// IDs repeated by copies that kept a setting their state did not record (not covered).
    dups_unrecorded: u64,
    /// Judgments whose outcome the views' forecast told first (and was checked against).
    forecasts: u64,
    /// IDs made by a backend while another call's write of the durable state was in flight.
    ids_during_writes: u64,
}

impl model::Counters for Stats {
    /// Adds the counters of `o`.
    fn add(&mut self, o: &Stats) {
        self.cases += o.cases;
        self.steps += o.steps;
        self.ids += o.ids;
        self.dups_takeover += o.dups_takeover;
        self.dups_stale += o.dups_stale;
        self.dups_rewound += o.dups_rewound;
        self.refused_inherited += o.refused_inherited;
        self.refused_missing += o.refused_missing;
        self.refused_broken += o.refused_broken;
        self.refused_clock += o.refused_clock;
        self.takeovers += o.takeovers;
        self.forced_takeovers += o.forced_takeovers;
        self.promotions += o.promotions;
        self.copies += o.copies;
        self.pitrs += o.pitrs;
        self.rewinds += o.rewinds;
        self.upgrades += o.upgrades;
        self.crashes += o.crashes;
        self.writes += o.writes;
        self.put_backs += o.put_backs;
        self.colliding_draws += o.colliding_draws;
        self.learnt_in_memory += o.learnt_in_memory;
        self.adopted_mine += o.adopted_mine;
        self.deferred_refusals += o.deferred_refusals;
        self.forecasts += o.forecasts;
        self.ids_during_writes += o.ids_during_writes;
        self.start_timeline_moved += o.start_timeline_moved;
        self.foreign_clones_skipped += o.foreign_clones_skipped;
        self.stale_refusals += o.stale_refusals;
        self.dups_unrecorded += o.dups_unrecorded;
        self.max_entries = self.max_entries.max(o.max_entries);
        self.max_known = self.max_known.max(o.max_known);
        self.bursts += o.bursts;
    }
}

/// The ground truth of what a state knows: for each WAL *stream* (the rows one server made
/// between two starts, in order; any WAL holds a prefix of each stream), every row up to a
/// serial number; and the rows a stale state file, put back, made it forget.
#[derive(Clone, Debug, Default)]
struct Know {
    upto: Vec<u64>,
    forgiven: Vec<(u32, u64, u64)>,
}

impl Know {
    /// Whether the row `serial` of `stream` is known.
    fn knows(&self, stream: u32, serial: u64) -> bool {
        self.upto.get(stream as usize).is_some_and(|&u| serial <= u)
    }

    /// Learns every row of `stream` up to `serial`.
    fn add(&mut self, stream: u32, serial: u64) {
        let i = stream as usize;
        if self.upto.len() <= i {
            self.upto.resize(i + 1, 0);
        }
        self.upto[i] = self.upto[i].max(serial);
    }

    /// Learns everything `o` knows (and forgives what it forgives).
    fn union(&mut self, o: &Know) {
        for (s, &u) in o.upto.iter().enumerate() {
            self.add(s as u32, u);
        }
        for r in &o.forgiven {
            if !self.forgiven.contains(r) {
                self.forgiven.push(*r);
            }
        }
    }

    /// Forgives what `lost` knew and `kept` does not: a stale file was adopted.
    fn forgive(&mut self, lost: &Know, kept: &Know) {
        for (s, &u) in lost.upto.iter().enumerate() {
            let k = kept.upto.get(s).copied().unwrap_or(0);
            let r = (s as u32, k, u);
            if u > k && !self.forgiven.contains(&r) {
                self.forgiven.push(r);
            }
        }
    }

    /// Whether the row was forgotten through a stale state file.
    fn forgives(&self, stream: u32, serial: u64) -> bool {
        self.forgiven
            .iter()
            .any(|&(s, lo, hi)| s == stream && lo < serial && serial <= hi)
    }
}

/// A state file as written: the state, and what it covers. The writer keeps adding the rows it
/// makes (or replays) until its next write: the written bound covers them.
#[derive(Debug)]
struct Ver {
    st: State,
    know: Know,
}

/// A shared, growing [`Ver`].
type VerRef = Rc<RefCell<Ver>>;

/// The state file in a data directory.
#[derive(Clone, Debug)]
struct DirFile {
    bytes: Rc<[u8]>,
    /// `None`: the bytes are not a valid file.
    ver: Option<VerRef>,
    /// Put there by an administrator, from this server's copies: it may be older than what
    /// that server knew.
    stale_of: Option<usize>,
}

/// Why no ID was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Refused {
    Inherited(u16),
    State(FileState),
    Clock,
    /// A call interleaved with a write ([`Busy`]) would wait for the writer lock.
    Busy,
}

/// How a partition is being used: explicitly or not, and under which claim.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Use {
    explicit: bool,
    claim: Option<usize>,
}

/// One backend (the glue's `Backend`): the partition it read under the lock and the epoch it
/// read it in (its fast path takes from the shared cursor only while the epoch holds), and how
/// that partition is being used.
type Backend = model::Session<Use>;

/// The memory of a running server: its shared memory (the glue's `Shared` and the `Memory`
/// under its lock, the room's), and what the model knows of it.
#[derive(Clone, Debug)]
struct Mem {
    /// The room's memory, the lock, the cursor, the epoch, the published partition, the file
    /// state, the end of the last lineage record (`Shared::lineage_lsn`).
    sh: Rc<model::Shared>,
    /// How the partition the last judgment published is being used.
    cur: Use,
    backends: [Backend; BACKENDS],
    know: Know,
    /// The state file this memory last wrote (it covers what the memory makes next).
    live: Option<VerRef>,
}

impl Mem {
    /// Shared memory as the postmaster initialises it.
    fn new(sysid: u64) -> Mem {
        Mem::with(
            Memory {
                timeline: Timeline::default(),
                units_opened: 0,
                lineage: State::fresh(sysid, 0, 0, 0),
                judged: (u32::MAX, -1),
                dirty: false,
                members: sno::generator::member::Known::NONE,
            },
            FileState::Missing,
            Know::default(),
        )
    }

    /// Shared memory holding `memory`, with the durable state `file`, knowing `know`.
    fn with(memory: Memory, file: FileState, know: Know) -> Mem {
        Mem {
            sh: Rc::new(model::Shared::new(memory, file)),
            cur: Use::default(),
            backends: [Backend::default(); BACKENDS],
            know,
            live: None,
        }
    }

    /// The lineage state in memory.
    fn st(&self) -> State {
        self.sh.lineage()
    }

    /// Whether the durable state can be used.
    fn status(&self) -> FileState {
        self.sh.file.get()
    }
}

/// One item of WAL.
#[derive(Clone, Debug)]
struct Item {
    serial: u64,
    tli: u32,
    kind: Kind,
}

/// A lineage record, or a data row holding one ID, of the stream of the memory that wrote it.
#[derive(Clone, Debug)]
enum Kind {
    Rec {
        bytes: Rc<[u8]>,
        stream: u32,
    },
    /// `cover`: the serial number of the record (of the same stream) whose bound covers it.
    Row {
        stream: u32,
        cover: u64,
    },
}

/// The WAL timelines a base backup names: its `backup_label`'s `START TIMELINE` (also the
/// timeline of the checkpoint its `pg_control` names), and the `minRecoveryPointTLI` of its
/// `pg_control` (copied last).
#[derive(Clone, Copy, Debug)]
struct BackupTli {
    start: u32,
    min_rec: u32,
}

/// One data directory.
#[derive(Clone, Debug)]
struct Server {
    sysid: u64,
    inode: u64,
    running: bool,
    retired: bool,
    /// `Some`: in recovery (a standby of that server).
    upstream: Option<usize>,
    tli: u32,
    /// The WAL timeline of the last checkpoint (or restartpoint), as `pg_control` says.
    ckpt_tli: u32,
    /// The WAL timeline of the minimum recovery point, as `pg_control` says
    /// (`minRecoveryPointTLI`): a promotion's end-of-recovery record sets it to the new timeline
    /// until the next checkpoint (which resets it to 0); on a standby it follows the timeline it
    /// replays on. 0: none.
    min_rec_tli: u32,
    offset: i64,
    configured: Option<u16>,
    backup_label: bool,
    /// The `START TIMELINE` of the `backup_label` (0: none, as pg_rewind's).
    label_tli: u32,
    /// Whether sno is preloaded at the first start after a copy.
    sno_first: bool,
    /// Whether its recovery is archive recovery (`ArchiveRecoveryRequested`: a standby, a
    /// PITR, a rewound server), else crash recovery (a crashed primary, a clone).
    archive: bool,
    mem: Mem,
    file: Option<DirFile>,
    /// The latest valid state file this data directory held.
    last_good: Option<DirFile>,
    /// State files held, with the WAL position at the time and the timelines a base backup
    /// taken then would have named.
    history: Vec<(usize, BackupTli, Option<DirFile>)>,
    wal: Vec<Item>,
    flushed: usize,
    checkpoint: usize,
    min_recovery: usize,
    stream: u32,
    /// Its state came from a state file put back by an administrator, older than what was
    /// known (directly, or through a copy, a rewind or an upgrade of a data directory that
    /// read one): it may not know a partition was in use, and its own WAL may hold records of
    /// an incarnation that file does not know.
    stale: bool,
    /// The explicit partition it was configured with when copied (its original's setting),
    /// until its first judgment with it: if its state then does not know that partition at all
    /// (its original had not recorded it yet), the same setting is on two servers that nothing
    /// links (not covered).
    unrecorded: Option<u16>,
    /// It read a state file put back by an administrator that is not the latest its data
    /// directory held (even if it knows as much: the file a copy or a rewind brought says the
    /// data directory is a copy again). With `stale`, an Inherited refusal of a partition
    /// only it used is the documented exclusion, not a wrong refusal.
    older_file: bool,
    /// The last record the running memory wrote.
    last_rec: Option<u64>,
    /// The units opened when the `sno lineage` worker last looked (its `opened`).
    worker_opened: u64,
    /// Everything this data directory's memory ever knew.
    high: Know,
    own_claims: HashMap<u16, usize>,
    /// The servers this data directory was copied (or rewound, or upgraded) from.
    parents: Vec<usize>,
    /// The cluster and WAL timeline it was copied on (a base backup or a copy of the files).
    copied_on: Option<(u64, u32)>,
}

/// One issued ID.
#[derive(Clone, Copy, Debug)]
struct Issue {
    server: usize,
    stream: u32,
    serial: u64,
    explicit: bool,
    claim: Option<usize>,
    step: usize,
}

/// A use of an explicit partition by one server, on one WAL timeline of one cluster.
#[derive(Clone, Debug)]
struct Claim {
    server: usize,
    sysid: u64,
    tli: u32,
    /// Judged on a state that came from a state file put back by an administrator, older
    /// than what was known (directly, or through a copy of the data directory holding it): it
    /// may not know that its partition was in use (the documented exclusion).
    stale: bool,
    /// Made by a server whose configured partition came with a copy that did not record it
    /// ([`Server::unrecorded`]).
    unrecorded: bool,
}

/// The random numbers the code draws (`shmem::draw`): incarnations whose derived partitions
/// differ from every one drawn before, or, on purpose, equal one the drawing server knows.
struct Draw {
    rng: u64,
    used: HashSet<u16>,
    colliding: u64,
}

/// splitmix64.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Undoes `x ^= x >> s`.
fn unxorshift(y: u64, s: u32) -> u64 {
    let mut x = y;
    for _ in 0..(64 / s + 1) {
        x = y ^ (x >> s);
    }
    x
}

/// The inverse of an odd number modulo 2^64 (Newton's iteration).
fn inverse(m: u64) -> u64 {
    let mut x = m;
    for _ in 0..6 {
        x = x.wrapping_mul(2u64.wrapping_sub(m.wrapping_mul(x)));
    }
    x
}

/// The inverse of the mix behind [`derived_partition`] (splitmix64's finalizer after adding
/// the golden ratio), to draw an incarnation with a given derived partition.
fn unmix(y: u64) -> u64 {
    let mut z = unxorshift(y, 31);
    z = z.wrapping_mul(inverse(0x94d0_49bb_1331_11eb));
    z = unxorshift(z, 27);
    z = z.wrapping_mul(inverse(0xbf58_476d_1ce4_e5b9));
    z = unxorshift(z, 30);
    z.wrapping_sub(0x9e37_79b9_7f4a_7c15)
}

impl Draw {
    /// A random number.
    fn u64(&mut self) -> u64 {
        splitmix(&mut self.rng)
    }

    /// A random number below `n`.
    fn below(&mut self, n: u64) -> u64 {
        self.u64() % n.max(1)
    }

    /// An incarnation whose derived partition no draw gave before.
    fn fresh(&mut self, sysid: u64) -> u64 {
        loop {
            let inc = self.u64();
            let d = derived_partition(sysid, inc);
            if d >= EXPLICIT_LIMIT && self.used.insert(d) {
                return inc;
            }
        }
    }

    /// An incarnation for a server whose state knows the derived partitions `targets`: one
    /// time in four, one colliding with them (the code must draw again).
    fn incarnation(&mut self, sysid: u64, targets: &[u16]) -> u64 {
        if !targets.is_empty() && self.below(4) == 0 {
            let t = targets[self.below(targets.len() as u64) as usize];
            let y = (u64::from(t) << 48) | (self.u64() >> 16);
            let inc = unmix(unmix(y) ^ sysid);
            if derived_partition(sysid, inc) == t {
                self.colliding += 1;
                return inc;
            }
        }
        self.fresh(sysid)
    }
}

/// The derived partitions a state knows (with an entry or not).
fn derived_targets(st: &State) -> Vec<u16> {
    st.entries()
        .iter()
        .copied()
        .chain(st.folded())
        .map(|e| e.partition)
        .filter(|&p| p >= EXPLICIT_LIMIT)
        .collect()
}

/// The whole world of one case.
struct World {
    mode: Mode,
    now: u64,
    step: usize,
    servers: Vec<Server>,
    draw: Draw,
    next_explicit: u16,
    next_tli: u32,
    next_inode: u64,
    next_serial: u64,
    next_stream: u32,
    issued: HashMap<Sno, Vec<Issue>>,
    claims: Vec<Claim>,
    used_by: HashMap<u16, BTreeSet<usize>>,
    stats: Stats,
    failure: Option<String>,
    trace: bool,
    /// The current event's [`Busy`], until a write uses it.
    busy: Option<Busy>,
}

impl World {
    /// A world with `clusters` independent clusters, each just created (initdb, then
    /// `CREATE EXTENSION sno`, which runs `sno_generator_initialize()`).
    fn new(mode: Mode, seed: u64, clusters: u8, trace: bool) -> World {
        let mut w = World {
            mode,
            now: START_UNITS,
            step: 0,
            servers: Vec::new(),
            draw: Draw {
                rng: seed,
                used: HashSet::new(),
                colliding: 0,
            },
            next_explicit: 1,
            next_tli: 2,
            next_inode: 1000,
            next_serial: 0,
            next_stream: 0,
            issued: HashMap::new(),
            claims: Vec::new(),
            used_by: HashMap::new(),
            stats: Stats::default(),
            failure: None,
            trace,
            busy: None,
        };
        for _ in 0..clusters.max(1) {
            let sysid = w.draw.u64() | 1;
            let configured = match mode {
                Mode::Derived => None,
                Mode::PerNode => Some(w.never_used()),
                Mode::Mixed if w.draw.below(2) == 0 => None,
                Mode::Mixed => Some(w.never_used()),
            };
            let s = w.server_new(sysid, 1, configured);
            w.servers.push(s);
            let x = w.servers.len() - 1;
            w.start(x);
            if let Err(r) = w.initialize(x, false, false) {
                w.fail(format!("CREATE EXTENSION on a new cluster: {r:?}"));
            }
        }
        w
    }

    /// Records the first failure of the case.
    fn fail(&mut self, msg: String) {
        if self.failure.is_none() {
            self.failure = Some(msg);
        }
    }

    /// Prints a line when `SNO_MODEL_TRACE` is set.
    fn note(&self, msg: impl FnOnce() -> String) {
        if self.trace {
            eprintln!("  [{}] {}", self.step, msg());
        }
    }

    /// An explicit partition no server has used or been given.
    fn never_used(&mut self) -> u16 {
        let p = self.next_explicit;
        assert!(p < EXPLICIT_LIMIT, "out of explicit partitions");
        self.next_explicit += 1;
        p
    }

    /// Sets `sno.partition` (and reloads the configuration). A partition configured on a
    /// running server counts as used by it.
    fn configure(&mut self, x: usize, c: Option<u16>) {
        self.servers[x].configured = c;
        self.servers[x].unrecorded = None;
        if let (Some(p), true) = (c, self.servers[x].running) {
            self.used_by.entry(p).or_default().insert(x);
        }
    }

    /// A new data directory (not yet started).
    fn server_new(&mut self, sysid: u64, tli: u32, configured: Option<u16>) -> Server {
        self.next_inode += 1;
        self.next_stream += 1;
        let offset = self.draw.below(401) as i64 - 200;
        Server {
            sysid,
            inode: self.next_inode,
            running: false,
            retired: false,
            upstream: None,
            tli,
            ckpt_tli: tli,
            min_rec_tli: 0,
            offset,
            configured,
            backup_label: false,
            label_tli: 0,
            sno_first: true,
            archive: false,
            mem: Mem::new(sysid),
            file: None,
            last_good: None,
            history: Vec::new(),
            wal: Vec::new(),
            flushed: 0,
            checkpoint: 0,
            min_recovery: 0,
            stream: self.next_stream,
            stale: false,
            unrecorded: None,
            older_file: false,
            last_rec: None,
            worker_opened: 0,
            high: Know::default(),
            own_claims: HashMap::new(),
            parents: Vec::new(),
            copied_on: None,
        }
    }

    /// One line about a server, for failure messages.
    fn describe(&self, x: usize) -> String {
        let s = &self.servers[x];
        format!(
            "server {x} ({}, tli {}, partition {:?}, status {:?}, incarnation {}, running {}, retired {})",
            match s.upstream {
                Some(u) => format!("standby of {u}"),
                None => "primary".to_string(),
            },
            s.tli,
            s.configured,
            s.mem.status(),
            s.mem.st().incarnation,
            s.running,
            s.retired
        )
    }

    /// The server's clock.
    fn clock(&self, x: usize) -> u64 {
        (self.now as i64 + self.servers[x].offset).max(1) as u64
    }

    /// Picks the `k`-th (modulo) server satisfying `f`.
    fn pick(&self, k: u8, f: impl Fn(&Server) -> bool) -> Option<usize> {
        let c: Vec<usize> = (0..self.servers.len())
            .filter(|&i| f(&self.servers[i]))
            .collect();
        (!c.is_empty()).then(|| c[k as usize % c.len()])
    }

    /// Appends an item to a server's WAL; returns its serial number.
    fn push(&mut self, x: usize, kind: Kind) -> u64 {
        self.next_serial += 1;
        let s = &mut self.servers[x];
        s.wal.push(Item {
            serial: self.next_serial,
            tli: s.tli,
            kind,
        });
        self.next_serial
    }

    /// The timeline of the checkpoint record a restartpoint of standby `x` can be made at now:
    /// its upstream's last checkpoint, once replayed (else its last restartpoint's).
    fn restartpoint_tli(&self, x: usize) -> u32 {
        let s = &self.servers[x];
        match s.upstream {
            Some(u) if s.wal.len() >= self.servers[u].checkpoint => {
                s.ckpt_tli.max(self.servers[u].ckpt_tli.min(s.tli))
            }
            _ => s.ckpt_tli,
        }
    }

    /// A checkpoint (a restartpoint on a standby): WAL is flushed up to it, and `pg_control`
    /// names its timeline. On a primary it also resets the minimum recovery point (crash
    /// recovery replays to the end of WAL); a restartpoint keeps it.
    fn checkpoint(&mut self, x: usize) {
        let tli = match self.servers[x].upstream {
            Some(_) => self.restartpoint_tli(x),
            None => self.servers[x].tli,
        };
        let s = &mut self.servers[x];
        s.flushed = s.wal.len();
        s.checkpoint = s.wal.len();
        s.ckpt_tli = tli;
        if s.upstream.is_none() {
            s.min_rec_tli = 0;
        }
    }

    /// The timelines a base backup of `x` taken now names: its `START TIMELINE` is the
    /// timeline of the checkpoint `pg_backup_start` forces on a primary (its current one), of
    /// the restartpoint it makes on a standby, or of the last checkpoint of a stopped server;
    /// its `pg_control` (copied last) names the minimum recovery point's timeline after that
    /// checkpoint (none on a primary; a standby's replay timeline).
    fn backup_tli(&self, x: usize) -> BackupTli {
        let s = &self.servers[x];
        match (s.running, s.upstream) {
            (true, None) => BackupTli {
                start: s.tli,
                min_rec: 0,
            },
            (true, Some(_)) => BackupTli {
                start: self.restartpoint_tli(x),
                min_rec: s.min_rec_tli,
            },
            (false, _) => BackupTli {
                start: s.ckpt_tli,
                min_rec: s.min_rec_tli,
            },
        }
    }

    /// Whether `x`'s state file is another cluster's (copied in after pg_upgrade, not yet
    /// adopted by a start).
    fn foreign_file(&self, x: usize) -> bool {
        self.servers[x]
            .file
            .as_ref()
            .and_then(|f| decode(&f.bytes).ok())
            .is_some_and(|st| st.system_identifier != self.servers[x].sysid)
    }

    /// Keeps a state file in the server's history.
    fn remember(&mut self, x: usize) {
        let tli = self.backup_tli(x);
        let s = &mut self.servers[x];
        s.history.push((s.wal.len(), tli, s.file.clone()));
        if s.history.len() > HISTORY {
            s.history.remove(0);
        }
    }

    /// `state::write` from memory: the new file covers what the memory knows and makes next.
    fn write_file(&mut self, x: usize, st: State) {
        let text = encode(&st);
        match decode(text.as_bytes()) {
            Ok(back) if back == st => {}
            other => self.fail(format!("state file round trip: {other:?} for {st:?}")),
        }
        let s = &mut self.servers[x];
        let ver = Rc::new(RefCell::new(Ver {
            st,
            know: s.mem.know.clone(),
        }));
        let f = DirFile {
            bytes: text.into_bytes().into(),
            ver: Some(ver.clone()),
            stale_of: None,
        };
        s.file = Some(f.clone());
        s.last_good = Some(f);
        s.mem.live = Some(ver);
        self.stats.max_entries = self.stats.max_entries.max(u64::from(st.len));
        let known = st.entries().len() + st.folded().count();
        self.stats.max_known = self.stats.max_known.max(known as u64);
        self.remember(x);
    }

    /// The memory learns a row (made or replayed).
    fn learn(&mut self, x: usize, stream: u32, serial: u64) {
        let s = &mut self.servers[x];
        s.mem.know.add(stream, serial);
        s.high.add(stream, serial);
        if let Some(v) = &s.mem.live {
            v.borrow_mut().know.add(stream, serial);
        }
    }

    /// Postmaster start: `restore_state`. A standby's recovery is archive recovery.
    fn start(&mut self, x: usize) {
        let (sysid, inode, configured) = {
            let s = &self.servers[x];
            (s.sysid, s.inode, s.configured)
        };
        let (label, start_tli) = {
            let s = &mut self.servers[x];
            let seen = s.backup_label && s.sno_first;
            // `shmem::start_timeline` (read before recovery): the latest of the backup_label's
            // START TIMELINE (0: none, or none in it) and of pg_control's checkpoint and
            // minimum recovery point timelines.
            let label_tli = if seen { s.label_tli } else { 0 };
            let start_tli = start_timeline(label_tli, s.ckpt_tli.max(s.min_rec_tli));
            s.backup_label = false;
            s.label_tli = 0;
            s.sno_first = true;
            s.archive = s.upstream.is_some();
            (seen, start_tli)
        };
        let mut know = Know::default();
        let mut write = None;
        let (st, tl, status) = match self.servers[x].file.clone() {
            Some(f) => match decode(&f.bytes) {
                Ok(mut st) => {
                    let Some(ver) = f.ver.clone() else {
                        self.fail(format!("server {x}: a corrupt state file was read"));
                        return;
                    };
                    self.older_put_back(x, &f);
                    let ver = ver.borrow();
                    if st != ver.st {
                        self.fail(format!("server {x}: the state file reads back differently"));
                    }
                    let read = st;
                    know = ver.know.clone();
                    if let Some(z) = f.stale_of {
                        let lost = self.lost_with(x, z, &ver.know);
                        know.union(&lost);
                    }
                    let targets = derived_targets(&st);
                    let inc = self.draw.incarnation(sysid, &targets);
                    if st.system_identifier != sysid {
                        st.system_identifier = sysid;
                        st.timeline = UPGRADED;
                        st.at_start(true, inode, inc, 0);
                    } else if st.at_start(label, inode, inc, start_tli)
                        && read.timeline != st.timeline
                    {
                        self.stats.start_timeline_moved += 1;
                    }
                    // (The configured partition is noted here only for sno 0.1.0 files, which
                    // the model never writes.)
                    // As the glue: compared with the file as read.
                    if st != read {
                        write = Some(st);
                    }
                    (st, Timeline::restore(st.me, Slice::FULL), FileState::Ready)
                }
                Err(_) => {
                    let inc = self.draw.incarnation(sysid, &[]);
                    let st = State::fresh(sysid, inc, 0, inode);
                    (st, Timeline::default(), FileState::Broken)
                }
            },
            None => {
                let inc = self.draw.incarnation(sysid, &[]);
                let st = State::fresh(sysid, inc, 0, inode);
                (st, Timeline::default(), FileState::Missing)
            }
        };
        let memory = Memory {
            timeline: tl,
            units_opened: 0,
            lineage: st,
            judged: (u32::MAX, -1),
            dirty: false,
            members: sno::generator::member::Known::NONE,
        };
        let mem = Mem::with(memory, status, know);
        self.note(|| format!("start {x} knows {:?}", mem.know));
        // What this memory makes is a new stream: knowing its rows says nothing of the rows
        // an earlier memory made and this one may have forgotten.
        self.next_stream += 1;
        if let Some(p) = configured {
            self.used_by.entry(p).or_default().insert(x);
        }
        let s = &mut self.servers[x];
        s.stream = self.next_stream;
        s.last_rec = None;
        s.worker_opened = 0;
        s.high.union(&mem.know);
        s.mem = mem;
        s.running = true;
        self.note(|| {
            format!(
                "start {x}: incarnation {} timeline {} copied {}",
                st.incarnation, st.timeline, st.copied
            )
        });
        if let Some(st) = write {
            self.write_file(x, st);
        }
    }

    /// A clean stop: a shutdown checkpoint (restartpoint on a standby).
    fn stop(&mut self, x: usize) {
        if self.servers[x].running {
            self.checkpoint(x);
            self.servers[x].running = false;
        }
    }

    /// Runs `f` with server `x` as the room's host ([`Side`]), for `call`.
    fn host<R>(&mut self, x: usize, call: Call, f: impl FnOnce(&LinHost<'_, '_>) -> R) -> R {
        let sh = self.servers[x].mem.sh.clone();
        let h = model::Host {
            shared: &sh,
            model: Side {
                w: RefCell::new(self),
                x,
                call,
                pre: RefCell::new(None),
                file: Cell::new(FileState::Ready),
            },
        };
        f(&h)
    }

    /// The lineage's judgment ([`server::judge`], under the lock), as `sno_generator_initialize`
    /// and a burst make it (`sno_generate` and the worker judge inside the room's calls);
    /// checked as every judgment is ([`World::judged`]).
    fn judge(&mut self, x: usize, take_over: bool) -> Result<(), Refused> {
        let tli = self.servers[x].tli;
        let call = Call {
            take_over,
            ..Call::default()
        };
        let judged = self.host(x, call, |h| {
            h.locked(|m| server::judge(h, m, tli, take_over))
        });
        judged.map_err(|e| self.refused(x, e))
    }

    /// Why the room made no ID.
    fn refused(&mut self, x: usize, e: SlowError) -> Refused {
        match e {
            SlowError::State(file) => Refused::State(file),
            SlowError::Refused(Refusal::Inherited(p)) => Refused::Inherited(p),
            SlowError::Refused(r) => unreachable!("no Citus group in this model: {r:?}"),
            SlowError::GaveUp { .. } => Refused::Clock,
            SlowError::Write(e) if e.kind() == std::io::ErrorKind::WouldBlock => Refused::Busy,
            e => {
                let msg = format!("{}: {e:?}", self.describe(x));
                self.fail(msg);
                Refused::Clock
            }
        }
    }

    /// What a judgment of the room decided, seen in a locked section `sec` of server `x`
    /// (its lineage `pre` and its file state `file` as the section began; `take_over`:
    /// `sno_generator_initialize(take_over)`'s): checked against what the views told before
    /// (`forecast`), and recorded as a claim on an explicit partition; a copy on the WAL
    /// timeline it was copied on must not take its original's partition over.
    ///
    /// The outcome is what the section did: a partition published is a judgment that went on
    /// (a takeover is noted); nothing published, with the memory judged for this WAL timeline
    /// and source, a judgment with nothing new; else a refusal: for want of the durable state
    /// (a file not usable and an explicit partition), or the Inherited refusal of the explicit
    /// partition (the only other refusal a server of this model can get: no Citus, no reserved
    /// partition).
    fn judged(
        &mut self,
        x: usize,
        pre: &State,
        file: FileState,
        sec: &model::Section,
        take_over: bool,
    ) {
        let configured = self.servers[x].configured;
        if sec.published.is_none() && file != FileState::Ready && configured.is_some() {
            // Refused for want of the durable state, before any judgment.
            return;
        }
        let (tli, sysid) = (self.servers[x].tli, self.servers[x].sysid);
        let source = configured.map_or(Source::Derived, Source::Explicit);
        // What the views tell of the next ID, told before it is made (the glue's monitor.rs):
        // checked against what the judgment then did.
        let told = forecast(
            Inputs {
                recovery: false,
                file: File::Ready,
                citus_loaded: false,
                source,
                disagreement: false,
                parallel_unread: false,
                timeline: tli,
                clock_in_range: true,
            },
            *pre,
        );
        let sh = self.servers[x].mem.sh.clone();
        let outcome = match (sec.published, configured) {
            (Some((p, _)), _) => Ok(p),
            (None, _) if sh.read(|m| m.judged) == (tli, server::source_key(source)) => {
                // Judged before for this WAL timeline and source: the partition in use.
                if told.partition != Some(sh.partition.get()) {
                    let msg = format!(
                        "{}: the views told {told:?}, the generator uses partition {}",
                        self.describe(x),
                        sh.partition.get()
                    );
                    self.fail(msg);
                }
                return;
            }
            (None, Some(p)) => Err(Refusal::Inherited(p)),
            (None, None) => {
                let msg = format!("{}: a derived partition was refused", self.describe(x));
                self.fail(msg);
                return;
            }
        };
        if !take_over {
            self.stats.forecasts += 1;
        }
        let agrees = match (&outcome, told.status, told.partition) {
            _ if take_over => true,
            (Err(r), status, None) => status == ViewStatus::of_refusal(*r),
            (Ok(_), ViewStatus::Ready, None) => configured.is_none(),
            (Ok(j), ViewStatus::Ready, Some(p)) => *j == p,
            _ => false,
        };
        if !agrees {
            let msg = format!(
                "{}: the views told {told:?}, the judgment gave {outcome:?}",
                self.describe(x)
            );
            self.fail(msg);
        }
        let Ok(partition) = outcome else {
            return;
        };
        let cur = match configured {
            Some(p) => Use {
                explicit: true,
                claim: Some(self.claim(x, p, pre)),
            },
            None => Use::default(),
        };
        let took_over = sec.took_over.is_some();
        if took_over {
            self.stats.takeovers += 1;
        }
        let beside =
            configured.is_some() && !take_over && self.servers[x].copied_on == Some((sysid, tli));
        if beside && took_over {
            // A copy on the WAL timeline it was copied on was not promoted: it may not
            // take its original's partition over (a new incarnation alone is harmless).
            let msg = format!(
                "{} was judged as promoted on the WAL timeline it was copied on (took partition {partition} over; state before: timeline {}, copied {})",
                self.describe(x),
                pre.timeline,
                pre.copied
            );
            self.fail(msg);
        }
        let incarnation = sh.read(|m| m.lineage.incarnation);
        self.note(|| {
            format!(
                "judge {x}: partition {partition}, took over {took_over}, incarnation {incarnation}"
            )
        });
        self.servers[x].mem.cur = cur;
    }

    /// The claim under which server `x` now uses explicit partition `p`, judged on state
    /// `pre`: the one it had (if it still holds it, on the same WAL timeline), or a new one.
    fn claim(&mut self, x: usize, p: u16, pre: &State) -> usize {
        let was_mine = pre.is_mine(p);
        // The first judgment of a copy's setting: unrecorded if its state never heard of it.
        let unrecorded =
            self.servers[x].unrecorded == Some(p) && !pre.is_mine(p) && pre.others(p).is_none();
        if self.servers[x].unrecorded == Some(p) {
            self.servers[x].unrecorded = None;
        }
        self.used_by.entry(p).or_default().insert(x);
        let (sysid, tli) = (self.servers[x].sysid, self.servers[x].tli);
        if let Some(&c) = self.servers[x].own_claims.get(&p) {
            if was_mine && (self.claims[c].sysid, self.claims[c].tli) == (sysid, tli) {
                return c;
            }
        }
        let stale = self.servers[x].stale;
        self.claims.push(Claim {
            server: x,
            sysid,
            tli,
            stale,
            unrecorded,
        });
        let c = self.claims.len() - 1;
        self.servers[x].own_claims.insert(p, c);
        c
    }

    /// The servers of `x`'s family: those it was copied (rewound, upgraded) from, their copies,
    /// and so on.
    fn family(&self, x: usize) -> HashSet<usize> {
        let mut seen = HashSet::new();
        let mut todo = vec![x];
        while let Some(i) = todo.pop() {
            if seen.insert(i) {
                todo.extend(self.servers[i].parents.iter().copied());
                todo.extend(
                    (0..self.servers.len()).filter(|&j| self.servers[j].parents.contains(&i)),
                );
            }
        }
        seen
    }

    /// Whether two claims of one partition may repeat each other's IDs (the documented
    /// exclusion): servers of one family whose WAL histories parted (a promotion, a PITR, a
    /// rewind, a pg_upgrade), not a copy run beside its original on the same WAL timeline.
    fn related(&self, a: usize, b: usize) -> bool {
        let (a, b) = (&self.claims[a], &self.claims[b]);
        (a.sysid, a.tli) != (b.sysid, b.tli) && self.family(a.server).contains(&b.server)
    }

    /// Whether `a` and `b` are one data directory, or one the pg_upgrade of the other (which
    /// keeps its `sno.partition`).
    fn same_node(&self, a: usize, b: usize) -> bool {
        let upgraded_from = |mut x: usize, y: usize| {
            while x != y {
                match self.servers[x].parents.first() {
                    Some(&p) if self.servers[p].sysid != self.servers[x].sysid => x = p,
                    _ => return false,
                }
            }
            true
        };
        upgraded_from(a, b) || upgraded_from(b, a)
    }

    /// The `sno lineage` worker's pass (the glue's `settle`, [`server::settle`]): judges, and
    /// writes what is due (a changed lineage, a renewal of the horizon, the idle lease). Not
    /// without a usable state; a refusal is only logged.
    fn settle(&mut self, x: usize) {
        if self.servers[x].mem.status() != FileState::Ready {
            return;
        }
        let tli = self.servers[x].tli;
        let mut opened = self.servers[x].worker_opened;
        let written = self.host(x, Call::default(), |h| {
            server::settle(h, tli, &mut opened, IDLE_HORIZON, |write| write())
        });
        self.servers[x].worker_opened = opened;
        if let Err(e) = written {
            let msg = format!("{}: the worker could not write: {e}", self.describe(x));
            self.fail(msg);
        }
    }

    /// Writes the durable state if the lineage changed ([`server::write`]), as
    /// `sno_generator_initialize` does after its judgment.
    fn write_dirty(&mut self, x: usize) {
        let tli = self.servers[x].tli;
        let written = self.host(x, Call::default(), |h| {
            server::write(h, tli, |m| {
                m.dirty.then(|| (server::next_durable(&m.timeline), false))
            })
        });
        if let Err(e) = written {
            let msg = format!("{}: could not write: {e}", self.describe(x));
            self.fail(msg);
        }
    }

    /// The room's state file (`put_file`): written from memory, it covers what the memory
    /// knows and makes next. Checked first: it puts the horizon [`HORIZON_AHEAD`] past the
    /// high-water mark (or at the format's end), as the constant promises.
    fn put_file(&mut self, x: usize, st: &State, call: Call) {
        let (hi, tick) = self.servers[x]
            .mem
            .sh
            .read(|m| (m.timeline.hi, m.timeline.tick()));
        let want = hi.saturating_add(HORIZON_AHEAD).min(MAX_UNITS);
        if ticks(&st.me)[tick as usize & 1] < want as i64 {
            let msg = format!(
                "{}: a state file written with the horizon {:?}, less than {HORIZON_AHEAD} past the high-water mark {hi}",
                self.describe(x),
                st.me
            );
            self.fail(msg);
        }
        self.interleave(x, Step::File, call);
        self.write_file(x, *st);
    }

    /// The room's lineage record (`log_record`), appended to WAL: its end.
    fn log_record(&mut self, x: usize, st: &State, tli: u32, call: Call) -> u64 {
        self.interleave(x, Step::Record, call);
        let rec = wal_record::encode(st, tli);
        match wal_record::decode(&rec).ok() {
            Some(r) if r.incarnation == st.incarnation && r.bound == st.me && r.timeline == tli => {
            }
            other => self.fail(format!("record round trip: {other:?}")),
        }
        let stream = self.servers[x].stream;
        let serial = self.push(
            x,
            Kind::Rec {
                bytes: rec.into(),
                stream,
            },
        );
        // The file just written holds what the record says.
        self.learn(x, stream, serial);
        self.servers[x].last_rec = Some(serial);
        self.stats.writes += 1;
        self.servers[x].wal.len() as u64
    }

    /// The room's flush of WAL up to `lsn` (the record is flushed before anything it covers
    /// is handed out).
    fn flush(&mut self, x: usize, lsn: u64, call: Call) {
        self.interleave(x, Step::Flush, call);
        let s = &mut self.servers[x];
        s.flushed = s.flushed.max(lsn as usize);
    }

    /// [`Busy`]: another backend's IDs while a write of the durable state is in flight, before
    /// its step `at` (the writer lock is held, not the lock: the other backend's slow path may
    /// open the cursor on what the timeline says is covered, and cannot write).
    fn interleave(&mut self, x: usize, at: Step, call: Call) {
        let Some(busy) = self.busy.filter(|b| b.at == at && !call.nested) else {
            return;
        };
        self.busy = None;
        let b = call.backend.map_or(busy.n as usize, |b| b + 1) % BACKENDS;
        self.note(|| format!("busy {x}: backend {b} during the write, before {at:?}"));
        for _ in 0..=busy.n % 4 {
            match self.gen_one(x, b, true) {
                Ok(()) => self.stats.ids_during_writes += 1,
                Err(_) => break,
            }
        }
    }

    /// The glue's `replay` (redo of a lineage record): the state file is written (and a
    /// missing one created) with a usable state, or in archive recovery; crash recovery with a
    /// missing or unusable file only learns in memory.
    fn redo(&mut self, x: usize, bytes: &[u8]) {
        let Ok(rec) = wal_record::decode(bytes) else {
            self.fail("an invalid record in WAL".to_string());
            return;
        };
        let sh = self.servers[x].mem.sh.clone();
        let (st, own) = sh.update(|m| {
            let mut st = m.lineage;
            st.replay(rec.incarnation, rec.timeline, &rec.partitions, rec.bound);
            let own = rec.incarnation == st.incarnation;
            if own {
                m.timeline.absorb(rec.bound, &sh.cursor);
            }
            m.lineage = st;
            (st, own)
        });
        if own {
            sh.new_epoch();
        }
        let status = sh.file.get();
        let archive = self.servers[x].archive;
        if status == FileState::Ready || (status == FileState::Missing && archive) {
            self.write_file(x, st);
            sh.file.set(FileState::Ready);
        } else {
            self.stats.learnt_in_memory += 1;
        }
    }

    /// Replays one item of WAL on server `x` (a standby or a server in crash recovery).
    fn apply(&mut self, x: usize, it: &Item) {
        match &it.kind {
            Kind::Rec { bytes, stream } => {
                self.redo(x, bytes);
                self.learn(x, *stream, it.serial);
            }
            Kind::Row { stream, cover } => {
                // Known if the record that covers it is: replayed, or held by the state file
                // this memory started from.
                if self.servers[x].mem.know.knows(*stream, *cover) {
                    self.learn(x, *stream, it.serial);
                }
            }
        }
    }

    /// Streams `src`'s flushed WAL to `y` up to position `upto`, if `y`'s WAL is a prefix of
    /// `src`'s. Returns whether it could follow.
    fn replicate(&mut self, y: usize, src: usize, upto: usize) -> bool {
        let (len, last) = {
            let s = &self.servers[y];
            (s.wal.len(), s.wal.last().map(|i| i.serial))
        };
        let items: Vec<Item> = {
            let u = &self.servers[src];
            if len > u.wal.len() || last.is_some_and(|l| u.wal[len - 1].serial != l) {
                return false;
            }
            u.wal[len..upto.min(u.flushed).max(len)].to_vec()
        };
        for it in &items {
            {
                let s = &mut self.servers[y];
                s.tli = s.tli.max(it.tli);
                s.wal.push(it.clone());
                s.flushed = s.wal.len();
            }
            self.apply(y, it);
        }
        // Caught up with its upstream: it follows the upstream's WAL timeline (a promotion's
        // end-of-recovery record is on the new one).
        let (caught_up, tli) = {
            let u = &self.servers[src];
            (self.servers[y].wal.len() >= u.flushed, u.tli)
        };
        let s = &mut self.servers[y];
        if caught_up {
            s.tli = s.tli.max(tli);
        }
        // Its minimum recovery point advances with replay, on the timeline it replays on.
        s.min_rec_tli = s.min_rec_tli.max(s.tli);
        true
    }

    /// One ID from backend `b`: the glue's fast path (`hot.rs`: the shared cursor, while the
    /// epoch holds), else the room's slow path ([`server::generate_slow`]). `nested`: a call
    /// interleaved with another's write ([`Busy`]), which cannot write.
    fn gen_one(&mut self, x: usize, b: usize, nested: bool) -> Result<(), Refused> {
        let now = self.clock(x);
        {
            let m = &self.servers[x].mem;
            if let Some((u, t, q)) = m.sh.cursor.take(now) {
                if m.sh.epoch.get() == m.backends[b].epoch {
                    self.issue(x, b, u, t, q);
                    return Ok(());
                }
            }
        }
        let tli = self.servers[x].tli;
        let mut session = self.servers[x].mem.backends[b];
        let call = Call {
            backend: Some(b),
            nested,
            ..Call::default()
        };
        let made = self.host(x, call, |h| {
            // The writer lock: held by the write this call is interleaved with.
            let write_now = || {
                if nested {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::WouldBlock,
                        "the writer lock is held",
                    ));
                }
                server::write(h, tli, server::needed_now)
            };
            let mut bk = model::Entering {
                session: &mut session,
                tag: || h.model.cur(),
            };
            server::generate_slow(h, &mut bk, tli, &write_now)
        });
        self.servers[x].mem.backends[b] = session;
        match made {
            Ok((unit, tick, _, seq)) => {
                self.issue(x, b, unit, tick, seq);
                Ok(())
            }
            Err(e) => Err(self.refused(x, e)),
        }
    }

    /// Hands out an ID: checks it, and writes its row to WAL.
    fn issue(&mut self, x: usize, b: usize, unit: u64, tick: u8, seq: u16) {
        let (partition, use_, stream) = {
            let s = &self.servers[x];
            let bk = &s.mem.backends[b];
            (bk.partition, bk.tag, s.stream)
        };
        let id = Sno::new(unit, tick, 0, partition, seq);
        let covered = self.servers[x]
            .mem
            .live
            .as_ref()
            .map(|v| ticks(&v.borrow().st.me)[tick as usize & 1] >= unit as i64);
        if covered != Some(true) {
            self.fail(format!(
                "{} issued unit {unit} tick {tick} beyond the state it last wrote",
                self.describe(x)
            ));
        }
        let Some(cover) = self.servers[x].last_rec else {
            self.fail(format!("server {x} issued an ID before writing any record"));
            return;
        };
        let serial = self.push(x, Kind::Row { stream, cover });
        self.learn(x, stream, serial);
        if use_.explicit {
            self.used_by.entry(partition).or_default().insert(x);
        }
        let new = Issue {
            server: x,
            stream,
            serial,
            explicit: use_.explicit,
            claim: use_.claim,
            step: self.step,
        };
        if let Some(prev) = self.issued.get(&id).cloned() {
            for e in prev {
                match self.duplicate(&e, &new) {
                    Ok(()) => {}
                    Err(why) => {
                        let msg = format!(
                            "ID unit {unit} tick {tick} partition {partition} seq {seq} issued twice: first at step {} by {}, again at step {} by {}: {why}",
                            e.step,
                            self.describe(e.server),
                            new.step,
                            self.describe(x)
                        );
                        self.fail(msg);
                    }
                }
            }
        }
        self.note(|| {
            format!("issue {x}: {unit}/{tick}/{partition}/{seq} stream {stream} serial {serial}")
        });
        self.issued.entry(id).or_default().push(new);
        self.stats.ids += 1;
    }

    /// Whether a repeated ID is within the documented exclusion.
    fn duplicate(&mut self, e: &Issue, l: &Issue) -> Result<(), String> {
        let know = &self.servers[l.server].mem.know;
        if know.knows(e.stream, e.serial) {
            return Err("the second server knew of the first ID".to_string());
        }
        if know.forgives(e.stream, e.serial) {
            self.stats.dups_stale += 1;
            return Ok(());
        }
        if let (true, true, Some(a), Some(b)) = (e.explicit, l.explicit, e.claim, l.claim) {
            let (ca, cb) = (&self.claims[a], &self.claims[b]);
            if (ca.stale || cb.stale) && self.family(ca.server).contains(&cb.server) {
                // A server whose older state file did not say its partition was in use.
                self.stats.dups_stale += 1;
                return Ok(());
            }
            if (ca.unrecorded || cb.unrecorded) && self.family(ca.server).contains(&cb.server) {
                // One setting on two servers, before the state recorded it (not covered).
                self.stats.dups_unrecorded += 1;
                return Ok(());
            }
        }
        let related = e.explicit
            && l.explicit
            && match (e.claim, l.claim) {
                (Some(a), Some(b)) => a != b && self.related(a, b),
                _ => false,
            };
        match self.mode {
            Mode::Mixed if related => {
                self.stats.dups_takeover += 1;
                Ok(())
            }
            Mode::PerNode if related && self.same_node(e.server, l.server) => {
                self.stats.dups_rewound += 1;
                Ok(())
            }
            _ => Err(format!(
                "not a takeover of an explicit partition (explicit {}/{}, claims {:?}/{:?})",
                e.explicit, l.explicit, e.claim, l.claim
            )),
        }
    }

    /// The glue's `sno_generator_initialize(force, take_over)` on a running primary.
    fn initialize(&mut self, x: usize, force: bool, take_over: bool) -> Result<(), Refused> {
        let sh = self.servers[x].mem.sh.clone();
        let status = sh.file.get();
        let file = self.servers[x].file.clone();
        let read = file.map(|f| (decode(&f.bytes), f));
        match (status, read) {
            (FileState::Ready, Some((Ok(_), _))) => {}
            (FileState::Ready, _) => sh.update(|m| m.dirty = true),
            (_, Some((Ok(mut f), df))) => {
                let Some(ver) = df.ver.clone() else {
                    self.fail(format!("server {x}: a corrupt state file was read"));
                    return Err(Refused::State(FileState::Broken));
                };
                self.older_put_back(x, &df);
                let ver = ver.borrow();
                let (sysid, inode, tli) = {
                    let s = &self.servers[x];
                    (s.sysid, s.inode, s.tli)
                };
                let targets = derived_targets(&f);
                let inc = self.draw.incarnation(sysid, &targets);
                if f.system_identifier != sysid {
                    f.system_identifier = sysid;
                    f.timeline = UPGRADED;
                    f.at_start(true, inode, inc, 0);
                } else {
                    f.at_start(false, inode, inc, tli);
                }
                // What WAL replay taught the memory: a partition the file says is this
                // server's stays its own (crash recovery replayed its own records).
                // (`State::learn`: the entries, and what left the memory's table.)
                let adopted_mine = sh.update(|m| {
                    let adopted_mine = f.learn(&m.lineage);
                    m.timeline.close(&sh.cursor);
                    let mut tl = Timeline::restore(f.me, Slice::FULL);
                    tl.absorb(m.timeline.durable(), &sh.cursor);
                    m.timeline = tl;
                    m.lineage = f;
                    m.judged = (u32::MAX, -1);
                    m.dirty = true;
                    adopted_mine
                });
                self.stats.adopted_mine += adopted_mine as u64;
                sh.new_epoch();
                sh.file.set(FileState::Ready);
                let s = &mut self.servers[x];
                s.mem.know.union(&ver.know);
                if let Some(z) = df.stale_of {
                    let lost = self.lost_with(x, z, &ver.know);
                    self.servers[x].mem.know.union(&lost);
                }
                let s = &mut self.servers[x];
                let k = s.mem.know.clone();
                s.high.union(&k);
            }
            (_, None) => {
                sh.update(|m| m.dirty = true);
                sh.file.set(FileState::Ready);
            }
            (_, Some((Err(_), _))) => {
                if !force {
                    return Err(Refused::State(FileState::Broken));
                }
                sh.update(|m| m.dirty = true);
                sh.file.set(FileState::Ready);
            }
        }
        // Judged now (a copy taken right after must know the configured partition); an
        // Inherited refusal is left to `sno_generate`, unless taking it over was asked for.
        match self.judge(x, take_over) {
            Ok(()) => {}
            Err(Refused::Inherited(p)) if take_over => return Err(Refused::Inherited(p)),
            Err(Refused::Inherited(_)) => self.stats.deferred_refusals += 1,
            Err(r) => return Err(r),
        }
        self.write_dirty(x);
        Ok(())
    }

    /// What server `x` forgets by reading a state file that knows `kept`, put back from server
    /// `z`'s copies: what either ever knew beyond it (as forgiven rows).
    /// Also marks `x` as running on a state older than what it knew, if it forgets anything.
    fn lost_with(&mut self, x: usize, z: usize, kept: &Know) -> Know {
        let mut high = self.servers[x].high.clone();
        high.union(&self.servers[z].high);
        let mut lost = Know {
            upto: Vec::new(),
            forgiven: high.forgiven.clone(),
        };
        lost.forgive(&high, kept);
        if lost.forgiven.len() > high.forgiven.len() {
            self.servers[x].stale = true;
        }
        lost
    }

    /// Marks `x` as running on an older state file if `f`, put back by an administrator, is not the
    /// latest state file its data directory held (even one that knows as much: it may be the
    /// file a copy or a rewind brought, which says the data directory is a copy again).
    fn older_put_back(&mut self, x: usize, f: &DirFile) {
        let latest = match (
            &f.ver,
            self.servers[x]
                .last_good
                .as_ref()
                .and_then(|g| g.ver.as_ref()),
        ) {
            (Some(a), Some(b)) => Rc::ptr_eq(a, b),
            _ => false,
        };
        if f.stale_of.is_some() && !latest {
            self.servers[x].older_file = true;
        }
    }

    /// Puts a copy of a state file back into the data directory.
    fn put_back(&mut self, x: usize, f: DirFile) {
        self.note(|| {
            format!(
                "put back on {x}: {:?}",
                f.ver
                    .as_ref()
                    .map(|v| (v.borrow().st.incarnation, v.borrow().know.upto.clone()))
            )
        });
        self.servers[x].file = Some(DirFile {
            stale_of: Some(x),
            ..f
        });
        self.stats.put_backs += 1;
        self.remember(x);
    }

    /// What an administrator does after a refusal, as its HINT says.
    fn answer(&mut self, x: usize, r: Refused) {
        self.note(|| format!("refused {x}: {r:?}"));
        match r {
            Refused::Clock => self.stats.refused_clock += 1,
            Refused::Busy => self.fail(format!("server {x}: a call waited for its own write")),
            Refused::Inherited(p) => {
                self.stats.refused_inherited += 1;
                let others: Vec<usize> = self
                    .used_by
                    .get(&p)
                    .map(|u| u.iter().copied().filter(|&o| o != x).collect())
                    .unwrap_or_default();
                if others.is_empty() && (self.servers[x].stale || self.servers[x].older_file) {
                    // Its own records of an incarnation the older state file put back does not
                    // know (the documented exclusion): refusing is the safe side, as the
                    // records after its last flushed one are lost.
                    self.stats.stale_refusals += 1;
                } else if others.is_empty() {
                    let msg = format!(
                        "wrong refusal: {} was refused partition {p}, which no other server used or was given",
                        self.describe(x)
                    );
                    self.fail(msg);
                    return;
                }
                // The README's condition for `take_over`: the others are gone for good and
                // made no ID with the partition after the copy (none this server does not know).
                let gone = others.iter().all(|&o| self.servers[o].retired);
                let know = &self.servers[x].mem.know;
                let unknown = self.issued.iter().any(|(id, v)| {
                    id.partition() == p
                        && v.iter()
                            .any(|i| i.server != x && !know.knows(i.stream, i.serial))
                });
                if !others.is_empty() && gone && !unknown && self.draw.below(2) == 0 {
                    self.stats.forced_takeovers += 1;
                    if let Err(r) = self.initialize(x, false, true) {
                        self.fail(format!("server {x}: take_over failed: {r:?}"));
                    }
                } else {
                    let p = self.never_used();
                    self.configure(x, Some(p));
                }
            }
            Refused::State(status) => {
                match status {
                    FileState::Missing => self.stats.refused_missing += 1,
                    FileState::Broken => self.stats.refused_broken += 1,
                    FileState::Ready => self.fail(format!("server {x}: refused while ready")),
                }
                if let Some(f) = self.servers[x].last_good.clone() {
                    self.put_back(x, f);
                    if let Err(r) = self.initialize(x, false, false) {
                        self.fail(format!("server {x}: initialize failed: {r:?}"));
                    }
                } else {
                    let p = self.never_used();
                    self.configure(x, Some(p));
                    if let Err(r) = self.initialize(x, status == FileState::Broken, false) {
                        self.fail(format!("server {x}: initialize failed: {r:?}"));
                    }
                }
            }
        }
    }

    /// `n` IDs from backend `b` of server `x`, answering up to two refusals.
    fn generate(&mut self, x: usize, b: usize, n: usize, flush: bool) {
        let (mut made, mut answered) = (0, 0);
        while made < n && self.failure.is_none() {
            match self.gen_one(x, b, false) {
                Ok(()) => made += 1,
                Err(r) => {
                    self.answer(x, r);
                    answered += 1;
                    if answered > 2 || r == Refused::Clock {
                        break;
                    }
                }
            }
        }
        if flush {
            let s = &mut self.servers[x];
            s.flushed = s.wal.len();
        }
    }

    /// A crash and restart: unflushed WAL is lost; recovery replays WAL after the last
    /// checkpoint.
    fn crash(&mut self, x: usize) {
        self.stats.crashes += 1;
        if self.servers[x].wal.len() > self.servers[x].flushed {
            let s = &mut self.servers[x];
            s.wal.truncate(s.flushed);
            let end = s.flushed;
            s.history.retain(|(p, _, _)| *p <= end);
        }
        self.servers[x].running = false;
        self.start(x);
        let from = self.servers[x].checkpoint.min(self.servers[x].wal.len());
        let items: Vec<Item> = self.servers[x].wal[from..].to_vec();
        for it in &items {
            self.apply(x, it);
        }
        // The end of a crash recovery: a checkpoint on its WAL timeline.
        if self.servers[x].upstream.is_none() {
            self.checkpoint(x);
        }
    }

    /// A new data directory copied from `u`: its WAL up to `r`, the state file `file`, a
    /// `backup_label` if `label`; `tlis.start`: the timeline of the checkpoint it starts from
    /// (its `backup_label`'s `START TIMELINE`, and its `pg_control`'s), `tlis.min_rec` its
    /// `pg_control`'s minimum recovery point's.
    fn copy_of(
        &mut self,
        u: usize,
        r: usize,
        file: Option<DirFile>,
        label: bool,
        tlis: BackupTli,
        sno_first: bool,
    ) -> Option<usize> {
        if self.servers.len() >= MAX_SERVERS {
            return None;
        }
        let configured = match self.mode {
            Mode::Derived => None,
            Mode::PerNode => Some(self.never_used()),
            Mode::Mixed => self.servers[u].configured,
        };
        let src = &self.servers[u];
        let (sysid, tli) = (src.sysid, src.tli);
        let wal = src.wal[..r].to_vec();
        let mut y = self.server_new(sysid, tli, configured);
        y.wal = wal;
        y.flushed = r;
        y.checkpoint = r;
        y.min_recovery = r;
        y.upstream = Some(u);
        y.backup_label = label;
        y.label_tli = if label { tlis.start } else { 0 };
        y.ckpt_tli = tlis.start;
        y.min_rec_tli = tlis.min_rec;
        y.sno_first = sno_first;
        y.last_good = file.clone().filter(|f| f.ver.is_some());
        y.history = vec![(r, tlis, file.clone())];
        y.file = file;
        y.parents = vec![u];
        y.stale = self.servers[u].stale;
        // A copy keeps its original's setting: if neither the state file nor the WAL it
        // receives records it, nothing tells it its original uses (or is about to use) that
        // partition (decided at its first judgment with it).
        if self.mode == Mode::Mixed {
            y.unrecorded = configured;
        }
        self.servers.push(y);
        self.stats.copies += 1;
        Some(self.servers.len() - 1)
    }

    /// A base backup of `u` (`label`), or a copy of its files: WAL replay starts at a
    /// checkpoint at or after `u`'s last one; the state file is the one `u` holds now. A base
    /// backup starts from the checkpoint `pg_backup_start` makes (a restartpoint on a
    /// standby); a copy of the files from `u`'s last checkpoint, as its `pg_control` says.
    /// Either has `u`'s `pg_control` as it is then (its minimum recovery point's timeline).
    fn base_backup(&mut self, u: usize, at: u16, label: bool, sno_first: bool) -> Option<usize> {
        if self.servers.len() >= MAX_SERVERS {
            return None;
        }
        let (lo, hi) = {
            let s = &self.servers[u];
            (s.checkpoint.min(s.flushed), s.flushed)
        };
        let r = lo + at as usize % (hi - lo + 1);
        let tlis = if label {
            let b = self.backup_tli(u);
            let s = &mut self.servers[u];
            if s.running {
                s.checkpoint = s.checkpoint.max(r);
                s.ckpt_tli = b.start;
                if s.upstream.is_none() {
                    s.min_rec_tli = 0;
                }
            }
            b
        } else {
            let s = &self.servers[u];
            BackupTli {
                start: s.ckpt_tli,
                min_rec: s.min_rec_tli,
            }
        };
        let file = self.servers[u].file.clone();
        let y = self.copy_of(u, r, file, label, tlis, sno_first)?;
        self.note(|| {
            let s = &self.servers[u];
            format!(
                "copy {y} of {u} ({}, tli {}, checkpoint tli {}, min recovery tli {}, running {}, upstream {:?}): label {label}, {tlis:?}",
                if s.upstream.is_some() { "standby" } else { "primary" },
                s.tli,
                s.ckpt_tli,
                s.min_rec_tli,
                s.running,
                s.upstream
            )
        });
        self.servers[y].min_recovery = hi;
        self.servers[y].copied_on = Some((self.servers[u].sysid, self.servers[u].tli));
        Some(y)
    }

    /// Ends recovery on a new WAL timeline. `fast`: `pg_ctl promote`, which writes an
    /// end-of-recovery record and only requests the checkpoint on the new timeline (until the
    /// next checkpoint `pg_control` names the previous one as the checkpoint's, and the new one
    /// as the minimum recovery point's, "so that crash recovery can follow the timeline
    /// changes"); else (a recovery target reached) the checkpoint is made at once.
    fn promote(&mut self, y: usize, fast: bool) {
        self.stats.promotions += 1;
        self.next_tli += 1;
        let s = &mut self.servers[y];
        s.upstream = None;
        s.tli = self.next_tli;
        s.checkpoint = s.wal.len();
        s.flushed = s.wal.len();
        if fast {
            s.min_rec_tli = s.tli;
        } else {
            s.ckpt_tli = s.tli;
            s.min_rec_tli = 0;
        }
        self.note(|| format!("promote {y}: tli {}", self.next_tli));
    }

    /// Carries out one event.
    fn event(&mut self, ev: &Ev) {
        self.note(|| format!("{ev:?}"));
        match *ev {
            Ev::Gen {
                s,
                b,
                n,
                flush,
                busy,
            } => {
                if let Some(x) = self.pick(s, |v| v.running && v.upstream.is_none()) {
                    self.busy = busy;
                    self.generate(x, b as usize % BACKENDS, 1 + n as usize % 8, flush);
                    self.busy = None;
                }
            }
            Ev::Time { d } => self.now += u64::from(d),
            Ev::Clock { s, back, d } => {
                if let Some(x) = self.pick(s, |v| !v.retired) {
                    let o = &mut self.servers[x].offset;
                    let d = i64::from(d);
                    *o = if back { *o - d } else { *o + d / 5 }.clamp(-20_000, 20_000);
                }
            }
            Ev::Replicate { s, n } => {
                if let Some(y) = self.pick(s, |v| v.running && v.upstream.is_some()) {
                    let (u, len) = (self.servers[y].upstream, self.servers[y].wal.len());
                    if let Some(u) = u {
                        self.replicate(y, u, len + 1 + n as usize % 200);
                    }
                }
            }
            Ev::Checkpoint { s } => {
                if let Some(x) = self.pick(s, |v| v.running) {
                    self.checkpoint(x);
                }
            }
            Ev::Restart { s } => {
                if let Some(x) = self.pick(s, |v| v.running) {
                    self.stop(x);
                    self.start(x);
                }
            }
            Ev::Crash { s } => {
                if let Some(x) = self.pick(s, |v| v.running) {
                    self.crash(x);
                }
            }
            Ev::Stop { s } => {
                if let Some(x) = self.pick(s, |v| v.running) {
                    self.stop(x);
                }
            }
            Ev::Start { s } => {
                if let Some(x) = self.pick(s, |v| !v.running && !v.retired) {
                    self.start(x);
                }
            }
            Ev::Standby { s, at, sno_first } => {
                if let Some(u) = self.pick(s, |v| v.running) {
                    if let Some(y) = self.base_backup(u, at, true, sno_first) {
                        self.start(y);
                    }
                }
            }
            Ev::Clone {
                s,
                at,
                label,
                sno_first,
            } => {
                if let Some(u) = self.pick(s, |v| !v.retired) {
                    if self.foreign_file(u) {
                        // Not covered (README, "Known limits"): a copy of an upgraded cluster
                        // that holds the old cluster's state file and was never started. Both
                        // adopt that file as the upgrade; nothing on disk tells them apart.
                        self.stats.foreign_clones_skipped += 1;
                        return;
                    }
                    if let Some(y) = self.base_backup(u, at, label, sno_first) {
                        self.start(y);
                        // No standby.signal nor recovery.signal: not archive recovery, and it
                        // ends on the WAL timeline its WAL ends on, its original's.
                        self.servers[y].archive = false;
                        let end = self.servers[y].min_recovery;
                        if !self.replicate(y, u, end) {
                            self.fail(format!("clone {y} cannot replay its own backup"));
                        }
                        let tli = self.servers[u].tli;
                        let c = &mut self.servers[y];
                        c.upstream = None;
                        c.tli = tli;
                        self.checkpoint(y);
                    }
                }
            }
            Ev::Promote { s, keep_old } => {
                let ready =
                    |v: &Server| v.running && v.upstream.is_some() && v.wal.len() >= v.min_recovery;
                if let Some(y) = self.pick(s, ready) {
                    if !keep_old {
                        // The old primary at the top of the chain is stopped.
                        let mut top = y;
                        let mut hops = 0;
                        while let Some(u) = self.servers[top].upstream {
                            top = u;
                            hops += 1;
                            if hops > MAX_SERVERS {
                                break;
                            }
                        }
                        if top != y {
                            self.stop(top);
                        }
                    }
                    self.promote(y, true);
                }
            }
            Ev::Rewind { s, src } => self.rewind(s, src),
            Ev::Pitr {
                s,
                base,
                target,
                sno_first,
            } => self.pitr(s, base, target, sno_first),
            Ev::Upgrade {
                s,
                copy_file,
                retire,
            } => self.upgrade(s, copy_file, retire),
            Ev::LoseFile { s } => {
                if let Some(x) = self.pick(s, |v| !v.retired) {
                    self.servers[x].file = None;
                    self.remember(x);
                }
            }
            Ev::CorruptFile { s, at } => {
                if let Some(x) = self.pick(s, |v| {
                    !v.retired && v.file.as_ref().is_some_and(|f| f.ver.is_some())
                }) {
                    if let Some(f) = self.servers[x].file.clone() {
                        let mut bytes = f.bytes.to_vec();
                        let i = at as usize % bytes.len();
                        bytes[i] ^= 1 + (at % 255) as u8;
                        // Every changed byte is detected (the checksum line too: only the
                        // spelling `state_file::encode` writes is accepted).
                        if let Ok(st) = decode(&bytes) {
                            self.fail(format!("a changed state file was accepted: {st:?}"));
                        }
                        self.servers[x].file = Some(DirFile {
                            bytes: bytes.into(),
                            ver: None,
                            stale_of: None,
                        });
                        self.remember(x);
                    }
                }
            }
            Ev::PutBack { s, older } => self.put_back_event(s, older),
            Ev::Initialize { s, force } => {
                if let Some(x) = self.pick(s, |v| v.running && v.upstream.is_none()) {
                    let status = self.servers[x].mem.status();
                    if status != FileState::Ready && self.servers[x].configured.is_some() {
                        // Without a usable state, an explicit partition is kept only with the
                        // file put back: what the HINT says.
                        let r = Refused::State(status);
                        self.answer(x, r);
                    } else {
                        let _ = self.initialize(x, force, false);
                    }
                }
            }
            Ev::SetPartition { s, choice } => {
                if let Some(x) = self.pick(s, |v| !v.retired) {
                    let c = match self.mode {
                        Mode::Derived => None,
                        Mode::PerNode => Some(self.never_used()),
                        Mode::Mixed => match choice % 3 {
                            0 => None,
                            1 => Some(self.never_used()),
                            _ => {
                                // Any of its own, with an entry or not.
                                let s = &self.servers[x];
                                let mine: Vec<u16> = s.mem.sh.read(|m| {
                                    m.lineage
                                        .used_by_me
                                        .iter()
                                        .filter(|&p| p < EXPLICIT_LIMIT)
                                        .collect()
                                });
                                if s.running && !mine.is_empty() {
                                    Some(mine[choice as usize % mine.len()])
                                } else {
                                    None
                                }
                            }
                        },
                    };
                    self.configure(x, c);
                    // The reload wakes the `sno lineage` worker (on a running primary): the
                    // state file knows the partition before any copy can be taken.
                    if self.servers[x].running && self.servers[x].upstream.is_none() {
                        self.settle(x);
                    }
                }
            }
            Ev::Settle { s, busy } => {
                if let Some(x) = self.pick(s, |v| v.running && v.upstream.is_none()) {
                    self.busy = busy;
                    self.settle(x);
                    self.busy = None;
                }
            }
            Ev::Burst { s, n } => self.burst(s, n),
            Ev::Retire { s } => {
                if let Some(x) = self.pick(s, |v| !v.retired) {
                    self.stop(x);
                    self.servers[x].retired = true;
                }
            }
        }
    }

    /// [`Ev::Burst`]: `sno.partition` set on a running primary to many new partitions in turn
    /// (each reload wakes the worker, which records it), an ID made with each, then the
    /// setting it had.
    fn burst(&mut self, s: u8, n: u8) {
        // At most two a case: each is many judgments and writes.
        let count = MAX_ENTRIES as u16 + u16::from(n % 16);
        let room = self.next_explicit + count + 50 <= EXPLICIT_LIMIT;
        if self.mode == Mode::Derived || !room || self.stats.bursts >= 2 {
            return;
        }
        let ok = |v: &Server| v.running && v.upstream.is_none() && !v.retired;
        let Some(x) = self.pick(s, ok) else {
            return;
        };
        if self.servers[x].mem.status() != FileState::Ready {
            return;
        }
        // Its setting judged first (a promotion takes its partition over now), so that going
        // back to it is going back to its own.
        if self.judge(x, false).is_err() {
            return;
        }
        self.write_dirty(x);
        self.stats.bursts += 1;
        let before = self.servers[x].configured;
        for _ in 0..count {
            let p = self.never_used();
            self.configure(x, Some(p));
            self.settle(x);
            self.generate(x, 0, 1, true);
        }
        self.configure(x, before);
        self.settle(x);
    }

    /// pg_rewind of the old primary picked by `s` from a running primary of the same cluster
    /// on another WAL timeline; it then follows that primary.
    fn rewind(&mut self, s: u8, src: u8) {
        let Some(x) = self.pick(s, |v| v.upstream.is_none() && !v.retired) else {
            return;
        };
        let (sysid, tli) = (self.servers[x].sysid, self.servers[x].tli);
        let candidates: Vec<usize> = (0..self.servers.len())
            .filter(|&i| {
                let v = &self.servers[i];
                i != x
                    && v.running
                    && v.upstream.is_none()
                    && v.sysid == sysid
                    && v.tli != tli
                    && !v.wal.is_empty()
                    && self.servers[x]
                        .wal
                        .first()
                        .is_some_and(|f| f.serial == v.wal[0].serial)
            })
            .collect();
        if candidates.is_empty() {
            return;
        }
        let u = candidates[src as usize % candidates.len()];
        let c = {
            let (a, b) = (&self.servers[x].wal, &self.servers[u].wal);
            a.iter()
                .zip(b.iter())
                .take_while(|(p, q)| p.serial == q.serial)
                .count()
        };
        self.stop(x);
        self.stats.rewinds += 1;
        let file = self.servers[u].file.clone();
        let end = self.servers[u].flushed.max(c);
        // pg_rewind copies the source's pg_control; its backup_label has no START TIMELINE.
        // The rewound server replays up to the source's WAL end, on the source's timeline:
        // pg_rewind sets the minimum recovery point there, on the latest of the (running)
        // source's checkpoint and minimum recovery point timelines.
        let (ckpt_tli, min_rec_tli, src_tli, stale) = {
            let v = &self.servers[u];
            (v.ckpt_tli, v.ckpt_tli.max(v.min_rec_tli), v.tli, v.stale)
        };
        let s = &mut self.servers[x];
        s.wal.truncate(c);
        s.flushed = c;
        s.checkpoint = c;
        s.min_recovery = end;
        s.upstream = Some(u);
        s.backup_label = true;
        s.label_tli = 0;
        s.ckpt_tli = ckpt_tli;
        s.min_rec_tli = min_rec_tli;
        s.sno_first = true;
        s.tli = src_tli;
        if file.as_ref().is_some_and(|f| f.ver.is_some()) {
            s.last_good = file.clone();
        }
        let tlis = BackupTli {
            start: ckpt_tli,
            min_rec: min_rec_tli,
        };
        s.history = vec![(c, tlis, file.clone())];
        s.file = file;
        s.high = Know::default();
        s.stale = stale;
        s.own_claims.clear();
        s.parents.push(u);
        s.copied_on = None;
        self.start(x);
    }

    /// A PITR: an older base backup of the server picked by `s`, replayed to a target, then
    /// promoted.
    fn pitr(&mut self, s: u8, base: u8, target: u16, sno_first: bool) {
        let Some(u) = self.pick(s, |v| !v.history.is_empty()) else {
            return;
        };
        let flushed = self.servers[u].flushed;
        let bases: Vec<(usize, BackupTli, Option<DirFile>)> = self.servers[u]
            .history
            .iter()
            .filter(|(p, _, _)| *p <= flushed)
            .cloned()
            .collect();
        if bases.is_empty() {
            return;
        }
        let (pos, tlis, file) = bases[base as usize % bases.len()].clone();
        let t = pos + target as usize % (flushed - pos + 1);
        let Some(y) = self.copy_of(u, pos, file, true, tlis, sno_first) else {
            return;
        };
        self.stats.pitrs += 1;
        self.start(y);
        if !self.replicate(y, u, t) {
            self.fail(format!("PITR {y} cannot replay its archive"));
        }
        self.promote(y, false);
    }

    /// pg_upgrade of the primary picked by `s` to a new cluster (new system identifier, WAL
    /// timeline 1, no state file unless the administrator copies it in).
    fn upgrade(&mut self, s: u8, copy_file: bool, retire: bool) {
        if self.servers.len() >= MAX_SERVERS {
            return;
        }
        let Some(x) = self.pick(s, |v| v.upstream.is_none() && !v.retired) else {
            return;
        };
        self.stop(x);
        self.stats.upgrades += 1;
        let sysid = self.draw.u64() | 1;
        let old = self.servers[x].clone();
        let mut y = self.server_new(sysid, 1, old.configured);
        y.file = if copy_file {
            old.file.clone().map(|f| DirFile {
                stale_of: f.stale_of.or(Some(x)),
                ..f
            })
        } else {
            None
        };
        y.last_good = old.last_good.clone();
        let tlis = BackupTli {
            start: 1,
            min_rec: 0,
        };
        y.history = vec![(0, tlis, y.file.clone())];
        y.parents = vec![x];
        y.stale = old.stale;
        self.servers.push(y);
        if retire || self.mode == Mode::PerNode {
            self.servers[x].retired = true;
        }
        let y = self.servers.len() - 1;
        self.start(y);
    }

    /// An administrator puts back a copy of the state file (the latest, or an older one),
    /// then runs `sno_generator_initialize()` on a primary.
    fn put_back_event(&mut self, s: u8, older: u8) {
        let Some(x) = self.pick(s, |v| !v.retired && v.last_good.is_some()) else {
            return;
        };
        let f = {
            let s = &self.servers[x];
            let mut versions: Vec<DirFile> = Vec::new();
            for f in s.history.iter().filter_map(|(_, _, f)| f.as_ref()) {
                if let Some(v) = &f.ver {
                    if !versions
                        .iter()
                        .any(|o| o.ver.as_ref().is_some_and(|w| Rc::ptr_eq(v, w)))
                    {
                        versions.push(f.clone());
                    }
                }
            }
            if older == 0 || versions.len() < 2 {
                s.last_good.clone()
            } else {
                Some(versions[older as usize % (versions.len() - 1)].clone())
            }
        };
        let Some(f) = f else {
            return;
        };
        self.put_back(x, f);
        if self.servers[x].running && self.servers[x].upstream.is_none() {
            let _ = self.initialize(x, false, false);
        }
    }
}

/// Whose call of the room a host serves.
#[derive(Clone, Copy, Debug, Default)]
struct Call {
    /// The backend making the call (none: the worker, `sno_generator_initialize`).
    backend: Option<usize>,
    /// The judgment is `sno_generator_initialize(take_over)`'s.
    take_over: bool,
    /// A call interleaved with another's write of the durable state ([`Busy`]): it cannot
    /// take the writer lock.
    nested: bool,
}

/// Server `x` of a world as the room's host sees it around its shared memory: the world's
/// clock and time, the server's setting, the draws, its state file and WAL; and what the
/// room's locked sections decided, checked by [`World::judged`].
struct Side<'w> {
    w: RefCell<&'w mut World>,
    x: usize,
    call: Call,
    /// The lineage state as the current locked section found it (for its judgment).
    pre: RefCell<Option<State>>,
    /// The file state as the current locked section found it.
    file: Cell<FileState>,
}

/// The room's host for server `x` of a world.
type LinHost<'s, 'w> = model::Host<'s, Side<'w>>;

impl Side<'_> {
    /// How the partition the last judgment published is being used (a backend takes it with
    /// the partition).
    fn cur(&self) -> Use {
        self.w.borrow().servers[self.x].mem.cur
    }
}

impl model::Model for Side<'_> {
    /// The world's time (`World::now`).
    type Instant = u64;

    fn clock(&self) -> u64 {
        self.w.borrow().clock(self.x)
    }

    fn source(&self) -> Source {
        let configured = self.w.borrow().servers[self.x].configured;
        configured.map_or(Source::Derived, Source::Explicit)
    }

    /// An incarnation for a server whose state knows the derived partitions it knows:
    /// sometimes one colliding with them ([`Draw::incarnation`]).
    fn draw(&self) -> u64 {
        let targets = self
            .pre
            .borrow()
            .as_ref()
            .map(derived_targets)
            .unwrap_or_default();
        let mut w = self.w.borrow_mut();
        let sysid = w.servers[self.x].sysid;
        w.draw.incarnation(sysid, &targets)
    }

    fn put_file(&self, st: &State) -> std::io::Result<()> {
        self.w.borrow_mut().put_file(self.x, st, self.call);
        Ok(())
    }

    fn log_record(&self, st: &State, timeline: u32, _unimportant: bool) -> u64 {
        self.w
            .borrow_mut()
            .log_record(self.x, st, timeline, self.call)
    }

    fn flush(&self, lsn: u64) {
        self.w.borrow_mut().flush(self.x, lsn, self.call);
    }

    fn now(&self) -> u64 {
        self.w.borrow().now
    }

    /// The world's time when the server's clock reaches `unit`, plus one unit of grace.
    fn turn_counts_from(&self, unit: u64) -> u64 {
        let offset = self.w.borrow().servers[self.x].offset;
        (unit as i64 - offset + 1).max(0) as u64
    }

    /// The world's time moves on until the server's clock reaches `until`, within
    /// `sno.max_clock_wait` ([`MAX_WAIT`]) of `from`. The room never asks to wait for a clock
    /// that went back unless it is behind.
    fn wait_for_unit(
        &self,
        until: u64,
        from: u64,
        why: Wait,
        given_up: &dyn Fn() -> bool,
    ) -> Result<bool, SlowError> {
        let mut w = self.w.borrow_mut();
        let clock = w.clock(self.x);
        if until <= clock && why == Wait::ClockBehind {
            w.fail(format!(
                "server {}: told to wait for {until} at {clock}",
                self.x
            ));
            return Err(SlowError::GaveUp {
                waited_ms: 0,
                until,
                why,
            });
        }
        match model::wait(clock, w.now, until, from, MAX_WAIT, why, given_up)? {
            Some(d) => {
                w.now += d;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn enter(&self, memory: &Memory, shared: &model::Shared) {
        *self.pre.borrow_mut() = Some(memory.lineage);
        self.file.set(shared.file.get());
    }

    fn leave(&self, _shared: &model::Shared, section: &model::Section) {
        let pre = self.pre.borrow_mut().take();
        if let (true, Some(pre)) = (section.judged, pre) {
            self.w
                .borrow_mut()
                .judged(self.x, &pre, self.file.get(), section, self.call.take_over);
        }
    }

    fn note(&self, n: server::Note) {
        let w = self.w.borrow();
        w.note(|| format!("note {}: {n:?}", self.x));
    }
}

/// A seed with which the first server of a `Mode::Mixed` case has an explicit partition.
const SEED_EXPLICIT: u64 = 1;

/// Runs one case; returns its counters, or the first failure. `trace`: prints every event.
fn run(sc: &Scenario, trace: bool) -> Result<Stats, TestCaseError> {
    run_in(World::new(sc.mode, sc.seed, sc.clusters, trace), sc)
}

/// Runs the events of `sc` in `w`.
fn run_in(mut w: World, sc: &Scenario) -> Result<Stats, TestCaseError> {
    if let Some(f) = w.failure.take() {
        return Err(TestCaseError::fail(format!("set-up: {f}")));
    }
    for (i, ev) in sc.events.iter().enumerate() {
        w.step = i;
        w.event(ev);
        if let Some(f) = w.failure.take() {
            return Err(TestCaseError::fail(format!("step {i} ({ev:?}): {f}")));
        }
    }
    w.stats.cases = 1;
    w.stats.steps = sc.events.len() as u64;
    w.stats.colliding_draws = w.draw.colliding;
    Ok(w.stats)
}

/// Random events, weighted towards making IDs, moving clocks and replicating.
fn ev() -> impl Strategy<Value = Ev> {
    let s = any::<u8>();
    prop_oneof![
        30 => (s, any::<u8>(), any::<u8>(), prop::bool::weighted(0.8), busy())
            .prop_map(|(s, b, n, flush, busy)| Ev::Gen { s, b, n, flush, busy }),
        8 => prop_oneof![3 => 0u16..6, 1 => 100u16..800].prop_map(|d| Ev::Time { d }),
        5 => (s, any::<bool>(), 1u16..1500).prop_map(|(s, back, d)| Ev::Clock { s, back, d }),
        12 => (s, any::<u16>()).prop_map(|(s, n)| Ev::Replicate { s, n }),
        3 => s.prop_map(|s| Ev::Checkpoint { s }),
        2 => s.prop_map(|s| Ev::Restart { s }),
        3 => s.prop_map(|s| Ev::Crash { s }),
        1 => s.prop_map(|s| Ev::Stop { s }),
        2 => s.prop_map(|s| Ev::Start { s }),
        3 => (s, any::<u16>(), prop::bool::weighted(0.8))
            .prop_map(|(s, at, sno_first)| Ev::Standby { s, at, sno_first }),
        1 => (s, any::<u16>(), any::<bool>(), prop::bool::weighted(0.8))
            .prop_map(|(s, at, label, sno_first)| Ev::Clone { s, at, label, sno_first }),
        2 => (s, any::<bool>()).prop_map(|(s, keep_old)| Ev::Promote { s, keep_old }),
        1 => (s, any::<u8>()).prop_map(|(s, src)| Ev::Rewind { s, src }),
        1 => (s, any::<u8>(), any::<u16>(), prop::bool::weighted(0.8))
            .prop_map(|(s, base, target, sno_first)| Ev::Pitr { s, base, target, sno_first }),
        1 => (s, any::<bool>(), any::<bool>())
            .prop_map(|(s, copy_file, retire)| Ev::Upgrade { s, copy_file, retire }),
        1 => s.prop_map(|s| Ev::LoseFile { s }),
        1 => (s, any::<u16>()).prop_map(|(s, at)| Ev::CorruptFile { s, at }),
        1 => (s, any::<u8>()).prop_map(|(s, older)| Ev::PutBack { s, older }),
        1 => (s, any::<bool>()).prop_map(|(s, force)| Ev::Initialize { s, force }),
        1 => (s, any::<u8>()).prop_map(|(s, choice)| Ev::SetPartition { s, choice }),
        1 => (s, any::<u8>()).prop_map(|(s, n)| Ev::Burst { s, n }),
        1 => s.prop_map(|s| Ev::Retire { s }),
        2 => (s, busy()).prop_map(|(s, busy)| Ev::Settle { s, busy }),
    ]
}

/// Mostly none; else another backend's IDs before one step of a write.
fn busy() -> impl Strategy<Value = Option<Busy>> {
    let at = prop_oneof![Just(Step::File), Just(Step::Record), Just(Step::Flush)];
    prop_oneof![
        3 => Just(None),
        1 => (at, any::<u8>()).prop_map(|(at, n)| Some(Busy { at, n })),
    ]
}

/// Random cases.
fn scenario() -> impl Strategy<Value = Scenario> {
    (
        prop_oneof![1 => Just(Mode::Derived), 1 => Just(Mode::PerNode), 2 => Just(Mode::Mixed)],
        any::<u64>(),
        1u8..=2,
        prop::collection::vec(ev(), 1..1500),
    )
        .prop_map(|(mode, seed, clusters, events)| Scenario {
            mode,
            seed,
            clusters,
            events,
        })
}

/// The main property, over random cases (256; `SNO_MODEL_CASES` sets another number, and
/// proptest's `PROPTEST_RNG_SEED` a fixed seed: see [`model::property`]). The counters of the
/// run are printed (`--nocapture`); `SNO_MODEL_TRACE=1` prints the events of the minimal
/// failing case.
#[test]
fn no_id_is_ever_issued_twice_outside_the_documented_exclusion() {
    let t = model::property(256, scenario(), run);
    // The views' forecast was checked against real judgments, refusals among them; backends
    // made IDs while writes were in flight.
    assert!(
        t.forecasts > 0 && t.refused_inherited > 0 && t.ids_during_writes > 0,
        "{t:#?}"
    );
}

/// The model's colliding draws give the derived partition they aim at.
#[test]
fn colliding_incarnations_have_the_target_partition() {
    let mut d = Draw {
        rng: 7,
        used: HashSet::new(),
        colliding: 0,
    };
    for sysid in [1u64, 7_312_345_678 << 32, u64::MAX] {
        for t in [EXPLICIT_LIMIT, 4242, u16::MAX] {
            for _ in 0..20 {
                let inc = d.incarnation(sysid, &[t]);
                let p = derived_partition(sysid, inc);
                assert!(p == t || d.used.contains(&p));
            }
        }
    }
    assert!(d.colliding > 0);
}

/// A hand-written case: one event list, every check.
fn case(mode: Mode, seed: u64, events: Vec<Ev>) -> Scenario {
    Scenario {
        mode,
        seed,
        clusters: 1,
        events,
    }
}

/// Backend 0 of the running primary picked by `s` makes one ID (`flush`: its WAL flushed).
fn gen(s: u8, flush: bool) -> Ev {
    Ev::Gen {
        s,
        b: 0,
        n: 0,
        flush,
        busy: None,
    }
}

/// Runs a hand-written case; its counters. `SNO_MODEL_TRACE=1` prints its events.
fn run_case(sc: &Scenario) -> Stats {
    model::hand(sc, run)
}

// Regression tests: the minimal cases of the bugs this model found, now fixed.

/// A primary with an explicit partition loses its state file, then crashes: crash recovery
/// replays its own lineage records into a fresh state, in memory only (they are not all its
/// own writes that count: those after the last flushed record are lost), and the status stays
/// MISSING. Its first ID gets the missing-file refusal, whose HINT (the latest file put back)
/// makes the file's partition its own again. It used to replay them as another server's,
/// become READY and refuse its own partition as a copy's.
#[test]
fn a_lost_state_file_and_a_crash_get_the_missing_refusal() {
    let stats = run_case(&case(
        Mode::PerNode,
        0,
        vec![
            gen(0, true),
            Ev::LoseFile { s: 0 },
            Ev::Crash { s: 0 },
            gen(0, true),
        ],
    ));
    assert!(stats.learnt_in_memory > 0, "{stats:#?}");
    assert!(stats.refused_missing > 0, "{stats:#?}");
    assert_eq!(stats.refused_inherited, 0, "{stats:#?}");
    assert!(stats.adopted_mine > 0, "{stats:#?}");
}

/// The same with IDs made under a new lineage record just before the crash, their rows not
/// flushed: the file put back (the latest) covers them, so taking its own partition back
/// repeats none. It used to be refused as a copy of itself, and taking the partition over (the
/// HINT's other branch then) resumed after the older record: it repeated those IDs (the record
/// was lost with the unflushed WAL then; `make_durable` now flushes it before the IDs leave).
#[test]
fn a_lost_state_file_and_a_crash_repeat_no_id_of_an_unflushed_record() {
    let stats = run_case(&case(
        Mode::PerNode,
        3,
        vec![
            gen(0, true),
            // Far enough for a new horizon: a new lineage record, left unflushed.
            Ev::Time { d: 600 },
            gen(0, false),
            Ev::LoseFile { s: 0 },
            Ev::Crash { s: 0 },
            gen(0, true),
        ],
    ));
    assert!(stats.refused_missing > 0, "{stats:#?}");
    assert_eq!(
        stats.refused_inherited + stats.forced_takeovers,
        0,
        "{stats:#?}"
    );
}

/// The same with a partition given just before the crash, its IDs' rows not flushed: the
/// fresh state, READY from replay, did not know it (its record was lost with the unflushed WAL
/// then) and started it from nothing, repeating its IDs. Now the missing-file refusal comes
/// first, and the file put back knows it.
#[test]
fn a_lost_state_file_and_a_crash_repeat_no_id_of_a_new_partition() {
    let stats = run_case(&case(
        Mode::PerNode,
        0,
        vec![
            gen(0, true),
            Ev::SetPartition { s: 0, choice: 0 },
            // A new unit: the slow path runs, the new partition is judged.
            Ev::Time { d: 1 },
            gen(0, false),
            Ev::LoseFile { s: 0 },
            Ev::Crash { s: 0 },
            gen(0, true),
        ],
    ));
    assert!(stats.refused_missing > 0, "{stats:#?}");
    assert_eq!(stats.refused_inherited, 0, "{stats:#?}");
}

/// A clone (a base backup run as a primary beside its original) of a server just promoted,
/// which has not judged since (its state file still names the timeline before the promotion):
/// the clone starts on its backup_label's START TIMELINE, the new one, so it is not judged as
/// promoted and is refused its original's partition. It used to take it over.
#[test]
fn a_clone_of_a_freshly_promoted_server_is_refused() {
    let stats = run_case(&case(
        Mode::Mixed,
        SEED_EXPLICIT,
        vec![
            gen(0, true),
            Ev::Standby {
                s: 0,
                at: 0,
                sno_first: true,
            },
            Ev::Replicate { s: 0, n: 100 },
            Ev::Promote {
                s: 0,
                keep_old: false,
            },
            Ev::Clone {
                s: 1,
                at: 0,
                label: true,
                sno_first: true,
            },
            gen(0, true),
            gen(1, true),
            // The clone's clock is 7 units (28 ms) behind its original's: it would repeat
            // the original's first ID.
            Ev::Time { d: 7 },
            gen(1, true),
        ],
    ));
    assert!(stats.start_timeline_moved > 0, "{stats:#?}");
    assert!(stats.refused_inherited > 0, "{stats:#?}");
}

/// A clone of a new cluster configured with `sno.partition`, made before its original's first
/// ID: `CREATE EXTENSION` (`sno_generator_initialize`) judged the partition, so the clone's
/// state file records it and the clone is refused it. It used to share it.
#[test]
fn a_clone_made_before_the_first_id_is_refused() {
    let stats = run_case(&case(
        Mode::Mixed,
        SEED_EXPLICIT,
        vec![
            Ev::Clone {
                s: 0,
                at: 0,
                label: true,
                sno_first: true,
            },
            gen(0, true),
            gen(1, true),
            // The clone's clock is 216 units behind its original's: it would repeat the
            // original's first ID.
            Ev::Time { d: 216 },
            gen(1, true),
        ],
    ));
    assert!(stats.refused_inherited > 0, "{stats:#?}");
}

/// A copy of the files of a server promoted (`pg_ctl promote`) since its last checkpoint,
/// run as a primary beside it: `pg_control` still names the timeline before the promotion as
/// its checkpoint's, and the new one as its minimum recovery point's (the end-of-recovery
/// record's), on which the clone's recovery ends. The clone starts on the new one, is not
/// judged as promoted and is refused its original's partition. It used to start on the
/// checkpoint's timeline and take the partition over.
#[test]
fn a_file_copy_of_a_freshly_promoted_server_is_refused() {
    let stats = run_case(&case(
        Mode::Mixed,
        SEED_EXPLICIT,
        vec![
            gen(0, true),
            Ev::Standby {
                s: 0,
                at: 0,
                sno_first: true,
            },
            Ev::Replicate { s: 0, n: 100 },
            Ev::Promote {
                s: 0,
                keep_old: false,
            },
            Ev::Clone {
                s: 1,
                at: 0,
                label: false,
                sno_first: true,
            },
            gen(0, true),
            gen(1, true),
            // The clone's clock is 7 units (28 ms) behind its original's: it would repeat the
            // original's first ID.
            Ev::Time { d: 7 },
            gen(1, true),
        ],
    ));
    assert!(stats.start_timeline_moved > 0, "{stats:#?}");
    assert!(stats.refused_inherited > 0, "{stats:#?}");
    // The promoted server's takeover alone.
    assert_eq!(stats.takeovers, 1, "{stats:#?}");
}

/// A base backup of a standby whose upstream was promoted since the standby's last
/// restartpoint, run as a primary beside it: its `START TIMELINE` is that restartpoint's,
/// before the promotion, but the standby's `pg_control` (copied last) names the timeline it
/// replays on as its minimum recovery point's. The clone starts on it and is refused the
/// partition. It used to start on the `START TIMELINE` and take the partition over.
#[test]
fn a_base_backup_of_a_standby_after_a_promotion_is_refused() {
    let stats = run_case(&case(
        Mode::Mixed,
        SEED_EXPLICIT,
        vec![
            gen(0, true),
            Ev::Standby {
                s: 0,
                at: 0,
                sno_first: true,
            },
            // A standby of the standby.
            Ev::Standby {
                s: 1,
                at: 0,
                sno_first: true,
            },
            Ev::Replicate { s: 0, n: 100 },
            Ev::Promote {
                s: 0,
                keep_old: false,
            },
            // The cascaded standby follows the promoted one onto its new timeline.
            Ev::Replicate { s: 0, n: 100 },
            Ev::Clone {
                s: 2,
                at: 0,
                label: true,
                sno_first: true,
            },
            gen(0, true),
            gen(1, true),
            // The promoted server's clock is 216 units (864 ms) behind the clone's: it would
            // repeat the clone's first ID.
            Ev::Time { d: 216 },
            gen(0, true),
        ],
    ));
    assert!(stats.start_timeline_moved > 0, "{stats:#?}");
    assert!(stats.refused_inherited > 0, "{stats:#?}");
    assert_eq!(stats.takeovers, 1, "{stats:#?}");
}

/// A copy of a cluster just made by pg_upgrade (the old state file copied in), taken before
/// its first judgment: its state names the `UPGRADED` timeline, but the copy is not the
/// upgrade. It starts on its `START TIMELINE` and is refused the partition, which its original
/// takes over. It used to keep `UPGRADED` and be judged as the upgrade too: both took the
/// partition over.
#[test]
fn a_copy_of_a_freshly_upgraded_cluster_is_refused() {
    let stats = run_case(&case(
        Mode::Mixed,
        SEED_EXPLICIT,
        vec![
            gen(0, true),
            Ev::Upgrade {
                s: 0,
                copy_file: true,
                retire: true,
            },
            Ev::Clone {
                s: 0,
                at: 0,
                label: true,
                sno_first: true,
            },
            gen(0, true),
            gen(1, true),
            // The clone's clock is 238 units (952 ms) behind its original's: it would repeat
            // the original's first ID.
            Ev::Time { d: 238 },
            gen(1, true),
        ],
    ));
    assert!(stats.start_timeline_moved > 0, "{stats:#?}");
    assert!(stats.refused_inherited > 0, "{stats:#?}");
    // The upgraded cluster's takeover alone.
    assert_eq!(stats.takeovers, 1, "{stats:#?}");
}

// The case not covered (found by the main property once it made clones of every kind at any
// moment).

/// Not covered (README, "Known limits"): an upgraded cluster given the old cluster's state
/// file before its first start, and copied before that start. The model makes no such copy:
/// the case is run here only to show that the copy is skipped, not made.
#[test]
fn a_copy_of_an_upgraded_cluster_before_its_first_start_is_not_made() {
    let stats = run_case(&case(
        Mode::Mixed,
        SEED_EXPLICIT,
        vec![
            gen(0, true),
            Ev::Upgrade {
                s: 0,
                copy_file: false,
                retire: true,
            },
            // The model starts the new cluster at once; stopped before it made an ID (without
            // a state file), it is given the old cluster's latest one, as if copied in before
            // its first start.
            Ev::Stop { s: 0 },
            Ev::PutBack { s: 0, older: 0 },
            Ev::Clone {
                s: 0,
                at: 0,
                label: false,
                sno_first: true,
            },
            Ev::Start { s: 0 },
            gen(0, true),
            gen(1, true),
            Ev::Time { d: 238 },
            gen(1, true),
            gen(0, true),
        ],
    ));
    assert_eq!(stats.foreign_clones_skipped, 1, "{stats:#?}");
    assert_eq!(stats.takeovers, 1, "{stats:#?}");
}

// The documented exclusions, like PostgreSQL's sequences: they do happen.

/// An older state file put back over a promoted standby's, then a crash: the server replays
/// its own records of an incarnation that file does not know, and is refused its own
/// partition (the HINT's new partition is safe; taking it over would resume after its last
/// flushed record, not after its last ID).
#[test]
fn an_older_state_file_and_a_crash_refuse_the_own_partition() {
    let stats = run_case(&case(
        Mode::PerNode,
        0,
        vec![
            gen(0, true),
            Ev::Standby {
                s: 0,
                at: 0,
                sno_first: true,
            },
            Ev::Replicate { s: 0, n: 100 },
            Ev::Promote {
                s: 0,
                keep_old: true,
            },
            gen(1, true),
            Ev::PutBack { s: 1, older: 1 },
            Ev::Crash { s: 1 },
            gen(1, true),
        ],
    ));
    assert!(stats.stale_refusals > 0, "{stats:#?}");
}

/// A standby promoted while its old primary had made IDs it never received (here: the
/// primary's newest lineage record and IDs were not flushed, so never streamed) takes the
/// primary's explicit partition over and may repeat those IDs.
#[test]
fn a_promotion_takes_over_and_may_repeat_ids_never_received() {
    let stats = run_case(&case(
        Mode::Mixed,
        SEED_EXPLICIT,
        vec![
            gen(0, false),
            Ev::Clock {
                s: 0,
                back: true,
                d: 2,
            },
            Ev::Standby {
                s: 0,
                at: 0,
                sno_first: false,
            },
            gen(0, true),
            Ev::Restart { s: 104 },
            gen(0, false),
            Ev::Replicate { s: 0, n: 203 },
            Ev::Clock {
                s: 0,
                back: false,
                d: 1,
            },
            Ev::Promote {
                s: 0,
                keep_old: false,
            },
            gen(0, false),
        ],
    ));
    assert!(stats.takeovers > 0, "{stats:#?}");
    assert!(stats.dups_takeover > 0, "{stats:#?}");
}

/// A PITR to a target before the last IDs of its original takes the explicit partition over
/// and may repeat them.
#[test]
fn a_pitr_takes_over_and_may_repeat_ids_after_its_target() {
    let stats = run_case(&case(
        Mode::Mixed,
        SEED_EXPLICIT,
        vec![
            gen(0, false),
            Ev::Restart { s: 0 },
            gen(0, false),
            gen(0, false),
            Ev::Pitr {
                s: 0,
                base: 29,
                target: 0,
                sno_first: false,
            },
            Ev::Pitr {
                s: 127,
                base: 0,
                target: 0,
                sno_first: false,
            },
            gen(55, false),
            gen(29, false),
        ],
    ));
    assert!(stats.dups_takeover > 0, "{stats:#?}");
}

/// pg_upgrade with the old cluster left running: the new cluster, given the old state file as
/// the missing-file HINT says, takes the explicit partition over like a promotion, and the two
/// may repeat each other's IDs.
#[test]
fn an_upgrade_takes_over_and_may_repeat_ids_of_the_old_cluster() {
    let stats = run_case(&case(
        Mode::Mixed,
        SEED_EXPLICIT,
        vec![
            gen(0, false),
            Ev::Clock {
                s: 0,
                back: true,
                d: 196,
            },
            gen(0, false),
            Ev::Stop { s: 0 },
            Ev::Upgrade {
                s: 0,
                copy_file: false,
                retire: false,
            },
            gen(0, false),
            Ev::Start { s: 0 },
            gen(66, false),
        ],
    ));
    assert!(stats.refused_missing > 0, "{stats:#?}");
    assert!(stats.dups_takeover > 0, "{stats:#?}");
}

/// A server given back an older state file forgets the IDs it made after it, and may repeat
/// them (any partition).
#[test]
fn an_older_state_file_put_back_may_repeat_ids() {
    let stats = run_case(&case(
        Mode::Mixed,
        SEED_EXPLICIT,
        vec![
            Ev::Stop { s: 0 },
            Ev::Pitr {
                s: 0,
                base: 0,
                target: 0,
                sno_first: false,
            },
            gen(0, false),
            Ev::PutBack { s: 65, older: 187 },
            Ev::Restart { s: 0 },
            gen(0, false),
        ],
    ));
    assert!(stats.dups_stale > 0, "{stats:#?}");
}
