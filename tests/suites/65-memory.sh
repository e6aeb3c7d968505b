# Bounded memory on hostile inputs (docs/errors.md): a recording without
# FINISHED_ROUND, and one whose samples all wait for deferred records that
# never come (tests/bigfile.py), read under a small DSTACK_MEMORY_BUDGET:
# peak RSS stays flat as the file grows (16 and 48 MiB inputs), every
# sample is still delivered, and one warning at the end counts what the
# bound changed (events out of time order; samples without their user
# stack), equal to what `stat` counts.  The 1.3 GB measurements are in the
# issue's closing note; this is their small, fast form.
memory_suite() {
	local o="$WORK/out/memory" m f c rc rss16 rss48 big16 big48 n want got
	local sy=(--symfs "$WORK/symfs-root/symfs" --kallsyms "$WORK/kallsyms")
	local rel=(python3 "$ROOT/tests/reliability.py")
	rm -rf "$o"; mkdir -p "$o"
	for m in 16 48; do
		python3 "$ROOT/tests/bigfile.py" rounds "$WORK/data/mix.defer.data" "$o/rounds$m.data" $m >/dev/null
		python3 "$ROOT/tests/bigfile.py" pending "$WORK/data/mix.defer.data" "$o/pending$m.data" $m >/dev/null
	done
	# RSS under a sanitizer measures the sanitizer: the release pass does it
	for f in rounds pending; do
		if [ -z "${ASAN_OPTIONS:-}" ]; then
			rss16=$(DSTACK_MEMORY_BUDGET=4M "${rel[@]}" maxrss "$DSTACK" stat -i "$o/${f}16.data" 2>&1 | awk '/maxrss/ {print $4}')
			rss48=$(DSTACK_MEMORY_BUDGET=4M "${rel[@]}" maxrss "$DSTACK" stat -i "$o/${f}48.data" 2>&1 | awk '/maxrss/ {print $4}')
			big16=$(DSTACK_MEMORY_BUDGET=1G "${rel[@]}" maxrss "$DSTACK" stat -i "$o/${f}16.data" 2>&1 | awk '/maxrss/ {print $4}')
			big48=$(DSTACK_MEMORY_BUDGET=1G "${rel[@]}" maxrss "$DSTACK" stat -i "$o/${f}48.data" 2>&1 | awk '/maxrss/ {print $4}')
			# the unbounded run must grow (else this measures nothing), the bounded one must not
			if [ $((big48 - big16)) -gt 16000 ] && [ $((rss48 - rss16)) -lt 4000 ] && [ "$rss48" -lt 40000 ]; then
				ok "memory: $f: peak RSS 16/48 MiB input: ${rss16}/${rss48} KB with a 4 MiB budget (${big16}/${big48} KB with 1 GiB)"
			else
				bad "memory: $f: peak RSS 16/48 MiB input: ${rss16}/${rss48} KB with a 4 MiB budget (${big16}/${big48} KB with 1 GiB)"
			fi
		fi
	done
	# the counts: stat's and the warning's agree, every sample is delivered
	DSTACK_MEMORY_BUDGET=4M "$DSTACK" stat -i "$o/rounds48.data" >"$o/rounds.stat" 2>"$o/rounds.err"; rc=$?
	want=$(awk '$1 == "records.out_of_order" {print $2}' "$o/rounds.stat")
	got=$(grep -o '[0-9]* events delivered out of time order' "$o/rounds.err" | awk '{print $1}')
	if [ $rc -eq 0 ] && [ "$(grep -c 'waited more than 2 MiB for their FINISHED_ROUND' "$o/rounds.err")" = 1 ] &&
	   [ -n "$want" ] && [ "$want" -gt 0 ] && [ "${got:-x}" = "$want" ]; then
		ok "memory: no FINISHED_ROUND: exit 0, one warning: $(grep -o '[0-9]* delivered early.*order' "$o/rounds.err"), = stat's records.out_of_order"
	else bad "memory: no FINISHED_ROUND: exit $rc, stat $want, warning: $(head -2 "$o/rounds.err")"; fi
	DSTACK_MEMORY_BUDGET=4M "$DSTACK" stat -i "$o/pending48.data" >"$o/pending.stat" 2>"$o/pending.err"; rc=$?
	n=$(awk '$1 == "samples.deferred" {print $2}' "$o/pending.stat")
	want=$(awk '$1 == "unresolved" {print $2}' "$o/pending.stat")
	got=$(grep -o '[0-9]* samples delivered without their user stack' "$o/pending.err" | awk '{print $1}')
	if [ $rc -eq 0 ] && [ -n "$n" ] && [ "$n" -gt 0 ] && [ "$want" = "$n" ] && [ -n "$got" ] &&
	   [ "$got" -gt 0 ] && [ "$got" -le "$want" ] &&
	   [ "$(grep -c 'samples delivered without their user stack' "$o/pending.err")" = 1 ]; then
		ok "memory: samples whose records never come: exit 0, one warning: $got of $want unresolved samples released early to stay within the budget"
	else bad "memory: pending: exit $rc, deferred $n unresolved $want warned ${got:-none}: $(head -2 "$o/pending.err")"; fi
	# every command on both inputs: exit 0, the warning, and script prints every sample
	for f in rounds pending; do
		n=$(awk '$1 == "samples" {print $2}' "$o/$f.stat")
		local good=0
		for c in script "report --stdio" folded "pprof -o $o/p.pb.gz" "flamegraph -o $o/f.svg" "inject --merge -o $o/i.data"; do
			# shellcheck disable=SC2086
			DSTACK_MEMORY_BUDGET=4M "$DSTACK" $c -i "$o/${f}48.data" "${sy[@]}" >"$o/out" 2>"$o/err"; rc=$?
			if [ $rc -ne 0 ] || ! grep -q "memory budget" "$o/err"; then
				bad "memory: $f: $c: exit $rc $(grep -v 'build-id\|no symbols' "$o/err" | head -2)"; continue
			fi
			good=$((good + 1))
			if [ "$c" = script ]; then
				got=$(grep -c ' cpu-clock:' "$o/out")
				[ "$got" = "$n" ] && ok "memory: $f: script under a 4 MiB budget printed all $n samples" ||
					bad "memory: $f: script printed $got of $n samples"
			fi
		done
		[ $good = 6 ] && ok "memory: $f: script, report, folded, pprof, flamegraph, inject under a 4 MiB budget: exit 0 with the warning"
	done
	rm -f "$o"/*.data
}
memory_suite
