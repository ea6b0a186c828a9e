# .ci/bench, section leases: the table of the rounds. Arguments: the scratch directory (the
# benches' outputs leases-rust-ROUND.out and leases-python-ROUND.out), the rounds.
import re, statistics, sys
scratch, runs = sys.argv[1], int(sys.argv[2])
need_rust = ["leased_sno_ids_per_s_1_thread", "uuid_v7_ids_per_s_1_thread", "leased_sno_ids_per_s_2_threads",
             "uuid_v7_ids_per_s_2_threads", "lease_acquire_median", "lease_renew_median",
             "leased_sno_after_pause_median", "uuid_v7_after_pause_median"]
need_py = ["LeasedGenerator.next_id() (str)", "LeasedGenerator.next_bytes()", "uuid.uuid4()", "str(uuid.uuid4())"]
rounds = []  # per round: {figure: value}
for r in range(1, runs + 1):
    rust, rate, ms, paused = {}, {}, {}, {}
    for line in open(f"{scratch}/leases-rust-{r}.out"):
        f = line.split()
        if f[:1] == ["bench:"]:
            rust[f[1]] = float(f[2])
    for line in open(f"{scratch}/leases-python-{r}.out"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and re.fullmatch(r"[0-9,]+", cells[1]):
            rate[cells[0]] = float(cells[1].replace(",", ""))
        elif len(cells) == 3 and cells[0].startswith("sno_lease_"):
            ms[cells[0]] = (float(cells[1]), float(cells[2]))
        elif len(cells) == 2 and re.fullmatch(r"[0-9.]+", cells[1]):
            paused[cells[0]] = float(cells[1])
    missing = [k for k in need_rust if k not in rust] + [k for k in need_py if k not in rate]
    missing += [k for k in ("sno_lease_acquire", "sno_lease_renew") if k not in ms]
    missing += [k for k in ("LeasedGenerator.next_id() (str)", "str(uuid.uuid4())") if k not in paused]
    if missing:
        sys.exit(f"round {r}: missing from the benches' output: {', '.join(missing)}")
    rounds.append({
        "rust1": (rust["leased_sno_ids_per_s_1_thread"], rust["uuid_v7_ids_per_s_1_thread"]),
        "rust2": (rust["leased_sno_ids_per_s_2_threads"], rust["uuid_v7_ids_per_s_2_threads"]),
        "py_id": (rate["LeasedGenerator.next_id() (str)"], rate["uuid.uuid4()"]),
        "py_bytes": (rate["LeasedGenerator.next_bytes()"], rate["uuid.uuid4()"]),
        "py_str": (rate["LeasedGenerator.next_id() (str)"], rate["str(uuid.uuid4())"]),
        "rust_paused": (rust["leased_sno_after_pause_median"], rust["uuid_v7_after_pause_median"]),
        "py_paused": (paused["LeasedGenerator.next_id() (str)"], paused["str(uuid.uuid4())"]),
        "rs_acquire": rust["lease_acquire_median"], "rs_renew": rust["lease_renew_median"],
        "py_acquire_open": ms["sno_lease_acquire"][1], "py_renew_open": ms["sno_lease_renew"][1],
        "py_acquire_conn": ms["sno_lease_acquire"][0], "py_renew_conn": ms["sno_lease_renew"][0],
    })
med = statistics.median
print("| measurement | leased sno | uuid | sno / uuid |")
print("|---|---:|---:|---:|")
labels = {
    "rust1": "Rust, IDs/s, 1 thread: `generate()` vs `Uuid::now_v7()`",
    "rust2": "Rust, IDs/s, 2 threads sharing one generator vs `Uuid::now_v7()`",
    "py_id": "Python, IDs/s: `next_id()` (16-character str) vs `uuid.uuid4()`",
    "py_bytes": "Python, IDs/s: `next_bytes()` (10 bytes) vs `uuid.uuid4()`",
    "py_str": "Python, IDs/s: `next_id()` vs `str(uuid.uuid4())` (both strings)",
}
for k, label in labels.items():
    s, u = med(x[k][0] for x in rounds), med(x[k][1] for x in rounds)
    ratio = med(x[k][0] / x[k][1] for x in rounds)
    print(f"| {label} | {s:,.0f} | {u:,.0f} | {ratio:.2f} |")
paused_labels = {
    "rust_paused": "Rust, µs, the first ID after a 1 s pause (median of 5): `generate()` vs `Uuid::now_v7()`",
    "py_paused": "Python, µs, the first ID after a 1 s pause (median of 5): `next_id()` vs `str(uuid.uuid4())`",
}
for k, label in paused_labels.items():
    s, u = med(x[k][0] for x in rounds), med(x[k][1] for x in rounds)
    ratio = med(x[k][0] / x[k][1] for x in rounds)
    print(f"| {label} | {s:.1f} | {u:.1f} | {ratio:.2f} |")
costs = {
    "rs_acquire": "`sno_lease_acquire`, ms: Rust, `postgres` crate, one open connection",
    "py_acquire_open": "`sno_lease_acquire`, ms: Python, psycopg 3, one open connection",
    "py_acquire_conn": "`sno_lease_acquire`, ms: Python, a connection per call (as the generator calls it)",
    "rs_renew": "`sno_lease_renew`, ms: Rust, `postgres` crate, one open connection",
    "py_renew_open": "`sno_lease_renew`, ms: Python, psycopg 3, one open connection",
    "py_renew_conn": "`sno_lease_renew`, ms: Python, a connection per call (as the generator calls it)",
}
for k, label in costs.items():
    print(f"| {label} | {med(x[k] for x in rounds):.2f} | | |")
print()
print(f"IDs/s and ms: the medians of the {runs} rounds (ms: of each round's median call); sno / uuid: the median of "
      "the rounds' ratios, each of two rates measured one after the other in one process.")
print()
print("    rounds (IDs/s sno / uuid; ms):")
for r, x in enumerate(rounds, 1):
    rates = ", ".join(f"{k} {x[k][0]:.0f} / {x[k][1]:.0f}" for k in labels)
    calls = ", ".join(f"{k} {x[k]:.2f}" for k in costs)
    print(f"    {r}: {rates}; {calls}")
