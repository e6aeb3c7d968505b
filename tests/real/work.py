# CPython workload of tests/suites/90-real.sh: interpreter frames (recursion,
# the json C module, sorting with a Python key, a generator, re).
import json
import re
import sys


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def gen(n):
    for i in range(n):
        yield i * i % 7


def main(scale):
    d = [{"k": i, "v": str(i) * 3} for i in range(20000 // scale)]
    for _ in range(4):
        json.loads(json.dumps(d))
    fib(27 - scale.bit_length() * 2 + 2)
    sorted(d, key=lambda x: x["v"])
    sum(gen(300000 // scale))
    pat = re.compile(r"(\d+)-(\w+)")
    sum(len(pat.findall("%d-ab %d-cd" % (i, i))) for i in range(40000 // scale))


main(10 if sys.argv[1:] == ["small"] else 1)
