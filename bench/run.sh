#!/usr/bin/env bash
# make bench: dstack vs perf 7.2 side by side on the same files.
# usage: bench/run.sh BUILD_DIR   (BUILD_DIR holds a release dstack)
# Inputs are prepared under BUILD_DIR/bench (never in git).  Every row first
# checks that both tools print the same thing, then times N runs of each,
# the two sides' runs interleaved (wall-clock median and min,
# bench/timeit.c; 21 runs of dstack on the corpus files, see NF) and
# records peak RSS (KiB).
# Rows needing perf 7.2 print SKIPPED when the guest (tests/lib/kvm.sh) is not set up.
set -u
BUILD=${1:-build}
N=${BENCH_RUNS:-5}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
DSTACK=$BUILD/dstack
. "$ROOT/tests/lib/kvm.sh"
PERF7=$KVM_PERF7
W=$BUILD/testdata
B=$BUILD/bench
mkdir -p "$B"
[ -x "$DSTACK" ] || { echo "bench: no $DSTACK (run make)" >&2; exit 2; }
[ -f "$W/kallsyms" ] || tests/unpack-corpus.sh "$ROOT/$W" >/dev/null
have_perf7() { kvm_ready; }

# time_cmd CMD...: N runs; prints "median min maxrss_kib" (bench/timeit.c:
# fork to wait4, nothing of the harness's own in the times)
cc -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -o "$B/timeit" bench/timeit.c || exit 1
time_cmd() {
	"$B/timeit" "$N" "$@"
}
# dstack on the corpus files: a run is ~20 ms, and this VM's runs swing by
# +-5 ms; the median of 5 moved by 30% from one bench to the next, so these
# take 21 runs (half a second); perf's runs (0.3 s each) stay at N.
NF=${BENCH_FAST_RUNS:-21}
# Interleaved: "N1 CMD1... :: N2 CMD2..." -> one "median min rss" line per
# command, their runs alternated in proportion, so that a slow minute of
# this VM falls on both sides of a ratio (one bench read perf's report of
# mix.fp at 0.26 s and the next at 0.32 s, dstack's at 16.5 and 16.1 ms,
# when each side took its runs in a block of its own).
time_mixed() {
	"$B/timeit" "$@"
}
line() { sed -n "${1}p" <<<"$2"; }
# Before a row's timed runs: the comparison's output files go (written but
# not yet on disk, their write-back would land in the timed runs: ~50 MB
# for a script row), and whatever else is dirty is written now.
settle() {
	rm -f "$@"
	sync
}

printf '%-34s %-16s %9s %9s %7s %10s %10s  %s\n' command input dstack_s perf_s ratio dstack_KiB perf_KiB note
row() { # name input dstack_stats perf_stats note
	local d=($3) p=($4)
	printf '%-34s %-16s %9s %9s %6.1fx %10s %10s  %s\n' "$1" "$2" "${d[0]}" "${p[0]}" \
		"$(echo "${p[0]} / ${d[0]}" | bc -l)" "${d[2]}" "${p[2]}" "$5"
}
skip() { printf '%-34s %-16s SKIPPED: %s\n' "$1" "$2" "$3"; }

# report_note PERF DSTACK [--trees]: a report row's note, the two outputs
# compared as the test suite does (same lines and percentages; perf pads its
# columns differently, so not byte for byte)
report_note() {
	local res
	if res=$(python3 tests/check_report.py "$@" 2>&1); then
		echo "equal per tests/check_report.py"
	else
		echo "DIFFER: $(echo "$res" | tail -1)"
	fi
}

ks_for() { if [ "$1" = threads2.defer ]; then echo "$W/data/threads2.defer.kallsyms"; else echo "$W/kallsyms"; fi; }

# script: .fp exactly; deferred ones with --no-merge-callchains on both sides
# (dstack stitches samples perf 7.2 leaves unstitched, so merged output differs).
bench_script() {
	local name=$1 extra=() label="script"
	case $name in *.defer) extra=(--no-merge-callchains); label="script --no-merge-callchains";; esac
	local opts=(--symfs "$W/symfs-root/symfs" --kallsyms "$(ks_for "$name")" -i "$W/data/$name.data" "${extra[@]}")
	have_perf7 || { skip "$label" "$name" "perf 7.2 not ready (guest at $KVM_DIR not set up)"; return; }
	"$DSTACK" script "${opts[@]}" > "$B/$name.dstack.script" 2>/dev/null
	"$PERF7" script "${opts[@]}" > "$B/$name.perf.script" 2>/dev/null
	if ! cmp -s "$B/$name.dstack.script" "$B/$name.perf.script"; then
		skip "$label" "$name" "outputs differ ($B/$name.*.script)"; return
	fi
	settle "$B/$name.dstack.script" "$B/$name.perf.script"
	local t
	t=$(time_mixed "$NF" "$DSTACK" script "${opts[@]}" :: "$N" "$PERF7" script "${opts[@]}")
	row "$label" "$name" "$(line 1 "$t")" "$(line 2 "$t")" "outputs equal"
}

bench_report() {
	local name=$1
	local opts=(--stdio --no-children --symfs "$W/symfs-root/symfs" --kallsyms "$(ks_for "$name")" -i "$W/data/$name.data")
	have_perf7 || { skip "report --stdio" "$name" "perf 7.2 not ready"; return; }
	"$DSTACK" report "${opts[@]}" > "$B/$name.dstack.report" 2>/dev/null
	"$PERF7" report "${opts[@]}" > "$B/$name.perf.report" 2>/dev/null
	local note
	note=$(report_note "$B/$name.perf.report" "$B/$name.dstack.report" --trees)
	settle
	local t
	t=$(time_mixed "$NF" "$DSTACK" report "${opts[@]}" :: "$N" "$PERF7" report "${opts[@]}")
	row "report --stdio --no-children" "$name" "$(line 1 "$t")" "$(line 2 "$t")" "$note"
}

# folded vs perf script | awk collapse (the floor is perf script alone).
bench_folded() {
	local name=$1
	local opts=(--symfs "$W/symfs-root/symfs" --kallsyms "$(ks_for "$name")" -i "$W/data/$name.data")
	have_perf7 || { skip "folded" "$name" "perf 7.2 not ready"; return; }
	local dn pn
	dn=$("$DSTACK" folded "${opts[@]}" 2>/dev/null | awk '{s += $NF} END {print s}')
	pn=$("$PERF7" script "${opts[@]}" 2>/dev/null | awk -f bench/collapse.awk | awk '{s += $NF} END {print s}')
	local note="sample totals equal ($dn)"
	[ "$dn" = "$pn" ] || note="SAMPLE TOTALS DIFFER ($dn vs $pn)"
	printf '%s\n' "#!/bin/sh" "\"$PERF7\" script $(printf '%q ' "${opts[@]}") | awk -f bench/collapse.awk" > "$B/perf-folded.sh"
	settle
	local t
	t=$(time_mixed "$NF" "$DSTACK" folded "${opts[@]}" :: "$N" sh "$B/perf-folded.sh")
	row "folded (perf: script|awk)" "$name" "$(line 1 "$t")" "$(line 2 "$t")" "$note"
	bench_pprof "$name" "$NF" "$B/perf-folded.sh" "$pn" "${opts[@]}"
}

# pprof against the same perf pipeline as folded (perf has no pprof output;
# perf script is the floor), its sample total checked against perf's.
# usage: bench_pprof LABEL RUNS PERF_SCRIPT PERF_TOTAL OPTS...
bench_pprof() {
	local name=$1 runs=$2 perf_sh=$3 pn=$4
	shift 4
	"$DSTACK" pprof "$@" -o "$B/bench.pb.gz" 2>/dev/null
	local dn note t
	dn=$(python3 bench/pprof_samples.py "$B/bench.pb.gz" 2>/dev/null)
	note="sample totals equal ($dn)"
	[ "$dn" = "$pn" ] || note="SAMPLE TOTALS DIFFER ($dn vs $pn)"
	settle "$B/bench.pb.gz"
	t=$(time_mixed "$runs" "$DSTACK" pprof "$@" -o "$B/bench.pb.gz" :: "$N" sh "$perf_sh")
	row "pprof (perf: script|awk)" "$name" "$(line 1 "$t")" "$(line 2 "$t")" "$note"
}

for f in kernel.fp mix.fp kernel.defer threads2.defer; do bench_script "$f"; done
if "$DSTACK" report -h >/dev/null 2>&1; then bench_report kernel.fp; bench_report mix.fp; fi
if "$DSTACK" folded -h >/dev/null 2>&1; then bench_folded kernel.fp; fi

# Scaling: the generator grows a recording COPIES times (new pids/tids, times,
# cookies); script must stay linear in time and flat in memory.
cflags=(-std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -Wno-unused-parameter -Iinclude)
libs=("$BUILD/libdstack.a" -lelf -ldw -lzstd -lz -liberty -lm)
cc "${cflags[@]}" -o "$B/scale" bench/scale.c "${libs[@]}" || exit 1
cc "${cflags[@]}" -o "$B/stitch_bench" bench/stitch_bench.c "${libs[@]}" || exit 1

scaled() { # name copies -> path of the scaled file (made once)
	local out="$B/$1.x$2.data"
	[ -s "$out" ] || "$B/scale" "$W/data/$1.data" "$out" "$2" 2>/dev/null || { rm -f "$out"; return 1; }
	echo "$out"
}

# perf's default report view (--children) on a deferred recording of ~75,000
# samples (mix.defer grown 3x), and diff of two such recordings against one
# report of dstack's own (its goal: within 2x).  Deferred outputs are not
# equal by design (dstack stitches the samples whose record came first, which
# perf leaves with a bare cookie: docs/stitching.md), so the note says where
# check_report.py finds them apart.
bench_children() {
	local name=$1 f opts t note
	f=$(scaled "$name" 3) || return
	have_perf7 || { skip "report --stdio (--children)" "$name.x3" "perf 7.2 not ready"; return; }
	opts=(--stdio --symfs "$W/symfs-root/symfs" --kallsyms "$W/kallsyms" -i "$f")
	"$DSTACK" report "${opts[@]}" > "$B/children.dstack.report" 2>/dev/null
	"$PERF7" report "${opts[@]}" > "$B/children.perf.report" 2>/dev/null
	note=$(report_note "$B/children.perf.report" "$B/children.dstack.report")
	settle
	t=$(time_mixed "$NL" "$DSTACK" report "${opts[@]}" :: "$NL" "$PERF7" report "${opts[@]}")
	row "report --stdio (--children)" "$name.x3" "$(line 1 "$t")" "$(line 2 "$t")" "$note ($(grep -c . "$B/children.perf.report") lines)"
	# the flat view (--no-children) of the same file: its goal is about this one too
	"$DSTACK" report --no-children "${opts[@]}" > "$B/nochildren.dstack.report" 2>/dev/null
	"$PERF7" report --no-children "${opts[@]}" > "$B/nochildren.perf.report" 2>/dev/null
	note=$(report_note "$B/nochildren.perf.report" "$B/nochildren.dstack.report" --trees)
	settle
	t=$(time_mixed "$NL" "$DSTACK" report --no-children "${opts[@]}" :: "$NL" "$PERF7" report --no-children "${opts[@]}")
	row "report --stdio --no-children" "$name.x3" "$(line 1 "$t")" "$(line 2 "$t")" "$note"
	opts=(--symfs "$W/symfs-root/symfs" --kallsyms "$W/kallsyms")
	t=$(time_mixed "$NL" "$DSTACK" diff "${opts[@]}" "$W/data/$name.data" "$f" :: \
		"$NL" "$DSTACK" report --stdio "${opts[@]}" -i "$f")
	row "diff (vs dstack report)" "$name,x3" "$(line 1 "$t")" "$(line 2 "$t")" "second column: one report of the x3 file (goal: ratio >= 0.5)"
}

# The large input, side by side with perf (fewer runs: perf takes seconds).
large=$(scaled kernel.fp "${BENCH_LARGE_COPIES:-20}") || exit 1
NL=${BENCH_LARGE_RUNS:-5}
bench_children mix.defer
if have_perf7; then
	opts=(--symfs "$W/symfs-root/symfs" --kallsyms "$W/kallsyms" -i "$large")
	"$DSTACK" script "${opts[@]}" > "$B/large.dstack.script" 2>/dev/null
	"$PERF7" script "${opts[@]}" > "$B/large.perf.script" 2>/dev/null
	if cmp -s "$B/large.dstack.script" "$B/large.perf.script"; then
		settle "$B/large.dstack.script" "$B/large.perf.script"
		t=$(time_mixed "$NL" "$DSTACK" script "${opts[@]}" :: "$NL" "$PERF7" script "${opts[@]}")
		row "script" "$(basename "$large" .data)" "$(line 1 "$t")" "$(line 2 "$t")" \
			"outputs equal ($(du -m "$large" | cut -f1) MB)"
	else
		skip "script" "$(basename "$large")" "outputs differ ($B/large.*.script)"
	fi
	# report and folded on the large input too (their goals are about big profiles)
	ropts=(--stdio --no-children "${opts[@]}")
	"$DSTACK" report "${ropts[@]}" > "$B/large.dstack.report" 2>/dev/null
	"$PERF7" report "${ropts[@]}" > "$B/large.perf.report" 2>/dev/null
	note=$(report_note "$B/large.perf.report" "$B/large.dstack.report" --trees)
	settle
	t=$(time_mixed "$NL" "$DSTACK" report "${ropts[@]}" :: "$NL" "$PERF7" report "${ropts[@]}")
	row "report --stdio --no-children" "$(basename "$large" .data)" "$(line 1 "$t")" "$(line 2 "$t")" "$note"
	dn=$("$DSTACK" folded "${opts[@]}" 2>/dev/null | awk '{s += $NF} END {print s}')
	pn=$("$PERF7" script "${opts[@]}" 2>/dev/null | awk -f bench/collapse.awk | awk '{s += $NF} END {print s}')
	note="sample totals equal ($dn)"
	[ "$dn" = "$pn" ] || note="SAMPLE TOTALS DIFFER ($dn vs $pn)"
	printf '%s\n' "#!/bin/sh" "\"$PERF7\" script $(printf '%q ' "${opts[@]}") | awk -f bench/collapse.awk" > "$B/perf-folded-large.sh"
	settle
	t=$(time_mixed "$NL" "$DSTACK" folded "${opts[@]}" :: "$NL" sh "$B/perf-folded-large.sh")
	row "folded (perf: script|awk)" "$(basename "$large" .data)" "$(line 1 "$t")" "$(line 2 "$t")" "$note"
	N=$NL bench_pprof "$(basename "$large" .data)" "$NL" "$B/perf-folded-large.sh" "$pn" "${opts[@]}"
else
	skip "script" "$(basename "$large")" "perf 7.2 not ready"
fi

# Dwarf mode (--call-graph dwarf: a stack copy per sample, unwound when
# read): a recording of >= 10,000 samples made by perf 7.2 in the guest
# (bench/unwind-job.sh, made once), script and report against perf 7.2's
# libdw unwinding; then the same grown to ~1 GB (BENCH_DWARF_BIG_COPIES,
# default 12 copies of the ~88 MB recording; 0: skip) for script.
bench_dwarf() {
	local d="$B/dwarf" job out symfs libs
	job=$d/job out=$d/out symfs=$d/symfs
	if ! have_perf7 || [ ! -x "$KVM_SIDCC" ]; then
		skip "script (dwarf mode)" "dwarf" "kernel-vm not ready"; return
	fi
	if [ ! -s "$out/dwarf.data" ]; then
		rm -rf "$d"; mkdir -p "$job" "$out" "$symfs/job" "$symfs/usr/lib/x86_64-linux-gnu"
		cp tests/vm/unwind/uw.c "$job/" && cp bench/unwind-job.sh "$job/run.sh" &&
			(cd "$job" && "$KVM_SIDCC" -O2 -g -fomit-frame-pointer -pthread -o uw uw.c) ||
			{ skip "script (dwarf mode)" "dwarf" "cannot build the workload"; return; }
		"$KVM_RUN" -t 900 "$job" "$out" >"$d/run.log" 2>&1 || "$KVM_RUN" -t 900 "$job" "$out" >"$d/run.log" 2>&1 ||
			{ skip "script (dwarf mode)" "dwarf" "the guest job failed ($d/run.log)"; rm -f "$out/dwarf.data"; return; }
		cp "$job/uw" "$symfs/job/"
		libs=${KVM_CACHE:-/var/tmp/kernel-vm}/root/usr/lib/x86_64-linux-gnu
		cp -L "$libs/libc.so.6" "$libs/ld-linux-x86-64.so.2" "$symfs/usr/lib/x86_64-linux-gnu/"
	fi
	local opts=(--symfs "$symfs" --kallsyms "$out/kallsyms" -i "$out/dwarf.data") n t note
	"$DSTACK" script "${opts[@]}" > "$B/dwarf.dstack.script" 2>/dev/null
	"$PERF7" script "${opts[@]}" > "$B/dwarf.perf.script" 2>/dev/null
	n=$(grep -c cpu-clock "$B/dwarf.dstack.script")
	if cmp -s "$B/dwarf.dstack.script" "$B/dwarf.perf.script"; then
		settle "$B/dwarf.dstack.script" "$B/dwarf.perf.script"
		t=$(time_mixed "$NL" "$DSTACK" script "${opts[@]}" :: "$NL" "$PERF7" script "${opts[@]}")
		row "script (dwarf mode)" "dwarf" "$(line 1 "$t")" "$(line 2 "$t")" \
			"outputs equal ($n samples, $(du -m "$out/dwarf.data" | cut -f1) MB)"
	else
		skip "script (dwarf mode)" "dwarf" "outputs differ ($B/dwarf.*.script)"
	fi
	local ropts=(--stdio --no-children "${opts[@]}")
	"$DSTACK" report "${ropts[@]}" > "$B/dwarf.dstack.report" 2>/dev/null
	"$PERF7" report "${ropts[@]}" > "$B/dwarf.perf.report" 2>/dev/null
	note=$(report_note "$B/dwarf.perf.report" "$B/dwarf.dstack.report" --trees)
	settle
	t=$(time_mixed "$NL" "$DSTACK" report "${ropts[@]}" :: "$NL" "$PERF7" report "${ropts[@]}")
	row "report --stdio (dwarf mode)" "dwarf" "$(line 1 "$t")" "$(line 2 "$t")" "$note"
	ropts=(--stdio "${opts[@]}")
	"$DSTACK" report "${ropts[@]}" > "$B/dwarf.dstack.children" 2>/dev/null
	"$PERF7" report "${ropts[@]}" > "$B/dwarf.perf.children" 2>/dev/null
	note=$(report_note "$B/dwarf.perf.children" "$B/dwarf.dstack.children")
	settle
	t=$(time_mixed "$NL" "$DSTACK" report "${ropts[@]}" :: "$NL" "$PERF7" report "${ropts[@]}")
	row "report --stdio --children (dwarf)" "dwarf" "$(line 1 "$t")" "$(line 2 "$t")" "$note"
	local copies=${BENCH_DWARF_BIG_COPIES:-12} big="$B/dwarf.big.data"
	[ "$copies" -gt 0 ] || return
	[ -s "$big" ] || "$B/scale" "$out/dwarf.data" "$big" "$copies" 2>/dev/null || { rm -f "$big"; return; }
	opts=(--symfs "$symfs" --kallsyms "$out/kallsyms" -i "$big")
	"$DSTACK" script "${opts[@]}" 2>/dev/null | md5sum > "$B/dwarf.big.dstack.sum"
	"$PERF7" script "${opts[@]}" 2>/dev/null | md5sum > "$B/dwarf.big.perf.sum"
	if cmp -s "$B/dwarf.big.dstack.sum" "$B/dwarf.big.perf.sum"; then
		settle
		t=$(time_mixed 1 "$DSTACK" script "${opts[@]}" :: 1 "$PERF7" script "${opts[@]}")
		row "script (dwarf mode, grown)" "dwarf.big" "$(line 1 "$t")" "$(line 2 "$t")" \
			"outputs equal ($(du -m "$big" | cut -f1) MB, one run each)"
	else
		skip "script (dwarf mode, grown)" "dwarf.big" "outputs differ"
	fi
}
bench_dwarf

echo
echo "scaling (dstack script, kernel.fp grown; time should grow linearly, RSS stay flat):"
printf '%-10s %10s %10s %12s %12s\n' copies MB median_s s_per_copy peak_KiB
for c in 1 10 ${BENCH_SCALE_COPIES:-100}; do
	f=$(scaled kernel.fp "$c") || exit 1
	st=($(N=3 time_cmd "$DSTACK" script --symfs "$W/symfs-root/symfs" --kallsyms "$W/kallsyms" -i "$f"))
	printf '%-10s %10s %10s %12.4f %12s\n' "$c" "$(du -m "$f" | cut -f1)" "${st[0]}" "$(echo "${st[0]} / $c" | bc -l)" "${st[2]}"
done
# BENCH_BIG=1: the 2 GB input (about 400 copies; takes minutes, needs ~2 GB of disk).
if [ "${BENCH_BIG:-0}" = 1 ]; then
	f=$(scaled kernel.fp 400) || exit 1
	st=($(N=1 time_cmd "$DSTACK" script --symfs "$W/symfs-root/symfs" --kallsyms "$W/kallsyms" -i "$f"))
	printf '%-10s %10s %10s %12.4f %12s\n' 400 "$(du -m "$f" | cut -f1)" "${st[0]}" "$(echo "${st[0]} / 400" | bc -l)" "${st[2]}"
fi

echo
echo "recorder overhead (kernel-vm guest, -a --call-graph fp,defer, 10 kHz per CPU, 2 s; median of ${BENCH_RECORD_ROUNDS:-3} alternating runs):"
bench_record() {
	local kvm=$KVM_RUN job="$B/record-job" out="$B/record-out"
	if [ "${BENCH_RECORD:-1}" = 0 ] || ! have_perf7 || [ ! -x "$kvm" ]; then
		echo "SKIPPED: recorder overhead: kernel-vm not ready or BENCH_RECORD=0"; return
	fi
	rm -rf "$job" "$out"; mkdir -p "$job" "$out"
	sed "s/\${ROUNDS:-3}/${BENCH_RECORD_ROUNDS:-3}/" bench/record-job.sh >"$job/run.sh"
	cp "$DSTACK" "$job/dstack"
	cc -O2 -g -fno-omit-frame-pointer -o "$job/wl" tests/corpus/wl.c -lpthread || return
	if ! "$kvm" -t 900 "$job" "$out" >"$out.log" 2>&1; then
		# an emulated-kernel panic (TCG and text patching) is not a result: once more
		if grep -q "Kernel panic" "$out/console.log" 2>/dev/null; then
			echo "note: the guest kernel panicked; running the guest job again"
			rm -rf "$out"; mkdir -p "$out"
		fi
		if ! "$kvm" -t 900 "$job" "$out" >"$out.log" 2>&1; then
			echo "SKIPPED: recorder overhead: the guest job failed ($out.log)"; return
		fi
	fi
	python3 - "$out" <<'PY'
import statistics, sys, os
out = sys.argv[1]
runs = {}
for line in open(os.path.join(out, 'bench')):
    name, ticks, size = line.split()
    runs[name] = [int(ticks), int(size), 0]
for line in open(os.path.join(out, 'samples')):
    name, n = line.split()
    runs[name][2] = int(n)
print('%-8s %-8s %12s %12s %7s %14s %14s %7s' % ('workload', '', 'dstack_ticks', 'perf_ticks', 'ratio', 'dstack_B/smpl', 'perf_B/smpl', 'ratio'))
for wl in ('cpu', 'kernel'):
    med = {}
    for who in 'dp':
        rs = [v for k, v in runs.items() if k.startswith('%s_%s_' % (who, wl))]
        med[who] = (statistics.median(r[0] for r in rs), statistics.median(r[1] / max(r[2], 1) for r in rs))
    d, p = med['d'], med['p']
    print('%-8s %-8s %12.0f %12.0f %6.2fx %14.0f %14.0f %6.2fx' % (wl, 'record', d[0], p[0], d[0] / max(p[0], 1),
          d[1], p[1], d[1] / max(p[1], 1)))
print('(ticks: 1/100 s of the recorder\'s own CPU time; ratio dstack/perf: below 1 means dstack costs less)')
PY
}
bench_record

echo
echo "stitcher alone (synthetic: 100 000 threads, 1-50 samples per kernel entry; best of 7/3/3 runs):"
"$B/stitch_bench" "${BENCH_STITCH_RECORDS:-10000000}"
