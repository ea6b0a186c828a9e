//! Helpers shared by the tests that read the Go library's vectors (`tests/data/*.csv`).

/// Bytes from a hex string.
pub fn hex(s: &str) -> Vec<u8> {
    assert!(s.len() % 2 == 0, "odd hex {s:?}");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digit"))
        .collect()
}

/// The data lines of a CSV file: the first line is the header; the files end with a newline.
pub fn rows(csv: &str) -> Vec<&str> {
    csv.lines().skip(1).filter(|l| !l.is_empty()).collect()
}

/// Every row of `tests/data/decode_bad.csv` as (case, input bytes), checked to be the whole file.
pub fn bad_inputs() -> Vec<(&'static str, Vec<u8>)> {
    let rows = rows(include_str!("../data/decode_bad.csv"));
    assert!(
        rows.len() >= 16,
        "expected the whole file, got {} rows",
        rows.len()
    );
    rows.into_iter()
        .map(|row| {
            // The case name may hold quoted commas; the input is the last field.
            let (case, input_hex) = row.rsplit_once(',').expect("two fields");
            (case, hex(input_hex))
        })
        .collect()
}
