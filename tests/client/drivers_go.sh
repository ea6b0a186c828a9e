#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=ends server=yes cpu=1 estimate=60
# Go's PostgreSQL drivers against the live cluster: lib/pq 1.10 and pgx v4 (native, pgxpool
# and database/sql), as Debian packages them. Builds and runs the Go program in
# tests/drivers/go (main.go there says what it checks) with the DSN of a fresh database with
# the extension; the program prints the ok:/FAIL: lines. Every recipe of
# tests/drivers/go/RECIPES.md runs there, and every trap (what fails without a recipe) is
# asserted to fail as documented.
#
# The drivers come from Debian (golang-go, golang-github-lib-pq-dev,
# golang-github-jackc-pgx-v4-dev), installed here when missing (apt-get, as root): the Go
# program builds in GOPATH mode (GO111MODULE=off) from /usr/share/gocode and the stand-in for
# github.com/muyo/sno in tests/drivers/go/standin, with no module proxy. The install takes
# about 20 s once; the build goes to target/drivers-go (SNO_DRIVERS_GO_DIR to change) and is
# reused: a later run takes about 1 s.
#
# Usage: drivers_go.sh SOCKET_DIR PORT BINDIR   (run by .ci/test)
set -euo pipefail
host="$1" port="$2" bindir="$3"
export PGHOST="$host" PGPORT="$port" PGUSER=postgres
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
src="$root/tests/drivers/go"
out="${SNO_DRIVERS_GO_DIR:-$root/target/drivers-go}"
db=sno_drivers_go
# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
psql() { "$bindir/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
t0=$SECONDS

# The Debian packages, when missing.
debian_packages "$log" golang-go golang-github-lib-pq-dev golang-github-jackc-pgx-v4-dev
t_install=$((SECONDS - t0))

# Debian's Go (not whatever else is on PATH), offline, ignoring any user go env file.
mkdir -p "$out"
export GO111MODULE=off GOPATH="$src/standin:/usr/share/gocode" GOPROXY=off GOFLAGS='' GOENV=off \
    GOCACHE="$out/cache" CGO_ENABLED=0
if ! (cd "$src" && /usr/lib/go/bin/go build -o "$out/sno-drivers-go" .) >"$log" 2>&1; then
    cat "$log"
    die "go build of tests/drivers/go"
fi
check "go build of tests/drivers/go (Debian's Go $(/usr/lib/go/bin/go env GOVERSION), GOPATH mode)" ok ok

PGOPTIONS="-c client_min_messages=warning" psql -d postgres \
    -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
psql -d "$db" -c "CREATE EXTENSION sno"

rc=0
timeout 300 "$out/sno-drivers-go" "host=$host port=$port user=postgres dbname=$db sslmode=disable" \
    >"$log" 2>&1 || rc=$?
cat "$log"
grep -q '^FAIL: ' "$log" && fail=1
check "go drivers program: exit code" "$rc" 0
# Its last line, printed only when every case ran (not after a panic or a hang).
grep -qE '^\(go drivers: [0-9]+ ok, 0 failed' "$log" || bad "go drivers program: did not finish with 0 failed"
echo "(drivers_go: $((SECONDS - t0)) s, of which $t_install s installing packages)"
psql -d postgres -c "DROP DATABASE IF EXISTS $db"
exit "$fail"
