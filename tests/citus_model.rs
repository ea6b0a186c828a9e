//! A model of a Citus *cluster*: several node groups (the coordinator, group 0, and workers
//! 1, 2, ..., numbers never reused), each a lineage of PostgreSQL servers (a primary, its
//! synchronous and asynchronous standbys, clones, PITR restores, rewound old primaries),
//! driven by random event orders and clocks, checking that no two servers ever make one ID.
//!
//! The model runs a server's generator as the PostgreSQL glue does: every decision is the
//! room's, [`sno::generator::server`] (`judge`, `write` with `needed_now` or the plan of
//! `sno_generator_initialize`, `settle`, `generate_slow`), hosted in memory by the models'
//! harness (`tests/model`: [`model::Shared`] is a server's shared memory, [`model::Host`] the
//! room's host over it and this model's [`Around`]), over the crate's pure code
//! ([`State::judge_source`] with [`Source::Citus`], [`State::at_start`], [`State::replay`],
//! [`State::written`], [`Timeline`], [`Cursor`], the state file and WAL record formats). What
//! the glue does outside the room is the model's: the fast path (`src/pg/issuer/hot.rs`),
//! redo (`durable.rs`: `replay`), start-up (`src/pg/shmem.rs`: `restore_state`), and what a
//! backend reads of Citus (`src/pg/citus.rs`: `publish`). Each server has its shared memory (the
//! lineage state, timeline, cursor, epoch and judgment), a state file (the bytes of
//! `state_file::encode`, read back with `state_file::decode` whenever a server starts from it or
//! a copy is made of it), a WAL of lineage records (`wal_record::encode`, replayed through
//! `wal_record::decode`), a WAL timeline, a `global/pg_control` inode, a clock offset, and what
//! Citus's catalog (`pg_dist_local_group`, `pg_dist_node`) says of it.
//!
//! IDs are made as the glue makes them: the cursor's fast path while the backend's epoch is
//! current, else the room's slow path (a `Write` grant writes the state file and its WAL
//! record, flushed; every synchronous standby of the model replays a record as it is flushed,
//! so that it has it before anything it covers is handed out, as `wal::make_durable` waits for
//! them). Every ID issued is recorded as (unit, tick, partition, sequence) with the server and
//! the incarnation that made it. The WAL holds lineage records only, not the rows of the IDs: the
//! IDs are checked against the global record of every ID issued, and what a server knows of
//! other servers' IDs is, in the code as in the model, only what lineage records and state
//! files told it. (Whether a standby can follow a promoted sibling is decided on lineage
//! records alone, so the model lets some standbys follow that PostgreSQL would make wait for
//! pg_rewind: more scenarios, never fewer.)
//!
//! Events: IDs made on running primaries (a backend reads Citus's catalog first, as
//! `generate_slow` does); the `sno lineage` worker's pass (`settle`); time passing; clocks set
//! forward and back (by up to 6 s, per server); asynchronous standbys replaying some of their
//! primary's WAL (synchronous ones always have every record); base backups (a standby, sync or
//! async, or a backup kept for PITR); primaries killed, standbys lost; promotions of a sync or
//! an async standby (the old primary killed, or left running: split brain), the siblings whose
//! WAL allows following the promoted one; failover storms (a group promoted up to 20 times in
//! a row, so that some groups use all 15 live generations); a dead primary started again (a
//! restart, or split brain once another server replaced it) or rewound (pg_rewind: the new
//! primary's state file and WAL, a `backup_label`) into a standby of a primary of its cluster;
//! clean restarts; PITR (a base backup restored, its archive replayed to a target, promoted on
//! a new timeline, replacing its group's node); clones run beside their original on the same
//! timeline (refused `CitusCopy` until `citus_add_node` gives them a group, or `take_over`
//! under the HINT's condition: every other server of the group gone for good, none having made
//! IDs since the copy); new nodes (`CREATE EXTENSION sno` judges before any backend read
//! Citus) activated by `citus_add_node` (a new group number); groups removed (their nodes read
//! "not activated" and keep their group's partitions); removed nodes added again (a new group).
//!
//! Checked, at every ID:
//! * it is within the bound of the server's last written state file;
//! * its partition is one of the group the server's lineage generates for, which is the group
//!   Citus gives the server when it was judged: no two servers of different groups ever use
//!   one partition;
//! * within a group, a partition is used by a second incarnation (a server that may have made
//!   IDs the first never saw, and the other way round) only if the second took it over knowing
//!   all 15 live generations used, and only after the bound it absorbed;
//! * a clone beside its original never uses its original's group;
//! * and ultimately: no ID is issued twice across the whole cluster, excluding nothing.
//!
//! Also checked: state files and WAL records round-trip; `CitusCopy` is refused only to a
//! clone in its original's group, `CitusNotActivated` only to a server whose lineage never had
//! a group; a Citus partition is taken over only when all 15 live generations were known; a
//! synchronous standby always knows every partition its primary recorded; a wait for the clock
//! to come back is for a unit it has not reached. And what the room does under the lock, after
//! each of its locked sections ([`Around::leave`]): a judgment publishes the partition
//! [`State::judge_source`] gives for the state it found, and starts a new epoch; the timeline
//! in memory never holds as written a horizon the state file does not have.
//!
//! **Scope.** The design does not hold in the situations below, which this model found
//! ([`Scope`]). The main property runs without them ([`Scope::COVERED`]: the random events
//! that would make them are skipped); [`the_whole_model_finds_the_holes`] (ignored) makes them
//! all, and fails within a few cases. Each of the first five has a minimal hand-written case
//! (ignored, it fails: four IDs made twice). In all five, a new incarnation takes a generation
//! another server of its group uses or will use, because what it knows of the group's
//! generations is incomplete, and the group's generation is recorded only at a server's
//! first judgment with Citus (its first ID in a Citus database, or the worker's pass after
//! one), not when it is promoted or activated:
//! * an asynchronous standby promoted without the records naming every partition its primary
//!   knows: chained failovers (`hole_chained_async_failover`), or a standby made before its
//!   primary's first ID;
//! * split brain (a promotion leaving its primary running, a replaced primary started again)
//!   where the old primary had not yet recorded its generation
//!   (`hole_split_brain_before_the_generation_is_recorded`);
//! * a clone of a primary that had not recorded its group (`citus_group` and a partition of
//!   it): it is not refused (`hole_clone_before_the_group_is_recorded`), also when its first
//!   judgment is the worker's (a derived one, which clears `copied`);
//! * a promotion in a copy of a clone that has not recorded a group of its own (a standby of
//!   it, a server rewound from it, given a group by `citus_add_node` and removed before it
//!   judged): promotions skip the `CitusCopy` check (`hole_promoted_standby_of_a_clone`);
//! * PITR from an archive that ends before a later generation record (a recovery target, two
//!   restores of one backup, a backup of a server another one replaced):
//!   `hole_pitr_twice_from_one_backup`;
//! * and the documented exception of a group that used all 15 live generations: the takeover of
//!   the one with the oldest bound, when its holder made IDs beyond the bound the taker knows
//!   (a tail an asynchronous standby missed, now or earlier in its lineage; a split brain's
//!   old primary, running or having run after it was replaced). (The oldest bound is not
//!   always an old generation: with clocks apart, it may be the one the just failed primary
//!   used.)
//!
//! `take_over` is made only under the condition it stands for: every other server of the group
//! (or that made IDs for it) stopped for good, none having made IDs since the copy, and the
//! original the group's node (no split brain in the group): a clone of a replaced primary does
//! not know the generations its group took since. (Also found, and fixed: a derived partition
//! recorded by `CREATE EXTENSION` that fell in the range of a group made a clone given that
//! group refused as a copy of it: `a_derived_partition_in_a_new_groups_range_does_not_refuse_a_clone`.)
//!
//! Not covered: two standbys of one primary both promoted (two nodes for one group: Citus
//! registers one, and they take the same generation); copies with neither a `backup_label` nor
//! another `pg_control` inode; lost or corrupt state files and older ones put back (the
//! single-lineage model, `tests/lineage_model.rs`, covers those); `sno.partition` and derived
//! partitions making IDs in a Citus cluster (a derived partition is in some group's range);
//! full 4 ms units.

mod model;

use model::{Counters, Entering, Model, Section, Session, Shared};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use sno::generator::bound::{ticks, Persisted};
use sno::generator::citus::{self, Node, Source, LIVE_GENERATIONS};
use sno::generator::cursor::Slice;
use sno::generator::lineage::{Judgment, Refusal, State, NO_GROUP};
use sno::generator::server::{self, FileState, Host as _, Memory, SlowError, Wait};
use sno::generator::state_file::{decode, encode};
use sno::generator::timeline::Timeline;
use sno::generator::wal_record;
use std::cell::{Cell, Ref, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

/// `sno.max_clock_wait` (10 s) in 4 ms units.
const MAX_WAIT: u64 = 2_500;
/// The clock at the start of a case (4 ms units since 2010).
const START_UNITS: u64 = 300_000_000;
/// Servers a case may create.
const MAX_SERVERS: usize = 64;
/// `sno.idle_horizon` in 4 ms units, for the worker's `settle`: its default, 60 s (the worker
/// of an idle server writes a horizon that far past the clock once).
const IDLE_LEAD: u64 = 15_000;

/// The situations the model makes, beyond what the design handles (see the module's
/// documentation): each `true` lets the random events make it.
#[derive(Clone, Copy, Debug)]
struct Scope {
    /// An asynchronous standby promoted though it lacks a record naming a partition its
    /// primary knows.
    async_unseen: bool,
    /// Split brain (a promotion leaving its primary running, a replaced primary started
    /// again) though the old primary had not recorded the generation it uses.
    split_unrecorded: bool,
    /// Clones of a primary whose state file records no group, or no partition of it.
    clone_unrecorded: bool,
    /// Copies (standbys, backups, rewinds, clones) of a clone that has not recorded a group of
    /// its own.
    clone_descendants: bool,
    /// PITR from any backup to any target (else: from a backup of the group's running node,
    /// its archive replayed to the end).
    pitr_any: bool,
    /// Once a group used all 15 live generations, a takeover of one whose holder made or may make
    /// IDs beyond the bound the taker knows (the documented exception).
    wrap_unseen: bool,
}

impl Scope {
    /// What the design handles.
    const COVERED: Scope = Scope {
        async_unseen: false,
        split_unrecorded: false,
        clone_unrecorded: false,
        clone_descendants: false,
        pitr_any: false,
        wrap_unseen: false,
    };
    /// Everything.
    const EVERYTHING: Scope = Scope {
        async_unseen: true,
        split_unrecorded: true,
        clone_unrecorded: true,
        clone_descendants: true,
        pitr_any: true,
        wrap_unseen: true,
    };
}

/// One event of a case. Server numbers are taken modulo the servers the event applies to.
#[derive(Clone, Debug)]
enum Ev {
    /// A running primary makes `1 + n % 6` IDs. A refusal is answered by `answer % 3`:
    /// nothing, `citus_add_node` (a new group), or `take_over` when the HINT's condition holds
    /// (else `citus_add_node`).
    Gen { s: u8, n: u8, answer: u8 },
    /// A pass of the `sno lineage` worker on a running primary (with the idle lease).
    Settle { s: u8 },
    /// Time passes (every clock moves).
    Time { d: u16 },
    /// One server's clock is set forward or back.
    Clock { s: u8, back: bool, d: u16 },
    /// A standby replays `1 + n % 4` more records of its primary's WAL.
    Replicate { s: u8, n: u8 },
    /// A standby made with pg_basebackup from a running primary.
    Standby { s: u8, sync: bool },
    /// A base backup of a running primary, kept for PITR.
    Backup { s: u8 },
    /// A running server dies: a primary's data directory stays (it may be started again or
    /// rewound), a standby is gone for good.
    Kill { s: u8 },
    /// A standby is promoted; `split`: its primary goes on (else it is killed first).
    Promote { s: u8, split: bool },
    /// `1 + n % 20` failovers in a row in one group: an ID, a synchronous standby made, the
    /// primary killed, the standby promoted.
    Storm { s: u8, n: u8 },
    /// A dead primary is started again.
    Revive { s: u8 },
    /// A clean restart of a running primary (the worker writes the state file at the stop).
    Restart { s: u8 },
    /// pg_rewind of a dead primary (or a standby that cannot follow) into a standby of a
    /// running primary of its cluster.
    Rewind { s: u8, src: u8, sync: bool },
    /// A base backup restored, its archive replayed to a target, promoted: its group's node.
    Pitr { b: u8, target: u8 },
    /// A base backup of a running primary started beside it, on the same WAL timeline.
    Clone { s: u8 },
    /// A new node: `CREATE EXTENSION sno`, then (if `activate`) `citus_add_node`.
    AddNode { activate: bool },
    /// `citus_add_node` of a running primary Citus does not know (a new node, a removed one):
    /// a new group number.
    Activate { s: u8 },
    /// `citus_remove_node` of a worker group: its nodes read "not activated".
    RemoveGroup { g: u8 },
}

/// A case: a seed for the model's random numbers, the workers at the start, the events.
#[derive(Clone, Debug)]
struct Scenario {
    seed: u64,
    workers: u8,
    events: Vec<Ev>,
}

/// What a server is now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// Makes IDs (a primary, a clone, a promoted standby, a restored node).
    Primary,
    /// Replays the WAL of `up`; `sync`: a synchronous standby.
    Standby { up: usize, sync: bool },
    /// Stopped; its data directory stays.
    Dead,
    /// Gone for good.
    Gone,
}

/// One lineage record in a WAL.
#[derive(Clone, Debug)]
struct Item {
    /// Unique over the case: tells whether two WALs share history.
    serial: u64,
    /// The WAL timeline it was written on.
    tli: u32,
    /// Its bytes (`wal_record::encode`).
    rec: Vec<u8>,
}

/// A base backup kept for PITR.
#[derive(Clone, Debug)]
struct Backup {
    src: usize,
    sysid: u64,
    file: String,
    wal: Vec<Item>,
    tli: u32,
    catalog: Option<u32>,
    /// The group its server was given or generated for.
    group: Option<u32>,
}

/// One server (a data directory, and the memory of the server running on it).
struct Server {
    /// How it was made.
    origin: &'static str,
    sysid: u64,
    inode: u64,
    role: Role,
    /// Its WAL timeline.
    tli: u32,
    /// What Citus's catalog says of it: `None` is "not activated".
    catalog: Option<u32>,
    /// Its clock minus the world's, in units.
    offset: i64,
    /// Its shared memory: the lineage state, timeline, cursor, epoch and judgment (a new one at
    /// each start).
    shared: Rc<Shared>,
    /// The backend making IDs (one at a time; a new one at each start).
    session: Session<()>,
    /// The `sno lineage` worker's count of the units opened at its last look (`settle`).
    worker_opened: u64,
    /// What a backend published of Citus since the server started (`Shared::citus_node`).
    published: Option<Node>,
    /// The state file's bytes.
    file: String,
    /// The state it holds.
    written: State,
    /// Its WAL.
    wal: Vec<Item>,
    /// A clone beside its original: the original's group (until `take_over`).
    beside: Option<u32>,
    /// For a clone: the IDs its original's group had made when it was copied.
    copied_at: u64,
    /// For a clone: its original was its group's node (no other server had replaced it).
    of_current: bool,
    /// Another server replaced it as its group's node (a standby of it was promoted, or a
    /// PITR restore took its place): its remaining standbys are not failover candidates.
    succeeded: bool,
    /// A standby whose primary's data directory was replaced (rewound): it follows nothing
    /// until it is rewound in its turn.
    orphan: bool,
    /// The groups it made IDs for.
    used_groups: Vec<u32>,
    /// It made IDs after another server replaced it (split brain): IDs its group's later
    /// servers never saw.
    ran_after_split: bool,
}

impl Server {
    /// The lineage state in its memory.
    fn st(&self) -> Ref<'_, State> {
        Ref::map(self.shared.memory.borrow(), |m| &m.lineage)
    }

    /// The partition the last judgment published (`Shared::partition`).
    fn partition(&self) -> u16 {
        self.shared.partition.get()
    }
}

/// A judgment of one partition by one incarnation.
#[derive(Clone, Copy, Debug)]
struct Judg {
    absorb: Persisted,
    took_over: bool,
    /// Every generation of the group was known to be used before.
    all_known: bool,
}

/// Counters over the run.
#[derive(Clone, Debug, Default)]
struct Stats {
    cases: u64,
    steps: u64,
    servers: u64,
    ids: u64,
    dups: u64,
    writes: u64,
    /// Writes of the idle lease (WAL records marked unimportant).
    idle_leases: u64,
    /// Clean stops that wrote the high-water mark.
    clean_stops: u64,
    promotions_sync: u64,
    promotions_async: u64,
    async_missing_tail: u64,
    promotions_split: u64,
    revives_after_split: u64,
    rewinds: u64,
    pitrs: u64,
    clones: u64,
    citus_copy_refusals: u64,
    not_activated_refusals: u64,
    take_overs: u64,
    add_nodes: u64,
    removed_groups: u64,
    clock_give_ups: u64,
    max_generation: u64,
    wraps: u64,
}

impl Counters for Stats {
    fn add(&mut self, o: &Stats) {
        self.cases += o.cases;
        self.steps += o.steps;
        self.servers += o.servers;
        self.ids += o.ids;
        self.dups += o.dups;
        self.writes += o.writes;
        self.idle_leases += o.idle_leases;
        self.clean_stops += o.clean_stops;
        self.promotions_sync += o.promotions_sync;
        self.promotions_async += o.promotions_async;
        self.async_missing_tail += o.async_missing_tail;
        self.promotions_split += o.promotions_split;
        self.revives_after_split += o.revives_after_split;
        self.rewinds += o.rewinds;
        self.pitrs += o.pitrs;
        self.clones += o.clones;
        self.citus_copy_refusals += o.citus_copy_refusals;
        self.not_activated_refusals += o.not_activated_refusals;
        self.take_overs += o.take_overs;
        self.add_nodes += o.add_nodes;
        self.removed_groups += o.removed_groups;
        self.clock_give_ups += o.clock_give_ups;
        self.max_generation = self.max_generation.max(o.max_generation);
        self.wraps += o.wraps;
    }
}

/// Why `gen_one` made no ID.
#[derive(Debug, PartialEq, Eq)]
enum Stop {
    Refused(Refusal),
    Clock,
}

/// splitmix64.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A server's shared memory at its start from state `st` (the glue's `restore_state`): the
/// timeline resumes past its bound, nothing judged yet.
fn started(st: State) -> Rc<Shared> {
    let mut timeline = Timeline::restore(st.me, Slice::FULL);
    timeline.recall(st.written_bound());
    let memory = Memory {
        timeline,
        units_opened: 0,
        lineage: st,
        judged: (u32::MAX, -1),
        dirty: false,
        members: sno::generator::member::Known::NONE,
    };
    Rc::new(Shared::new(memory, FileState::Ready))
}

/// Whether WAL `long` contains WAL `short` as a prefix.
fn extends(long: &[Item], short: &[Item]) -> bool {
    long.len() >= short.len()
        && short
            .last()
            .is_none_or(|i| long[short.len() - 1].serial == i.serial)
}

/// An ID as (unit, tick, partition, sequence).
type IdKey = (u64, u8, u16, u16);

/// The whole world of one case.
struct World {
    scope: Scope,
    /// Whether new servers get clock offsets.
    jitter: bool,
    now: u64,
    step: usize,
    rng: u64,
    servers: Vec<Server>,
    backups: Vec<Backup>,
    next_tli: u32,
    next_serial: u64,
    next_group: u32,
    next_inode: u64,
    /// Every ID issued: (unit, tick, partition, sequence) -> (server, incarnation, step).
    issued: HashMap<IdKey, (usize, u64, usize)>,
    /// Per partition, the incarnations that made IDs with it, in order.
    holders: HashMap<u16, Vec<u64>>,
    /// Per (incarnation, partition), its first judgment.
    judgments: HashMap<(u64, u16), Judg>,
    /// IDs made per group.
    group_ids: HashMap<u32, u64>,
    /// Per partition, the highest unit of its IDs on each tick-tock timeline (-1: none).
    highest: HashMap<u16, [i64; 2]>,
    stats: Stats,
    failure: Option<String>,
    trace: bool,
}

impl World {
    /// A world with no server.
    fn bare(scope: Scope, seed: u64, jitter: bool, trace: bool) -> World {
        World {
            scope,
            jitter,
            now: START_UNITS,
            step: 0,
            rng: seed,
            servers: Vec::new(),
            backups: Vec::new(),
            next_tli: 2,
            next_serial: 0,
            next_group: 0,
            next_inode: 1000,
            issued: HashMap::new(),
            holders: HashMap::new(),
            judgments: HashMap::new(),
            group_ids: HashMap::new(),
            highest: HashMap::new(),
            stats: Stats::default(),
            failure: None,
            trace,
        }
    }

    /// The coordinator (group 0) and `workers` workers, each a new node activated at once,
    /// each with a synchronous and an asynchronous standby one time in two.
    fn new(scope: Scope, seed: u64, workers: u8, trace: bool) -> World {
        let mut w = World::bare(scope, seed, true, trace);
        for _ in 0..=workers {
            let x = w.add_node(true);
            if w.below(2) == 0 {
                w.standby(x, true);
            }
            if w.below(2) == 0 {
                w.standby(x, false);
            }
        }
        w
    }

    fn draw(&mut self) -> u64 {
        splitmix(&mut self.rng)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.draw() % n.max(1)
    }

    /// Records the first failure of the case.
    fn fail(&mut self, msg: String) {
        self.note(|| format!("FAIL {msg}"));
        if self.failure.is_none() {
            self.failure = Some(msg);
        }
    }

    /// Prints a line when tracing.
    fn note(&self, msg: impl FnOnce() -> String) {
        if self.trace {
            eprintln!("  [{}] {}", self.step, msg());
        }
    }

    fn describe(&self, x: usize) -> String {
        let s = &self.servers[x];
        // (Also while the room holds the lock, as it must not when the model is called.)
        let (group, incarnation) = match s.shared.memory.try_borrow() {
            Ok(m) => (m.lineage.citus_group as i64, m.lineage.incarnation),
            Err(_) => (-2, 0),
        };
        format!(
            "server {x} ({}, {:?}, catalog {:?}, lineage group {group}, tli {}, incarnation {incarnation:x})",
            s.origin, s.role, s.catalog, s.tli
        )
    }

    fn clock(&self, x: usize) -> u64 {
        (self.now as i64 + self.servers[x].offset).max(1) as u64
    }

    /// The servers `f` accepts, the `k`-th of them (modulo their number).
    fn pick(&self, k: u8, f: impl Fn(usize) -> bool) -> Option<usize> {
        let c: Vec<usize> = (0..self.servers.len()).filter(|&i| f(i)).collect();
        (!c.is_empty()).then(|| c[k as usize % c.len()])
    }

    fn running(&self, x: usize) -> bool {
        self.servers[x].role == Role::Primary
    }

    /// Whether copies may be made of `x`: not a clone that has not yet recorded a group of
    /// its own, unless in scope.
    fn copiable(&self, x: usize) -> bool {
        let v = &self.servers[x];
        self.scope.clone_descendants
            || v.beside
                .is_none_or(|g| v.written.citus_group != g && v.written.citus_group != NO_GROUP)
    }

    fn new_inode(&mut self) -> u64 {
        self.next_inode += 1;
        self.next_inode
    }

    /// The group a server is given by Citus, else the one its lineage generates for.
    fn group_of_server(&self, x: usize) -> Option<u32> {
        let s = &self.servers[x];
        let g = s.st().citus_group;
        s.catalog.or((g != NO_GROUP).then_some(g))
    }

    /// The generation `x`'s state file records as its own, on its WAL timeline, in the group
    /// Citus gives it; `None` when it records none (then it made no ID in this incarnation
    /// and on this timeline, as it writes its generation before making IDs with it).
    fn recorded(&self, x: usize) -> Option<u16> {
        let s = &self.servers[x];
        let w = &s.written;
        let g = s.catalog.unwrap_or(w.citus_group);
        if g == NO_GROUP || w.citus_group != g || w.timeline != s.tli {
            return None;
        }
        citus::partitions(g).find(|&p| w.is_mine(p))
    }

    /// Whether standby `y` knows every partition its primary `up` recorded (as its own or
    /// others'): it received every lineage record that named a new one (it may lack the
    /// later bounds).
    fn knows_generation(&self, y: usize, up: usize) -> bool {
        let st = self.servers[y].st();
        self.servers[up]
            .written
            .entries()
            .iter()
            .all(|e| st.is_mine(e.partition) || st.others(e.partition).is_some())
    }

    /// A server starting from state `st` (already read and passed through `at_start`).
    #[allow(clippy::too_many_arguments)]
    fn server(
        &mut self,
        origin: &'static str,
        sysid: u64,
        inode: u64,
        role: Role,
        tli: u32,
        catalog: Option<u32>,
        st: State,
        wal: Vec<Item>,
    ) -> usize {
        let offset = if self.jitter {
            self.below(401) as i64 - 200
        } else {
            0
        };
        self.servers.push(Server {
            origin,
            sysid,
            inode,
            role,
            tli,
            catalog,
            offset,
            shared: started(st),
            session: Session::default(),
            worker_opened: 0,
            published: None,
            file: String::new(),
            written: st,
            wal,
            beside: None,
            copied_at: 0,
            of_current: false,
            succeeded: false,
            orphan: false,
            used_groups: Vec::new(),
            ran_after_split: false,
        });
        self.stats.servers += 1;
        let x = self.servers.len() - 1;
        self.write_file(x, st);
        x
    }

    /// Writes `st` as `x`'s state file (and checks it reads back).
    fn write_file(&mut self, x: usize, st: State) {
        let text = encode(&st);
        if decode(text.as_bytes()) != Ok(st) {
            self.fail(format!("server {x}: the state file does not read back"));
        }
        let s = &mut self.servers[x];
        s.file = text;
        s.written = st;
    }

    /// Reads a state file at a server's start (`restore_state`): `at_start` with the copy's
    /// evidence.
    fn read_start(&mut self, file: &str, label: bool, inode: u64, tli: u32) -> State {
        let mut st = match decode(file.as_bytes()) {
            Ok(st) => st,
            Err(e) => {
                self.fail(format!("a state file does not decode: {e}"));
                State::fresh(0, 0, 0, 0)
            }
        };
        let inc = self.draw();
        st.at_start(label, inode, inc, tli);
        st
    }

    /// The memory of `x` started again from state `st`.
    fn boot(&mut self, x: usize, st: State) {
        let s = &mut self.servers[x];
        s.shared = started(st);
        s.session = Session::default();
        s.worker_opened = 0;
        s.published = None;
        if st != s.written {
            self.write_file(x, st);
        }
    }

    /// Starts `x` again from its state file (a restart, a dead primary started again).
    fn restart(&mut self, x: usize) {
        let (file, inode, tli) = {
            let s = &self.servers[x];
            (s.file.clone(), s.inode, s.tli)
        };
        let st = self.read_start(&file, false, inode, tli);
        self.boot(x, st);
    }

    /// Calls the room for server `x`: `f` is given the room's host over `x`'s shared memory and
    /// this world ([`Around`]), for the WAL timeline `x` is on; `take_over` is what the call
    /// judges with.
    fn room<R>(
        &mut self,
        x: usize,
        take_over: bool,
        f: impl FnOnce(&model::Host<'_, Around<'_>>, u32) -> R,
    ) -> R {
        let shared = Rc::clone(&self.servers[x].shared);
        let tli = self.servers[x].tli;
        let h = model::Host {
            shared: &shared,
            model: Around {
                w: RefCell::new(self),
                x,
                tli,
                take_over,
                before: RefCell::new(None),
                source: Cell::new(Source::Derived),
                draws: RefCell::new(Vec::new()),
            },
        };
        f(&h, tli)
    }

    /// A judgment the room made for `x` ([`Around::leave`]): `j` is what the lineage state
    /// `before` judged into `after`. Checks that the partition is one of the group Citus gives
    /// `x`, taken over only once all 15 live generations of it were known to be used, and
    /// records the incarnation's first judgment of it.
    fn judged(&mut self, x: usize, before: &State, after: &State, source: Source, j: &Judgment) {
        let g = after.citus_group;
        let cited = g != NO_GROUP;
        let all_known = cited
            && citus::live_partitions(g).all(|p| before.is_mine(p) || before.others(p).is_some());
        if cited {
            let given = match source {
                Source::Citus(Node::Group(c)) => c,
                _ => g,
            };
            if citus::group_of(j.partition) != g || g != given {
                self.fail(format!(
                    "{}: judged partition {} for group {g}, Citus says {given}",
                    self.describe(x),
                    j.partition
                ));
            }
            if j.took_over && !all_known {
                self.fail(format!(
                    "{}: took partition {} over before all {LIVE_GENERATIONS} live generations were used",
                    self.describe(x),
                    j.partition
                ));
            }
            let k = u64::from(citus::generation_of(j.partition));
            self.stats.max_generation = self.stats.max_generation.max(k);
        }
        self.judgments
            .entry((after.incarnation, j.partition))
            .or_insert(Judg {
                absorb: j.absorb,
                took_over: j.took_over,
                all_known,
            });
        self.note(|| format!("judge {x} ({source:?}): {j:?}"));
    }

    /// The lineage record of `st` on WAL timeline `tli`, appended to `x`'s WAL (and checked to
    /// read back); the end of its WAL.
    fn log_record(&mut self, x: usize, st: &State, tli: u32) -> u64 {
        let rec = wal_record::encode(st, tli);
        match wal_record::decode(&rec).ok() {
            Some(r) if r.incarnation == st.incarnation && r.bound == st.me && r.timeline == tli => {
            }
            other => self.fail(format!("record round trip: {other:?}")),
        }
        self.next_serial += 1;
        let serial = self.next_serial;
        self.stats.writes += 1;
        let wal = &mut self.servers[x].wal;
        wal.push(Item { serial, tli, rec });
        wal.len() as u64
    }

    /// `x`'s WAL flushed: every synchronous standby of `x` replays it at once, before anything
    /// it covers is handed out (`wal::make_durable`).
    fn flushed(&mut self, x: usize) {
        let syncs: Vec<usize> = (0..self.servers.len())
            .filter(|&y| {
                let s = &self.servers[y];
                s.role == Role::Standby { up: x, sync: true } && !s.orphan
            })
            .collect();
        for y in syncs {
            if !self.replicate(y, usize::MAX) {
                self.fail(format!(
                    "{}: a synchronous standby cannot follow {}",
                    self.describe(y),
                    self.describe(x)
                ));
            }
        }
    }

    /// The glue's `replay` (redo of a lineage record on a standby or a restore).
    fn redo(&mut self, y: usize, it: &Item) {
        let Ok(rec) = wal_record::decode(&it.rec) else {
            self.fail("an invalid record in WAL".to_string());
            return;
        };
        let s = &mut self.servers[y];
        let shared = &s.shared;
        let st = shared.update(|m| {
            let mut st = m.lineage;
            st.replay(rec.incarnation, rec.timeline, &rec.partitions, rec.bound);
            if rec.incarnation == st.incarnation {
                m.timeline.absorb(rec.bound, &shared.cursor);
                shared.new_epoch();
            }
            m.lineage = st;
            st
        });
        s.tli = s.tli.max(it.tli);
        self.write_file(y, st);
    }

    /// Standby `y` replays up to `n` more records of its primary's WAL; false if it follows
    /// nothing or its WAL is not a prefix of its primary's.
    fn replicate(&mut self, y: usize, n: usize) -> bool {
        let Role::Standby { up, .. } = self.servers[y].role else {
            return false;
        };
        if self.servers[y].orphan {
            return false;
        }
        let items: Vec<Item> = {
            let (mine, theirs) = (&self.servers[y].wal, &self.servers[up].wal);
            if !extends(theirs, mine) {
                return false;
            }
            let end = theirs.len().min(mine.len().saturating_add(n));
            theirs[mine.len()..end].to_vec()
        };
        for it in items {
            self.servers[y].wal.push(it.clone());
            self.redo(y, &it);
        }
        if self.servers[y].wal.len() == self.servers[up].wal.len() {
            // Caught up: it follows its primary's timeline.
            let t = self.servers[up].tli;
            let s = &mut self.servers[y];
            s.tli = s.tli.max(t);
        }
        true
    }

    /// One ID: the fast path (`hot.rs`), or the room's slow path (a backend first publishes
    /// what it reads of Citus; sessions come and go, so every call reads it).
    fn gen_one(&mut self, x: usize) -> Result<(), Stop> {
        let node = match self.servers[x].catalog {
            Some(g) => Node::Group(g),
            None => Node::NotActivated,
        };
        self.servers[x].published = Some(node);
        let now = self.clock(x);
        {
            let s = &self.servers[x];
            let b = s.session;
            if b.epoch != 0 {
                if let Some((u, t, q)) = s.shared.cursor.take(now) {
                    if s.shared.epoch.get() == b.epoch {
                        self.issue(x, b.partition, u, t, q);
                        return Ok(());
                    }
                }
            }
        }
        let mut session = self.servers[x].session;
        let made = self.room(x, false, |h, tli| {
            let mut b = Entering {
                session: &mut session,
                tag: || (),
            };
            // A room that writes without end would hang the model: it fails instead.
            let writes = Cell::new(0);
            let write_now = || {
                writes.set(writes.get() + 1);
                if writes.get() > 100 {
                    return Err(std::io::Error::other("100 writes for one ID"));
                }
                server::write(h, tli, server::needed_now)
            };
            server::generate_slow(h, &mut b, tli, &write_now)
        });
        self.servers[x].session = session;
        match made {
            Ok((unit, tick, p, seq)) => {
                self.issue(x, p, unit, tick, seq);
                Ok(())
            }
            Err(SlowError::Refused(r)) => Err(Stop::Refused(r)),
            Err(SlowError::GaveUp { .. }) => Err(Stop::Clock),
            Err(e) => {
                self.fail(format!("{}: {e:?}", self.describe(x)));
                Err(Stop::Clock)
            }
        }
    }

    /// The `sno lineage` worker's look on `x` (`settle`): a refusal and a failed write are only
    /// logged.
    fn settle(&mut self, x: usize) {
        let mut opened = self.servers[x].worker_opened;
        let _ = self.room(x, false, |h, tli| {
            server::settle(h, tli, &mut opened, IDLE_LEAD, |write| write())
        });
        self.servers[x].worker_opened = opened;
    }

    /// The worker's last act at a clean stop of `x` (the glue's `stop`): the state file gets
    /// the high-water mark instead of the horizon ahead of it ([`server::stop_plan`]), then
    /// memory records it ([`server::stopped`]). Only the file: WAL and the standbys keep the
    /// bound they have.
    fn stop(&mut self, x: usize) {
        self.room(x, false, |h, _| {
            if let Some((st, p)) = h.locked(server::stop_plan) {
                if h.put_file(&st).is_ok() {
                    h.locked(|m| server::stopped(h, m, p));
                    h.model.w.borrow_mut().stats.clean_stops += 1;
                }
            }
        });
    }

    /// `sno_generator_initialize` on `x` (its state file usable, or none yet if `dirty`): judged
    /// at once, with `take_over`, then written if the lineage changed. (A refusal: the glue
    /// writes anyway unless `take_over`, and `sno_generate` raises it; every caller here
    /// fails on it, written or not.)
    fn initialize(&mut self, x: usize, dirty: bool, take_over: bool) -> Result<(), SlowError> {
        self.room(x, take_over, |h, tli| {
            h.locked(|m| {
                m.dirty |= dirty;
                server::judge(h, m, tli, take_over)
            })?;
            server::write(h, tli, |m| {
                m.dirty.then(|| (server::next_durable(&m.timeline), false))
            })
            .map_err(SlowError::Write)?;
            Ok(())
        })
    }

    /// Hands out an ID and checks it.
    fn issue(&mut self, x: usize, p: u16, unit: u64, tick: u8, seq: u16) {
        let (inc, group, written, beside) = {
            let s = &self.servers[x];
            let st = s.st();
            (st.incarnation, st.citus_group, s.written, s.beside)
        };
        let t = (tick & 1) as usize;
        if ticks(&written.me)[t] < unit as i64 {
            self.fail(format!(
                "{} issued unit {unit} tick {tick} beyond its state file",
                self.describe(x)
            ));
        }
        let pg = citus::group_of(p);
        if group == NO_GROUP || pg != group {
            self.fail(format!(
                "{} used partition {p} (group {pg})",
                self.describe(x)
            ));
        }
        if beside == Some(pg) {
            self.fail(format!(
                "{} is a copy beside its original and used its original's group (partition {p})",
                self.describe(x)
            ));
        }
        *self.group_ids.entry(pg).or_default() += 1;
        let h = self.highest.entry(p).or_insert([-1, -1]);
        h[t] = h[t].max(unit as i64);
        if self.servers[x].succeeded {
            self.servers[x].ran_after_split = true;
        }
        if !self.servers[x].used_groups.contains(&pg) {
            self.servers[x].used_groups.push(pg);
        }
        let Some(j) = self.judgments.get(&(inc, p)).copied() else {
            self.fail(format!("{}: partition {p} never judged", self.describe(x)));
            return;
        };
        if ticks(&j.absorb)[t] >= unit as i64 {
            self.fail(format!(
                "{} issued unit {unit} tick {tick} with partition {p} within the bound it absorbed ({:?})",
                self.describe(x),
                j.absorb
            ));
        }
        let hs = self.holders.entry(p).or_default();
        if !hs.contains(&inc) {
            let before = hs.clone();
            hs.push(inc);
            if !before.is_empty() {
                if j.took_over && j.all_known {
                    self.stats.wraps += 1;
                } else {
                    self.fail(format!(
                        "{} made IDs with partition {p} (generation {}) of its group, already used by incarnations {before:x?} it did not know of ({j:?})",
                        self.describe(x),
                        citus::generation_of(p)
                    ));
                }
            }
        }
        self.stats.ids += 1;
        self.note(|| format!("issue {x}: {unit}/{tick}/{p}/{seq}"));
        let first = self
            .issued
            .insert((unit, tick, p, seq), (x, inc, self.step));
        if let Some((y, yinc, ystep)) = first {
            self.stats.dups += 1;
            let msg = format!(
                "ID unit {unit} tick {tick} partition {p} seq {seq} issued twice: at step {ystep} by server {y} (incarnation {yinc:x}), at step {} by {}",
                self.step,
                self.describe(x)
            );
            self.fail(msg);
        }
    }

    /// `CREATE EXTENSION sno` on a new node (`sno_generator_initialize`, judged before any
    /// backend read Citus), then `citus_add_node` if `activate`.
    fn add_node(&mut self, activate: bool) -> usize {
        let sysid = self.draw() | 1;
        let inode = self.new_inode();
        let inc = self.draw();
        let st = State::fresh(sysid, inc, 0, inode);
        let x = self.server("node", sysid, inode, Role::Primary, 1, None, st, Vec::new());
        if let Err(e) = self.initialize(x, true, false) {
            self.fail(format!("CREATE EXTENSION on a new node: {e:?}"));
        }
        if activate {
            self.activate(x);
        }
        x
    }

    /// `citus_add_node`: a new group number for `x`, and for the standbys replaying its WAL
    /// (at once, before any record of the group reaches them: the worst case).
    fn activate(&mut self, x: usize) {
        let g = self.next_group;
        self.next_group += 1;
        self.stats.add_nodes += 1;
        self.servers[x].catalog = Some(g);
        for y in 0..self.servers.len() {
            if matches!(self.servers[y].role, Role::Standby { up, .. } if up == x) {
                self.servers[y].catalog = Some(g);
            }
        }
        self.note(|| format!("citus_add_node {x}: group {g}"));
    }

    /// A base backup of `x` (its state file, its WAL), for PITR.
    fn backup(&mut self, x: usize) {
        let s = &self.servers[x];
        self.backups.push(Backup {
            src: x,
            sysid: s.sysid,
            file: s.file.clone(),
            wal: s.wal.clone(),
            tli: s.tli,
            catalog: s.catalog,
            group: self.group_of_server(x),
        });
    }

    /// A copy of `x` made with pg_basebackup, started with its `backup_label`.
    fn copy_of(&mut self, x: usize, origin: &'static str, role: Role) -> usize {
        let (file, wal, tli, sysid, catalog) = {
            let s = &self.servers[x];
            (s.file.clone(), s.wal.clone(), s.tli, s.sysid, s.catalog)
        };
        let inode = self.new_inode();
        let st = self.read_start(&file, true, inode, tli);
        self.server(origin, sysid, inode, role, tli, catalog, st, wal)
    }

    /// A standby of `x` made by a base backup (also kept for PITR).
    fn standby(&mut self, x: usize, sync: bool) -> Option<usize> {
        if self.servers.len() >= MAX_SERVERS {
            return None;
        }
        self.backup(x);
        let y = self.copy_of(x, "standby", Role::Standby { up: x, sync });
        self.note(|| format!("standby {y} of {x}, sync {sync}"));
        Some(y)
    }

    /// A clone of `x` started beside it.
    fn clone_of(&mut self, x: usize) -> Option<usize> {
        if self.servers.len() >= MAX_SERVERS {
            return None;
        }
        let g = self.group_of_server(x);
        let z = self.copy_of(x, "clone", Role::Primary);
        self.servers[z].beside = g;
        self.servers[z].of_current = !self.servers[x].succeeded;
        self.servers[z].copied_at = g.map_or(0, |g| self.group_ids.get(&g).copied().unwrap_or(0));
        self.stats.clones += 1;
        self.note(|| format!("clone {z} of {x}"));
        Some(z)
    }

    /// `sno_generator_initialize(take_over => true)` on a refused clone if the HINT's
    /// condition holds: every other server of its group (or that made IDs for it) is stopped
    /// for good (they are marked gone, the group's backups dropped) and none made IDs since
    /// the copy. Else `citus_add_node`.
    fn answer_copy(&mut self, x: usize, take_over: bool) {
        let g = self.group_of_server(x);
        let others: Vec<usize> = (0..self.servers.len())
            .filter(|&y| {
                let v = &self.servers[y];
                y != x
                    && (self.group_of_server(y) == g
                        || g.is_some_and(|g| {
                            v.st().citus_group == g
                                || v.written.citus_group == g
                                || v.used_groups.contains(&g)
                        }))
            })
            .collect();
        let stopped = others
            .iter()
            .all(|&y| matches!(self.servers[y].role, Role::Dead | Role::Gone));
        let since = g.map_or(0, |g| self.group_ids.get(&g).copied().unwrap_or(0));
        // And the original was the group's node, knowing every generation the group used: not
        // a replaced primary, and no split brain in the group.
        let known = self.servers[x].of_current
            && !(0..self.servers.len())
                .any(|y| self.servers[y].ran_after_split && self.group_of_server(y) == g);
        let stopped = stopped && known;
        if !(take_over && stopped && since == self.servers[x].copied_at) {
            self.activate(x);
            return;
        }
        for y in others {
            self.servers[y].role = Role::Gone;
        }
        self.backups.retain(|b| b.catalog != g);
        match self.initialize(x, false, true) {
            Ok(()) => {
                self.stats.take_overs += 1;
                self.servers[x].beside = None;
            }
            Err(r) => self.fail(format!("{}: take_over refused: {r:?}", self.describe(x))),
        }
    }

    /// `1 + n % 6` IDs on `x`; a refusal is answered by `answer % 3`.
    fn generate(&mut self, x: usize, n: u8, answer: u8) {
        for _ in 0..=n % 6 {
            match self.gen_one(x) {
                Ok(()) => {}
                Err(Stop::Clock) => {
                    self.stats.clock_give_ups += 1;
                    return;
                }
                Err(Stop::Refused(r)) => {
                    self.note(|| format!("refused {x}: {r:?}"));
                    match r {
                        Refusal::CitusCopy(_) => {
                            self.stats.citus_copy_refusals += 1;
                            // Only a clone, in its original's group (Citus's, or its lineage's
                            // when it reads "not activated").
                            let v = &self.servers[x];
                            if v.beside.is_none() || v.catalog.is_some_and(|c| Some(c) != v.beside)
                            {
                                let d = self.describe(x);
                                self.fail(format!("{d}: wrongly refused {r:?}"));
                            }
                            match answer % 3 {
                                0 => {}
                                1 => self.activate(x),
                                _ => self.answer_copy(x, true),
                            }
                        }
                        Refusal::CitusNotActivated => {
                            self.stats.not_activated_refusals += 1;
                            if self.servers[x].st().citus_group != NO_GROUP {
                                self.fail(format!("{}: wrongly refused {r:?}", self.describe(x)));
                            }
                            if answer % 3 != 0 {
                                self.activate(x);
                            }
                        }
                        r => self.fail(format!("{}: refused {r:?}", self.describe(x))),
                    }
                    return;
                }
            }
        }
    }

    /// Whether `y` knows all 15 live generations of its group used: its next new incarnation takes
    /// one over.
    fn wraps(&self, y: usize) -> bool {
        let st = self.servers[y].st();
        self.group_of_server(y).is_some_and(|g| {
            citus::live_partitions(g).all(|p| st.is_mine(p) || st.others(p).is_some())
        })
    }

    /// Whether promoting `y` may take over a generation whose holder made IDs beyond what
    /// `y` knows (see [`World::unseen_by`]); its primary `up` stops.
    fn wrap_unseen(&self, y: usize, up: usize) -> bool {
        self.group_of_server(y)
            .is_some_and(|g| self.unseen_by(&self.servers[y].st(), g, &[y, up]))
    }

    /// Whether a new incarnation of group `g` whose lineage knows `st` may take over a
    /// generation whose holder made IDs beyond what it knows: it will take one over (it knows
    /// all 15 live ones used), and some generation of the group has IDs beyond the bound it knows (a
    /// tail an asynchronous standby missed, now or earlier in its lineage; IDs a split
    /// brain's old primary made), or is held by a running server (but those of `stopping`)
    /// that may make more.
    fn unseen_by(&self, st: &State, g: u32, stopping: &[usize]) -> bool {
        let wraps = citus::live_partitions(g).all(|p| st.is_mine(p) || st.others(p).is_some());
        wraps
            && citus::live_partitions(g).any(|p| {
                let known = ticks(&st.others(p).unwrap_or(st.me));
                let made = self.highest.get(&p).copied().unwrap_or([-1, -1]);
                let beyond = made[0] > known[0] || made[1] > known[1];
                let held = (0..self.servers.len()).any(|z| {
                    let v = &self.servers[z];
                    !stopping.contains(&z) && v.role == Role::Primary && v.st().is_mine(p)
                });
                beyond || held
            })
    }

    /// Whether standby `y` may be promoted: its primary was not replaced already, it follows
    /// it, and (in scope) it knows the partitions its primary recorded, and takes over no
    /// generation whose holder made IDs it does not know.
    fn promotable(&self, y: usize) -> bool {
        let Role::Standby { up, .. } = self.servers[y].role else {
            return false;
        };
        !self.servers[up].succeeded
            && !self.servers[y].orphan
            && (self.scope.async_unseen || self.knows_generation(y, up))
            && (self.scope.wrap_unseen || !self.wrap_unseen(y, up))
    }

    /// Promotes standby `y` (a new WAL timeline); `split`: its primary goes on, else it is
    /// killed. The siblings whose WAL allows follow the promoted one.
    fn promote(&mut self, y: usize, split: bool) {
        let Role::Standby { up, sync } = self.servers[y].role else {
            return;
        };
        if sync && !self.servers[y].orphan && !self.knows_generation(y, up) {
            self.fail(format!(
                "{}: a synchronous standby does not know the partitions of {}",
                self.describe(y),
                self.describe(up)
            ));
        }
        if !split && self.servers[up].role == Role::Primary {
            self.servers[up].role = Role::Dead;
        }
        let old_alive = self.servers[up].role == Role::Primary;
        self.servers[up].succeeded = true;
        if old_alive {
            self.stats.promotions_split += 1;
        }
        if sync {
            self.stats.promotions_sync += 1;
        } else {
            self.stats.promotions_async += 1;
            if self.servers[y].wal.len() < self.servers[up].wal.len() {
                self.stats.async_missing_tail += 1;
            }
        }
        let tli = self.next_tli;
        self.next_tli += 1;
        let s = &mut self.servers[y];
        s.role = Role::Primary;
        s.tli = tli;
        if !old_alive {
            for z in 0..self.servers.len() {
                if let Role::Standby { up: u, sync } = self.servers[z].role {
                    if u == up
                        && !self.servers[z].orphan
                        && extends(&self.servers[y].wal, &self.servers[z].wal)
                    {
                        self.servers[z].role = Role::Standby { up: y, sync };
                    }
                }
            }
        }
        self.note(|| format!("promote {y} (sync {sync}, split {split}) to tli {tli}"));
    }

    /// pg_rewind of `y` into a standby of `src`: `src`'s state file and WAL, a
    /// `backup_label`, the same data directory. Its own standbys follow nothing any more.
    fn rewind(&mut self, y: usize, src: usize, sync: bool) {
        let (file, wal, tli, catalog) = {
            let s = &self.servers[src];
            (s.file.clone(), s.wal.clone(), s.tli, s.catalog)
        };
        let inode = self.servers[y].inode;
        let st = self.read_start(&file, true, inode, tli);
        {
            let s = &mut self.servers[y];
            s.origin = "rewound";
            s.role = Role::Standby { up: src, sync };
            s.tli = tli;
            s.catalog = catalog;
            s.wal = wal;
            s.beside = None;
            s.succeeded = false;
            s.orphan = false;
        }
        self.boot(y, st);
        for z in 0..self.servers.len() {
            if matches!(self.servers[z].role, Role::Standby { up, .. } if up == y) {
                self.servers[z].orphan = true;
            }
        }
        self.stats.rewinds += 1;
        self.note(|| format!("rewind {y} from {src}"));
    }

    /// PITR: backup `b` restored, its archive (the WAL of the server it was taken from, as far
    /// as it goes on from the backup) replayed to a target, promoted; it replaces its group's
    /// running node.
    fn pitr(&mut self, b: usize, target: u8) -> Option<usize> {
        if self.servers.len() >= MAX_SERVERS {
            return None;
        }
        let bk = self.backups[b].clone();
        let src = &self.servers[bk.src];
        let archive = if src.sysid == bk.sysid && extends(&src.wal, &bk.wal) {
            src.wal.clone()
        } else {
            bk.wal.clone()
        };
        let t = bk.wal.len() + target as usize % (archive.len() - bk.wal.len() + 1);
        let inode = self.new_inode();
        let st = self.read_start(&bk.file, true, inode, bk.tli);
        let z = self.server(
            "pitr",
            bk.sysid,
            inode,
            Role::Primary,
            bk.tli,
            bk.catalog,
            st,
            bk.wal.clone(),
        );
        for it in &archive[bk.wal.len()..t] {
            self.servers[z].wal.push(it.clone());
            self.redo(z, it);
        }
        if let Some(g) = bk.catalog {
            for x in 0..self.servers.len() {
                let s = &self.servers[x];
                if x != z && s.sysid == bk.sysid && s.catalog == Some(g) && s.role == Role::Primary
                {
                    self.servers[x].role = Role::Dead;
                    self.servers[x].succeeded = true;
                }
            }
        }
        let tli = self.next_tli;
        self.next_tli += 1;
        self.servers[z].tli = tli;
        self.stats.pitrs += 1;
        self.note(|| format!("pitr {z} from backup {b} of {} to {t}, tli {tli}", bk.src));
        Some(z)
    }

    fn event(&mut self, ev: &Ev) {
        match *ev {
            Ev::Gen { s, n, answer } => {
                if let Some(x) = self.pick(s, |x| self.running(x)) {
                    self.generate(x, n, answer);
                }
            }
            Ev::Settle { s } => {
                if let Some(x) = self.pick(s, |x| self.running(x)) {
                    self.settle(x);
                }
            }
            Ev::Time { d } => self.now += u64::from(d),
            Ev::Clock { s, back, d } => {
                if let Some(x) = self.pick(s, |x| self.servers[x].role != Role::Gone) {
                    let o = &mut self.servers[x].offset;
                    *o = if back {
                        (*o - i64::from(d)).max(-100_000)
                    } else {
                        *o + i64::from(d)
                    };
                }
            }
            Ev::Replicate { s, n } => {
                let standby = |x: usize| matches!(self.servers[x].role, Role::Standby { .. });
                if let Some(y) = self.pick(s, standby) {
                    self.replicate(y, 1 + n as usize % 4);
                }
            }
            Ev::Standby { s, sync } => {
                if let Some(x) = self.pick(s, |x| self.running(x) && self.copiable(x)) {
                    self.standby(x, sync);
                }
            }
            Ev::Backup { s } => {
                if let Some(x) = self.pick(s, |x| self.running(x) && self.copiable(x)) {
                    self.backup(x);
                }
            }
            Ev::Kill { s } => {
                let alive =
                    |x: usize| matches!(self.servers[x].role, Role::Primary | Role::Standby { .. });
                if let Some(x) = self.pick(s, alive) {
                    let r = &mut self.servers[x].role;
                    *r = if *r == Role::Primary {
                        Role::Dead
                    } else {
                        Role::Gone
                    };
                    self.note(|| format!("kill {x}"));
                }
            }
            Ev::Promote { s, split } => {
                if let Some(y) = self.pick(s, |y| self.promotable(y)) {
                    let Role::Standby { up, .. } = self.servers[y].role else {
                        return;
                    };
                    let split = split
                        && (self.scope.split_unrecorded || self.recorded(up).is_some())
                        && (self.scope.wrap_unseen || !self.wraps(y));
                    self.promote(y, split);
                }
            }
            Ev::Storm { s, n } => {
                // From a primary no other server replaced (a split brain's old primary fails
                // over to nothing: two promoted standbys of one primary are not covered).
                let ok =
                    |x: usize| self.running(x) && self.copiable(x) && !self.servers[x].succeeded;
                let Some(mut x) = self.pick(s, ok) else {
                    return;
                };
                for _ in 0..=n % 20 {
                    self.generate(x, 0, 0);
                    let Some(y) = self.standby(x, true) else {
                        return;
                    };
                    if !self.promotable(y) {
                        return;
                    }
                    self.promote(y, false);
                    x = y;
                }
            }
            Ev::Revive { s } => {
                // A replaced primary started again is split brain.
                let taken_over = |x: usize| {
                    let inc = self.servers[x].st().incarnation;
                    self.recorded(x).is_some_and(|p| {
                        self.judgments
                            .iter()
                            .any(|(&(i, q), j)| q == p && i != inc && j.took_over)
                    })
                };
                // Or about to be: a promoted server of its group that has not judged yet.
                let pending = |x: usize| {
                    let g = self.group_of_server(x);
                    (0..self.servers.len()).any(|z| {
                        let v = &self.servers[z];
                        v.role == Role::Primary
                            && v.st().timeline != v.tli
                            && self.group_of_server(z) == g
                            && self.wraps(z)
                    })
                };
                let ok = |x: usize| {
                    let v = &self.servers[x];
                    v.role == Role::Dead
                        && (!v.succeeded
                            || ((self.scope.split_unrecorded || self.recorded(x).is_some())
                                && (self.scope.wrap_unseen || !(taken_over(x) || pending(x)))))
                };
                if let Some(x) = self.pick(s, ok) {
                    if self.servers[x].succeeded {
                        self.stats.revives_after_split += 1;
                    }
                    self.servers[x].role = Role::Primary;
                    self.restart(x);
                    self.note(|| format!("revive {x}"));
                }
            }
            Ev::Restart { s } => {
                if let Some(x) = self.pick(s, |x| self.running(x)) {
                    self.stop(x);
                    self.restart(x);
                }
            }
            Ev::Rewind { s, src, sync } => {
                let stuck = |y: usize| match self.servers[y].role {
                    Role::Dead => true,
                    Role::Standby { up, .. } => {
                        self.servers[up].role != Role::Primary
                            || self.servers[up].succeeded
                            || self.servers[y].orphan
                            || !extends(&self.servers[up].wal, &self.servers[y].wal)
                    }
                    _ => false,
                };
                let Some(y) = self.pick(s, stuck) else {
                    return;
                };
                let sysid = self.servers[y].sysid;
                let source = |x: usize| {
                    x != y && self.running(x) && self.copiable(x) && self.servers[x].sysid == sysid
                };
                if let Some(x) = self.pick(src, source) {
                    self.rewind(y, x, sync);
                }
            }
            Ev::Pitr { b, target } => {
                // In scope: any backup, any target. Else a backup of the group's running node,
                // replayed to the end of its WAL.
                let ok = |i: usize| {
                    let bk = &self.backups[i];
                    let v = &self.servers[bk.src];
                    self.scope.pitr_any
                        || (v.role == Role::Primary
                            && !v.succeeded
                            && v.catalog == bk.catalog
                            && self.group_of_server(bk.src) == bk.group
                            && self.copiable(bk.src)
                            && extends(&v.wal, &bk.wal))
                };
                let c: Vec<usize> = (0..self.backups.len()).filter(|&i| ok(i)).collect();
                if c.is_empty() {
                    return;
                }
                let i = c[b as usize % c.len()];
                let end = {
                    let bk = &self.backups[i];
                    self.servers[bk.src].wal.len().saturating_sub(bk.wal.len())
                };
                if !self.scope.pitr_any && end >= usize::from(u8::MAX) {
                    return;
                }
                let target = if self.scope.pitr_any {
                    target
                } else {
                    end as u8
                };
                let src = self.backups[i].src;
                if !self.scope.wrap_unseen {
                    // What the restore will know: the backup's state file and the archive.
                    let bk = &self.backups[i];
                    let Ok(mut st) = decode(bk.file.as_bytes()) else {
                        return;
                    };
                    let v = &self.servers[src];
                    let archive = if v.sysid == bk.sysid && extends(&v.wal, &bk.wal) {
                        &v.wal[..]
                    } else {
                        &bk.wal[..]
                    };
                    let t = bk.wal.len() + target as usize % (archive.len() - bk.wal.len() + 1);
                    for it in &archive[bk.wal.len()..t] {
                        if let Ok(r) = wal_record::decode(&it.rec) {
                            st.replay(r.incarnation, r.timeline, &r.partitions, r.bound);
                        }
                    }
                    if bk.group.is_some_and(|g| self.unseen_by(&st, g, &[src])) {
                        return;
                    }
                }
                if let Some(z) = self.pitr(i, target) {
                    if !self.scope.pitr_any && self.servers[src].role == Role::Primary {
                        // The node it replaces (its catalog may be "not activated").
                        self.servers[src].role = Role::Dead;
                        self.servers[src].succeeded = true;
                    }
                    self.note(|| format!("pitr {z} replaces {src}"));
                }
            }
            Ev::Clone { s } => {
                let ok = |x: usize| {
                    self.running(x)
                        && self.copiable(x)
                        && (self.scope.clone_unrecorded
                            || self.group_of_server(x).is_none_or(|g| {
                                let w = &self.servers[x].written;
                                w.citus_group == g
                                    && citus::partitions(g)
                                        .any(|p| w.is_mine(p) || w.others(p).is_some())
                            }))
                };
                if let Some(x) = self.pick(s, ok) {
                    self.clone_of(x);
                }
            }
            Ev::AddNode { activate } => {
                if self.servers.len() < MAX_SERVERS {
                    self.add_node(activate);
                }
            }
            Ev::Activate { s } => {
                let ok = |x: usize| self.running(x) && self.servers[x].catalog.is_none();
                if let Some(x) = self.pick(s, ok) {
                    self.activate(x);
                }
            }
            Ev::RemoveGroup { g } => {
                let mut groups: Vec<u32> = self
                    .servers
                    .iter()
                    .filter_map(|v| v.catalog)
                    .filter(|&g| g != 0)
                    .collect();
                groups.sort_unstable();
                groups.dedup();
                if !groups.is_empty() {
                    let g = groups[g as usize % groups.len()];
                    for v in self.servers.iter_mut() {
                        if v.catalog == Some(g) {
                            v.catalog = None;
                        }
                    }
                    self.stats.removed_groups += 1;
                    self.note(|| format!("citus_remove_node: group {g}"));
                }
            }
        }
    }
}

/// The model around server `x`'s shared memory in one call of the room ([`Model`]): the world
/// (the server's clock, what it read of Citus, the draws, its state file and WAL, its
/// synchronous standbys, time passing in the waits), and what it sees of each locked section,
/// to check what the room did there ([`Around::leave`]).
struct Around<'w> {
    w: RefCell<&'w mut World>,
    x: usize,
    /// The WAL timeline the room is called for, and the `take_over` it judges with.
    tli: u32,
    take_over: bool,
    /// In the current locked section: the lineage state it found, the source of the partition
    /// it judged for, the draws it made.
    before: RefCell<Option<State>>,
    source: Cell<Source>,
    draws: RefCell<Vec<u64>>,
}

impl Model for Around<'_> {
    /// The world's time ([`World::now`]).
    type Instant = u64;

    fn clock(&self) -> u64 {
        self.w.borrow().clock(self.x)
    }

    fn source(&self) -> Source {
        let source = self.w.borrow().servers[self.x]
            .published
            .map_or(Source::Derived, Source::Citus);
        self.source.set(source);
        source
    }

    fn citus_loaded(&self) -> bool {
        true
    }

    fn draw(&self) -> u64 {
        let d = self.w.borrow_mut().draw();
        self.draws.borrow_mut().push(d);
        d
    }

    fn put_file(&self, st: &State) -> std::io::Result<()> {
        self.w.borrow_mut().write_file(self.x, *st);
        Ok(())
    }

    fn log_record(&self, st: &State, timeline: u32, unimportant: bool) -> u64 {
        let mut w = self.w.borrow_mut();
        w.stats.idle_leases += u64::from(unimportant);
        w.log_record(self.x, st, timeline)
    }

    fn flush(&self, _lsn: u64) {
        self.w.borrow_mut().flushed(self.x);
    }

    fn now(&self) -> u64 {
        self.w.borrow().now
    }

    fn turn_counts_from(&self, unit: u64) -> u64 {
        let w = self.w.borrow();
        w.now + unit.saturating_sub(w.clock(self.x)) + 1
    }

    fn wait_for_unit(
        &self,
        until: u64,
        from: u64,
        why: Wait,
        given_up: &dyn Fn() -> bool,
    ) -> Result<bool, SlowError> {
        let mut w = self.w.borrow_mut();
        let clock = w.clock(self.x);
        if why == Wait::ClockBehind && until <= clock {
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

    fn enter(&self, memory: &Memory, _shared: &Shared) {
        *self.before.borrow_mut() = Some(memory.lineage);
        self.draws.borrow_mut().clear();
    }

    /// Checks what the room did in a locked section:
    /// * a judgment that published a partition published the one [`State::judge_source`]
    ///   gives for the state the section found (run again here with its inputs: the source,
    ///   the draws), and started a new epoch; its judgment is then checked and recorded
    ///   ([`World::judged`]);
    /// * the timeline in memory holds as written no horizon its state file does not have
    ///   (what is written is recorded as written only once it is on disk).
    fn leave(&self, shared: &Shared, section: &Section) {
        let mut w = self.w.borrow_mut();
        let x = self.x;
        if let Some((partition, _)) = section.published {
            let before = self.before.borrow_mut().take().expect("entered");
            let source = self.source.get();
            let draws = self.draws.borrow();
            let mut drawn = draws.iter().copied();
            let mut st = before;
            let j = st.judge_source(self.tli, source, self.take_over, || {
                drawn.next().unwrap_or(0)
            });
            match j {
                Ok(j)
                    if j.partition == partition
                        && j.took_over == section.took_over.is_some()
                        && shared.read(|m| m.lineage == st) =>
                {
                    w.judged(x, &before, &st, source, &j);
                }
                j => {
                    let d = w.describe(x);
                    w.fail(format!(
                        "{d}: the room published partition {partition} ({section:?}), the judgment gives {j:?}"
                    ));
                }
            }
            if section.new_epochs == 0 {
                let d = w.describe(x);
                w.fail(format!(
                    "{d}: a judgment published partition {partition} without a new epoch"
                ));
            }
        }
        let written = ticks(&w.servers[x].written.me);
        let (tick, horizon) = shared.read(|m| {
            let tl = &m.timeline;
            let held = tl.drifts == tl.written_drifts;
            (tl.tick(), held.then_some(tl.horizon))
        });
        if let Some(h) = horizon.filter(|&h| written[tick as usize] < h as i64) {
            let d = w.describe(x);
            w.fail(format!(
                "{d}: its memory holds unit {h} tick {tick} as written, its state file {written:?}"
            ));
        }
    }

    fn note(&self, n: server::Note) {
        self.w.borrow().note(|| format!("{}: {n:?}", self.x));
    }
}

/// Runs a case in `scope`.
fn run(scope: Scope, sc: &Scenario, trace: bool) -> Result<Stats, TestCaseError> {
    let mut w = World::new(scope, sc.seed, sc.workers, trace);
    if let Some(f) = w.failure.take() {
        return Err(TestCaseError::fail(format!("set-up: {f}")));
    }
    for (i, ev) in sc.events.iter().enumerate() {
        w.step = i;
        w.note(|| format!("{ev:?}"));
        w.event(ev);
        if let Some(f) = w.failure.take() {
            return Err(TestCaseError::fail(format!("step {i} ({ev:?}): {f}")));
        }
    }
    w.stats.cases = 1;
    w.stats.steps = sc.events.len() as u64;
    Ok(w.stats)
}

/// Random events, weighted towards making IDs, replicating and failing over.
fn ev() -> impl Strategy<Value = Ev> {
    let s = any::<u8>();
    prop_oneof![
        30 => (s, any::<u8>(), any::<u8>()).prop_map(|(s, n, answer)| Ev::Gen { s, n, answer }),
        3 => s.prop_map(|s| Ev::Settle { s }),
        6 => prop_oneof![3 => 0u16..6, 1 => 100u16..800].prop_map(|d| Ev::Time { d }),
        4 => (s, any::<bool>(), 1u16..1500).prop_map(|(s, back, d)| Ev::Clock { s, back, d }),
        10 => (s, any::<u8>()).prop_map(|(s, n)| Ev::Replicate { s, n }),
        4 => (s, any::<bool>()).prop_map(|(s, sync)| Ev::Standby { s, sync }),
        1 => s.prop_map(|s| Ev::Backup { s }),
        3 => s.prop_map(|s| Ev::Kill { s }),
        5 => (s, prop::bool::weighted(0.25)).prop_map(|(s, split)| Ev::Promote { s, split }),
        1 => (s, any::<u8>()).prop_map(|(s, n)| Ev::Storm { s, n }),
        2 => s.prop_map(|s| Ev::Revive { s }),
        1 => s.prop_map(|s| Ev::Restart { s }),
        2 => (s, any::<u8>(), any::<bool>()).prop_map(|(s, src, sync)| Ev::Rewind { s, src, sync }),
        2 => (any::<u8>(), any::<u8>()).prop_map(|(b, target)| Ev::Pitr { b, target }),
        2 => s.prop_map(|s| Ev::Clone { s }),
        1 => any::<bool>().prop_map(|activate| Ev::AddNode { activate }),
        1 => s.prop_map(|s| Ev::Activate { s }),
        1 => any::<u8>().prop_map(|g| Ev::RemoveGroup { g }),
    ]
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (any::<u64>(), 1u8..=3, prop::collection::vec(ev(), 1..150)).prop_map(
        |(seed, workers, events)| Scenario {
            seed,
            workers,
            events,
        },
    )
}

/// Runs the property over random cases in `scope` with the models' runner
/// ([`model::property`]: 256 cases unless `SNO_MODEL_CASES` says otherwise, proptest's
/// `PROPTEST_RNG_SEED` a fixed seed, `SNO_MODEL_TRACE=1` the events of the minimal failing
/// case; the counters of the run printed with `--nocapture`).
fn property(scope: Scope) {
    model::property(256, scenario(), |sc, trace| run(scope, sc, trace));
}

/// The main property: no two servers of a Citus cluster ever make one ID, within what the
/// design handles.
#[test]
fn no_two_servers_of_a_citus_cluster_ever_make_one_id() {
    property(Scope::COVERED);
}

/// The same with every situation of [`Scope`]: it fails (the cases below show each hole).
#[test]
#[ignore = "the design's holes (see Scope); run with --ignored to find one"]
fn the_whole_model_finds_the_holes() {
    property(Scope::EVERYTHING);
}

/// A world for hand-written cases: no server, every clock the same.
fn hand() -> World {
    World::bare(Scope::EVERYTHING, 7, false, model::trace())
}

/// A group promoted more than 15 times: each promotion of a synchronous standby takes the
/// lowest generation its lineage does not know; once all 15 live ones were used (generation 15
/// is reserved), the one whose bound is oldest (generation 0, then 1, ...), and only after
/// that bound.
#[test]
fn a_group_promoted_more_than_15_times_reuses_its_oldest_generation_after_its_bound() {
    let mut w = hand();
    let mut primary = w.add_node(true);
    let mut partitions = Vec::new();
    for round in 0..20u32 {
        w.step = round as usize;
        for _ in 0..5 {
            w.generate(primary, 3, 0);
            w.now += 300;
        }
        partitions.push(w.servers[primary].partition());
        let y = w.standby(primary, true).unwrap();
        let before = *w.servers[y].st();
        w.promote(y, false);
        w.generate(y, 0, 0);
        assert_eq!(w.failure.take(), None, "round {round}");
        let p = w.servers[y].partition();
        let j = w.judgments[&(w.servers[y].st().incarnation, p)];
        if round >= 14 {
            // All 15 known: the generation used 15 promotions before, after its bound.
            assert_eq!(p, citus::partition(0, round + 1 - 15).unwrap());
            assert!(j.took_over && j.all_known, "round {round}: {j:?}");
            assert_eq!(Some(j.absorb), before.others(p));
            // Every ID it made with it is after that bound.
            let b = ticks(&j.absorb);
            assert!(w
                .issued
                .iter()
                .filter(|(k, v)| k.2 == p && v.0 == y)
                .all(|(k, _)| b[k.1 as usize & 1] < k.0 as i64));
        } else {
            assert!(!j.took_over);
        }
        primary = y;
    }
    let gens: Vec<u32> = partitions
        .iter()
        .map(|&p| citus::generation_of(p))
        .collect();
    assert_eq!(
        gens,
        (0..20).map(|k| k % LIVE_GENERATIONS).collect::<Vec<_>>()
    );
    assert!(partitions.iter().all(|&p| citus::group_of(p) == 0));
    assert_eq!(w.stats.wraps, 6);
    assert_eq!(w.stats.dups, 0);
}

/// An asynchronous standby that missed its primary's last records (bounds renewed while IDs
/// were made) is promoted, its clock behind: it takes a generation of its own, and repeats
/// none of the IDs its primary made.
#[test]
fn an_async_standby_missing_the_tail_takes_a_new_generation() {
    let mut w = hand();
    let p = w.add_node(true);
    w.generate(p, 5, 0);
    let y = w.standby(p, false).unwrap();
    for _ in 0..10 {
        w.generate(p, 5, 0);
        w.now += 200;
    }
    assert!(w.servers[y].wal.len() < w.servers[p].wal.len());
    w.now -= 3_000;
    w.promote(y, false);
    for _ in 0..10 {
        w.generate(y, 5, 0);
        w.now += 100;
    }
    assert_eq!(w.failure.take(), None);
    assert_eq!(w.servers[y].partition(), citus::partition(0, 1).unwrap());
}

/// A clone beside its original is refused until `citus_add_node` gives it a group (then its
/// generation 0), or, its original gone, `take_over` (then a new generation of the group).
#[test]
fn a_clone_is_refused_until_it_has_a_group_or_takes_over() {
    let mut w = hand();
    let coordinator = w.add_node(true);
    let worker = w.add_node(true);
    w.generate(coordinator, 0, 0);
    w.generate(worker, 0, 0);
    let c = w.clone_of(coordinator).unwrap();
    assert_eq!(w.gen_one(c), Err(Stop::Refused(Refusal::CitusCopy(0))));
    w.activate(c);
    w.generate(c, 0, 0);
    assert_eq!(w.servers[c].partition(), citus::partition(2, 0).unwrap());
    // A clone of the worker, which then stops for good: take_over.
    let z = w.clone_of(worker).unwrap();
    assert_eq!(w.gen_one(z), Err(Stop::Refused(Refusal::CitusCopy(1))));
    w.servers[worker].role = Role::Dead;
    w.answer_copy(z, true);
    assert_eq!(w.stats.take_overs, 1);
    w.generate(z, 0, 0);
    assert_eq!(w.servers[z].partition(), citus::partition(1, 1).unwrap());
    assert_eq!(w.failure.take(), None);
    assert_eq!(w.stats.dups, 0);
}

// The holes (see [`Scope`]): minimal cases, every clock the same, so that the two servers
// taking one generation make the same IDs. Each asserts what the design promises, and fails
// (run with --ignored).

/// Asserts that no check failed and no ID was issued twice.
fn holds(w: &mut World) {
    let dups = w.stats.dups;
    assert_eq!(
        (dups, w.failure.take()),
        (0, None),
        "{dups} IDs issued twice"
    );
}

/// Chained failovers with an asynchronous standby: the primary P (generation 0) fails over to
/// its synchronous standby A, which takes generation 1 and makes IDs; the asynchronous standby
/// B, following A, has not received A's record when A fails in its turn. Promoted, B knows
/// generation 0 only, and takes generation 1 too.
#[test]
#[ignore = "hole: an async standby promoted without the record naming its primary's generation"]
fn hole_chained_async_failover() {
    let mut w = hand();
    let p = w.add_node(true);
    w.generate(p, 0, 0);
    let a = w.standby(p, true).unwrap();
    let b = w.standby(p, false).unwrap();
    w.promote(a, false);
    assert_eq!(w.servers[b].role, Role::Standby { up: a, sync: false });
    w.generate(a, 3, 0);
    w.servers[a].role = Role::Dead;
    w.promote(b, false);
    w.generate(b, 3, 0);
    assert_eq!(w.servers[a].partition(), citus::partition(0, 1).unwrap());
    holds(&mut w);
}

/// Split brain after a promotion not yet recorded: A, just promoted (generation 1 not yet
/// recorded), gets a standby B, which is promoted while A goes on. Both take generation 1.
#[test]
#[ignore = "hole: split brain when the old primary had not recorded its generation"]
fn hole_split_brain_before_the_generation_is_recorded() {
    let mut w = hand();
    let p = w.add_node(true);
    w.generate(p, 0, 0);
    let a = w.standby(p, true).unwrap();
    w.promote(a, false);
    let b = w.standby(a, true).unwrap();
    w.promote(b, true);
    w.generate(a, 3, 0);
    w.generate(b, 3, 0);
    holds(&mut w);
}

/// A clone of a node that made no ID yet in its Citus database: its state file knows no
/// partition of the group, so the clone is not refused and takes generation 0, as its original
/// does.
#[test]
#[ignore = "hole: a clone made before its original recorded its group is not refused"]
fn hole_clone_before_the_group_is_recorded() {
    let mut w = hand();
    let p = w.add_node(true);
    let c = w.clone_of(p).unwrap();
    w.generate(p, 3, 0);
    w.generate(c, 3, 0);
    holds(&mut w);
}

/// A standby of a clone not yet given a group, promoted: a promotion skips the `CitusCopy`
/// check, so it takes the original group's next generation, as the original's own standby
/// does when it is promoted.
#[test]
#[ignore = "hole: a promoted copy of a refused clone uses its original's group"]
fn hole_promoted_standby_of_a_clone() {
    let mut w = hand();
    let p = w.add_node(true);
    w.generate(p, 0, 0);
    let s = w.standby(p, true).unwrap();
    let c = w.clone_of(p).unwrap();
    let cs = w.standby(c, true).unwrap();
    w.promote(cs, false);
    w.promote(s, false);
    w.generate(cs, 3, 0);
    w.generate(s, 3, 0);
    holds(&mut w);
}

/// Two PITR restores of one base backup, one after the other (the first replaced by the
/// second): the second knows nothing of the generation the first took, and takes it too.
#[test]
#[ignore = "hole: PITR from an archive that ends before a later generation record"]
fn hole_pitr_twice_from_one_backup() {
    let mut w = hand();
    let p = w.add_node(true);
    w.generate(p, 0, 0);
    w.backup(p);
    let z1 = w.pitr(0, 0).unwrap();
    w.generate(z1, 3, 0);
    let z2 = w.pitr(0, 0).unwrap();
    w.generate(z2, 3, 0);
    holds(&mut w);
}

/// A clone whose lineage recorded a derived partition (at `CREATE EXTENSION`, before any
/// backend read Citus) that falls in the range of the group `citus_add_node` then gives it is
/// not refused as a copy of that group, which its original never generated for. (The model
/// found it refused, about one group number in 4096 per derived partition in the lineage: the
/// `CitusCopy` check counted any known partition of the group as the original's.)
#[test]
fn a_derived_partition_in_a_new_groups_range_does_not_refuse_a_clone() {
    let mut w = hand();
    let p = w.add_node(false);
    let d = w.servers[p].partition();
    let h = citus::group_of(d);
    assert!(h != 0, "pick another seed");
    w.activate(p);
    w.generate(p, 0, 0);
    let c = w.clone_of(p).unwrap();
    assert_eq!(w.gen_one(c), Err(Stop::Refused(Refusal::CitusCopy(0))));
    // Citus's group numbers only grow: the clone is given group h.
    w.next_group = h;
    w.activate(c);
    assert_eq!(w.gen_one(c), Ok(()));
}
