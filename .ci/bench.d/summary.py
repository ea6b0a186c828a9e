# .ci/bench, sections pk and fsync: their tables. Arguments: pk or fsync, the results file: one row
# per run: group (clients or mode), kind, round, tps, p99 ms, max ms, PK bytes/row, rows, delayed
# fsyncs during the run.
import statistics, sys
from collections import defaultdict
kind_label = {"bigserial": "bigserial", "sno": "sno DEFAULT sno_generate(1)",
              "uuid4": "uuid DEFAULT gen_random_uuid()", "uuid7": "uuid DEFAULT uuidv7()"}
section, path = sys.argv[1], sys.argv[2]
runs = defaultdict(list)
order = []
for line in open(path):
    g, kind, rnd, tps, p99, mx, bpr, rows, delayed = line.split()
    if (g, kind) not in runs:
        order.append((g, kind))
    runs[(g, kind)].append(dict(tps=float(tps), p99=float(p99), max=float(mx), bpr=float(bpr),
                                rows=int(rows), delayed=int(delayed)))
groups = list(dict.fromkeys(g for g, _ in order))
kinds = [k for k in kind_label if any(k == kk for _, kk in order)]
med = lambda g, k, f: statistics.median(r[f] for r in runs[(g, k)])
worst = lambda g, k: max(r["max"] for r in runs[(g, k)])
n = max(len(v) for v in runs.values())
if section == "pk":
    print("| clients | key | tps | p99 ms | max ms | PK bytes/row |")
    print("|---:|---|---:|---:|---:|---:|")
    for g in groups:
        for k in kinds:
            print(f"| {g} | {kind_label[k]} | {med(g, k, 'tps'):.0f} | {med(g, k, 'p99'):.2f} "
                  f"| {worst(g, k):.1f} | {med(g, k, 'bpr'):.2f} |")
    print()
    print(f"Median of {n} runs each (tps, p99, bytes/row); max ms is the worst of the {n} runs.")
    print()
    for g in groups:
        s = lambda f: med(g, "sno", f)
        parts = []
        for k, name in (("uuid7", "uuidv7"), ("uuid4", "gen_random_uuid"), ("bigserial", "bigserial")):
            if (g, k) in runs:
                parts.append(f"÷ {name} {s('bpr') / med(g, k, 'bpr'):.3f}")
        print(f"- {g} clients: sno PK bytes/row {', '.join(parts)}; "
              f"sno tps ÷ bigserial tps {s('tps') / med(g, 'bigserial', 'tps'):.3f}")
else:
    print("| mode | key | tps | p99 ms | max ms |")
    print("|---|---|---:|---:|---:|")
    for g in groups:
        for k in kinds:
            print(f"| {g} | {kind_label[k]} | {med(g, k, 'tps'):.0f} | {med(g, k, 'p99'):.2f} | {worst(g, k):.1f} |")
    print()
    print(f"Median of {n} runs each (tps, p99); max ms is the worst of the {n} runs.")
    print()
    slow, fast = groups[-1], groups[0]
    print(f"- sno tps with slow fsync ÷ without: {med(slow, 'sno', 'tps') / med(fast, 'sno', 'tps'):.3f}"
          f" (bigserial: {med(slow, 'bigserial', 'tps') / med(fast, 'bigserial', 'tps'):.3f})")
    for g in groups:
        for k in kinds:
            d = [r["delayed"] for r in runs[(g, k)]]
            print(f"- delayed fsyncs in the server log, {g}, {kind_label[k]}: {sum(d)} ({', '.join(map(str, d))} per run)")
print()
print("    runs (group key round: tps p99 max bytes/row rows delayed-fsyncs):")
for line in open(path):
    g, kind, rnd, *rest = line.split()
    print(f"    {g} {kind} {rnd}: {' '.join(rest)}")
