//! The state file's format: every version read, every corruption refused, round trips.

use super::*;

#[test]
fn a_reason_is_cut_at_a_character_boundary() {
    let why = "é".repeat(150); // 300 bytes
    let cut = reason_prefix(&why, 200);
    assert_eq!(cut.len(), 200);
    assert_eq!(reason_prefix("aé", 2), "a");
    assert_eq!(reason_prefix("short", 200), "short");
    assert_eq!(reason_prefix("€€", 5), "€");
}
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

#[test]
fn crc32_check_value() {
    // The standard check value of CRC-32/ISO-HDLC.
    assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
}

#[test]
fn round_trip() {
    let st = sample();
    assert_eq!(decode(encode(&st).as_bytes()), Ok(st));
    let mut copied = st;
    copied.copied = true;
    assert_eq!(decode(encode(&copied).as_bytes()), Ok(copied));
}

#[test]
fn a_citus_node_writes_version_3_and_no_other_server_does() {
    let st = sample();
    assert!(encode(&st).starts_with("sno generator state 2\n"));
    let mut node = st;
    node.citus_group = 3;
    let text = encode(&node);
    assert!(text.starts_with("sno generator state 3\n"));
    assert!(text.contains("\nretired=0,-1,0\ncitus_group=3\nused=7,"));
    assert_eq!(decode(text.as_bytes()), Ok(node));
    // A version 3 file without the group, or with the "none" value, is corrupt.
    let body = text.replace("citus_group=3\n", "");
    let body = &body[..body.rfind("crc32=").unwrap()];
    let forged = format!("{body}crc32={:08x}\n", crc32(body.as_bytes()));
    assert_eq!(
        decode(forged.as_bytes()),
        Err(StateError::Corrupt("no citus_group".into()))
    );
}

#[test]
fn reads_version_1_files() {
    // A file written by sno 0.1.0 (its CRC computed over these bytes).
    let body = "sno generator state 1\nsystem_identifier=42\ninstance=5\ninherited=-1\nhorizon=900\nsafe=-1\ndrifts=2\n";
    let text = format!("{body}crc32={:08x}\n", crc32(body.as_bytes()));
    let st = decode(text.as_bytes()).unwrap();
    assert_eq!(
        (st.system_identifier, st.incarnation, st.timeline),
        (42, 5, 0)
    );
    assert_eq!(st.me.horizon, 900);
    assert!(st.is_mine(st.derived()));
}

#[test]
fn rejects_empty_and_truncated() {
    assert!(matches!(decode(b""), Err(StateError::Corrupt(_))));
    let text = encode(&sample());
    for cut in 0..text.len() {
        assert!(
            decode(&text.as_bytes()[..cut]).is_err(),
            "accepted a file cut at {cut}"
        );
    }
}

#[test]
fn file_write_read_replace() {
    let dir = std::env::temp_dir().join(format!("sno-state-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    assert_eq!(read(&dir), Ok(None));
    let a = sample();
    let mut b = sample();
    b.incarnation = 6;
    write(&dir, &a, true).unwrap();
    assert_eq!(read(&dir), Ok(Some(a)));
    write(&dir, &b, false).unwrap();
    assert_eq!(read(&dir), Ok(Some(b)));
    assert!(!dir.join(format!("{FILE_NAME}.tmp")).exists());
    std::fs::write(dir.join(FILE_NAME), b"garbage").unwrap();
    assert!(matches!(read(&dir), Err(StateError::Corrupt(_))));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A lineage that used `n` partitions of other members, from 1000 on, and 70 of its own
/// (`sno.partition` set in turn): more than the table holds.
fn many(n: u16) -> State {
    let mut st = sample();
    for i in 0..n {
        st.note(
            1000 + i,
            false,
            Persisted {
                horizon: 200 + u64::from(i),
                safe: -1,
                drifts: 0,
            },
        );
    }
    for k in 0..70u16 {
        st.note(20_000 + k, true, st.me);
    }
    st
}

#[test]
fn a_lineage_past_the_table_size_writes_version_4() {
    let st = many(100);
    assert!(st.folded().count() > 0);
    let text = encode(&st);
    assert!(text.starts_with("sno generator state 4\n"), "{text}");
    assert!(
        text.contains(
            "\nretired=100,236,1\nretired_others=9,1000-1036\nretired_mine=7,20000-20068\nused="
        ),
        "{text}"
    );
    assert!(!text.contains("citus_group"));
    let back = decode(text.as_bytes()).unwrap();
    assert_eq!(back, st);
    for q in (1000..1100).chain([9]) {
        assert!(back.others(q).is_some(), "{q}");
    }
    for q in (20_000..20_070).chain([7]) {
        assert!(back.is_mine(q), "{q}");
    }
    // A Citus node's, with its group.
    let mut node = st;
    node.citus_group = 3;
    let text = encode(&node);
    assert!(text.contains("\ncitus_group=3\nretired_others=9,1000-1036\n"));
    assert_eq!(decode(text.as_bytes()), Ok(node));
    // Nothing without an entry: the versions before.
    assert!(encode(&sample()).starts_with("sno generator state 2\n"));
    for cut in 0..text.len() {
        assert!(decode(&text.as_bytes()[..cut]).is_err(), "cut at {cut}");
    }
}

#[test]
fn grants_and_a_blocked_copy_write_version_5() {
    let mut st = sample();
    assert!(encode(&st).starts_with("sno generator state 2\n"));
    st.note_grant_to(61_440, 10);
    st.note_granted(61_441);
    st.note_grant_to(61_500, 16_384);
    let text = encode(&st);
    assert!(text.starts_with("sno generator state 5\n"), "{text}");
    assert!(
        text.contains(
            "\ngrants_blocked=0\ngranted=61440-61441,61500\ngrantees=61440:10,61500:16384\n"
        ),
        "{text}"
    );
    assert_eq!(decode(text.as_bytes()), Ok(st));
    assert_eq!(
        (st.grants_of(10), st.grants_of(16_384), st.grants_of(0)),
        (1, 1, 0)
    );
    // Grantees are checked: a partition not granted, out of order, role 0.
    let body = &text[..text.rfind("crc32=").unwrap()];
    for bad in ["61441:0", "61442:7", "61500:1,61440:2", "61440:x", "61440"] {
        let b = body.replace("grantees=61440:10,61500:16384", &format!("grantees={bad}"));
        let forged = format!("{b}crc32={:08x}\n", crc32(b.as_bytes()));
        assert!(decode(forged.as_bytes()).is_err(), "{bad}");
    }
    let mut c = sample();
    c.grants_blocked = true;
    let text = encode(&c);
    assert!(
        text.contains("\ngrants_blocked=1\ngranted=\ngrantees=\n"),
        "{text}"
    );
    assert_eq!(decode(text.as_bytes()), Ok(c));
    // A granted partition outside the reserved range is refused.
    let body = &text[..text.rfind("crc32=").unwrap()];
    let b = body.replace("granted=\n", "granted=5\n");
    let forged = format!("{b}crc32={:08x}\n", crc32(b.as_bytes()));
    assert!(decode(forged.as_bytes()).is_err());
    let b = body.replace("grants_blocked=1", "grants_blocked=3");
    let forged = format!("{b}crc32={:08x}\n", crc32(b.as_bytes()));
    assert!(decode(forged.as_bytes()).is_err());
}

#[test]
fn version_4_lists_are_checked() {
    let text = encode(&many(100));
    let body = &text[..text.rfind("crc32=").unwrap()];
    let forge = |from: &str, to: &str| {
        let b = body.replace(from, to);
        format!("{b}crc32={:08x}\n", crc32(b.as_bytes()))
    };
    let bad = Err(StateError::Corrupt("bad partition list".into()));
    for list in [
        "1036-1000",
        "9,1000-1036,5",
        "9,1000-1036,1036",
        "x",
        "1000-",
        "-5",
        "70000",
        ",",
    ] {
        let t = forge(
            "retired_others=9,1000-1036",
            &format!("retired_others={list}"),
        );
        assert_eq!(decode(t.as_bytes()), bad, "{list}");
    }
    // Empty lists, adjacent ranges: read.
    let t = forge("retired_others=9,1000-1036", "retired_others=");
    assert!(decode(t.as_bytes()).is_ok());
    let t = forge(
        "retired_others=9,1000-1036",
        "retired_others=9,1000-1017,1018-1036",
    );
    assert_eq!(decode(t.as_bytes()), Ok(many(100)));
    let t = forge("retired_mine=7,20000-20068\n", "");
    assert_eq!(
        decode(t.as_bytes()),
        Err(StateError::Corrupt("no retired_mine".into()))
    );
    // Not in the versions before.
    let t = forge("sno generator state 4", "sno generator state 2");
    assert!(decode(t.as_bytes()).is_err());
}

#[test]
fn a_record_lists_every_partition_of_the_incarnation() {
    let st = many(100);
    let r = crate::generator::wal_record::decode(&crate::generator::wal_record::encode(&st, 4))
        .unwrap();
    let mut want: Vec<u16> = (20_000..20_070).chain([7]).collect();
    let mut got = r.partitions.clone();
    // Those with an entry first.
    let first = st.entries().iter().filter(|e| e.mine).count();
    assert!(got[..first]
        .iter()
        .all(|&q| st.entries().iter().any(|e| e.mine && e.partition == q)));
    got.sort_unstable();
    want.sort_unstable();
    assert_eq!(got, want);
    // All 65,536: the 16-bit count holds 65,535 of them.
    let mut all = sample();
    for q in 0..=u16::MAX {
        all.used_by_me.insert(q);
    }
    let r = crate::generator::wal_record::decode(&crate::generator::wal_record::encode(&all, 4))
        .unwrap();
    assert_eq!(r.partitions.len(), 65_535);
    assert!(r.partitions.contains(&7));
}

proptest! {
    #[test]
    fn any_single_byte_change_is_detected(h in 0u64..(1 << 39), s in -1i64..(1 << 39), d: u64, i: u64, at: usize, x in 1u8..=255) {
        let mut st = State::fresh(7, i, 1, 2);
        st.me = Persisted { horizon: h, safe: s, drifts: d };
        st.note((i % 65536) as u16, i % 2 == 0, st.me);
        let mut bytes = encode(&st).into_bytes();
        let i = at % bytes.len();
        bytes[i] ^= x;
        prop_assert!(decode(&bytes).is_err());
    }
}

/// Any state the generator can be in, within the format's range: a Citus node or not, a
/// copy or not, from no partitions to more than the table holds (version 4).
fn any_state() -> impl Strategy<Value = State> {
    let bound = || {
        (
            0..=crate::id::layout::MAX_UNITS,
            -1..=crate::id::layout::MAX_UNITS as i64,
            any::<u64>(),
        )
            .prop_map(|(horizon, safe, drifts)| Persisted {
                horizon,
                safe,
                drifts,
            })
    };
    (
        (any::<u64>(), any::<u64>(), any::<u32>(), any::<u64>()),
        (any::<bool>(), proptest::option::of(0u32..4096), bound()),
        proptest::collection::vec((any::<u16>(), any::<bool>(), bound()), 0..80),
        (
            0u8..3,
            proptest::collection::vec((61_440u16..=65_535, 0u32..3), 0..6),
        ),
    )
        .prop_map(
            |((sysid, inc, tl, inode), (copied, group, me), used, (blocked, granted))| {
                let mut st = State::fresh(sysid, inc, tl, inode);
                st.copied = copied;
                st.grants_blocked = blocked > 0;
                st.grants_blocked_lasting = blocked > 1;
                for (p, role) in granted {
                    st.note_grant_to(p, role);
                }
                st.citus_group = group.unwrap_or(NO_GROUP);
                st.me = me;
                for (p, mine, b) in used {
                    st.note(p, mine, b);
                }
                st
            },
        )
}

/// `body` with the checksum line `encode` would write for it.
fn sealed(body: &[u8]) -> Vec<u8> {
    let mut v = body.to_vec();
    v.extend_from_slice(format!("crc32={:08x}\n", crc32(body)).as_bytes());
    v
}

/// What every answer of `decode` must satisfy: an error is `Corrupt` (decode reads no
/// file), and a state read has every bound within the format's range and encodes to a
/// file that reads back as the same state.
fn consistent(bytes: &[u8]) -> Result<Option<State>, TestCaseError> {
    match decode(bytes) {
        Err(StateError::Corrupt(_)) => Ok(None),
        Err(e) => Err(TestCaseError::fail(format!("decode gave {e:?}"))),
        Ok(st) => {
            let max = crate::id::layout::MAX_UNITS;
            let bounds = [st.me, st.retired]
                .into_iter()
                .chain(st.entries().iter().map(|e| e.bound));
            for b in bounds {
                prop_assert!(
                    b.horizon <= max && (-1..=max as i64).contains(&b.safe),
                    "{b:?}"
                );
            }
            prop_assert!(st.len as usize <= MAX_ENTRIES);
            prop_assert_eq!(decode(encode(&st).as_bytes()), Ok(st));
            Ok(Some(st))
        }
    }
}

/// One edit of a file's bytes.
#[derive(Clone, Debug)]
enum Edit {
    Flip(usize, u8),
    Delete(usize, usize),
    Insert(usize, Vec<u8>),
    /// Line `.0` becomes its key and one of [`VALUES`].
    Value(usize, usize),
    DuplicateLine(usize),
    DeleteLine(usize),
    SwapLines(usize, usize),
}

/// Values at and around the edges of every field's range, and misspellings.
const VALUES: &[&str] = &[
    "",
    "0",
    "1",
    "-1",
    "-2",
    "2",
    "+1",
    " 1",
    "01",
    "x",
    "1-0",
    "0-65535",
    "65535",
    "65536",
    "4095",
    "4294967295",
    "4294967296",
    "549755813887",
    "549755813888",
    "9223372036854775807",
    "18446744073709551615",
    "18446744073709551616",
    "0,-1,0",
    "549755813888,-1,0",
    "0,549755813888,0",
    "0,-2,0",
    "1,2",
    "1,2,3,4",
    "40000,1,0,-1,0",
    "40000,2,0,-1,0",
    "40000,1,549755813888,-1,0",
    "1,5-3",
    "3,2",
    "1,1",
];

/// Values `decode` reads though `encode` spells them otherwise (Rust's integer parsing; the
/// partition lists of version 4 are read leniently too: adjacent items, partitions that
/// also have an entry).
const LENIENT: &[&str] = &["+1", "01"];

fn any_edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), 1u8..=255).prop_map(|(i, x)| Edit::Flip(i, x)),
        (any::<usize>(), 1usize..8).prop_map(|(i, n)| Edit::Delete(i, n)),
        (any::<usize>(), proptest::collection::vec(any::<u8>(), 1..6))
            .prop_map(|(i, b)| Edit::Insert(i, b)),
        (any::<usize>(), any::<usize>()).prop_map(|(l, v)| Edit::Value(l, v)),
        any::<usize>().prop_map(Edit::DuplicateLine),
        any::<usize>().prop_map(Edit::DeleteLine),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Edit::SwapLines(a, b)),
    ]
}

/// `body` (a file without its checksum line) with `edit` applied.
fn edited(body: &[u8], edit: &Edit) -> Vec<u8> {
    let mut b = body.to_vec();
    let mut lines: Vec<Vec<u8>> = body
        .split_inclusive(|&c| c == b'\n')
        .map(<[u8]>::to_vec)
        .collect();
    let n = lines.len();
    match edit {
        Edit::Flip(i, x) => {
            let at = i % b.len();
            b[at] ^= x;
        }
        Edit::Delete(i, k) => {
            let at = i % b.len();
            b.drain(at..(at + k).min(b.len()));
        }
        Edit::Insert(i, bytes) => {
            let at = i % (b.len() + 1);
            b.splice(at..at, bytes.iter().copied());
        }
        Edit::Value(l, v) => {
            let line = &mut lines[l % n];
            let key = line.iter().position(|&c| c == b'=').map_or(0, |k| k + 1);
            line.truncate(key);
            line.extend_from_slice(VALUES[v % VALUES.len()].as_bytes());
            line.push(b'\n');
            return lines.concat();
        }
        Edit::DuplicateLine(l) => {
            let line = lines[l % n].clone();
            lines.insert(l % n, line);
            return lines.concat();
        }
        Edit::DeleteLine(l) => {
            lines.remove(l % n);
            return lines.concat();
        }
        Edit::SwapLines(a, c) => {
            lines.swap(a % n, c % n);
            return lines.concat();
        }
    }
    b
}

#[test]
fn every_field_at_its_edges_is_refused_or_read_exactly() {
    let mut node = many(100);
    node.citus_group = 3;
    let mut odd = Vec::new();
    for st in [sample(), many(100), node] {
        let text = encode(&st);
        let body = &text.as_bytes()[..text.rfind("crc32=").unwrap()];
        let lines: Vec<&[u8]> = body.split_inclusive(|&c| c == b'\n').collect();
        for (line, old) in lines.iter().enumerate() {
            // The first `used` line stands for all of them.
            if old.starts_with(b"used=") && lines[line - 1].starts_with(b"used=") {
                continue;
            }
            let list = old.starts_with(b"retired_others=") || old.starts_with(b"retired_mine=");
            for (v, value) in VALUES.iter().enumerate() {
                let file = sealed(&edited(body, &Edit::Value(line, v)));
                let got = consistent(&file).unwrap();
                if let (Some(got), false) = (got, list) {
                    if !LENIENT.contains(value) && encode(&got).as_bytes() != file {
                        odd.push(String::from_utf8_lossy(&file).into_owned());
                    }
                }
            }
        }
    }
    assert!(odd.is_empty(), "{}", odd.join("\n---\n"));
    // A full table and one `used` line more.
    let text = encode(&many(100));
    let body = &text.as_bytes()[..text.rfind("crc32=").unwrap()];
    let at = body.split_inclusive(|&c| c == b'\n').count() - 1;
    assert_eq!(
        decode(&sealed(&edited(body, &Edit::DuplicateLine(at)))),
        Err(StateError::Corrupt("too many used lines".into()))
    );
}

proptest! {
    #[test]
    fn any_state_round_trips_through_its_file(st in any_state()) {
        let text = encode(&st);
        prop_assert_eq!(consistent(text.as_bytes())?, Some(st));
    }

    #[test]
    fn arbitrary_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..400)) {
        // Without a checksum line that matches, nothing is read.
        prop_assert_eq!(consistent(&b)?, None);
        // With one, the lines are parsed: mostly refused, anything read is consistent.
        consistent(&sealed(&b))?;
    }

    #[test]
    fn arbitrary_lines_after_a_header_never_panic(
        header in 1usize..=4,
        lines in proptest::collection::vec(
            (proptest::sample::select(vec![
                "system_identifier", "incarnation", "timeline", "control_inode", "copied",
                "horizon", "safe", "drifts", "retired", "citus_group", "retired_others",
                "retired_mine", "used", "instance", "inherited", "crc32",
            ]), any::<usize>()),
            0..16,
        ),
    ) {
        let mut body = format!("sno generator state {header}\n");
        for (key, v) in lines {
            body.push_str(&format!("{key}={}\n", VALUES[v % VALUES.len()]));
        }
        consistent(&sealed(body.as_bytes()))?;
    }

    #[test]
    fn an_edited_file_is_refused_or_read_consistently(
        st in any_state(),
        edits in proptest::collection::vec(any_edit(), 1..4),
        reseal: bool,
    ) {
        let text = encode(&st);
        let body = &text.as_bytes()[..text.rfind("crc32=").unwrap()];
        let mut b = body.to_vec();
        for e in &edits {
            if b.is_empty() {
                break;
            }
            b = edited(&b, e);
        }
        if reseal {
            // The checksum recomputed: what a tool rewriting the file, or a bug, gives;
            // the parser sees every edit.
            consistent(&sealed(&b))?;
        } else {
            let mut file = b.clone();
            file.extend_from_slice(&text.as_bytes()[body.len()..]);
            // The old checksum: an edit that changed anything is refused.
            let got = consistent(&file)?;
            if b != body {
                prop_assert_eq!(got, None);
            } else {
                prop_assert_eq!(got, Some(st));
            }
        }
    }
}
