# dstack report against perf 7.2's `perf report --stdio --no-children` on every corpus recording:
# every flat-profile line perf prints must be there with the same percentage (0.01);
# call-graph trees are compared and counted.
report_suite() {
	local f n ks o res
	for f in "$ROOT"/tests/corpus/oracle/*.report.zst; do
		n=$(basename "$f" .report.zst)
		ks=$(kallsyms_for "$n")
		o="$WORK/out/$n.report"
		zstd -q -dc "$f" >"$o.perf"
		if ! "$DSTACK" report --stdio --no-children --symfs "$WORK/symfs-root/symfs" --kallsyms "$ks" \
			-i "$WORK/data/$n.data" >"$o" 2>"$o.err"; then
			bad "report $n: exit status $?: $(tail -3 "$o.err")"; continue
		fi
		if res=$(python3 "$ROOT/tests/check_report.py" "$o.perf" "$o" --trees); then
			ok "report $n: $res"
		else
			bad "report $n: $res"
		fi
	done

	# the options change what they should, on one recording
	local d="$WORK/data/mix.defer.data" opts=(--symfs "$WORK/symfs-root/symfs" --kallsyms "$WORK/kallsyms")
	o="$WORK/out/report-opts"
	"$DSTACK" report "${opts[@]}" -i "$d" --no-children >"$o.default"
	"$DSTACK" report "${opts[@]}" -i "$d" --no-children -g none >"$o.none"
	"$DSTACK" report "${opts[@]}" -i "$d" --no-children --percent-limit 1 >"$o.limit"
	"$DSTACK" report "${opts[@]}" -i "$d" --children >"$o.children"
	"$DSTACK" report "${opts[@]}" -i "$d" --no-children --sort dso -g none >"$o.dso"
	"$DSTACK" report "${opts[@]}" -i "$d" >"$o.plain"
	res=$(python3 - "$o" <<'PY'
import re, sys
p = sys.argv[1]
def flat(name):
    return [l for l in open(p + '.' + name) if re.match(r'^\s+\d+\.\d+%', l)]
def pct(l, i=0):
    return float(l.split()[i].rstrip('%'))
errs = []
d, n, lim, ch, dso = flat('default'), flat('none'), flat('limit'), flat('children'), flat('dso')
if d != n: errs.append('-g none changed the flat profile')
if any('|' in l or '---' in l for l in open(p + '.none')): errs.append('-g none printed a call graph')
if not open(p + '.default').read().count('---'): errs.append('no call graph by default')
if not lim or len(lim) >= len(d) or min(pct(l) for l in lim) < 1: errs.append('--percent-limit 1 did not cut below 1%')
tol = lambda lines: 0.1 + 0.005 * len(lines)  # each printed value is rounded
if abs(sum(pct(l) for l in d) - 100) > tol(d): errs.append('self percentages do not sum to 100: %.2f' % sum(pct(l) for l in d))
if abs(sum(pct(l, 1) for l in ch) - 100) > tol(ch): errs.append('--children: Self column does not sum to 100')
if any(pct(l, 0) + 0.005 < pct(l, 1) for l in ch): errs.append('--children: an entry has Children < Self')
if pct(ch[0]) <= pct(d[0]): errs.append('--children: the top entry is not cumulative')
if abs(sum(pct(l) for l in dso) - 100) > tol(dso) or len(dso) >= len(d): errs.append('--sort dso did not group by DSO')
if open(p + '.plain').read() != open(p + '.children').read(): errs.append('the default is not --children (perf 7.2 defaults to it with callchains)')
print('; '.join(errs) or 'ok: -g none, --percent-limit, --children (the default), --sort dso (%d/%d/%d/%d lines)' % (len(d), len(lim), len(ch), len(dso)))
sys.exit(1 if errs else 0)
PY
)
	if [ $? -eq 0 ]; then ok "report options: $res"; else bad "report options: $res"; fi
	if "$DSTACK" report --sort bogus -i "$d" >/dev/null 2>&1; [ $? -eq 2 ]; then
		ok "report: a bad --sort key is a usage error (exit 2)"
	else bad "report: bad --sort key not refused with exit 2"; fi
	report_children_vs_perf7
	report_no_samples_vs_perf7
	report_object_symbol_vs_perf7
	report_sample_units_vs_perf7
	report_pipe_group_vs_perf7
	report_branch_stacks_vs_perf7
	report_mixed_children_vs_perf7
	report_many_processes
}

# A call-graph node whose children mix frames with and without symbols is
# searched by perf in no order (a frame without a symbol by address), so a
# chain of one shape walks another way in a process where the same object
# is mapped elsewhere.  tests/recordings/exec-ldso.data: perf 6.1's
# pipe recording of `wl exec 4` in the guest, where ld.so's
# _dl_allocate_tls_init (a symbol) and its unnamed functions are siblings
# and each exec maps ld.so at another address: perf 7.2 splits that chain
# in two (5 and 4 samples); a walk that reused the first process's
# addresses made one.  The guest's own ld.so and libc give the symbols.
report_mixed_children_vs_perf7() {
	local o="$WORK/out/mixed-children" root=${KVM_CACHE:-/var/tmp/kernel-vm}/root c fails=0 n=0
	if ! kvm_ready || [ ! -f "$root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" ]; then
		echo "SKIPPED report of mixed call-graph children vs perf 7.2: *** kernel-vm (perf7, its root) not set up ***"; return
	fi
	rm -rf "$o"; mkdir -p "$o/symfs/usr/lib/x86_64-linux-gnu"
	cp "$root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" "$root/usr/lib/x86_64-linux-gnu/libc.so.6" \
		"$o/symfs/usr/lib/x86_64-linux-gnu/" && : >"$o/kallsyms" && cp "$ROOT/tests/recordings/exec-ldso.data" "$o/"
	local w=${WORK#"$ROOT"/}
	local S=(--symfs "$w/out/mixed-children/symfs" --kallsyms "$w/out/mixed-children/kallsyms" -i "$w/out/mixed-children/exec-ldso.data")
	for c in "--no-children -g caller --sort cpu,symbol" "--no-children -g folded,0,caller,period" "--children"; do
		# shellcheck disable=SC2086
		(cd "$ROOT" && "$KVM_PERF7" report --stdio $c "${S[@]}" 2>/dev/null) | grep -v '^#' >"$o/perf"
		# shellcheck disable=SC2086
		(cd "$ROOT" && "$DSTACK" report --stdio $c "${S[@]}" 2>/dev/null) | grep -v '^#' >"$o/dstack"
		n=$((n + 1))
		if [ "$(wc -l <"$o/perf")" -lt 100 ] || ! cmp -s "$o/perf" "$o/dstack"; then
			fails=1; bad "report $c of exec'd processes (mixed call-graph children) differs from perf 7.2's: $(diff "$o/perf" "$o/dstack" | head -4 | tr '\n' ' ')"
		fi
	done
	grep -q '^500000 _dl_allocate_tls_init$' <(cd "$ROOT" && "$DSTACK" report --stdio --no-children -g folded,0,caller,period "${S[@]}" 2>/dev/null) ||
		{ fails=1; bad "report of exec'd processes: _dl_allocate_tls_init's chain is not split as perf 7.2 splits it (the guest's ld.so changed?)"; }
	[ $fails = 0 ] && ok "report of exec'd processes (ld.so's children mixed, mapped anew each time): $n forms print what perf 7.2 prints, _dl_allocate_tls_init's chain split 5 and 4 as perf's"
}

# The same code in many processes: a recording grown x3 by bench/scale.c
# (new pids, tids, times, cookies and map addresses) reports exactly as the
# original but for its sample counts.  This is what call-graph paths kept
# by chain shape must get right (ds_callchain.shape).
report_many_processes() {
	local o="$WORK/out/many" n ks opts diffs
	local skip='^# Samples: |^# Event count|\[unknown\] +\[k\] 0x[0-9a-f]{16}$'
	mkdir -p "$o"
	if ! cc -std=c11 -D_GNU_SOURCE -O2 -I"$ROOT/include" -o "$o/scale" "$ROOT/bench/scale.c" \
		"$ROOT/$BUILD/libdstack.a" -lelf -ldw -lzstd -lz -liberty -lm 2>"$o/cc.err"; then
		bad "report x3: cannot build bench/scale.c: $(head -2 "$o/cc.err")"; return
	fi
	for n in kernel.fp mix.defer threads2.defer; do
		ks=$(kallsyms_for "$n")
		"$o/scale" "$WORK/data/$n.data" "$o/$n.x3.data" 3 2>/dev/null || { bad "report x3: scale $n failed"; continue; }
		for opts in "--no-children" "--children" "-g caller --no-children"; do
			# shellcheck disable=SC2086
			"$DSTACK" report --stdio $opts --symfs "$WORK/symfs-root/symfs" --kallsyms "$ks" -i "$WORK/data/$n.data" >"$o/x1" 2>/dev/null
			# shellcheck disable=SC2086
			"$DSTACK" report --stdio $opts --symfs "$WORK/symfs-root/symfs" --kallsyms "$ks" -i "$o/$n.x3.data" >"$o/x3" 2>/dev/null
			# (--children: a sample left with its bare cookie gives the
			# cookie an entry, as perf's; scaling makes new cookies)
			diffs=$(diff <(grep -v -E "$skip" "$o/x1") <(grep -v -E "$skip" "$o/x3") | wc -l)
			if [ "$diffs" = 0 ] && [ "$(wc -l <"$o/x1")" -gt 50 ]; then
				ok "report $opts $n x3 (3 times the processes): the same report ($(wc -l <"$o/x1") lines) but for the counts"
			else
				bad "report $opts $n x3: $diffs lines differ from the original's report"
			fi
		done
	done
}

# --children has no oracle file: compare with perf 7.2 itself, on the classic
# recordings (nothing left unstitched, so every line must match).
report_children_vs_perf7() {
	local perf7=$KVM_PERF7 n o res
	if ! kvm_ready; then
		echo "SKIPPED report --children vs perf 7.2: *** kernel-vm (perf7) not set up ***"; return
	fi
	for n in kernel.fp mix.fp; do
		o="$WORK/out/$n.children"
		# perf7 runs in the guest's root: host paths relative to the current directory
		local w=${WORK#"$ROOT"/}
		local opts=(--stdio --children --symfs "$w/symfs-root/symfs" --kallsyms "$w/kallsyms" -i "$w/data/$n.data")
		(cd "$ROOT" && "$perf7" report "${opts[@]}") >"$o.perf" 2>/dev/null
		(cd "$ROOT" && "$DSTACK" report "${opts[@]}") >"$o.dstack" 2>"$o.err"
		if res=$(python3 "$ROOT/tests/check_report.py" "$o.perf" "$o.dstack" --trees) &&
		   echo "$res" | head -1 | grep -q ', 0 missing, 0 extra'
		then ok "report --children $n vs perf 7.2: $(echo "$res" | head -1)"
		else bad "report --children $n vs perf 7.2: $(echo "$res" | head -3 | tr '\n' ' ')"; fi
		report_graph_lines_vs_perf7 "$n --children" "${opts[@]}"
		report_graph_lines_vs_perf7 "$n -g fractal" "${opts[@]}" --no-children -g fractal,0.5,callee,function,period
		report_graph_lines_vs_perf7 "$n -g folded" "${opts[@]}" --no-children -g folded,0,caller,period
	done
}

# report_graph_lines_vs_perf7 LABEL OPTS...: the report line for line as
# perf 7.2's (but for its closing tip).  Where perf's trees of call-graph
# children mix kinds of frames (inlined functions, symbols, addresses)
# its searches miss equal children and its order of equal siblings is no
# sort: dstack must build those trees as perf does (mix.fp has inlined
# frames; -g folded,0 shows every chain in the trees' order).
report_graph_lines_vs_perf7() {
	local n=$1 o="$WORK/out/${1// /_}.lines" res
	shift
	(cd "$ROOT" && "$KVM_PERF7" report "$@") >"$o.perf" 2>/dev/null
	(cd "$ROOT" && "$DSTACK" report "$@") >"$o.dstack" 2>"$o.err"
	if res=$(python3 "$ROOT/tests/check_conformance.py" "$o.perf" "$o.dstack"); then
		ok "report $n line for line as perf 7.2: ${res%%$'\t'*} lines"
	else
		bad "report $n differs from perf 7.2: $(echo "$res" | cut -c -400)"
	fi
}
# No sample to show (a --time window before the first or after the last):
# perf prints its first two lines, says "The FILE data has no samples!" on
# stderr and exits 0; so must dstack, with the same stdout.
report_no_samples_vs_perf7() {
	local o="$WORK/out/nosamples" w=${WORK#"$ROOT"/} f prc drc
	if ! kvm_ready; then
		echo "SKIPPED report without samples vs perf 7.2: *** kernel-vm (perf7) not set up ***"; return
	fi
	mkdir -p "$o"
	for f in "--time 1.0,1.5" "--time 99999," "--no-children --time ,2.0"; do
		# shellcheck disable=SC2086
		(cd "$ROOT" && "$KVM_PERF7" report --stdio $f -i "$w/data/mix.fp.data") >"$o/perf" 2>"$o/perf.err"; prc=$?
		# shellcheck disable=SC2086
		(cd "$ROOT" && "$DSTACK" report --stdio $f -i "$w/data/mix.fp.data") >"$o/dstack" 2>"$o/dstack.err"; drc=$?
		if [ $prc = 0 ] && [ $drc = 0 ] && cmp -s "$o/perf" "$o/dstack" && grep -q 'data has no samples!' "$o/perf.err" &&
		   grep -q "^The $w/data/mix.fp.data data has no samples!" "$o/dstack.err"; then
			ok "report $f (no sample shown): perf 7.2's $(wc -l <"$o/perf") lines, exit 0, 'data has no samples!' on stderr"
		else
			bad "report $f (no sample shown): exit $prc/$drc, stdout $(cmp -s "$o/perf" "$o/dstack" && echo same || echo differs), stderr: $(head -2 "$o/dstack.err" | tr '\n' ' ')"
		fi
	done
}
# A sample in a symbol the symbol table calls a data object (STT_OBJECT: a
# JIT's or hand-written code, a libc table perf's symbol-end fixup stretches
# over code): perf 7.2's report prints it "sym+0xOFF", OFF its first
# sample's map-relative ip less the symbol's absolute start (wrapped).
# Recorded here by the host's perf, read by perf 7.2 and dstack.
report_object_symbol_vs_perf7() {
	local o="$WORK/out/objsym" line pline mode
	if ! kvm_ready || [ ! -x /usr/bin/perf ] || [ "$(id -u)" != 0 ]; then
		echo "SKIPPED report of a data-object symbol vs perf 7.2: *** needs kernel-vm (perf7), the host's perf and root ***"; return
	fi
	mkdir -p "$o"
	cat >"$o/objwl.c" <<'SRC'
/* a loop the symbol table calls a data object, which first calls a
 * function: with --children its entry comes from a callchain, without
 * from its own samples */
__asm__(".text\n.globl spin_obj\n.type spin_obj, @object\nspin_obj:\n\tpush %rbx\n\tmov $3, %ebx\n"
	"2:\tcall work\n\tmov $30000000, %rcx\n1:\tdec %rcx\n\tjnz 1b\n\tdec %ebx\n\tjnz 2b\n"
	"\tpop %rbx\n\tret\n.size spin_obj, .-spin_obj\n");
void spin_obj(void);
__attribute__((noinline)) void work(void) { for (volatile long i = 0; i < 30000000; i++) {} }
int main(void) { for (int i = 0; i < 3; i++) spin_obj(); return 0; }
SRC
	cc -O2 -fno-omit-frame-pointer -o "$o/objwl" "$o/objwl.c" || { bad "report: a data-object symbol: the workload does not build"; return; }
	/usr/bin/perf record -q -g -e cpu-clock -o "$o/o.data" "$o/objwl" >/dev/null 2>&1
	for mode in --no-children --children; do
		pline=$("$KVM_PERF7" report --stdio $mode -g none --symfs /host -i "/host$o/o.data" 2>/dev/null | grep ' spin_obj')
		line=$("$DSTACK" report --stdio $mode -g none -i "$o/o.data" 2>/dev/null | grep ' spin_obj')
		if [ -n "$pline" ] && [ "$line" = "$pline" ] && [[ $line == *'spin_obj+0x'* ]]; then
			ok "report $mode: a data-object symbol as perf 7.2 prints it: ${line#"${line%%[![:space:]]*}"}"
		else bad "report $mode: a data-object symbol: perf 7.2 '$pline', dstack '$line'"; fi
	done
}

# An event group recorded into a pipe: its GROUP_DESC comes as a
# HEADER_FEATURE record among the data, and perf 7.2's report shows the
# group view from it as from a file's header.
report_pipe_group_vs_perf7() {
	local o="$WORK/out/pipegrp"
	if ! kvm_ready || [ ! -x /usr/bin/perf ] || [ "$(id -u)" != 0 ]; then
		echo "SKIPPED report of a pipe's event group vs perf 7.2: *** needs kernel-vm (perf7), the host's perf and root ***"; return
	fi
	mkdir -p "$o"
	/usr/bin/perf record -q -e '{cpu-clock,task-clock}' -c 100000 -o - -- dd if=/dev/urandom of=/dev/null bs=64k count=400 \
		>"$o/g.data" 2>/dev/null
	cat /proc/kallsyms >"$o/kallsyms"
	# (a sample in the vDSO: dstack, on the kernel that recorded, takes its
	# own vDSO image, as perf would here; perf 7.2 runs on the guest's
	# kernel, whose image is another: those entries are not compared)
	"$KVM_PERF7" report --stdio --symfs /host --kallsyms "/host$o/kallsyms" -i "/host$o/g.data" 2>/dev/null |
		grep -v -e 'tips.txt' -e '^#$' -e ' \[vdso\] ' >"$o/perf"
	"$DSTACK" report --stdio --kallsyms "$o/kallsyms" -i "$o/g.data" 2>"$o/err" | grep -v -e '^#$' -e ' \[vdso\] ' >"$o/dstack"
	if grep -q "of events 'anon group { cpu-clock, task-clock }'" "$o/perf" && diff -q "$o/perf" "$o/dstack" >/dev/null
	then ok "report of a pipe's event group: as perf 7.2's ($(grep -c % "$o/perf") entries, the group view)"
	else bad "report of a pipe's event group differs from perf 7.2's: $(diff "$o/perf" "$o/dstack" | head -4 | tr '\n' ' ')"; fi
}

# A recording with branch stacks (-b: LBR, which neither the guest nor this
# host has, so a corpus recording reshaped, tests/reshape.py): perf 7.2's
# report shows its branch view (an entry per branch), and dstack's must be
# the same, with -q, --percent-limit and --time too; script reads the
# samples as perf does, and prints their branches as perf's -F brstack and
# brstacksym (with dso, dsoff); --no-branch-stack is perf's sample view; an option
# dstack's branch view does not take (--sort) gives the sample view with a
# warning saying so.
report_branch_stacks_vs_perf7() {
	local n=mix.fp o="$WORK/out/branches" said cmd t
	if ! kvm_ready; then
		echo "SKIPPED report of branch stacks vs perf 7.2: *** kernel-vm (perf7) not set up ***"; return
	fi
	mkdir -p "$o"
	if ! said=$(python3 "$ROOT/tests/reshape.py" branch-stack "$WORK/data/$n.data" "$o/b.data" 2>&1); then
		bad "report of branch stacks: $n could not be reshaped: $said"; return
	fi
	local w=${WORK#"$ROOT"/} fails=0 shown=0
	local S=(--symfs "$w/symfs-root/symfs" --kallsyms "$w/kallsyms" -i "$w/out/branches/b.data")
	t=$("$DSTACK" script -F time -i "$o/b.data" 2>/dev/null | sed -n '5000p' | tr -d ' :')
	for cmd in "report --header-only" "report --stdio" "report --stdio -q" "report --stdio --percent-limit 0.5" "report --stdio --time ,$t" \
		   script "report --stdio --no-branch-stack" "report --stdio --no-branch-stack --no-children" \
		   "script -F +brstack" "script -F ip,brstacksym" "script -F comm,tid,brstacksym,dso,dsoff" \
		   "script -F brstack,dso,dsoff" "script -F brstack,brstacksym" "report --stdio --sort dso,sym" \
		   "report --stdio --sort sym,pid" "report --stdio --sort cpu,comm,dso" "report --stdio --sort dso,symbol" \
		   "report --stdio --children -q --sort sym" "report --stdio --sort symbol_from,symbol_to" \
		   "report --stdio --sort dso_to,cycles" "report --stdio --sort symbol_from" "report --stdio --sort pid,dso_from"; do
		# shellcheck disable=SC2086
		(cd "$ROOT" && "$KVM_PERF7" $cmd "${S[@]}" 2>/dev/null) | grep -v -e 'tips.txt' -e '^#$' >"$o/perf"
		# shellcheck disable=SC2086
		(cd "$ROOT" && "$DSTACK" $cmd "${S[@]}" 2>"$o/err") | grep -v '^#$' >"$o/dstack"
		if [ ! -s "$o/perf" ] || ! cmp -s "$o/perf" "$o/dstack" || grep -q 'branch' "$o/err"; then
			fails=1; bad "$cmd of a recording with branch stacks differs from perf 7.2's: $(diff "$o/perf" "$o/dstack" | head -3 | tr '\n' ' ') $(grep branch "$o/err")"
		fi
		case $cmd in report*-q|script*|*--no-branch-stack*|*--header-only|*--sort*) ;; *)
			grep -q 'Source Symbol  *Target Symbol' "$o/perf" ||
				{ fails=1; bad "report of branch stacks: perf 7.2 did not show its branch view for '$cmd' (the reshape lost its BRANCH_STACK feature?)"; } ;;
		esac
		shown=$((shown + 1))
	done
	(cd "$ROOT" && "$DSTACK" report --stdio --sort dso,srcline "${S[@]}" 2>"$o/err") >"$o/dstack"
	if ! grep -q "has branch stacks; perf report shows its branch view, which dstack has with its own keys" "$o/err" ||
	   ! cmp -s "$o/dstack" <(cd "$ROOT" && "$DSTACK" report --stdio --sort dso,srcline --no-branch-stack "${S[@]}" 2>/dev/null); then
		fails=1; bad "report --sort srcline of branch stacks: no warning, or not the sample view: $(tail -1 "$o/err")"
	fi
	# a branch key without branch stacks: perf says "Invalid --sort key"
	if "$DSTACK" report --stdio --sort dso_from --symfs "$WORK/symfs-root/symfs" --kallsyms "$WORK/kallsyms" \
		-i "$WORK/data/$n.data" >/dev/null 2>"$o/err" || ! grep -q 'a key of the branch view' "$o/err"; then
		fails=1; bad "report --sort dso_from of a recording without branch stacks: not refused: $(tail -1 "$o/err")"
	fi
	[ $fails = 0 ] && ok "branch stacks ($said): $shown commands print what perf 7.2 prints (the header, its branch view, -q, --percent-limit, --time, script and its -F brstack, brstacksym, --no-branch-stack, --sort by pid, comm, dso, symbol, cpu (the branches' targets) and the branch keys); --sort srcline warns and shows the samples"
}

# The header's sample count scaled as perf's convert_unit(): by 1000 only
# while above 1000 ("1000  of event", "1K of event" from 1001 on).  The
# counts around the edge come from --time cuts of a corpus recording.
report_sample_units_vs_perf7() {
	local n=kernel.fp o="$WORK/out/units" k t line pline fails=0 seen=""
	if ! kvm_ready; then
		echo "SKIPPED report sample counts vs perf 7.2: *** kernel-vm (perf7) not set up ***"; return
	fi
	mkdir -p "$o"
	local w=${WORK#"$ROOT"/}
	"$DSTACK" script -F time --ns -i "$WORK/data/$n.data" 2>/dev/null | tr -d ' :' >"$o/times"
	for k in 999 1000 1001 2000 2001; do
		t=$(sed -n "${k}p" "$o/times")
		[ -n "$t" ] || { bad "report sample counts: $n has fewer than $k samples"; return; }
		pline=$(cd "$ROOT" && "$KVM_PERF7" report --stdio --time ",$t" -i "$w/data/$n.data" 2>/dev/null | grep '^# Samples:')
		line=$(cd "$ROOT" && "$DSTACK" report --stdio --time ",$t" -i "$w/data/$n.data" 2>/dev/null | grep '^# Samples:')
		seen="$seen [$k: ${line#\# Samples: }]"
		if [ -z "$pline" ] || [ "$line" != "$pline" ]; then
			fails=$((fails + 1)); bad "report: $k samples: perf 7.2 '$pline', dstack '$line'"
		fi
	done
	[ $fails = 0 ] && ok "report: sample counts scaled as perf 7.2 scales them:$seen"
}

# A kallsyms of another boot (KASLR put the kernel elsewhere): perf moves
# its symbols by the recorded _text (the "[kernel.kallsyms]_text" MMAP's
# address); the kernel frames must come out as with the recording's own.
report_kallsyms_other_boot() {
	local o="$WORK/out/kaslr" n=kernel.fp w
	mkdir -p "$o"
	python3 - "$WORK/kallsyms" "$o/kallsyms.moved" <<'PY'
import sys
delta = -0x12000000   # a KASLR step (2 MiB multiple), the image kept below the modules
with open(sys.argv[1]) as f, open(sys.argv[2], "w") as out:
    for line in f:
        a, rest = line.split(" ", 1)
        v = int(a, 16)
        # the image moves; modules lie where they were loaded, per-CPU
        # symbols (absolute, from 0) stay
        if "\t[" not in rest and v >= 0xffff000000000000:
            a = "%016x" % ((v + delta) & (2**64 - 1))
        out.write(a + " " + rest)
PY
	"$DSTACK" script --symfs "$WORK/symfs-root/symfs" --kallsyms "$WORK/kallsyms" -i "$WORK/data/$n.data" >"$o/same" 2>/dev/null
	"$DSTACK" script --symfs "$WORK/symfs-root/symfs" --kallsyms "$o/kallsyms.moved" -i "$WORK/data/$n.data" >"$o/moved" 2>"$o/moved.err"
	local k; k=$(grep -c 'kernel.kallsyms' "$o/same")
	if [ "$k" -gt 100 ] && cmp -s "$o/same" "$o/moved" && [ "$(grep -c '\[unknown\] (\[kernel' "$o/moved")" -lt "$k" ]
	then ok "script with another boot's kallsyms: the same $k kernel frames as with the recording's own"
	else bad "script with another boot's kallsyms: differs: $(diff "$o/same" "$o/moved" | head -4 | tr '\n' ' ')"; fi
	if kvm_ready; then
		w=${WORK#"$ROOT"/}
		(cd "$ROOT" && "$KVM_PERF7" script --symfs "$w/symfs-root/symfs" --kallsyms "$w/out/kaslr/kallsyms.moved" \
			-i "$w/data/$n.data") >"$o/perf7.moved" 2>/dev/null
		if [ -s "$o/perf7.moved" ] && cmp -s "$o/perf7.moved" "$o/moved"
		then ok "script with another boot's kallsyms: equal to perf 7.2's with the same file"
		else bad "script with another boot's kallsyms: perf 7.2 differs: $(diff "$o/perf7.moved" "$o/moved" | head -4 | tr '\n' ' ')"; fi
	fi
}

# The host-perf comparisons below need the host's perf, root and perf 7.2:
# else SKIPPED (loudly) and status 1.  WHAT names the test.
report_host_ready() {
	if [ ! -x /usr/bin/perf ] || [ "$(id -u)" != 0 ] || ! kvm_ready; then
		echo "SKIPPED $1: *** no host perf, not root, or no kernel-vm perf 7.2 ***"; return 1
	fi
}

# report_host_workload DIR WHAT: the workload built into DIR and this
# boot's kallsyms beside it; status 1 (a FAIL said) if it does not build
report_host_workload() {
	mkdir -p "$1"
	cc -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -pthread -o "$1/wl" "$ROOT/tests/corpus/wl.c" || {
		bad "$2: the workload does not build"; return 1; }
	cp /proc/kallsyms "$1/kallsyms"
}

# report_vs_perf DIR DATA OUT ARGS...: report ARGS of DIR/DATA by perf 7.2
# (OUT.perf) and dstack (OUT.dstack), with DIR's kallsyms; the comparison's
# line in res and its status in rc (the caller's locals)
report_vs_perf() {
	local d=$1 f=$2 out=$3
	shift 3
	"$KVM_PERF7" report --stdio "$@" --symfs /host/ --kallsyms "/host$d/kallsyms" -i "/host$d/$f" >"$out.perf" 2>/dev/null
	"$DSTACK" report --stdio "$@" --symfs / --kallsyms "$d/kallsyms" -i "$d/$f" >"$out.dstack" 2>&1
	res=$(python3 "$ROOT/tests/check_conformance.py" "$out.perf" "$out.dstack"); rc=$?
}

# perf's group view with callchains: -e '{cpu-clock,task-clock,page-faults}'
# -g recorded by the host's perf, one section whose columns are the
# members with samples (page-faults has none at this period: perf leaves
# it out) and whose graphs are the leader's, against perf 7.2's.  The
# --no-children forms are asserted; --children is measured (its pairing of
# the members' entries with the leader's follows perf's tree searches,
# whose misses dstack reproduces only as far as it models perf's trees).
report_group_callchains() {
	local o="$WORK/out/report-group" args res rc name pres=() cres=()
	report_host_ready "report group view" && report_host_workload "$o" "report group view" || return
	/usr/bin/perf record -q -o "$o/g.data" -e '{cpu-clock,task-clock,page-faults}' -c 200000 -g -- "$o/wl" mix 40 \
		>/dev/null 2>&1 || { bad "report group view: perf record failed"; return; }
	for args in "--no-children" "--no-children -n" "--no-children -g none --sort dso,sym" "--no-children --show-total-period" \
		    "--children" "-n -g caller"; do
		name=${args// /_}
		# shellcheck disable=SC2086
		report_vs_perf "$o" g.data "$o/$name" $args
		case $args in
		--no-children*)
			[ $rc -eq 0 ] || { bad "report group view $args: ${res#*$'\t'}"; return; }
			pres+=("$args ${res%%$'\t'*}") ;;
		*) cres+=("$args ${res%%$'\t'*}") ;;
		esac
	done
	if grep -q "^# Samples: .* of events 'anon group { cpu-clock, task-clock" "$o/--no-children.dstack"
	then ok "report group view with callchains: as perf 7.2 (${pres[*]}); measured: ${cres[*]}"
	else bad "report group view with callchains: no group section: $(grep -m2 '^# Samples' "$o/--no-children.dstack")"; fi
}

# A recording whose samples come from more than 64 events ('syscalls:*'
# of a few commands: ~100 with samples): a section each, as perf 7.2 (a
# fixed table of 64 dropped the others' samples without a word).
report_many_events() {
	local o="$WORK/out/report-many" res rc n_perf n_ds
	report_host_ready "report of many events" || return
	mkdir -p "$o"
	/usr/bin/perf record -q -o "$o/m.data" -e 'syscalls:*' -- sh -c \
		'ls -la / >/dev/null; cat /proc/self/status >/dev/null; date >/dev/null; id >/dev/null; sleep 0.01; ps >/dev/null; df >/dev/null; uname -a >/dev/null; stat / >/dev/null' \
		>/dev/null 2>&1 || { echo "SKIPPED report of many events: *** perf record -e 'syscalls:*' failed here ***"; return; }
	"$KVM_PERF7" report --stdio -i "/host$o/m.data" >"$o/m.perf" 2>/dev/null
	"$DSTACK" report --stdio -i "$o/m.data" >"$o/m.dstack" 2>"$o/m.err"
	n_perf=$(grep -c '^# Samples' "$o/m.perf"); n_ds=$(grep -c '^# Samples' "$o/m.dstack")
	res=$(python3 "$ROOT/tests/check_conformance.py" "$o/m.perf" "$o/m.dstack"); rc=$?
	if [ $rc -eq 0 ] && [ "$n_perf" = "$n_ds" ]; then
		ok "report of many events: $n_ds sections as perf 7.2's $n_perf, ${res%%$'\t'*} lines"
	else bad "report of many events: $n_ds sections, perf $n_perf: ${res#*$'\t'}"; fi
}

# perf's --dsos and -S/--symbols: only samples whose own address lies
# there, the others counted in the totals (not with --percentage
# relative: then shares of the samples shown); a single value names itself in
# a '# dso:' / '# symbol:' line and hides its column, which still tells
# entries apart (a --children caller in another DSO)
report_dso_sym_filters() {
	local o="$WORK/out/report-filters"
	report_host_ready "report --dsos/--symbols" && report_host_workload "$o" "report --dsos/--symbols" || return
	/usr/bin/perf record -q -o "$o/f.data" -e cpu-clock -c 200000 -g -- "$o/wl" mix 40 >/dev/null 2>&1 ||
		{ bad "report --dsos/--symbols: perf record failed"; return; }
	report_forms_vs_perf "report --dsos, -S" "$o" f.data \
		"--no-children --dsos wl" "--no-children -g none --dsos wl,[kernel.kallsyms]" \
		"--no-children -S chacha_permute" "--no-children -g none --sort dso -S chacha_permute,_copy_to_iter" \
		"--children --dsos wl" "--children -S chacha_permute" "--no-children --comm wl --dsos wl" \
		"--no-children --dsos wl --percentage relative" "--children -S chacha_permute --percentage relative" \
		"--children -g none -n --show-total-period" "--no-children -G --dsos wl" "-U --no-children" "-U"
}

# report_forms_vs_perf LABEL DIR DATA FORM...: report FORM (each a string of
# options) of DIR/DATA by perf 7.2 and dstack, line for line; one ok naming
# every form's count, or a FAIL at the first form that differs.  Status 3
# of the comparison, the same but for siblings of equal weight in another
# order (perf's tree order, not modelled: suite 80 counts it alike, "~"),
# is said, not failed.
report_forms_vs_perf() {
	local label=$1 d=$2 f=$3 args res rc pres=()
	shift 3
	for args in "$@"; do
		# shellcheck disable=SC2086
		report_vs_perf "$d" "$f" "$d/cmp" $args
		[ $rc -eq 0 ] || [ $rc -eq 3 ] || { bad "report $args: ${res#*$'\t'}"; return; }
		[ $rc -eq 3 ] && res="${res%%$'\t'*} (~ equal-weight siblings in another order)"
		pres+=("$args ${res%%$'\t'*}")
	done
	ok "$label as perf 7.2: $(printf '%s; ' "${pres[@]}")"
}

# --max-stack cuts a --children chain from its root (caller order): the
# sample's own entry is still its own address's, and a frame in no map
# takes the level the walk had before it, at first the sample's own ([k]
# for a kernel sample), not the level of the chain's innermost frame left
# (threads' outermost frames lie in no map: a kernel sample's showed [.]).
report_max_stack() {
	local o="$WORK/out/report-max-stack"
	report_host_ready "report --max-stack" && report_host_workload "$o" "report --max-stack" || return
	/usr/bin/perf record -q -o "$o/cs.data" -e context-switches -c 1 -g -- "$o/wl" threads 4 >/dev/null 2>&1 ||
		{ bad "report --max-stack: perf record failed"; return; }
	report_forms_vs_perf "report --max-stack" "$o" cs.data "--children --max-stack 3" "--children --max-stack 3 -g none" \
		"--children --max-stack 1" "--no-children --max-stack 2"
}

report_suite
report_max_stack
report_kallsyms_other_boot
report_group_callchains
report_many_events
report_dso_sym_filters
