// node workload of tests/suites/90-real.sh (run with --perf-basic-prof):
// JIT-compiled recursion, sorting with a JS comparator, JSON, regexps.
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
const a = [];
for (let i = 0; i < 200000; i++) a.push({ k: i, v: String(i * 7) });
a.sort((x, y) => (x.v < y.v ? -1 : 1));
JSON.parse(JSON.stringify(a));
fib(28);
let n = 0;
for (let i = 0; i < 100000; i++) n += /(\d+)-(\w+)/.exec(i + "-ab") ? 1 : 0;
console.log(n);
