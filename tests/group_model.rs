//! The model of a replicating group's members: servers that are not copies of each other, each
//! with an explicit `sno.partition` drawn from a few values (so that two members often share
//! one: a misconfiguration), join a group (their subscriptions to every member and theirs to
//! it, then `sno_member_check()` before their first ID, as doc/operations.md says), make IDs,
//! compare partitions over their subscriptions at any moment (the `sno member check` worker), leave,
//! and fail over to a standby that replayed their WAL (the lineage records and the member
//! record). A refused member does what the HINT says: the partition [`server::suggest`] gives.
//!
//! It drives the code that runs: [`server::generate_slow`] (and [`server::write`]) for every
//! ID, [`server::member`] and [`server::hear`] for both halves of each handshake (the
//! publisher's `sno_member_hello`, the subscriber's reading of its answer), [`server::suggest`]
//! for the HINT, hosted in memory by the models' harness (`tests/model/mod.rs`).
//!
//! Time moves when told (`Tick`), and by one 4 ms unit at a leave and at a configuration reload,
//! which take longer than that on a real server.
//!
//! Checked after every event:
//! - no two members' IDs ever meet: (partition, unit, tick, sequence) is issued once in the
//!   whole group, over every ID any member (or a promoted standby) ever made;
//! - the member that came first is never refused: a member that made IDs with a partition is
//!   refused only by one that made IDs with it too (both before they met);
//! - a refusal's HINT always has a partition, and following it, the member makes IDs again.

mod model;

use model::{Entering, Model, Session};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use sno::generator::citus::Source;
use sno::generator::cursor::Slice;
use sno::generator::lineage::State;
use sno::generator::member::{Conflict, Known};
use sno::generator::server::{self, FileState, Host as _, Memory, SlowError, Wait};
use sno::generator::timeline::Timeline;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

/// Members in a case.
const MEMBERS: usize = 5;

/// The first unit of the model's clock (any time inside the format).
const EPOCH: u64 = 40_000_000_000;

#[derive(Clone, Copy, Debug)]
enum Ev {
    /// Member `x` makes `n` IDs (its backend's fast path, or the room's slow path).
    Gen(usize, u8),
    /// Time passes.
    Tick(u8),
    /// Member `x` joins: subscriptions both ways with every member, then the check.
    Join(usize),
    /// Member `x`'s worker compares partitions over its subscription to member `y`.
    Hand(usize, usize),
    /// Member `x`'s worker runs a round over all its subscriptions.
    Round(usize),
    /// Member `x` leaves: its subscriptions are dropped.
    Leave(usize),
    /// Member `x` fails over to its standby (which replayed its WAL).
    Fail(usize),
}

#[derive(Clone, Debug)]
struct Scenario {
    /// Each member's configured partition (few values: collisions are common) and the top 32
    /// bits of its system identifier (its initdb time: which of two is older).
    members: Vec<(u16, u32)>,
    events: Vec<Ev>,
}

#[derive(Debug, Default)]
struct Stats {
    ids: u64,
    refusals: u64,
    hints_followed: u64,
    handshakes: u64,
    failovers: u64,
    checks: u64,
}

impl model::Counters for Stats {
    fn add(&mut self, c: &Self) {
        self.ids += c.ids;
        self.refusals += c.refusals;
        self.hints_followed += c.hints_followed;
        self.handshakes += c.handshakes;
        self.failovers += c.failovers;
        self.checks += c.checks;
    }
}

/// One member (its running server).
struct Member {
    shared: Rc<model::Shared>,
    session: Session<()>,
    partition: u16,
    tli: u32,
    joined: bool,
    /// The lineage state its standby has replayed (the last record logged), and the refusal
    /// its member record carried.
    wal: State,
    wal_conflict: Option<Conflict>,
    /// The partitions it made IDs with.
    made: Vec<u16>,
}

/// An ID as (partition, unit, tick, sequence).
type IdParts = (u16, u64, u8, u16);

/// Who made an ID: the member, the event, and whether the member was in the group then.
type Issuer = (usize, usize, bool);

struct World {
    now: u64,
    members: Vec<Member>,
    /// Every ID issued: (partition, unit, tick, sequence) to the member that made it, the
    /// event it was made in, and whether the member was in the group then (an ID made apart
    /// never meets the group's rows).
    issued: HashMap<IdParts, Issuer>,
    /// The event at which two members last met (one joined the group while the other was in
    /// it: their rows meet from then on, and the check ran). IDs made before it are the
    /// documented exception: two servers that both made IDs with one partition before they
    /// met may have made the same ones (their clocks may differ, so the one that goes on can
    /// also make one the other made before it was refused).
    met: HashMap<(usize, usize), usize>,
    /// The event being run.
    event: usize,
    seed: u64,
    lsn: u64,
    stats: Stats,
    failure: Option<String>,
    trace: bool,
}

/// The model around member `x`'s room.
struct Around<'w> {
    w: RefCell<&'w mut World>,
    x: usize,
}

impl Model for Around<'_> {
    type Instant = u64;

    fn clock(&self) -> u64 {
        self.w.borrow().now
    }

    fn source(&self) -> Source {
        Source::Explicit(self.w.borrow().members[self.x].partition)
    }

    fn draw(&self) -> u64 {
        let mut w = self.w.borrow_mut();
        w.seed = w.seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = w.seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn put_file(&self, _st: &State) -> std::io::Result<()> {
        Ok(())
    }

    fn log_record(&self, st: &State, _timeline: u32, _unimportant: bool) -> u64 {
        let mut w = self.w.borrow_mut();
        // Replicated at once: a standby has every record its primary logged.
        w.members[self.x].wal = *st;
        w.lsn += 1;
        w.lsn
    }

    fn flush(&self, _lsn: u64) {}

    fn now(&self) -> u64 {
        self.w.borrow().now
    }

    fn turn_counts_from(&self, unit: u64) -> u64 {
        let w = self.w.borrow();
        w.now + unit.saturating_sub(w.now) + 1
    }

    fn wait_for_unit(
        &self,
        until: u64,
        from: u64,
        why: Wait,
        given_up: &dyn Fn() -> bool,
    ) -> Result<bool, SlowError> {
        let mut w = self.w.borrow_mut();
        let now = w.now;
        match model::wait(now, now, until, from, 2_500, why, given_up)? {
            Some(d) => {
                w.now += d;
                Ok(true)
            }
            None => Ok(false),
        }
    }
}

impl World {
    fn new(sc: &Scenario, trace: bool) -> World {
        let members = sc
            .members
            .iter()
            .enumerate()
            .map(|(i, &(partition, initdb))| {
                let id = (u64::from(initdb) << 32) | (i as u64 + 1);
                let st = State::fresh(id, 0x1000 + i as u64, 1, 1);
                Member {
                    shared: Rc::new(model::Shared::new(memory(st, None), FileState::Ready)),
                    session: Session::default(),
                    partition,
                    tli: 1,
                    joined: false,
                    wal: st,
                    wal_conflict: None,
                    made: Vec::new(),
                }
            })
            .collect();
        World {
            now: EPOCH,
            members,
            issued: HashMap::new(),
            met: HashMap::new(),
            event: 0,
            seed: 7,
            lsn: 0,
            stats: Stats::default(),
            failure: None,
            trace,
        }
    }

    fn fail(&mut self, msg: String) {
        if self.failure.is_none() {
            self.failure = Some(msg);
        }
    }

    fn note(&self, f: impl FnOnce() -> String) {
        if self.trace {
            eprintln!("{}", f());
        }
    }

    /// Runs `f` in member `x`'s room.
    fn room<R>(&mut self, x: usize, f: impl FnOnce(&model::Host<'_, Around<'_>>, u32) -> R) -> R {
        let shared = Rc::clone(&self.members[x].shared);
        let tli = self.members[x].tli;
        let h = model::Host {
            shared: &shared,
            model: Around {
                w: RefCell::new(self),
                x,
            },
        };
        f(&h, tli)
    }

    /// One ID of member `x`; a refusal for a member of the group is answered as its HINT says.
    fn gen_one(&mut self, x: usize) {
        let now = self.now;
        {
            let m = &self.members[x];
            let b = m.session;
            if b.epoch != 0 {
                if let Some((u, t, q)) = m.shared.cursor.take(now) {
                    if m.shared.epoch.get() == b.epoch {
                        self.issue(x, b.partition, u, t, q);
                        return;
                    }
                }
            }
        }
        let mut session = self.members[x].session;
        let made = self.room(x, |h, tli| {
            let mut b = Entering {
                session: &mut session,
                tag: || (),
            };
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
        self.members[x].session = session;
        match made {
            Ok((unit, tick, p, seq)) => self.issue(x, p, unit, tick, seq),
            Err(SlowError::Member(c)) if c.partition != self.members[x].partition => {
                // The partition changed after a refusal: not checked yet. As its HINT says:
                // sno_member_check() (the worker's round, at once).
                self.stats.checks += 1;
                self.round(x);
            }
            Err(SlowError::Member(c)) => {
                self.stats.refusals += 1;
                // The one that came first goes on: a member with IDs is refused only by one that
                // made IDs too (both before they met: then the older cluster goes on).
                if self.members[x].made.contains(&c.partition) && !c.peer.made_ids {
                    self.fail(format!(
                        "member {x} refused partition {} it made IDs with, for one that made none: {c:?}",
                        c.partition
                    ));
                }
                match self.members[x].shared.read(|m| server::suggest(m, &c)) {
                    Some(p) => {
                        self.note(|| format!("member {x} refused {c:?}: HINT partition {p}"));
                        self.members[x].partition = p;
                        self.stats.hints_followed += 1;
                        // A reload takes longer than a 4 ms unit.
                        self.now += 1;
                    }
                    None => self.fail(format!("member {x}: a refusal's HINT without a partition")),
                }
            }
            Err(SlowError::GaveUp { .. }) => {}
            Err(e) => self.fail(format!("member {x}: {e:?}")),
        }
    }

    fn issue(&mut self, x: usize, p: u16, unit: u64, tick: u8, seq: u16) {
        self.stats.ids += 1;
        if !self.members[x].made.contains(&p) {
            self.members[x].made.push(p);
        }
        let now = self.event;
        let joined = self.members[x].joined;
        let was = self.issued.insert((p, unit, tick, seq), (x, now, joined));
        if let Some((y, then, y_joined)) = was {
            // Twice by one member (its promoted standbys included) is always wrong; by two,
            // when both were made in the group after the two met (IDs both made before the
            // check are the documented exception: their rows fail the apply on a unique key;
            // a member that left makes rows the group never sees).
            let met = joined
                && y_joined
                && self
                    .met
                    .get(&(x.min(y), x.max(y)))
                    .is_some_and(|&m| then >= m);
            if x == y || met {
                self.fail(format!(
                    "({p}, {unit}, {tick}, {seq}) issued twice: by member {y} and by member {x}"
                ));
            }
        }
    }

    /// The handshake over `x`'s subscription to `y`: `x` describes itself and what it met,
    /// `y` hears it (its `sno_member_hello`) and answers with itself and what it met, `x` hears
    /// that. Both sides run [`server::hear`], as the glue does.
    fn handshake(&mut self, x: usize, y: usize) {
        self.stats.handshakes += 1;
        let caller = self.room(x, |h, _| {
            h.shared.read(|m| {
                server::member(h, m).map(|me| (me, m.members.verified_peers().collect::<Vec<_>>()))
            })
        });
        let Some((me, beyond)) = caller else {
            return;
        };
        let answer = self.room(y, |h, _| {
            h.locked(|m| server::hear(h, m, me, &beyond, false))
        });
        let Some(answer) = answer else {
            return;
        };
        self.note(|| {
            format!(
                "  {x} -> {y}: {me:?} heard by {y}: {:?}, {:?}",
                answer.me, answer.verdict
            )
        });
        self.refused(y, answer.refused);
        let heard = self.room(x, |h, _| {
            h.locked(|m| server::hear(h, m, answer.me, &answer.known, true))
        });
        if let Some(heard) = heard {
            self.note(|| {
                format!(
                    "  {x} heard {:?}: {:?} via {:?}",
                    answer.me, heard.verdict, heard.via
                )
            });
            self.refused(x, heard.refused);
        }
    }

    /// A round of member `x`'s worker (or `sno_member_check()`): a handshake over each of its
    /// subscriptions (to every member while it is joined), then a refusal for a partition it
    /// left is lifted ([`server::checked`]).
    fn round(&mut self, x: usize) {
        if self.members[x].joined {
            for y in 0..self.members.len() {
                if y != x && self.members[y].joined {
                    self.handshake(x, y);
                }
            }
        }
        if self.room(x, |h, _| h.locked(|m| server::checked(h, m))) {
            self.note(|| format!("member {x}: refusal lifted"));
        }
    }

    /// A refusal made by a handshake is logged in WAL: the standby replays it.
    fn refused(&mut self, x: usize, c: Option<Conflict>) {
        if let Some(c) = c {
            self.note(|| format!("member {x} refuses {c:?}"));
            self.members[x].wal_conflict = Some(c);
        }
    }

    /// Member `x` fails over: its standby, which replayed every record it logged, is promoted
    /// (a new WAL timeline); the old primary never runs again. The members it met are not in
    /// WAL (met again at the next handshakes), its refusal is.
    fn failover(&mut self, x: usize) {
        self.stats.failovers += 1;
        let m = &self.members[x];
        let mut st = m.wal;
        let inc = 0x5000 + self.stats.failovers;
        st.at_start(true, 2 + self.stats.failovers, inc, m.tli);
        let conflict = m.wal_conflict;
        let shared = Rc::new(model::Shared::new(memory(st, conflict), FileState::Ready));
        let m = &mut self.members[x];
        m.shared = shared;
        m.session = Session::default();
        m.tli += 1;
        self.note(|| format!("member {x} failed over to its standby"));
    }

    fn run(&mut self, events: &[Ev]) {
        for (i, &ev) in events.iter().enumerate() {
            self.event = i;
            self.note(|| format!("{ev:?}"));
            match ev {
                Ev::Gen(x, n) => {
                    for _ in 0..n {
                        self.gen_one(x);
                    }
                }
                Ev::Tick(d) => self.now += u64::from(d),
                Ev::Join(x) => {
                    if !self.members[x].joined {
                        self.members[x].joined = true;
                        // Its subscriptions both ways, then sno_member_check() on it before
                        // its first ID: one handshake with every member, each way.
                        for y in 0..self.members.len() {
                            if y != x && self.members[y].joined {
                                self.handshake(x, y);
                                self.handshake(y, x);
                                let now = self.event;
                                self.met.insert((x.min(y), x.max(y)), now);
                            }
                        }
                    }
                }
                Ev::Hand(x, y) => {
                    if x != y && self.members[x].joined && self.members[y].joined {
                        self.handshake(x, y);
                    }
                }
                Ev::Round(x) => self.round(x),
                Ev::Leave(x) => {
                    // Dropping subscriptions takes longer than a 4 ms unit: a partition the
                    // leaver used is taken by another member at a later time, if at all.
                    self.members[x].joined = false;
                    self.now += 1;
                }
                Ev::Fail(x) => self.failover(x),
            }
            if self.failure.is_some() {
                return;
            }
        }
    }
}

/// A server's memory at start, from its lineage state and its recorded refusal.
fn memory(st: State, conflict: Option<Conflict>) -> Memory {
    Memory {
        timeline: Timeline::restore(st.me, Slice::FULL),
        units_opened: 0,
        lineage: st,
        judged: (u32::MAX, -1),
        dirty: false,
        members: Known {
            conflict,
            ..Known::NONE
        },
    }
}

fn run(sc: &Scenario, trace: bool) -> Result<Stats, TestCaseError> {
    let mut w = World::new(sc, trace);
    // Everyone who ever joins is checked; only members that joined make IDs (a server outside
    // the group is another fleet's business).
    let events: Vec<Ev> = sc
        .events
        .iter()
        .copied()
        .filter(|ev| match *ev {
            Ev::Gen(x, _) => x < MEMBERS,
            _ => true,
        })
        .collect();
    let mut joined_once = [false; MEMBERS];
    let mut kept = Vec::new();
    for ev in events {
        match ev {
            Ev::Join(x) => joined_once[x] = true,
            Ev::Gen(x, _) if !joined_once[x] => continue,
            _ => {}
        }
        kept.push(ev);
    }
    w.run(&kept);
    match w.failure {
        Some(f) => Err(TestCaseError::fail(f)),
        None => Ok(w.stats),
    }
}

fn ev() -> impl Strategy<Value = Ev> {
    let x = 0..MEMBERS;
    prop_oneof![
        6 => (x.clone(), 1u8..40).prop_map(|(x, n)| Ev::Gen(x, n)),
        3 => (1u8..4).prop_map(Ev::Tick),
        2 => x.clone().prop_map(Ev::Join),
        3 => (x.clone(), x.clone()).prop_map(|(a, b)| Ev::Hand(a, b)),
        1 => x.clone().prop_map(Ev::Round),
        1 => x.clone().prop_map(Ev::Leave),
        1 => x.prop_map(Ev::Fail),
    ]
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (
        proptest::collection::vec((301u16..304, 1u32..4), MEMBERS),
        proptest::collection::vec(ev(), 1..120),
    )
        .prop_map(|(members, events)| Scenario { members, events })
}

#[test]
fn no_two_members_ids_meet_and_the_first_goes_on() {
    let stats = model::property(2_000, scenario(), run);
    assert!(stats.refusals > 0, "no member was ever refused: {stats:?}");
    assert!(stats.hints_followed > 0 && stats.failovers > 0, "{stats:?}");
}

#[test]
fn a_newcomer_with_a_taken_partition_is_refused_before_its_first_id() {
    // Member 0 (partition 301) makes IDs; member 1 (301 too, an older cluster) joins: it is
    // refused before its first ID, follows the HINT, and then makes IDs; member 0 never stops.
    let sc = Scenario {
        members: vec![(301, 2), (301, 1), (302, 3), (303, 3), (304, 3)],
        events: vec![
            Ev::Join(0),
            Ev::Gen(0, 20),
            Ev::Join(1),
            Ev::Gen(1, 5),
            Ev::Gen(0, 5),
            Ev::Tick(1),
            Ev::Gen(1, 5),
            Ev::Fail(1),
            Ev::Gen(1, 5),
            Ev::Gen(0, 5),
        ],
    };
    let stats = model::hand(&sc, run);
    assert_eq!((stats.refusals, stats.hints_followed), (1, 1), "{stats:?}");
}
