//! The harness the models share (`tests/lineage_model.rs`, `tests/citus_model.rs`,
//! `tests/reserved_model.rs`, each with `mod model;`): one property runner, one way to set the
//! number of random cases, and a server's generator hosted in memory, so that a model runs the
//! real decisions of [`sno::generator::server`] instead of a copy of them.
//!
//! * [`property`] runs a model's property over random cases: `SNO_MODEL_CASES` sets their
//!   number (else the model's default), proptest's `PROPTEST_RNG_SEED` a fixed seed,
//!   `SNO_MODEL_TRACE=1` prints the events of the minimal failing case (the model's `run` is
//!   given `trace`); the counters of the run ([`Counters`]) are printed (`--nocapture`) and
//!   returned. [`hand`] runs one hand-written case the same way.
//! * [`Shared`] is a server's shared memory in miniature (the glue's `Shared`, `src/pg/shmem.rs`):
//!   the lock and the [`Memory`] under it, the cursor, the state of the file, the epoch, the
//!   published partition and group, the promise round, the end of the last lineage record, the
//!   monitoring copy of the lineage, the notes for the server log.
//! * [`Host`] is the room's [`server::Host`] over a [`Shared`] and what the model supplies
//!   around it ([`Model`]): the clock, the source of the partition, the draws, the state file,
//!   WAL, the waits. Each locked section is reported to the model ([`Model::enter`],
//!   [`Model::leave`] with a [`Section`]: whether it judged, what it published, noted and
//!   bumped), so that a model's checks (forecasts, claims, ledgers) observe what the room
//!   decided without deciding it again.
//! * [`Session`] is one backend ([`server::Backend`]): the partition and epoch it took, with
//!   whatever the model attaches to them.
//! * [`wait`] is a wait for the clock in a model whose time moves only when told.

// Each model uses a part of the harness.
#![allow(dead_code)]

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};
use sno::generator::citus::Source;
use sno::generator::cursor::Cursor;
use sno::generator::lineage::State;
use sno::generator::server::{self, FileState, Memory, Note, SlowError, Wait};
use std::cell::{Cell, RefCell};

/// The number of random cases a property runs: `SNO_MODEL_CASES`, else `default`.
pub const CASES_VAR: &str = "SNO_MODEL_CASES";

/// Set: a failing property prints the events of its minimal case, a hand-written case its own.
pub const TRACE_VAR: &str = "SNO_MODEL_TRACE";

/// The number of random cases: `SNO_MODEL_CASES`, else `default` (each model keeps the count
/// its run time allows).
pub fn cases(default: u32) -> u32 {
    std::env::var(CASES_VAR)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Whether `SNO_MODEL_TRACE` is set.
pub fn trace() -> bool {
    std::env::var_os(TRACE_VAR).is_some()
}

/// A model's counters over a run, summed over its cases and printed at the end.
pub trait Counters: Default + std::fmt::Debug {
    /// Adds the counters of one case.
    fn add(&mut self, case: &Self);
}

/// Runs a model's property: `run` over random cases drawn from `strategy` (`default_cases`
/// of them unless `SNO_MODEL_CASES` says otherwise; `run`'s second argument: print the
/// events). A failure is shrunk to a minimal case, whose events are printed when
/// `SNO_MODEL_TRACE` is set, and panics with proptest's report. Returns the summed counters,
/// printed first.
pub fn property<S, C>(
    default_cases: u32,
    strategy: S,
    run: impl Fn(&S::Value, bool) -> Result<C, TestCaseError>,
) -> C
where
    S: Strategy,
    C: Counters,
{
    let mut runner = TestRunner::new(Config {
        cases: cases(default_cases),
        failure_persistence: None,
        max_shrink_iters: 20_000,
        max_shrink_time: 120_000,
        ..Config::default()
    });
    let totals = RefCell::new(C::default());
    let result = runner.run(&strategy, |case| {
        let c = run(&case, false)?;
        totals.borrow_mut().add(&c);
        Ok(())
    });
    if let Err(e) = result {
        if let TestError::Fail(_, case) = &e {
            if trace() {
                let _ = run(case, true);
            }
        }
        panic!("{e}");
    }
    let totals = totals.into_inner();
    eprintln!("{totals:#?}");
    totals
}

/// Runs one hand-written case (its events printed when `SNO_MODEL_TRACE` is set); its
/// counters, or a panic with its failure.
pub fn hand<T, C>(case: &T, run: impl Fn(&T, bool) -> Result<C, TestCaseError>) -> C {
    match run(case, trace()) {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    }
}

/// A server's shared memory in miniature (the glue's `Shared` and the `Memory` under its
/// lock). The lock is a `RefCell`: taking it twice (a model's hook reading the memory while
/// the room holds it) panics, as a self-deadlock would hang.
#[derive(Debug)]
pub struct Shared {
    /// What the generator keeps under its lock.
    pub memory: RefCell<Memory>,
    /// The shared cursor.
    pub cursor: Cursor,
    /// Whether the durable state can be used.
    pub file: Cell<FileState>,
    /// The epoch (starts at 1: 0 is no backend's).
    pub epoch: Cell<u64>,
    /// The partition and Citus group the last judgment published.
    pub partition: Cell<u16>,
    pub citus_group: Cell<u32>,
    /// The timeline's promise round as the last locked section left it.
    pub round: Cell<u64>,
    /// The end of the last lineage record written ([`server::Host::set_lineage_lsn`]).
    pub lineage_lsn: Cell<u64>,
    /// The monitoring views' copy of the lineage ([`server::Host::lineage_changed`]).
    pub view: RefCell<State>,
    /// What the server log was told.
    pub notes: RefCell<Vec<Note>>,
    /// Writes of the durable state ([`server::Host::count_write`]).
    pub writes: Cell<u64>,
    /// Renewals asked of the worker ([`server::Host::ask_for_renewal`]).
    pub renewals: Cell<u64>,
    /// What the current locked section did.
    section: Cell<Section>,
}

/// What the room did in one locked section, for the model's checks ([`Model::leave`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Section {
    /// It judged the lineage ([`server::judge`] asked for the source of the partition).
    pub judged: bool,
    /// The partition and group a judgment published.
    pub published: Option<(u16, u32)>,
    /// An explicit partition others used was taken over ([`Note::TookOver`]: the partition,
    /// and whether by `take_over`).
    pub took_over: Option<(u16, bool)>,
    /// New epochs started.
    pub new_epochs: u32,
    /// The lineage state changed ([`server::Host::lineage_changed`]).
    pub lineage_changed: bool,
}

impl Shared {
    /// Shared memory holding `memory`, with the durable state `file`.
    pub fn new(memory: Memory, file: FileState) -> Shared {
        Shared {
            round: Cell::new(memory.timeline.round),
            view: RefCell::new(memory.lineage),
            memory: RefCell::new(memory),
            cursor: Cursor::default(),
            file: Cell::new(file),
            epoch: Cell::new(1),
            partition: Cell::new(0),
            citus_group: Cell::new(sno::generator::lineage::NO_GROUP),
            lineage_lsn: Cell::new(0),
            notes: RefCell::new(Vec::new()),
            writes: Cell::new(0),
            renewals: Cell::new(0),
            section: Cell::new(Section::default()),
        }
    }

    /// Reads the memory (outside the room's locked sections).
    pub fn read<R>(&self, f: impl FnOnce(&Memory) -> R) -> R {
        f(&self.memory.borrow())
    }

    /// Changes the memory the way the glue does outside the room (start-up, redo,
    /// `sno_generator_initialize`), as a locked section: the round is kept up to date.
    pub fn update<R>(&self, f: impl FnOnce(&mut Memory) -> R) -> R {
        let mut m = self.memory.borrow_mut();
        let r = f(&mut m);
        self.round.set(m.timeline.round);
        r
    }

    /// The lineage state in memory.
    pub fn lineage(&self) -> State {
        self.read(|m| m.lineage)
    }

    /// A new epoch (the glue's `shmem::new_epoch`).
    pub fn new_epoch(&self) {
        self.epoch.set(self.epoch.get() + 1);
    }

    /// Records something the current section did.
    fn saw(&self, f: impl FnOnce(&mut Section)) {
        let mut s = self.section.get();
        f(&mut s);
        self.section.set(s);
    }
}

/// What a model supplies around a server's [`Shared`]: its clock, the source of its
/// partition, its random draws, its state file and WAL, its waits; and the hooks through which
/// it observes what the room decides.
pub trait Model {
    /// An instant of the model's monotonic time (for the waits' budgets).
    type Instant: Copy;

    /// The server's wall clock in 4 ms units, or [`server::OUT_OF_RANGE`].
    fn clock(&self) -> u64;
    /// Where the partition comes from now.
    fn source(&self) -> Source;
    /// Whether the server has Citus.
    fn citus_loaded(&self) -> bool {
        false
    }
    /// A random 64-bit number (a new incarnation).
    fn draw(&self) -> u64;
    /// Writes the state file.
    fn put_file(&self, st: &State) -> std::io::Result<()>;
    /// Writes `st`'s lineage record to WAL; its end.
    fn log_record(&self, st: &State, timeline: u32, unimportant: bool) -> u64;
    /// Flushes WAL up to `lsn`.
    fn flush(&self, lsn: u64);
    /// The model's time now, and the instant from which a wait for a turn in `unit` counts.
    fn now(&self) -> Self::Instant;
    fn turn_counts_from(&self, unit: u64) -> Self::Instant;
    /// Waits for the clock ([`server::Host::wait_for_unit`]; see [`wait`]).
    fn wait_for_unit(
        &self,
        until: u64,
        from: Self::Instant,
        why: Wait,
        given_up: &dyn Fn() -> bool,
    ) -> Result<bool, SlowError>;

    /// Before a locked section, the memory as the room finds it.
    fn enter(&self, _memory: &Memory, _shared: &Shared) {}
    /// After a locked section (the lock released: `shared` may be read): what the room did.
    fn leave(&self, _shared: &Shared, _section: &Section) {}
    /// Something for the server log (also kept in [`Shared::notes`]).
    fn note(&self, _n: Note) {}
    /// The worker was asked to renew the horizon (also counted in [`Shared::renewals`]).
    fn ask_for_renewal(&self) {}
}

/// The room's host: a server's [`Shared`] memory and the model around it.
pub struct Host<'s, M> {
    pub shared: &'s Shared,
    pub model: M,
}

impl<M: Model> server::Host for Host<'_, M> {
    type Instant = M::Instant;

    fn locked<R>(&self, f: impl FnOnce(&mut Memory) -> R) -> R {
        let s = self.shared;
        s.section.set(Section::default());
        let r = {
            let mut m = s.memory.borrow_mut();
            self.model.enter(&m, s);
            let r = f(&mut m);
            s.round.set(m.timeline.round);
            r
        };
        self.model.leave(s, &s.section.take());
        r
    }

    fn locked_silently(&self, f: impl FnOnce(&mut Memory)) {
        // Not at all if the lock is held already (an error raised under it).
        if let Ok(mut m) = self.shared.memory.try_borrow_mut() {
            f(&mut m);
            self.shared.round.set(m.timeline.round);
        }
    }

    fn cursor(&self) -> &Cursor {
        &self.shared.cursor
    }

    fn clock(&self) -> u64 {
        self.model.clock()
    }

    fn file_state(&self) -> FileState {
        self.shared.file.get()
    }

    fn set_file_ready(&self) {
        self.shared.file.set(FileState::Ready);
    }

    fn source(&self) -> Source {
        // Asked by the judgment alone, first.
        self.shared.saw(|s| s.judged = true);
        self.model.source()
    }

    fn citus_loaded(&self) -> bool {
        self.model.citus_loaded()
    }

    fn draw(&self) -> u64 {
        self.model.draw()
    }

    fn lineage_changed(&self, st: &State) {
        *self.shared.view.borrow_mut() = *st;
        self.shared.saw(|s| s.lineage_changed = true);
    }

    fn publish(&self, partition: u16, group: u32) {
        self.shared.partition.set(partition);
        self.shared.citus_group.set(group);
        self.shared.saw(|s| s.published = Some((partition, group)));
    }

    fn new_epoch(&self) {
        self.shared.new_epoch();
        self.shared.saw(|s| s.new_epochs += 1);
    }

    fn epoch(&self) -> u64 {
        self.shared.epoch.get()
    }

    fn partition(&self) -> u16 {
        self.shared.partition.get()
    }

    fn round(&self) -> u64 {
        self.shared.round.get()
    }

    fn note(&self, n: Note) {
        if let Note::TookOver {
            partition,
            by_take_over,
        } = n
        {
            self.shared
                .saw(|s| s.took_over = Some((partition, by_take_over)));
        }
        self.shared.notes.borrow_mut().push(n);
        self.model.note(n);
    }

    fn put_file(&self, st: &State) -> std::io::Result<()> {
        self.model.put_file(st)
    }

    fn log_record(&self, st: &State, timeline: u32, unimportant: bool) -> u64 {
        self.model.log_record(st, timeline, unimportant)
    }

    fn flush(&self, lsn: u64) {
        self.model.flush(lsn)
    }

    fn set_lineage_lsn(&self, lsn: u64) {
        self.shared.lineage_lsn.set(lsn);
    }

    fn count_write(&self) {
        self.shared.writes.set(self.shared.writes.get() + 1);
    }

    fn ask_for_renewal(&self) {
        self.shared.renewals.set(self.shared.renewals.get() + 1);
        self.model.ask_for_renewal();
    }

    fn turn_counts_from(&self, unit: u64) -> M::Instant {
        self.model.turn_counts_from(unit)
    }

    fn now(&self) -> M::Instant {
        self.model.now()
    }

    fn wait_for_unit(
        &self,
        until: u64,
        from: M::Instant,
        why: Wait,
        given_up: &dyn Fn() -> bool,
    ) -> Result<bool, SlowError> {
        self.model.wait_for_unit(until, from, why, given_up)
    }
}

/// One backend's generator as a model keeps it ([`server::Backend`]): the partition and epoch
/// it took, with what the model attaches to them (`tag`, e.g. the claim its IDs are made
/// under), and its statistics.
#[derive(Clone, Copy, Debug, Default)]
pub struct Session<T> {
    /// The partition it writes.
    pub partition: u16,
    /// The epoch it took the partition in (0: none).
    pub epoch: u64,
    /// What the model attaches to the partition.
    pub tag: T,
    pub issued: u64,
    pub opened_units: u64,
    pub full_units: u64,
    pub clock_waits: u64,
}

/// A [`Session`] in a call of the room: [`server::Backend::enter_epoch`] tags it with
/// `tag()`, what the model says of the partition published now.
pub struct Entering<'a, T, F> {
    pub session: &'a mut Session<T>,
    pub tag: F,
}

impl<T, F: Fn() -> T> server::Backend for Entering<'_, T, F> {
    fn epoch(&self) -> u64 {
        self.session.epoch
    }

    fn enter_epoch(&mut self, judged: (u16, u64)) {
        (self.session.partition, self.session.epoch) = judged;
        self.session.tag = (self.tag)();
    }

    fn partition(&self) -> u16 {
        self.session.partition
    }

    fn issued(&mut self) {
        self.session.issued += 1;
    }

    fn opened_unit(&mut self) {
        self.session.opened_units += 1;
    }

    fn full_unit(&mut self) {
        self.session.full_units += 1;
    }

    fn clock_wait(&mut self) {
        self.session.clock_waits += 1;
    }
}

/// A wait for the clock ([`server::Host::wait_for_unit`]) in a model whose time moves only
/// when told: the server's clock reads `clock` at the model's time `now`; the wait's budget
/// (`max_wait` units, `sno.max_clock_wait`) counts from the model's time `from`. `Ok(Some(d))`:
/// the model's time moves on by `d` units (0: the clock is there already) and the wait ends
/// with the clock at `until`; `Ok(None)`: `given_up`; past the budget the wait gives up at
/// once, the time unmoved ([`SlowError::GaveUp`]).
pub fn wait(
    clock: u64,
    now: u64,
    until: u64,
    from: u64,
    max_wait: u64,
    why: Wait,
    given_up: &dyn Fn() -> bool,
) -> Result<Option<u64>, SlowError> {
    if clock >= until {
        return Ok(Some(0));
    }
    if given_up() {
        return Ok(None);
    }
    let d = until - clock;
    if (now + d).saturating_sub(from) > max_wait {
        return Err(SlowError::GaveUp {
            waited_ms: u128::from(now.saturating_sub(from)) * 4,
            until,
            why,
        });
    }
    Ok(Some(d))
}
