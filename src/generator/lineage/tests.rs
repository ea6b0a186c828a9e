//! The lineage's judgments: copies, promotions, upgrades, replay, Citus generations, derived
//! draws, a lineage past the table's size, grants of reserved partitions.

use super::*;

fn p(horizon: u64, safe: i64, drifts: u64) -> Persisted {
    Persisted {
        horizon,
        safe,
        drifts,
    }
}

#[test]
fn a_copy_of_a_freshly_promoted_server_is_a_clone_not_a_promotion() {
    // B, a standby of a primary that used partition 1 on WAL timeline 1, was just
    // promoted to timeline 2 and has not judged yet: its state still says timeline 1.
    let mut b = State::fresh(7, 100, 1, 11);
    b.note(1, false, p(500, -1, 0));
    // C, a base backup of B, starts on timeline 2 (its backup_label's START TIMELINE).
    let mut c = b;
    assert!(c.at_start(true, 12, 200, 2));
    assert_eq!(
        c.judge(2, Some(1), false, || 300),
        Err(Refusal::Inherited(1))
    );
    // B itself is a promotion: it takes partition 1 over, after its bound.
    let j = b.judge(2, Some(1), false, || 400).unwrap();
    assert!(j.took_over && j.new_incarnation);
    assert_eq!(j.absorb, p(500, -1, 0));
}

#[test]
fn a_copy_of_a_server_promoted_since_its_last_checkpoint_is_a_clone() {
    // B was promoted to timeline 2; its pg_control still names checkpoint timeline 1 but
    // minimum recovery point timeline 2 (the promotion's end-of-recovery record).
    let mut b = State::fresh(7, 100, 1, 11);
    b.note(1, false, p(500, -1, 0));
    let mut c = b;
    assert!(c.at_start(false, 12, 200, start_timeline(0, 2)));
    assert_eq!(
        c.judge(2, Some(1), false, || 300),
        Err(Refusal::Inherited(1))
    );
    // A base backup of a standby that followed that promotion before its next restartpoint:
    // START TIMELINE 1, the standby's replay on timeline 2.
    let mut d = b;
    assert!(d.at_start(true, 13, 201, start_timeline(1, 2)));
    assert_eq!(
        d.judge(2, Some(1), false, || 301),
        Err(Refusal::Inherited(1))
    );
}

#[test]
fn a_copy_of_a_just_upgraded_cluster_is_not_the_upgrade() {
    // N adopted the old cluster's file at its first start (pg_upgrade), not yet judged.
    let mut old = State::fresh(5, 100, 1, 10);
    let me = p(900, -1, 0);
    old.note(7, true, me);
    let mut n = old;
    n.system_identifier = 6;
    n.timeline = UPGRADED;
    assert!(n.at_start(true, 20, 300, 0));
    // C, a copy of N's files, starts on timeline 1 and refuses partition 7.
    let mut c = n;
    assert!(c.at_start(false, 21, 301, start_timeline(0, 1)));
    assert_eq!(
        c.judge(1, Some(7), false, || 302),
        Err(Refusal::Inherited(7))
    );
    // N itself takes partition 7 over, after the old cluster's IDs.
    let j = n.judge(1, Some(7), false, || 303).unwrap();
    assert!(j.took_over);
    assert_eq!(j.absorb, me);
    // A record replayed by an adoption not yet judged sets its timeline.
    let mut r = State::fresh(6, 1, UPGRADED, 22);
    r.replay(9, 1, &[8], p(10, -1, 0));
    assert_eq!(r.timeline, 1);
}

#[test]
fn a_clean_stop_lowers_me_but_remembers_the_lease_it_gave_back() {
    let mut st = State::fresh(7, 1, 1, 11);
    st.judge(1, Some(5), false, || 2).unwrap();
    // A lease, then the exact high-water mark at a clean stop.
    st.written(p(1060, -1, 0));
    st.stopped(p(1000, -1, 0));
    assert_eq!(st.me, p(1000, -1, 0));
    assert_eq!(st.written_bound(), p(1060, -1, 0));
    // What a copy or a standby is told of the partition never comes down.
    let mut copy = st;
    copy.at_start(true, 12, 3, 1);
    assert_eq!(copy.others(5), Some(p(1060, -1, 0)));
}

#[test]
fn replay_never_moves_the_timeline_back() {
    let mut st = State::fresh(7, 1, 3, 11);
    st.replay(2, 2, &[5], p(10, -1, 0));
    assert_eq!(st.timeline, 3);
    st.replay(2, 4, &[5], p(20, -1, 0));
    assert_eq!(st.timeline, 4);
    assert_eq!(st.others(5), Some(p(20, -1, 0)));
}

#[test]
fn equal_knowledge_is_an_equal_state() {
    // Entries folded away or rebuilt leave no trace in the unused slots.
    let mut a = State::fresh(7, 1, 1, 11);
    for i in 0..(MAX_ENTRIES as u16 + 3) {
        a.note(i, false, p(u64::from(i), -1, 0));
    }
    let mut b = a;
    b.become_new(2);
    let mut c = a;
    c.become_new(2);
    assert_eq!(b, c);
    let text = crate::generator::state_file::encode(&b);
    assert_eq!(crate::generator::state_file::decode(text.as_bytes()), Ok(b));
}

const G3: Source = Source::Citus(Node::Group(3));

#[test]
fn a_citus_group_takes_a_new_generation_at_each_promotion() {
    // A worker of group 3 makes IDs with generation 0.
    let mut a = State::fresh(7, 100, 1, 11);
    let j = a.judge_source(1, G3, false, || 1).unwrap();
    assert_eq!((j.partition, j.took_over, j.changed), (3, false, true));
    a.written(p(500, -1, 0));
    // Its standby (a base backup) is promoted: generation 1, whatever the standby replayed.
    let mut b = a;
    assert!(b.at_start(true, 12, 200, 1));
    let j = b.judge_source(2, G3, false, || 201).unwrap();
    assert_eq!((j.partition, j.took_over), (3 + 4096, false));
    assert!(j.new_incarnation);
    // Sessions in a database without Citus go on with the group's partition.
    assert_eq!(
        b.judge_source(2, Source::Derived, false, || 0)
            .unwrap()
            .partition,
        4099
    );
    // A standby of b promoted in its turn knows generations 0 and 1: generation 2.
    let mut c = b;
    assert!(c.at_start(true, 13, 300, 2));
    assert_eq!(
        c.judge_source(3, G3, false, || 301).unwrap().partition,
        3 + 8192
    );
    // The original primary, rewound and promoted again later: it knows 0, 1 and 2.
    let mut a2 = c;
    assert!(a2.at_start(true, 11, 400, 3));
    assert_eq!(
        a2.judge_source(4, G3, false, || 401).unwrap().partition,
        3 + 3 * 4096
    );
}

#[test]
fn a_citus_group_reuses_its_oldest_generation_after_its_bound() {
    let mut st = State::fresh(7, 1, 1, 11);
    for k in 0..citus::GENERATIONS {
        let q = citus::partition(3, k).unwrap();
        // Generation 5 has the oldest bound.
        let h = if k == 5 { 10 } else { 1000 + u64::from(k) };
        st.note(q, false, p(h, -1, 0));
    }
    let j = st.judge_source(2, G3, false, || 9).unwrap();
    assert_eq!(j.partition, citus::partition(3, 5).unwrap());
    assert!(j.took_over);
    assert_eq!(j.absorb, p(10, -1, 0));
}

#[test]
fn a_citus_copy_beside_its_original_is_refused_until_it_has_a_group_of_its_own() {
    let mut a = State::fresh(7, 100, 1, 11);
    a.judge_source(1, G3, false, || 1).unwrap();
    a.written(p(500, -1, 0));
    let mut clone = a;
    assert!(clone.at_start(true, 12, 200, 1));
    let before = clone;
    assert_eq!(
        clone.judge_source(1, G3, false, || 2),
        Err(Refusal::CitusCopy(3))
    );
    // Through another database too, and the refusal changed nothing.
    assert_eq!(
        clone.judge_source(1, Source::Derived, false, || 2),
        Err(Refusal::CitusCopy(3))
    );
    assert_eq!(clone, before);
    // Added to the cluster, Citus gives it group 5: its generation 0.
    let j = clone.judge_source(1, Source::Citus(Node::Group(5)), false, || 3);
    assert_eq!(j.unwrap().partition, 5);
    // The original's word that it is gone (take_over): a new generation of group 3.
    let mut moved = before;
    assert_eq!(
        moved.judge_source(1, G3, true, || 4).unwrap().partition,
        4099
    );
}

#[test]
fn citus_bad_states_are_refused() {
    let mut st = State::fresh(7, 1, 1, 11);
    let none = Source::Citus(Node::NotActivated);
    assert_eq!(
        st.judge_source(1, none, false, || 2),
        Err(Refusal::CitusNotActivated)
    );
    assert_eq!(
        st.judge_source(1, Source::Citus(Node::Group(4096)), false, || 2),
        Err(Refusal::CitusGroupTooLarge(4096))
    );
    // A node removed from its cluster (it reads "not activated") keeps its group.
    st.judge_source(1, Source::Citus(Node::Group(9)), false, || 2)
        .unwrap();
    assert_eq!(st.judge_source(1, none, false, || 2).unwrap().partition, 9);
    // An explicit partition wins over the group.
    let j = st
        .judge_source(1, Source::Explicit(42), false, || 2)
        .unwrap();
    assert_eq!(j.partition, 42);
}

#[test]
fn a_server_that_joins_citus_keeps_honouring_its_derived_partition() {
    let mut st = State::fresh(7, 1, 1, 11);
    let derived = st
        .judge_source(1, Source::Derived, false, || 2)
        .unwrap()
        .partition;
    st.written(p(800, -1, 0));
    let j = st
        .judge_source(1, Source::Citus(Node::Group(2)), false, || 3)
        .unwrap();
    assert_eq!((j.partition, j.changed), (2, true));
    // Its standby, promoted, knows both as used by its primary.
    let mut b = st;
    b.at_start(true, 12, 5, 1);
    b.judge_source(2, Source::Citus(Node::Group(2)), false, || 6)
        .unwrap();
    assert_eq!(b.others(derived), Some(p(800, -1, 0)));
    assert!(b.others(2).is_some());
}

// Issue 21: a lineage that used more than MAX_ENTRIES partitions. Each test below failed
// when the table folded whole entries (their partition numbers with them) into `retired`.

/// Notes `n` partitions from `first` on, used by other members of the lineage, with bounds
/// newer than `after` (the lineage went on making IDs with them).
fn many_newer(st: &mut State, first: u16, n: u16, after: u64) {
    for i in 0..n {
        st.note(first + i, false, p(after + 1 + u64::from(i), -1, 0));
    }
}

#[test]
fn a_clone_is_refused_its_originals_partition_past_the_table_size() {
    // S, a standby of P, which uses partition 5 (copied configuration) and has been idle
    // for a while: its bound is older than those of the 64 partitions the lineage used
    // since (derived ones of promoted standbys, PITR restores, ...).
    let mut s = State::fresh(7, 100, 1, 11);
    s.replay(1, 1, &[5], p(500, -1, 0));
    many_newer(&mut s, 1000, MAX_ENTRIES as u16, 500);
    // C, a base backup of S started beside P on P's timeline with the same setting: P
    // still makes IDs with 5, so C must be refused it.
    let mut c = s;
    assert!(c.at_start(true, 12, 200, 1));
    assert_eq!(
        c.judge(1, Some(5), false, || 300),
        Err(Refusal::Inherited(5))
    );
    // Through the state file too.
    let text = crate::generator::state_file::encode(&s);
    let mut d = crate::generator::state_file::decode(text.as_bytes()).unwrap();
    assert!(d.at_start(true, 13, 201, 1));
    assert_eq!(
        d.judge(1, Some(5), false, || 301),
        Err(Refusal::Inherited(5))
    );
}

#[test]
fn a_derived_draw_avoids_a_partition_past_the_table_size() {
    // The lineage knows partition q, the derived partition of a server that may still
    // run (an old primary in split brain), then 64 newer ones.
    let q = derived_partition(7, 42);
    let mut s = State::fresh(7, 100, 1, 11);
    s.replay(1, 1, &[q], p(500, -1, 0));
    many_newer(&mut s, 1000, MAX_ENTRIES as u16, 500);
    // A promotion whose first draw gives q again must draw again: the retired bound only
    // covers what q's server made so far, and it goes on.
    let mut draws = [42u64, 43, 44, 45].into_iter();
    let j = s.judge(2, None, false, || draws.next().unwrap()).unwrap();
    assert_ne!(j.partition, q);
    assert!(!j.took_over);
}

#[test]
fn a_citus_generation_past_the_table_size_is_not_reused() {
    // Group 3's generation 0 (its old primary, which may still run), then 64 newer
    // partitions: the promoted standby takes generation 1, not 0 again.
    let mut s = State::fresh(7, 100, 1, 11);
    s.replay(1, 1, &[3], p(500, -1, 0));
    s.citus_group = 3;
    many_newer(&mut s, 1000, MAX_ENTRIES as u16, 500);
    let j = s.judge_source(2, G3, false, || 9).unwrap();
    assert_eq!((j.partition, j.took_over), (3 + 4096, false));
}

#[test]
fn a_server_that_used_more_partitions_than_the_table_forgets_none() {
    // P is given 70 explicit partitions in turn (reloads): every entry is its own.
    let mut pr = State::fresh(7, 100, 1, 11);
    for k in 0..70u16 {
        pr.judge(1, Some(k), false, || 1).unwrap();
        pr.written(p(1000 + u64::from(k), -1, 0));
    }
    // A clone of P (it may go back to any of them) is refused every one.
    for k in 0..70u16 {
        let mut c = pr;
        assert!(c.at_start(true, 12, 200, 1));
        assert_eq!(
            c.judge(1, Some(k), false, || 300),
            Err(Refusal::Inherited(k)),
            "partition {k}"
        );
    }
    for k in 0..70u16 {
        assert!(pr.is_mine(k), "P forgot it used {k}");
    }
    // Back to partition 0: its own, no refusal, nothing to take over.
    let mut again = pr;
    let j = again.judge(1, Some(0), false, || 2).unwrap();
    assert!(!j.took_over);
    // Folding its own entries lost nothing: they were within its horizon.
    assert_eq!(pr.retired, NOTHING);
    assert_eq!(pr.entries().len() + pr.folded().count(), 70);
    // Taken over by the administrator's word, any of them resumes after all P made.
    for k in 0..70u16 {
        let mut c = pr;
        assert!(c.at_start(true, 12, 200, 1));
        let j = c.judge(1, Some(k), true, || 300).unwrap();
        assert!(j.took_over);
        assert_eq!(j.absorb, p(1069, -1, 0), "partition {k}");
    }
    // The state file keeps every one of them, P's own.
    let text = crate::generator::state_file::encode(&pr);
    assert!(text.starts_with("sno generator state 4\n"), "{text}");
    let back = crate::generator::state_file::decode(text.as_bytes()).unwrap();
    assert_eq!(back, pr);
}

#[test]
fn a_derived_draw_ends_when_the_lineage_used_every_partition() {
    let mut s = State::fresh(7, 100, 1, 11);
    s.replay(1, 1, &[9], p(800, -1, 0));
    s.used_by_others = Partitions {
        bits: [u64::MAX; WORDS],
    };
    s.retired = p(700, -1, 0);
    // A copy beside its original: no partition is free, refused (no endless draw).
    let mut c = s;
    assert!(c.at_start(true, 12, 200, 1));
    let mut n = 0;
    let r = c.judge(1, None, false, || {
        n += 1;
        n
    });
    assert!(matches!(r, Err(Refusal::Inherited(_))), "{r:?}");
    // A promotion takes the one it drew over, after everything known of it.
    let mut pr = s;
    let j = pr.judge(2, None, false, || 5).unwrap();
    assert!(j.took_over);
    assert_eq!(j.partition, derived_partition(7, 5));
    let want = if j.partition == 9 {
        p(800, -1, 0)
    } else {
        p(700, -1, 0)
    };
    assert_eq!(j.absorb, want);
    // One partition left: drawn until it comes.
    let q = derived_partition(7, 1234);
    let mut one = s;
    one.used_by_others.remove(q);
    let mut n = 1000u64;
    let j = one
        .judge(2, None, false, || {
            n += 1;
            if n > 1200 {
                1234
            } else {
                n
            }
        })
        .unwrap();
    assert_eq!((j.partition, j.took_over), (q, false));
}

#[test]
fn a_derived_draw_never_lands_in_the_reserved_range() {
    let mut drawn = 0u64;
    for sysid in 0..300u64 {
        let mut s = State::fresh(sysid, sysid * 7 + 1, 1, 11);
        let mut n = sysid * 1000;
        let j = s
            .judge(1, None, false, || {
                n += 1;
                drawn += 1;
                n
            })
            .unwrap();
        assert!(!reserved::is_reserved(j.partition), "{}", j.partition);
    }
    // About 1 in 16 first draws lands there and is drawn again.
    assert!(drawn > 0);
}

#[test]
fn a_derived_partition_drawn_before_the_range_was_reserved_is_kept() {
    // An incarnation whose derived partition is reserved and was used (sno 0.5.0).
    let inc = (0..u64::MAX)
        .find(|&i| reserved::is_reserved(derived_partition(7, i)))
        .unwrap();
    let mut s = State::fresh(7, inc, 1, 11);
    let d = s.derived();
    s.note(d, true, p(100, -1, 0));
    let j = s.judge(1, None, false, || unreachable!()).unwrap();
    assert_eq!(j.partition, d);
    // It is never granted.
    assert!(s.grant().unwrap() != d || !reserved::is_reserved(d));
    assert!(s.reserved_taken(d));
    // Its promoted standby draws a new one, below the range.
    let mut sb = s;
    sb.become_new(inc ^ 1);
    let mut n = 0;
    let j = sb
        .judge(2, None, false, || {
            n += 1;
            n
        })
        .unwrap();
    assert!(!reserved::is_reserved(j.partition));
}

#[test]
fn a_new_explicit_reserved_partition_is_refused_an_old_one_kept() {
    let mut s = State::fresh(7, 100, 1, 11);
    assert_eq!(
        s.judge(1, Some(62_000), false, || 1),
        Err(Refusal::Reserved {
            partition: 62_000,
            granted: false
        })
    );
    // Nothing changed.
    assert_eq!(s, State::fresh(7, 100, 1, 11));
    // Used before the range was reserved: kept, and taken over by a promotion.
    s.note(62_000, true, p(50, -1, 0));
    assert_eq!(
        s.judge(1, Some(62_000), false, || 1).unwrap().partition,
        62_000
    );
    let mut sb = s;
    sb.become_new(200);
    let j = sb.judge(2, Some(62_000), false, || 3).unwrap();
    assert!(j.took_over);
    // A granted one is refused even then.
    let mut g = State::fresh(7, 100, 1, 11);
    let q = g.grant().unwrap();
    g.note_granted(q);
    assert_eq!(
        g.judge(1, Some(q), false, || 1),
        Err(Refusal::Reserved {
            partition: q,
            granted: true
        })
    );
}

#[test]
fn the_allocator_grants_the_lowest_free_reserved_partition_once() {
    let mut s = State::fresh(7, 100, 1, 11);
    s.note(reserved::FIRST + 1, true, p(10, -1, 0));
    let mut got = Vec::new();
    for _ in 0..4 {
        let q = s.grant().unwrap();
        s.note_granted(q);
        got.push(q);
    }
    assert_eq!(got, vec![61_440, 61_442, 61_443, 61_444]);
    assert_eq!(s.reserved_used(), 5);
    // Outside the range, nothing is noted as granted.
    s.note_granted(5);
    assert!(!s.granted.contains(5));
    // All taken: refused.
    for q in reserved::FIRST..=u16::MAX {
        s.note_granted(q);
    }
    assert_eq!(s.grant(), Err(GrantRefusal::Exhausted));
}

#[test]
fn a_copy_grants_nothing_until_promoted_or_taken_over() {
    let mut s = State::fresh(7, 100, 1, 11);
    let q = s.grant().unwrap();
    s.note_granted(q);
    // A clone beside its original, on the same timeline.
    let mut c = s;
    assert!(c.at_start(true, 12, 200, 1));
    assert_eq!(c.grant(), Err(GrantRefusal::Copy));
    // Its first sno_generate (a derived partition) does not lift it.
    c.judge(1, None, false, || 300).unwrap();
    assert_eq!(c.grant(), Err(GrantRefusal::Copy));
    // take_over does; the grant is after the original's.
    let mut t = c;
    t.judge(1, None, true, || 301).unwrap();
    assert_eq!(t.grant(), Ok(q + 1));
    // A promotion (a new WAL timeline) does too.
    let mut pr = c;
    pr.judge(2, None, false, || 302).unwrap();
    assert_eq!(pr.grant(), Ok(q + 1));
    // What it learns in WAL from its original is never granted.
    let mut sb = s;
    assert!(sb.at_start(true, 13, 400, 1));
    sb.note_granted(q + 1);
    sb.judge(2, None, false, || 401).unwrap();
    assert_eq!(sb.grant(), Ok(q + 2));
}

#[test]
fn a_citus_group_never_takes_its_reserved_generation() {
    let mut s = State::fresh(7, 100, 1, 11);
    let mut seen = Vec::new();
    for tl in 1..=20u32 {
        let j = s
            .judge_source(tl, Source::Citus(Node::Group(3)), false, || tl as u64 * 13)
            .unwrap();
        seen.push(j.partition);
        assert_ne!(j.partition, 3 + 61_440);
    }
    // 15 live generations, then the oldest again.
    assert_eq!(
        seen[..15],
        (0..15).map(|k| 3 + 4096 * k).collect::<Vec<u16>>()[..]
    );
    assert_eq!(seen[15], 3);
    // A lineage that used generation 15 before it was reserved keeps it.
    let mut old = State::fresh(7, 100, 1, 11);
    old.note(3 + 61_440, true, p(5, -1, 0));
    old.citus_group = 3;
    let j = old
        .judge_source(1, Source::Citus(Node::Group(3)), false, || 9)
        .unwrap();
    assert_eq!(j.partition, 3 + 61_440);
}

#[test]
fn the_table_folds_what_loses_nothing_first() {
    // Own entries within the horizon leave first; then the oldest bound.
    let mut s = State::fresh(7, 100, 1, 11);
    s.note(1, true, NOTHING);
    s.written(p(900, -1, 0));
    many_newer(&mut s, 1000, MAX_ENTRIES as u16 - 1, 10);
    s.note(2000, false, p(5, -1, 0));
    assert_eq!(s.retired, NOTHING);
    assert!(s.is_mine(1) && s.find(1, true).is_none());
    s.note(2001, false, p(6, -1, 0));
    // 2000's bound was the oldest: it went into the retired bound.
    assert_eq!(s.retired, p(5, -1, 0));
    assert_eq!(s.others(2000), Some(p(5, -1, 0)));
    assert_eq!(s.others(2001), Some(p(6, -1, 0)));
    assert_eq!(s.others(1), None);
    // A new incarnation: 1 becomes another's, within the old horizon.
    let mut c = s;
    assert!(c.at_start(true, 12, 200, 1));
    assert_eq!(c.others(1), Some(p(900, -1, 0)));
    assert!(!c.is_mine(1));
    assert_eq!(c.judge(1, Some(1), false, || 3), Err(Refusal::Inherited(1)));
    // The Debug form lists the sets as ranges.
    let d = format!("{:?}", c.used_by_others);
    assert!(d.starts_with("{1,1000-1062,2000-2001}"), "{d}");
}

#[test]
fn learning_from_another_state_keeps_what_left_its_table() {
    // What WAL replay taught a server without a usable file: 100 partitions of another
    // member, and one of the file's own.
    let mut mem = State::fresh(7, 100, 1, 11);
    let parts: Vec<u16> = (3000..3100).collect();
    mem.replay(1, 1, &parts, p(700, -1, 0));
    mem.replay(1, 1, &[42], p(750, -1, 0));
    // The file put back: partition 42 is its own.
    let mut file = State::fresh(7, 1, 1, 11);
    file.note(42, true, p(600, -1, 0));
    file.written(p(600, -1, 0));
    assert_eq!(file.learn(&mem), 1);
    assert!(file.is_mine(42));
    assert_eq!(file.me, p(750, -1, 0));
    for &q in &parts {
        assert_eq!(file.others(q), Some(p(700, -1, 0)), "{q}");
    }
    let mut c = file;
    assert!(c.at_start(true, 12, 200, 1));
    assert_eq!(
        c.judge(1, Some(3000), false, || 3),
        Err(Refusal::Inherited(3000))
    );
}

#[test]
fn partitions_iterate_in_order_and_as_ranges() {
    let mut set = Partitions::NONE;
    for q in [0u16, 1, 2, 5, 63, 64, 65, 1000, 65_534, 65_535] {
        set.insert(q);
    }
    assert_eq!(set.len(), 10);
    assert_eq!(
        set.iter().collect::<Vec<_>>(),
        vec![0, 1, 2, 5, 63, 64, 65, 1000, 65_534, 65_535]
    );
    assert_eq!(
        set.ranges().collect::<Vec<_>>(),
        vec![(0, 2), (5, 5), (63, 65), (1000, 1000), (65_534, 65_535)]
    );
    let all = Partitions {
        bits: [u64::MAX; WORDS],
    };
    assert_eq!(all.ranges().collect::<Vec<_>>(), vec![(0, 65_535)]);
    assert_eq!(all.len(), PARTITIONS);
    set.remove(1000);
    assert!(!set.contains(1000) && set.contains(65));
    assert!(Partitions::NONE.is_empty());
}

#[test]
fn a_standby_learns_every_partition_of_a_primary_that_used_many() {
    let mut pr = State::fresh(7, 100, 1, 11);
    for k in 0..70u16 {
        pr.judge(1, Some(k), false, || 1).unwrap();
        pr.written(p(1000 + u64::from(k), -1, 0));
    }
    // Promoted, a standby that replayed P's record takes each over after P's bound.
    let rec = crate::generator::wal_record::encode(&pr, 1);
    let rec = crate::generator::wal_record::decode(&rec).unwrap();
    let mut s = State::fresh(7, 500, 1, 13);
    s.replay(rec.incarnation, rec.timeline, &rec.partitions, rec.bound);
    for k in 0..70u16 {
        let mut t = s;
        let j = t.judge(2, Some(k), false, || 600).unwrap();
        assert!(j.took_over, "partition {k}");
        assert_eq!(j.absorb, p(1069, -1, 0), "partition {k}");
    }
}

#[test]
fn a_standby_replaying_a_record_of_many_partitions_forgets_none() {
    let parts: Vec<u16> = (2000..2200).collect();
    let mut s = State::fresh(7, 100, 1, 11);
    s.replay(1, 1, &parts, p(700, -1, 0));
    // Its file round-trips, and a clone of it refuses each of them.
    let text = crate::generator::state_file::encode(&s);
    let back = crate::generator::state_file::decode(text.as_bytes()).unwrap();
    assert_eq!(back, s);
    for &q in &parts {
        let mut c = back;
        assert!(c.at_start(true, 12, 200, 1));
        assert_eq!(c.judge(1, Some(q), false, || 3), Err(Refusal::Inherited(q)));
    }
    for &q in &parts {
        assert_eq!(s.others(q), Some(p(700, -1, 0)), "forgot {q}");
    }
}
