#!/usr/bin/env bash
# Records the real programs of tests/suites/90-real.sh with the host's perf
# (its kernel, no deferral), each in dwarf mode and with -g.
#   record.sh OUT SRC       SRC: the checkout (sources to compile)
# Writes OUT/PROG.MODE.data (MODE dwarf or fp), OUT/PROG.MODE.log, the JIT
# maps perf-PID.map node wrote, and OUT/rc ("PROG.MODE rc N" per line).
# A program not on this machine is listed in OUT/missing, not recorded.
set -u
out=$1 src=$2
mkdir -p "$out/tmp" "$out/go/cache"
: >"$out/rc"; : >"$out/missing"
FREQ=${REAL_FREQ:-397}
py=
for v in 3.12.1 3.12 3.13.0 3.11.7; do
	for p in "$HOME/.pyenv/versions/$v/bin/python${v%.*}" "$HOME/.pyenv/versions/$v/bin/python3"; do
		[ -x "$p" ] && [ -z "$py" ] && py=$p
	done
done
cc -O2 -g -fomit-frame-pointer -o "$out/nofp" "$src/tests/real/nofp.c" || echo nofp >>"$out/missing"
cc -O2 -fno-omit-frame-pointer -fno-builtin -fuse-ld=gold -Wl,--no-ld-generated-unwind-info -o "$out/plt" "$src/tests/real/plt.c" 2>/dev/null ||
	echo plt >>"$out/missing"
cat >"$out/go/main.go" <<'GO'
package main

import (
	"fmt"
	"sort"
	"strings"
)

//go:noinline
func fib(n int) int {
	if n < 2 {
		return n
	}
	return fib(n-1) + fib(n-2)
}

func main() {
	w := strings.Fields("a small package for the go toolchain to build")
	sort.Strings(w)
	fmt.Println(fib(20), strings.Join(w, " "))
}
GO
printf 'module realgo\n\ngo 1.19\n' >"$out/go/go.mod"

# The toolchain's own rustc, not rustup's proxy of that name: the proxy
# execs it in the same task, and perf 7.2's report --children then counts
# ld.so's inlined frames of both images under the base function's entry
# (more samples than hold it: docs/output.md, "perf's inline fold")
rustc_bin=$(rustc --print sysroot 2>/dev/null)/bin/rustc
[ -x "$rustc_bin" ] || rustc_bin=rustc

# prog_cmd PROG: the command line recorded (run in $out)
prog_cmd() {
	case $1 in
	python) echo "$py $src/tests/real/work.py" ;;
	node) echo "node --perf-basic-prof $src/tests/real/work.js" ;;
	gcc) echo "gcc -O2 -g -c -I$src/include -I$src -I$src/lib -D_GNU_SOURCE -o $out/reader.o $src/lib/format/reader.c" ;;
	gxx) echo "g++ -O1 -c -o $out/wlxx.o $src/tests/corpus/wlxx.cc" ;;
	go) echo "env GOCACHE=$out/go/cache GOFLAGS=-mod=mod GOPROXY=off GO111MODULE=on go build -buildvcs=false -o $out/go/realgo ." ;;
	rustc) echo "$rustc_bin -C opt-level=1 -C debuginfo=0 -o $out/rs $src/tests/vm/conformance-rs.rs" ;;
	nofp) echo "$out/nofp 25000" ;;
	plt) echo "$out/plt 700000" ;;
	esac
}

have() {
	case $1 in
	python) [ -n "$py" ] ;;
	nofp) [ -x "$out/nofp" ] ;;
	plt) [ -x "$out/plt" ] ;;
	gxx) command -v g++ >/dev/null ;;
	*) command -v "$1" >/dev/null ;;
	esac
}

for prog in ${REAL_PROGS:-python node gcc gxx go rustc nofp plt}; do
	if ! have "$prog"; then echo "$prog" >>"$out/missing"; continue; fi
	for mode in dwarf fp; do
		case $mode in dwarf) cg=(--call-graph dwarf) ;; fp) cg=(-g) ;; esac
		rm -rf "$out/go/cache"/* "$out/go/realgo"
		# shellcheck disable=SC2046
		dir=$out; [ "$prog" != go ] || dir=$out/go
		(cd "$dir" && perf record -q -N -F "$FREQ" "${cg[@]}" -o "$out/$prog.$mode.data" -- $(prog_cmd "$prog")) \
			>"$out/$prog.$mode.log" 2>&1
		echo "$prog.$mode rc $?" >>"$out/rc"
	done
done
# node's JIT maps, kept with the recordings (perf-PID.map, PID the recording's)
for f in "$out"/*.data; do
	for pid in $(perf script -F pid -i "$f" 2>/dev/null | sort -u); do
		[ ! -f "/tmp/perf-$pid.map" ] || mv "/tmp/perf-$pid.map" "$out/tmp/"
	done
done
