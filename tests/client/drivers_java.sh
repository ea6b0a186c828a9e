#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=ends server=no cpu=1 estimate=90
# pgjdbc (Debian's libpostgresql-jdbc-java) against a real server: compiles and runs
# tests/drivers/java/SnoJdbcTest.java (it says what the driver must do, and RECIPES.md there
# what the README shows), which prints one ok:/FAIL: line per case.
#
# pgjdbc speaks TCP only (Unix sockets need a socket library), and the cluster this test is
# given listens on its socket only; so the test runs a throwaway server of its own (the
# harness of lib.bash, the same bindir, sno preloaded) on 127.0.0.1, port PORT+700..PORT+710,
# and leaves the given cluster alone. Installs libpostgresql-jdbc-java (and a JDK when javac
# is missing) from Debian first if needed; after that a run takes a few seconds (initdb,
# javac, the program).
#
# Usage: drivers_java.sh SOCKET_DIR PORT BINDIR   (run by .ci/test)
set -euo pipefail
port="$2" bindir="$3"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
jar=/usr/share/java/postgresql.jar
db=sno_drivers_java
# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
t0=$SECONDS

harness_setup drivers_java "$bindir" $((port + 700)) $((port + 710))

want=()
[[ -r "$jar" ]] || want+=(libpostgresql-jdbc-java)
command -v javac >/dev/null || want+=(default-jdk-headless)
if ((${#want[@]})); then
    echo "installing from Debian: ${want[*]}"
    export DEBIAN_FRONTEND=noninteractive
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${want[@]}"; } \
        >"$CL_WORK/apt.log" 2>&1 || { tail -n 30 "$CL_WORK/apt.log"; die "apt-get install ${want[*]}"; }
fi
[[ -r "$jar" ]] || die "no $jar after installing libpostgresql-jdbc-java"
command -v javac >/dev/null || die "no javac after installing default-jdk-headless"
node_new j
node_clock_mode j none
node_initdb j || die "initdb"
node_cmdline j shared_preload_libraries=sno listen_addresses=127.0.0.1 fsync=off
node_start j || die "the server on 127.0.0.1:$(node_port j) did not start"
node_sql j "CREATE DATABASE $db" >/dev/null
node_psql_db j "$db" -c "CREATE EXTENSION sno" >/dev/null

out="$CL_WORK/classes"
javac -Xlint:all -Werror -cp "$jar" -d "$out" "$root/tests/drivers/java/SnoJdbcTest.java" ||
    die "javac SnoJdbcTest.java"
rc=0
java -cp "$jar:$out" SnoJdbcTest "jdbc:postgresql://127.0.0.1:$(node_port j)/$db?user=postgres" \
    >"$CL_WORK/java.log" 2>&1 || rc=$?
# Its ok:/FAIL: lines as they are, and anything else it said (a stack trace) when it failed.
grep -E '^(ok|FAIL): ' "$CL_WORK/java.log" || true
n_ok="$(grep -c '^ok: ' "$CL_WORK/java.log" || true)"
n_fail="$(grep -c '^FAIL: ' "$CL_WORK/java.log" || true)"
((n_fail == 0)) || fail=1
if ((rc != 0 || n_fail != 0 || n_ok == 0)); then
    echo "--- the program's output:"
    head -n 80 "$CL_WORK/java.log"
fi
check "pgjdbc test program (exit code, cases passed > 0, failed)" "$rc $((n_ok > 0)) $n_fail" "0 1 0"
echo "($(head -n 1 "$CL_WORK/java.log"); drivers_java: $((SECONDS - t0)) s)"
exit "$fail"
