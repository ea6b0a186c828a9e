//! The lease registry's decisions: sizes and windows, acquire against its definition, the
//! pool and the holders' limits, renewals, and no two leases that could stamp one ID.

use super::*;
use proptest::prelude::*;

fn pool(ps: &[u16]) -> Vec<Pooled> {
    ps.iter()
        .map(|&partition| Pooled {
            partition,
            floor: i64::MIN,
        })
        .collect()
}

fn grant(c: Choice) -> Granted {
    match c {
        Choice::Grant(g) => g,
        Choice::NeedPartition => panic!("no slice"),
    }
}

#[test]
fn sizes_and_ttls() {
    assert_eq!(check_sequences(8), Ok(8));
    assert_eq!(check_sequences(65536), Ok(65536));
    for bad in [0, 4, 6, 7, 12, 131072, -8] {
        assert_eq!(check_sequences(bad), Err(BadRequest::Sequences), "{bad}");
    }
    assert_eq!(
        ttl_units(999_999, 600_000_000),
        Err(BadRequest::TtlTooShort)
    );
    assert_eq!(ttl_units(1_000_000, 600_000_000), Ok(250));
    assert_eq!(ttl_units(1_000_001, 600_000_000), Ok(251));
    assert_eq!(
        ttl_units(600_000_001, 600_000_000),
        Err(BadRequest::TtlTooLong)
    );
    assert_eq!(share_of_timeline(1), 1);
    assert_eq!(share_of_timeline(16), 1);
    assert_eq!(share_of_timeline(15), 0);
}

#[test]
fn slices_fill_a_partition_then_ask_for_another() {
    let p = pool(&[61441]);
    let mut held = Vec::new();
    for k in 0..64u16 {
        let g = grant(acquire(&p, &held, 1024, 1000, 250));
        assert_eq!(g.slice.min, k * 1024);
        assert_eq!((g.not_before, g.expires), (750, 1250));
        held.push(g);
    }
    assert_eq!(acquire(&p, &held, 1024, 1000, 250), Choice::NeedPartition);
    // Ended by now: free again, starting where the last one ended.
    assert_eq!(grant(acquire(&p, &held, 8, 1250, 250)).not_before, 1250);
    // A whole partition when the pool has room.
    assert_eq!(acquire(&p, &held, 65536, 1249, 250), Choice::NeedPartition);
}

#[test]
fn a_window_starts_after_every_earlier_one_on_its_slice_whatever_the_clock() {
    let p = pool(&[61441]);
    let a = grant(acquire(&p, &[], 65536, 10_000, 500));
    // The registry's clock went back: the slice is still busy.
    assert_eq!(acquire(&p, &[a], 65536, 9_000, 500), Choice::NeedPartition);
    // Forward past a's end: granted after it.
    let b = grant(acquire(&p, &[a], 8, 10_600, 500));
    assert!(b.not_before >= a.expires);
    assert!(!a.conflicts(&b));
    // A renewal of a now (clock back) would be refused: b was handed on after it.
    let s = Standing {
        released: false,
        ours: true,
        handed_on: handed_on(&a, &b),
    };
    assert_eq!(renew(&a, s, 9_500, 5_000), Err(RenewRefusal::HandedOn));
}

/// The definition [`acquire`] computes in one pass: for each slice in order, the latest end
/// of the leases overlapping it.
fn acquire_by_definition(
    pool: &[Pooled],
    granted: &[Granted],
    sequences: u32,
    now: i64,
    ttl: i64,
) -> Choice {
    for p in pool {
        for k in 0..(MAX_SEQUENCES / sequences) {
            let min = k * sequences;
            let slice = LeaseSlice {
                partition: p.partition,
                min: min as u16,
                max: (min + sequences - 1) as u16,
            };
            let busy_until = granted
                .iter()
                .filter(|g| g.slice.overlaps(&slice))
                .map(|g| g.expires)
                .fold(p.floor, i64::max);
            if busy_until <= now {
                let not_before = busy_until.max(now - SLACK_UNITS);
                let expires = (now + ttl).max(not_before + 1);
                return Choice::Grant(Granted {
                    slice,
                    not_before,
                    expires,
                });
            }
        }
    }
    Choice::NeedPartition
}

proptest! {
    /// The one-pass acquire answers as the definition does, on random pools.
    #[test]
    fn acquire_is_its_definition(
        leases in proptest::collection::vec((0u8..2, 0u32..14, 0u32..8192, -500i64..500), 0..60),
        floors in (-300i64..300, -300i64..300),
        size in 3u32..17,
        now in -100i64..100,
    ) {
        let pool = [
            Pooled { partition: 63488, floor: floors.0 },
            Pooled { partition: 63489, floor: floors.1 },
        ];
        let granted: Vec<Granted> = leases
            .iter()
            .map(|&(p, log, k, expires)| {
                let len = 1u32 << (log + 3).min(16);
                let min = (k * 8) % 65536 / len * len;
                Granted {
                    slice: LeaseSlice { partition: 63488 + u16::from(p), min: min as u16, max: (min + len - 1) as u16 },
                    not_before: expires - 50,
                    expires,
                }
            })
            .collect();
        let sequences = 1u32 << size.min(16);
        prop_assert_eq!(
            acquire(&pool, &granted, sequences, now, 250),
            acquire_by_definition(&pool, &granted, sequences, now, 250)
        );
    }
}

#[test]
fn a_large_pool_finds_its_last_slice() {
    // 8,191 leases of 8 numbers on one partition, one slice left (the definition would take
    // about 67 M steps here; acquire, one pass over the leases and the slices).
    let p = pool(&[63488]);
    let held: Vec<Granted> = (0..8191u32)
        .map(|k| Granted {
            slice: LeaseSlice {
                partition: 63488,
                min: (k * 8) as u16,
                max: (k * 8 + 7) as u16,
            },
            not_before: 0,
            expires: 1_000,
        })
        .collect();
    let t = std::time::Instant::now();
    let g = grant(acquire(&p, &held, 8, 500, 250));
    assert_eq!(g.slice.min, 65528);
    // The quadratic definition takes about 67 M steps here; one pass, a few hundred µs even
    // unoptimised on a busy machine.
    assert!(
        t.elapsed() < std::time::Duration::from_secs(2),
        "{:?}",
        t.elapsed()
    );
}

#[test]
fn holders_are_bounded() {
    assert_eq!(check_holder("billing-api@host-3/4711"), Ok(()));
    assert_eq!(check_holder(""), Err(BadRequest::Holder));
    assert_eq!(check_holder(&"h".repeat(MAX_HOLDER_BYTES)), Ok(()));
    assert_eq!(
        check_holder(&"h".repeat(MAX_HOLDER_BYTES + 1)),
        Err(BadRequest::Holder)
    );
    // Bytes, not characters: 86 three-byte characters are 258 bytes.
    assert_eq!(
        check_holder(&"\u{20ac}".repeat(86)),
        Err(BadRequest::Holder)
    );
}

#[test]
fn room_is_made_from_the_oldest_ended_rows() {
    let k = |lease, expires| Kept { lease, expires };
    // Two live, three ended, limit 4: one more lease leaves 4 rows after forgetting two.
    let rows = [k(1, 50), k(2, 40), k(3, 200), k(4, 60), k(5, 300)];
    assert_eq!(make_room(&rows, 4, 100), Ok(vec![2, 1]));
    // Limit 3 with two live: all three ended go.
    assert_eq!(make_room(&rows, 3, 100), Ok(vec![2, 1, 4]));
    // Limit 2 with two live: refused, nothing forgotten.
    assert_eq!(make_room(&rows, 2, 100), Err(AtLimit));
    // Room enough: nothing forgotten.
    assert_eq!(make_room(&rows, 10, 100), Ok(vec![]));
    assert_eq!(make_room(&[], 0, 100), Err(AtLimit));
}

proptest! {
    /// Whatever a role does, its rows never outnumber its limit, and no live lease is
    /// forgotten.
    #[test]
    fn a_roles_rows_stay_within_its_limit(
        limit in 0u32..8,
        steps in proptest::collection::vec((0i64..50, 1i64..100, any::<bool>()), 1..200),
    ) {
        let mut rows: Vec<Kept> = Vec::new();
        let (mut now, mut next) = (1_000i64, 1i64);
        for (step, ttl, release) in steps {
            now += step;
            if release && !rows.is_empty() {
                // A release changes no row's end: it still counts until then.
                continue;
            }
            match make_room(&rows, limit, now) {
                Ok(forget) => {
                    for f in &forget {
                        let r = rows.iter().find(|r| r.lease == *f).copied().unwrap();
                        prop_assert!(r.expires <= now, "forgot live lease {r:?} at {now}");
                    }
                    rows.retain(|r| !forget.contains(&r.lease));
                    rows.push(Kept { lease: next, expires: now + ttl });
                    next += 1;
                }
                Err(AtLimit) => {
                    prop_assert!(rows.iter().filter(|r| r.expires > now).count() >= limit as usize);
                }
            }
            prop_assert!(rows.len() <= limit as usize);
        }
    }
}

#[test]
fn a_restored_table_is_relearned_from_the_ledger() {
    let l = Ledger {
        stamp: 7,
        leased_until: 5_000,
    };
    assert_eq!(relearned_floor(7, 100, l), None);
    // Older rows (a dump's): busy until the latest end the ledger knows.
    assert_eq!(relearned_floor(5, 100, l), Some(5_000));
    // Never lowered.
    assert_eq!(relearned_floor(5, 9_000, l), Some(9_000));
    // Newer rows than the ledger's (a restore of a later dump over an older ledger cannot
    // happen, but an edit can): relearned all the same.
    assert_eq!(relearned_floor(8, 100, l), Some(5_000));
}

#[test]
fn renew_grows_and_refuses() {
    let g = Granted {
        slice: LeaseSlice {
            partition: 61440,
            min: 0,
            max: 7,
        },
        not_before: 0,
        expires: 100,
    };
    let ok = Standing {
        released: false,
        ours: true,
        handed_on: false,
    };
    assert_eq!(renew(&g, ok, 50, 100), Ok(150));
    // Never shorter.
    assert_eq!(renew(&g, ok, 50, 10), Ok(100));
    assert_eq!(renew(&g, ok, 100, 100), Err(RenewRefusal::Expired));
    let r = Standing {
        released: true,
        ..ok
    };
    assert_eq!(renew(&g, r, 50, 100), Err(RenewRefusal::Released));
    let n = Standing { ours: false, ..ok };
    assert_eq!(renew(&g, n, 50, 100), Err(RenewRefusal::NotOurs));
}

proptest! {
    /// Random acquires (of random sizes), renewals and releases with a registry clock that
    /// jumps both ways: no two leases ever granted conflict.
    #[test]
    fn no_two_leases_conflict(
        events in proptest::collection::vec((0u8..4, 0u32..4, -2_000i64..2_000, 1i64..600), 1..300),
    ) {
        let p = pool(&[61440, 61455]);
        let mut now = 1_000_000i64;
        let mut all: Vec<(Granted, bool)> = Vec::new();
        for (kind, size, step, ttl) in events {
            now += step;
            match kind {
                0 | 1 => {
                    let live: Vec<Granted> = all
                        .iter()
                        .map(|(g, _)| *g)
                        .filter(|g| g.expires > now - SLACK_UNITS)
                        .collect();
                    if let Choice::Grant(g) = acquire(&p, &live, 8 << (size * 3), now, ttl) {
                        all.push((g, false));
                    }
                }
                2 if !all.is_empty() => {
                    let i = (ttl as usize) % all.len();
                    let (g, released) = all[i];
                    let s = Standing {
                        released,
                        ours: true,
                        handed_on: all.iter().any(|(o, _)| handed_on(&g, o)),
                    };
                    if let Ok(e) = renew(&g, s, now, ttl) {
                        all[i].0.expires = e;
                    }
                }
                _ if !all.is_empty() => {
                    let i = (ttl as usize) % all.len();
                    all[i].1 = true;
                }
                _ => {}
            }
            for (i, (a, _)) in all.iter().enumerate() {
                for (b, _) in &all[i + 1..] {
                    prop_assert!(!a.conflicts(b), "{a:?} and {b:?}");
                }
            }
        }
    }
}
