#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=15 server=yes cpu=1 estimate=60
# The Python ORMs against the live cluster: SQLAlchemy 2 with psycopg 3 and with asyncpg,
# SQLModel, Alembic and Django, through the package sno-pg of this repository (python/). Runs
# tests/orm/python/run.py, which takes the README's blocks of "Using sno from your ORM" (between
# the <!-- orm-section:python --> markers) and runs them as printed, then the six checks per
# ORM, the schema paths (create_all, Alembic autogenerate and upgrade, Django migrate), tables
# made by SQL, and bad IDs (SQLSTATE 22P02). It makes and drops its own databases (sno_orm_py_*).
#
# Twice, when it can: with python3 (Python 3.11 here) and the pins of
# tests/orm/python/requirements.txt (Django 5.2, the newest for 3.11), and, when a python3.12
# is found (SNO_PYTHON312, else on PATH, else pyenv's), with requirements-py312.txt (Django
# 6.1); without one, that run is skipped and says so.
#
# The packages come from PyPI into a venv per run at ${SNO_WORK:-/tmp/sno-work}/venv-orm and
# venv-orm-py312, made and filled on the first run and again only when the requirements file
# changes; sno-pg is installed into it as the README says (pip install ./python, from a copy of
# that directory so that setuptools leaves no build/ in the work tree), again whenever python/
# changes. PostgreSQL 15 only: the ORMs are client libraries.
#
# Usage: orm_python.sh SOCKET_DIR PORT BINDIR   (run by .ci/test)
set -euo pipefail
if [[ -n "${SNO_PG_MAJOR:-}" && "$SNO_PG_MAJOR" != 15 ]]; then
    echo "orm_python: skipped on PostgreSQL $SNO_PG_MAJOR (runs on 15 only)"
    exit 0
fi
host="$1" port="$2"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
t0=$SECONDS
mkdir -p "$SNO_WORK"

# orm_run PYTHON REQUIREMENTS VENV: fills the venv if needed, runs run.py with it.
orm_run() {
    local python="$1" req="$2" venv="$3" stamp copy out summary versions rc=0
    # A lock, so that two runs at once do not fill the venv together.
    exec 9>"$venv.lock"
    flock 9
    if [[ ! -x "$venv/bin/python" ]] || ! cmp -s "$req" "$venv/sno-requirements.txt"; then
        echo "(installing the Python ORMs into $venv)"
        { [[ -x "$venv/bin/python" ]] || "$python" -m venv "$venv"; } || die "could not make a venv with $python -m venv"
        "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req" ||
            die "pip install -r ${req#"$root/"} failed"
        cp "$req" "$venv/sno-requirements.txt"
        rm -f "$venv/sno-pg.stamp"
    fi
    stamp="$(cd "$root/python" && find . \( -name build -o -name '*.egg-info' -o -name __pycache__ \) -prune \
        -o -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum)"
    if ! [[ -f "$venv/sno-pg.stamp" && "$(cat "$venv/sno-pg.stamp")" == "$stamp" ]]; then
        echo "(installing sno-pg from python/ into $venv)"
        copy="$(mktemp -d)"
        tar -C "$root" --exclude=build --exclude='*.egg-info' --exclude=__pycache__ -cf - python | tar -C "$copy" -xf -
        "$venv/bin/python" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps "$copy/python" ||
            { rm -rf "$copy"; die "pip install ./python failed"; }
        rm -rf "$copy"
        echo "$stamp" >"$venv/sno-pg.stamp"
    fi
    flock -u 9
    versions="$("$venv/bin/python" -c 'import sys, sqlalchemy, sqlmodel, alembic, django, psycopg, asyncpg
print(f"Python {sys.version.split()[0]}, SQLAlchemy {sqlalchemy.__version__}, SQLModel {sqlmodel.__version__}, Alembic {alembic.__version__}, Django {django.__version__}, psycopg {psycopg.__version__}, asyncpg {asyncpg.__version__}")')"
    # No __pycache__ left in the work tree.
    out="$(cd "$root/tests/orm/python" && SNO_TEST_HOST="$host" SNO_TEST_PORT="$port" PYTHONDONTWRITEBYTECODE=1 \
        "$venv/bin/python" run.py 2>&1)" || rc=$?
    grep -E '^(ok|FAIL): ' <<<"$out" || true
    summary="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' <<<"$out" || true)"
    local before=$fail
    check "python ORM tests ($versions): exit code, failures" "$rc ${summary#* passed, }" "0 0 failed"
    if ((fail > before)); then
        echo "--- what else run.py printed:"
        grep -vE '^(ok|FAIL): ' <<<"$out" | tail -n 60
    fi
    echo "(orm_python with $versions: $summary)"
}

orm_run "${SNO_PYTHON:-python3}" "$root/tests/orm/python/requirements.txt" "$SNO_WORK/venv-orm"

# The first Python 3.12 of: SNO_PYTHON312, python3.12 on PATH (a pyenv shim there may refuse),
# pyenv's own.
py312=""
for p in ${SNO_PYTHON312:-} "$(command -v python3.12 || true)" /root/.pyenv/versions/3.12*/bin/python; do
    if [[ -n "$p" && -x "$p" ]] && "$p" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; then
        py312="$p"
        break
    fi
done
if [[ -n "$py312" ]]; then
    orm_run "$py312" "$root/tests/orm/python/requirements-py312.txt" "$SNO_WORK/venv-orm-py312"
else
    echo "orm_python: the Django 6.1 run skipped: no Python 3.12 found (set SNO_PYTHON312)"
fi
echo "(orm_python: $((SECONDS - t0)) s)"
exit "$fail"
