# .ci/bench, section generator: the pgbench table. Arguments: bigserial tps run 1, run 2, sno tps
# run 1, run 2.
import sys
b1, b2, s1, s2 = map(float, sys.argv[1:])
b, s = (b1 + b2) / 2, (s1 + s2) / 2
print(f"| bigserial | {b1:.0f}, {b2:.0f} | {b:.0f} |")
print(f"| sno DEFAULT sno_generate(1) | {s1:.0f}, {s2:.0f} | {s:.0f} |")
print(f"| sno / bigserial | | {s / b:.3f} |")
