//! The sno crate's `diesel` and `sea-orm` features through the ORMs, against a real server,
//! with the README's schema, models, entities and queries compiled and run as printed
//! (build.rs copies them out of README.md).
//!
//! For each ORM, the natural model (`orders` and `items`, both keyed by
//! `id sno PRIMARY KEY DEFAULT sno_generate(1)`, `items.order_id` a `sno` foreign key) and the
//! six checks: 1. insert and get the generated id back (the server's own value: its text and
//! `sno_meta`); 2. fetch by id; 3. `ORDER BY id` and `id > x` (and `IN`, and an update keyed by
//! a `Sno`); 4. load the relation; 5. filter by `sno_time(id)` through the ORM's raw SQL
//! expression; 6. bulk insert of 1,000 rows. Then bad input: a 15-character ID and a
//! non-base32 one are refused by `Sno::from_str`, and, sent as text through the ORM's raw SQL,
//! are the server's `invalid input syntax for type sno` (SQLSTATE 22P02 where the ORM keeps
//! it). Last, plain strings compared with and assigned to a `sno` column (`sno = text`, the
//! assignment cast): they need sno 0.4.0.
//!
//! SeaORM also makes its tables from the entities (`Schema::create_table_from_entity`): `sno`
//! columns with the `sno_generate(1)` default and the foreign key. Diesel makes none (its
//! migrations are SQL).
//!
//! The databases come from `SNO_ORM_DIESEL_DSN` and `SNO_ORM_SEA_ORM_DSN` (URLs such as
//! `postgresql:///db?host=/socket/dir&port=5432&user=postgres`, with the extension created).

use sno::Sno;

/// The README's Diesel `src/schema.rs`.
pub mod schema {
    include!(concat!(env!("OUT_DIR"), "/diesel-schema.rs"));
}

/// The README's Diesel `src/models.rs`, and its queries (in a function, see build.rs).
pub mod models {
    include!(concat!(env!("OUT_DIR"), "/diesel-models.rs"));
    include!(concat!(env!("OUT_DIR"), "/diesel-queries.rs"));
}

/// The README's SeaORM `src/entities.rs`, and its queries (in a function, see build.rs).
pub mod entities {
    include!(concat!(env!("OUT_DIR"), "/sea-orm-entities.rs"));
    include!(concat!(env!("OUT_DIR"), "/sea-orm-queries.rs"));
}

fn dsn(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!(
            "{var} is not set: these tests need a PostgreSQL server with the sno extension \
             (run tests/client/rust_drivers.sh)"
        )
    })
}

/// The malformed IDs: 15 characters, and 16 with letters outside the alphabet.
const BAD: [&str; 2] = ["brpk4q72xwf2m63", "brpk4q72xwf2m6z1"];

#[test]
fn bad_ids_are_refused_by_from_str() {
    for bad in BAD {
        let err = bad.parse::<Sno>().expect_err(bad).to_string();
        assert!(!err.is_empty(), "{bad}: an error with a message");
    }
}

const DDL: &str = "
    DROP TABLE IF EXISTS items, orders;
    CREATE TABLE orders (id sno PRIMARY KEY DEFAULT sno_generate(1), customer int NOT NULL);
    CREATE TABLE items (id sno PRIMARY KEY DEFAULT sno_generate(1),
                        order_id sno NOT NULL REFERENCES orders, name text NOT NULL);";

#[test]
fn diesel() {
    use diesel::connection::SimpleConnection;
    use diesel::dsl::sql;
    use diesel::prelude::*;
    use diesel::result::{DatabaseErrorKind, Error};
    use diesel::sql_types::{BigInt, Bool, Integer, Text};
    use models::{readme_diesel_queries, Item, NewItem, Order};
    use schema::{items, orders};

    let conn = &mut PgConnection::establish(&dsn("SNO_ORM_DIESEL_DSN")).expect("connect");
    conn.batch_execute(DDL).unwrap();

    // 1. Insert, the generated id back; the server's value, its text and meta.
    let first: Sno = diesel::insert_into(orders::table)
        .values(orders::customer.eq(1))
        .returning(orders::id)
        .get_result(conn)
        .unwrap();
    let (text, meta): (String, i32) = orders::table
        .select((sql::<Text>("id::text"), sql::<Integer>("sno_meta(id)")))
        .first(conn)
        .unwrap();
    assert_eq!((text, meta), (first.to_string(), 1), "1. the generated id");

    // 2. Fetch by id.
    let order: Order = orders::table
        .find(first)
        .select(Order::as_select())
        .first(conn)
        .unwrap();
    assert_eq!(
        order,
        Order {
            id: first,
            customer: 1
        },
        "2. find"
    );

    // 3. ORDER BY id, id > x, IN, an update keyed by a Sno.
    let more: Vec<Sno> = diesel::insert_into(orders::table)
        .values(
            &[
                orders::customer.eq(2),
                orders::customer.eq(3),
                orders::customer.eq(4),
            ][..],
        )
        .returning(orders::id)
        .get_results(conn)
        .unwrap();
    let mut all = vec![first];
    all.extend(&more);
    all.sort();
    let ordered: Vec<Sno> = orders::table
        .order(orders::id)
        .select(orders::id)
        .load(conn)
        .unwrap();
    assert_eq!(ordered, all, "3. ORDER BY id");
    let desc: Vec<Sno> = orders::table
        .order(orders::id.desc())
        .select(orders::id)
        .load(conn)
        .unwrap();
    assert_eq!(
        desc,
        all.iter().rev().copied().collect::<Vec<_>>(),
        "3. ORDER BY id DESC"
    );
    let after: Vec<Sno> = orders::table
        .filter(orders::id.gt(all[1]))
        .order(orders::id)
        .select(orders::id)
        .load(conn)
        .unwrap();
    assert_eq!(after, all[2..], "3. id > x");
    let some: i64 = orders::table
        .filter(orders::id.eq_any(vec![all[0], all[3]]))
        .count()
        .get_result(conn)
        .unwrap();
    assert_eq!(some, 2, "3. id IN (...)");
    let n = diesel::update(orders::table.find(more[0]))
        .set(orders::customer.eq(20))
        .execute(conn)
        .unwrap();
    assert_eq!(n, 1, "3. update by id");

    // 4. The relation, both ways.
    let new_items = vec![
        NewItem {
            order_id: first,
            name: "a".into(),
        },
        NewItem {
            order_id: first,
            name: "b".into(),
        },
        NewItem {
            order_id: more[0],
            name: "c".into(),
        },
    ];
    diesel::insert_into(items::table)
        .values(&new_items)
        .execute(conn)
        .unwrap();
    let mut of_first: Vec<Item> = Item::belonging_to(&order)
        .select(Item::as_select())
        .load(conn)
        .unwrap();
    of_first.sort_by(|a, b| a.name.cmp(&b.name));
    let names: Vec<&str> = of_first.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names, ["a", "b"], "4. belonging_to");
    assert!(of_first.iter().all(|i| i.order_id == first && i.id > first));
    let joined: Vec<(String, Order)> = items::table
        .inner_join(orders::table)
        .filter(items::name.eq("c"))
        .select((items::name, Order::as_select()))
        .load(conn)
        .unwrap();
    assert_eq!(
        joined,
        [(
            "c".to_string(),
            Order {
                id: more[0],
                customer: 20
            }
        )],
        "4. join"
    );
    // A Sno in SET (AsChangeset of a foreign key).
    diesel::update(items::table.filter(items::name.eq("c")))
        .set(items::order_id.eq(first))
        .execute(conn)
        .unwrap();

    // 5. sno_time(id) through dsl::sql.
    let recent: i64 = orders::table
        .filter(sql::<Bool>("sno_time(id) > now() - interval '1 hour'"))
        .count()
        .get_result(conn)
        .unwrap();
    let old: i64 = orders::table
        .filter(sql::<Bool>("sno_time(id) < now() - interval '1 hour'"))
        .count()
        .get_result(conn)
        .unwrap();
    assert_eq!((recent, old), (4, 0), "5. sno_time(id)");

    // 6. Bulk insert of 1,000 rows.
    let bulk: Vec<NewItem> = (0..1000)
        .map(|i| NewItem {
            order_id: more[1],
            name: format!("bulk {i}"),
        })
        .collect();
    let mut ids: Vec<Sno> = diesel::insert_into(items::table)
        .values(&bulk)
        .returning(items::id)
        .get_results(conn)
        .unwrap();
    assert_eq!(ids.len(), 1000, "6. bulk insert");
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 1000, "6. distinct ids");
    let n: i64 = items::table
        .filter(items::order_id.eq(more[1]))
        .count()
        .get_result(conn)
        .unwrap();
    assert_eq!(n, 1000, "6. rows");

    // The README's queries, as printed.
    let (order_id, order, later, items, recent) = readme_diesel_queries(conn).unwrap();
    assert_eq!(
        order,
        Order {
            id: order_id,
            customer: 42
        },
        "README: find"
    );
    assert!(
        later.is_empty(),
        "README: the newest order has none after it"
    );
    assert!(items.is_empty(), "README: a new order has no items");
    assert_eq!(recent.len(), 5, "README: sno_time");
    assert!(recent.contains(&order_id));

    // Bad input through raw SQL: the server's input error (Diesel keeps no SQLSTATE).
    for bad in BAD {
        let err = diesel::sql_query("SELECT id FROM orders WHERE id = $1::sno")
            .bind::<Text, _>(bad)
            .execute(conn)
            .expect_err(bad);
        match err {
            Error::DatabaseError(DatabaseErrorKind::Unknown, info) => assert!(
                info.message()
                    .starts_with(&format!("invalid input syntax for type sno: \"{bad}\"")),
                "{bad}: {}",
                info.message()
            ),
            other => panic!("{bad}: {other:?}"),
        }
    }
    // The Rust type refuses a column of another type (no silent reading of bytes).
    let err = diesel::select(sql::<sno::id::diesel::sql_types::Sno>(
        "'brpk4q72xwf2m63l'::text",
    ))
    .get_result::<Sno>(conn);
    assert!(err.is_err(), "text read as Sno: {err:?}");

    // Plain strings with the sno column (sno 0.4.0: sno = text and the assignment cast).
    let n: Vec<CountRow> = diesel::sql_query("SELECT count(*) AS n FROM orders WHERE id = $1")
        .bind::<Text, _>(first.to_string())
        .load(conn)
        .expect("sno = text (sno 0.4.0)");
    assert_eq!(n[0].n, 1, "sno = text");
    diesel::sql_query("INSERT INTO items (order_id, name) VALUES ($1, 'text')")
        .bind::<Text, _>(first.to_string())
        .execute(conn)
        .expect("text assigned to a sno column (sno 0.4.0)");

    #[derive(QueryableByName)]
    struct CountRow {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
}

/// The ids of the orders a SeaORM query returns, in its order.
async fn order_ids(
    db: &sea_orm::DatabaseConnection,
    query: sea_orm::Select<entities::order::Entity>,
) -> Vec<Sno> {
    query
        .all(db)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.id)
        .collect()
}

#[tokio::test]
async fn sea_orm() {
    use entities::{item, order, readme_sea_orm_queries};
    use sea_orm::sea_query::Expr;
    use sea_orm::{
        ActiveModelTrait, ColumnTrait, ConnectionTrait, Database, DbBackend, DbErr, EntityTrait,
        ExprTrait, ModelTrait, PaginatorTrait, QueryFilter, QueryOrder, QuerySelect, RuntimeErr,
        Schema, Set, Statement,
    };

    let db = Database::connect(dsn("SNO_ORM_SEA_ORM_DSN"))
        .await
        .expect("connect");
    db.execute_unprepared("DROP TABLE IF EXISTS items, orders")
        .await
        .unwrap();

    // The schema path: the tables made from the entities.
    let schema = Schema::new(DbBackend::Postgres);
    db.execute(&schema.create_table_from_entity(order::Entity))
        .await
        .unwrap();
    db.execute(&schema.create_table_from_entity(item::Entity))
        .await
        .unwrap();
    let columns = db
        .query_all_raw(Statement::from_string(
            DbBackend::Postgres,
            "SELECT string_agg(table_name || '.' || column_name || ' ' || udt_name || ' '
                               || coalesce(column_default, '-'), ', ' ORDER BY table_name, column_name)
                               || ' / ' || (SELECT count(*) FROM pg_constraint
                                            WHERE conrelid = 'items'::regclass AND contype = 'f'
                                              AND confrelid = 'orders'::regclass) AS s
             FROM information_schema.columns
             WHERE table_name IN ('orders', 'items') AND udt_name = 'sno'",
        ))
        .await
        .unwrap();
    let columns: String = columns[0].try_get("", "s").unwrap();
    assert_eq!(
        columns,
        "items.id sno sno_generate(1), items.order_id sno -, orders.id sno sno_generate(1) / 1",
        "create_table_from_entity"
    );

    // 1. Insert, the generated id back; the server's value.
    let first = order::ActiveModel {
        customer: Set(1),
        ..Default::default()
    }
    .insert(&db)
    .await
    .unwrap();
    let row = db
        .query_one_raw(Statement::from_string(
            DbBackend::Postgres,
            "SELECT id::text AS t, sno_meta(id) AS m FROM orders",
        ))
        .await
        .unwrap()
        .unwrap();
    let (text, meta): (String, i32) =
        (row.try_get("", "t").unwrap(), row.try_get("", "m").unwrap());
    assert_eq!(
        (text, meta, first.customer),
        (first.id.to_string(), 1, 1),
        "1. the generated id"
    );

    // 2. Fetch by id.
    let found = order::Entity::find_by_id(first.id).one(&db).await.unwrap();
    assert_eq!(found.as_ref(), Some(&first), "2. find_by_id");

    // 3. ORDER BY id, id > x, IN, an update keyed by a Sno.
    let mut all = vec![first.id];
    for customer in 2..=4 {
        let m = order::ActiveModel {
            customer: Set(customer),
            ..Default::default()
        }
        .insert(&db)
        .await
        .unwrap();
        all.push(m.id);
    }
    let more = all[1..].to_vec();
    all.sort();
    let by_id = || order::Entity::find().order_by_asc(order::Column::Id);
    let ordered = order_ids(&db, by_id()).await;
    assert_eq!(ordered, all, "3. ORDER BY id");
    let after = order_ids(&db, by_id().filter(order::Column::Id.gt(all[1]))).await;
    assert_eq!(after, all[2..], "3. id > x");
    let some = order::Entity::find()
        .filter(order::Column::Id.is_in([all[0], all[3]]))
        .count(&db)
        .await
        .unwrap();
    assert_eq!(some, 2, "3. id IN (...)");
    let mut m: order::ActiveModel = order::Entity::find_by_id(more[0])
        .one(&db)
        .await
        .unwrap()
        .unwrap()
        .into();
    m.customer = Set(20);
    let updated = m.update(&db).await.unwrap();
    assert_eq!(
        (updated.id, updated.customer),
        (more[0], 20),
        "3. update by id"
    );

    // 4. The relation.
    for (order_id, name) in [(first.id, "a"), (first.id, "b"), (more[0], "c")] {
        item::ActiveModel {
            order_id: Set(order_id),
            name: Set(name.into()),
            ..Default::default()
        }
        .insert(&db)
        .await
        .unwrap();
    }
    let names: Vec<String> = first
        .find_related(item::Entity)
        .order_by_asc(item::Column::Name)
        .all(&db)
        .await
        .unwrap()
        .into_iter()
        .map(|i| i.name)
        .collect();
    assert_eq!(names, ["a", "b"], "4. find_related");
    let with: Vec<(order::Model, Vec<item::Model>)> = order::Entity::find()
        .filter(order::Column::Id.eq(more[0]))
        .find_with_related(item::Entity)
        .all(&db)
        .await
        .unwrap();
    assert_eq!(with.len(), 1, "4. find_with_related");
    assert_eq!(
        (with[0].0.customer, with[0].1.len()),
        (20, 1),
        "4. find_with_related"
    );
    assert_eq!(with[0].1[0].order_id, more[0]);

    // 5. sno_time(id) through Expr::cust.
    let recent = order::Entity::find()
        .filter(Expr::cust("sno_time(id) > now() - interval '1 hour'"))
        .count(&db)
        .await
        .unwrap();
    let old = order::Entity::find()
        .filter(Expr::cust("sno_time(id) < now() - interval '1 hour'"))
        .count(&db)
        .await
        .unwrap();
    assert_eq!((recent, old), (4, 0), "5. sno_time(id)");

    // 6. Bulk insert of 1,000 rows.
    let bulk = (0..1000).map(|i| item::ActiveModel {
        order_id: Set(more[1]),
        name: Set(format!("bulk {i}")),
        ..Default::default()
    });
    item::Entity::insert_many(bulk).exec(&db).await.unwrap();
    let ids: Vec<Sno> = item::Entity::find()
        .filter(item::Column::OrderId.eq(more[1]))
        .select_only()
        .column(item::Column::Id)
        .into_tuple()
        .all(&db)
        .await
        .unwrap();
    let mut distinct = ids.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!((ids.len(), distinct.len()), (1000, 1000), "6. bulk insert");

    // The README's queries, as printed.
    let (order, same, later, items, recent) = readme_sea_orm_queries(&db).await.unwrap();
    assert_eq!(same.as_ref(), Some(&order), "README: find_by_id");
    assert_eq!(order.customer, 42);
    assert!(
        later.is_empty() && items.is_empty(),
        "README: nothing after, no items"
    );
    assert_eq!(recent.len(), 5, "README: sno_time");

    // Bad input through raw SQL: the server's 22P02.
    for bad in BAD {
        let err = db
            .query_all_raw(Statement::from_sql_and_values(
                DbBackend::Postgres,
                "SELECT id::text FROM orders WHERE id = $1::sno",
                [bad.into()],
            ))
            .await
            .expect_err(bad);
        let DbErr::Query(RuntimeErr::SqlxError(e)) = &err else {
            panic!("{bad}: {err:?}");
        };
        let db_err = e.as_database_error().expect("a database error");
        assert_eq!(db_err.code().as_deref(), Some("22P02"), "{bad}: {db_err}");
        assert!(
            db_err
                .message()
                .starts_with(&format!("invalid input syntax for type sno: \"{bad}\"")),
            "{bad}: {}",
            db_err.message()
        );
    }

    // Plain strings with the sno column (sno 0.4.0: sno = text and the assignment cast).
    let n = order::Entity::find()
        .filter(Expr::col(order::Column::Id).eq(first.id.to_string()))
        .count(&db)
        .await
        .expect("sno = text (sno 0.4.0)");
    assert_eq!(n, 1, "sno = text");
    db.execute_raw(Statement::from_sql_and_values(
        DbBackend::Postgres,
        "INSERT INTO items (order_id, name) VALUES ($1, 'text')",
        [first.id.to_string().into()],
    ))
    .await
    .expect("text assigned to a sno column (sno 0.4.0)");
}
