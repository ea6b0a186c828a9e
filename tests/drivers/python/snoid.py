"""The sno ID layout in pure Python, for the tests' own checks (no recipe needs it).

10 bytes, big-endian: 39 bits of time in 4 ms units since 2010-01-01 UTC, the tick-tock
bit, meta (1 byte), partition (2 bytes), sequence (2 bytes). The text form is those 80 bits
as 16 five-bit digits, most significant first, in the alphabet below.
"""

from datetime import datetime, timedelta, timezone

ALPHABET = "23456789abcdefghijklmnopqrstuvwx"
EPOCH = datetime(2010, 1, 1, tzinfo=timezone.utc)
EPOCH_UNIX_MS = 1262304000000
_INDEX = {c: i for i, c in enumerate(ALPHABET)}
_INDEX.update({c.upper(): i for c, i in list(_INDEX.items()) if c.isalpha()})


def encode(raw: bytes) -> str:
    """The 16-character text of 10 raw bytes."""
    if len(raw) != 10:
        raise ValueError(f"a sno ID is 10 bytes, not {len(raw)}")
    n = int.from_bytes(raw, "big")
    return "".join(ALPHABET[(n >> (5 * (15 - i))) & 31] for i in range(16))


def decode(text: str) -> bytes:
    """The 10 raw bytes of a 16-character text (upper case A-X accepted, as by the server)."""
    if len(text) != 16:
        raise ValueError(f"a sno ID's text is 16 characters, not {len(text)}: {text!r}")
    n = 0
    for c in text:
        if c not in _INDEX:
            raise ValueError(f"{c!r} is not one of 2-9, a-x: {text!r}")
        n = n << 5 | _INDEX[c]
    return n.to_bytes(10, "big")


def parts(raw: bytes) -> dict:
    """The fields, as sno_time (a UTC datetime), sno_tick, sno_meta, sno_partition, sno_sequence."""
    if len(raw) != 10:
        raise ValueError(f"a sno ID is 10 bytes, not {len(raw)}")
    head = int.from_bytes(raw[:5], "big")
    return {
        "time": EPOCH + timedelta(milliseconds=4 * (head >> 1)),
        "tick": head & 1,
        "meta": raw[5],
        "partition": int.from_bytes(raw[6:8], "big"),
        "sequence": int.from_bytes(raw[8:10], "big"),
    }


def build(time: datetime, meta: int, partition: int, sequence: int, tick: int = 0) -> bytes:
    """An ID from its fields, the time floored to its 4 ms unit (like sno_from_parts)."""
    units = (time - EPOCH) // timedelta(milliseconds=4)
    if not 0 <= units < 1 << 39:
        raise ValueError(f"time {time} is outside 2010-2079")
    head = units << 1 | tick
    return head.to_bytes(5, "big") + bytes([meta]) + partition.to_bytes(2, "big") + sequence.to_bytes(2, "big")
