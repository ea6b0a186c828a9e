#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# pg_upgrade from an old major (15) to a new one (18) of a cluster holding sno data, in --copy
# and --link mode, with the generator's state file handled as the README says:
#   derived   no sno.partition: nothing to do; the server log says that the state file
#             was missing and draws a new derived partition;
#   hint      sno.partition = 7: sno_generate refuses with "sno generator has no state file";
#             its HINT is followed literally (the file named in the error is copied from the
#             old data directory, then the command the HINT names is run: it returns true);
#   precopy   sno.partition = 7, the old cluster's state file copied into the new data
#             directory before the new server's first start: adopted at start, no step.
# Each old cluster has btree (primary keys), hash and BRIN indexes on sno columns, a table
# PARTITION BY HASH (id sno) with 4 partitions and a column DEFAULT sno_generate(1); its
# 50,000 rows (110,000 IDs) are made under libfaketime over some 6 s. The new server runs with
# its clock 5 s behind the old one's last ID, so its IDs fall in the same 4 ms units as old
# ones (checked) and a generator that lost its state would repeat IDs: a control case does
# just that (a fresh state file, the old partition kept) and must see repeats.
# Each case checks, after the upgrade: the old rows are identical (md5 of the ordered rows,
# each row's partition included) and the DEFAULT survived; 50,000 more rows go into the same
# tables with zero duplicates over all 220,000 IDs, old and new; new partition (derived) or
# partition 7 on the other tick-tock timeline (explicit); amcheck (bt_index_check with
# heapallindexed on every btree index, verify_heapam on every table); the hash and BRIN
# indexes give a sequential scan's answers for a sample of lookups (and are the ones used);
# every row is in the partition its hash routes to, and WHERE id = x (pruned to one
# partition) finds a sample of rows.
#
# Usage (as root): pg_upgrade.sh OLD_BINDIR NEW_BINDIR PORT   (uses PORT and PORT+1 only)
# Prints ok:/FAIL: lines; exits non-zero on any failure. About 2-3 minutes on 2 cores.
# While iterating: SNO_UPGRADE_CASES="copy:explicit:hint ..." runs only those cases,
# SNO_KEEP=1 (or SNO_KEEP_WORK=1) keeps the clusters and logs.
set -uo pipefail
if (($# != 3)); then
    echo "usage: $0 OLD_BINDIR NEW_BINDIR PORT" >&2
    exit 2
fi
old_bin="$1" new_bin="$2" old_port="$3"
# shellcheck source=../client/lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/../client/lib.bash"
for b in "$old_bin" "$new_bin"; do
    [[ -x "$b/pg_ctl" && -x "$b/initdb" && -x "$b/psql" ]] || { echo "FAIL: no PostgreSQL in $b"; exit 1; }
done
[[ -x "$new_bin/pg_upgrade" ]] || { echo "FAIL: no pg_upgrade in $new_bin"; exit 1; }
[[ -r "$CL_FAKETIME" ]] || { echo "FAIL: libfaketime is not installed ($CL_FAKETIME)"; exit 1; }
((EUID == 0)) || { echo "FAIL: run as root (servers run as postgres through sudo)"; exit 1; }

# The harness (tests/client/lib.bash): a work directory under $SNO_WORK, every server stopped
# on exit. Two ports: each old cluster is a node of the old major on PORT, each new one a node
# of the new major on PORT+1 (a case's nodes are dropped at its end, freeing the ports).
# pg_upgrade's own servers run in the nodes' data directories, so they are stopped on exit too.
harness_setup upgrade "$new_bin" "$old_port" $((old_port + 1))
new_port=$((old_port + 1))
work="$CL_WORK"

# shellcheck source=data.bash
source "$(dirname "${BASH_SOURCE[0]}")/data.bash"

# init_cluster NODE BINDIR PORT PARTITION: a new node of that bindir on PORT, and its initdb
# with the same settings for both majors (UTF8, C locale, data checksums on: PostgreSQL 18's
# default, asked for explicitly on 15). The settings are in postgresql.conf, for pg_upgrade's
# servers too.
init_cluster() {
    local node="$1" bin="$2" port="$3" partition="$4"
    node_new "$node" "$bin" "$port" || return 1
    node_initdb "$node" -E UTF8 --locale=C -k || return 1
    {
        echo "shared_preload_libraries = 'sno'"
        echo "listen_addresses = ''"
        echo "unix_socket_directories = '$work'"
        echo "fsync = off"
        echo "sno.max_clock_wait = 2000"
        [[ "$partition" == derived ]] || echo "sno.partition = $partition"
    } >>"$(node_data "$node")/postgresql.conf"
}

# start NODE OFFSET: the server under libfaketime, its clock OFFSET from the real one.
start() {
    node_clock "$1" "$2"
    node_start "$1"
}
stop() { node_stop "$1" fast; }

# q NODE ARGS...: psql on the test database.
q() {
    local node="$1"
    shift
    node_psql_db "$node" sno_upgrade "$@"
}


# --- an incompatibility of the installed PostgreSQL builds, not of sno -----------------------
# Debian's PostgreSQL 15.20 stamps every column of every relation with an attribute option
# pg_attver=N (set again by each DDL, RESET does not remove it). pg_dump in binary-upgrade
# mode carries attribute options over as ALTER TABLE ... ALTER COLUMN ... SET (pg_attver=N),
# which a new server that does not know the option rejects ("unrecognized parameter
# "pg_attver""), so pg_upgrade fails at "Restoring database schemas" for any table at all.
# When the old server stamps it and the new one rejects it, the option is removed from the
# old cluster's user relations (UPDATE pg_attribute) just before the old server stops; this
# is said in a note: line. SNO_UPGRADE_STRIP_ATTVER=0 leaves it (to see the failure).
strip_attver=0
probe_attver() {
    local old_has new_rejects
    if ! { init_cluster probe_old "$old_bin" "$old_port" derived && start probe_old "+0"; }; then
        node_drop probe_old
        return 1
    fi
    old_has="$(node_psql probe_old -c "CREATE TABLE attver_probe (a int)" \
        -c "SELECT count(*) FROM pg_attribute WHERE attrelid = 'attver_probe'::regclass AND attoptions::text LIKE '%pg_attver=%'")"
    stop probe_old
    node_drop probe_old
    if ! { init_cluster probe_new "$new_bin" "$new_port" derived && start probe_new "+0"; }; then
        node_drop probe_new
        return 1
    fi
    new_rejects="$(node_psql probe_new -c "CREATE TABLE attver_probe (a int)" \
        -c "ALTER TABLE attver_probe ALTER COLUMN a SET (pg_attver = 1)" 2>&1 | grep -c 'unrecognized parameter "pg_attver"')"
    stop probe_new
    node_drop probe_new
    if [[ "$old_has" == 1 && "$new_rejects" == 1 && "${SNO_UPGRADE_STRIP_ATTVER:-1}" == 1 ]]; then
        strip_attver=1
        echo "note: $("$old_bin/postgres" --version) stamps every column with the attribute option pg_attver, which $("$new_bin/postgres" --version) rejects (pg_upgrade fails for any table, with or without sno); the test removes it from the old cluster's user relations before each upgrade"
    fi
}

# strip_attver_old NODE: removes pg_attver from the attribute options of every user relation
# of every database of the running old server.
strip_attver_old() {
    local db
    for db in $(node_psql "$1" -c "SELECT datname FROM pg_database WHERE datallowconn"); do
        node_psql_db "$1" "$db" -c "
            UPDATE pg_attribute SET attoptions = (SELECT CASE WHEN count(*) > 0 THEN array_agg(o) END
                                                  FROM unnest(attoptions) o WHERE o NOT LIKE 'pg\_attver=%')
            WHERE attrelid >= 16384 AND attoptions::text LIKE '%pg\_attver=%'" || return 1
    done
}

# --- the old cluster -----------------------------------------------------------------------
# make_old NODE PARTITION: a cluster of the old major with the schema and batch 1, made under
# libfaketime; sets old_digest, old_sysid, old_partition, old_last (epoch of its last ID).
old_digest="" old_sysid="" old_partition="" old_last="" old_span=""
make_old() {
    local old="$1" partition="$2"
    init_cluster "$old" "$old_bin" "$old_port" "$partition" || return 1
    start "$old" "+0" || return 1
    node_psql "$old" -c "CREATE DATABASE sno_upgrade" || return 1
    q "$old" -c "CREATE EXTENSION sno" -c "$SNO_DATA_SCHEMA" >/dev/null || return 1
    # Over 6 s or so: the new server's clock, 5 s behind the last of them, is among them.
    batch "$old" 1 || return 1
    local got
    got="$(q "$old" -At -c "SELECT count(*), count(DISTINCT x) FROM $ALL_IDS")"
    [[ "$got" == "$IDS_PER_BATCH|$IDS_PER_BATCH" ]] || { bad "old cluster: $got IDs, want $IDS_PER_BATCH distinct"; return 1; }
    old_digest="$(q "$old" -At -c "$DIGEST")"
    old_sysid="$(q "$old" -At -c "SELECT system_identifier FROM sno_generator")"
    old_partition="$(q "$old" -At -c "SELECT string_agg(DISTINCT sno_partition(x)::text, ',') FROM $ALL_IDS")"
    old_last="$(q "$old" -At -c "SELECT extract(epoch FROM max(sno_time(x))) FROM $ALL_IDS")"
    old_span="$(q "$old" -At -c "SELECT round(extract(epoch FROM max(sno_time(x)) - min(sno_time(x))), 1) FROM $ALL_IDS")"
    if ((strip_attver)); then
        strip_attver_old "$old" || { bad "removing pg_attver from the old cluster"; return 1; }
    fi
    stop "$old" || return 1
    [[ -f "$(node_data "$old")/sno_generator.state" ]] || { bad "the old cluster has no sno_generator.state"; return 1; }
    if [[ "$partition" != derived && "$old_partition" != "$partition" ]]; then
        bad "old cluster: IDs use partition $old_partition, want $partition"
        return 1
    fi
}

# --- one upgrade ---------------------------------------------------------------------------
# run_case MODE KIND VARIANT: MODE copy|link, KIND derived|explicit, VARIANT
# none|hint|precopy|control. No server of it is left running, whatever happened.
run_case() {
    local node="${1}_${2}_$3"
    run_case_body "$@"
    node_drop "${node}_old"
    node_drop "${node}_new"
    harness_keep || rm -rf "$work/$1-$2-$3"
}
run_case_body() {
    local mode="$1" kind="$2" variant="$3"
    local name="--$mode, $kind partition"
    [[ "$variant" != none ]] && name+=", $variant"
    # The case's files (pg_upgrade's working directory); its nodes NAME_old and NAME_new.
    local dir="$work/$mode-$kind-$variant"
    local node="${mode}_${kind}_$variant" t0=$SECONDS
    local old="${node}_old" new="${node}_new" old_data new_data
    local partition=derived
    [[ "$kind" == explicit ]] && partition=7
    mkdir -p "$dir"
    chown postgres: "$dir"
    make_old "$old" "$partition" || { bad "$name: building the old cluster"; return; }
    old_data="$(node_data "$old")"
    echo "ok: $name: old cluster with $IDS_PER_BATCH distinct IDs in $((ROWS_MAIN + ROWS_PART)) rows over $old_span s (partition $old_partition)"
    init_cluster "$new" "$new_bin" "$new_port" "$partition" || { bad "$name: initdb of the new cluster"; return; }
    new_data="$(node_data "$new")"

    # pg_upgrade, as postgres, in a directory it can write to, on our two ports only.
    local t1=$SECONDS
    if ! (cd "$dir" && as_pg "$new_bin/pg_upgrade" -b "$old_bin" -B "$new_bin" -d "$old_data" -D "$new_data" \
        -p "$old_port" -P "$new_port" -s "$work" -U postgres --no-sync "--$mode" \
        >"$dir/pg_upgrade.log" 2>&1); then
        bad "$name: pg_upgrade failed"
        tail -8 "$dir/pg_upgrade.log"
        grep -h -A4 -E '(ERROR|error):' "$new_data"/pg_upgrade_output.d/*/log/*.log 2>/dev/null | head -20
        return
    fi
    echo "ok: $name: pg_upgrade --$mode succeeded ($((SECONDS - t1)) s)"
    check "$name: pg_upgrade did not copy sno_generator.state" \
        "$([[ -e "$new_data/sno_generator.state" ]] && echo copied || echo absent)" absent
    if [[ "$mode" == link ]]; then
        # Hard links: the new cluster's relation files are the old cluster's files.
        local relpath links
        relpath="$(cd "$new_data" && find base -type f -size +1M | head -1)"
        links="$(stat -c %h "$new_data/$relpath" 2>/dev/null)"
        check "$name: relation files are hard links to the old cluster's" "$links" 2
    fi
    if [[ "$variant" == precopy ]]; then
        cp "$old_data/sno_generator.state" "$new_data/sno_generator.state"
        chown postgres: "$new_data/sno_generator.state"
        chmod 600 "$new_data/sno_generator.state"
    fi

    # The new server's clock: 5 s behind the last ID the old one made.
    local offset
    offset="$(awk -v last="$old_last" -v now="$(date +%s.%N)" \
        'BEGIN { d = now - last + 5; printf "%d", (d == int(d)) ? d : int(d) + 1 }')"
    start "$new" "-${offset}s" || { bad "$name: the new server did not start"; return; }
    nq=(q "$new")

    check "$name: the old rows are identical (md5 of ordered rows and partitions)" \
        "$("${nq[@]}" -At -c "$DIGEST")" "$old_digest"
    check "$name: the column DEFAULT sno_generate(1) survived" \
        "$("${nq[@]}" -At -c "SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef WHERE adrelid = 't_main'::regclass")" \
        "sno_generate(1)"

    local out
    case "$variant" in
    control)
        # Not the HINT: a fresh state file, the old partition kept. sno_generator_initialize()
        # refuses it (the partition in force when the file was found missing); forced with the
        # override (the administrator's word that nothing can repeat, false here), IDs repeat:
        # the clock setting can show a generator that lost its state.
        check "$name: SELECT sno_generator_initialize(); without the old state file is refused (partition 7 was in force)" \
            "$("${nq[@]}" -At -c "SELECT sno_generator_initialize()" 2>&1 | sed -n 's/^ERROR:  //p')" \
            "cannot initialize the sno generator with partition 7: it was in force when the state file was lost"
        check "$name: the override (force => true, take_over => true) returns true" \
            "$("${nq[@]}" -At -c "SELECT sno_generator_initialize(force => true, take_over => true)" 2>/dev/null)" t
        "${nq[@]}" -c "CREATE TABLE ctl_main (LIKE t_main INCLUDING DEFAULTS)" \
            -c "CREATE TABLE ctl_part (LIKE t_part)" || bad "$name: control tables"
        # Its IDs take a fraction of a second: the clock is put well inside the old IDs' 6 s
        # (2 to 3 s before the last of them, after node_clock's 2 s wait), not at their edge.
        local ctl_offset
        ctl_offset="$(awk -v last="$old_last" -v now="$(date +%s.%N)" \
            'BEGIN { d = now - last + 4; printf "%d", (d == int(d)) ? d : int(d) + 1 }')"
        node_clock "$new" "-${ctl_offset}s"
        "${nq[@]}" -c "INSERT INTO ctl_main (ref, seen, batch, n) SELECT sno_generate(2), sno_generate(4), 2, g FROM generate_series(1, $ROWS_MAIN) g" \
            -c "INSERT INTO ctl_part SELECT sno_generate(3), 2, g FROM generate_series(1, $ROWS_PART) g" ||
            bad "$name: making IDs"
        local dups
        dups="$("${nq[@]}" -At -c "SELECT count(*) - count(DISTINCT x) FROM (SELECT x FROM $ALL_IDS
            UNION ALL SELECT id FROM ctl_main UNION ALL SELECT ref FROM ctl_main UNION ALL SELECT seen FROM ctl_main
            UNION ALL SELECT id FROM ctl_part) s")"
        if [[ "$dups" =~ ^[0-9]+$ ]] && ((dups > 0)); then
            echo "ok: $name: ignoring the HINT (a fresh state, the same partition) repeats $dups IDs: this test can see repeats"
        else
            bad "$name: a generator without its state repeated no ID ('$dups'): this test could not see repeats"
        fi
        stop "$new" || bad "$name: the new server did not stop"
        return
        ;;
    hint)
        out="$("${nq[@]}" -c "SELECT sno_generate(1)" 2>&1)" && bad "$name: sno_generate worked without a state file: $out"
        check "$name: sno_generate refuses: no state file" \
            "$(grep -c '^ERROR:  sno generator has no state file ("sno_generator.state" in the data directory)' <<<"$out")" 1
        local hint file cmd
        hint="$(sed -n 's/^HINT:  //p' <<<"$out")"
        check "$name: the HINT" "$hint" \
            "If the file was moved away, put it back (after pg_upgrade: copy the one in the old data directory) and run SELECT sno_generator_initialize(); as a superuser; a copy from an older backup is not enough. Otherwise first give this server a sno.partition no server has used, below 61440 (sno reserves 61440-65535), for example the first of 61439, 57343, 53247, ... (4095 + 4096 * k, k from 14 down to 0) that no server has used, and reload the configuration, then run SELECT sno_generator_initialize();."
        # Follow it: the file (named in the ERROR) from the old data directory, then the command.
        file="$(sed -n 's/^ERROR:  .*("\([^"]*\)" in the data directory).*/\1/p' <<<"$out")"
        cmd="$(sed -n 's/^If the file was moved away, put it back (after pg_upgrade: copy the one in the old data directory) and run \(SELECT [^;]*;\) as a superuser;.*/\1/p' <<<"$hint")"
        if [[ -n "$file" && -f "$old_data/$file" && -n "$cmd" ]]; then
            cp "$old_data/$file" "$new_data/$file"
            chown postgres: "$new_data/$file"
            chmod 600 "$new_data/$file"
            # initialize judges at once: the take-over (an upgrade, like a promotion) goes to
            # the server log (checked below), nothing to the session that runs it.
            local ierr="$dir/initialize.err"
            check "$name: $cmd (after putting back the old $file) returns true" \
                "$("${nq[@]}" -At -c "$cmd" 2>"$ierr")" t
            check "$name: $cmd says nothing to the session" "$(cat "$ierr")" ""
        else
            bad "$name: cannot follow the HINT (file '$file', command '$cmd')"
        fi
        ;;
    precopy)
        check "$name: the copied state file was adopted at start" \
            "$(grep -c "sno: adopting the generator state of the cluster with system identifier $old_sysid (pg_upgrade)" "$(node_log "$new")")" 1
        ;;
    esac

    # 50,000 more rows into the same tables, from a clock 5 s behind the old IDs.
    local err="$dir/batch2.err"
    if batch "$new" 2 2>"$err"; then
        echo "ok: $name: $((ROWS_MAIN + ROWS_PART)) more rows made with sno_generate"
    else
        bad "$name: making rows after the upgrade failed: $(cat "$err")"
    fi
    if [[ "$kind" == derived ]]; then
        check "$name: the server log says the state file was missing (a new derived partition)" \
            "$(grep -c 'LOG:  sno: the generator state file was missing; IDs are now made with a new derived partition' "$(node_log "$new")")" 1
        check "$name: nothing of it reached the client" "$(grep -c 'sno:' "$err")" 0
    else
        # The old cluster's partition 7 is taken over (like a promotion: the old cluster no
        # longer runs), said once, by the session that first makes IDs or by the background
        # worker at start.
        local takeover="LOG:  sno: partition 7 was used before this server's promotion, point-in-time restore or upgrade"
        check "$name: partition 7 taken over from the old cluster (said once, in the server log)" \
            "$(grep -c "$takeover" "$(node_log "$new")")" 1
        check "$name: no WARNING while making IDs" "$(grep -c WARNING "$err")" 0
        check "$name: the state file now names the new cluster" \
            "$(sed -n 's/^system_identifier=//p' "$new_data/sno_generator.state")" \
            "$("${nq[@]}" -At -c "SELECT system_identifier FROM sno_generator")"
    fi
    local total=$((2 * IDS_PER_BATCH))
    check "$name: zero duplicates over all $total IDs, old and new" \
        "$("${nq[@]}" -At -c "SELECT count(*), count(DISTINCT x) FROM $ALL_IDS")" "$total|$total"
    # Teeth: the new IDs' times overlap the old ones', only the partition or the tick-tock bit
    # sets them apart.
    shared_units "$name"
    local parts
    parts="$("${nq[@]}" -At -c "SELECT string_agg(DISTINCT sno_partition(x)::text, ',') FROM $(ids_of 2)")"
    if [[ "$kind" == derived ]]; then
        if [[ "$parts" =~ ^[0-9]+$ && "$parts" != "$old_partition" ]]; then
            echo "ok: $name: new derived partition $parts (old: $old_partition)"
        else
            bad "$name: partition after the upgrade '$parts', before '$old_partition'"
        fi
    else
        check "$name: new IDs use sno.partition 7" "$parts" 7
        check "$name: new IDs are on the other tick-tock timeline (old: 0, new: 1)" \
            "$("${nq[@]}" -At -c "SELECT string_agg(DISTINCT sno_tick(id)::text, ',' ORDER BY sno_tick(id)::text) FROM t_part GROUP BY batch ORDER BY batch" | xargs)" "0 1"
    fi
    check "$name: t_main.id came from the DEFAULT (meta 1)" \
        "$("${nq[@]}" -At -c "SELECT string_agg(DISTINCT sno_meta(id)::text, ',') FROM t_main")" 1
    check "$name: the generator is ready" \
        "$("${nq[@]}" -At -c "SELECT state FROM sno_generator")" ready

    check_integrity "$name" "$dir"

    stop "$new" || bad "$name: the new server did not stop"
    echo "ok: $name: done ($((SECONDS - t0)) s)"
}

t_start=$SECONDS
# pg_upgrade needs the same sno in both majors (pg_restore re-creates its C functions).
# ext_sql BINDIR: a digest of the sno extension scripts installed for that major: each file's
# name and its statements, sorted, comments and spacing left out (pgrx may order the functions
# of one install script differently from one build to the next, as .ci/package allows).
ext_sql() {
    local dir
    dir="$("$1/pg_config" --sharedir)/extension"
    find "$dir" -name 'sno--*.sql' 2>/dev/null | grep -q . || return 0
    python3 - "$dir" <<'PY' | md5sum | cut -d' ' -f1
import glob, os, re, sys
for path in sorted(glob.glob(os.path.join(sys.argv[1], "sno--*.sql"))):
    text = re.sub(r"/\*.*?\*/", " ", open(path).read(), flags=re.S)
    text = "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("--"))
    stmts = sorted(s for s in (" ".join(s.split()) for s in re.split(r";\s*\n", text)) if s)
    print(os.path.basename(path))
    print("\n".join(stmts))
PY
}
sql_old="$(ext_sql "$old_bin")" sql_new="$(ext_sql "$new_bin")"
if [[ -z "$sql_old" || "$sql_old" != "$sql_new" ]]; then
    bad "sno is not installed alike in both majors (extension scripts '$sql_old' vs '$sql_new'): run install_extension for both (.ci/lib.sh)"
    exit 1
fi
probe_attver || bad "probing the PostgreSQL builds for pg_attver"
# SNO_UPGRADE_CASES="copy:derived:none ..." runs only those (while iterating).
for c in ${SNO_UPGRADE_CASES:-copy:derived:none copy:explicit:hint copy:explicit:precopy link:derived:none link:explicit:hint link:explicit:precopy copy:explicit:control}; do
    IFS=: read -r mode kind variant <<<"$c"
    run_case "$mode" "$kind" "$variant"
done
echo "pg_upgrade test: $((SECONDS - t_start)) s"
exit "$fail"
