//! serde support (feature `serde`) against the Go library's own output (muyo/sno v1.2.1):
//! JSON as Go's `MarshalJSON` writes it, the zero ID as Go's `null`, the `go` field module,
//! a binary format (postcard) carrying the 10 raw bytes, and every bad input rejected.
//!
//! `cargo test --features serde --test serde_go`

use serde::{Deserialize, Serialize};
use sno::id::layout::LEN;
use sno::Sno;

mod common;
use common::{bad_inputs, hex, rows};

/// (bytes, encoded) of every row of tests/data/ids.csv.
fn go_ids() -> Vec<([u8; LEN], String)> {
    let rows = rows(include_str!("data/ids.csv"));
    assert!(
        rows.len() >= 60,
        "expected the whole vector file, got {} rows",
        rows.len()
    );
    rows.iter()
        .map(|row| {
            let f: Vec<&str> = row.split(',').collect();
            assert_eq!(f.len(), 7, "row {row:?}");
            let bytes: [u8; LEN] = hex(f[0]).try_into().expect("10 bytes");
            (bytes, f[1].to_string())
        })
        .collect()
}

#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct GoField {
    #[serde(with = "sno::id::serde::go")]
    id: Sno,
}

#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct OptionField {
    id: Option<Sno>,
}

#[test]
fn every_go_id_reads_and_writes_as_go_json() {
    for (bytes, encoded) in go_ids() {
        let json = format!("\"{encoded}\"");
        let id: Sno = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{json}: {e}"));
        assert_eq!(id.to_bytes(), bytes, "{json}");
        assert_eq!(serde_json::to_string(&id).unwrap(), json);

        // Upper case is read as the SQL input reads it; output is lower case.
        let upper = json.to_ascii_uppercase();
        assert_eq!(serde_json::from_str::<Sno>(&upper).unwrap(), id, "{upper}");

        // Inside a struct, with the go module: Go's MarshalJSON form (null for zero).
        let go_json = if id.is_zero() {
            r#"{"id":null}"#.to_string()
        } else {
            format!(r#"{{"id":{json}}}"#)
        };
        assert_eq!(serde_json::to_string(&GoField { id }).unwrap(), go_json);
        assert_eq!(
            serde_json::from_str::<GoField>(&go_json).unwrap(),
            GoField { id }
        );

        // As an Option: Go's null is None, any string is Some.
        let opt: OptionField = serde_json::from_str(&go_json).unwrap();
        assert_eq!(opt.id, if id.is_zero() { None } else { Some(id) });

        // As a map key (JSON object keys are strings).
        let map: std::collections::BTreeMap<Sno, u8> = [(id, 1)].into_iter().collect();
        let map_json = serde_json::to_string(&map).unwrap();
        assert_eq!(map_json, format!("{{{json}:1}}"));
        assert_eq!(
            serde_json::from_str::<std::collections::BTreeMap<Sno, u8>>(&map_json).unwrap(),
            map
        );
    }
}

#[test]
fn go_null_is_the_zero_id_or_none() {
    // What Go's json.Marshal writes for sno.ID{}.
    assert_eq!(serde_json::from_str::<Sno>("null").unwrap(), Sno::ZERO);
    assert_eq!(serde_json::from_str::<Option<Sno>>("null").unwrap(), None);
    assert_eq!(
        serde_json::from_str::<GoField>(r#"{"id":null}"#)
            .unwrap()
            .id,
        Sno::ZERO
    );
    assert_eq!(
        serde_json::from_str::<OptionField>(r#"{"id":null}"#)
            .unwrap()
            .id,
        None
    );
    // Through serde_json::Value too (what buffered/untagged deserialization goes through).
    assert_eq!(
        serde_json::from_value::<Sno>(serde_json::Value::Null).unwrap(),
        Sno::ZERO
    );
    let v = serde_json::json!("brpk4q72xwf2m63l");
    assert_eq!(
        serde_json::from_value::<Sno>(v).unwrap().to_string(),
        "brpk4q72xwf2m63l"
    );

    // A plain Sno writes the zero ID as its text (Go's MarshalText); the go module and
    // Option<Sno> = None write null.
    assert_eq!(
        serde_json::to_string(&Sno::ZERO).unwrap(),
        r#""2222222222222222""#
    );
    assert_eq!(
        serde_json::to_string(&GoField { id: Sno::ZERO }).unwrap(),
        r#"{"id":null}"#
    );
    assert_eq!(
        serde_json::to_string(&OptionField { id: None }).unwrap(),
        r#"{"id":null}"#
    );
    assert_eq!(
        serde_json::to_string(&OptionField {
            id: Some(Sno::ZERO)
        })
        .unwrap(),
        r#"{"id":"2222222222222222"}"#
    );
}

#[test]
fn binary_format_carries_the_raw_bytes() {
    for (bytes, _) in go_ids() {
        let id = Sno::from_bytes(bytes);
        let out = postcard::to_allocvec(&id).unwrap();
        // postcard's bytes: a varint length (10 fits one byte), then the bytes themselves.
        let mut want = vec![LEN as u8];
        want.extend_from_slice(&bytes);
        assert_eq!(out, want, "{id}");
        assert_eq!(postcard::from_bytes::<Sno>(&out).unwrap(), id);

        // The go module in a binary format: an option around the same bytes.
        let out = postcard::to_allocvec(&GoField { id }).unwrap();
        if id.is_zero() {
            assert_eq!(out, [0]);
        } else {
            assert_eq!(out[0], 1);
            assert_eq!(out[1..], want[..]);
        }
        assert_eq!(
            postcard::from_bytes::<GoField>(&out).unwrap(),
            GoField { id }
        );
    }
}

#[test]
fn binary_format_rejects_other_lengths_and_reads_a_sequence() {
    for n in [0usize, 9, 11, 16] {
        let mut input = vec![n as u8];
        input.extend(std::iter::repeat_n(7u8, n));
        assert!(postcard::from_bytes::<Sno>(&input).is_err(), "{n} bytes");
    }
    // A sequence of 10 u8: a JSON array of 10 numbers, as Go's encoding/json writes a
    // sno.ID it cannot take the address of (MarshalJSON has a pointer receiver).
    let id: Sno = "brpk4q72xwf2m63l".parse().unwrap();
    let seq = serde_json::to_string(&id.to_bytes()).unwrap();
    assert_eq!(seq, "[78,111,33,96,160,255,154,10,16,51]");
    assert_eq!(serde_json::from_str::<Sno>(&seq).unwrap(), id);
    assert_eq!(
        serde_json::from_str::<GoField>(&format!(r#"{{"id":{seq}}}"#))
            .unwrap()
            .id,
        id
    );
}

#[test]
fn every_bad_input_is_rejected_by_json() {
    for (case, input) in bad_inputs() {
        // JSON strings are UTF-8 text: every case is, so each is a JSON string literal.
        let text = String::from_utf8(input).expect("the bad inputs are UTF-8");
        let json = serde_json::to_string(&text).unwrap();
        let err = match serde_json::from_str::<Sno>(&json) {
            Ok(id) => panic!("{case}: accepted {json} as {id}"),
            Err(e) => e.to_string(),
        };
        assert!(err.starts_with("invalid sno ID "), "{case}: {err}");
        assert!(
            err.contains("is not one of 2-9, a-x") || err.contains("exactly 16 characters"),
            "{case}: {err}"
        );
        // Nor through the go module, nor as Some.
        let field = format!(r#"{{"id":{json}}}"#);
        assert!(
            serde_json::from_str::<GoField>(&field).is_err(),
            "{case}: go"
        );
        assert!(
            serde_json::from_str::<OptionField>(&field).is_err(),
            "{case}: option"
        );
    }
}

#[test]
fn errors_name_the_length_or_the_character() {
    let e = serde_json::from_str::<Sno>(r#""brpk4q72xwf2m63""#).unwrap_err();
    assert!(e.to_string().contains("has 15 bytes"), "{e}");
    let e = serde_json::from_str::<Sno>(r#""brpk4q72xwf2m63z""#).unwrap_err();
    assert!(
        e.to_string()
            .contains(r#"Character "z" at position 16 is not one of 2-9, a-x"#),
        "{e}"
    );
    // Long input is cut in the message.
    let long = format!("\"{}\"", "a".repeat(1000));
    let e = serde_json::from_str::<Sno>(&long).unwrap_err().to_string();
    assert!(e.contains("has 1000 bytes") && e.len() < 200, "{e}");
    // Neither a number, a bool, an array of the wrong length nor an object is an ID.
    for bad in [
        "0",
        "true",
        "[1,2,3]",
        "{}",
        r#""""#,
        r#"{"id":"brpk4q72xwf2m63l"}"#,
    ] {
        assert!(serde_json::from_str::<Sno>(bad).is_err(), "{bad}");
    }
    // A sequence of the wrong length names its length; elements must be bytes.
    for (n, want) in [
        (0usize, "invalid length 0"),
        (9, "invalid length 9"),
        (11, "invalid length 11"),
    ] {
        let seq = serde_json::to_string(&vec![7u8; n]).unwrap();
        let e = serde_json::from_str::<Sno>(&seq).unwrap_err();
        assert!(e.to_string().contains(want), "{n}: {e}");
    }
    assert!(serde_json::from_str::<Sno>("[1,2,3,4,5,6,7,8,9,256]").is_err());
    assert!(serde_json::from_str::<Sno>("[1,2,3,4,5,6,7,8,9,-1]").is_err());
}
