# shellcheck shell=bash
# .ci/bench, section leases: IDs/s of a leased Rust and a leased Python generator against UUIDs
# made in the same process, and the cost of the lease calls (leases.sql, leases.py). Sourced by
# .ci/bench after common.sh.
LEASE_IDS="${SNO_BENCH_LEASE_IDS:-5000000}"
LEASE_SECONDS="${SNO_BENCH_LEASE_SECONDS:-3}"
[[ "$LEASE_IDS" =~ ^[1-9][0-9]*$ ]] || { echo "SNO_BENCH_LEASE_IDS: a count above 0 ('$LEASE_IDS')" >&2; exit 2; }
[[ "$LEASE_SECONDS" =~ ^[0-9]*\.?[0-9]+$ && ! "$LEASE_SECONDS" =~ ^[0.]+$ ]] ||
    { echo "SNO_BENCH_LEASE_SECONDS: seconds above 0 ('$LEASE_SECONDS')" >&2; exit 2; }
say "leases: a leased Rust generator against uuid v7 ($LEASE_IDS IDs a run), a leased Python generator against uuid4 (${LEASE_SECONDS} s each), one acquire and one renew; $RUNS rounds"
# Both clients on this machine against this server, in a database of their own, each round
# one run of each. Rust: the ignored test of the drivers' test project, built into its target
# directory (that of tests/client/rust_drivers.sh; sno and uuid at opt-level 3 in its dev
# profile), connecting as sno_lease_rust (its setup grants EXECUTE on the lease functions).
# Python: tests/client/lease_python_bench.py as bench_lease_py (the same grants), sno_pg from
# python/ and psycopg 3 from the drivers' venv. A released lease counts against the role's
# sno.lease_limit (64) until its window ends (a TTL of 60 s here; each run takes over 20), and a
# pool that grows takes a reserved partition, counted against sno.reserved_limit (16): both
# roles' limits are raised for the rounds.
venv="$(drivers_venv "$SNO_ROOT")"
LSOCK="$SNO_WORK/bench-$V"
psql -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS bench_leases" -c "CREATE DATABASE bench_leases"
"$BIN/psql" -X -q -h "$LSOCK" -p "$PORT" -U postgres -d bench_leases -v ON_ERROR_STOP=1 -f "$BENCH_D/leases.sql"
rs_target="${SNO_DRIVERS_TARGET_DIR:-$SNO_ROOT/target/drivers-rust}"
t=$(date +%s)
if ! CARGO_TARGET_DIR="$rs_target" cargo test --manifest-path "$SNO_ROOT/tests/drivers/rust/Cargo.toml" --test lease \
    --no-run >"$SCRATCH/leases-rust-build.log" 2>&1; then
    tail -n 30 "$SCRATCH/leases-rust-build.log" >&2
    echo "cargo test --no-run of tests/drivers/rust (--test lease) failed" >&2
    exit 1
fi
echo "    the Rust test project built in $(($(date +%s) - t)) s ($rs_target)"
for ((r = 1; r <= RUNS; r++)); do
    if ! SNO_TEST_DSN="postgresql:///bench_leases?host=$LSOCK&port=$PORT&user=postgres" SNO_BENCH_LEASE_IDS="$LEASE_IDS" \
        CARGO_TARGET_DIR="$rs_target" RUST_BACKTRACE=0 cargo test --manifest-path "$SNO_ROOT/tests/drivers/rust/Cargo.toml" \
        --test lease -- --ignored --exact --nocapture bench_leased_generator_vs_uuid_v7 >"$SCRATCH/leases-rust-$r.out" 2>&1; then
        tail -n 40 "$SCRATCH/leases-rust-$r.out" >&2
        echo "the Rust lease bench (bench_leased_generator_vs_uuid_v7) failed, round $r" >&2
        exit 1
    fi
    if ! PYTHONPATH="$SNO_ROOT/python" PYTHONDONTWRITEBYTECODE=1 "$venv/bin/python" \
        "$SNO_ROOT/tests/client/lease_python_bench.py" "host=$LSOCK port=$PORT dbname=bench_leases user=bench_lease_py" \
        "$LEASE_SECONDS" >"$SCRATCH/leases-python-$r.out" 2>&1; then
        cat "$SCRATCH/leases-python-$r.out" >&2
        echo "the Python lease bench (tests/client/lease_python_bench.py) failed, round $r" >&2
        exit 1
    fi
    echo "    round $r done"
done
uuid_crate="$(awk '$0 == "name = \"uuid\"" { getline; gsub(/"/, "", $3); print $3; exit }' "$SNO_ROOT/tests/drivers/rust/Cargo.lock")"
echo
echo "Partition leases on PostgreSQL $(psql -At -c 'SHOW server_version') (this server, Unix socket): IDs per second made" \
    "locally under a lease against a UUID made in the same process, and the cost of the lease calls. Rust" \
    "($(rustc --version | awk '{ print $2 }'), sno::lease::postgres's generator with a slice of 65,536, $(sed ':a;s/\B[0-9]\{3\}\>/,&/;ta' <<<"$LEASE_IDS") IDs a run)" \
    "against uuid $uuid_crate's \`Uuid::now_v7()\`; Python ($("$venv/bin/python" -c 'import sys, psycopg; print(f"{sys.version.split()[0]}, psycopg {psycopg.__version__}")'))," \
    "sno_pg.lease.LeasedGenerator with a slice of 65,536, one thread, ${LEASE_SECONDS} s a measurement, against" \
    "\`uuid.uuid4()\`. The lease calls: medians of 21 (Rust, one open connection) and 20 (Python) calls a round, a" \
    "TTL of 60 s. $RUNS rounds, a Rust run then a Python run each:"
echo
python3 "$BENCH_D/leases.py" "$SCRATCH" "$RUNS"
psql -c "DROP DATABASE bench_leases"
