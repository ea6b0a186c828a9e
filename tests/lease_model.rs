//! A model of *partition leases*: the registry (`src/pg/issuer/lease.rs`) driven by random
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
//! Since 0.8.1 the model also has two roles, each leasing only from the pool partitions the
//! lineage granted to it ([`State::grantee`]), within its `sno.reserved_limit` and its
//! `sno.lease_limit`, whose ended rows are forgotten to make room ([`lease::make_room`]: a
//! forgotten lease's end becomes its partition's floor); and data-only restores of the
//! registry's own tables to an earlier state of the same incarnation, while the ledger (which no
//! dump carries) stays: a partition whose rows are behind the ledger gets the ledger's floor
//! ([`lease::relearned_floor`]), and a renewal is refused when the floor passed the lease's end.
//! Checked too: a role's rows never outnumber its limit.
//!
//! Holders stamp only inside the window the registry last told them (the clients' rule); so
//! two holders can make one ID only if their slices and their windows (as they know them)
//! overlap. Checked after every event, over every lease any holder received, in any history.
//!
//! Assumed, as the manual says: the failover is fenced (the old primary grants nothing once
//! the standby is promoted) and WAL timelines are never reused, and fewer than 15 promotions or
//! PITRs happen within one lease TTL (each case here has at most 12).

use proptest::prelude::*;
use sno::generator::lease::{self, Choice, Granted, Kept, Ledger, Pooled, Standing};
use sno::generator::lineage::State;
use sno::generator::reserved;

#[derive(Clone)]
struct PoolRow {
    partition: u16,
    incarnation: u64,
    floor: i64,
    stamp: i64,
}

#[derive(Clone)]
struct LeaseRow {
    id: usize,
    role: u32,
    g: Granted,
    released: bool,
}

/// Each role's `sno.lease_limit` and `sno.reserved_limit` (roles 1 and 2).
const LEASE_LIMIT: [u32; 2] = [6, 3];
const RESERVED_LIMIT: [u32; 2] = [6, 2];

/// A registry server's records: the lineage, the dumped tables (`pool`, `leases`) and the
/// ledger, which no dump carries.
#[derive(Clone)]
struct Server {
    lineage: State,
    timeline: u32,
    pool: Vec<PoolRow>,
    leases: Vec<LeaseRow>,
    ledger: Vec<(u16, Ledger)>,
}

impl Server {
    fn ledger_of(&self, p: u16) -> Option<Ledger> {
        self.ledger.iter().find(|(q, _)| *q == p).map(|(_, l)| *l)
    }

    /// The glue's check of this incarnation's pool rows (of `role`, or all) against the ledger.
    fn relearn(&mut self, role: Option<u32>) {
        let me = self.lineage.incarnation;
        for i in 0..self.pool.len() {
            let r = self.pool[i].clone();
            if r.incarnation != me || role.is_some_and(|x| self.lineage.grantee(r.partition) != x) {
                continue;
            }
            match self.ledger_of(r.partition) {
                Some(l) => {
                    if let Some(f) = lease::relearned_floor(r.stamp, r.floor, l) {
                        self.pool[i].floor = f;
                        self.pool[i].stamp = l.stamp;
                    }
                }
                None => self.pool[i].incarnation = 0,
            }
        }
    }

    /// A grant or renewal on `p` ending at `expires`: a new stamp in the row and the ledger.
    fn stamp(&mut self, p: u16, expires: i64) {
        let l = match self.ledger.iter_mut().find(|(q, _)| *q == p) {
            Some((_, l)) => {
                l.stamp += 1;
                l.leased_until = l.leased_until.max(expires);
                *l
            }
            None => {
                let l = Ledger {
                    stamp: 1,
                    leased_until: expires,
                };
                self.ledger.push((p, l));
                l
            }
        };
        if let Some(r) = self.pool.iter_mut().find(|r| r.partition == p) {
            r.stamp = l.stamp;
        }
    }

    fn acquire(&mut self, role: u32, size: u32, now: i64, ttl: i64) -> Option<Granted> {
        if self.lineage.grants_blocked {
            return None;
        }
        let mine: Vec<Kept> = self
            .leases
            .iter()
            .filter(|l| l.role == role)
            .map(|l| Kept {
                lease: l.id as i64,
                expires: l.g.expires,
            })
            .collect();
        let forget = lease::make_room(&mine, LEASE_LIMIT[role as usize - 1], now).ok()?;
        for f in forget {
            let i = self.leases.iter().position(|l| l.id as i64 == f).unwrap();
            let l = self.leases.remove(i);
            if let Some(r) = self
                .pool
                .iter_mut()
                .find(|r| r.partition == l.g.slice.partition)
            {
                r.floor = r.floor.max(l.g.expires);
            }
        }
        self.relearn(Some(role));
        let me = self.lineage.incarnation;
        let mut pool: Vec<Pooled> = self
            .pool
            .iter()
            .filter(|p| p.incarnation == me && self.lineage.grantee(p.partition) == role)
            .map(|p| Pooled {
                partition: p.partition,
                floor: p.floor,
            })
            .collect();
        let granted: Vec<Granted> = self
            .leases
            .iter()
            .filter(|l| pool.iter().any(|p| p.partition == l.g.slice.partition))
            .filter(|l| l.g.expires > now - lease::SLACK_UNITS)
            .map(|l| l.g)
            .collect();
        let g = match lease::acquire(&pool, &granted, size, now, ttl) {
            Choice::Grant(g) => g,
            Choice::NeedPartition => {
                if self.lineage.grants_of(role) >= RESERVED_LIMIT[role as usize - 1] {
                    return None;
                }
                let k = lease::share_of_timeline(self.timeline);
                let p = self
                    .lineage
                    .grant_where(|p| reserved::for_leases(p, k))
                    .ok()?;
                self.lineage.note_grant_to(p, role);
                self.pool.push(PoolRow {
                    partition: p,
                    incarnation: me,
                    floor: i64::MIN,
                    stamp: 0,
                });
                pool.push(Pooled {
                    partition: p,
                    floor: i64::MIN,
                });
                match lease::acquire(&pool, &granted, size, now, ttl) {
                    Choice::Grant(g) => g,
                    Choice::NeedPartition => panic!("a new partition with no free slice"),
                }
            }
        };
        self.stamp(g.slice.partition, g.expires);
        Some(g)
    }

    fn renew(&mut self, id: usize, now: i64, ttl: i64) -> Option<i64> {
        let i = self.leases.iter().position(|l| l.id == id)?;
        self.relearn(None);
        let l = self.leases[i].clone();
        let me = self.lineage.incarnation;
        let row = self
            .pool
            .iter()
            .find(|p| p.partition == l.g.slice.partition);
        let standing = Standing {
            released: l.released,
            ours: row.is_some_and(|p| p.incarnation == me),
            handed_on: row.is_some_and(|p| p.floor > l.g.expires)
                || self.leases.iter().any(|o| lease::handed_on(&l.g, &o.g)),
        };
        let e = lease::renew(&l.g, standing, now, ttl).ok()?;
        self.leases[i].g.expires = e;
        self.stamp(l.g.slice.partition, e);
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
    Acquire {
        role: u8,
        size: u8,
        ttl: u16,
    },
    Renew {
        pick: u16,
        ttl: u16,
    },
    Release {
        pick: u16,
    },
    Clock {
        step: i32,
    },
    Replicate {
        upto: u16,
    },
    Failover,
    Pitr {
        back: u16,
    },
    CloneBeside,
    /// A data-only restore of the registry's tables to an earlier state of this incarnation.
    DataOnlyRestore {
        back: u16,
    },
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        6 => (1u8..3, 0u8..5, 250u16..3000).prop_map(|(role, size, ttl)| Event::Acquire { role, size, ttl }),
        5 => (any::<u16>(), 250u16..3000).prop_map(|(pick, ttl)| Event::Renew { pick, ttl }),
        2 => any::<u16>().prop_map(|pick| Event::Release { pick }),
        4 => (-5000i32..8000).prop_map(|step| Event::Clock { step }),
        3 => any::<u16>().prop_map(|upto| Event::Replicate { upto }),
        1 => Just(Event::Failover),
        1 => any::<u16>().prop_map(|back| Event::Pitr { back }),
        1 => Just(Event::CloneBeside),
        1 => any::<u16>().prop_map(|back| Event::DataOnlyRestore { back }),
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
        ledger: Vec::new(),
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
            Event::Acquire { role, size, ttl } => {
                let size = 8u32 << (size as u32 * 3);
                let role = u32::from(role);
                if let Some(g) = primary.acquire(role, size, clock, ttl as i64) {
                    primary.leases.push(LeaseRow {
                        id: next_id,
                        role,
                        g,
                        released: false,
                    });
                    for r in 1..=2u32 {
                        let rows = primary.leases.iter().filter(|l| l.role == r).count();
                        prop_assert!(
                            rows <= LEASE_LIMIT[r as usize - 1] as usize,
                            "role {r} has {rows} rows"
                        );
                    }
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
            Event::DataOnlyRestore { back } => {
                // The tables as they were at an earlier point of this incarnation's history;
                // the lineage and the ledger as they are.
                let past = &history[back as usize % history.len()];
                primary.pool = past.pool.clone();
                primary.leases = past.leases.clone();
                history.push(primary.clone());
            }
            Event::CloneBeside => {
                // A clone on the same timeline grants nothing (the glue's LeaseOnCopy), and does
                // not take over its original's pool.
                let mut c = primary.clone();
                c.lineage
                    .at_start(true, 13, seed ^ (n as u64) << 1, c.timeline);
                prop_assert!(
                    c.acquire(1, 8, clock, 250).is_none(),
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
    let acquire = Event::Acquire {
        role: 1,
        size: 4,
        ttl: 2000,
    };
    let mut events = vec![acquire.clone()];
    // The standby has only the empty start; the primary fills two partitions meanwhile.
    for _ in 0..3 {
        events.push(acquire.clone());
    }
    events.push(Event::Failover);
    for _ in 0..4 {
        events.push(acquire.clone());
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
        ledger: Vec::new(),
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

/// A data-only restore of the registry's tables from before a lease was granted: without the
/// ledger's floor the next acquire of the same role grants that lease's slice again; with it,
/// it cannot.
#[test]
fn a_data_only_restore_never_hands_a_live_slice_out_again() {
    let acquire = Event::Acquire {
        role: 1,
        size: 1,
        ttl: 2000,
    };
    // One lease (the dump's state is history[1]), a second one after it, the tables restored
    // to history[1], then more acquires of the same role: none may overlap the second.
    let events = vec![
        acquire.clone(),
        acquire.clone(),
        Event::DataOnlyRestore { back: 1 },
        acquire.clone(),
        acquire.clone(),
        acquire,
    ];
    run(events, 7).unwrap();
}
