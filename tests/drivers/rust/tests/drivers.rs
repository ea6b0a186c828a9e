//! The sno crate's `postgres` (tokio-postgres) and `sqlx` features against a real PostgreSQL
//! server with the extension, over the binary protocol (and, for sqlx, the text protocol too).
//!
//! Each driver, in a table of its own:
//! 1. inserts every ID the Go library produced (tests/data/ids.csv) as a `Sno`, with an
//!    `Option<Sno>` (Some, including Some(zero), and None) and a `Vec<Sno>` (empty to three),
//!    as parameters; the server must see the same values (compared with their text form, which
//!    the test sends separately as text);
//! 2. reads them back as those Rust types;
//! 3. finds each row with `WHERE id = $1`, a set with `= ANY($1)` and NULLs with
//!    `IS NOT DISTINCT FROM $1`;
//! 4. inserts `sno_generate(7)` server-side and checks the fields of the `Sno` it reads against
//!    `sno_time`, `sno_meta`, `sno_partition`, `sno_sequence` and `sno_tick`;
//! 5. gets an error, not garbage, for columns of other types read as `Sno` (a 10-byte text and
//!    a 10-byte bytea among them), for NULL read as a plain `Sno`, and (tokio-postgres) for a
//!    `Sno` bound to a parameter of another type.
//!
//! The server's JSON of `sno` values is also read with the crate's serde support.
//!
//! The connection string comes from `SNO_TEST_DSN` (a URL such as
//! `postgresql:///db?host=/socket/dir&port=5432&user=postgres`); without it the tests fail.

use serde::Deserialize;
use sno::id::time::units_to_unix_millis;
use sno::Sno;

fn dsn() -> String {
    std::env::var("SNO_TEST_DSN").expect(
        "SNO_TEST_DSN is not set: these tests need a PostgreSQL server with the sno extension \
         (run tests/client/rust_drivers.sh, or set SNO_TEST_DSN to a database where \
         CREATE EXTENSION sno was run)",
    )
}

/// One row of the test table, as the test means it.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    id: Sno,
    parent: Option<Sno>,
    tags: Vec<Sno>,
    /// The id's text, as the Go library printed it.
    enc: String,
}

/// The Go library's IDs (each once), with parents and tags made from them.
fn rows() -> Vec<Row> {
    let mut ids: Vec<(Sno, String)> = Vec::new();
    for line in include_str!("../../../data/ids.csv").lines().skip(1) {
        let Some((_, rest)) = line.split_once(',') else {
            continue;
        };
        let enc = rest.split(',').next().unwrap().to_string();
        let id: Sno = enc.parse().expect("a Go ID");
        if !ids.iter().any(|(x, _)| *x == id) {
            ids.push((id, enc));
        }
    }
    assert!(ids.len() >= 60, "expected the whole vector file");
    (0..ids.len())
        .map(|i| Row {
            id: ids[i].0,
            // None, and Some of the previous ID (Some(zero) for the second row).
            parent: (i % 2 == 1).then(|| ids[i - 1].0),
            tags: ids[i..].iter().take(i % 4).map(|x| x.0).collect(),
            enc: ids[i].1.clone(),
        })
        .collect()
}

/// Compares rows read back with the rows written (in id order), one row at a time so a
/// failure shows the first row that differs.
fn assert_rows(got: &[Row], written: &[Row], what: &str) {
    let mut want = written.to_vec();
    want.sort_by_key(|r| r.id);
    assert_eq!(got.len(), want.len(), "{what}: number of rows");
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g, w, "{what}");
    }
}

/// The server's text of a row's parent and tags, as the test expects it.
fn expected_text(r: &Row) -> (Option<String>, String) {
    let tags: Vec<String> = r.tags.iter().map(Sno::to_string).collect();
    (
        r.parent.map(|p| p.to_string()),
        format!("{{{}}}", tags.join(",")),
    )
}

fn create_table(t: &str) -> String {
    format!(
        "DROP TABLE IF EXISTS {t};
         CREATE TABLE {t} (id sno PRIMARY KEY, parent sno, tags sno[] NOT NULL, enc text NOT NULL)"
    )
}

/// Checks what the server computed about a generated ID against the Rust value.
fn check_generated(id: Sno, server: (i64, i32, i32, i32, i32, String)) {
    let (millis, meta, partition, sequence, tick, text) = server;
    assert_eq!(millis, units_to_unix_millis(id.units()), "sno_time of {id}");
    assert_eq!(meta, 7, "sno_meta");
    assert_eq!(meta, i32::from(id.meta()), "sno_meta of {id}");
    assert_eq!(
        partition,
        i32::from(id.partition()),
        "sno_partition of {id}"
    );
    assert_eq!(sequence, i32::from(id.sequence()), "sno_sequence of {id}");
    assert_eq!(tick, i32::from(id.tick()), "sno_tick of {id}");
    assert_eq!(text, id.to_string(), "text of {id}");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    assert!(
        (millis - now).abs() < 86_400_000,
        "generated {id} at {millis} ms, now is {now} ms"
    );
}

/// An error and its sources, for messages (tokio-postgres puts the reason in the source).
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        s.push_str(": ");
        s.push_str(&cause.to_string());
        source = cause.source();
    }
    s
}

const GENERATED_FIELDS: &str = "(extract(epoch FROM sno_time(id)) * 1000)::int8, sno_meta(id), \
     sno_partition(id), sno_sequence(id), sno_tick(id), id::text";

/// A row of `json_build_object(...)` as the server writes it.
#[derive(Deserialize, Debug)]
struct JsonRow {
    id: Sno,
    parent: Option<Sno>,
    #[serde(with = "sno::id::serde::go")]
    parent_go: Sno,
    tags: Vec<Sno>,
}

#[tokio::test]
async fn tokio_postgres() {
    use tokio_postgres::NoTls;

    let (client, connection) = tokio_postgres::connect(&dsn(), NoTls)
        .await
        .expect("connect with tokio-postgres");
    let connection = tokio::spawn(connection);
    let t = "sno_drivers_tokio_postgres";
    client.batch_execute(&create_table(t)).await.unwrap();

    // 1. Sno, Option<Sno> and Vec<Sno> as parameters (binary).
    let rows = rows();
    let insert = client
        .prepare(&format!(
            "INSERT INTO {t} (id, parent, tags, enc) VALUES ($1, $2, $3, $4)"
        ))
        .await
        .unwrap();
    for r in &rows {
        client
            .execute(&insert, &[&r.id, &r.parent, &r.tags, &r.enc])
            .await
            .unwrap_or_else(|e| panic!("insert {r:?}: {e}"));
    }
    // The server sees the values the Rust side meant (its own text form of each).
    let mismatched: i64 = client
        .query_one(
            &format!("SELECT count(*) FROM {t} WHERE id::text <> enc OR id <> enc::sno"),
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(mismatched, 0, "ids the server sees differently");
    for r in &rows {
        let row = client
            .query_one(
                &format!("SELECT parent::text, tags::text FROM {t} WHERE enc = $1"),
                &[&r.enc],
            )
            .await
            .unwrap();
        let got: (Option<String>, String) = (row.get(0), row.get(1));
        assert_eq!(got, expected_text(r), "server's parent and tags of {r:?}");
    }

    // 2. Read back as the same Rust types.
    let got: Vec<Row> = client
        .query(
            &format!("SELECT id, parent, tags, enc FROM {t} ORDER BY id"),
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| Row {
            id: row.get(0),
            parent: row.get(1),
            tags: row.get(2),
            enc: row.get(3),
        })
        .collect();
    assert_rows(&got, &rows, "tokio-postgres");

    // 3. Sno as a query parameter.
    for r in &rows {
        let found = client
            .query(&format!("SELECT enc FROM {t} WHERE id = $1"), &[&r.id])
            .await
            .unwrap();
        assert_eq!(found.len(), 1, "WHERE id = {}", r.id);
        assert_eq!(found[0].get::<_, String>(0), r.enc);
    }
    let some: Vec<Sno> = rows.iter().step_by(5).map(|r| r.id).collect();
    let n: i64 = client
        .query_one(
            &format!("SELECT count(*) FROM {t} WHERE id = ANY($1)"),
            &[&some.as_slice()],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(n as usize, some.len(), "= ANY($1)");
    let none: Option<Sno> = None;
    let n: i64 = client
        .query_one(
            &format!("SELECT count(*) FROM {t} WHERE parent IS NOT DISTINCT FROM $1"),
            &[&none],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        n as usize,
        rows.iter().filter(|r| r.parent.is_none()).count()
    );

    // 4. Generated by the server.
    let id: Sno = client
        .query_one(
            &format!(
                "INSERT INTO {t} (id, tags, enc) SELECT g, '{{}}', g::text \
                 FROM (SELECT sno_generate(7) AS g) s RETURNING id"
            ),
            &[],
        )
        .await
        .unwrap()
        .get(0);
    let row = client
        .query_one(
            &format!("SELECT {GENERATED_FIELDS} FROM {t} WHERE id = $1"),
            &[&id],
        )
        .await
        .expect("the generated row, found by its Sno");
    check_generated(
        id,
        (
            row.get(0),
            row.get(1),
            row.get(2),
            row.get(3),
            row.get(4),
            row.get(5),
        ),
    );

    // 5. Other types are errors, not garbage.
    let row = client
        .query_one(
            &format!(
                "SELECT 'abcdefghij'::text, '\\x00112233445566778899'::bytea, id, tags, \
                 'brpk4q72xwf2m63l'::text, NULL::sno FROM {t} WHERE cardinality(tags) > 0 LIMIT 1"
            ),
            &[],
        )
        .await
        .unwrap();
    assert!(row.try_get::<_, Sno>(0).is_err(), "10-byte text as Sno");
    assert!(
        row.try_get::<_, Option<Sno>>(0).is_err(),
        "text as Option<Sno>"
    );
    assert!(row.try_get::<_, Sno>(1).is_err(), "10-byte bytea as Sno");
    assert!(row.try_get::<_, Vec<Sno>>(2).is_err(), "sno as Vec<Sno>");
    assert!(row.try_get::<_, Sno>(3).is_err(), "sno[] as Sno");
    assert!(row.try_get::<_, Sno>(4).is_err(), "ID text as Sno");
    assert!(row.try_get::<_, Sno>(5).is_err(), "NULL as Sno");
    assert_eq!(row.try_get::<_, Option<Sno>>(5).unwrap(), None);
    let e = chain(&row.try_get::<_, Sno>(0).unwrap_err());
    assert!(e.contains("sno") && e.contains("text"), "{e}");
    for ty in ["text", "bytea", "uuid"] {
        let r = client.query(&format!("SELECT $1::{ty}"), &[&id]).await;
        assert!(r.is_err(), "a Sno bound as {ty}");
    }

    // The server's JSON of sno values, read with serde.
    for r in &rows {
        let json: String = client
            .query_one(
                &format!(
                    "SELECT json_build_object('id', id, 'parent', parent, 'parent_go', parent, \
                     'tags', tags)::text FROM {t} WHERE id = $1"
                ),
                &[&r.id],
            )
            .await
            .unwrap()
            .get(0);
        let j: JsonRow = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{json}: {e}"));
        assert_eq!(
            (j.id, j.parent, j.parent_go, &j.tags),
            (r.id, r.parent, r.parent.unwrap_or(Sno::ZERO), &r.tags),
            "{json}"
        );
    }

    client
        .batch_execute(&format!("DROP TABLE {t}"))
        .await
        .unwrap();
    drop(client);
    connection.await.unwrap().unwrap();
}

#[tokio::test]
async fn sqlx() {
    use sqlx::postgres::{PgConnection, PgRow, PgValueFormat};
    use sqlx::{Connection, Row as _};

    let mut conn = PgConnection::connect(&dsn())
        .await
        .expect("connect with sqlx");
    let t = "sno_drivers_sqlx";
    sqlx::raw_sql(&create_table(t))
        .execute(&mut conn)
        .await
        .unwrap();

    // 1. Sno, Option<Sno> and Vec<Sno> as parameters (binary).
    let rows = rows();
    let insert = format!("INSERT INTO {t} (id, parent, tags, enc) VALUES ($1, $2, $3, $4)");
    for r in &rows {
        sqlx::query(&insert)
            .bind(r.id)
            .bind(r.parent)
            .bind(&r.tags)
            .bind(&r.enc)
            .execute(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("insert {r:?}: {e}"));
    }
    let mismatched: i64 = sqlx::query_scalar(&format!(
        "SELECT count(*) FROM {t} WHERE id::text <> enc OR id <> enc::sno"
    ))
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(mismatched, 0, "ids the server sees differently");
    for r in &rows {
        let got: (Option<String>, String) = sqlx::query_as(&format!(
            "SELECT parent::text, tags::text FROM {t} WHERE enc = $1"
        ))
        .bind(&r.enc)
        .fetch_one(&mut conn)
        .await
        .unwrap();
        assert_eq!(got, expected_text(r), "server's parent and tags of {r:?}");
    }

    // 2. Read back as the same Rust types, in binary (a prepared statement)...
    let select = format!("SELECT id, parent, tags, enc FROM {t} ORDER BY id");
    let binary: Vec<PgRow> = sqlx::query(&select).fetch_all(&mut conn).await.unwrap();
    // ... and in text (the simple protocol).
    let text: Vec<PgRow> = sqlx::raw_sql(&select).fetch_all(&mut conn).await.unwrap();
    for (rows_read, format) in [
        (&binary, PgValueFormat::Binary),
        (&text, PgValueFormat::Text),
    ] {
        assert!(
            rows_read[0].try_get_raw(0).unwrap().format() == format,
            "expected the {format:?} format"
        );
        let got: Vec<Row> = rows_read
            .iter()
            .map(|row| Row {
                id: row.try_get(0).unwrap(),
                parent: row.try_get(1).unwrap(),
                tags: row.try_get(2).unwrap(),
                enc: row.try_get(3).unwrap(),
            })
            .collect();
        assert_rows(&got, &rows, &format!("sqlx, {format:?}"));
    }
    let tuples: Vec<(Sno, Option<Sno>, Vec<Sno>, String)> =
        sqlx::query_as(&select).fetch_all(&mut conn).await.unwrap();
    let tuples: Vec<Row> = tuples
        .into_iter()
        .map(|(id, parent, tags, enc)| Row {
            id,
            parent,
            tags,
            enc,
        })
        .collect();
    assert_rows(&tuples, &rows, "sqlx, query_as");

    // 3. Sno as a query parameter.
    for r in &rows {
        let found: Vec<String> = sqlx::query_scalar(&format!("SELECT enc FROM {t} WHERE id = $1"))
            .bind(r.id)
            .fetch_all(&mut conn)
            .await
            .unwrap();
        assert_eq!(found, std::slice::from_ref(&r.enc), "WHERE id = {}", r.id);
    }
    let some: Vec<Sno> = rows.iter().step_by(5).map(|r| r.id).collect();
    let n: i64 = sqlx::query_scalar(&format!("SELECT count(*) FROM {t} WHERE id = ANY($1)"))
        .bind(some.as_slice())
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(n as usize, some.len(), "= ANY($1)");
    let n: i64 = sqlx::query_scalar(&format!(
        "SELECT count(*) FROM {t} WHERE parent IS NOT DISTINCT FROM $1"
    ))
    .bind(None::<Sno>)
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(
        n as usize,
        rows.iter().filter(|r| r.parent.is_none()).count()
    );

    // 4. Generated by the server.
    let id: Sno = sqlx::query_scalar(&format!(
        "INSERT INTO {t} (id, tags, enc) SELECT g, '{{}}', g::text \
         FROM (SELECT sno_generate(7) AS g) s RETURNING id"
    ))
    .fetch_one(&mut conn)
    .await
    .unwrap();
    let fields = sqlx::query_as(&format!("SELECT {GENERATED_FIELDS} FROM {t} WHERE id = $1"))
        .bind(id)
        .fetch_one(&mut conn)
        .await
        .expect("the generated row, found by its Sno");
    check_generated(id, fields);

    // 5. Other types are errors, not garbage.
    let query = format!(
        "SELECT 'abcdefghij'::text, '\\x00112233445566778899'::bytea, id, tags, \
         'brpk4q72xwf2m63l'::text, NULL::sno FROM {t} WHERE cardinality(tags) > 0 LIMIT 1"
    );
    let binary = sqlx::query(&query).fetch_one(&mut conn).await.unwrap();
    let text = sqlx::raw_sql(&query).fetch_one(&mut conn).await.unwrap();
    for row in [&binary, &text] {
        assert!(row.try_get::<Sno, _>(0).is_err(), "10-byte text as Sno");
        assert!(
            row.try_get::<Option<Sno>, _>(0).is_err(),
            "text as Option<Sno>"
        );
        assert!(row.try_get::<Sno, _>(1).is_err(), "10-byte bytea as Sno");
        assert!(row.try_get::<Vec<Sno>, _>(2).is_err(), "sno as Vec<Sno>");
        assert!(row.try_get::<Sno, _>(3).is_err(), "sno[] as Sno");
        assert!(row.try_get::<Sno, _>(4).is_err(), "ID text as Sno");
        assert!(row.try_get::<Sno, _>(5).is_err(), "NULL as Sno");
        assert_eq!(row.try_get::<Option<Sno>, _>(5).unwrap(), None);
        let e = row.try_get::<Sno, _>(0).unwrap_err().to_string();
        assert!(e.contains("sno") && e.contains("TEXT"), "{e}");
    }

    sqlx::raw_sql(&format!("DROP TABLE {t}"))
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
}
