//! Nothing here: the client tests are in `tests/`, run with
//! `cargo test --manifest-path tests/drivers/rust/Cargo.toml` and `SNO_TEST_DSN` set
//! (tests/client/rust_drivers.sh does both).
