"""A small test harness: cases print ok:/FAIL: lines like tests/client/lib.bash's check.

A case is a function (plain or async) registered with @case("what it shows"); it passes when
it returns, and fails with the first exception (an assert, or a driver error), reported with
its line in the test file. `trap` asserts a documented out-of-the-box failure.
"""

import asyncio
import contextlib
import inspect
import os
import re
import traceback
from datetime import timedelta

import snoid

CASES = []

# The test database (sno created in public) and a second one with sno in schema ext.
DSN = os.environ.get("SNO_TEST_DSN", "")
DSN_EXT = os.environ.get("SNO_TEST_DSN_EXT", "")

# The README's example table, so that recipe snippets can use it as they stand.
ORDERS = """CREATE TEMP TABLE orders (
    id sno PRIMARY KEY DEFAULT sno_generate(1),
    customer int,
    total numeric,
    related sno[]
)"""

# A client-made ID's fields (README's example ID, 'brpk4q72xwf2m63l').
EXAMPLE_TEXT = "brpk4q72xwf2m63l"
EXAMPLE_RAW = bytes.fromhex("4e6f2160a0ff9a0a1033")

FIELDS_SQL = "sno_time({0}), sno_tick({0}), sno_meta({0}), sno_partition({0}), sno_sequence({0})"


def case(name):
    def register(fn):
        CASES.append((name, fn))
        return fn

    return register


@contextlib.contextmanager
def trap(exc_type, message):
    """The block must fail with exc_type and a message matching the regex `message`."""
    try:
        yield
    except exc_type as e:
        if not re.search(message, str(e)):
            raise AssertionError(f"failed as documented ({exc_type.__name__}) but said {str(e)!r}, not /{message}/")
    else:
        raise AssertionError(f"worked, but the README documents it as failing with {exc_type.__name__} /{message}/")


def check_fields(raw, server_fields, what=""):
    """The fields computed here from 10 raw bytes equal what the server's functions say."""
    assert isinstance(raw, bytes) and len(raw) == 10, f"{what}: not 10 raw bytes: {raw!r}"
    p = snoid.parts(raw)
    time, tick, meta, partition, sequence = server_fields
    got = (p["time"], p["tick"], p["meta"], p["partition"], p["sequence"])
    assert got == (time, tick, meta, partition, sequence), f"{what}: fields here {got} != the server's {server_fields}"


def check_generated(raw, server_fields, now, partition, meta=1):
    """A sno_generate(meta) ID: fields as the server computes them, made just now here."""
    check_fields(raw, server_fields, "generated ID")
    p = snoid.parts(raw)
    assert p["meta"] == meta, f"meta {p['meta']}, want {meta}"
    assert p["partition"] == partition, f"partition {p['partition']}, want sno_current_partition() = {partition}"
    assert abs(p["time"] - now) < timedelta(seconds=60), f"time {p['time']} is not near the server's now() {now}"


def run(selected=None):
    """Runs the cases (those whose name contains `selected`), prints ok:/FAIL:, returns (passed, failed)."""
    passed = failed = 0
    here = os.path.dirname(os.path.abspath(__file__))
    for name, fn in CASES:
        if selected and selected not in name:
            continue
        try:
            if inspect.iscoroutinefunction(fn):
                asyncio.run(fn())
            else:
                fn()
        except Exception as e:  # noqa: BLE001 (every failure is reported the same way)
            # The innermost line of a test file (else of this directory) the failure went through.
            frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename.startswith(here)]
            frames = [f for f in frames if os.path.basename(f.filename).startswith("test_")] or frames
            where = f" ({os.path.basename(frames[-1].filename)}:{frames[-1].lineno})" if frames else ""
            msg = " ".join(str(e).split()) or "(no message)"
            print(f"FAIL: {name}: {type(e).__name__}: {msg}{where}", flush=True)
            failed += 1
        else:
            print(f"ok: {name}", flush=True)
            passed += 1
    return passed, failed
