# dstack folded: counts sum to the samples `dstack stat` counts; stacks equal an
# independent collapse (tests/collapse_script.py, stackcollapse-perf.pl's rules)
# of `dstack script`; filters split the counts consistently.
folded_sum() { awk '{ s += $NF } END { printf "%.0f\n", s }' "$1"; }

folded_suite() {
	local f n ks o want got
	for f in "$ROOT"/tests/corpus/oracle/*.report.zst; do
		n=$(basename "$f" .report.zst)
		ks=$(kallsyms_for "$n")
		o="$WORK/out/$n.folded"
		if ! "$DSTACK" folded --symfs "$WORK/symfs-root/symfs" --kallsyms "$ks" -i "$WORK/data/$n.data" -o "$o" 2>"$o.err"; then
			bad "folded $n: exit status $?: $(tail -3 "$o.err")"; continue
		fi
		want=$("$DSTACK" stat -i "$WORK/data/$n.data" | awk '$1 == "samples" { print $2 }')
		got=$(folded_sum "$o")
		if [ -n "$want" ] && [ "$got" = "$want" ]; then ok "folded $n: counts sum to $got samples ($(wc -l <"$o") stacks)"
		else bad "folded $n: counts sum to $got, stat says ${want:-?} samples"; fi
	done
	for n in cpu.defer cxx.defer mix.fp threads2.defer; do
		ks=$(kallsyms_for "$n")
		o="$WORK/out/$n.folded"
		"$DSTACK" script --symfs "$WORK/symfs-root/symfs" --kallsyms "$ks" -i "$WORK/data/$n.data" >"$o.script" 2>/dev/null
		python3 "$ROOT/tests/collapse_script.py" "$o.script" >"$o.ref"
		if [ -s "$o.ref" ] && cmp -s "$o" "$o.ref"; then ok "folded $n: same $(wc -l <"$o") stacks as collapsing the script output"
		else bad "folded $n: differs from collapsing the script output: $(diff "$o" "$o.ref" | head -4)"; fi
	done

	# filters: per-command runs add up to the whole (tail.defer: ten commands);
	# a time split too; --pid/--tid; --period weights
	local total parts=0 c comms
	o="$WORK/out/folded-filter"
	local opts=(--symfs "$WORK/symfs-root/symfs" --kallsyms "$WORK/kallsyms" -i "$WORK/data/tail.defer.data")
	"$DSTACK" folded "${opts[@]}" >"$o.all"
	total=$(folded_sum "$o.all")
	comms=$(cut -d';' -f1 "$o.all" | sed 's/ [0-9]*$//' | sort -u)
	for c in $comms; do
		"$DSTACK" folded "${opts[@]}" --comm "$c" >"$o.comm"
		if grep -qv "^$c[; ]" "$o.comm"; then bad "folded --comm $c: other commands in the output"; fi
		parts=$((parts + $(folded_sum "$o.comm")))
	done
	if [ "$parts" = "$total" ] && [ "$total" -gt 0 ]; then ok "folded --comm: $(echo $comms | wc -w) commands add up to $total"
	else bad "folded --comm: parts $parts, total $total"; fi
	n=threads2.defer; ks=$(kallsyms_for "$n")
	opts=(--symfs "$WORK/symfs-root/symfs" --kallsyms "$ks" -i "$WORK/data/$n.data")
	"$DSTACK" folded "${opts[@]}" >"$o.all"
	total=$(folded_sum "$o.all")
	local t0 t1 mid a b
	t0=$("$DSTACK" script "${opts[@]}" | awk '/cpu-clock/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) { sub(":", "", $i); print $i; exit } }')
	t1=$("$DSTACK" script "${opts[@]}" | awk '/cpu-clock/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) { sub(":", "", $i); t = $i } } END { print t }')
	mid=$(python3 -c "print('%.9f' % (($t0 + $t1) / 2))")
	a=$("$DSTACK" folded "${opts[@]}" --time ",$mid" | folded_sum /dev/stdin)
	b=$("$DSTACK" folded "${opts[@]}" --time "$(python3 -c "print('%.9f' % ($mid + 1e-9))")," | folded_sum /dev/stdin)
	if [ "$a" -gt 0 ] && [ "$b" -gt 0 ] && [ $((a + b)) = "$total" ]; then ok "folded --time: halves $a + $b = $total"
	else bad "folded --time: halves $a + $b, total $total"; fi
	local pid; pid=$("$DSTACK" script "${opts[@]}" | awk 'NF > 3 && /cpu-clock/ { print $2; exit }')
	a=$("$DSTACK" folded "${opts[@]}" --pid "$pid" | folded_sum /dev/stdin)
	b=$("$DSTACK" folded "${opts[@]}" --tid "$pid" | folded_sum /dev/stdin)
	if [ "$a" -gt 0 ] && [ "$a" -le "$total" ] && [ "$b" -le "$a" ]; then ok "folded --pid $pid: $a of $total samples (its main thread $b)"
	else bad "folded --pid $pid: $a, --tid $b, total $total"; fi
	a=$("$DSTACK" folded "${opts[@]}" --period | folded_sum /dev/stdin)
	b=$("$DSTACK" report "${opts[@]}" -g none | awk -F': ' '/Event count/ { print $2 }')
	if [ "$a" = "$b" ]; then ok "folded --period: weights sum to the event count $a"
	else bad "folded --period: $a, report's event count $b"; fi
}
folded_suite
