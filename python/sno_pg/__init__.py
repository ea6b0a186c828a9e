"""sno IDs in Python: the 16-character text, read without a round trip to the server.

An ID is 10 bytes, big-endian (the layout of the extension's README):

    bytes 0-4   39 bits of time in 4 ms units since 2010-01-01 UTC, then the tick-tock bit
    byte  5     meta
    bytes 6-7   partition
    bytes 8-9   sequence

Its text is those 80 bits as 16 five-bit digits, most significant first, in the alphabet
``23456789abcdefghijklmnopqrstuvwx``; the server also reads upper case A-X. The functions here
take either form (a ``str`` of 16 characters or ``bytes`` of 10) and mirror the SQL functions
of the same names, so ``sno_time(order.id)`` needs no query. The ORM integrations live in
``sno_pg.sqlalchemy`` and ``sno_pg.django``; this module imports neither.
"""

from datetime import datetime, timedelta, timezone

__all__ = [
    "ALPHABET",
    "is_sno",
    "normalize",
    "sno_from_bytes",
    "sno_meta",
    "sno_partition",
    "sno_sequence",
    "sno_tick",
    "sno_time",
    "sno_to_bytes",
]

ALPHABET = "23456789abcdefghijklmnopqrstuvwx"
_EPOCH = datetime(2010, 1, 1, tzinfo=timezone.utc)
_DIGIT = {c: i for i, c in enumerate(ALPHABET)}
_DIGIT.update({c.upper(): i for c, i in list(_DIGIT.items()) if c.isalpha()})


def sno_to_bytes(id):
    """The 10 raw bytes of an ID given as its text (or as 10 bytes); ValueError if it is not one."""
    if isinstance(id, (bytes, bytearray, memoryview)):
        raw = bytes(id)
        if len(raw) != 10:
            raise ValueError(f"a sno ID is 10 bytes, not {len(raw)}")
        return raw
    if not isinstance(id, str):
        raise TypeError(f"a sno ID is a str of 16 characters or 10 bytes, not {type(id).__name__}")
    if len(id) != 16:
        raise ValueError(f"invalid input syntax for type sno: {id!r} (16 characters, not {len(id)})")
    n = 0
    for c in id:
        d = _DIGIT.get(c)
        if d is None:
            raise ValueError(f"invalid input syntax for type sno: {id!r} ({c!r} is not one of 2-9, a-x)")
        n = n << 5 | d
    return n.to_bytes(10, "big")


def sno_from_bytes(raw):
    """The 16-character text of 10 raw bytes (what ``id::bytea`` or a binary result gives)."""
    return _text(int.from_bytes(sno_to_bytes(raw), "big"))


# The two digits of every 10-bit value, for _text.
_PAIRS = [a + b for a in ALPHABET for b in ALPHABET]


def _text(n, p=_PAIRS):
    """The text of an ID given as its 80 bits (an int below 2**80): two digits per lookup."""
    return "".join((p[n >> 70], p[n >> 60 & 1023], p[n >> 50 & 1023], p[n >> 40 & 1023],
                    p[n >> 30 & 1023], p[n >> 20 & 1023], p[n >> 10 & 1023], p[n & 1023]))


def normalize(id):
    """The text as the server prints it (lower case); ValueError if it is not an ID."""
    return sno_from_bytes(sno_to_bytes(id))


def is_sno(id):
    """Whether the value is an ID's text (or 10 bytes), as the server's input would read it."""
    try:
        sno_to_bytes(id)
    except (TypeError, ValueError):
        return False
    return True


def sno_time(id):
    """The ID's time as an aware UTC datetime (4 ms precision), as SQL's sno_time(id)."""
    head = int.from_bytes(sno_to_bytes(id)[:5], "big")
    return _EPOCH + timedelta(milliseconds=4 * (head >> 1))


def sno_tick(id):
    """The tick-tock bit (0 or 1), as SQL's sno_tick(id)."""
    return sno_to_bytes(id)[4] & 1


def sno_meta(id):
    """The meta byte (0-255), as SQL's sno_meta(id)."""
    return sno_to_bytes(id)[5]


def sno_partition(id):
    """The partition (0-65535), as SQL's sno_partition(id)."""
    return int.from_bytes(sno_to_bytes(id)[6:8], "big")


def sno_sequence(id):
    """The sequence (0-65535), as SQL's sno_sequence(id)."""
    return int.from_bytes(sno_to_bytes(id)[8:10], "big")
