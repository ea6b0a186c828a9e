"""Runs the Python ORM tests: python run.py [NAME-FILTER]

Needs SNO_TEST_HOST and SNO_TEST_PORT (a server with sno installed, reached as postgres);
tests/client/orm_python.sh sets them. Makes its own databases (sno_orm_py_*), drops them at the
end, prints an ok:/FAIL: line per case, then 'N passed, N failed'; exits 1 if anything failed.
"""

import shutil
import sys

import harness

sys.path.insert(0, harness.WORK)

import test_sqlalchemy  # noqa: E402,F401 (registers its cases)
import test_django  # noqa: E402,F401


def main():
    if not harness.HOST or not harness.PORT:
        sys.exit("SNO_TEST_HOST and SNO_TEST_PORT are not set (tests/client/orm_python.sh sets them)")
    selected = sys.argv[1] if len(sys.argv) > 1 else None
    try:
        passed, failed = harness.run(selected)
    finally:
        harness.drop_databases()
        shutil.rmtree(harness.WORK, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed or not passed else 0)


if __name__ == "__main__":
    main()
