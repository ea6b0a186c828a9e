//! The manual's Rust snippets: doc/orms.md's (the blocks after an `<!-- orm-rust: NAME -->`
//! line) and doc/services.md's (after `<!-- lease-rust: NAME -->`), written to
//! `OUT_DIR/NAME.rs` for tests/orm.rs and tests/lease.rs to `include!`, so the tests compile and
//! run them as printed. Item blocks (schema, models,
//! entities) are copied as they are; a block of statements is wrapped in a function (below)
//! that returns the values it binds, for the test to check.

use std::{env, fs, path::Path};

/// The functions around the README's blocks of statements: (block, head, tail).
const WRAPPED: &[(&str, &str, &str)] = &[
    (
        "diesel-queries",
        "#[allow(clippy::type_complexity)]\npub fn readme_diesel_queries(conn: &mut diesel::pg::PgConnection) \
         -> diesel::QueryResult<(Sno, Order, Vec<Order>, Vec<Item>, Vec<Sno>)> {",
        "Ok((order_id, order, later, items, recent))\n}",
    ),
    (
        "sea-orm-queries",
        "#[allow(clippy::type_complexity)]\npub async fn readme_sea_orm_queries(db: &sea_orm::DatabaseConnection) -> Result<\
         (order::Model, Option<order::Model>, Vec<order::Model>, Vec<item::Model>, \
         Vec<order::Model>), sea_orm::DbErr> {",
        "Ok((order, same, later, items, recent))\n}",
    ),
    (
        "lease-keeper",
        "pub async fn doc_lease_keeper() -> Result<sno::Sno, Box<dyn std::error::Error>> {",
        "Ok(id)\n}",
    ),
];

/// The pages, their marker, and the blocks each must have.
const PAGES: &[(&str, &str, &[&str])] = &[
    (
        "doc/orms.md",
        "<!-- orm-rust: ",
        &[
            "diesel-schema",
            "diesel-models",
            "diesel-queries",
            "sea-orm-entities",
            "sea-orm-queries",
        ],
    ),
    ("doc/services.md", "<!-- lease-rust: ", &["lease-keeper"]),
];

fn main() {
    let out = env::var("OUT_DIR").unwrap();
    for (page, marker, wanted) in PAGES {
        extract(page, marker, wanted, &out);
    }
}

fn extract(page: &str, marker: &str, wanted: &[&str], out: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../..")
        .join(page);
    println!("cargo:rerun-if-changed={}", path.display());
    let text = fs::read_to_string(&path).expect(page);
    let mut found = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some(name) = line
            .strip_prefix(marker)
            .and_then(|rest| rest.strip_suffix(" -->"))
        else {
            continue;
        };
        assert_eq!(
            lines.next(),
            Some("```rust"),
            "{page}: no ```rust block after {line}"
        );
        let block: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
        let mut code = block.join("\n") + "\n";
        if let Some((_, head, tail)) = WRAPPED.iter().find(|(n, _, _)| *n == name) {
            code = format!("{head}\n{code}{tail}\n");
        }
        fs::write(Path::new(out).join(format!("{name}.rs")), code).unwrap();
        found.push(name.to_string());
    }
    for name in wanted {
        assert!(
            found.iter().any(|n| n == name),
            "{page}: no {marker}{name} --> block"
        );
    }
}
