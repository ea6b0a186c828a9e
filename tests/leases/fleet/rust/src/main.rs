//! The Rust member of the fleet trial (tests/client/lease_fleet.sh): sno::lease's blocking
//! `LeaseKeeper` (feature `lease-postgres`) on one lease at a time, one thread calling
//! `generate()`.
//!
//!     sno-lease-fleet-rust --dsn DSN --holder NAME --seconds S --ttl T --out IDS --leases LEASES
//!         [--data-dsn DSN --table T] [--rate N]
//!
//! It records what the trial needs to check every ID against the lease it was stamped in, also
//! for leases the promoted registry never heard of (the lost tail of an asynchronous failover):
//!   --leases: a line per lease it was given and each later expires_at it was told:
//!             TOKEN, LEASE, PARTITION, SEQUENCE_MIN, SEQUENCE_MAX, NOT_BEFORE, EXPIRES_AT, HOLDER
//!             (tab-separated);
//!   --out:    a line per ID, "ID<tab>TOKEN", written before the ID goes anywhere else (a process
//!             killed with SIGKILL leaves in the file every ID it let out of it);
//!   --table:  then each batch copied into the table (id, lease, batch, token) of --data-dsn.
//!
//! The lease of an ID: `generate()` does not say (the generator may still stamp under the lease
//! it replaced while the clock is before the new one's window), so it is the latest lease the
//! keeper was seen holding (read after every ID) whose partition and slice hold the ID and whose
//! not_before is not after it. Whether the ID is before the lease's end is the trial's check.
//!
//! Starting the keeper is retried (every 200 ms) while the registry is down or a standby.
//! Refusals are counted, the first few printed. At the end (--seconds, or SIGTERM) the keeper is
//! shut down (its lease released) and one line goes to stderr:
//! "fleet-rs: ids=N refused=N leases=N wall=UNIX-TIME" (this process's clock).

use sno::lease::postgres::LeaseKeeper;
use sno::lease::{unit_of, Lease, LeaseConfig};
use sno::Sno;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_term(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

struct Args {
    dsn: String,
    holder: String,
    seconds: f64,
    ttl: f64,
    out: String,
    leases: String,
    data_dsn: Option<String>,
    table: Option<String>,
    rate: u32,
}

fn args() -> Args {
    let mut a = Args {
        dsn: String::new(),
        holder: String::new(),
        seconds: 10.0,
        ttl: 2.0,
        out: String::new(),
        leases: String::new(),
        data_dsn: None,
        table: None,
        rate: 1000,
    };
    let v: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i + 1 < v.len() {
        let val = v[i + 1].clone();
        match v[i].as_str() {
            "--dsn" => a.dsn = val,
            "--holder" => a.holder = val,
            "--seconds" => a.seconds = val.parse().expect("--seconds"),
            "--ttl" => a.ttl = val.parse().expect("--ttl"),
            "--out" => a.out = val,
            "--leases" => a.leases = val,
            "--data-dsn" => a.data_dsn = Some(val),
            "--table" => a.table = Some(val),
            "--rate" => a.rate = val.parse().expect("--rate"),
            o => panic!("unknown option {o}"),
        }
        i += 2;
    }
    assert!(
        !a.dsn.is_empty() && !a.holder.is_empty() && !a.out.is_empty() && !a.leases.is_empty(),
        "--dsn, --holder, --out and --leases are needed"
    );
    a
}

/// A time as PostgreSQL reads it: 2026-01-02T03:04:05.678901Z.
fn iso(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).expect("after 1970");
    let (secs, micros) = (d.as_secs() as i64, d.subsec_micros());
    let (days, rem) = (secs.div_euclid(86400), secs.rem_euclid(86400));
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{micros:06}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

fn clock() -> String {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let s = d.as_secs() % 86400;
    format!(
        "{:02}:{:02}:{:02}.{:03}",
        s / 3600,
        s / 60 % 60,
        s % 60,
        d.subsec_millis()
    )
}

/// Every lease the keeper was seen holding, the latest expires_at it was told, in order.
struct Book {
    leases: Vec<Lease>,
    dirty: Vec<Lease>,
}

impl Book {
    fn note(&mut self, l: Option<Lease>) {
        let Some(l) = l else { return };
        match self.leases.iter_mut().find(|k| k.token == l.token) {
            Some(k) if k.expires_at >= l.expires_at => {}
            Some(k) => {
                k.expires_at = l.expires_at;
                self.dirty.push(l);
            }
            None => {
                self.leases.push(l.clone());
                self.dirty.push(l);
            }
        }
    }

    /// The lease of an ID (see the module's comment).
    fn of(&self, id: Sno) -> Option<&Lease> {
        self.leases.iter().rev().find(|l| {
            id.partition() == l.partition
                && (l.sequence_min..=l.sequence_max).contains(&id.sequence())
                && unit_of(l.not_before).is_some_and(|nb| nb <= id.units())
        })
    }
}

fn main() {
    let a = args();
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        libc::signal(
            libc::SIGTERM,
            on_term as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
    }
    let deadline = Instant::now() + Duration::from_secs_f64(a.seconds);
    let open = |p: &str| -> File {
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
            .expect("open an output file")
    };
    let (mut ids_f, mut leases_f) = (open(&a.out), open(&a.leases));
    let mut data = a
        .data_dsn
        .as_ref()
        .map(|d| postgres::Client::connect(d, postgres::NoTls).expect("the data server"));

    let config = LeaseConfig::new(a.holder.clone()).ttl(Duration::from_secs_f64(a.ttl));
    let keeper = loop {
        let dsn = a.dsn.clone();
        match LeaseKeeper::start(config.clone(), move || {
            postgres::Client::connect(&dsn, postgres::NoTls)
        }) {
            Ok(k) => break k,
            Err(e) => {
                eprintln!("{} acquire: {e} (again in 200 ms)", clock());
                std::thread::sleep(Duration::from_millis(200));
                if STOP.load(Ordering::Relaxed) || Instant::now() >= deadline {
                    eprintln!("fleet-rs: ids=0 refused=0 leases=0 wall=0");
                    return;
                }
            }
        }
    };

    let mut book = Book {
        leases: Vec::new(),
        dirty: Vec::new(),
    };
    book.note(keeper.lease());
    let per_tick = (a.rate / 100).max(1);
    let (mut ids, mut refused, mut batches) = (0u64, 0u64, 0u64);
    let mut batch: Vec<(Sno, Option<Lease>)> = Vec::new();
    let mut last_ok = true;
    let mut last_flush = Instant::now();
    let mut flush = |book: &mut Book, batch: &mut Vec<(Sno, Option<Lease>)>, batches: &mut u64| {
        let mut s = String::new();
        for l in book.dirty.drain(..) {
            s += &format!(
                "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n",
                l.token,
                l.lease,
                l.partition,
                l.sequence_min,
                l.sequence_max,
                iso(l.not_before),
                iso(l.expires_at),
                a.holder
            );
        }
        leases_f
            .write_all(s.as_bytes())
            .expect("write the leases file");
        if batch.is_empty() {
            return;
        }
        let mut s = String::new();
        for (id, l) in batch.iter() {
            s += &format!(
                "{id}\t{}\n",
                l.as_ref().map(|l| l.token.to_string()).unwrap_or_default()
            );
        }
        ids_f.write_all(s.as_bytes()).expect("write the IDs file");
        if let (Some(c), Some(t)) = (data.as_mut(), a.table.as_ref()) {
            *batches += 1;
            let label = format!("{}/{}", a.holder, batches);
            let mut rows = String::new();
            for (id, l) in batch.iter() {
                match l {
                    Some(l) => rows += &format!("{id}\t{}\t{label}\t{}\n", l.lease, l.token),
                    None => rows += &format!("{id}\t\\N\t{label}\t\\N\n"),
                }
            }
            for _ in 0..300 {
                let r = (|| -> Result<u64, Box<dyn std::error::Error>> {
                    let mut w =
                        c.copy_in(&format!("COPY {t} (id, lease, batch, token) FROM STDIN"))?;
                    w.write_all(rows.as_bytes())?;
                    Ok(w.finish()?)
                })();
                match r {
                    Ok(_) => break,
                    Err(e) => {
                        eprintln!("{} insert: {e}", clock());
                        std::thread::sleep(Duration::from_millis(200));
                    }
                }
            }
        }
        batch.clear();
    };

    while !STOP.load(Ordering::Relaxed) && Instant::now() < deadline {
        for _ in 0..per_tick {
            match keeper.generate() {
                Ok(id) => {
                    last_ok = true;
                    book.note(keeper.lease());
                    ids += 1;
                    batch.push((id, book.of(id).cloned()));
                }
                Err(e) => {
                    refused += 1;
                    if refused <= 5 || last_ok {
                        eprintln!("{} refused ({refused}): {e}", clock());
                    }
                    last_ok = false;
                    std::thread::sleep(Duration::from_millis(10));
                    break;
                }
            }
        }
        if batch.len() >= 500 || last_flush.elapsed() >= Duration::from_millis(50) {
            flush(&mut book, &mut batch, &mut batches);
            last_flush = Instant::now();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    book.note(keeper.lease());
    flush(&mut book, &mut batch, &mut batches);
    let n = book.leases.len();
    keeper.shutdown();
    let wall = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64();
    eprintln!("fleet-rs: ids={ids} refused={refused} leases={n} wall={wall:.3}");
}
