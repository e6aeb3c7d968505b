# The recorder under faults, in the Linux 7.2 guest (tests/vm/faults-job.sh,
# one boot): SIGINT and SIGTERM at a random moment, the command crashing
# (SIGSEGV) and exec-ing, -p of a process that exits, -F max with ten
# threads and a 2-page ring until LOST records appear, the output pipe
# closed by its reader.  Each must leave a file that perf 7.2 (`perf
# script` in the guest) and dstack read, report its lost events, and exit
# with a status that says what happened (docs/errors.md).
record_faults_suite() {
	local job="$WORK/out/faults-vm/job" out="$WORK/out/faults-vm/out" n rc
	if [ -n "${DSTACK_NO_VM:-}" ]; then
		echo "SKIPPED record faults (guest): *** DSTACK_NO_VM=${DSTACK_NO_VM} ***"; return
	fi
	if ! kvm_ready; then
		echo "SKIPPED record faults (guest): *** no kernel-vm at $KVM_DIR (not set up): the recorder under faults untested ***"; return
	fi
	rm -rf "$job" "$out"; mkdir -p "$job" "$out"
	cp "$ROOT/tests/vm/faults-job.sh" "$job/run.sh"
	cp "$DSTACK" "$job/dstack"
	if ! cc -O2 -g -fno-omit-frame-pointer -o "$job/wl" "$ROOT/tests/corpus/wl.c" -lpthread 2>"$out.cc.err"; then
		bad "record faults (guest): cannot build wl: $(head -2 "$out.cc.err")"; return
	fi
	if ! kvm_run_job 400 "$job" "$out" "$out.log"; then
		bad "record faults (guest): the guest job failed: $(tail -3 "$out.log")"; return
	fi
	readable() { # NAME: perf 7.2 and dstack read the file
		[ "$(cat "$out/$1.prc" 2>/dev/null)" = 0 ] && [ "$(cat "$out/$1.src" 2>/dev/null)" = 0 ]
	}
	samples() { awk '$1 == "samples" {print $2}' "$out/$1.stat" 2>/dev/null; }
	for n in sigINT sigTERM; do
		rc=$(cat "$out/$n.rc" 2>/dev/null)
		if [ "$rc" = 0 ] && readable $n && [ "$(samples $n)" -gt 0 ]; then
			ok "record faults (guest): ${n#sig} at a random moment: exit 0, $(samples $n) samples, perf 7.2 and dstack read the file"
		else bad "record faults (guest): $n: exit ${rc:-?}, perf script $(cat "$out/$n.prc" 2>/dev/null), dstack stat $(cat "$out/$n.src" 2>/dev/null): $(head -2 "$out/$n.err" "$out/$n.perr" 2>/dev/null)"; fi
	done
	rc=$(cat "$out/segv.rc" 2>/dev/null)
	if [ "$rc" = 0 ] && readable segv && grep -q "the command was killed by signal 11 (Segmentation fault)" "$out/segv.err"; then
		ok "record faults (guest): the command crashes (SIGSEGV): exit 0, 'the command was killed by signal 11', the file reads ($(samples segv) samples)"
	else bad "record faults (guest): segv: exit ${rc:-?}: $(head -3 "$out/segv.err")"; fi
	rc=$(cat "$out/exec.rc" 2>/dev/null)
	if [ "$rc" = 0 ] && readable exec && [ "$(samples exec)" -gt 0 ]; then
		ok "record faults (guest): the command execs: exit 0, $(samples exec) samples, the file reads"
	else bad "record faults (guest): exec: exit ${rc:-?}: $(head -3 "$out/exec.err")"; fi
	rc=$(cat "$out/pexit.rc" 2>/dev/null)
	if [ "$rc" = 0 ] && readable pexit && [ "$(samples pexit)" -gt 0 ]; then
		ok "record faults (guest): -p of a process that exits: the recorder ends with it, exit 0, $(samples pexit) samples"
	else bad "record faults (guest): -p exit: exit ${rc:-?}: $(head -3 "$out/pexit.err")"; fi
	rc=$(cat "$out/lost.rc" 2>/dev/null)
	local lost; lost=$(awk '$1 == "lost.events" {print $2}' "$out/lost.stat" 2>/dev/null)
	if [ "$rc" = 0 ] && readable lost && grep -q "lost [0-9]* events in [0-9]* LOST records: raise -m" "$out/lost.err" &&
	   [ "${lost:-0}" -gt 0 ]; then
		ok "record faults (guest): -F max ($(cat "$out/max_rate") Hz), 10 threads, -m 2: exit 0, '$(grep -o 'lost [0-9]* events in [0-9]* LOST records' "$out/lost.err")' (try $(cat "$out/lost.tries")), dstack stat lost.events $lost, perf 7.2 reads it"
	else bad "record faults (guest): -F max: exit ${rc:-?}, lost.events ${lost:-?} after $(cat "$out/lost.tries" 2>/dev/null) tries: $(head -3 "$out/lost.err")"; fi
	rc=$(cat "$out/pipe.rc" 2>/dev/null)
	if [ "$rc" = 3 ] && grep -q "^dstack record: writing stdout: Broken pipe$" "$out/pipe.err" &&
	   [ "$(cat "$out/pipe.secs")" -lt 30 ] && [ ! -s "$out/pipe.leftover" ]; then
		ok "record faults (guest): the output pipe closed by its reader: exit 3 'writing stdout: Broken pipe' after $(cat "$out/pipe.secs") s, the command ended"
	else bad "record faults (guest): pipe closed: exit ${rc:-?} after $(cat "$out/pipe.secs" 2>/dev/null) s, left over: $(cat "$out/pipe.leftover" 2>/dev/null): $(head -3 "$out/pipe.err")"; fi
}
record_faults_suite
