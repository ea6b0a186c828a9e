#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=ends server=yes cpu=0 estimate=20
# The documentation's SQL, run as printed: every ```sql block of the README's quick start and of
# the manual's pages doc/sql-reference.md, doc/monitoring.md, doc/install.md, doc/adopting.md,
# doc/services.md and doc/operations.md (its sh blocks run in by_replication.sh, dump_nopreload.sh
# and removal.sh; its ```sql member-failover block in member_failover.sh), in order, each
# page in one session of a fresh database (doc/install.md in a database named app, the name its
# snippet uses), with what the page says each statement prints or raises checked
# (tests/docs/run_sql.py says how). The other pages' SQL is run by the tests of what they
# describe: doc/citus.md by citus_states.sh, doc/time-partitions.md by time_partitions.sh (its
# ```sql blocks, on a server with pg_cron, through run_sql.py) and citus_states.sh (its ```sql
# citus block) and timescaledb.sh (its ```sql timescaledb blocks), doc/high-availability.md's HA-manager snippets by
# ha_patroni.sh and ha_auto_failover.sh, doc/orms.md's by the ORM tests, doc/install.md's query
# for planted objects also by tests/upgrade/update_paths.sh, doc/drivers.md's Python blocks word for
# word by drivers_python.sh (its Go, Node.js and Java blocks are run by drivers_*.sh as equivalent
# code with checks between the statements, not extracted from the page). Not run: the
# postgresql.conf and Go lines of doc/fleet.md, the install commands (.ci/test installs the
# packages with dpkg -i and the tarball's install commands, not from the page), and the Rust
# crate's blocks of doc/drivers.md.
#
# On PostgreSQL 15 and 18 (.ci/test's MAJOR_INDEPENDENT: the pages' plans are the same on both,
# and a statement marked "(PostgreSQL 16+)" is checked to fail on 15 and to print what the page
# says on 18). A few seconds.
#
# Usage: docs_sql.sh SOCKET_DIR PORT BINDIR   (run by .ci/test against a live cluster)
set -euo pipefail
host="$1" port="$2" bindir="$3"
export PGHOST="$host" PGPORT="$port" PGUSER=postgres PGOPTIONS='-c client_min_messages=warning'
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
rc=0
for spec in README.md:sno_doc_readme doc/sql-reference.md:sno_doc_sql_reference \
    doc/monitoring.md:sno_doc_monitoring doc/install.md:app doc/adopting.md:sno_doc_adopting doc/services.md:sno_doc_services \
    doc/operations.md:sno_doc_operations; do
    page="${spec%%:*}" db="${spec#*:}"
    (cd "$root" && python3 tests/docs/run_sql.py "$bindir/psql" "${SNO_PG_MAJOR:-15}" "$page" "$db") || rc=1
    "$bindir/psql" -X -q -d postgres -c "DROP DATABASE IF EXISTS \"$db\"" || rc=1
done
exit $rc
