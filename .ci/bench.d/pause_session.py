# .ci/bench, section pause: one line a timed INSERT (mode pause kind sample ms
# state_write_waits-growth) from the output of the session's psql script. Argument: that output.
import re, sys
w0, t, ms = {}, None, {}
for line in open(sys.argv[1]):
    f = line.split()
    if not f:
        continue
    if f[0] == "w0":
        w0[tuple(f[1:5])] = int(f[5])
    elif f[0] == "t":
        t = tuple(f[1:5])
    elif f[0] == "Time:":
        m = re.match(r"Time: ([0-9.]+) ms", line)
        if t is None or m is None:
            sys.exit(f"unexpected timing line: {line!r}")
        ms[t], t = float(m.group(1)), None
    elif f[0] == "w1":
        k = tuple(f[1:5])
        print(*k, f"{ms[k]:.3f}", int(f[5]) - w0[k])
    else:
        sys.exit(f"unexpected line in the session's output: {line!r}")
