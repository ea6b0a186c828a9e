//! The leased generator's decisions under a clock the tests drive.

use super::*;
use crate::id::time::{units_to_unix_nanos, unix_nanos_to_units};
use crate::Sno;
use proptest::prelude::*;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicI64, Ordering as O};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A unit in 2025, far from either end of the format's range.
const BASE: u64 = 118_346_400_000; // 2025-01-01T00:00:00Z

/// A clock the test sets; `sleep` moves it forward.
#[derive(Debug, Default)]
struct FakeClock {
    nanos: AtomicI64,
    slept: AtomicI64,
}

impl FakeClock {
    fn at_unit(unit: u64) -> Arc<FakeClock> {
        let c = Arc::new(FakeClock::default());
        c.set_unit(unit);
        c
    }

    fn set_unit(&self, unit: u64) {
        self.nanos
            .store(units_to_unix_nanos(unit) as i64, O::SeqCst);
    }

    fn set_nanos(&self, nanos: i128) {
        self.nanos.store(nanos as i64, O::SeqCst);
    }

    fn unit(&self) -> u64 {
        unix_nanos_to_units(self.nanos.load(O::SeqCst) as i128).unwrap()
    }
}

impl Clock for FakeClock {
    fn unix_nanos(&self) -> i128 {
        self.nanos.load(O::SeqCst) as i128
    }

    fn sleep(&self, d: Duration) {
        self.slept.fetch_add(d.as_nanos() as i64, O::SeqCst);
        self.nanos.fetch_add(d.as_nanos() as i64, O::SeqCst);
    }
}

fn lease(id: i64, partition: u16, slice: (u16, u16), window: (u64, u64)) -> Lease {
    Lease {
        lease: id,
        token: Token([id as u8; 16]),
        partition,
        sequence_min: slice.0,
        sequence_max: slice.1,
        not_before: unit_start(window.0),
        expires_at: unit_start(window.1),
        holder: "test".into(),
        renew_after: unit_start(window.0 + (window.1 - window.0) / 3),
    }
}

fn generator(l: &Lease, clock: &Arc<FakeClock>) -> LeasedGenerator {
    LeasedGenerator::with_clock(l, clock.clone(), GeneratorOptions::default()).unwrap()
}

#[test]
fn stamps_inside_the_window_and_the_slice_in_order() {
    let l = lease(1, 61440, (1024, 1031), (BASE, BASE + 100));
    let clock = FakeClock::at_unit(BASE + 10);
    let g = generator(&l, &clock);
    let ids: Vec<Sno> = (0..8).map(|_| g.generate_with_meta(7).unwrap()).collect();
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(
            (
                id.units(),
                id.tick(),
                id.meta(),
                id.partition(),
                id.sequence()
            ),
            (BASE + 10, 0, 7, 61440, 1024 + i as u16)
        );
        assert!(l.covers(*id));
    }
    // The unit's slice is used up: the next unit, ahead of the clock.
    let next = g.generate_with_meta(7).unwrap();
    assert_eq!((next.units(), next.sequence()), (BASE + 11, 1024));
    // The clock moves on: its unit, from the slice's start.
    clock.set_unit(BASE + 50);
    let id = g.generate().unwrap();
    assert_eq!((id.units(), id.sequence()), (BASE + 50, 1024));
    assert!(ids.windows(2).all(|w| w[0] < w[1]) && ids[7] < next);
}

#[test]
fn refuses_at_and_after_the_window_end_until_renewed() {
    let l = lease(1, 61440, (0, 7), (BASE, BASE + 10));
    let clock = FakeClock::at_unit(BASE + 9);
    let g = generator(&l, &clock);
    assert_eq!(g.generate().unwrap().units(), BASE + 9);
    clock.set_unit(BASE + 10);
    assert_eq!(
        g.generate(),
        Err(GenerateError::Expired {
            unit: BASE + 10,
            expires_at: BASE + 10
        })
    );
    // A renewal (same lease, later end) is adopted.
    let mut r = l.clone();
    r.expires_at = unit_start(BASE + 20);
    g.renewed(&r).unwrap();
    assert_eq!(g.generate().unwrap().units(), BASE + 10);
    assert_eq!(g.lease().unwrap().expires_at, unit_start(BASE + 20));
    // An earlier end does not shrink the window.
    g.renewed(&l).unwrap();
    assert_eq!(g.window().unwrap().expires_at, BASE + 20);
    // A "renewal" that moves anything else, or of another lease, is refused.
    let mut moved = r.clone();
    moved.sequence_max = 15;
    assert_eq!(g.renewed(&moved), Err(LeaseError::Mismatch { lease: 1 }));
    let other = lease(2, 61440, (0, 7), (BASE, BASE + 30));
    assert_eq!(g.renewed(&other), Err(LeaseError::Mismatch { lease: 2 }));
}

#[test]
fn a_used_up_slice_at_the_window_end_is_an_error() {
    let l = lease(1, 61441, (8, 15), (BASE, BASE + 2));
    let clock = FakeClock::at_unit(BASE);
    let g = generator(&l, &clock);
    let ids: HashSet<Sno> = (0..16).map(|_| g.generate().unwrap()).collect();
    assert_eq!(ids.len(), 16);
    assert!(ids.iter().all(|id| l.covers(*id)));
    assert_eq!(
        g.generate(),
        Err(GenerateError::SliceUsedUp {
            expires_at: BASE + 2
        })
    );
    // Still refused when the clock reaches the last unit (its slice is used up too).
    clock.set_unit(BASE + 1);
    assert!(g.generate().is_err());
}

#[test]
fn a_clock_that_goes_back_keeps_the_last_unit() {
    let l = lease(1, 61440, (0, 3), (BASE, BASE + 1000));
    let clock = FakeClock::at_unit(BASE + 500);
    let g = generator(&l, &clock);
    let a = g.generate().unwrap();
    clock.set_unit(BASE + 100);
    let b = g.generate().unwrap();
    assert_eq!((b.units(), b.sequence(), b.tick()), (BASE + 500, 1, 0));
    // Even before the window's start: the last unit used is inside it.
    clock.set_unit(BASE - 5000);
    let ids: Vec<Sno> = (0..6).map(|_| g.generate().unwrap()).collect();
    assert!(a < b && b < ids[0] && ids.windows(2).all(|w| w[0] < w[1]));
    assert!(ids.iter().all(|id| l.covers(*id)));
    // Four sequence numbers a unit: 500 is used up, then 501.
    assert_eq!(ids[5].units(), BASE + 501);
}

#[test]
fn a_clock_before_the_window_waits_a_while_then_refuses() {
    let l = lease(1, 61440, (0, 7), (BASE, BASE + 1000));
    // 40 ms behind: waits, then stamps the window's first unit.
    let clock = FakeClock::at_unit(BASE - 10);
    let g = generator(&l, &clock);
    assert_eq!(g.generate().unwrap().units(), BASE);
    assert_eq!(clock.slept.load(O::SeqCst), 40_000_000);
    // In the middle of a unit: waits to the boundary exactly.
    let clock = FakeClock::at_unit(BASE - 1);
    clock.set_nanos(units_to_unix_nanos(BASE - 1) + 1_500_000);
    let g = generator(&l, &clock);
    assert_eq!(g.generate().unwrap().units(), BASE);
    assert_eq!(clock.slept.load(O::SeqCst), 2_500_000);
    // 2 s behind: refused at once (more than the 1 s wait).
    let clock = FakeClock::at_unit(BASE - 500);
    let g = generator(&l, &clock);
    assert_eq!(
        g.generate(),
        Err(GenerateError::ClockBehind {
            unit: BASE - 500,
            not_before: BASE
        })
    );
    assert_eq!(clock.slept.load(O::SeqCst), 0);
    // No wait at all.
    let clock = FakeClock::at_unit(BASE - 1);
    let g = LeasedGenerator::with_clock(
        &l,
        clock.clone(),
        GeneratorOptions {
            max_clock_wait: Duration::ZERO,
        },
    )
    .unwrap();
    assert!(matches!(
        g.generate(),
        Err(GenerateError::ClockBehind { .. })
    ));
}

#[test]
fn a_clock_that_does_not_move_while_waiting_is_refused() {
    /// A clock stuck before the window.
    struct Stuck(i128);
    impl Clock for Stuck {
        fn unix_nanos(&self) -> i128 {
            self.0
        }
        fn sleep(&self, _: Duration) {}
    }
    let l = lease(1, 61440, (0, 7), (BASE, BASE + 1000));
    let g = LeasedGenerator::with_clock(
        &l,
        Arc::new(Stuck(units_to_unix_nanos(BASE - 100))),
        GeneratorOptions::default(),
    )
    .unwrap();
    assert!(matches!(
        g.generate(),
        Err(GenerateError::ClockBehind { .. })
    ));
}

#[test]
fn replacing_a_lease_switches_and_keeps_ids_increasing() {
    let old = lease(1, 61440, (0, 7), (BASE, BASE + 100));
    let clock = FakeClock::at_unit(BASE + 50);
    let g = generator(&old, &clock);
    let a = g.generate().unwrap();
    // The new lease starts later than the clock: the old one is used meanwhile.
    let new = lease(2, 61500, (64, 71), (BASE + 52, BASE + 300));
    g.replace(&new).unwrap();
    let b = g.generate().unwrap();
    assert!(old.covers(b) && a < b);
    clock.set_unit(BASE + 52);
    let c = g.generate().unwrap();
    assert!(new.covers(c) && b < c);
    // From then on the old lease is gone: a clock back before the new window keeps the last unit.
    clock.set_unit(BASE + 40);
    let d = g.generate().unwrap();
    assert!(new.covers(d) && c < d);
    // A new lease whose window starts before the last unit starts after it.
    let third = lease(3, 61441, (0, 7), (BASE, BASE + 400));
    g.replace(&third).unwrap();
    let e = g.generate().unwrap();
    assert!(third.covers(e) && e.units() == BASE + 53);
    // Replacing with the current lease's number is a renewal.
    let mut renewal = third.clone();
    renewal.expires_at = unit_start(BASE + 500);
    g.replace(&renewal).unwrap();
    assert_eq!(g.window().unwrap().expires_at, BASE + 500);
    g.revoke();
    assert_eq!(g.generate(), Err(GenerateError::NoLease));
    assert_eq!(g.lease(), None);
}

#[test]
fn the_old_lease_is_not_used_past_its_end() {
    let old = lease(1, 61440, (0, 7), (BASE, BASE + 10));
    let clock = FakeClock::at_unit(BASE + 5);
    let g = LeasedGenerator::with_clock(
        &old,
        clock.clone(),
        GeneratorOptions {
            max_clock_wait: Duration::ZERO,
        },
    )
    .unwrap();
    g.generate().unwrap();
    let new = lease(2, 61441, (0, 7), (BASE + 20, BASE + 30));
    g.replace(&new).unwrap();
    clock.set_unit(BASE + 12);
    assert!(matches!(
        g.generate(),
        Err(GenerateError::ClockBehind { .. })
    ));
}

#[test]
fn bad_leases_are_refused() {
    let mut l = lease(1, 61440, (8, 7), (BASE, BASE + 10));
    assert_eq!(
        LeasedGenerator::new(&l).unwrap_err(),
        LeaseError::EmptySlice
    );
    l.sequence_max = 8;
    l.not_before = UNIX_EPOCH;
    assert_eq!(
        LeasedGenerator::new(&l).unwrap_err(),
        LeaseError::OutOfRange
    );
    // Ends between boundaries: the window is narrowed, never widened.
    let mut l = lease(1, 61440, (0, 7), (BASE, BASE + 10));
    l.not_before += Duration::from_micros(1);
    l.expires_at -= Duration::from_micros(1);
    assert_eq!(
        l.window().unwrap(),
        Window {
            not_before: BASE + 1,
            expires_at: BASE + 9
        }
    );
    l.expires_at = l.not_before;
    assert!(l.window().unwrap().is_empty());
}

#[test]
fn tokens_read_and_print_as_uuids_and_hide_in_debug() {
    let text = "0b6e4fd4-4b8e-4a43-8d2f-6d1c6a2f9e01";
    let t: Token = text.parse().unwrap();
    assert_eq!(t.to_string(), text);
    assert_eq!(format!("{t:?}"), "Token(..)");
    assert_eq!("{0b6e4fd44b8e4a438d2f6d1c6a2f9e01}".parse::<Token>(), Ok(t));
    assert_eq!(text.to_uppercase().parse::<Token>(), Ok(t));
    for bad in [
        "",
        "0b6e4fd4",
        &format!("{text}0"),
        "0b6e4fd4-4b8e-4a43-8d2f-6d1c6a2f9e0g",
    ] {
        assert_eq!(bad.parse::<Token>(), Err(BadToken), "{bad}");
    }
    let l = lease(1, 61440, (0, 7), (BASE, BASE + 10));
    assert!(!format!("{l:?}").contains("0101"));
}

#[test]
fn columns_make_a_lease() {
    let t = unit_start(BASE);
    let l = lease_from_columns(
        5,
        "0b6e4fd4-4b8e-4a43-8d2f-6d1c6a2f9e01",
        61440,
        0,
        1023,
        t,
        t,
        None,
        t,
    )
    .unwrap();
    assert_eq!(
        (l.partition, l.sequences(), l.holder.as_str()),
        (61440, 1024, "")
    );
    let bad = |p: i32, min: i32, token: &str| {
        lease_from_columns(5, token, p, min, 7, t, t, None, t).unwrap_err()
    };
    assert_eq!(bad(65536, 0, &l.token.to_string()), BadRow("partition"));
    assert_eq!(bad(61440, -1, &l.token.to_string()), BadRow("sequence_min"));
    assert_eq!(bad(61440, 0, "x"), BadRow("token"));
}

#[test]
fn renewal_rules() {
    assert_eq!(
        after_renew_error(Some("55000")),
        AfterRenewError::AcquireNew
    );
    assert_eq!(
        after_renew_error(Some("42501")),
        AfterRenewError::AcquireNew
    );
    for other in [
        Some("53400"),
        Some("25006"),
        Some("57P01"),
        Some("08006"),
        None,
    ] {
        assert_eq!(after_renew_error(other), AfterRenewError::Retry);
    }
    // Renew at renew_after, measured from the registry's clock, whatever this host's says.
    let server_now = unit_start(BASE);
    let mut l = lease(1, 61440, (0, 7), (BASE, BASE + 15_000));
    l.renew_after = server_now + Duration::from_secs(20);
    let received = Instant::now();
    let g = LeaseGrant {
        lease: l.clone(),
        server_now,
        received,
    };
    assert_eq!(g.renew_due(), received + Duration::from_secs(20));
    // Never later than halfway to the end, never sooner than 10 ms.
    l.renew_after = server_now + Duration::from_secs(50);
    let g = LeaseGrant {
        lease: l.clone(),
        ..g
    };
    assert_eq!(g.renew_due(), received + Duration::from_secs(30));
    l.renew_after = server_now - Duration::from_secs(1);
    let g = LeaseGrant { lease: l, ..g };
    assert_eq!(g.renew_due(), received + Duration::from_millis(10));
}

#[test]
fn backoff_doubles_to_its_maximum_with_jitter() {
    let config = LeaseConfig::new("x").ttl(Duration::from_secs(8));
    let mut b = config.backoff();
    let delays: Vec<Duration> = (0..10).map(|_| b.next_delay()).collect();
    assert!(delays[0] <= Duration::from_millis(100) && delays[0] >= Duration::from_millis(75));
    // At most a quarter of the TTL (2 s), and not less than three quarters of it.
    assert!(delays[9] <= Duration::from_secs(2) && delays[9] >= Duration::from_millis(1500));
    b.reset();
    assert!(b.next_delay() <= Duration::from_millis(100));
    assert_eq!(config.ttl_micros(), 8_000_000);
}

#[test]
fn sql_uses_named_arguments_and_the_schema() {
    let sql = LeaseConfig::new("x").schema("my \"ids\"").sql();
    assert!(sql.acquire.contains(
        "FROM \"my \"\"ids\"\"\".sno_lease_acquire(holder => $1::text, ttl => $2::int8 * \
         interval '1 microsecond', sequences => $3::int4)"
    ));
    assert!(sql
        .renew
        .contains("sno_lease_renew(lease => $1::int8, token => $2::text::uuid, ttl => $3::int8"));
    assert_eq!(
        sql.release,
        "SELECT \"my \"\"ids\"\"\".sno_lease_release(lease => $1::int8, token => $2::text::uuid)"
    );
    assert!(LeaseConfig::new("x")
        .sql()
        .renew
        .contains("FROM sno_lease_renew("));
}

#[test]
fn threads_share_one_generator_without_a_duplicate() {
    let l = lease(1, 61440, (0, 15), (BASE, BASE + 1_000_000));
    let clock = FakeClock::at_unit(BASE + 10);
    let g = Arc::new(generator(&l, &clock));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (g, clock) = (g.clone(), clock.clone());
            std::thread::spawn(move || {
                let mut ids = Vec::with_capacity(20_000);
                for i in 0..20_000u64 {
                    // Each thread moves the clock now and then, forward and back.
                    if i % 97 == 0 {
                        let u = clock.unit();
                        clock.set_unit(if (i + t) % 3 == 0 { u - 7 } else { u + 3 });
                    }
                    ids.push(g.generate().unwrap());
                }
                ids
            })
        })
        .collect();
    let mut all = HashSet::new();
    for t in threads {
        let ids = t.join().unwrap();
        // Each thread sees its own IDs increasing.
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        for id in ids {
            assert!(l.covers(id));
            assert!(all.insert(id), "duplicate {id}");
        }
    }
    assert_eq!(all.len(), 80_000);
}

#[cfg(unix)]
#[test]
fn a_forked_child_refuses_to_stamp() {
    let l = lease(1, 61440, (0, 7), (BASE, BASE + 1_000_000));
    let clock = FakeClock::at_unit(BASE + 1);
    let g = generator(&l, &clock);
    assert!(g.generate().is_ok());
    assert_eq!(g.process(), std::process::id());
    // SAFETY: the child only reads atomics, calls getpid and exits without unwinding or
    // allocating.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let refused = matches!(
            g.generate(),
            Err(GenerateError::Forked { acquired_by, this_process })
                if acquired_by != this_process && this_process == std::process::id()
        );
        let no_lease = g.lease().is_none() && g.is_forked();
        unsafe { libc::_exit(if refused && no_lease { 0 } else { 1 }) };
    }
    let mut status = 0;
    // SAFETY: waits for the child just forked.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "child: {status}"
    );
    // The parent still stamps.
    assert!(g.generate().is_ok() && !g.is_forked());
}

#[test]
fn system_clock_generates_now() {
    let now = unit_of(SystemTime::now()).unwrap();
    let l = lease(1, 61440, (0, 1023), (now - 10, now + 2500));
    let g = LeasedGenerator::new(&l).unwrap();
    let id = g.generate().unwrap();
    assert!(l.covers(id) && id.units() >= now && id.units() <= now + 250);
}

// --- Property: random clocks, renewals and replacements -------------------------------------

#[derive(Clone, Debug)]
enum Op {
    /// Generate this many IDs after moving the clock by this many units.
    Generate(i64, u16),
    /// Move the clock by nanoseconds (inside a unit).
    Nudge(i64),
    /// Renew the current lease by this many units.
    Renew(u64),
    /// A new lease: window start relative to the clock, length, same partition and slice as
    /// an earlier lease (its window after that one's end) or a new one.
    Replace(i64, u64, bool),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (-300i64..300, 1u16..40).prop_map(|(d, n)| Op::Generate(d, n)),
        2 => (-3i64..3).prop_map(|k| Op::Generate(k, 30)),
        1 => (-4_000_000i64..4_000_000).prop_map(Op::Nudge),
        2 => (0u64..200).prop_map(Op::Renew),
        1 => (-100i64..100, 1u64..400, any::<bool>()).prop_map(|(s, l, r)| Op::Replace(s, l, r)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Whatever the clock does: every ID is inside the window (as known when it was made) and
    /// the slice of a lease the generator was given, none repeats, and they increase.
    #[test]
    fn ids_stay_inside_their_lease_and_never_repeat(
        slice_bits in 3u32..6,
        len in 1u64..300,
        ops in proptest::collection::vec(op(), 1..60),
    ) {
        let size = 1u16 << slice_bits;
        let first = lease(1, 61440, (size, 2 * size - 1), (BASE, BASE + len));
        let clock = FakeClock::at_unit(BASE);
        let g = LeasedGenerator::with_clock(
            &first,
            clock.clone(),
            GeneratorOptions { max_clock_wait: Duration::from_millis(8) },
        ).unwrap();
        // Leases given: number -> (partition, slice, window start, end as renewed so far).
        let mut leases: HashMap<i64, Lease> = HashMap::from([(1, first.clone())]);
        let mut current = 1i64;
        let mut seen = HashSet::new();
        let mut last: Option<Sno> = None;
        // The latest end of every lease per (partition, slice): a later lease on the same
        // slice starts no earlier, as the registry grants.
        let mut ends: HashMap<(u16, u16), u64> = HashMap::from([((61440, size), BASE + len)]);
        for op in ops {
            match op {
                Op::Generate(d, n) => {
                    let u = clock.unit() as i64 + d;
                    clock.set_unit(u.max(1) as u64);
                    for _ in 0..n {
                        match g.generate() {
                            Ok(id) => {
                                let owner = leases.values().find(|l| {
                                    l.partition == id.partition()
                                        && (l.sequence_min..=l.sequence_max).contains(&id.sequence())
                                        && l.covers(id)
                                });
                                prop_assert!(owner.is_some(), "{id:?} outside every lease");
                                prop_assert!(seen.insert(id), "duplicate {id:?}");
                                prop_assert_eq!(id.tick(), 0);
                                if let Some(prev) = last {
                                    prop_assert!(prev < id, "{prev:?} then {id:?}");
                                }
                                last = Some(id);
                            }
                            Err(GenerateError::Expired { unit, expires_at }) => {
                                prop_assert!(unit >= expires_at);
                            }
                            Err(GenerateError::SliceUsedUp { .. })
                            | Err(GenerateError::ClockBehind { .. }) => {}
                            Err(e) => prop_assert!(false, "unexpected {e:?}"),
                        }
                    }
                }
                Op::Nudge(n) => {
                    let now = clock.unix_nanos() + n as i128;
                    clock.set_nanos(now.max(units_to_unix_nanos(1)));
                }
                Op::Renew(k) => {
                    let l = leases.get_mut(&current).unwrap();
                    l.expires_at += Duration::from_millis(4 * k);
                    let key = (l.partition, l.sequence_min);
                    let end = unit_of(l.expires_at).unwrap();
                    let e = ends.get_mut(&key).unwrap();
                    *e = (*e).max(end);
                    g.renewed(l).unwrap();
                }
                Op::Replace(start, len, reuse) => {
                    let id = current + 1;
                    let (partition, min) = if reuse { (61440, size) } else { (61440 + id as u16, 0) };
                    let key = (partition, min);
                    let mut nb = (clock.unit() as i64 + start).max(1) as u64;
                    if let Some(end) = ends.get(&key) {
                        nb = nb.max(*end);
                    }
                    let l = lease(id, partition, (min, min + size - 1), (nb, nb + len));
                    ends.insert(key, nb + len);
                    g.replace(&l).unwrap();
                    leases.insert(id, l);
                    current = id;
                }
            }
        }
    }
}
