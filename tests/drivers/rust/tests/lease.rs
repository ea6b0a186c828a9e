//! The sno crate's leased generators (features `lease-postgres` and `lease-tokio-postgres`)
//! against a real server with the lease functions (sno 0.8.0):
//!
//! 1. `postgres_keepers` and `tokio_postgres_keepers`: two keepers per driver, with a role that
//!    may lease (`sno_lease_rust`, EXECUTE on the three functions) and a 2 s TTL (renewed about
//!    every 0.7 s), stamp IDs for about 5 s; the test inserts them (through another connection)
//!    into a table with the IDs as primary key. Midway the test releases one keeper's lease
//!    from outside: its next renewal gets SQLSTATE 55000 and the keeper switches to a new lease.
//!    Then: no duplicate, every ID inside the window and the slice of a lease of its holder in
//!    `sno_leases` (and of a lease its keeper held), the windows exact 4 ms boundaries, the
//!    renewals adopted (expires_at moved on, stamping went on past the first lease's end), and
//!    after shutdown every lease released and the generator refusing.
//! 2. `errors`: a role without EXECUTE gets 42501, a TTL over `sno.lease_max_ttl` and a slice
//!    that is not a power of two 22023; a lease acquired in a transaction block that rolls back is
//!    kept.
//! 3. `fork`: a forked child's generator refuses (the parent's lease is not its own) and
//!    dropping the keeper there leaves the parent's connection and thread alone: the parent
//!    goes on renewing.
//!
//! `bench_leased_generator_vs_uuid_v7` (ignored; run by hand or by .ci/bench) prints IDs/s of
//! a leased generator against the `uuid` crate's v7 in this process, and the cost of one
//! acquire and one renew.
//!
//! The connection string comes from `SNO_TEST_DSN` (a URL with `user=postgres`, a superuser);
//! the leasing roles are made here.

use sno::lease::{postgres as sync_lease, tokio_postgres as async_lease};
use sno::lease::{GenerateError, KeeperStatus, Lease, LeaseConfig};
use sno::Sno;
use std::collections::HashSet;
use std::str::FromStr;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const ROLE: &str = "sno_lease_rust";
const NO_GRANT_ROLE: &str = "sno_lease_rust_nogrant";

fn dsn() -> String {
    std::env::var("SNO_TEST_DSN").expect(
        "SNO_TEST_DSN is not set: these tests need a PostgreSQL server with the sno extension \
         0.8.0 or later (run tests/client/rust_drivers.sh, or set SNO_TEST_DSN to a database \
         where CREATE EXTENSION sno was run, as a superuser)",
    )
}

fn admin() -> postgres::Client {
    postgres::Client::connect(&dsn(), postgres::NoTls).expect("connect as the superuser")
}

/// The roles, once per run: one that may lease, one that may not.
fn setup() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let mut c = admin();
        for role in [ROLE, NO_GRANT_ROLE] {
            c.batch_execute(&format!(
                "DO $$ BEGIN
                     IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{role}') THEN
                         CREATE ROLE {role} LOGIN;
                     END IF;
                 END $$"
            ))
            .unwrap();
        }
        c.batch_execute(&format!(
            "GRANT EXECUTE ON FUNCTION sno_lease_acquire(text, interval, int4),
                 sno_lease_renew(int8, uuid, interval), sno_lease_release(int8, uuid) TO {ROLE}"
        ))
        .unwrap();
    });
}

fn sync_config(role: &str) -> postgres::Config {
    let mut c = postgres::Config::from_str(&dsn()).expect("SNO_TEST_DSN");
    c.user(role);
    c
}

fn async_config(role: &str) -> tokio_postgres::Config {
    let mut c = tokio_postgres::Config::from_str(&dsn()).expect("SNO_TEST_DSN");
    c.user(role);
    c
}

/// A holder name of this run (leases of earlier runs stay in the view).
fn holder(what: &str) -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    format!("rust-{what}-{}-{t}", std::process::id())
}

fn sync_keeper(
    config: LeaseConfig,
    role: &str,
) -> Result<sync_lease::LeaseKeeper, sync_lease::Error> {
    let pg = sync_config(role);
    sync_lease::LeaseKeeper::start(config, move || pg.connect(postgres::NoTls))
}

async fn async_keeper(
    config: LeaseConfig,
    role: &str,
) -> Result<async_lease::LeaseKeeper, async_lease::Error> {
    let pg = async_config(role);
    async_lease::LeaseKeeper::start(config, move || {
        let pg = pg.clone();
        async move {
            let (client, connection) = pg.connect(tokio_postgres::NoTls).await?;
            tokio::spawn(connection);
            Ok(client)
        }
    })
    .await
}

const RUN: Duration = Duration::from_secs(5);
const TTL: Duration = Duration::from_secs(2);
/// IDs a batch, per keeper: keeper 0 has a slice of 8 (its batches use three units, running
/// ahead of the clock; at most 2,000 IDs a second sustained), keeper 1 a slice of 1024.
const BATCH: [usize; 2] = [20, 200];

/// What one test run saw of a keeper.
#[derive(Default)]
struct Seen {
    leases: Vec<Lease>,
    ids: Vec<Sno>,
}

impl Seen {
    fn note(&mut self, lease: Option<Lease>) {
        let lease = lease.expect("a keeper that runs has a lease");
        match self.leases.iter_mut().find(|l| l.lease == lease.lease) {
            Some(l) => *l = lease,
            None => self.leases.push(lease),
        }
    }
}

/// Checks a run's table against `sno_leases`: no duplicate, every ID inside the window and the
/// slice of one of the holder's leases, the leases' windows exact unit boundaries, and (after
/// shutdown) all released.
fn check_table(table: &str, holders: &[String], seen: &[Seen]) {
    let mut c = admin();
    let holders: Vec<&str> = holders.iter().map(|s| s.as_str()).collect();
    let row = c
        .query_one(
            &format!(
                "SELECT count(*), count(DISTINCT id),
                        count(*) FILTER (WHERE NOT EXISTS (
                            SELECT FROM sno_leases l
                             WHERE l.holder = ANY($1)
                               AND l.partition = sno_partition(i.id)
                               AND sno_sequence(i.id) BETWEEN l.sequence_min AND l.sequence_max
                               AND sno_time(i.id) >= l.not_before
                               AND sno_time(i.id) < l.expires_at))
                   FROM {table} i"
            ),
            &[&holders],
        )
        .unwrap();
    let (n, distinct, outside): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
    let stamped: usize = seen.iter().map(|s| s.ids.len()).sum();
    assert_eq!(n as usize, stamped, "{table}: rows inserted");
    assert!(n > 1000, "{table}: too few IDs ({n})");
    assert_eq!(distinct, n, "{table}: duplicates");
    assert_eq!(
        outside, 0,
        "{table}: IDs outside every lease of their holder"
    );

    let row = c
        .query_one(
            "SELECT count(*),
                    count(*) FILTER (WHERE released_at IS NULL),
                    count(*) FILTER (WHERE (extract(epoch FROM not_before) * 1000000) % 4000 <> 0
                                        OR (extract(epoch FROM expires_at) * 1000000) % 4000 <> 0
                                        OR not_before >= expires_at)
               FROM sno_leases WHERE holder = ANY($1)",
            &[&holders],
        )
        .unwrap();
    let (leases, unreleased, inexact): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
    let known: usize = seen.iter().map(|s| s.leases.len()).sum();
    assert_eq!(leases as usize, known, "{table}: leases in sno_leases");
    assert_eq!(unreleased, 0, "{table}: leases not released after shutdown");
    assert_eq!(inexact, 0, "{table}: windows that are not whole 4 ms units");

    // Each keeper's IDs are inside the leases it held (as it last knew them).
    for s in seen {
        for id in &s.ids {
            assert!(
                s.leases.iter().any(|l| l.covers(*id)),
                "{table}: {id} is outside the keeper's leases"
            );
        }
    }
}

/// The end of a run's assertions on the keepers: `first` the keepers' leases at the start;
/// keeper 0's lease was released from outside midway.
fn check_keepers(first: &[Lease], last: &[Lease], statuses: &[KeeperStatus], table: &str) {
    // Keeper 0 switched to a new lease after its release.
    assert_ne!(
        last[0].lease, first[0].lease,
        "{table}: keeper 0 kept its released lease"
    );
    assert_eq!(
        statuses[0].acquired, 2,
        "{table}: keeper 0's leases: {:?}",
        statuses[0]
    );
    // Keeper 1 renewed its one lease all along (a renewal about every 0.7 s), and stamped past
    // the first lease's end.
    assert_eq!(
        last[1].lease, first[1].lease,
        "{table}: keeper 1's lease changed"
    );
    assert!(
        statuses[1].renewals >= 4,
        "{table}: keeper 1: {:?}",
        statuses[1]
    );
    assert!(
        last[1].expires_at >= first[1].expires_at + Duration::from_secs(2),
        "{table}: keeper 1's window did not grow"
    );
    assert_eq!(
        statuses[1].failures, 0,
        "{table}: keeper 1: {:?}",
        statuses[1]
    );
}

fn release_from_outside(lease: &Lease) {
    admin()
        .execute(
            "SELECT sno_lease_release(lease => $1, token => $2::text::uuid)",
            &[&lease.lease, &lease.token.to_string()],
        )
        .unwrap();
}

#[test]
fn postgres_keepers() {
    setup();
    let table = "lease_ids_postgres";
    let mut db = admin();
    db.batch_execute(&format!(
        "DROP TABLE IF EXISTS {table}; CREATE TABLE {table} (id sno PRIMARY KEY, keeper int4)"
    ))
    .unwrap();
    let holders = [holder("postgres-0"), holder("postgres-1")];
    let keepers = [
        sync_keeper(LeaseConfig::new(&holders[0]).ttl(TTL).sequences(8), ROLE).unwrap(),
        sync_keeper(LeaseConfig::new(&holders[1]).ttl(TTL), ROLE).unwrap(),
    ];
    let first: Vec<Lease> = keepers.iter().map(|k| k.lease().unwrap()).collect();
    let mut seen = [Seen::default(), Seen::default()];
    let t0 = Instant::now();
    let mut released = false;
    while t0.elapsed() < RUN {
        for (i, k) in keepers.iter().enumerate() {
            seen[i].note(k.lease());
            let ids: Vec<Sno> = (0..BATCH[i])
                .map(|_| k.generate().unwrap_or_else(|e| panic!("keeper {i}: {e}")))
                .collect();
            db.execute(
                &format!("INSERT INTO {table} SELECT unnest($1::sno[]), $2"),
                &[&ids, &(i as i32)],
            )
            .unwrap();
            seen[i].ids.extend(ids);
            seen[i].note(k.lease());
        }
        if !released && t0.elapsed() > RUN / 3 {
            release_from_outside(&first[0]);
            released = true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let last: Vec<Lease> = keepers.iter().map(|k| k.lease().unwrap()).collect();
    let statuses: Vec<_> = keepers.iter().map(|k| k.status()).collect();
    let generator = keepers[1].generator().clone();
    for k in keepers {
        k.shutdown();
    }
    assert_eq!(generator.generate(), Err(GenerateError::NoLease));
    check_keepers(&first, &last, &statuses, table);
    check_table(table, &holders, &seen);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokio_postgres_keepers() {
    tokio::task::spawn_blocking(setup).await.unwrap();
    let table = "lease_ids_tokio_postgres";
    let (db, connection) = tokio_postgres::connect(&dsn(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    db.batch_execute(&format!(
        "DROP TABLE IF EXISTS {table}; CREATE TABLE {table} (id sno PRIMARY KEY, keeper int4)"
    ))
    .await
    .unwrap();
    let holders = [holder("tokio-postgres-0"), holder("tokio-postgres-1")];
    let keepers = [
        async_keeper(LeaseConfig::new(&holders[0]).ttl(TTL).sequences(8), ROLE)
            .await
            .unwrap(),
        async_keeper(LeaseConfig::new(&holders[1]).ttl(TTL), ROLE)
            .await
            .unwrap(),
    ];
    let first: Vec<Lease> = keepers.iter().map(|k| k.lease().unwrap()).collect();
    let mut seen = [Seen::default(), Seen::default()];
    let t0 = Instant::now();
    let mut released = false;
    while t0.elapsed() < RUN {
        for (i, k) in keepers.iter().enumerate() {
            seen[i].note(k.lease());
            let ids: Vec<Sno> = (0..BATCH[i])
                .map(|_| k.generate().unwrap_or_else(|e| panic!("keeper {i}: {e}")))
                .collect();
            db.execute(
                &format!("INSERT INTO {table} SELECT unnest($1::sno[]), $2"),
                &[&ids, &(i as i32)],
            )
            .await
            .unwrap();
            seen[i].ids.extend(ids);
            seen[i].note(k.lease());
        }
        if !released && t0.elapsed() > RUN / 3 {
            let lease = first[0].clone();
            tokio::task::spawn_blocking(move || release_from_outside(&lease))
                .await
                .unwrap();
            released = true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let last: Vec<Lease> = keepers.iter().map(|k| k.lease().unwrap()).collect();
    let statuses: Vec<_> = keepers.iter().map(|k| k.status()).collect();
    let generator = keepers[1].generator().clone();
    for k in keepers {
        k.shutdown().await;
    }
    assert_eq!(generator.generate(), Err(GenerateError::NoLease));
    check_keepers(&first, &last, &statuses, table);
    let holders = holders.to_vec();
    tokio::task::spawn_blocking(move || check_table(table, &holders, &seen))
        .await
        .unwrap();
}

#[test]
fn errors() {
    setup();
    let config = || LeaseConfig::new(holder("errors")).ttl(TTL);
    let code = |r: Result<sync_lease::LeaseKeeper, sync_lease::Error>| {
        r.err().and_then(|e| e.sqlstate().map(str::to_owned))
    };
    assert_eq!(
        code(sync_keeper(config(), NO_GRANT_ROLE)).as_deref(),
        Some("42501")
    );
    let long = config().ttl(Duration::from_secs(3600));
    assert_eq!(code(sync_keeper(long, ROLE)).as_deref(), Some("22023"));
    assert_eq!(
        code(sync_keeper(config().sequences(12), ROLE)).as_deref(),
        Some("22023")
    );
    assert_eq!(
        code(sync_keeper(config().sequences(4), ROLE)).as_deref(),
        Some("22023")
    );

    // Inside a transaction block that rolls back: the lease is kept (the registry granted it in
    // a transaction of its own), and its token renews it.
    let mut c = sync_config(ROLE).connect(postgres::NoTls).unwrap();
    c.batch_execute("BEGIN").unwrap();
    let kept = sync_lease::acquire(&mut c, &config()).unwrap();
    c.batch_execute("ROLLBACK").unwrap();
    let renewed = sync_lease::renew(&mut c, &config(), &kept.lease).unwrap();
    assert_eq!(renewed.lease.lease, kept.lease.lease);
    sync_lease::release(&mut c, &config(), &kept.lease).unwrap();
    // A wrong token: 42501; then the lease released.
    let g = sync_lease::acquire(&mut c, &config()).unwrap();
    let mut wrong = g.lease.clone();
    wrong.token.0[0] ^= 1;
    let e = sync_lease::renew(&mut c, &config(), &wrong).unwrap_err();
    assert_eq!(e.sqlstate(), Some("42501"), "{e}");
    sync_lease::release(&mut c, &config(), &g.lease).unwrap();
    sync_lease::release(&mut c, &config(), &g.lease).unwrap(); // idempotent
    let e = sync_lease::renew(&mut c, &config(), &g.lease).unwrap_err();
    assert_eq!(e.sqlstate(), Some("55000"), "{e}");

    // The same through tokio-postgres.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let e = async_keeper(config(), NO_GRANT_ROLE).await.unwrap_err();
        assert_eq!(e.sqlstate(), Some("42501"), "{e}");
        let e = async_keeper(config().sequences(3), ROLE).await.unwrap_err();
        assert_eq!(e.sqlstate(), Some("22023"), "{e}");
    });
}

#[cfg(unix)]
#[test]
fn fork() {
    setup();
    let keeper = sync_keeper(
        LeaseConfig::new(holder("fork")).ttl(Duration::from_millis(1500)),
        ROLE,
    )
    .unwrap();
    assert!(keeper.generate().is_ok());
    let before = keeper.status();
    // SAFETY: the child reads atomics, calls getpid, forgets the keeper (nothing freed) and
    // exits without unwinding.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let refused = matches!(keeper.generate(), Err(GenerateError::Forked { .. }));
        drop(keeper);
        unsafe { libc::_exit(if refused { 0 } else { 1 }) };
    }
    let mut status = 0;
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the child's generator did not refuse"
    );
    // The parent's keeper goes on: two renewals or more (one every 0.5 s), on the same
    // connection.
    std::thread::sleep(Duration::from_millis(2000));
    let after = keeper.status();
    assert!(after.renewals >= before.renewals + 2, "{after:?}");
    assert_eq!(after.failures, 0, "{after:?}");
    assert!(keeper.generate().is_ok());
    keeper.shutdown();
}

/// IDs per second of one leased generator against `uuid::Uuid::now_v7()`, in this process,
/// one thread and two threads sharing one generator; the median cost of one acquire and one
/// renew. Ignored by default:
///
/// `SNO_TEST_DSN=... cargo test --manifest-path tests/drivers/rust/Cargo.toml --test lease \
///  -- --ignored --nocapture bench_leased_generator_vs_uuid_v7`
///
/// (sno and uuid are built with opt-level 3 in this project's dev profile, see Cargo.toml.)
/// Prints `bench:` lines, `name value unit`.
#[test]
#[ignore]
fn bench_leased_generator_vs_uuid_v7() {
    setup();
    let n: u64 = std::env::var("SNO_BENCH_LEASE_IDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5_000_000);
    let median = |mut v: Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    // Acquire and renew, each 21 times on one connection.
    let config = LeaseConfig::new(holder("bench")).ttl(Duration::from_secs(60));
    let mut c = sync_config(ROLE).connect(postgres::NoTls).unwrap();
    let (mut acquires, mut renews, mut leases) = (vec![], vec![], vec![]);
    for _ in 0..21 {
        let t = Instant::now();
        leases.push(sync_lease::acquire(&mut c, &config).unwrap().lease);
        acquires.push(t.elapsed());
    }
    for _ in 0..21 {
        let t = Instant::now();
        sync_lease::renew(&mut c, &config, &leases[0]).unwrap();
        renews.push(t.elapsed());
    }
    for l in &leases {
        sync_lease::release(&mut c, &config, l).unwrap();
    }
    let acquire = median(acquires);
    let renew = median(renews);

    // Generation: a whole partition's slice (65,536 a unit), so the window is not the limit.
    let keeper = sync_keeper(config.clone().sequences(65536), ROLE).unwrap();
    let g = keeper.generator().clone();
    let rate = |threads: u64, f: &(dyn Fn() + Sync)| {
        let t = Instant::now();
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| {
                    for _ in 0..n / threads {
                        f();
                    }
                });
            }
        });
        n as f64 / t.elapsed().as_secs_f64()
    };
    let sno = || {
        std::hint::black_box(g.generate().unwrap());
    };
    let uuid = || {
        std::hint::black_box(uuid::Uuid::now_v7());
    };
    rate(1, &sno); // warm-up
    rate(1, &uuid);
    let mut ids: HashSet<Sno> = HashSet::new();
    for _ in 0..100_000 {
        assert!(ids.insert(g.generate().unwrap()));
    }
    let (sno1, uuid1) = (rate(1, &sno), rate(1, &uuid));
    let (sno2, uuid2) = (rate(2, &sno), rate(2, &uuid));
    // The first ID after a pause of 1 s (nothing made meanwhile), 5 times each.
    let after_pause = |f: &dyn Fn()| {
        median(
            (0..5)
                .map(|_| {
                    std::thread::sleep(Duration::from_secs(1));
                    let t = Instant::now();
                    f();
                    t.elapsed()
                })
                .collect(),
        )
    };
    let (sno_paused, uuid_paused) = (after_pause(&sno), after_pause(&uuid));
    keeper.shutdown();
    println!("bench: leased_sno_ids_per_s_1_thread {sno1:.0} ids/s");
    println!("bench: uuid_v7_ids_per_s_1_thread {uuid1:.0} ids/s");
    println!("bench: ratio_1_thread {:.2} sno/uuid", sno1 / uuid1);
    println!("bench: leased_sno_ids_per_s_2_threads {sno2:.0} ids/s");
    println!("bench: uuid_v7_ids_per_s_2_threads {uuid2:.0} ids/s");
    println!("bench: ratio_2_threads {:.2} sno/uuid", sno2 / uuid2);
    println!(
        "bench: leased_sno_after_pause_median {:.3} us",
        sno_paused.as_secs_f64() * 1e6
    );
    println!(
        "bench: uuid_v7_after_pause_median {:.3} us",
        uuid_paused.as_secs_f64() * 1e6
    );
    println!(
        "bench: lease_acquire_median {:.3} ms",
        acquire.as_secs_f64() * 1e3
    );
    println!(
        "bench: lease_renew_median {:.3} ms",
        renew.as_secs_f64() * 1e3
    );
}

// doc/services.md's Rust block, as printed (tests/drivers/rust/build.rs wraps it in
// `doc_lease_keeper`, which returns the ID it made).
include!(concat!(env!("OUT_DIR"), "/lease-keeper.rs"));

/// The manual's keeper, with DATABASE_URL set to the test's server: it takes a lease, makes an
/// ID in the lease's partition and slice, and its shutdown releases the lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_manuals_keeper() {
    std::env::set_var("DATABASE_URL", dsn());
    let id = doc_lease_keeper().await.unwrap();
    let (db, connection) = tokio_postgres::connect(&dsn(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let row = db
        .query_one(
            "SELECT count(*) FROM sno_leases WHERE holder = 'orders-api' AND state = 'released' \
             AND partition = $1 AND $2 BETWEEN sequence_min AND sequence_max",
            &[&i32::from(id.partition()), &i32::from(id.sequence())],
        )
        .await
        .unwrap();
    assert_eq!(
        row.get::<_, i64>(0),
        1,
        "{id}: no released lease of 'orders-api' holds it"
    );
}
