//! The Go library's own output (muyo/sno v1.2.1), checked against the pure ID logic.
//!
//! `tests/data/ids.csv` holds IDs the Go library produced with what it reports about each;
//! `tests/data/decode_bad.csv` holds inputs that must be rejected.

use sno::id::encoding::{decode, encode, DecodeError, TEXT_LEN};
use sno::id::layout::{Sno, LEN};
use sno::id::time::units_to_unix_millis;

mod common;
use common::{bad_inputs, hex, rows};

#[test]
fn every_go_id_decodes_encodes_and_reports_the_same_fields() {
    let data = include_str!("data/ids.csv");
    let rows = rows(data);
    assert!(
        rows.len() >= 60,
        "expected the whole vector file, got {} rows",
        rows.len()
    );
    let mut ids = Vec::new();
    for row in rows {
        let f: Vec<&str> = row.split(',').collect();
        assert_eq!(f.len(), 7, "row {row:?}");
        let bytes = hex(f[0]);
        assert_eq!(bytes.len(), LEN);
        let id = Sno::from_slice(&bytes).expect("10 bytes");
        assert_eq!(
            std::str::from_utf8(&encode(&id)).unwrap(),
            f[1],
            "encode {row}"
        );
        assert_eq!(decode(f[1].as_bytes()), Ok(id), "decode {row}");
        assert_eq!(
            decode(f[1].to_ascii_uppercase().as_bytes()),
            Ok(id),
            "decode upper {row}"
        );
        assert_eq!(
            units_to_unix_millis(id.units()).to_string(),
            f[2],
            "time {row}"
        );
        assert_eq!(id.tick().to_string(), f[3], "tick {row}");
        assert_eq!(id.meta().to_string(), f[4], "meta {row}");
        assert_eq!(id.partition().to_string(), f[5], "partition {row}");
        assert_eq!(id.sequence().to_string(), f[6], "sequence {row}");
        assert_eq!(
            Sno::new(
                id.units(),
                id.tick(),
                id.meta(),
                id.partition(),
                id.sequence()
            ),
            id
        );
        ids.push((id, f[1].to_string()));
    }
    // Sorting by bytes and by text give the same order.
    let mut by_bytes = ids.clone();
    by_bytes.sort_by_key(|a| a.0);
    let mut by_text = ids;
    by_text.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(by_bytes, by_text);
}

#[test]
fn every_bad_input_is_rejected() {
    for (case, input) in bad_inputs() {
        match decode(&input) {
            Ok(id) => panic!("{case}: accepted {input:?} as {id}"),
            Err(DecodeError::Length(n)) => {
                assert_eq!(n, input.len(), "{case}");
                assert_ne!(n, TEXT_LEN, "{case}");
            }
            Err(DecodeError::Char { position, byte }) => {
                assert_eq!(input.len(), TEXT_LEN, "{case}");
                assert_eq!(input[position], byte, "{case}");
            }
            Err(e) => panic!("{case}: the 16-character decoder gave a bytea-form error {e:?}"),
        }
        // The SQL input refuses it too.
        assert!(sno::id::encoding::parse(&input).is_err(), "{case}");
    }
}
