//! A client-side generator sharing the server's partition on the other slice of the sequence
//! pool (muyo/sno's "sequence sharding"): the sno crate's own timeline
//! (`sno::generator::timeline`, what a Rust service would embed) makes IDs with partition
//! `SNO_CLIENT_PARTITION` and sequence numbers `SNO_CLIENT_SLICE` ("min-max") for
//! `SNO_CLIENT_SECONDS` seconds, on the real clock, and inserts them into the table `shared`
//! (`id sno PRIMARY KEY, origin text`) while the server inserts `sno_generate()` into it.
//!
//! Every batch is inserted with `ON CONFLICT DO NOTHING`; the rows not inserted are conflicts
//! with the server's IDs. The test prints them and, with `SNO_EXPECT_CONFLICTS=0` (slices
//! apart), requires none; with `report` (the control run on the server's own slice, where the
//! script counts the conflicts of both sides and requires some) it only prints them.
//!
//! Run by tests/client/sequence_slice.sh; without its variables the test fails.

use sno::generator::cursor::{Cursor, Slice};
use sno::generator::timeline::{Grant, Timeline};
use sno::id::time::units_from_timespec;
use sno::Sno;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: run tests/client/sequence_slice.sh")
    })
}

/// The wall clock in 4 ms units.
fn clock_units() -> u64 {
    let d = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    units_from_timespec(d.as_secs() as i64, d.subsec_nanos() as i64).expect("clock in range")
}

/// A client generator: the crate's timeline and cursor, kept in process memory (a service
/// without durable state relies on its clock not going back while it runs).
struct Generator {
    tl: Timeline,
    cursor: Cursor,
    partition: u16,
}

impl Generator {
    fn next(&mut self) -> Sno {
        loop {
            let now = clock_units();
            if let Some((unit, tick, seq)) = self.cursor.take(now) {
                return Sno::new(unit, tick, 0, self.partition, seq);
            }
            match self.tl.advance(&self.cursor, now, false) {
                Grant::Open { .. } => {}
                Grant::Write { .. } => {
                    // No state file here: the horizon is "written" to memory.
                    let p = self.tl.due(500, 250).unwrap_or(self.tl.durable());
                    self.tl.written(p);
                }
                Grant::FullUnit { .. } | Grant::ClockBehind { .. } => {
                    std::thread::sleep(Duration::from_micros(500))
                }
            }
        }
    }
}

#[tokio::test(flavor = "current_thread")]
async fn client_generator_on_the_other_slice() {
    let (min, max) = var("SNO_CLIENT_SLICE")
        .split_once('-')
        .map(|(a, b)| (a.parse::<i64>().unwrap(), b.parse::<i64>().unwrap()))
        .expect("SNO_CLIENT_SLICE is min-max");
    let slice = Slice::new(min, max).expect("a valid slice");
    let partition: u16 = var("SNO_CLIENT_PARTITION").parse().unwrap();
    let seconds: u64 = var("SNO_CLIENT_SECONDS").parse().unwrap();
    let expect = var("SNO_EXPECT_CONFLICTS");

    let (client, conn) = tokio_postgres::connect(&var("SNO_TEST_DSN"), tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    let insert = client
        .prepare(
            "INSERT INTO shared (id, origin) SELECT unnest($1::sno[]), 'client' \
             ON CONFLICT (id) DO NOTHING",
        )
        .await
        .unwrap();

    let mut g = Generator {
        tl: Timeline::new(slice),
        cursor: Cursor::new(slice),
        partition,
    };
    let (mut made, mut inserted) = (0u64, 0u64);
    let until = Instant::now() + Duration::from_secs(seconds);
    while Instant::now() < until {
        let batch: Vec<Sno> = (0..500).map(|_| g.next()).collect();
        assert!(batch.iter().all(|id| id.sequence() >= slice.min && id.sequence() <= slice.max));
        made += batch.len() as u64;
        inserted += client.execute(&insert, &[&batch]).await.expect("insert");
    }
    let conflicts = made - inserted;
    println!("client IDs: {made} made, {inserted} inserted, {conflicts} conflicts");
    match expect.as_str() {
        "0" => assert_eq!(conflicts, 0, "IDs of the client's slice collided with the server's"),
        "report" => {}
        other => panic!("SNO_EXPECT_CONFLICTS={other}: 0 or report"),
    }
}
