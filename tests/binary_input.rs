//! The binary input of `sno` over arbitrary bytes: what `sno_recv` (the binary wire form) and
//! the `sno(bytea)` cast accept is [`Sno::from_slice`] (and `TryFrom<&[u8]>`): exactly 10
//! bytes, any of them, else an error that gives the length. Never a panic, never a truncation
//! or padding; every accepted value is the bytes themselves, and writes back to them through
//! every other form (text, bytea hex).

use proptest::prelude::*;
use sno::id::encoding::{decode, encode, parse};
use sno::id::layout::{LengthError, Sno, LEN};

proptest! {
    #[test]
    fn exactly_ten_bytes_are_an_id_and_nothing_else_is(b in proptest::collection::vec(any::<u8>(), 0..40)) {
        match Sno::from_slice(&b) {
            Some(id) => {
                prop_assert_eq!(b.len(), LEN);
                prop_assert_eq!(&id.0[..], &b[..]);
                prop_assert_eq!(Sno::try_from(&b[..]), Ok(id));
                prop_assert_eq!(id.as_ref(), &b[..]);
            }
            None => {
                prop_assert_ne!(b.len(), LEN);
                prop_assert_eq!(Sno::try_from(&b[..]), Err(LengthError(b.len())));
                prop_assert_eq!(
                    LengthError(b.len()).to_string(),
                    format!("a sno ID is exactly 10 bytes, not {}", b.len())
                );
            }
        }
    }

    #[test]
    fn any_ten_bytes_round_trip_through_every_form(b: [u8; LEN]) {
        let id = Sno::from_slice(&b).expect("10 bytes");
        prop_assert_eq!(decode(&encode(&id)), Ok(id));
        let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
        prop_assert_eq!(parse(format!("\\x{hex}").as_bytes()), Ok(id));
        let bytes: [u8; LEN] = id.into();
        prop_assert_eq!(bytes, b);
    }

    #[test]
    fn a_prefix_or_an_extension_of_an_id_is_refused(b: [u8; LEN], cut in 0..LEN, extra in proptest::collection::vec(any::<u8>(), 1..8)) {
        prop_assert_eq!(Sno::from_slice(&b[..cut]), None);
        let longer = [&b[..], &extra[..]].concat();
        prop_assert_eq!(Sno::try_from(&longer[..]), Err(LengthError(LEN + extra.len())));
    }
}
