//! What the next `sno_generate` would do, told without doing it: whether it would make an ID,
//! and with which partition, or why not. The monitoring views show this
//! (the glue's `monitor.rs`), so that a probe alerts without calling the generator.
//!
//! Pure Rust: the glue gathers what `sno_generate` would look at (recovery, the state file,
//! the source of the partition, the clock) and a copy of the lineage state; [`forecast`] runs
//! the lineage's own judgment ([`State::judge_source`]) on that copy, so the view and the
//! generator cannot disagree on a refusal, and nothing is changed, written or published.

use crate::generator::citus::{self, Node, Source};
use crate::generator::lineage::{Refusal, State, NO_GROUP};

/// Whether `sno_generate` would make an ID now, and if not, why: a fixed set of codes (a
/// label for alerting, never free text).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// It would.
    Ready,
    /// The server is in recovery (a standby): SQLSTATE 25006.
    Standby,
    /// sno is not in `shared_preload_libraries`.
    NotPreloaded,
    /// The state file is missing and the partition's source needs it.
    NoStateFile,
    /// The state file could not be read and the partition's source needs it.
    UnusableStateFile,
    /// A copy of a server that made IDs with the configured partition, started beside it.
    Copy,
    /// A copy of a Citus node, started beside it.
    CitusCopy,
    /// Citus is installed here but the server is no node of a cluster yet.
    CitusNotActivated,
    /// The server's Citus group is past the groups that have partitions.
    CitusGroupTooLarge,
    /// This database's Citus metadata disagrees with the group the server goes on with.
    CitusDisagreement,
    /// A parallel worker, in the database whose Citus metadata decides, before any session
    /// read the node's group: it cannot read it.
    CitusUnread,
    /// The system clock is outside the time range of the format.
    ClockOutOfRange,
    /// The configured `sno.partition` is in the reserved range and the lineage never used it.
    ReservedPartition,
}

impl Status {
    /// Every status, in the order the documentation lists them.
    pub const ALL: [Status; 13] = [
        Status::Ready,
        Status::Standby,
        Status::NotPreloaded,
        Status::NoStateFile,
        Status::UnusableStateFile,
        Status::Copy,
        Status::CitusCopy,
        Status::CitusNotActivated,
        Status::CitusGroupTooLarge,
        Status::CitusDisagreement,
        Status::CitusUnread,
        Status::ClockOutOfRange,
        Status::ReservedPartition,
    ];

    /// The code the views show.
    pub const fn code(self) -> &'static str {
        match self {
            Status::Ready => "ready",
            Status::Standby => "standby",
            Status::NotPreloaded => "not_preloaded",
            Status::NoStateFile => "no_state_file",
            Status::UnusableStateFile => "unusable_state_file",
            Status::Copy => "copy",
            Status::CitusCopy => "citus_copy",
            Status::CitusNotActivated => "citus_not_activated",
            Status::CitusGroupTooLarge => "citus_group_too_large",
            Status::CitusDisagreement => "citus_disagreement",
            Status::CitusUnread => "citus_unread",
            Status::ClockOutOfRange => "clock_out_of_range",
            Status::ReservedPartition => "reserved_partition",
        }
    }

    /// The status of a refusal of the lineage's judgment.
    pub const fn of_refusal(r: Refusal) -> Status {
        match r {
            Refusal::Inherited(_) => Status::Copy,
            Refusal::CitusCopy(_) => Status::CitusCopy,
            Refusal::CitusGroupTooLarge(_) => Status::CitusGroupTooLarge,
            Refusal::CitusNotActivated => Status::CitusNotActivated,
            Refusal::Reserved { .. } => Status::ReservedPartition,
        }
    }
}

/// The durable state as `sno_generate` finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum File {
    /// Read and usable.
    Ready,
    /// No state file.
    Missing,
    /// A file that could not be read.
    Unusable,
}

/// What `sno_generate` would look at, gathered by the glue.
#[derive(Clone, Copy, Debug)]
pub struct Inputs {
    /// The server is in recovery.
    pub recovery: bool,
    /// The state file.
    pub file: File,
    /// The Citus library is loaded in this server.
    pub citus_loaded: bool,
    /// Where the partition would come from: `sno.partition`, what this database's Citus
    /// metadata says (or what was published), else derived.
    pub source: Source,
    /// This database's Citus metadata disagrees with what the server goes on with.
    pub disagreement: bool,
    /// A parallel worker that cannot read the node's group, which nothing decided yet.
    pub parallel_unread: bool,
    /// The WAL timeline new IDs would be judged on.
    pub timeline: u32,
    /// The system clock is within the range of the format.
    pub clock_in_range: bool,
}

/// What the next `sno_generate` would do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Forecast {
    /// Whether it would make an ID, or why not.
    pub status: Status,
    /// The refusal of the lineage's judgment, when that is why.
    pub refusal: Option<Refusal>,
    /// The partition it would write; `None` when it would write none, or when the partition
    /// is not decided yet (a derived partition is drawn again at the first ID after a
    /// promotion, or when the one the lineage has was used by another member). On a standby:
    /// the partition it will write once promoted (the judgment of a promotion, run on the
    /// copy), `None` when that is drawn then.
    pub partition: Option<u16>,
    /// The Citus node group the partition belongs to.
    pub citus_group: Option<u32>,
    /// Of that group's generations, how many no member of the lineage used yet.
    pub generations_left: Option<u32>,
}

/// Draws that [`forecast`] hands the judgment instead of random ones: distinct values, and a
/// count of how many were asked for (a derived partition drawn is not known in advance).
struct Draws(u64);

impl Draws {
    fn next(&mut self) -> u64 {
        self.0 += 1;
        // Any sequence of distinct values serves: the judgment only compares partitions.
        self.0.wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }
}

/// What the next `sno_generate` would do, given `inputs` and a copy of the lineage state
/// (`lineage`, changed freely here: the caller's copy). The checks come in `sno_generate`'s
/// order: recovery, Citus disagreement, the state file, the lineage's judgment, the clock.
pub fn forecast(inputs: Inputs, mut lineage: State) -> Forecast {
    let refused = |status: Status, refusal: Option<Refusal>| Forecast {
        status,
        refusal,
        partition: None,
        citus_group: None,
        generations_left: None,
    };
    if inputs.recovery {
        // What a promotion (the next WAL timeline) would decide: the status stays standby.
        let promoted = if lineage.timeline == 0 {
            0
        } else {
            lineage.timeline.wrapping_add(1)
        };
        let mut f = forecast(
            Inputs {
                recovery: false,
                file: File::Ready,
                disagreement: false,
                parallel_unread: false,
                timeline: promoted,
                clock_in_range: true,
                ..inputs
            },
            lineage,
        );
        f.status = Status::Standby;
        f.refusal = None;
        return f;
    }
    if inputs.disagreement {
        return refused(Status::CitusDisagreement, None);
    }
    if inputs.parallel_unread {
        return refused(Status::CitusUnread, None);
    }
    let derived = matches!(inputs.source, Source::Derived);
    if inputs.file != File::Ready && (!derived || inputs.citus_loaded) {
        let status = match inputs.file {
            File::Missing => Status::NoStateFile,
            _ => Status::UnusableStateFile,
        };
        return refused(status, None);
    }
    let mut draws = Draws(0);
    let judged = lineage.judge_source(inputs.timeline, inputs.source, false, || draws.next());
    let j = match judged {
        Ok(j) => j,
        Err(r) => return refused(Status::of_refusal(r), Some(r)),
    };
    if !inputs.clock_in_range {
        return refused(Status::ClockOutOfRange, None);
    }
    let group = (lineage.citus_group != NO_GROUP && !matches!(inputs.source, Source::Explicit(_)))
        .then_some(lineage.citus_group);
    // A derived partition that needed a draw is not the one the real judgment will draw.
    let undecided = group.is_none() && derived && draws.0 > 0;
    Forecast {
        status: Status::Ready,
        refusal: None,
        partition: (!undecided).then_some(j.partition),
        citus_group: group,
        generations_left: group.map(|g| generations_left(&lineage, g)),
    }
}

/// Of Citus group `g`'s live generations (0-14: 15 is reserved), how many no member of
/// `lineage` used.
pub fn generations_left(lineage: &State, g: u32) -> u32 {
    citus::live_partitions(g)
        .filter(|&p| !lineage.is_mine(p) && lineage.others(p).is_none())
        .count() as u32
}

/// The source `sno_generate` would take in this database: the explicit partition, else what
/// this database's Citus metadata says (`here`, when the glue may read it), else what another
/// database published, else derived; and, when `here` disagrees with what the server goes on
/// with ([`citus::agrees`], only when no database is named to decide), what each says (here,
/// the server). `sno_generate` reads Citus and refuses a disagreeing database whatever the
/// partition's source, an explicit one included: so does this.
pub fn source(
    explicit: Option<u16>,
    here: Option<Node>,
    published: Option<Node>,
    kept: Option<u32>,
    named: bool,
) -> (Source, Option<(Node, Node)>) {
    let disagreement = match here {
        Some(node) if !named => citus::agrees(node, published, kept)
            .err()
            .map(|server| (node, server)),
        _ => None,
    };
    let source = match (explicit, here) {
        (Some(p), _) => Source::Explicit(p),
        (None, Some(node)) if disagreement.is_none() => Source::Citus(node),
        _ => published.map_or(Source::Derived, Source::Citus),
    };
    (source, disagreement)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generator::bound::Persisted;

    fn inputs(source: Source) -> Inputs {
        Inputs {
            recovery: false,
            file: File::Ready,
            citus_loaded: false,
            source,
            disagreement: false,
            parallel_unread: false,
            timeline: 1,
            clock_in_range: true,
        }
    }

    fn bound(horizon: u64) -> Persisted {
        Persisted {
            horizon,
            safe: -1,
            drifts: 0,
        }
    }

    /// A server that judged partition `p` on timeline 1, as after its first ID.
    fn judged(p: Option<u16>) -> State {
        let mut st = State::fresh(7, 100, 1, 11);
        st.judge(1, p, false, || 5).unwrap();
        st
    }

    #[test]
    fn the_forecast_is_what_the_judgment_decides_and_changes_nothing() {
        let st = judged(Some(9));
        let before = st;
        let f = forecast(inputs(Source::Explicit(9)), st);
        assert_eq!((f.status, f.partition), (Status::Ready, Some(9)));
        assert_eq!(st, before);
        let d = judged(None);
        let f = forecast(inputs(Source::Derived), d);
        assert_eq!(f.partition, Some(d.derived()));
    }

    #[test]
    fn a_copy_beside_its_original_is_refusing_not_ready() {
        let mut original = judged(Some(9));
        original.written(bound(500));
        let mut copy = original;
        assert!(copy.at_start(true, 12, 200, 1));
        let f = forecast(inputs(Source::Explicit(9)), copy);
        assert_eq!(f.status, Status::Copy);
        assert_eq!(f.refusal, Some(Refusal::Inherited(9)));
        assert_eq!(f.partition, None);
        // The generator itself refuses the same copy.
        assert_eq!(
            copy.judge(1, Some(9), false, || 300),
            Err(Refusal::Inherited(9))
        );
        // With a partition of its own it is ready.
        let f = forecast(inputs(Source::Explicit(10)), copy);
        assert_eq!((f.status, f.partition), (Status::Ready, Some(10)));
    }

    #[test]
    fn a_citus_node_not_read_yet_shows_its_group_not_a_derived_partition() {
        // A worker just added: nothing published, this database's metadata says group 2.
        let st = State::fresh(7, 100, 1, 11);
        let (source, disagrees) = source(None, Some(Node::Group(2)), None, None, false);
        assert!(disagrees.is_none());
        let f = forecast(
            Inputs {
                citus_loaded: true,
                ..inputs(source)
            },
            st,
        );
        assert_eq!(f.partition, Some(2));
        assert_eq!(f.citus_group, Some(2));
        assert_eq!(f.generations_left, Some(14));
        // The real judgment gives the same.
        let mut real = st;
        assert_eq!(
            real.judge_source(1, Source::Citus(Node::Group(2)), false, || 9)
                .unwrap()
                .partition,
            2
        );
    }

    #[test]
    fn citus_states_and_disagreement() {
        let st = State::fresh(7, 100, 1, 11);
        let na = inputs(Source::Citus(Node::NotActivated));
        assert_eq!(forecast(na, st).status, Status::CitusNotActivated);
        let big = inputs(Source::Citus(Node::Group(5000)));
        assert_eq!(forecast(big, st).status, Status::CitusGroupTooLarge);
        // A second database that reads another group than the one published.
        let (s, disagrees) = source(
            None,
            Some(Node::NotActivated),
            Some(Node::Group(3)),
            None,
            false,
        );
        assert_eq!(disagrees, Some((Node::NotActivated, Node::Group(3))));
        assert_eq!(s, Source::Citus(Node::Group(3)));
        // Named: that database decides, the reading here is not compared.
        assert!(
            source(None, Some(Node::Group(4)), Some(Node::Group(3)), None, true)
                .1
                .is_none()
        );
        // The explicit partition is the source ...
        assert_eq!(
            source(Some(8), Some(Node::Group(4)), None, None, false),
            (Source::Explicit(8), None)
        );
        // ... but a disagreeing database is refused all the same, as sno_generate does.
        assert_eq!(
            source(
                Some(8),
                Some(Node::NotActivated),
                Some(Node::Group(3)),
                None,
                false
            ),
            (
                Source::Explicit(8),
                Some((Node::NotActivated, Node::Group(3)))
            )
        );
    }

    #[test]
    fn generations_left_count_what_the_lineage_used() {
        let mut st = State::fresh(7, 100, 1, 11);
        st.judge_source(1, Source::Citus(Node::Group(3)), false, || 9)
            .unwrap();
        assert_eq!(generations_left(&st, 3), 14);
        // A promotion takes the next generation.
        st.written(bound(100));
        st.judge_source(2, Source::Citus(Node::Group(3)), false, || 10)
            .unwrap();
        assert_eq!(generations_left(&st, 3), 13);
        assert_eq!(generations_left(&State::fresh(7, 1, 1, 1), 3), 15);
    }

    #[test]
    fn the_state_file_and_recovery_and_the_clock() {
        let st = judged(Some(9));
        let f = |i: Inputs| forecast(i, st).status;
        let base = inputs(Source::Explicit(9));
        // A standby: not ready; the partition it will write once promoted, when decided.
        let standby = Inputs {
            recovery: true,
            ..base
        };
        assert_eq!(f(standby), Status::Standby);
        assert_eq!(forecast(standby, st).partition, Some(9));
        let derived = Inputs {
            recovery: true,
            ..inputs(Source::Derived)
        };
        assert_eq!(forecast(derived, judged(None)).partition, None);
        assert_eq!(
            f(Inputs {
                file: File::Missing,
                ..base
            }),
            Status::NoStateFile
        );
        assert_eq!(
            f(Inputs {
                file: File::Unusable,
                ..base
            }),
            Status::UnusableStateFile
        );
        assert_eq!(
            f(Inputs {
                clock_in_range: false,
                ..base
            }),
            Status::ClockOutOfRange
        );
        // A derived partition needs no state file (outside Citus): a new one is made.
        let d = Inputs {
            file: File::Missing,
            ..inputs(Source::Derived)
        };
        assert_eq!(forecast(d, judged(None)).status, Status::Ready);
        let dc = Inputs {
            citus_loaded: true,
            ..d
        };
        assert_eq!(forecast(dc, judged(None)).status, Status::NoStateFile);
    }

    #[test]
    fn a_derived_partition_drawn_after_a_promotion_is_not_decided_yet() {
        let mut st = judged(None);
        st.written(bound(100));
        let f = forecast(
            Inputs {
                timeline: 2,
                ..inputs(Source::Derived)
            },
            st,
        );
        assert_eq!((f.status, f.partition), (Status::Ready, None));
        // An explicit one is decided.
        let mut st = judged(Some(9));
        st.written(bound(100));
        let f = forecast(
            Inputs {
                timeline: 2,
                ..inputs(Source::Explicit(9))
            },
            st,
        );
        assert_eq!(f.partition, Some(9));
    }

    #[test]
    fn every_code_is_distinct() {
        let codes: std::collections::HashSet<_> = Status::ALL.iter().map(|s| s.code()).collect();
        assert_eq!(codes.len(), Status::ALL.len());
    }
}
