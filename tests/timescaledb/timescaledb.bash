# shellcheck shell=bash
# TimescaleDB for the tests: the build of TimescaleDB 2.28.3 from the project's shared sources,
# installed into Debian's PostgreSQL 15 (2.28.3 is the last release that supports 15).
#
#   source "$SNO_ROOT/tests/timescaledb/timescaledb.bash"
#   timescaledb_ensure /usr/lib/postgresql/15/bin/pg_config || exit 1   # builds once, then only checks
#
# TimescaleDB's sources are not in any registry these machines reach: they are kept in the
# shared folder beside the project (../shared/timescaledb, or $SNO_SHARED/timescaledb), with
# README.md there (the tarball is a `git archive` of the tag without docs/; its test/ folders
# stay, CMake adds them even with the checks off). The build needs cmake and libssl-dev besides
# the server's headers; timescaledb_ensure installs the Debian packages that are missing.
#
# What gets installed (make install, into the directories pg_config names): the loader
# timescaledb.so and the versioned timescaledb-2.28.3.so and timescaledb-tsl-2.28.3.so (the
# Timescale License part: compression, continuous aggregates, policies) in --pkglibdir, and the
# control and SQL files in --sharedir/extension. The versioned library is what tells an
# installation of this version apart, so its presence is the test of "already installed".

TIMESCALEDB_VERSION=2.28.3
SNO_ROOT="${SNO_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"

# timescaledb_shared: the folder of TimescaleDB's sources.
# (tests/client/lib.bash's shared_dir: $SNO_SHARED, ../shared, or beside the repository a clean
# clone came from, as a CI run's is.)
timescaledb_shared() { echo "$(shared_dir "$SNO_ROOT")/timescaledb"; }

# timescaledb_installed PG_CONFIG: whether that PostgreSQL has this version's library.
timescaledb_installed() { [[ -f "$("$1" --pkglibdir)/timescaledb-$TIMESCALEDB_VERSION.so" ]]; }

# timescaledb_build DIR PG_CONFIG: the sources unpacked into DIR and built for that PostgreSQL
# in DIR/timescaledb-$TIMESCALEDB_VERSION/build (not installed), as the shared README says: no
# regression or TAP checks, no -Werror (a newer compiler's warnings must not stop a release's
# build), CMake's default build type (Release). Telemetry is compiled in; these machines have
# no network, so a server turns it off (timescaledb.telemetry_level = off).
timescaledb_build() {
    local src="$1/timescaledb-$TIMESCALEDB_VERSION"
    tar xzf "$(timescaledb_shared)/timescaledb-$TIMESCALEDB_VERSION.tar.gz" -C "$1" &&
        (cd "$src" && ./bootstrap -DREGRESS_CHECKS=OFF -DTAP_CHECKS=OFF -DWARNINGS_AS_ERRORS=OFF \
            -DPG_CONFIG="$2") &&
        make -C "$src/build" -j"$(nproc)"
}

# timescaledb_ensure [PG_CONFIG]: TimescaleDB $TIMESCALEDB_VERSION built and installed into that
# PostgreSQL (Debian's 15 by default), unless its timescaledb-$TIMESCALEDB_VERSION.so is there
# already. About 65 s on 2 idle cores (5 minutes when a CI run shares them); the Debian
# packages the build needs are installed first if missing. Serialized with a lock, so that two
# tests (or engineers) starting together build it once. The build directory (under $SNO_WORK,
# or /tmp) is removed afterwards, also when the build failed (after its log's end is printed).
timescaledb_ensure() {
    local pgc="${1:-/usr/lib/postgresql/15/bin/pg_config}" src build log fd rc=0 missing=() p t0=$SECONDS
    timescaledb_installed "$pgc" && return 0
    src="$(timescaledb_shared)/timescaledb-$TIMESCALEDB_VERSION.tar.gz"
    [[ -r "$src" ]] || { echo "timescaledb_ensure: no TimescaleDB sources at $(timescaledb_shared)"; return 1; }
    exec {fd}>"/tmp/sno-timescaledb-install.lock"
    flock "$fd"
    if ! timescaledb_installed "$pgc"; then
        for p in cmake libssl-dev "postgresql-server-dev-$("$pgc" --version | awk '{ print $2 }' | cut -d. -f1)"; do
            dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
        done
        if ((${#missing[@]})); then
            echo "timescaledb_ensure: installing ${missing[*]}"
            export DEBIAN_FRONTEND=noninteractive
            { apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1 ||
                { apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null; }; } || rc=1
        fi
        mkdir -p "${SNO_WORK:-/tmp}"
        build="$(mktemp -d "${SNO_WORK:-/tmp}/sno-timescaledb-build.XXXXXX")"
        log="$build/build.log"
        if ((rc == 0)); then
            echo "timescaledb_ensure: building TimescaleDB $TIMESCALEDB_VERSION for $("$pgc" --version) (log $log)"
            { timescaledb_build "$build" "$pgc" &&
                make -C "$build/timescaledb-$TIMESCALEDB_VERSION/build" install; } >"$log" 2>&1 || rc=1
        fi
        if ((rc == 0)) && timescaledb_installed "$pgc"; then
            echo "timescaledb_ensure: TimescaleDB $TIMESCALEDB_VERSION installed in $((SECONDS - t0)) s"
        else
            echo "timescaledb_ensure: the build of TimescaleDB $TIMESCALEDB_VERSION failed; the end of $log:"
            tail -n 30 "$log" 2>/dev/null
            rc=1
        fi
        rm -rf "$build"
    fi
    flock -u "$fd"
    exec {fd}>&-
    return "$rc"
}
