//! A model of *partition leases*: the registry (`src/pg/generator/lease.rs`) driven by random
//! orders of acquires, renewals, releases, clock steps of the registry, replication to an
//! asynchronous standby, failovers that lose the old primary's last records, PITR, and clones
//! started beside their original; checked: no two leases any holder ever received can stamp
//! one ID.
//!
//! The model runs the crate's pure code the way the glue does:
//! * acquire: a server that grants ([`State::grants_blocked`] not set) takes the pool
//!   partitions recorded for its incarnation (`lease_partitions`), the leases on them that end
//!   after `now - SLACK_UNITS`, and asks [`lease::acquire`]; when the pool is full the lineage's
//!   allocator grants a new reserved partition of the lease region from the share of the
//!   server's WAL timeline ([`State::grant_where`] with [`reserved::for_leases`] and
//!   [`lease::share_of_timeline`]), noted in the lineage and recorded in the pool first;
//! * renew: [`lease::renew`], with `ours` (the lease's partition is of this incarnation) and
//!   `handed_on` (a later lease shares its slice, [`lease::handed_on`]) as the glue computes
//!   them;
//! * release: marks the lease released (its slice stays busy until its end);
//! * a server's records (lineage, pool, leases) are one history; an asynchronous standby holds
//!   a prefix of its primary's, and a promotion takes that prefix, a new WAL timeline and a new
//!   incarnation ([`State::judge`] on the new timeline), while every holder keeps what the old
//!   primary told it, the lost tail included;
//! * PITR restores a prefix of the history onto a timeline past every one used; a clone
//!   ([`State::at_start`] with a `backup_label`) grants nothing.
//!
//! Holders stamp only inside the window the registry last told them (the clients' rule); so
//! two holders can make one ID only if their slices and their windows (as they know them)
//! overlap. Checked after every event, over every lease any holder received, in any history.
//!
//! Assumed, as the manual says: the failover is fenced (the old primary grants nothing once
//! the standby is promoted) and WAL timelines are never reused, and fewer than 15 promotions or
//! PITRs happen within one lease TTL (each case here has at most 12).

use proptest::prelude::*;
use sno::generator::lease::{self, Choice, Granted, Pooled, Standing};
use sno::generator::lineage::State;
use sno::generator::reserved;

#[derive(Clone)]
struct PoolRow {
    partition: u16,
    incarnation: u64,
}

#[derive(Clone)]
struct LeaseRow {
    id: usize,
    g: Granted,
    released: bool,
}

/// A registry server's records.
#[derive(Clone)]
struct Server {
    lineage: State,
    timeline: u32,
    pool: Vec<PoolRow>,
    leases: Vec<LeaseRow>,
}

impl Server {
    fn acquire(&mut self, size: u32, now: i64, ttl: i64) -> Option<Granted> {
        if self.lineage.grants_blocked {
            return None;
        }
        let me = self.lineage.incarnation;
        let mut pool: Vec<Pooled> = self
            .pool
            .iter()
            .filter(|p| p.incarnation == me)
            .map(|p| Pooled {
                partition: p.partition,
                floor: i64::MIN,
            })
            .collect();
        let granted: Vec<Granted> = self
            .leases
            .iter()
            .filter(|l| pool.iter().any(|p| p.partition == l.g.slice.partition))
            .filter(|l| l.g.expires > now - lease::SLACK_UNITS)
            .map(|l| l.g)
            .collect();
        match lease::acquire(&pool, &granted, size, now, ttl) {
            Choice::Grant(g) => Some(g),
            Choice::NeedPartition => {
                let k = lease::share_of_timeline(self.timeline);
                let p = self
                    .lineage
                    .grant_where(|p| reserved::for_leases(p, k))
                    .ok()?;
                self.lineage.note_granted(p);
                self.pool.push(PoolRow {
                    partition: p,
                    incarnation: me,
                });
                pool.push(Pooled {
                    partition: p,
                    floor: i64::MIN,
                });
                match lease::acquire(&pool, &granted, size, now, ttl) {
                    Choice::Grant(g) => Some(g),
                    Choice::NeedPartition => panic!("a new partition with no free slice"),
                }
            }
        }
    }

    fn renew(&mut self, id: usize, now: i64, ttl: i64) -> Option<i64> {
        let i = self.leases.iter().position(|l| l.id == id)?;
        let l = self.leases[i].clone();
        let me = self.lineage.incarnation;
        let standing = Standing {
            released: l.released,
            ours: self
                .pool
                .iter()
                .any(|p| p.partition == l.g.slice.partition && p.incarnation == me),
            handed_on: self.leases.iter().any(|o| lease::handed_on(&l.g, &o.g)),
        };
        let e = lease::renew(&l.g, standing, now, ttl).ok()?;
        self.leases[i].g.expires = e;
        Some(e)
    }

    /// A promotion or the end of a PITR onto `timeline`: a new incarnation.
    fn promote(&mut self, timeline: u32, draw: u64) {
        let mut n = draw;
        self.lineage
            .judge(timeline, None, false, || {
                n = n.wrapping_mul(6364136223846793005).wrapping_add(1);
                n
            })
            .expect("judged");
        self.timeline = timeline;
    }
}

#[derive(Clone, Debug)]
enum Event {
    Acquire { size: u8, ttl: u16 },
    Renew { pick: u16, ttl: u16 },
    Release { pick: u16 },
    Clock { step: i32 },
    Replicate { upto: u16 },
    Failover,
    Pitr { back: u16 },
    CloneBeside,
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        6 => (0u8..5, 250u16..3000).prop_map(|(size, ttl)| Event::Acquire { size, ttl }),
        5 => (any::<u16>(), 250u16..3000).prop_map(|(pick, ttl)| Event::Renew { pick, ttl }),
        2 => any::<u16>().prop_map(|pick| Event::Release { pick }),
        4 => (-5000i32..8000).prop_map(|step| Event::Clock { step }),
        3 => any::<u16>().prop_map(|upto| Event::Replicate { upto }),
        1 => Just(Event::Failover),
        1 => any::<u16>().prop_map(|back| Event::Pitr { back }),
        1 => Just(Event::CloneBeside),
    ]
}

/// A lease a holder received, with the end it was last told.
struct Held {
    g: Granted,
}

fn run(events: Vec<Event>, seed: u64) -> Result<(), TestCaseError> {
    let mut primary = Server {
        lineage: State::fresh(7, seed | 1, 1, 11),
        timeline: 1,
        pool: Vec::new(),
        leases: Vec::new(),
    };
    // The primary's history (a snapshot after each change) and how much of it the standby has.
    let mut history: Vec<Server> = vec![primary.clone()];
    let mut replicated = 0usize;
    let mut max_timeline = 1u32;
    let mut switches = 0;
    let mut clock = 1_000_000i64;
    let mut held: Vec<Held> = Vec::new();
    let mut next_id = 0usize;
    for (n, e) in events.into_iter().enumerate() {
        match e {
            Event::Acquire { size, ttl } => {
                let size = 8u32 << (size as u32 * 3);
                if let Some(g) = primary.acquire(size, clock, ttl as i64) {
                    primary.leases.push(LeaseRow {
                        id: next_id,
                        g,
                        released: false,
                    });
                    held.push(Held { g });
                    next_id += 1;
                    history.push(primary.clone());
                }
            }
            Event::Renew { pick, ttl } if !held.is_empty() => {
                let id = pick as usize % held.len();
                if let Some(e) = primary.renew(id, clock, ttl as i64) {
                    // Within one incarnation the registry knows what the holder was told.
                    prop_assert!(e >= held[id].g.expires, "a renewal shortened lease {id}");
                    held[id].g.expires = e;
                    history.push(primary.clone());
                }
            }
            Event::Release { pick } if !held.is_empty() => {
                let id = pick as usize % held.len();
                if let Some(l) = primary.leases.iter_mut().find(|l| l.id == id) {
                    l.released = true;
                    history.push(primary.clone());
                }
            }
            Event::Clock { step } => clock += step as i64,
            Event::Replicate { upto } => {
                replicated = replicated.max(upto as usize % history.len());
            }
            Event::Failover if switches < 12 => {
                // The standby, with what it received, promoted; the old primary fenced.
                switches += 1;
                max_timeline += 1;
                let mut s = history[replicated].clone();
                s.promote(max_timeline, seed.wrapping_add(n as u64));
                primary = s;
                history = vec![primary.clone()];
                replicated = 0;
            }
            Event::Pitr { back } if switches < 12 => {
                switches += 1;
                max_timeline += 1;
                let mut s = history[back as usize % history.len()].clone();
                s.lineage.at_start(true, 12, seed ^ n as u64, s.timeline);
                s.promote(max_timeline, seed.wrapping_mul(3).wrapping_add(n as u64));
                primary = s;
                history = vec![primary.clone()];
                replicated = 0;
            }
            Event::CloneBeside => {
                // A clone on the same timeline grants nothing (the glue's LeaseOnCopy), and does
                // not take over its original's pool.
                let mut c = primary.clone();
                c.lineage
                    .at_start(true, 13, seed ^ (n as u64) << 1, c.timeline);
                prop_assert!(
                    c.acquire(8, clock, 250).is_none(),
                    "a clone granted a lease"
                );
                let id = held.len().saturating_sub(1);
                if !held.is_empty() {
                    prop_assert!(c.renew(id, clock, 250).is_none(), "a clone renewed a lease");
                }
            }
            _ => {}
        }
        for (i, a) in held.iter().enumerate() {
            for b in &held[i + 1..] {
                prop_assert!(
                    !a.g.conflicts(&b.g),
                    "two holders can stamp one ID: {:?} and {:?}",
                    a.g,
                    b.g
                );
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn no_two_leases_any_holder_received_can_stamp_one_id(
        events in proptest::collection::vec(event(), 1..250),
        seed in any::<u64>(),
    ) {
        run(events, seed)?;
    }
}

/// The lost tail of an asynchronous failover: the old primary granted leases the standby never
/// received; the promoted standby takes new partitions from its own timeline's share, never
/// the old primary's.
#[test]
fn a_promoted_standby_never_grants_what_the_lost_tail_granted() {
    let mut events = vec![Event::Acquire { size: 4, ttl: 2000 }];
    // The standby has only the empty start; the primary fills two partitions meanwhile.
    for _ in 0..3 {
        events.push(Event::Acquire { size: 4, ttl: 2000 });
    }
    events.push(Event::Failover);
    for _ in 0..4 {
        events.push(Event::Acquire { size: 4, ttl: 2000 });
    }
    run(events, 42).unwrap();
}

/// Without the timeline's share (a promoted standby granting from the whole range, lowest
/// first, as `sno_generate_at` does), the standby's allocator hands out again the partition the
/// lost tail granted; with the shares of the two timelines it cannot.
#[test]
fn without_shares_the_lost_tail_would_be_granted_again() {
    let fresh = || Server {
        lineage: State::fresh(7, 99, 1, 11),
        timeline: 1,
        pool: Vec::new(),
        leases: Vec::new(),
    };
    let (mut old, mut new) = (fresh(), fresh());
    new.promote(2, 5);
    let p_old = old.lineage.grant_where(|_| true).unwrap();
    old.lineage.note_granted(p_old);
    assert_eq!(new.lineage.grant_where(|_| true), Ok(p_old));
    let share = |t: u32| move |p: u16| reserved::for_leases(p, lease::share_of_timeline(t));
    let (mut old, mut new) = (fresh(), fresh());
    new.promote(2, 5);
    let p_old = old.lineage.grant_where(share(1)).unwrap();
    old.lineage.note_granted(p_old);
    let p_new = new.lineage.grant_where(share(2)).unwrap();
    assert_ne!(p_old, p_new);
}
