# .ci/bench, section citus: the table. Arguments: the results file (mode kind round tps rows, each
# pgbench's tps joined by +), the clients in all.
import statistics, sys
label = {"bigserial": "bigserial", "sno": "sno DEFAULT sno_generate(1)", "uuid4": "uuid DEFAULT gen_random_uuid()"}
clients = int(sys.argv[2])
mode_label = {"coordinator": f"through the coordinator ({clients} clients)",
              "workers": f"through the workers ({(clients + 1) // 2} + {clients // 2} clients)"}
runs = {}
for line in open(sys.argv[1]):
    mode, kind, rnd, tps, rows = line.split()
    runs.setdefault((mode, kind), []).append(sum(float(t) for t in tps.split("+")))
print("| mode | key | mean tps | median tps | tps per run |")
print("|---|---|---:|---:|---|")
for mode in ("coordinator", "workers"):
    if not any(m == mode for m, _ in runs):
        continue
    mean = {k: statistics.mean(runs[(mode, k)]) for k in label}
    med = {k: statistics.median(runs[(mode, k)]) for k in label}
    for k in label:
        print(f"| {mode_label[mode]} | {label[k]} | {mean[k]:.0f} | {med[k]:.0f} | "
              f"{', '.join(f'{t:.0f}' for t in runs[(mode, k)])} |")
    for k, name in (("bigserial", "bigserial"), ("uuid4", "uuid")):
        print(f"| {mode_label[mode]} | sno / {name} | {mean['sno'] / mean[k]:.3f} | {med['sno'] / med[k]:.3f} | |")
n = max(len(v) for v in runs.values())
print()
print(f"sno / bigserial and sno / uuid: the ratio of the means and of the medians of the same {n} rounds, "
      "each round running the three keys one after the other (in turn first).")
