#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=ends server=no cpu=0 estimate=120
# Clones made by pg_basebackup and started on their own (no standby.signal), beside their
# original, each HINT followed literally:
#  c0  of the original while it has a derived partition, first started WITHOUT sno preloaded
#      (the backup_label is consumed unseen), then with sno: still a copy, with a derived
#      partition of its own.
#  Then the original gets sno.partition = 9 (ALTER SYSTEM, so its clones have it too).
#  c1  its own sno.partition = 10 in postgresql.auto.conf before its first start: makes IDs.
#  c1b its own sno.partition = 11 on the command line (overriding the 9 it inherited).
#  c2  keeps 9: refuses ("this server is a copy of one that made IDs with partition 9", the
#      documented HINT); first branch: a partition no server used, ALTER SYSTEM, reload.
#  c4  first started without sno, then with it: keeps 9 and is refused too (sno never saw its
#      backup_label, so the HINT adds the branch for a moved directory, with its condition);
#      with the setting reset (ALTER SYSTEM RESET, reload) its derived partition differs from
#      the original's.
#  c3  made last; the original then stops for good without making another ID; c3 starts with
#      its clock 30 s behind and is refused; not through the HINT (it has one branch: a clone's
#      copy of its original's state may be older than the original's last IDs) but as the
#      README documents for exactly this case, SELECT sno_generator_initialize(take_over =>
#      true); then it makes IDs with partition 9.
# Every ID of the original and the clones goes to the ledger: zero duplicates.
#
# Usage: lineage_clones.sh SOCKET_DIR PORT BINDIR  (only PORT and BINDIR: own clusters)
set -euo pipefail
# shellcheck source=cluster.bash
source "$(dirname "${BASH_SOURCE[0]}")/cluster.bash"
cluster_setup lineage_clones "$2" "$3"

COPY_ERROR="this server is a copy of one that made IDs with partition 9"
COPY_HINT="Give this server a sno.partition no server has used, below 61440 (sno reserves 61440-65535), for example the first of 61439, 57343, 53247, ... (4095 + 4096 * k, k from 14 down to 0) that no server has used, in postgresql.conf or with ALTER SYSTEM, and reload the configuration."
# A copy that sno did not see with its backup_label (c4: its first start was without sno) could
# also be a data directory moved while stopped: the HINT adds that branch, with its condition.
MOVED_HINT="$COPY_HINT If instead this data directory was moved or copied while its server was stopped, and the old directory will never be started again, run SELECT sno_generator_initialize(take_over => true); as a superuser."

partitions_of() { node_sql "$1" "SELECT string_agg(DISTINCT sno_partition(id)::text, ',') FROM ids WHERE origin LIKE '$1:%'"; }

node_init p
node_cmdline p shared_preload_libraries=sno
node_start p
node_sql p "CREATE EXTENSION sno"
node_ids_table p
node_gen p derived 3000
pd="$(node_partition p)"

echo "--- c0: first start without sno, original with a derived partition ($pd)"
# The idle lease's record before the backup starts: the copy, without sno, can replay nothing
# of sno's (its first start shows that it is one).
node_wait_lease p
node_basebackup p c0
node_start c0
check "c0: its first start (without sno) consumed the backup_label" \
    "$([[ -e "$(node_data c0)/backup_label" ]] && echo present || echo gone)" gone
node_stop c0
node_cmdline c0 shared_preload_libraries=sno
mark="$(node_log_mark c0)"
node_start c0
node_gen c0 first 3000
check "c0: restarted with sno, it knows it is a copy" \
    "$(node_log_since c0 "$mark" | grep -c "sno: this data directory is a copy")" 1
check_distinct "c0: its derived partition differs from the original's" "$(node_partition c0)" "$pd"
node_stop c0

echo "--- the original gets sno.partition = 9"
node_alter p sno.partition 9
node_reload p sno.partition 9
node_gen p explicit 3000
node_pgbench p explicit_pgbench 2

echo "--- c1, c1b: their own partitions before their first start"
node_basebackup p c1
node_auto_conf c1 sno.partition 10
node_cmdline c1 shared_preload_libraries=sno
node_start c1
node_gen c1 first 3000
check "c1: its IDs carry its own partition 10 (postgresql.auto.conf)" "$(partitions_of c1)" 10
node_basebackup p c1b
node_cmdline c1b shared_preload_libraries=sno sno.partition=11
node_start c1b
node_gen c1b first 3000
check "c1b: its IDs carry its own partition 11 (command line)" "$(partitions_of c1b)" 11

echo "--- c2: keeps 9; the HINT's first branch"
node_basebackup p c2
node_cmdline c2 shared_preload_libraries=sno
node_start c2
node_expect_refusal c2 "c2, a clone keeping partition 9" "$COPY_ERROR" "$COPY_HINT"
q="$(hint_partition "$CL_HINT")" || die "following the HINT: $CL_HINT"
echo "    c2: following the HINT: ALTER SYSTEM SET sno.partition = $q; SELECT pg_reload_conf();"
node_alter c2 sno.partition "$q"
node_reload c2 sno.partition "$q"
node_gen c2 own_partition 3000
node_pgbench c2 own_partition_pgbench 2
check "c2: its IDs carry its own partition $q" "$(partitions_of c2)" "$q"

echo "--- c4: first start without sno, keeping 9"
node_basebackup p c4
node_start c4
check "c4: its first start (without sno) consumed the backup_label" \
    "$([[ -e "$(node_data c4)/backup_label" ]] && echo present || echo gone)" gone
node_stop c4
node_cmdline c4 shared_preload_libraries=sno
node_start c4
node_expect_refusal c4 "c4, started first without sno, keeping partition 9" "$COPY_ERROR" "$MOVED_HINT"
node_sql c4 "ALTER SYSTEM RESET sno.partition" >/dev/null
node_reload c4 sno.partition -1
node_gen c4 derived 3000
check_distinct "c4: with sno.partition reset, its derived partition differs from the original's" \
    "$(node_partition c4)" "$pd" 9

echo "--- c3: the original stops for good with no ID after the copy; take_over as documented"
# The original's last IDs come right before the copy, so that the clone's clock, 30 s back,
# is surely behind them whatever the machine's speed.
node_gen p before_c3 3000
node_basebackup p c3
node_stop p fast
node_cmdline c3 shared_preload_libraries=sno
node_clock c3 -30s
node_start c3
node_expect_refusal c3 "c3, a clone keeping partition 9" "$COPY_ERROR" "$COPY_HINT"
check "c3: the HINT offers no take-over" "$(grep -c take_over <<<"$CL_HINT")" 0
check "c3: take_over => true returns true" "$(node_sql c3 "SELECT sno_generator_initialize(take_over => true)")" t
node_gen c3 took_over 3000
node_pgbench c3 took_over_pgbench 3
check "c3: its IDs carry partition 9" "$(partitions_of c3)" 9
check "c3: its clock was behind the original's" \
    "$(node_sql c3 "SELECT min(sno_time(id)) FILTER (WHERE origin LIKE 'c3:%') < max(sno_time(id)) FILTER (WHERE origin LIKE 'p:%') FROM ids")" t

ledger_check "the original and every clone"
ledger_summary
exit "$fail"
