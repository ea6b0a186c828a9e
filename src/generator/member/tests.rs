use super::*;
use proptest::prelude::*;

fn m(id: u64, partition: u16, made_ids: bool) -> Member {
    Member {
        id,
        partition,
        made_ids,
    }
}

#[test]
fn the_one_with_ids_goes_on_then_the_older_cluster() {
    let old = 0x0000_0001_0000_0005;
    let new = 0x0000_0002_0000_0001;
    assert_eq!(
        verdict(&m(new, 7, false), &m(old, 7, true)),
        Verdict::Second
    );
    assert_eq!(verdict(&m(old, 7, true), &m(new, 7, false)), Verdict::First);
    // IDs made count before age: an old cluster that never made IDs with it is the newcomer.
    assert_eq!(
        verdict(&m(old, 7, false), &m(new, 7, true)),
        Verdict::Second
    );
    assert_eq!(verdict(&m(new, 7, true), &m(old, 7, true)), Verdict::Second);
    assert_eq!(
        verdict(&m(old, 7, false), &m(new, 7, false)),
        Verdict::First
    );
    assert_eq!(verdict(&m(old, 7, true), &m(new, 8, true)), Verdict::Apart);
    // The same lineage (a copy): not the group's business.
    assert_eq!(verdict(&m(old, 7, true), &m(old, 7, true)), Verdict::Apart);
}

#[test]
fn a_refusal_stands_until_the_partition_changes() {
    let mut k = Known::NONE;
    let me = m(9 << 32, 101, false);
    assert_eq!(
        k.meet(&me, m(1 << 32, 101, true), Provenance::Connected),
        Verdict::Second
    );
    assert_eq!(k.refuses(101).map(|c| c.peer.id), Some(1 << 32));
    // Meeting another member does not replace it; the same member again is noted once.
    k.meet(&me, m(2 << 32, 101, true), Provenance::Connected);
    k.meet(&me, m(1 << 32, 101, true), Provenance::Connected);
    assert_eq!(k.refuses(101).map(|c| c.peer.id), Some(1 << 32));
    assert_eq!(k.peers().len(), 2);
    assert!(!k.lift(Some(101)));
    assert!(!k.lift(None));
    // A new partition: refused until checked; a member first with it replaces the refusal.
    let moved = m(9 << 32, 105, false);
    assert_eq!(
        k.meet(&moved, m(3 << 32, 105, true), Provenance::Connected),
        Verdict::Second
    );
    assert_eq!(k.refuses(105).map(|c| c.partition), Some(105));
    assert!(!k.lift(Some(105)));
    assert!(k.lift(Some(106)));
    assert_eq!(k.refuses(106), None);
}

#[test]
fn a_partition_changed_in_a_group_waits_for_a_round() {
    let mut k = Known::NONE;
    // Alone: any partition goes.
    assert_eq!(k.refuses(7), None);
    k.meet(
        &m(9 << 32, 7, true),
        m(1 << 32, 8, true),
        Provenance::Connected,
    );
    assert_eq!(k.refuses(7), None);
    // Changed while the server has peers: refused (naming the partition checked) until a round.
    assert_eq!(k.refuses(9).map(|c| (c.partition, c.peer.id)), Some((7, 0)));
    assert!(k.lift(Some(9)));
    assert_eq!(k.refuses(9), None);
    assert!(!k.lift(Some(9)));
    assert!(k.made_with(9));
    assert!(!k.made_with(9));
}

#[test]
fn hearsay_never_replaces_what_a_connection_told() {
    let mut k = Known::NONE;
    let me = m(9 << 32, 101, false);
    // Learned over a connection: member 1 moved to 102.
    assert_eq!(
        k.meet(&me, m(1 << 32, 102, true), Provenance::Connected),
        Verdict::Apart
    );
    // Another's stale word (101, with IDs) neither replaces it nor refuses this server.
    assert_eq!(
        k.meet(&me, m(1 << 32, 101, true), Provenance::Hearsay),
        Verdict::Apart
    );
    assert_eq!(k.refuses(101), None);
    assert_eq!(k.peers()[0].partition, 102);
    assert_eq!(k.verified_peers().count(), 1);
    // What member 1 says of itself calling here replaces it (fresher), but is not told on.
    assert_eq!(
        k.meet(&me, m(1 << 32, 103, true), Provenance::Itself),
        Verdict::Apart
    );
    assert_eq!(k.peers()[0].partition, 103);
    assert_eq!(k.verified_peers().count(), 0);
    // A member only another spoke of is used here, never told to others.
    assert_eq!(
        k.meet(&me, m(2 << 32, 101, true), Provenance::Hearsay),
        Verdict::Second
    );
    assert_eq!(k.verified_peers().count(), 0);
}

#[test]
fn the_suggestion_avoids_members_and_the_lineage() {
    let mut k = Known::NONE;
    let me = m(9 << 32, 101, false);
    k.meet(&me, m(1 << 32, 101, true), Provenance::Connected);
    k.meet(&me, m(2 << 32, 102, true), Provenance::Connected);
    assert_eq!(k.suggest(101, 61440, |p| p == 103), Some(104));
    assert_eq!(k.suggest(61439, 61440, |p| p == 0), Some(1));
}

#[test]
fn the_oldest_member_is_forgotten_first() {
    let mut k = Known::NONE;
    let me = m(u64::MAX, 1, false);
    for i in 0..(MAX_KNOWN as u64 + 3) {
        k.meet(&me, m(i + 1, 2, true), Provenance::Connected);
    }
    assert_eq!(k.peers().len(), MAX_KNOWN);
    assert_eq!(k.peers()[0].id, 4);
}

#[test]
fn the_record_round_trips_and_is_flushed_whole() {
    let dir = std::env::temp_dir().join(format!("sno-member-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    assert_eq!(load(&dir), None);
    let c = Conflict {
        partition: 302,
        peer: m(7_300_000_000_000_000_001, 302, true),
    };
    save(&dir, &c, true).unwrap();
    assert_eq!(load(&dir), Some(c));
    assert!(std::fs::read_to_string(dir.join(FILE_NAME))
        .unwrap()
        .starts_with("sno.partition 302 is refused here"));
    forget(&dir, true).unwrap();
    forget(&dir, false).unwrap();
    assert_eq!(load(&dir), None);
    assert_eq!(from_text("partition=1\npeer=2\nmade_ids=2\n"), None);
    assert_eq!(from_text("partition=70000\npeer=2\nmade_ids=1\n"), None);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_wal_record_round_trips_and_is_checked() {
    let c = Conflict {
        partition: 65535,
        peer: m(u64::MAX, 65535, true),
    };
    let b = encode_record(&c);
    assert_eq!(decode_record(&b), Some(c));
    assert_eq!(decode_record(&b[..11]), None);
    let mut v = b;
    v[0] = 2;
    assert_eq!(decode_record(&v), None);
    let mut v = b;
    v[11] = 2;
    assert_eq!(decode_record(&v), None);
}

proptest! {
    /// Servers of a group meet pairwise in any order, each handshake telling both sides the
    /// same two descriptions: of two members with one partition, exactly one is ever refused,
    /// the one that came first never is, and a member that met every other is refused exactly
    /// when some member with its partition comes before it.
    #[test]
    fn exactly_one_of_two_is_refused(
        members in proptest::collection::vec((1u64..6, 0u16..4, any::<bool>()), 2..8),
        order in proptest::collection::vec((0usize..8, 0usize..8), 0..60),
    ) {
        let ms: Vec<Member> = members
            .iter()
            .enumerate()
            .map(|(i, &(age, p, made))| m((age << 32) | i as u64, p, made))
            .collect();
        let n = ms.len();
        let mut known = vec![Known::NONE; n];
        let mut met = vec![vec![false; n]; n];
        let pairs = order
            .iter()
            .map(|&(a, b)| (a % n, b % n))
            .chain((0..n).flat_map(|a| (0..n).map(move |b| (a, b))));
        for (a, b) in pairs {
            if a == b {
                continue;
            }
            let va = known[a].meet(&ms[a], ms[b], Provenance::Connected);
            let vb = known[b].meet(&ms[b], ms[a], Provenance::Connected);
            match va {
                Verdict::Apart => prop_assert_eq!(vb, Verdict::Apart),
                Verdict::First => prop_assert_eq!(vb, Verdict::Second),
                Verdict::Second => prop_assert_eq!(vb, Verdict::First),
            }
            met[a][b] = true;
            met[b][a] = true;
        }
        for a in 0..n {
            let earlier = (0..n).any(|b| b != a && verdict(&ms[a], &ms[b]) == Verdict::Second);
            prop_assert_eq!(known[a].refuses(ms[a].partition).is_some(), earlier);
        }
        // Of the members left going on, no two share a partition.
        for a in 0..n {
            for b in a + 1..n {
                if known[a].conflict.is_none() && known[b].conflict.is_none() {
                    prop_assert_ne!(ms[a].partition, ms[b].partition);
                }
            }
        }
    }
}
