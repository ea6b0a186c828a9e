# .ci/bench, section pause: the table. Arguments: the file of pause_session.py's lines of both
# modes, SNO_SLOW_FSYNC_MS.
import statistics, sys
from collections import defaultdict
path, slow_ms = sys.argv[1], sys.argv[2]
label = {"bigserial": "bigserial", "sno": "sno", "uuid7": "uuidv7()"}
mode_label = {"unslowed": "real disk", "slowed": f"state-file fsync +{slow_ms} ms"}
target = {"unslowed": 1.5, "slowed": 3.0}
ms, waits, rows = defaultdict(list), defaultdict(list), []
for line in open(path):
    mode, pause, kind, rnd, t, w = line.split()
    if (mode, pause) not in rows:
        rows.append((mode, pause))
    ms[(mode, pause, kind)].append(float(t))
    waits[(mode, pause, kind)].append(int(w))
kinds = [k for k in label if any(key[2] == k for key in ms)]
med = lambda m, p, k: statistics.median(ms[(m, p, k)])
uuid7 = "uuid7" in kinds
head = ["disk", "pause"] + [f"{label[k]} ms" for k in kinds] + ["sno / bigserial", "target"]
head += ["uuidv7 / bigserial"] if uuid7 else []
head.append("state_write_waits growth, sno inserts")
print("| " + " | ".join(head) + " |")
print("|---|---:|" + "---:|" * len(kinds) + "---:|---|" + ("---:|" if uuid7 else "") + "---:|")
for m, p in rows:
    cells = [mode_label[m], "none (back-to-back)" if p == "0" else f"{p} s"]
    cells += [f"{med(m, p, k):.2f} (max {max(ms[(m, p, k)]):.2f})" for k in kinds]
    ratio = med(m, p, "sno") / med(m, p, "bigserial")
    cells.append(f"{ratio:.2f}")
    cells.append("" if p == "0" else f"≤ {target[m]:g}x: {'met' if round(ratio, 2) <= target[m] else 'MISSED'}")
    if uuid7:
        cells.append(f"{med(m, p, 'uuid7') / med(m, p, 'bigserial'):.2f}")
    w = waits[(m, p, "sno")]
    cells.append(f"+{sum(w)} ({sum(1 for x in w if x)} of {len(w)} inserts)")
    print("| " + " | ".join(cells) + " |")
n = max(len(v) for v in ms.values())
print()
print(f"Median (max) of {n} inserts per pause and key, in ms as the client sees them (psql \\timing, Unix socket); "
      "the ratios are of the medians. Targets after a pause: sno within 1.5x of bigserial on the real disk, "
      "within 3x with the slowed fsync (printed, not enforced).")
for k in kinds:
    w = sum(sum(waits[(m, p, k)]) for m, p in rows)
    if k != "sno" and w:
        print(f"- state_write_waits grew by {w} during the {label[k]} inserts: something else made IDs")
print()
print("    inserts (disk pause key: ms of each; state_write_waits growth in each):")
for m, p in rows:
    for k in kinds:
        print(f"    {m} {p} {k}: {', '.join(f'{x:.2f}' for x in ms[(m, p, k)])}; "
              f"{', '.join(map(str, waits[(m, p, k)]))}")
