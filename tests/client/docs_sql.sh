#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# The documentation's SQL, run as printed: every ```sql block of the README's quick start and of
# the manual's pages doc/sql-reference.md, doc/monitoring.md and doc/install.md, in order, each
# page in one session of a fresh database (doc/install.md in a database named app, the name its
# snippet uses), with what the page says each statement prints or raises checked
# (tests/docs/run_sql.py says how). The other pages' SQL is run by the tests of what they
# describe: doc/citus.md by citus_states.sh, doc/high-availability.md's HA-manager snippets by
# ha_patroni.sh and ha_auto_failover.sh, doc/orms.md's by the ORM tests, doc/install.md's query
# for planted objects also by tests/upgrade/update_paths.sh.
#
# PostgreSQL 15 only (the plans printed are 15's). A few seconds.
#
# Usage: docs_sql.sh SOCKET_DIR PORT BINDIR   (run by .ci/test against a live cluster)
set -euo pipefail
if [[ -n "${SNO_PG_MAJOR:-}" && "$SNO_PG_MAJOR" != 15 ]]; then
    echo "ok: skipped docs_sql.sh: it runs on PostgreSQL 15 only (SNO_PG_MAJOR=$SNO_PG_MAJOR)"
    exit 0
fi
host="$1" port="$2" bindir="$3"
export PGHOST="$host" PGPORT="$port" PGUSER=postgres PGOPTIONS='-c client_min_messages=warning'
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
rc=0
for spec in README.md:sno_doc_readme doc/sql-reference.md:sno_doc_sql_reference \
    doc/monitoring.md:sno_doc_monitoring doc/install.md:app; do
    page="${spec%%:*}" db="${spec#*:}"
    (cd "$root" && python3 tests/docs/run_sql.py "$bindir/psql" "${SNO_PG_MAJOR:-15}" "$page" "$db") || rc=1
    "$bindir/psql" -X -q -d postgres -c "DROP DATABASE IF EXISTS \"$db\"" || rc=1
done
exit $rc
