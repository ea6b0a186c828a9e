"""Runs the Python driver tests: python run.py [NAME-FILTER]

Needs SNO_TEST_DSN (a database with CREATE EXTENSION sno in public) and SNO_TEST_DSN_EXT (one
with the extension in schema ext, not on search_path); tests/client/drivers_python.sh sets
both up. Prints an ok:/FAIL: line per case, then that every recipe block of the test files is
in the README word for word, then
'N passed, N failed'. Exits 1 if anything failed.
"""

import os
import re
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, HERE)

import harness  # noqa: E402
import test_asyncpg  # noqa: E402,F401 (registers its cases)
import test_psycopg  # noqa: E402,F401

RECIPE = re.compile(r"^([ \t]*)# >>> recipe: ([\w-]+)\n(.*?)^[ \t]*# <<< recipe$", re.M | re.S)


def normalize(text):
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


def recipes():
    """(file, name, text) of every recipe block, dedented."""
    for name in ("test_psycopg.py", "test_asyncpg.py"):
        with open(os.path.join(HERE, name)) as f:
            source = f.read()
        for m in RECIPE.finditer(source):
            yield name, m.group(2), normalize(textwrap.dedent(m.group(3)))


def check_docs():
    """Every recipe block is in doc/drivers.md word for word; returns (passed, failed)."""
    docs = []
    for path in (os.path.join(ROOT, "doc", "drivers.md"),):
        if os.path.exists(path):
            with open(path) as f:
                docs.append((os.path.relpath(path, ROOT), normalize(f.read())))
    passed = failed = 0
    seen = set()
    for file, name, text in recipes():
        if name in seen:
            print(f"FAIL: recipe {name}: two blocks of that name")
            failed += 1
            continue
        seen.add(name)
        where = [doc for doc, body in docs if text in body]
        if where:
            print(f"ok: recipe {name} ({file}) is word for word in {where[0]}")
            passed += 1
        else:
            print(f"FAIL: recipe {name} ({file}) is not word for word in doc/drivers.md")
            failed += 1
    if not seen:
        print("FAIL: no recipe blocks found in the test files")
        failed += 1
    return passed, failed


def main():
    for var in ("SNO_TEST_DSN", "SNO_TEST_DSN_EXT"):
        if not os.environ.get(var):
            sys.exit(f"{var} is not set (tests/client/drivers_python.sh sets it)")
    selected = sys.argv[1] if len(sys.argv) > 1 else None
    passed, failed = harness.run(selected)
    if not selected:
        p, f = check_docs()
        passed, failed = passed + p, failed + f
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed or not passed else 0)


if __name__ == "__main__":
    main()
