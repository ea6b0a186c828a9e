# Shared by the client tests (sourced; not a test itself: .ci/test runs only *.sh here).

# Set to 1 by the first failed check; each test exits with it.
fail=0

# check DESCRIPTION GOT WANT: one assertion, reported as ok/FAIL, never stopping the test.
check() {
    if [[ "$2" == "$3" ]]; then echo "ok: $1"; else echo "FAIL: $1: got '$2', want '$3'"; fail=1; fi
}
