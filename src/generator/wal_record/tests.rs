//! The WAL records' formats: round trips, and every payload encode cannot write refused.

#[test]
fn grant_records_round_trip_and_reject_what_encode_cannot_write() {
    let g = GrantRecord {
        incarnation: 0x0102_0304_0506_0708,
        partition: 61_441,
        role: 16_384,
    };
    assert_eq!(decode_grant(&encode_grant(&g)), Some(g));
    let b = encode_grant(&g);
    assert_eq!(decode_grant(&b[..14]), None);
    let mut long = b.to_vec();
    long.push(0);
    assert_eq!(decode_grant(&long), None);
    let mut v2 = b;
    v2[0] = 2;
    assert_eq!(decode_grant(&v2), None);
    let live = encode_grant(&GrantRecord {
        partition: 61_439,
        ..g
    });
    assert_eq!(decode_grant(&live), None);
}

use super::*;
use proptest::prelude::*;

fn sample() -> State {
    let mut st = State::fresh(42, 5, 3, 77);
    st.me = Persisted {
        horizon: 531_234_567,
        safe: -1,
        drifts: 3,
    };
    st.note(7, true, st.me);
    st.note(
        9,
        false,
        Persisted {
            horizon: 100,
            safe: 50,
            drifts: 1,
        },
    );
    st
}

/// `bytes` with `value` written at `at`.
fn with(mut bytes: Vec<u8>, at: usize, value: &[u8]) -> Vec<u8> {
    bytes[at..at + value.len()].copy_from_slice(value);
    bytes
}

#[test]
fn round_trip() {
    let st = sample();
    let bytes = encode(&st, 4);
    assert_eq!(bytes.len(), HEAD_LEN + 2);
    assert_eq!(
        decode(&bytes),
        Ok(Record {
            incarnation: 5,
            timeline: 4,
            bound: st.me,
            partitions: vec![7]
        })
    );
}

#[test]
fn every_cut_is_rejected() {
    let bytes = encode(&sample(), 4);
    assert_eq!(decode(&[]), Err(RecordError::Empty));
    for cut in 1..HEAD_LEN {
        assert_eq!(decode(&bytes[..cut]), Err(RecordError::Short(cut)));
    }
    assert_eq!(
        decode(&bytes[..HEAD_LEN]),
        Err(RecordError::Length {
            len: HEAD_LEN,
            count: 1
        })
    );
    assert_eq!(
        decode(&bytes[..HEAD_LEN + 1]),
        Err(RecordError::Length {
            len: HEAD_LEN + 1,
            count: 1
        })
    );
    let mut longer = bytes.clone();
    longer.extend_from_slice(&[0, 0]);
    assert_eq!(
        decode(&longer),
        Err(RecordError::Length {
            len: HEAD_LEN + 4,
            count: 1
        })
    );
}

#[test]
fn an_unknown_version_is_rejected() {
    let bytes = encode(&sample(), 4);
    for v in [0u8, 2, 0x10, 0xff] {
        assert_eq!(
            decode(&with(bytes.clone(), 0, &[v])),
            Err(RecordError::Version(v))
        );
    }
}

#[test]
fn a_timeline_postgresql_never_uses_is_rejected() {
    let bytes = encode(&sample(), 4);
    for t in [0, UPGRADED] {
        assert_eq!(
            decode(&with(bytes.clone(), 9, &t.to_le_bytes())),
            Err(RecordError::Timeline(t))
        );
    }
    let last = UPGRADED - 1;
    assert_eq!(
        decode(&with(bytes, 9, &last.to_le_bytes())).map(|r| r.timeline),
        Ok(last)
    );
}

#[test]
fn a_horizon_past_the_format_is_rejected() {
    let bytes = encode(&sample(), 4);
    for h in [MAX_UNITS + 1, 1 << 63, u64::MAX] {
        assert_eq!(
            decode(&with(bytes.clone(), 13, &h.to_le_bytes())),
            Err(RecordError::Horizon(h))
        );
    }
    let r = decode(&with(bytes, 13, &MAX_UNITS.to_le_bytes())).unwrap();
    assert_eq!(r.bound.horizon, MAX_UNITS);
}

#[test]
fn a_safe_mark_outside_the_format_is_rejected() {
    let bytes = encode(&sample(), 4);
    for s in [-2i64, i64::MIN, MAX_UNITS as i64 + 1, i64::MAX] {
        assert_eq!(
            decode(&with(bytes.clone(), 21, &s.to_le_bytes())),
            Err(RecordError::Safe(s))
        );
    }
    for s in [-1i64, 0, MAX_UNITS as i64] {
        let r = decode(&with(bytes.clone(), 21, &s.to_le_bytes())).unwrap();
        assert_eq!(r.bound.safe, s);
    }
}

#[test]
fn errors_say_what_is_wrong() {
    assert_eq!(
        RecordError::Horizon(u64::MAX).to_string(),
        "horizon 18446744073709551615 out of range"
    );
    assert_eq!(
        RecordError::Length { len: 40, count: 1 }.to_string(),
        "40 bytes for 1 partitions (41 expected)"
    );
}

/// A record as [`encode`] writes it for any in-range values.
fn valid() -> impl Strategy<Value = (Record, Vec<u8>)> {
    (
        any::<u64>(),
        1u32..UPGRADED,
        0..=MAX_UNITS,
        -1..=MAX_UNITS as i64,
        any::<u64>(),
        proptest::collection::vec(any::<u16>(), 0..8),
    )
        .prop_map(
            |(incarnation, timeline, horizon, safe, drifts, partitions)| {
                let mut st = State::fresh(1, incarnation, timeline, 0);
                st.me = Persisted {
                    horizon,
                    safe,
                    drifts,
                };
                let mut want = Vec::new();
                for &p in &partitions {
                    if !st.is_mine(p) {
                        st.note(p, true, st.me);
                        want.push(p);
                    }
                }
                let bytes = encode(&st, timeline);
                let rec = Record {
                    incarnation,
                    timeline,
                    bound: st.me,
                    partitions: want,
                };
                (rec, bytes)
            },
        )
}

/// What a correct decoder must say of `b`, written independently of [`decode`].
fn verdict(b: &[u8]) -> Result<(), RecordError> {
    if b.is_empty() {
        return Err(RecordError::Empty);
    }
    if b[0] != VERSION {
        return Err(RecordError::Version(b[0]));
    }
    if b.len() < HEAD_LEN {
        return Err(RecordError::Short(b.len()));
    }
    let count = b[37] as usize | (b[38] as usize) << 8;
    if b.len() != HEAD_LEN + 2 * count {
        return Err(RecordError::Length {
            len: b.len(),
            count: count as u16,
        });
    }
    let le = |r: core::ops::Range<usize>| {
        b[r].iter()
            .rev()
            .fold(0u64, |acc, &x| (acc << 8) | x as u64)
    };
    let t = le(9..13) as u32;
    if t == 0 || t == u32::MAX {
        return Err(RecordError::Timeline(t));
    }
    if le(13..21) >= 1 << 39 {
        return Err(RecordError::Horizon(le(13..21)));
    }
    let s = le(21..29) as i64;
    if !(-1..1 << 39).contains(&s) {
        return Err(RecordError::Safe(s));
    }
    Ok(())
}

proptest! {
    #[test]
    fn valid_records_round_trip((rec, bytes) in valid()) {
        let got = decode(&bytes).unwrap();
        prop_assert_eq!(&got, &rec);
        // And encode again to the same bytes.
        let mut st = State::fresh(1, got.incarnation, got.timeline, 0);
        st.me = got.bound;
        for &p in &got.partitions {
            st.note(p, true, st.me);
        }
        prop_assert_eq!(encode(&st, got.timeline), bytes);
    }

    #[test]
    fn arbitrary_bytes_never_panic_and_get_the_right_verdict(
        mut b in proptest::collection::vec(any::<u8>(), 0..60),
        version: bool,
        count: bool,
        small: bool,
    ) {
        // Past the first checks often enough: the version byte, a count that fits the
        // length, fields with their high bytes cleared.
        if version && !b.is_empty() {
            b[0] = VERSION;
        }
        if count && b.len() >= HEAD_LEN && (b.len() - HEAD_LEN) % 2 == 0 {
            let n = ((b.len() - HEAD_LEN) / 2) as u16;
            b[37..39].copy_from_slice(&n.to_le_bytes());
        }
        if small && b.len() >= HEAD_LEN {
            for i in [12, 17, 18, 19, 20, 25, 26, 27, 28] {
                b[i] = 0;
            }
        }
        prop_assert_eq!(decode(&b).map(|_| ()), verdict(&b));
    }

    #[test]
    fn a_mutated_record_is_decoded_or_rejected_for_its_reason(
        (_, bytes) in valid(),
        at: usize,
        x in 1u8..=255,
        cut in proptest::option::of(0usize..60),
    ) {
        let mut b = bytes;
        let i = at % b.len();
        b[i] ^= x;
        if let Some(c) = cut {
            b.truncate(c);
        }
        match decode(&b) {
            Ok(r) => {
                prop_assert_eq!(verdict(&b), Ok(()));
                prop_assert!(r.bound.horizon <= MAX_UNITS);
                prop_assert!((-1..=MAX_UNITS as i64).contains(&r.bound.safe));
                prop_assert_eq!(b.len(), HEAD_LEN + 2 * r.partitions.len());
            }
            Err(e) => prop_assert_eq!(Err(e), verdict(&b)),
        }
    }
}
