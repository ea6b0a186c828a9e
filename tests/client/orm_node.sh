#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=15 server=yes cpu=1 estimate=60
# The Node.js ORMs against the live cluster: Prisma 7 (client with @prisma/adapter-pg), Drizzle
# ORM with drizzle-kit, TypeORM, Sequelize and Kysely, all over node-postgres. Runs each
# tests/orm/node/*.test.mjs with node's own test runner: they take the README's blocks of
# "Using sno from your ORM" (between the <!-- orm-section:node --> markers), write them as files
# and run them as printed, then the six checks per ORM, the schema paths (drizzle-kit push twice,
# TypeORM synchronize twice, Sequelize sync twice, a Kysely migration), what the introspection
# tools make of a sno column (drizzle-kit pull, Kysely's db.introspection), the pitfalls the
# README warns about, and bad IDs (22P02). Each file makes and drops its own database
# (sno_orm_node_*). One ok:/FAIL: line per test.
#
# The packages (exact versions in tests/orm/node/package.json and package-lock.json) come from
# the npm registry into ${SNO_WORK:-/tmp/sno-work}/orm-node/node_modules by `npm ci`, on the
# first run and again only when the lock file changes (about 20 s); the README's blocks are
# written to a directory under it, so that their imports find those packages. Needs Node.js
# 20.19 or later (Prisma 7 and TypeORM 1.x). PostgreSQL 15 only: the ORMs are client libraries.
#
# Usage: orm_node.sh SOCKET_DIR PORT BINDIR   (run by .ci/test)
set -euo pipefail
if [[ -n "${SNO_PG_MAJOR:-}" && "$SNO_PG_MAJOR" != 15 ]]; then
    echo "orm_node: skipped on PostgreSQL $SNO_PG_MAJOR (runs on 15 only)"
    exit 0
fi
host="$1" port="$2"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dir="$root/tests/orm/node"
# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
t0=$SECONDS
cache="$SNO_WORK/orm-node"
mkdir -p "$cache"
log="$(mktemp)"
work=""
trap 'rm -f "$log"; [[ -z "$work" ]] || rm -rf "$work"' EXIT

command -v node >/dev/null && command -v npm >/dev/null || die "node and npm are needed (Node.js 20.19 or later)"
node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 19) ? 0 : 1)' ||
    die "Node.js $(node --version) is too old: Prisma 7 and TypeORM 1.x need 20.19 or later"

# node_modules as package-lock.json says, or npm ci again (the stamp is the lock's checksum); a
# lock, so that two runs at once do not fill it together.
exec 9>"$cache.lock"
flock 9
stamp="$cache/node_modules/.sno-package-lock.sha256"
sum="$(sha256sum <"$dir/package-lock.json" | cut -d' ' -f1)"
if [[ "$(cat "$stamp" 2>/dev/null || true)" != "$sum" ]]; then
    echo "(npm ci of tests/orm/node/package-lock.json into $cache)"
    cp "$dir/package.json" "$dir/package-lock.json" "$cache/"
    (cd "$cache" && npm ci --no-audit --no-fund --loglevel=error) >"$log" 2>&1 ||
        { grep -v 'Unknown user config' "$log" | tail -n 30; die "npm ci"; }
    echo "$sum" >"$stamp"
fi
flock -u 9
versions="$(cd "$cache" && node -p '["prisma", "@prisma/client", "@prisma/adapter-pg", "drizzle-orm", "drizzle-kit",
    "typeorm", "sequelize", "kysely", "pg"].map((p) => p + " " +
    JSON.parse(require("fs").readFileSync("node_modules/" + p + "/package.json")).version).join(", ")')"
work="$(mktemp -d "$cache/run.XXXXXX")"

# One file at a time (each is one ORM): a line per top-level test, as the runner reported it
# (TAP: "ok N - name", "not ok N - name"), and the failures' details after.
n_pass=0 n_fail=0 details=""
for test in "$dir"/*.test.mjs; do
    name="$(basename "$test" .test.mjs)"
    rc=0
    (cd "$dir" && SNO_ORM_NODE_WORK="$work" PGHOST="$host" PGPORT="$port" PGUSER=postgres \
        node --test --test-reporter=tap "$test") >"$log" 2>&1 || rc=$?
    while IFS= read -r line; do
        if [[ "$line" =~ ^ok\ [0-9]+\ -\ (.*)$ ]]; then
            echo "ok: ${BASH_REMATCH[1]}"
        elif [[ "$line" =~ ^not\ ok\ [0-9]+\ -\ (.*)$ ]]; then
            echo "FAIL: ${BASH_REMATCH[1]}"
        fi
    done <"$log"
    p="$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$log")"
    f="$(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$log")"
    check "$name tests (exit code, tests passed > 0, failed)" "$rc $((${p:-0} > 0)) ${f:-none}" "0 1 0"
    n_pass=$((n_pass + ${p:-0})) n_fail=$((n_fail + ${f:-0}))
    if [[ "$rc $((${p:-0} > 0)) ${f:-none}" != "0 1 0" ]]; then
        if grep -q '^not ok ' "$log"; then
            # Each failed test's line and its YAML block (up to the block's closing "  ...").
            details+="--- $name: the failures"$'\n'"$(awk '/^not ok /{p=1} p{print} p&&/^  \.\.\.$/{p=0}' "$log" | head -n 80)"$'\n'
        else
            details+="--- $name: the runner's last lines"$'\n'"$(tail -n 40 "$log")"$'\n'
        fi
    fi
done
[[ -z "$details" ]] || printf '%s' "$details"
echo "(orm_node with $versions, node $(node --version): $n_pass passed, $n_fail failed, $((SECONDS - t0)) s)"
exit "$fail"
