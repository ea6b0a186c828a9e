# .ci/bench, section convert: the table of the runs. Arguments: the scratch directory (convert.txt,
# the writers' pgbench logs wl-KIND-WRITERS-*), the writers' clients and statements/s.
import glob, math, sys
scratch, clients, tps = sys.argv[1], sys.argv[2], sys.argv[3]
names = ["INSERT legacy", "UPDATE legacy", "INSERT child", "SELECT legacy"]
label = {("none", "writers"): "writers alone, 10 s (no conversion)",
         ("tool", "no"): "python -m sno_pg.convert, no writers",
         ("tool", "writers"): f"python -m sno_pg.convert, {clients} writers",
         ("offline", "no"): "offline: one transaction, ACCESS EXCLUSIVE, no writers",
         ("offline", "writers"): f"offline: one transaction, ACCESS EXCLUSIVE, {clients} writers"}
print("| run | wall s | writer statements | longest writer statement ms | writers' p99 ms | notes |")
print("|---|---:|---:|---:|---:|---|")
detail_lines = []
for line in open(f"{scratch}/convert.txt"):
    f = line.split()
    kind, writers, t0, t1, rest = f[0], f[1], int(f[2]) / 1e9, int(f[3]) / 1e9, f[4:]
    wall = t1 - t0
    notes = []
    if kind == "tool":
        notes.append(f"the longest a locking step held its locks: {rest[0]} ms; batches {rest[1]} rows/s")
    elif kind == "offline":
        notes.append(f"of which the ALTER TABLE rewrite of legacy {float(rest[0]) / 1000:.1f} s")
    if kind != "none" and int(rest[-1]):
        notes.append(f"{rest[-1]} old rows' IDs out of created_at order (done in a later pass)")
    cells = [label[(kind, writers)], "" if kind == "none" else f"{wall:.1f}"]
    if writers == "writers":
        # per transaction: time (µs, from its scheduled start), script, end (epoch s, µs), schedule lag (µs)
        waits, by = [], {}
        for path in glob.glob(f"{scratch}/wl-{kind}-{writers}-*"):
            for l in open(path):
                x = l.split()
                ms = (int(x[2]) - int(x[6])) / 1000
                end = int(x[4]) + int(x[5]) / 1e6
                if end >= t0 and end - ms / 1000 <= t1:
                    waits.append(ms)
                    s = names[int(x[3])]
                    by[s] = max(by.get(s, 0), ms)
        if not waits:
            sys.exit(f"no writer statement during the {kind} run")
        waits.sort()
        p99 = waits[max(0, math.ceil(0.99 * len(waits)) - 1)]
        worst = max(by, key=by.get)
        cells += [str(len(waits)), f"{waits[-1]:.0f} ({worst})", f"{p99:.1f}"]
        detail_lines.append(f"- {label[(kind, writers)]}: {len(waits) / (t1 - t0):.0f} statements/s; longest by statement: "
                            + ", ".join(f"{s} {by[s]:.0f} ms" for s in names if s in by))
    else:
        cells += ["", "", ""]
    cells.append("; ".join(notes))
    print("| " + " | ".join(cells) + " |")
print()
print("The writers' statements counted are those that ran while the conversion ran (from its start to its end); "
      "a statement's time is pgbench's latency less its schedule lag: from when it was sent to its result.")
for l in detail_lines:
    print(l)
