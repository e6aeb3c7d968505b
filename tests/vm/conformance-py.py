"""Conformance workload: Python functions three deep, run with -X perf so
that each gets a perf trampoline named in /tmp/perf-PID.map."""
import sys
def leaf(n):
    s = 0
    for i in range(n):
        s += i * i
    return s
def mid(n):
    return sum(leaf(n) for _ in range(20))
def top(k):
    t = 0
    for _ in range(k):
        t += mid(2000)
    return t
print(top(int(sys.argv[1]) if len(sys.argv) > 1 else 30))
