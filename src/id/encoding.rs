//! The 16-character text form of a sno ID ("sno32").
//!
//! Pure Rust, no PostgreSQL. The 80 bits of an ID are read as 16 five-bit digits, most
//! significant first, each written with [`ALPHABET`]. The alphabet is strictly ascending ASCII,
//! so the order of the text (byte-wise, i.e. `COLLATE "C"`) is the order of the IDs.
//!
//! Input is stricter than muyo/sno's decoder, which checks only the length: exactly 16
//! characters from the alphabet, where upper-case `A`..`X` stand for their lower-case letters.
//! Every accepted string decodes to exactly one ID; output is always lower case.
//!
//! The SQL input ([`parse`]) also takes the 10 bytes in PostgreSQL's bytea hex form, `\x`
//! followed by exactly 20 hex digits (`0-9`, `a-f`, `A-F`), which is what drivers send for a
//! byte-array parameter in text (pgx, node-postgres). It cannot be mistaken for the 16
//! characters: `\` is not in the alphabet. Nothing else of bytea's input is taken: no
//! upper-case `\X`, no white space, no escape format.

use crate::id::layout::{Sno, LEN};

/// Length of the text form.
pub const TEXT_LEN: usize = 16;

/// Digit values 0..31, in ascending ASCII order.
pub const ALPHABET: &[u8; 32] = b"23456789abcdefghijklmnopqrstuvwx";

/// Marks a byte that is not a digit in [`DECODE`].
const INVALID: u8 = 0xff;

/// Byte → digit value, or [`INVALID`]. Built at compile time; upper case maps like lower case.
const DECODE: [u8; 256] = {
    let mut t = [INVALID; 256];
    let mut i = 0;
    while i < 32 {
        let c = ALPHABET[i];
        t[c as usize] = i as u8;
        if c.is_ascii_lowercase() {
            t[c.to_ascii_uppercase() as usize] = i as u8;
        }
        i += 1;
    }
    t
};

/// Number of hex digits of the bytea hex form.
pub const HEX_DIGITS: usize = 2 * LEN;

/// Why a string is not a sno ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeError {
    /// The input is not 16 bytes long; holds its length in bytes.
    Length(usize),
    /// The byte at this zero-based position is not in the alphabet.
    Char {
        /// Zero-based byte offset.
        position: usize,
        /// The offending byte.
        byte: u8,
    },
    /// Input starting with `\` but not with `\x` (only the bytea hex form starts so).
    HexPrefix,
    /// The bytea hex form with other than 20 hex digits; holds the number of bytes after `\x`.
    HexLength(usize),
    /// The byte at this zero-based position of the bytea hex form is not a hex digit.
    HexChar {
        /// Zero-based byte offset in the whole input.
        position: usize,
        /// The offending byte.
        byte: u8,
    },
}

/// "Character "c" at position n is not WHAT." (1-based), or the byte in hex when it is not a
/// printable ASCII character.
fn bad_byte(
    f: &mut core::fmt::Formatter<'_>,
    position: usize,
    byte: u8,
    what: &str,
) -> core::fmt::Result {
    if byte.is_ascii_graphic() {
        write!(
            f,
            "Character \"{}\" at position {} is not {what}.",
            byte as char,
            position + 1
        )
    } else {
        write!(
            f,
            "Byte 0x{byte:02x} at position {} is not {what}.",
            position + 1
        )
    }
}

impl core::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            DecodeError::Length(n) => write!(
                f,
                "A sno ID is exactly 16 characters from 2-9, a-x; the input has {n} bytes."
            ),
            DecodeError::Char { position, byte } => bad_byte(f, position, byte, "one of 2-9, a-x"),
            DecodeError::HexPrefix => write!(
                f,
                "Only a lower-case \\x starts the bytea hex form of a sno ID (\\x and {HEX_DIGITS} hex digits)."
            ),
            DecodeError::HexLength(n) => write!(
                f,
                "The bytea hex form of a sno ID is \\x and exactly {HEX_DIGITS} hex digits; the input has {n} bytes after \\x."
            ),
            DecodeError::HexChar { position, byte } => bad_byte(f, position, byte, "a hex digit"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Parses what the SQL input function takes ([`parse`]): the 16 characters 2-9 and a-x (upper
/// case read as lower case), or `\x` and 20 hex digits; nothing trimmed.
impl core::str::FromStr for Sno {
    type Err = DecodeError;
    fn from_str(s: &str) -> Result<Sno, DecodeError> {
        parse(s.as_bytes())
    }
}

/// What the SQL input function (`sno_in`) takes: the 16-character text ([`decode`]), or the 10
/// bytes in bytea hex form, `\x` and exactly 20 hex digits of either case.
#[inline]
pub fn parse(s: &[u8]) -> Result<Sno, DecodeError> {
    match s {
        [b'\\', b'x', hex @ ..] => decode_hex(hex),
        [b'\\', ..] => Err(DecodeError::HexPrefix),
        _ => decode(s),
    }
}

/// The 20 hex digits after `\x`.
fn decode_hex(hex: &[u8]) -> Result<Sno, DecodeError> {
    if hex.len() != HEX_DIGITS {
        return Err(DecodeError::HexLength(hex.len()));
    }
    let digit = |i: usize| -> Result<u8, DecodeError> {
        let c = hex[i];
        match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            b'A'..=b'F' => Ok(c - b'A' + 10),
            _ => Err(DecodeError::HexChar {
                position: i + 2,
                byte: c,
            }),
        }
    };
    let mut out = [0u8; LEN];
    for (k, b) in out.iter_mut().enumerate() {
        *b = (digit(2 * k)? << 4) | digit(2 * k + 1)?;
    }
    Ok(Sno(out))
}

/// Encodes an ID as 16 lower-case ASCII characters.
#[inline]
pub fn encode(id: &Sno) -> [u8; TEXT_LEN] {
    let mut wide = [0u8; 16];
    wide[16 - LEN..].copy_from_slice(&id.0);
    let n = u128::from_be_bytes(wide);
    let mut out = [0u8; TEXT_LEN];
    for (i, c) in out.iter_mut().enumerate() {
        *c = ALPHABET[((n >> (75 - 5 * i)) & 31) as usize];
    }
    out
}

/// Decodes the 16-character text form. Anything else is an error; nothing is trimmed.
#[inline]
pub fn decode(s: &[u8]) -> Result<Sno, DecodeError> {
    let s: &[u8; TEXT_LEN] = s.try_into().map_err(|_| DecodeError::Length(s.len()))?;
    let mut n: u128 = 0;
    let mut bad: u8 = 0;
    for &c in s {
        let d = DECODE[c as usize];
        bad |= d;
        n = (n << 5) | (d & 31) as u128;
    }
    // One branch for the whole string: INVALID has its top bit set, no digit value does.
    if bad & 0x80 != 0 {
        let position = s
            .iter()
            .position(|&c| DECODE[c as usize] == INVALID)
            .unwrap_or(0);
        return Err(DecodeError::Char {
            position,
            byte: s[position],
        });
    }
    let wide = n.to_be_bytes();
    let mut out = [0u8; LEN];
    out.copy_from_slice(&wide[16 - LEN..]);
    Ok(Sno(out))
}

/// How many bytes of a rejected input [`quote_input`] shows before it cuts.
pub const QUOTED_MAX: usize = 40;

/// `input` for an error message that must be valid in any server encoding: printable ASCII as
/// is, every other byte as `\xNN` (`é` in UTF-8 is `\xc3\xa9`, in LATIN1 `\xe9`). With `utf8`
/// (the server encoding is UTF-8, the one encoding Rust text is valid in), valid UTF-8
/// characters other than control characters are kept too, as PostgreSQL's own input functions
/// show them.
///
/// A server in another encoding (EUC_JP, LATIN1, SQL_ASCII...) gets only ASCII: the input's
/// bytes are valid in its encoding but not Rust text, and bytes replaced with U+FFFD would be
/// invalid there (PostgreSQL then reports `invalid byte sequence`, SQLSTATE 22021, instead of
/// the error, and writes them to the server log). A backslash in the input is shown as is, as
/// PostgreSQL's own messages do (the DETAIL of a rejected ID names the offending byte).
pub fn shown(input: &[u8], utf8: bool) -> String {
    use core::fmt::Write;
    let mut out = String::with_capacity(input.len());
    let escape = |out: &mut String, bytes: &[u8]| {
        for b in bytes {
            let _ = write!(out, "\\x{b:02x}");
        }
    };
    if !utf8 {
        for &b in input {
            if b == b' ' || b.is_ascii_graphic() {
                out.push(b as char);
            } else {
                escape(&mut out, &[b]);
            }
        }
        return out;
    }
    for chunk in input.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c.is_control() {
                escape(&mut out, c.encode_utf8(&mut [0; 4]).as_bytes());
            } else {
                out.push(c);
            }
        }
        escape(&mut out, chunk.invalid());
    }
    out
}

/// A rejected input between double quotes, for an error message ([`shown`]): whole up to
/// [`QUOTED_MAX`] bytes, else its first bytes (not cutting a UTF-8 character when `utf8`) and
/// its length, so that a mistaken multi-megabyte value does not make a multi-megabyte error.
pub fn quote_input(input: &[u8], utf8: bool) -> String {
    if input.len() <= QUOTED_MAX {
        return format!("\"{}\"", shown(input, utf8));
    }
    let mut end = QUOTED_MAX;
    // Back to the start of a UTF-8 sequence (at most 3 continuation bytes).
    while utf8 && end > QUOTED_MAX - 3 && input[end] & 0xc0 == 0x80 {
        end -= 1;
    }
    if utf8 && input[end] & 0xc0 == 0x80 {
        end = QUOTED_MAX;
    }
    format!(
        "\"{}...\" ({} bytes)",
        shown(&input[..end], utf8),
        input.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn spec_examples() {
        assert_eq!(&encode(&Sno::ZERO), b"2222222222222222");
        assert_eq!(&encode(&Sno::MAX), b"xxxxxxxxxxxxxxxx");
        let id = Sno([0x4e, 0x6f, 0x21, 0x60, 0xa0, 0xff, 0x9a, 0x0a, 0x10, 0x33]);
        assert_eq!(&encode(&id), b"brpk4q72xwf2m63l");
        assert_eq!(decode(b"brpk4q72xwf2m63l"), Ok(id));
        assert_eq!(decode(b"BRPK4Q72XWF2M63L"), Ok(id));
    }

    #[test]
    fn alphabet_is_strictly_ascending() {
        assert!(ALPHABET.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn rejects_letters_past_x_and_other_bytes() {
        for bad in [
            b'y', b'z', b'Y', b'Z', b'0', b'1', b' ', b'_', 0, 0xc3, 0xff,
        ] {
            let mut s = *b"2222222222222222";
            s[7] = bad;
            assert_eq!(
                decode(&s),
                Err(DecodeError::Char {
                    position: 7,
                    byte: bad
                })
            );
        }
    }

    #[test]
    fn rejects_other_lengths() {
        assert_eq!(decode(b""), Err(DecodeError::Length(0)));
        assert_eq!(decode(b"222222222222222"), Err(DecodeError::Length(15)));
        assert_eq!(decode(b"22222222222222222"), Err(DecodeError::Length(17)));
    }

    #[test]
    fn the_bytea_hex_form_is_taken_exactly() {
        let id = decode(b"brpk4q72xwf2m63l").unwrap();
        assert_eq!(parse(b"\\x4e6f2160a0ff9a0a1033"), Ok(id));
        assert_eq!(parse(b"\\x4E6F2160A0FF9A0A1033"), Ok(id));
        assert_eq!(parse(b"brpk4q72xwf2m63l"), Ok(id));
        assert_eq!("\\x4e6f2160a0ff9a0a1033".parse::<Sno>(), Ok(id));
        // Not taken: other lengths, other digits, \X, white space, escapes.
        assert_eq!(
            parse(b"\\x4e6f2160a0ff9a0a10"),
            Err(DecodeError::HexLength(18))
        );
        assert_eq!(
            parse(b"\\x4e6f2160a0ff9a0a103300"),
            Err(DecodeError::HexLength(22))
        );
        assert_eq!(parse(b"\\x"), Err(DecodeError::HexLength(0)));
        assert_eq!(
            parse(b"\\x4e6f2160a0ff9a0a103g"),
            Err(DecodeError::HexChar {
                position: 21,
                byte: b'g'
            })
        );
        assert_eq!(
            parse(b"\\X4e6f2160a0ff9a0a1033"),
            Err(DecodeError::HexPrefix)
        );
        assert_eq!(
            parse(b"\\x4e6f 2160a0ff9a0a1033"),
            Err(DecodeError::HexLength(21))
        );
        assert_eq!(
            parse(b"\\x4e6f 160a0ff9a0a1033"),
            Err(DecodeError::HexChar {
                position: 6,
                byte: b' '
            })
        );
        assert_eq!(parse(b"\\116o!"), Err(DecodeError::HexPrefix));
        assert_eq!(
            DecodeError::HexChar {
                position: 21,
                byte: b'g'
            }
            .to_string(),
            "Character \"g\" at position 22 is not a hex digit."
        );
        // decode alone (serde, Go's text) does not take it.
        assert!(decode(b"\\x4e6f2160a0ff9a0a1033").is_err());
    }

    proptest! {
        #[test]
        fn the_hex_form_of_any_id_parses_to_it(b: [u8; LEN]) {
            let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
            prop_assert_eq!(parse(format!("\\x{hex}").as_bytes()), Ok(Sno(b)));
        }
    }

    #[test]
    fn error_details_name_the_problem() {
        let e = decode(b"222222222222222_").unwrap_err();
        assert_eq!(
            e.to_string(),
            "Character \"_\" at position 16 is not one of 2-9, a-x."
        );
        let e = decode(b"2222222222222 22").unwrap_err();
        assert_eq!(
            e.to_string(),
            "Byte 0x20 at position 14 is not one of 2-9, a-x."
        );
        assert_eq!(
            decode(b"22").unwrap_err().to_string(),
            "A sno ID is exactly 16 characters from 2-9, a-x; the input has 2 bytes."
        );
    }

    proptest! {
        #[test]
        fn bytes_round_trip(b: [u8; LEN]) {
            let id = Sno(b);
            prop_assert_eq!(decode(&encode(&id)), Ok(id));
        }

        #[test]
        fn every_valid_string_round_trips(digits in proptest::collection::vec(0usize..32, TEXT_LEN)) {
            let s: Vec<u8> = digits.iter().map(|&d| ALPHABET[d]).collect();
            let id = decode(&s).expect("valid text");
            prop_assert_eq!(encode(&id).to_vec(), s);
        }

        #[test]
        fn upper_case_decodes_like_lower_case(b: [u8; LEN]) {
            let text = encode(&Sno(b));
            prop_assert_eq!(decode(&text.to_ascii_uppercase()), Ok(Sno(b)));
        }

        #[test]
        fn text_order_is_byte_order(a: [u8; LEN], b: [u8; LEN]) {
            prop_assert_eq!(encode(&Sno(a)).cmp(&encode(&Sno(b))), a.cmp(&b));
        }

        #[test]
        fn arbitrary_input_never_panics_and_accepts_only_the_alphabet(s in proptest::collection::vec(any::<u8>(), 0..24)) {
            match decode(&s) {
                Ok(id) => prop_assert_eq!(encode(&id).to_vec(), s.to_ascii_lowercase()),
                Err(DecodeError::Length(n)) => prop_assert!(n != TEXT_LEN && n == s.len()),
                Err(DecodeError::Char { position, byte }) => {
                    prop_assert_eq!(s.len(), TEXT_LEN);
                    prop_assert_eq!(s[position], byte);
                    prop_assert_eq!(DECODE[byte as usize], INVALID);
                    prop_assert!(s[..position].iter().all(|&c| DECODE[c as usize] != INVALID));
                }
                Err(e) => prop_assert!(false, "decode gave a hex-form error: {e:?}"),
            }
        }

        #[test]
        fn arbitrary_input_to_parse_never_panics_and_is_one_of_the_two_forms(s in proptest::collection::vec(any::<u8>(), 0..26)) {
            match parse(&s) {
                Ok(id) if s.first() == Some(&b'\\') => {
                    let hex: String = id.0.iter().map(|x| format!("{x:02x}")).collect();
                    prop_assert_eq!(format!("\\x{hex}").into_bytes(), s.to_ascii_lowercase());
                }
                Ok(id) => prop_assert_eq!(encode(&id).to_vec(), s.to_ascii_lowercase()),
                Err(DecodeError::HexPrefix) => prop_assert!(s[0] == b'\\' && s.get(1) != Some(&b'x')),
                Err(DecodeError::HexLength(n)) => prop_assert!(s.starts_with(b"\\x") && n == s.len() - 2 && n != HEX_DIGITS),
                Err(DecodeError::HexChar { position, byte }) => {
                    prop_assert!(s.starts_with(b"\\x") && s.len() == 2 + HEX_DIGITS);
                    prop_assert_eq!(s[position], byte);
                    prop_assert!(!byte.is_ascii_hexdigit());
                    prop_assert!(s[2..position].iter().all(u8::is_ascii_hexdigit));
                }
                Err(_) => prop_assert!(s.first() != Some(&b'\\')),
            }
        }
    }

    #[test]
    fn rejected_input_is_shown_safely_in_any_server_encoding() {
        // 'é' as the client sends it to a UTF-8, a LATIN1 and an EUC_JP database.
        assert_eq!(shown("é".as_bytes(), true), "é");
        assert_eq!(shown("é".as_bytes(), false), "\\xc3\\xa9");
        assert_eq!(shown(&[0xe9], false), "\\xe9");
        assert_eq!(shown(&[0xe9], true), "\\xe9");
        assert_eq!(shown(&[0x8f, 0xab, 0xb1], false), "\\x8f\\xab\\xb1");
        // Control characters never reach the message raw; printable ASCII always does.
        assert_eq!(shown(b"a\nb\t\x7f", true), "a\\x0ab\\x09\\x7f");
        assert_eq!(shown("a\u{85}".as_bytes(), true), "a\\xc2\\x85");
        assert_eq!(shown(b"x y\"\\z", false), "x y\"\\z");
        assert_eq!(
            quote_input(b"\\x4e6f2160a0ff9a0a10", false),
            "\"\\x4e6f2160a0ff9a0a10\""
        );
        assert_eq!(quote_input(b"", true), "\"\"");
    }

    #[test]
    fn long_input_is_cut_at_a_character() {
        let long = "a".repeat(100);
        assert_eq!(
            quote_input(long.as_bytes(), true),
            format!("\"{}...\" (100 bytes)", &long[..QUOTED_MAX])
        );
        // 'é' over bytes 39-40: left out whole in UTF-8, escaped byte by byte otherwise.
        let s = format!("{}é{}", "a".repeat(39), "b".repeat(10));
        assert_eq!(
            quote_input(s.as_bytes(), true),
            format!("\"{}...\" (51 bytes)", "a".repeat(39))
        );
        assert_eq!(
            quote_input(s.as_bytes(), false),
            format!("\"{}\\xc3...\" (51 bytes)", "a".repeat(39))
        );
        // Exactly the limit: whole.
        let s = "é".repeat(QUOTED_MAX / 2);
        assert_eq!(quote_input(s.as_bytes(), true), format!("\"{s}\""));
        // Invalid UTF-8 of continuation bytes only: cut at the limit.
        let s = [0x80u8; 50];
        assert_eq!(
            quote_input(&s, true),
            format!("\"{}...\" (50 bytes)", "\\x80".repeat(QUOTED_MAX))
        );
    }

    /// The bytes `shown` stands for, when the input had no backslash.
    fn unescaped(text: &str) -> Vec<u8> {
        let mut out = Vec::new();
        let mut rest = text;
        while let Some(c) = rest.chars().next() {
            if let Some(hex) = rest.strip_prefix("\\x") {
                out.push(u8::from_str_radix(&hex[..2], 16).unwrap());
                rest = &hex[2..];
            } else {
                out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                rest = &rest[c.len_utf8()..];
            }
        }
        out
    }

    /// Arbitrary bytes, biased to UTF-8 text, ASCII and the bytes of other encodings.
    fn any_input() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..60),
            any::<String>().prop_map(String::into_bytes),
            "[ -~éあ\n]{0,50}".prop_map(String::into_bytes),
        ]
    }

    proptest! {
        #[test]
        fn shown_input_is_printable_and_names_every_byte(input in any_input(), utf8: bool) {
            let text = shown(&input, utf8);
            prop_assert!(!text.chars().any(char::is_control));
            if !utf8 {
                prop_assert!(text.bytes().all(|b| b == b' ' || b.is_ascii_graphic()));
            }
            if !input.contains(&b'\\') {
                prop_assert_eq!(unescaped(&text), input.clone());
            }
            let quoted = quote_input(&input, utf8);
            prop_assert!(quoted.starts_with('"'));
            prop_assert!(!quoted.chars().any(char::is_control));
            if input.len() <= QUOTED_MAX {
                prop_assert_eq!(quoted, format!("\"{text}\""));
            } else {
                let suffix = format!("...\" ({} bytes)", input.len());
                prop_assert!(quoted.ends_with(&suffix));
                let shown_part = &quoted[1..quoted.len() - suffix.len()];
                prop_assert!(text.starts_with(shown_part));
                if !input.contains(&b'\\') {
                    let cut = unescaped(shown_part);
                    prop_assert!(cut.len() <= QUOTED_MAX && cut.len() + 3 >= QUOTED_MAX);
                    prop_assert_eq!(&input[..cut.len()], &cut[..]);
                }
            }
        }

        #[test]
        fn near_valid_input_gets_the_right_verdict(
            prefix in prop_oneof![Just(&b""[..]), Just(&b"\\"[..]), Just(&b"\\x"[..]), Just(&b"\\X"[..])],
            body in proptest::collection::vec(
                prop_oneof![
                    8 => proptest::sample::select(ALPHABET.to_vec()),
                    3 => proptest::sample::select(b"0123456789abcdefABCDEFXYZyz".to_vec()),
                    1 => any::<u8>(),
                ],
                14..23,
            ),
        ) {
            let s = [prefix, &body].concat();
            // An oracle written apart from the decoder.
            let want = if let Some(hex) = s.strip_prefix(b"\\x") {
                if hex.len() != HEX_DIGITS {
                    Err(DecodeError::HexLength(hex.len()))
                } else if let Some(i) = hex.iter().position(|c| !c.is_ascii_hexdigit()) {
                    Err(DecodeError::HexChar { position: i + 2, byte: hex[i] })
                } else {
                    let text = core::str::from_utf8(hex).unwrap();
                    let n = u128::from_str_radix(text, 16).unwrap();
                    Ok(Sno(n.to_be_bytes()[16 - LEN..].try_into().unwrap()))
                }
            } else if s.first() == Some(&b'\\') {
                Err(DecodeError::HexPrefix)
            } else if s.len() != TEXT_LEN {
                Err(DecodeError::Length(s.len()))
            } else if let Some(i) = s.iter().position(|c| !ALPHABET.contains(&c.to_ascii_lowercase()) || c.is_ascii_uppercase() && c.to_ascii_lowercase() > b'x') {
                Err(DecodeError::Char { position: i, byte: s[i] })
            } else {
                let n = s.iter().fold(0u128, |n, c| {
                    (n << 5) | ALPHABET.iter().position(|a| *a == c.to_ascii_lowercase()).unwrap() as u128
                });
                Ok(Sno(n.to_be_bytes()[16 - LEN..].try_into().unwrap()))
            };
            prop_assert_eq!(parse(&s), want);
            if let Ok(id) = want {
                if prefix.is_empty() {
                    prop_assert_eq!(encode(&id).to_vec(), s.to_ascii_lowercase());
                }
            }
        }
    }
}
