# A released sno version beside the current package, for the ALTER EXTENSION UPDATE tests
# (extension_update.sh, update_paths.sh). Sourced after tests/client/cluster.bash and
# harness_setup; sets $pg (a private PostgreSQL), $extdir and CL_BINDIR.

# private_postgres PG_HOME: a copy of a relocatable PostgreSQL without sno, in $CL_WORK/pg,
# which every node of the test runs.
private_postgres() {
    pg="$CL_WORK/pg"
    cp -a "$1" "$pg"
    rm -f "$pg/lib/sno.so" "$pg/share/extension/sno.control" "$pg/share/extension"/sno--*.sql
    chmod -R a+rX "$pg"
    extdir="$("$pg/bin/pg_config" --sharedir)/extension"
    [[ "$extdir" == "$pg/share/extension" ]] || die "$1 is not relocatable (its copy's extension directory is $extdir)"
    CL_BINDIR="$pg/bin"
}

# build_release VERSION COMMIT: sno VERSION built from COMMIT (git archive) and installed into
# $pg; its generated install script must be sql/sno--VERSION.sql (comments aside: they carry
# source line numbers).
build_release() {
    local version="$1" commit="$2" src="$CL_WORK/sno-$1" t0=$SECONDS
    mkdir -p "$src"
    git -C "$root" archive "$commit" | tar -x -C "$src" || die "git archive $commit (sno $version)"
    if (cd "$src" && CARGO_TARGET_DIR="$root/target" cargo pgrx install --pg-config "$pg/bin/pg_config" \
        --no-default-features --features "pg$CL_MAJOR") >"$CL_WORK/build-$version.log" 2>&1; then
        echo "ok: sno $version built from $commit and installed ($((SECONDS - t0)) s)"
    else
        tail -20 "$CL_WORK/build-$version.log"
        die "building sno $version"
    fi
    check "sno $version's install script, generated from its commit, is sql/sno--$version.sql" \
        "$(diff <(code_only "$extdir/sno--$version.sql") <(code_only "$root/sql/sno--$version.sql") | head -5)" ""
}
code_only() { grep -v -e '^[[:space:]]*--' -e '^[[:space:]]*$' "$1"; }

# install_tarball TARBALL VERSION: the README's commands for a tarball (pg_config: $pg's), and
# its control file checked to say VERSION.
install_tarball() {
    local base
    base="$(basename "$1" .tar.gz)"
    (cd "$CL_WORK" && tar -xzf "$1" &&
        install -m 755 "$base/lib/sno.so" "$("$pg/bin/pg_config" --pkglibdir)" &&
        install -m 644 "$base"/share/extension/* "$("$pg/bin/pg_config" --sharedir)/extension") ||
        die "installing $1"
    check "the package's control file says $2" \
        "$(sed -n "s/^default_version = '\(.*\)'$/\1/p" "$extdir/sno.control")" "$2"
}
