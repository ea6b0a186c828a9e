//! A server's generator: every decision `sno_generate` and the `sno lineage` worker make for a
//! running server, in one place and with no PostgreSQL in it.
//!
//! When to judge the lineage ([`judge`]), when and what to write durably and in which order
//! (the state file, then its WAL record, flushed, and only then a new epoch that lets backends
//! hand out what it covers: [`write()`]), what the worker settles ([`settle`], [`stop_plan`]), and the
//! slow path of `sno_generate` ([`generate_slow`]: open the cursor, write and wait, wait for the
//! clock, take a promised turn in a full unit, refuse). What happens around them (the lock, the
//! clock, files, WAL, shared memory, the Citus group read, the server log, the waits) is the
//! [`Host`]'s: the glue implements it over PostgreSQL (`crate::pg::issuer`), and the models
//! (`tests/lineage_model.rs`, `tests/citus_model.rs`, `tests/reserved_model.rs`) implement it in
//! memory and run these same functions through millions of random event orders. So a bug in
//! the order of a write and a publication, or a horizon one unit short, fails a model.
//!
//! The design follows the sans-IO state machines (quinn-proto): the decisions are here, the
//! side effects are asked for through the host, and nothing here reads a clock or a file.

use crate::generator::bound::Persisted;
use crate::generator::citus::{Node, Source};
use crate::generator::cursor::Cursor;
use crate::generator::lineage::{Refusal, State, NO_GROUP};
use crate::generator::member::{self, Conflict, Known, Member, Verdict};
use crate::generator::timeline::{Claim, Grant, Promise, Timeline};
use crate::id::layout::MAX_UNITS;

/// How far past the high-water mark the durable horizon is written: 2 s (500 units). After a
/// crash the server resumes past it, so a restart within 2 s flips the tick-tock bit.
pub const HORIZON_AHEAD: u64 = 500;

/// The horizon is renewed when the high-water mark comes within 1 s of it, so the state file
/// is written (and flushed) about once a second while IDs are being made, never per ID.
pub const HORIZON_MARGIN: u64 = 250;

/// A clock reading outside the range of the format.
pub const OUT_OF_RANGE: u64 = u64::MAX;

/// Whether the durable state (the state file) can be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum FileState {
    /// Read (or created): IDs may be made.
    Ready = 0,
    /// There is no state file: a new cluster, or a lost file.
    Missing = 1,
    /// The state file exists but cannot be used.
    Broken = 2,
}

impl FileState {
    /// From its number in shared memory.
    pub const fn from_u32(v: u32) -> FileState {
        match v {
            0 => FileState::Ready,
            1 => FileState::Missing,
            _ => FileState::Broken,
        }
    }
}

/// What a server's generator keeps under its lock.
#[repr(C)]
#[derive(Clone, Debug)]
pub struct Memory {
    /// The server's timeline.
    pub timeline: Timeline,
    /// Units the cursor was opened on.
    pub units_opened: u64,
    /// What this data directory knows of its lineage ([`crate::generator::lineage`]).
    pub lineage: State,
    /// The (WAL timeline, source of the partition) the lineage was last judged for, the source
    /// as [`source_key`]; generation judges again when either changes. `u32::MAX`: never
    /// judged.
    pub judged: (u32, i64),
    /// The lineage state changed and must be written before the next ID.
    pub dirty: bool,
    /// The members of a replicating group this server met, and its refusal if one came first
    /// with its partition ([`crate::generator::member`]).
    pub members: Known,
}

/// A number for `source`, kept in [`Memory::judged`]: the partition (0..=65535), -1 for a
/// derived one, below for what Citus said.
pub fn source_key(source: Source) -> i64 {
    match source {
        Source::Explicit(p) => i64::from(p),
        Source::Derived => -1,
        Source::Citus(Node::NotActivated) => -2,
        Source::Citus(Node::Group(g)) => -3 - i64::from(g),
    }
}

/// Why the slow path (or `sno_generator_initialize`) could not go on.
#[derive(Debug)]
pub enum SlowError {
    /// The clock is outside the range of the format.
    Clock,
    /// The durable state is missing or unusable and the partition is explicit (or the server
    /// has Citus).
    State(FileState),
    /// The state file could not be written.
    Write(std::io::Error),
    /// The lineage's judgment refused the partition (a copy beside its original, a Citus node
    /// that is not one yet).
    Refused(Refusal),
    /// Another member of a replicating group came first with the partition.
    Member(Conflict),
    /// `sno_generator_initialize` would start afresh with the partition in force when the
    /// state file was lost (its source key, -1 when not explicit).
    SameAsLost(i64),
    /// A wait for the clock ran out of `sno.max_clock_wait` (or the host's bound).
    GaveUp {
        /// How long the call waited, in ms.
        waited_ms: u128,
        /// The unit it waited for.
        until: u64,
        /// What it waited for.
        why: Wait,
    },
}

/// What a call waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// The clock went back into time already used for IDs.
    ClockBehind,
    /// Every sequence number of the current unit is taken: the call's turn in a later unit
    /// (only time past that unit's start counts: a full unit is not clock trouble).
    Turn,
}

/// What the server log (or a WARNING) is told.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Note {
    /// A derived partition went on with a new partition after the state file was lost.
    NewDerivedPartition { file: FileState },
    /// An explicit partition others used was taken over (`by_take_over`: by the
    /// administrator's word, a WARNING to the session; else at a promotion, a log line).
    TookOver { partition: u16, by_take_over: bool },
    /// A tick-tock flip: the clock went back, or time a durable bound says was used is ahead.
    Flip { tick: u8, clock_went_back: bool },
}

/// Where a server's generator runs: the lock and the memory under it, the shared cursor and
/// epoch, the clock, the durable state's file and WAL, the server log, and the waits.
///
/// Methods take `&self`: the glue's host is shared memory, and a model's keeps its server in a
/// cell; so that a promise can be given back while a wait unwinds (a cancel), as the glue's
/// must.
pub trait Host {
    /// An instant of the host's monotonic clock (for the waits' budgets).
    type Instant: Copy;

    /// Runs `f` on the memory under the generator's lock.
    fn locked<R>(&self, f: impl FnOnce(&mut Memory) -> R) -> R;
    /// As [`Host::locked`], writing nothing anywhere (for a call being unwound after an error);
    /// not at all if the lock is held by this caller already.
    fn locked_silently(&self, f: impl FnOnce(&mut Memory));
    /// The shared cursor.
    fn cursor(&self) -> &Cursor;
    /// The wall clock in 4 ms units, or [`OUT_OF_RANGE`].
    fn clock(&self) -> u64;

    /// Whether the durable state can be used, and making it usable.
    fn file_state(&self) -> FileState;
    fn set_file_ready(&self);
    /// Where the partition comes from now (the configuration, Citus's catalog).
    fn source(&self) -> Source;
    /// Whether this server has Citus (whose groups a lost state file recorded).
    fn citus_loaded(&self) -> bool;
    /// A random 64-bit number (a new incarnation).
    fn draw(&self) -> u64;

    /// The lineage state as it now is (the monitoring views' copy). Under the lock.
    fn lineage_changed(&self, st: &State);
    /// The partition judged for use and the Citus group it was judged for. Under the lock.
    fn publish(&self, partition: u16, group: u32);
    /// A new epoch: every backend takes its partition again before its next ID. Under the
    /// lock.
    fn new_epoch(&self);
    /// The current epoch.
    fn epoch(&self) -> u64;
    /// The partition the last judgment published.
    fn partition(&self) -> u16;
    /// The timeline's promise round as the last locked section left it (read without the
    /// lock: a caller waiting for its turn sees at once that a flip or an absorb voided it).
    fn round(&self) -> u64;
    /// Something for the server log, written once the lock is released.
    fn note(&self, n: Note);

    /// Writes `st` to the state file, flushed.
    fn put_file(&self, st: &State) -> std::io::Result<()>;
    /// Writes `st`'s lineage record to WAL (marked unimportant if asked), returning its end.
    fn log_record(&self, st: &State, timeline: u32, unimportant: bool) -> u64;
    /// Flushes WAL up to `lsn`.
    fn flush(&self, lsn: u64);
    /// The end of the last lineage record written, which a backend makes durable before it
    /// hands out IDs of a new epoch. Under the lock.
    fn set_lineage_lsn(&self, lsn: u64);
    /// A write of the durable state was made.
    fn count_write(&self);

    /// Asks the worker to renew the horizon ahead of need (outside the lock).
    fn ask_for_renewal(&self);
    /// The instant from which a wait for a turn in unit `unit` counts (its start as far as the
    /// clock can tell, plus a unit of grace), and now.
    fn turn_counts_from(&self, unit: u64) -> Self::Instant;
    fn now(&self) -> Self::Instant;
    /// Waits until the clock reaches unit `until` (true), or until `given_up` says the wait is
    /// pointless (false); counting against the waits' budget from `from`. Past the budget:
    /// [`SlowError::GaveUp`].
    fn wait_for_unit(
        &self,
        until: u64,
        from: Self::Instant,
        why: Wait,
        given_up: &dyn Fn() -> bool,
    ) -> Result<bool, SlowError>;
}

/// One backend's generator, as the slow path sees it.
pub trait Backend {
    /// The epoch this backend's partition was read in (0: none).
    fn epoch(&self) -> u64;
    /// Takes the partition and epoch `judged` once the bound covering the IDs of that epoch
    /// would survive a failover (the glue waits for synchronous standbys here).
    fn enter_epoch(&mut self, judged: (u16, u64));
    /// The partition this backend writes.
    fn partition(&self) -> u16;
    /// An ID was issued; the cursor was opened on a unit by this backend; a full unit; a
    /// wait for the clock (its statistics).
    fn issued(&mut self);
    fn opened_unit(&mut self);
    fn full_unit(&mut self);
    fn clock_wait(&mut self);
}

/// Makes sure the lineage state was judged for the WAL timeline `timeline` and the source of
/// the partition ([`State::judge_source`]) before IDs are made. Under the lock.
pub fn judge<H: Host>(
    h: &H,
    m: &mut Memory,
    timeline: u32,
    take_over: bool,
) -> Result<(), SlowError> {
    let source = h.source();
    let status = h.file_state();
    if status != FileState::Ready {
        // Without the state, an explicit partition or a Citus group's generation could repeat
        // what the lost file covered; on a server with Citus, a session in another database
        // must not start the state afresh either (the group's generations would be forgotten).
        if !matches!(source, Source::Derived) || h.citus_loaded() {
            return Err(SlowError::State(status));
        }
        // A derived partition needs nothing from the lost state: the incarnation drawn at
        // start-up gives a new partition, different from every one the lineage is known to
        // have used.
        h.set_file_ready();
        m.dirty = true;
        m.judged = (u32::MAX, -1);
        // But the reserved partitions granted are forgotten with the file: none is granted
        // until a superuser has had every database's sno_reserved_grants read back
        // (sno_reserved_relearn) and says so (take_over).
        m.lineage.grants_blocked = true;
        m.lineage.grants_blocked_lasting = true;
        h.lineage_changed(&m.lineage);
        h.note(Note::NewDerivedPartition { file: status });
    }
    let key = (timeline, source_key(source));
    if m.judged == key && !m.lineage.copied && !take_over {
        return match m.members.refuses(h.partition()) {
            Some(c) => Err(SlowError::Member(c)),
            None => Ok(()),
        };
    }
    let mut st = m.lineage;
    let j = st
        .judge_source(timeline, source, take_over, || h.draw())
        .map_err(SlowError::Refused)?;
    // Refused before anything changes, as the lineage's refusals are: a member of the group
    // came first with this partition (or with the one before it, and this one is not checked
    // yet).
    if let Some(c) = m.members.refuses(j.partition) {
        return Err(SlowError::Member(c));
    }
    // Closes the cursor: no backend goes on with what it read before this judgment.
    m.timeline.absorb(j.absorb, h.cursor());
    m.dirty |= j.changed;
    m.lineage = st;
    h.lineage_changed(&st);
    let group = match source {
        Source::Explicit(_) => NO_GROUP,
        _ => st.citus_group,
    };
    h.publish(j.partition, group);
    h.new_epoch();
    m.judged = key;
    if j.took_over {
        h.note(Note::TookOver {
            partition: j.partition,
            by_take_over: take_over,
        });
    }
    Ok(())
}

/// This server as a handshake with another member describes it: its partition (the configured
/// one, else the one judged for use; `None` while a derived partition is not drawn yet) and
/// whether its lineage may have made IDs with it. Under the lock.
pub fn member<H: Host>(h: &H, m: &Memory) -> Option<Member> {
    let partition = match h.source() {
        Source::Explicit(p) => p,
        _ if m.judged.0 != u32::MAX => h.partition(),
        _ => return None,
    };
    Some(Member {
        id: m.lineage.system_identifier,
        partition,
        made_ids: m.members.made == Some(partition) || m.lineage.inherited_ids_with(partition),
    })
}

/// A handshake with `peer`, another member of a replicating group: noted, and if the peer came
/// first with this server's partition, this server is refused from here on (a new epoch sends
/// every backend through [`judge`], which refuses). Returns this server's description and what
/// it decided, and the refusal when this handshake made it (for the host to record). Under the
/// lock.
pub fn meet<H: Host>(
    h: &H,
    m: &mut Memory,
    peer: Member,
    heard: member::Provenance,
) -> Option<(Member, Verdict, Option<Conflict>)> {
    let me = member(h, m)?;
    let was = m.members.conflict;
    let v = m.members.meet(&me, peer, heard);
    let new = (m.members.conflict != was)
        .then_some(m.members.conflict)
        .flatten();
    if new.is_some() {
        h.new_epoch();
    }
    Some((me, v, new))
}

/// What a server made of a handshake with another member ([`hear`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Heard {
    /// This server, as it described itself.
    pub me: Member,
    /// What it decided about the peer itself.
    pub verdict: Verdict,
    /// A member beyond the peer (one the peer met) that came first with this server's partition:
    /// their rows would meet at the peer.
    pub via: Option<Member>,
    /// The refusal this handshake made (for the host to record: file, WAL).
    pub refused: Option<Conflict>,
    /// The members this server learned over its own connections, the peer left out (what it
    /// tells the peer in turn).
    pub known: Vec<Member>,
}

/// One side of a handshake with `peer`, another member of a replicating group, which told the
/// members it met (`beyond`): both sides run it, the publisher on the subscriber's word (in
/// `sno_member_hello`; `verified` false: hearsay, for its own decision only) and the
/// subscriber on the publisher's answer over its own connection (`verified` true), so each
/// learns the group beyond the other. Under the lock.
pub fn hear<H: Host>(
    h: &H,
    m: &mut Memory,
    peer: Member,
    beyond: &[Member],
    verified: bool,
) -> Option<Heard> {
    let was = m.members.conflict;
    let itself = if verified {
        member::Provenance::Connected
    } else {
        member::Provenance::Itself
    };
    let (me, verdict, _) = meet(h, m, peer, itself)?;
    let mut via = None;
    for k in beyond.iter().filter(|k| k.id != me.id && k.id != peer.id) {
        if let Some((_, Verdict::Second, _)) = meet(h, m, *k, member::Provenance::Hearsay) {
            via = via.or(Some(*k));
        }
    }
    let refused = (m.members.conflict != was)
        .then_some(m.members.conflict)
        .flatten();
    let known = m
        .members
        .verified_peers()
        .filter(|k| k.id != peer.id)
        .collect();
    Some(Heard {
        me,
        verdict,
        via,
        refused,
        known,
    })
}

/// After a full round of handshakes (every subscription's publisher answered, or there are no
/// subscriptions): lifts a refusal for a partition this server no longer uses; the round found
/// no member first with the one it uses now. Returns whether it lifted one. Under the lock.
pub fn checked<H: Host>(h: &H, m: &mut Memory) -> bool {
    let now = match h.source() {
        Source::Explicit(p) => Some(p),
        _ if m.judged.0 != u32::MAX => Some(h.partition()),
        _ => None,
    };
    let lifted = m.members.lift(now);
    if lifted {
        h.new_epoch();
    }
    lifted
}

/// The partition a refusal's HINT suggests: the next live one that no member this server met
/// uses and no other member of its lineage used (which its judgment would refuse). Under the
/// lock, or on a copy.
pub fn suggest(m: &Memory, c: &Conflict) -> Option<u16> {
    m.members
        .suggest(c.partition, crate::generator::reserved::FIRST, |p| {
            m.lineage.others(p).is_some() || p == c.partition
        })
}

/// The durable state to write next for timeline `tl`: a renewed horizon, or the current one
/// (with the tick-tock state) when only the lineage changed.
pub fn next_durable(tl: &Timeline) -> Persisted {
    tl.due(HORIZON_AHEAD, HORIZON_MARGIN).unwrap_or(Persisted {
        horizon: tl
            .horizon
            .max(tl.hi.saturating_add(HORIZON_AHEAD).min(MAX_UNITS)),
        safe: tl.safe,
        drifts: tl.drifts,
    })
}

/// The lineage state with `p` as this server's bound.
fn with_written(m: &Memory, p: Persisted) -> State {
    let mut st = m.lineage;
    st.written(p);
    st
}

/// Writes the durable state `plan` gives, if any: the state file, then its WAL record
/// (unimportant if the plan says so), flushed; only then is it recorded as written, with a new
/// epoch, so that backends pass the slow path once more and make the record durable (the glue:
/// wait for synchronous standbys) before they hand out what it covers. The lock is taken twice,
/// briefly: to see what to write, and to record it as written; `sno_generate` goes on meanwhile
/// on what is already on disk. The caller holds the host's writer lock (one write at a time).
/// Whether it wrote.
pub fn write<H: Host>(
    h: &H,
    timeline: u32,
    plan: impl FnOnce(&Memory) -> Option<(Persisted, bool)>,
) -> std::io::Result<bool> {
    let job = h.locked(|m| {
        let (p, unimportant) = plan(m)?;
        Some((with_written(m, p), p, unimportant))
    });
    let Some((st, p, unimportant)) = job else {
        return Ok(false);
    };
    h.put_file(&st)?;
    let lsn = h.log_record(&st, timeline, unimportant);
    h.flush(lsn);
    h.locked(|m| {
        // What changed meanwhile was not written, and stays to be written: a lineage that
        // differs stays dirty, a flip the written tick-tock state does not have is not covered.
        let now = with_written(m, p);
        if now == st {
            m.dirty = false;
        }
        m.lineage = now;
        h.lineage_changed(&now);
        m.timeline.written(p);
        h.set_lineage_lsn(lsn);
        h.new_epoch();
    });
    h.count_write();
    Ok(true)
}

/// What a backend that cannot go on without it writes: the lineage if it changed, else the
/// horizon when the clock caught up with it.
pub fn needed_now(m: &Memory) -> Option<(Persisted, bool)> {
    (m.dirty || !m.timeline.covers(m.timeline.hi)).then(|| (next_durable(&m.timeline), false))
}

/// The worker's look (the `sno lineage` worker, about once a second): judges the lineage for the
/// configuration and WAL timeline, and writes the durable state if it changed or a renewal of
/// the horizon is due. When no unit was opened since the last look (`*opened`), the server is
/// idle: the idle lease ([`Timeline::idle_lease`], `lead` past the clock) is written once, so
/// that the first ID after a pause does not wait for a write. Returns whether no lease is on
/// disk yet (the worker then looks again soon). The caller holds the writer lock around the
/// write (`write_locked`).
pub fn settle<H: Host>(
    h: &H,
    timeline: u32,
    opened: &mut u64,
    lead: u64,
    write_locked: impl FnOnce(&dyn Fn() -> std::io::Result<bool>) -> std::io::Result<bool>,
) -> Result<bool, std::io::Error> {
    let idle = h.locked(|m| {
        judge(h, m, timeline, false).ok();
        let idle = m.units_opened == *opened;
        *opened = m.units_opened;
        idle
    });
    let plan = |m: &Memory| {
        let now = h.clock();
        let tl = &m.timeline;
        if m.dirty {
            return Some((next_durable(tl), false));
        }
        // An idle server's lease is the only write it makes until IDs are made again: its WAL
        // record does not count as activity (checkpoints and archive_timeout skip it).
        if let Some(p) = idle
            .then(|| tl.idle_lease(now, lead, HORIZON_AHEAD))
            .flatten()
        {
            return Some((p, true));
        }
        // A renewal ahead of IDs being made; none for a timeline the clock is behind (the next
        // ID flips or waits: after a crash within a lease, this one is given up).
        (tl.due(HORIZON_AHEAD, HORIZON_MARGIN).is_some() && now >= tl.hi)
            .then(|| (next_durable(tl), false))
    };
    let written = write_locked(&|| write(h, timeline, plan));
    // No lease on disk yet: soon idle, or allowed again.
    let soon = h.locked(|m| m.timeline.lease_wanted(lead, HORIZON_AHEAD));
    written.map(|_| soon)
}

/// At a clean stop: what the state file gets instead of the lease or horizon ahead of the last
/// ID ([`Timeline::stop`]), and the lineage state with it; nothing while the lineage or a
/// tick-tock flip waits to be written (that write is the backends'). Under the lock; the caller
/// writes the file and then calls [`stopped`].
pub fn stop_plan(m: &mut Memory) -> Option<(State, Persisted)> {
    let tl = &m.timeline;
    if m.dirty || tl.drifts != tl.written_drifts || tl.horizon <= tl.hi {
        return None;
    }
    let p = m.timeline.stop();
    let mut st = m.lineage;
    st.stopped(p);
    Some((st, p))
}

/// After [`stop_plan`]'s file was written. Under the lock.
pub fn stopped<H: Host>(h: &H, m: &mut Memory, p: Persisted) {
    m.lineage.stopped(p);
    h.lineage_changed(&m.lineage);
    m.timeline.written(p);
}

/// The ID parts the slow path gives: unit, tick-tock bit, partition, sequence number.
pub type Parts = (u64, u8, u16, u16);

/// `sno_generate`'s slow path (the first call in a new unit, a used-up unit, a clock regression,
/// a new epoch): under the lock, judge the lineage and read the clock again (so that two
/// backends reading it a moment apart never mistake each other's readings for a regression),
/// and let the timeline open the cursor on the clock's unit; write and wait when the durable
/// state must cover more first (`write_now`, which takes the writer lock and calls [`write()`]
/// with [`needed_now`]); wait outside the lock for the clock or for a promised turn.
pub fn generate_slow<H: Host, B: Backend>(
    h: &H,
    b: &mut B,
    timeline: u32,
    write_now: &dyn Fn() -> std::io::Result<bool>,
) -> Result<Parts, SlowError> {
    let mut waited_since: Option<H::Instant> = None;
    loop {
        let mut now = OUT_OF_RANGE;
        let mut renew = false;
        let mut tick = 0;
        let mut judged = (0u16, 0u64);
        let mut promised: Option<Promise> = None;
        let mut clock_went_back = false;
        let mut opened_here = false;
        let grant = h.locked(|m| {
            // The epoch before the judgment reads the configured partition: a reload that
            // publishes a new one (and then a new epoch) after this read sends this backend
            // through here again before its next ID.
            let epoch = h.epoch();
            judge(h, m, timeline, false)?;
            now = h.clock();
            if now == OUT_OF_RANGE {
                return Err(SlowError::Clock);
            }
            // A flip now is the clock's doing if it reads behind a reading it gave before.
            clock_went_back = now < m.timeline.seen;
            let grant = m.timeline.advance(h.cursor(), now, m.dirty);
            tick = m.timeline.tick();
            if let Grant::Open { opened, .. } = grant {
                if opened {
                    m.units_opened += 1;
                    opened_here = true;
                    // What a handshake says of this server (recorded by the worker).
                    m.members.made_with(h.partition());
                }
                // Given to the backend only once the bound is durable (below). If the judgment
                // started a new epoch, this one is already past: the next call comes back here
                // once, and the judgment is then a no-op.
                judged = (h.partition(), epoch);
                // Renewed by the worker ahead of need, outside the lock.
                renew = m.timeline.due(HORIZON_AHEAD, HORIZON_MARGIN).is_some();
            }
            if let Grant::FullUnit { .. } = grant {
                // This caller's turn in a later unit, kept for it whoever asks meanwhile (none
                // when the queue is full: it waits for the next unit and asks again).
                promised = m.timeline.promise(now);
            }
            Ok(grant)
        })?;
        if opened_here {
            b.opened_unit();
        }
        match grant {
            Grant::Open { flipped, .. } => {
                if renew {
                    h.ask_for_renewal();
                }
                if flipped {
                    h.note(Note::Flip {
                        tick,
                        clock_went_back,
                    });
                }
                b.enter_epoch(judged);
                // The same checks as the fast path: a judgment may have come in between.
                if let Some((unit, tick, seq)) = h.cursor().take(now) {
                    if h.epoch() == b.epoch() {
                        b.issued();
                        return Ok((unit, tick, b.partition(), seq));
                    }
                }
                // Used up by others in the meantime: the slow path again.
            }
            Grant::Write { flipped } => {
                if flipped {
                    h.note(Note::Flip {
                        tick,
                        clock_went_back,
                    });
                }
                // The clock caught up with the horizon on disk (the worker fell behind), the
                // clock went back, or the lineage changed: this call writes and waits.
                write_now().map_err(SlowError::Write)?;
            }
            Grant::FullUnit { until } => {
                b.full_unit();
                match promised {
                    Some(p) => {
                        if let Some(id) = take_turn(h, b, p, timeline, write_now)? {
                            return Ok(id);
                        }
                        // The promise was voided (a flip, a new judgment): ask again.
                    }
                    // No turn to be had now: the next unit, then ask again. Not clock trouble
                    // either, unless the clock does not get there.
                    None => {
                        h.wait_for_unit(until, h.turn_counts_from(until), Wait::Turn, &|| false)?;
                    }
                }
            }
            Grant::ClockBehind { until } => {
                b.clock_wait();
                // All the time this call waits for the clock to come back counts.
                let from = *waited_since.get_or_insert_with(|| h.now());
                h.wait_for_unit(until, from, Wait::ClockBehind, &|| false)?;
            }
        }
    }
}

/// A caller that found its unit used up waits for the unit of its promise, then takes the
/// promised ID. `None`: the promise was voided, or a new judgment came between the claim and
/// the ID; the caller asks again.
fn take_turn<H: Host, B: Backend>(
    h: &H,
    b: &mut B,
    p: Promise,
    timeline: u32,
    write_now: &dyn Fn() -> std::io::Result<bool>,
) -> Result<Option<Parts>, SlowError> {
    let from = h.turn_counts_from(p.unit);
    // Given back if this call ends any other way than with the promised ID (a cancel, an
    // error: the unwinding drops it), so that the next caller gets it.
    let turn = Turn {
        h,
        p,
        claimed: core::cell::Cell::new(false),
    };
    loop {
        // A flip or an absorb voids the promise: the call asks again at once instead of
        // waiting for a unit of a timeline given up.
        let voided = || h.round() != p.round;
        if !h.wait_for_unit(p.unit, from, Wait::Turn, &voided)? {
            return Ok(None);
        }
        let mut judged = (0u16, 0u64);
        let claim = h.locked(|m| {
            let epoch = h.epoch();
            judge(h, m, timeline, false)?;
            if h.epoch() != epoch {
                // The judgment started a new epoch: claim with the settled one.
                return Ok(Claim::Wait { until: p.unit });
            }
            let now = h.clock();
            if now == OUT_OF_RANGE {
                return Err(SlowError::Clock);
            }
            let c = m.timeline.claim(h.cursor(), p, now, m.dirty);
            match c {
                Claim::Take(_) => {
                    turn.claimed.set(true);
                    judged = (h.partition(), epoch);
                }
                Claim::Void => turn.claimed.set(true),
                _ => {}
            }
            Ok(c)
        })?;
        match claim {
            Claim::Take((unit, tick, seq)) => {
                // As for the cursor: the bound covering it must survive a failover first.
                b.enter_epoch(judged);
                if h.epoch() != b.epoch() {
                    return Ok(None);
                }
                b.issued();
                return Ok(Some((unit, tick, b.partition(), seq)));
            }
            Claim::Write => {
                write_now().map_err(SlowError::Write)?;
            }
            Claim::Wait { .. } => {}
            Claim::Void => return Ok(None),
        }
    }
}

/// A promise held by a call waiting for its turn: given back unless claimed (or voided).
struct Turn<'a, H: Host> {
    h: &'a H,
    p: Promise,
    claimed: core::cell::Cell<bool>,
}

impl<H: Host> Drop for Turn<'_, H> {
    fn drop(&mut self) {
        if !self.claimed.get() {
            let p = self.p;
            self.h.locked_silently(|m| m.timeline.give_back(p));
        }
    }
}
