// C++ workload for the unwinder's tests: exceptions thrown through frames
// built without frame pointers, std::sort with a lambda, virtual calls.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#define NOIPA __attribute__((noinline, noipa))
static volatile unsigned long sink;

struct Shape { virtual ~Shape() {} virtual double area(int n) const = 0; };
struct Square : Shape { NOIPA double area(int n) const override { double s = 0; for (int i = 0; i < n; i++) s += i * 0.25; return s; } };

NOIPA static int thrower(int d, int n)
{
	if (d == 0) {
		for (int i = 0; i < n; i++) sink += (unsigned)i;
		throw std::runtime_error("deep");
	}
	return thrower(d - 1, n) + 1;
}
NOIPA static void catcher(int iters)
{
	for (int i = 0; i < iters; i++) {
		try { sink += (unsigned)thrower(6, 2000); }
		catch (const std::exception &e) { sink += e.what()[0]; }
	}
}
NOIPA static void sorter(int iters)
{
	std::vector<unsigned> v(20000);
	for (int k = 0; k < iters; k++) {
		unsigned s = (unsigned)k;
		for (auto &x : v) x = s = s * 1103515245u + 12345u;
		std::sort(v.begin(), v.end(), [](unsigned a, unsigned b) { return (a ^ 0x55u) < (b ^ 0x55u); });
	}
}
NOIPA static double shapes(const Shape &s, int iters) { double t = 0; for (int i = 0; i < iters; i++) t += s.area(100000); return t; }

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10;
	Square sq;
	catcher(n * 200);
	sorter(n);
	sink += (unsigned long)shapes(sq, n * 20);
	std::printf("%lu\n", sink & 0xff);
	return 0;
}
