# .ci/bench, sections pk and fsync (insert_run): p99 and max latency (ms) from
# pgbench's per-transaction logs (third field: microseconds). Arguments: the log files.
import math, sys
lat = []
for path in sys.argv[1:]:
    with open(path) as f:
        lat.extend(int(line.split()[2]) for line in f if line.strip())
if not lat:
    sys.exit("no transactions in the pgbench logs " + " ".join(sys.argv[1:]))
lat.sort()
p99 = lat[max(0, math.ceil(0.99 * len(lat)) - 1)]
print(f"{p99 / 1000:.2f} {lat[-1] / 1000:.2f}")
