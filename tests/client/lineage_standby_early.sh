#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=ends server=no cpu=0 estimate=60
# A standby made before CREATE EXTENSION, promoted with an explicit partition.
#
# The primary preloads sno and has sno.partition = 9, both with ALTER SYSTEM (so its standby
# has them too), but no CREATE EXTENSION yet: it has no generator state file when the standby
# is made by pg_basebackup. Then CREATE EXTENSION and IDs on the primary (3,000, then pgbench
# with 4 clients), replayed by the standby (restarted once on the way). The primary stops
# cleanly; the standby is promoted with its clock 5 s behind and makes IDs with no human step:
# the server log (not the client) says it took over partition 9, its IDs carry partition 9, and no ID of either
# server occurs twice.
#
# Usage: lineage_standby_early.sh SOCKET_DIR PORT BINDIR  (only PORT and BINDIR: own clusters)
set -euo pipefail
# shellcheck source=cluster.bash
source "$(dirname "${BASH_SOURCE[0]}")/cluster.bash"
cluster_setup lineage_standby_early "$2" "$3"

node_init p
node_start p
node_alter p shared_preload_libraries sno
node_restart p
node_alter p sno.partition 9
node_reload p sno.partition 9
check "the primary has no generator state file before CREATE EXTENSION" \
    "$(node_sql p "SELECT count(*) FROM pg_ls_dir('.') f WHERE f = 'sno_generator.state'")" 0

node_basebackup p s standby
node_start s
check "the standby is in recovery" "$(node_sql s "SELECT pg_is_in_recovery()")" t
check "the standby has sno preloaded and partition 9 from the primary's ALTER SYSTEM" \
    "$(node_sql s "SHOW shared_preload_libraries" "SHOW sno.partition" | paste -sd' ')" "sno 9"

node_sql p "CREATE EXTENSION sno"
node_ids_table p
node_gen p first 3000
node_pgbench p first_pgbench 3
node_wait_catchup s p
node_restart s
node_gen p second 3000
node_wait_catchup s p
check "the standby holds every row of the primary" \
    "$(node_sql s "SELECT count(*) FROM ids")" "$(node_sql p "SELECT count(*) FROM ids")"
check "the standby has a state file of its own now (from WAL replay)" \
    "$(node_sql s "SELECT count(*) FROM pg_ls_dir('.') f WHERE f = 'sno_generator.state'")" 1

node_stop p fast
node_clock s -5s
mark="$(node_log_mark s)"
node_promote s
t0="$(date +%s%N)"
if node_gen s promoted 3000; then
    echo "ok: the promoted standby makes IDs without any human step ($((($(date +%s%N) - t0) / 1000000)) ms)"
fi
check "the server log (not the client) says it took over partition 9" \
    "$(node_said s "$mark" "LOG:  sno: partition 9 was used before this server's promotion, point-in-time restore or upgrade")" yes
node_pgbench s promoted_pgbench 3
check "the promoted standby's IDs carry partition 9" \
    "$(node_sql s "SELECT string_agg(DISTINCT sno_partition(id)::text, ',') FROM ids WHERE origin LIKE 's:%'")" 9
check "its clock was behind the primary's" \
    "$(node_sql s "SELECT min(sno_time(id)) FILTER (WHERE origin LIKE 's:%') < max(sno_time(id)) FILTER (WHERE origin LIKE 'p:%') FROM ids")" t
ledger_check "every ID of the primary and the promoted standby"
ledger_summary
exit "$fail"
