#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=15 server=yes cpu=1 estimate=45
# The Go recipe for partition leases (issue 32): tests/leases/go/lease.go, muyo/sno's own
# generator (the real library, ../shared/muyo-sno) on a leased partition and sequence slice,
# New serialised and each ID's unit checked against the lease's window. The program
# tests/leases/go (main.go) runs it against the live cluster, as a role that may lease:
#  - process A: 3 leases (ttl 2 s), 4 goroutines calling New on each at once, inserting every
#    ID with its lease number into a table, the leases through database/sql with pgx v4;
#    process B: its lease through lib/pq, 1 lease of 8 sequence numbers (muyo/sno waits for the
#    next unit when a unit's slice is used up), 4 goroutines, its IDs printed and loaded with
#    \copy. Both run 16 s:
#    at 3 s the role's connections are terminated (a transient error: retried);
#    at 6 s the role may no longer log in and its connections are terminated, for 4 s (twice
#    the ttl): every lease ends unrenewed, New refuses (counted), and when the role can log in
#    again renew answers 55000 and each generator switches to a new lease.
#  - Checks: every ID inside its lease's slice and window (joined with the view sno_leases),
#    zero duplicates, as many rows as IDs reported, renewals (a lease far longer than its
#    ttl), refusals during the outage, new leases and new IDs after it, no two of these
#    leases overlapping (partition, slice and window), and all of them released at the end.
#  - lease_test.go (go test): New inside a hand-made window (8 goroutines, 8 numbers a unit),
#    refused after it and after Close, waiting when the window starts 0.3 s ahead, refused
#    after about a second when it starts 3 s ahead (libfaketime does not reach Go's clock).
#  - doc/services.md's ```go block is lease.go, byte for byte (skipped while the page does
#    not exist).
#
# Go and the drivers come from Debian (golang-go, golang-github-jackc-pgx-v4-dev,
# golang-github-lib-pq-dev), installed here when missing, as tests/client/drivers_go.sh does;
# the program builds in GOPATH mode (GO111MODULE=off, no module proxy) from ../shared/muyo-sno
# and /usr/share/gocode into target/lease-go (SNO_LEASE_GO_DIR to change). About 25 s.
#
# Usage: lease_go.sh SOCKET_DIR PORT BINDIR   (run by .ci/test)
set -euo pipefail

if [[ "${SNO_PG_MAJOR:-15}" != 15 ]]; then
    echo "ok: skipped lease_go.sh: leases are tested on PostgreSQL 15 only (SNO_PG_MAJOR=$SNO_PG_MAJOR)"
    exit 0
fi
host="$1" port="$2" bindir="$3"
export PGHOST="$host" PGPORT="$port" PGUSER=postgres
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
src="$root/tests/leases/go"
out="${SNO_LEASE_GO_DIR:-$root/target/lease-go}"
db=sno_lease_go
role=sno_lease_go
ttl=2
# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
muyo="$(shared_dir "$root")/muyo-sno"
harness_setup lease_go "$bindir" # the work directory only: no server of its own
work="$CL_WORK"
psql() { "$bindir/psql" -X -q -At -v ON_ERROR_STOP=1 -d "$db" "$@"; }
t0=$SECONDS

# The recipe as the manual prints it.
page="$root/doc/services.md"
if [[ -f "$page" ]]; then
    awk -v dir="$work" '/^```go[[:space:]]*$/ { n++; f = dir "/block" n; printf "" > f; inb = 1; next }
        /^```/ { inb = 0 } inb { print > f }' "$page"
    same=""
    for b in "$work"/block*; do [[ -f "$b" ]] && cmp -s "$b" "$src/lease.go" && same="$b"; done
    if [[ -n "$same" ]]; then
        check "doc/services.md: its \`\`\`go block is tests/leases/go/lease.go" ok ok
    elif [[ -f "$work/block1" ]]; then
        diff -u "$src/lease.go" "$work/block1" | head -40 || true
        bad "doc/services.md: no \`\`\`go block equals tests/leases/go/lease.go (the diff with the first above)"
    else
        bad "doc/services.md: no \`\`\`go block (it must print tests/leases/go/lease.go)"
    fi
else
    echo "skip: doc/services.md does not exist yet: its \`\`\`go block is not compared with tests/leases/go/lease.go"
fi

# Debian's Go, pgx v4 and lib/pq, when missing.
debian_packages "$work/apt.log" golang-go golang-github-jackc-pgx-v4-dev golang-github-lib-pq-dev
[[ -f "$muyo/src/github.com/muyo/sno/generator.go" ]] || die "muyo/sno is not in $muyo"

# Debian's Go, offline, with the real muyo/sno (not the driver tests' stand-in).
mkdir -p "$out"
export GO111MODULE=off GOPATH="$muyo:/usr/share/gocode" GOPROXY=off GOFLAGS='' GOENV=off \
    GOCACHE="$out/cache" CGO_ENABLED=0
if ! (cd "$src" && /usr/lib/go/bin/go build -o "$out/sno-lease-go" . && /usr/lib/go/bin/go vet .) >"$work/build.log" 2>&1; then
    cat "$work/build.log"
    die "go build of tests/leases/go"
fi
check "go build and vet of tests/leases/go with the real muyo/sno (Debian's Go $(/usr/lib/go/bin/go env GOVERSION), GOPATH mode)" ok ok
if (cd "$src" && /usr/lib/go/bin/go test -count=1 .) >"$work/test.log" 2>&1; then
    check "go test tests/leases/go (lease_test.go: the window check without a server)" ok ok
else
    cat "$work/test.log"
    bad "go test tests/leases/go"
fi
unformatted="$(/usr/lib/go/bin/gofmt -l "$src")"
check "gofmt -l tests/leases/go" "$unformatted" ""

# A database, the table, and a role that may lease (and nothing else).
PGOPTIONS="-c client_min_messages=warning" "$bindir/psql" -X -q -v ON_ERROR_STOP=1 -d postgres \
    -c "DROP DATABASE IF EXISTS $db" -c "DROP ROLE IF EXISTS $role" \
    -c "CREATE DATABASE $db" -c "CREATE ROLE $role LOGIN"
psql -c "CREATE EXTENSION sno" \
    -c "CREATE TABLE ids (id sno NOT NULL, lease bigint NOT NULL, batch text)" \
    -c "GRANT EXECUTE ON FUNCTION sno_lease_acquire(text, interval, int4), sno_lease_renew(int8, uuid, interval),
        sno_lease_release(int8, uuid) TO $role"
dsn="host=$host port=$port dbname=$db sslmode=disable"

# A: 3 leases x 4 goroutines into the table (inserted as postgres, untouched by the outage);
# B: lib/pq, 1 lease of 8 numbers x 4 goroutines, to stdout.
run=16
"$out/sno-lease-go" -dsn "$dsn user=$role" -insert-dsn "$dsn user=postgres" -table ids \
    -holder lease-go-a -generators 3 -workers 4 -ttl ${ttl}s -seconds $run >"$work/a.out" 2>"$work/a.err" &
pid_a=$!
"$out/sno-lease-go" -driver postgres -dsn "$dsn user=$role" -holder lease-go-b -generators 1 -workers 4 -sequences 8 \
    -ttl ${ttl}s -seconds $run >"$work/b.out" 2>"$work/b.err" &
pid_b=$!
terminate="SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE usename = '$role'"
sleep 3
echo "the role's connections terminated: $(psql -c "$terminate")"
sleep 3
psql -c "ALTER ROLE $role NOLOGIN" >/dev/null
echo "the role may not log in; its connections terminated: $(psql -c "$terminate")"
sleep $((2 * ttl))
psql -c "ALTER ROLE $role LOGIN"
back="$(psql -c "SELECT now()")"
echo "the role may log in again at $back"
rc_a=0 rc_b=0
wait "$pid_a" || rc_a=$?
wait "$pid_b" || rc_b=$?
for p in a b; do
    echo "--- process $p (stderr, first lines)"
    head -n 12 "$work/$p.err"
done
check "process A: exit code" "$rc_a" 0
check "process B: exit code" "$rc_b" 0
psql -c "\\copy ids (id, lease) FROM '$work/b.out'"

# summary P FIELD: a number from the process's last line "sno-lease-go: ids=N refused=N leases=N"
# (0 when it has none).
summary() {
    local v
    v="$(grep -E "^sno-lease-go: " "$work/$1.err" | grep -oE "$2=[0-9]+" | cut -d= -f2)" || true
    echo "${v:-0}"
}
ids_a="$(summary a ids)" ids_b="$(summary b ids)"
echo "A: $ids_a IDs, $(summary a refused) refused, $(summary a leases) leases; B: $ids_b IDs, $(summary b refused) refused, $(summary b leases) leases"
check "rows = IDs the processes reported" "$(psql -c "SELECT count(*) FROM ids")" "$((ids_a + ids_b))"
check "some thousands of IDs each" "$(((ids_a > 20000) + (ids_b > 5000)))" 2
check "duplicate IDs" "$(psql -c "SELECT count(*) - count(DISTINCT id) FROM ids")" 0
check "IDs outside their lease's slice or window (or of no such lease)" "$(psql -c "
    SELECT count(*) FROM ids i LEFT JOIN sno_leases l USING (lease)
    WHERE l.lease IS NULL OR sno_partition(i.id) <> l.partition
       OR sno_sequence(i.id) NOT BETWEEN l.sequence_min AND l.sequence_max
       OR sno_time(i.id) < l.not_before OR sno_time(i.id) >= l.expires_at")" 0
check "B: at most 8 IDs per 4 ms unit and tick (its slice)" "$(psql -c "
    SELECT count(*) FROM (SELECT 1 FROM ids WHERE batch IS NULL
    GROUP BY lease, sno_time(id), sno_tick(id) HAVING count(*) > 8) x")" 0
check "renewed: a lease lasting 3 times its ttl or more" "$(psql -c "
    SELECT bool_or(renewed_at IS NOT NULL AND expires_at - acquired_at >= interval '$((3 * ttl)) s')
    FROM sno_leases WHERE holder LIKE 'lease-go-%'")" t
check "A: refusals during the outage (leases ended unrenewed)" "$(( $(summary a refused) > 0 ))" 1
check "A: a new lease for each generator after the outage (renew answered 55000)" "$(( $(summary a leases) >= 6 ))" 1
check "B: a new lease after the outage" "$(( $(summary b leases) >= 2 ))" 1
check "IDs after the outage, of leases granted after it" "$(psql -c "
    SELECT count(DISTINCT l.lease) >= 4 FROM ids i JOIN sno_leases l USING (lease)
    WHERE l.acquired_at >= '$back' AND sno_time(i.id) > '$back'::timestamptz + interval '1 s'")" t
check "these leases overlap none other (partition, slice and window)" "$(psql -c "
    SELECT count(*) FROM sno_leases a JOIN sno_leases b ON a.lease < b.lease AND a.partition = b.partition
    WHERE a.holder LIKE 'lease-go-%'
      AND int4range(a.sequence_min, a.sequence_max, '[]') && int4range(b.sequence_min, b.sequence_max, '[]')
      AND tstzrange(a.not_before, a.expires_at) && tstzrange(b.not_before, b.expires_at)")" 0

check "every lease released (Close)" "$(psql -c "
    SELECT count(*) FILTER (WHERE released_at IS NULL) || ' of ' || count(*) FROM sno_leases WHERE holder LIKE 'lease-go-%'")" \
    "0 of $(( $(summary a leases) + $(summary b leases) ))"
echo "(lease_go: $((SECONDS - t0)) s)"
"$bindir/psql" -X -q -d postgres -c "DROP DATABASE IF EXISTS $db" -c "DROP ROLE IF EXISTS $role" || true
exit "$fail"
