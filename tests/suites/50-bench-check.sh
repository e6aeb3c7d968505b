# make bench's own pieces are right (no timing here): the recording scaler
# (bench/scale.c) writes files whose every copy stitches and symbolizes like
# the original, the first copy is the original byte for byte in `script`
# output (perf 7.2's oracle), the stitcher micro-benchmark leaves nothing
# unstitched, and the awk collapse the folded row times perf with counts
# every sample of perf's oracle.
bench_check_suite() {
	local lib; lib=$(dirname "$DSTACK")/libdstack.a
	local o="$WORK/out/bench" cf=(-std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -Wno-unused-parameter -I"$ROOT/include")
	local libs=("$lib" -lelf -ldw -lzstd -lz -liberty -lm)
	mkdir -p "$o"
	if ! cc "${cf[@]}" -o "$o/scale" "$ROOT/bench/scale.c" "${libs[@]}" 2>"$o/cc.err" ||
	   ! cc "${cf[@]}" -o "$o/stitch_bench" "$ROOT/bench/stitch_bench.c" "${libs[@]}" 2>>"$o/cc.err"; then
		bad "bench: build of bench/scale.c, bench/stitch_bench.c: $(head -3 "$o/cc.err")"; return
	fi
	local n ks opts
	for n in kernel.defer fork.defer kernel.fp; do
		ks=$(kallsyms_for "$n")
		opts=(--symfs "$WORK/symfs-root/symfs" --kallsyms "$ks")
		if ! "$o/scale" "$WORK/data/$n.data" "$o/$n.x3.data" 3 2>"$o/scale.err"; then
			bad "bench scale $n: $(cat "$o/scale.err")"; continue
		fi
		# every copy folds to the same stacks: counts are 3x the original's
		# (a thread named after its tid, ":TID" after its exit as perf script
		# names it, has another tid in each copy: those names are one here)
		local fold='{ i = match($0, / [0-9]+$/); s = substr($0, 1, i - 1); sub(/^:[0-9]+;/, ":TID;", s)
			     sum[s] += k * substr($0, i + 1) } END { for (s in sum) print s, sum[s] }'
		"$DSTACK" folded "${opts[@]}" -i "$WORK/data/$n.data" | awk -v k=3 "$fold" | sort >"$o/$n.f1"
		"$DSTACK" folded "${opts[@]}" -i "$o/$n.x3.data" | awk -v k=1 "$fold" | sort >"$o/$n.f3"
		if [ -s "$o/$n.f1" ] && cmp -s "$o/$n.f1" "$o/$n.f3"; then ok "bench scale $n x3: folded counts exactly 3x ($(wc -l <"$o/$n.f3") stacks)"
		else bad "bench scale $n x3: folded output is not 3x the original's"; fi
		# stitching: three times the original's counters
		local s1 s3
		s1=$("$DSTACK" stat -i "$WORK/data/$n.data" | awk '/^(samples|stitched|unresolved|deferred.records) / { printf "%s=%d ", $1, 3 * $2 }')
		s3=$("$DSTACK" stat -i "$o/$n.x3.data" | awk '/^(samples|stitched|unresolved|deferred.records) / { printf "%s=%d ", $1, $2 }')
		if [ -n "$s1" ] && [ "$s1" = "$s3" ]; then ok "bench scale $n x3: stat $s3"
		else bad "bench scale $n x3: stat $s3, expected $s1"; fi
		# the first copy is the original: its lines open the output, as perf's oracle has them
		local oracle=$ROOT/tests/corpus/oracle/$n.nomerge.script.zst
		zstd -q -dc "$oracle" >"$o/$n.oracle"
		"$DSTACK" script "${opts[@]}" --no-merge-callchains -i "$o/$n.x3.data" 2>/dev/null |
			head -n "$(wc -l <"$o/$n.oracle")" >"$o/$n.s3"
		if [ -s "$o/$n.oracle" ] && cmp -s "$o/$n.oracle" "$o/$n.s3"; then ok "bench scale $n x3: first copy equals perf 7.2's script output"
		else bad "bench scale $n x3: first copy differs from perf 7.2's output ($o/$n.s3)"; fi
		rm -f "$o/$n.x3.data"
	done
	local out
	if out=$("$o/stitch_bench" 100000 2>&1) && echo "$out" | awk 'NR == 2 && $5 == 0 { f = 1 } END { exit !f }'; then
		ok "bench stitch_bench 10^5: nothing unstitched"
	else
		bad "bench stitch_bench: $out"
	fi
	# the awk collapse the folded row times perf with: every sample of perf's output counted
	local pn dn
	pn=$(zstd -q -dc "$ROOT/tests/corpus/oracle/kernel.fp.script.zst" | awk -f "$ROOT/bench/collapse.awk" | awk '{ s += $NF } END { print s + 0 }')
	dn=$("$DSTACK" folded --symfs "$WORK/symfs-root/symfs" --kallsyms "$WORK/kallsyms" -i "$WORK/data/kernel.fp.data" | awk '{ s += $NF } END { print s + 0 }')
	if [ "$pn" -gt 0 ] && [ "$pn" = "$dn" ]; then ok "bench collapse.awk: $pn samples, as dstack folded"
	else bad "bench collapse.awk: $pn samples, dstack folded $dn"; fi
}
bench_check_suite
