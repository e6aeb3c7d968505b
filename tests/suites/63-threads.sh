# The reading thread (ds_session_opts.reader_thread): the analysis commands
# read and order on a second thread.  Checked two ways:
#  - its output is the one-thread output (DSTACK_ONE_THREAD=1), byte for
#    byte, for every command on every corpus recording;
#  - a ThreadSanitizer build (make MODE=tsan) reports no race on whole
#    recordings, stdin, compressed and pipe-format input, damaged input and
#    a consumer that stops early (| head).
# "MD5 LINES" of standard input, read once
md5_lines() {
	python3 -c 'import hashlib, sys
h, n = hashlib.md5(), 0
for b in iter(lambda: sys.stdin.buffer.read(1 << 20), b""):
    h.update(b)
    n += b.count(b"\n")
print(h.hexdigest(), n)'
}

threads_suite() {
	local o="$WORK/out/threads" n ks diff=0 cmd
	mkdir -p "$o"
	for f in "$WORK"/data/*.data; do
		n=$(basename "$f" .data)
		ks=$(kallsyms_for "$n")
		for cmd in script "report --stdio" folded; do
			# shellcheck disable=SC2086
			"$DSTACK" $cmd --symfs "$WORK/symfs-root/symfs" --kallsyms "$ks" -i "$f" >"$o/two" 2>/dev/null
			# shellcheck disable=SC2086
			DSTACK_ONE_THREAD=1 "$DSTACK" $cmd --symfs "$WORK/symfs-root/symfs" --kallsyms "$ks" -i "$f" >"$o/one" 2>/dev/null
			if ! cmp -s "$o/one" "$o/two" || [ ! -s "$o/one" ]; then
				bad "threads: $cmd $n differs from the one-thread output (or is empty)"; diff=1
			fi
		done
	done
	[ $diff = 0 ] && ok "threads: script, report, folded print the same with and without the reading thread ($(ls "$WORK"/data/*.data | wc -l) recordings)"

	# No FINISHED_ROUND at all: the whole file is one round, every record
	# waits for the end.  Past 64 MiB of pinned input windows the reader
	# copies records instead; the output must not change.
	local S0=(--symfs "$WORK/symfs-root/symfs" --kallsyms "$WORK/kallsyms")
	if cc -std=c11 -D_GNU_SOURCE -O2 -I"$ROOT/include" -o "$o/scale" "$ROOT/bench/scale.c" \
		"$ROOT/$BUILD/libdstack.a" -lelf -ldw -lzstd -lz -liberty -lm 2>/dev/null &&
	   "$o/scale" "$WORK/data/kernel.fp.data" "$o/x16.data" 16 2>/dev/null &&
	   nr=$(python3 "$ROOT/tests/no_rounds.py" "$o/x16.data" "$o/x16-nr.data"); then
		# each output is 430 MB: compared by checksum and line count ("MD5 LINES", one pass), not kept
		local sum sum_nr sum_nr1 lines
		sum=$("$DSTACK" script "${S0[@]}" -i "$o/x16.data" 2>"$o/x16.err" | md5_lines)
		sum_nr=$("$DSTACK" script "${S0[@]}" -i "$o/x16-nr.data" 2>"$o/x16-nr.err" | md5_lines)
		sum_nr1=$(DSTACK_ONE_THREAD=1 "$DSTACK" script "${S0[@]}" -i "$o/x16-nr.data" 2>"$o/x16-nr1.err" | md5_lines)
		lines=${sum#* }
		if [ "$nr" -gt 0 ] && [ "${lines:-0}" -gt 1000000 ] && [ "$sum" = "$sum_nr" ] && [ "$sum" = "$sum_nr1" ]; then
			ok "threads: a $(du -m "$o/x16.data" | cut -f1) MB recording without its $nr FINISHED_ROUNDs (one round: input windows past 64 MiB, then copies) prints the same $lines lines, on one thread and two"
		else
			bad "threads: the recording without FINISHED_ROUNDs ($nr changed) prints differently: md5 and lines $sum / $sum_nr / $sum_nr1 (stderr in $o/x16*.err)"
		fi
		rm -f "$o/x16.data" "$o/x16-nr.data"
	else
		bad "threads: could not build bench/scale.c, grow kernel.fp or take its rounds out"
	fi

	local tsan="$ROOT/build-tsan"
	if ! make -C "$ROOT" --no-print-directory MODE=tsan BUILD=build-tsan all >"$o/tsan-build.log" 2>&1; then
		if ! printf 'int main(void){return 0;}\n' | cc -fsanitize=thread -x c -o "$o/probe" - >/dev/null 2>&1; then
			echo "SKIPPED threads under TSan: the compiler cannot build with -fsanitize=thread <<<<<<<<"
			return
		fi
		bad "threads: the TSan build failed ($o/tsan-build.log)"; return
	fi
	local S=(--symfs "$WORK/symfs-root/symfs" --kallsyms "$WORK/kallsyms") races=0 what=()
	tsan_run() { # LABEL EXPECTED_RC CMD... (stdin and stdout as the caller set them)
		local label=$1 want=$2; shift 2
		TSAN_OPTIONS="exitcode=66 halt_on_error=0" "$@" 2>"$o/tsan.err"
		local rc=$?
		if [ $rc = 66 ] || grep -q "ThreadSanitizer" "$o/tsan.err"; then
			bad "threads: TSan: $label: $(grep -m1 -A3 'WARNING: ThreadSanitizer' "$o/tsan.err" | tr '\n' ' ')"; races=1
		elif [ "$want" != any ] && [ $rc != "$want" ]; then
			bad "threads: TSan: $label exited $rc, not $want: $(tail -1 "$o/tsan.err")"; races=1
		fi
		what+=("$label")
	}
	for n in kernel.fp mix.defer threads2.defer mixz.defer; do
		ks=$(kallsyms_for "$n")
		tsan_run "script $n" 0 "$tsan/dstack" script --symfs "$WORK/symfs-root/symfs" --kallsyms "$ks" -i "$WORK/data/$n.data" >"$o/t.out"
		cmp -s "$o/t.out" "$WORK/out/$n.script" 2>/dev/null || [ ! -e "$WORK/out/$n.script" ] ||
			bad "threads: TSan build's script $n differs from the release build's"
		tsan_run "report $n" 0 "$tsan/dstack" report --stdio --symfs "$WORK/symfs-root/symfs" --kallsyms "$ks" -i "$WORK/data/$n.data" >/dev/null
	done
	# records queued across input windows (1 MiB, reused): pinned windows outlive the move
	if cc -std=c11 -D_GNU_SOURCE -O2 -I"$ROOT/include" -o "$o/scale" "$ROOT/bench/scale.c" \
		"$ROOT/$BUILD/libdstack.a" -lelf -ldw -lzstd -lz -liberty -lm 2>/dev/null &&
	   "$o/scale" "$WORK/data/kernel.fp.data" "$o/x4.data" 4 2>/dev/null; then
		tsan_run "script of a 19 MB recording (~19 windows)" 0 "$tsan/dstack" script "${S[@]}" -i "$o/x4.data" >"$o/x4.tsan"
		"$DSTACK" script "${S[@]}" -i "$o/x4.data" >"$o/x4.rel" 2>/dev/null
		DSTACK_ONE_THREAD=1 "$DSTACK" script "${S[@]}" -i "$o/x4.data" >"$o/x4.one" 2>/dev/null
		if cmp -s "$o/x4.tsan" "$o/x4.rel" && cmp -s "$o/x4.rel" "$o/x4.one" && [ -s "$o/x4.rel" ]; then
			ok "threads: a recording over several input windows prints the same on one thread, two, and under TSan"
		else
			bad "threads: the 19 MB recording's script differs between one thread, two and TSan"
		fi
	else
		bad "threads: could not build bench/scale.c or grow kernel.fp"
	fi
	tsan_run "folded from stdin (pipe format)" 0 "$tsan/dstack" folded "${S[@]}" -i - <"$WORK/data/pipe.defer.data" >/dev/null
	head -c 3000000 "$WORK/data/mix.defer.data" >"$o/cut.data"
	tsan_run "script of a truncated file" 1 "$tsan/dstack" script "${S[@]}" -i "$o/cut.data" >/dev/null
	tsan_run "script | head -1" any sh -c "\"$tsan/dstack\" script $(printf '%q ' "${S[@]}") -i \"$WORK/data/kernel.fp.data\" | head -1 >/dev/null"
	[ $races = 0 ] && ok "threads: no data race under TSan (${#what[@]} runs: ${what[*]})"
}
threads_suite
