#!/usr/bin/env bash
# One job of `bash .ci/test`, as the runner (.ci/runner.py, .ci/plan.py) starts it:
#
#   bash .ci/job.sh package V          # the release package of major V (.ci/package)
#   bash .ci/job.sh install V          # the source build removed, V's package installed
#   bash .ci/job.sh pgtest V           # the #[pg_test] tier on V, in a private copy of V
#   bash .ci/job.sh golden V TEST...   # SQL golden files (pgrx-tests/) on a server of its own
#   bash .ci/job.sh nopreload V        # the golden file for a server without sno preloaded
#   bash .ci/job.sh client V NAME      # tests/client/NAME.sh, with a server of its own if it
#                                      # declares server=yes (see tests/client/README or its header)
#
# Each job that runs servers has its own block of ports (SNO_JOB_PORT, from the runner's
# allocator) and its own directory under $SNO_WORK/jobs; it stops what it started. Run alone
# (to rerun one job by hand), a job takes SNO_JOB_PORT=20000 unless told otherwise.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
set +e
cd "$SNO_ROOT" || exit 1

PORT="${SNO_JOB_PORT:-20000}"
JOB="${SNO_JOB_NAME:-$1-$2${3:+-$3}}"
JOB="${JOB//\//-}"
DIR="$SNO_WORK/jobs/$JOB"

# own_server V [OPTIONS...]: a new cluster of major V for this job in $DIR/srv (socket there),
# on $PORT; stopped when the job ends.
own_server() {
    local v="$1"
    shift
    mkdir -p "$SNO_WORK/jobs" && chmod 1777 "$SNO_WORK/jobs" 2>/dev/null
    cluster_start "jobs/$JOB/srv" "$v" "$PORT" "$@" || { cat "$DIR/srv/server.log" 2>/dev/null; return 1; }
    trap 'cluster_stop "jobs/$JOB/srv" "'"$v"'"' EXIT
}

# regress V TEST...: pg_regress against this job's server.
regress() {
    local v="$1"
    shift
    local dir="$DIR/srv" bindir pkglib
    bindir="$("$(pg_config_for "$v")" --bindir)"
    pkglib="$("$(pg_config_for "$v")" --pkglibdir)"
    "$bindir/psql" -X -q -h "$dir" -p "$PORT" -U postgres -d postgres -c "CREATE DATABASE sno_regress" || return 1
    mkdir -p "$dir/out" && chmod 777 "$dir/out"
    PGUSER=postgres "$pkglib/pgxs/src/test/regress/pg_regress" --use-existing \
        --bindir="$bindir" --host="$dir" --port="$PORT" --dbname=sno_regress \
        --inputdir="$SNO_ROOT/pgrx-tests" --outputdir="$dir/out" "$@" ||
        { cat "$dir/out/regression.diffs" 2>/dev/null | head -200; return 1; }
}

# pgtest V: `cargo pgrx test` on major V against a private copy of a relocatable build of V (the
# PyPI wheel's), which pgrx installs the debug build into: the package installed in V's own
# installation for the client tests stays untouched, so both run at once.
pgtest() {
    local v="$1" home="$SNO_WORK/jobs/$JOB/pgrx" pg
    pg="$home/pg$v"
    rm -rf "$home" && mkdir -p "$home"
    cp -a "$(relocatable_home "$v")" "$pg" || return 1
    rm -f "$pg/lib/sno.so" "$pg/share/extension"/sno*
    chmod -R a+rX "$home"
    printf '[configs]\npg%s = "%s"\n' "$v" "$pg/bin/pg_config" >"$home/config.toml"
    # pgrx's test cluster lives under PGRX_HOME, made by postgres (--runas) in a directory of its.
    chmod 755 "$DIR" "$home"
    mkdir -p "$home/data-$v" && chown postgres: "$home/data-$v"
    # Its own target directory: the main one's lock stays free for the package builds.
    PGRX_HOME="$home" CARGO_TARGET_DIR="$SNO_ROOT/target/pgtest" \
        cargo pgrx test "pg$v" --runas postgres --pgdata "$home/data-$v"
}

case "$1" in
package)
    SNO_SETUP_DONE=1 SNO_PG_VERSIONS="$2" bash "$SNO_ROOT/.ci/package"
    ;;
install)
    install_package "$2"
    ;;
pgtest)
    pgtest "$2"
    ;;
golden)
    v="$2"
    shift 2
    own_server "$v" "shared_preload_libraries=sno" && regress "$v" "$@"
    ;;
nopreload)
    own_server "$2" && regress "$2" sno_no_preload
    ;;
client)
    v="$2" name="$3" bin="$("$(pg_config_for "$2")" --bindir)"
    if [[ "$(sed -n 's/^# ci:.*server=\([a-z]*\).*/\1/p' "tests/client/$name.sh" | head -1)" != no ]]; then
        own_server "$v" "shared_preload_libraries=sno" || exit 1
        sock="$DIR/srv"
    else
        mkdir -p "$DIR" && chmod 1777 "$DIR"
        sock="$DIR"
    fi
    SNO_PG_MAJOR="$v" bash "tests/client/$name.sh" "$sock" "$PORT" "$bin"
    ;;
*)
    echo "usage: $0 package|install|pgtest|golden|nopreload|client ..." >&2
    exit 2
    ;;
esac
