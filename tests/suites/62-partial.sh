# Damaged input through every command: exit 1 with the offset named, and
# what was read before the damage is still a complete, valid output.
partial_suite() {
	local in="$WORK/out/partial.data" o="$WORK/out/partial" n
	local opts=(--symfs "$WORK/symfs-root/symfs" --kallsyms "$WORK/kallsyms" -i "$in")
	head -c 3000000 "$WORK/data/mix.defer.data" >"$in"
	mkdir -p "$o"
	run_partial() { # NAME CMD... : exit 1, an offset in the error
		local name=$1; shift
		"$DSTACK" "$@" "${opts[@]}" >"$o/$name.out" 2>"$o/$name.err"
		local rc=$?
		if [ $rc -eq 1 ] && grep -q "offset 0x[0-9a-f]*:" "$o/$name.err"; then return 0; fi
		bad "partial $name: exit $rc: $(grep -v build-id "$o/$name.err" | head -2)"; return 1
	}
	if run_partial script script; then
		n=$(grep -c 'cpu-clock:' "$o/script.out")
		[ "$n" -gt 1000 ] && ok "partial script: $n samples printed, exit 1 naming the offset" || bad "partial script: $n samples"
	fi
	if run_partial report report --stdio; then
		grep -q '^# Samples: ' "$o/report.out" && grep -q '%' "$o/report.out" &&
			ok "partial report: a profile of the samples read, exit 1" || bad "partial report: no profile"
	fi
	if run_partial folded folded; then
		n=$(awk '{ s += $NF } END { print s + 0 }' "$o/folded.out")
		[ "$n" -gt 1000 ] && ok "partial folded: $n samples, exit 1" || bad "partial folded: $n samples"
	fi
	if run_partial pprof pprof -o "$o/p.pb.gz"; then
		if ! command -v node >/dev/null || [ ! -d "$ROOT/build/js/node_modules/pprof-format" ]; then
			echo "SKIPPED partial pprof decoding: *** no node or pprof-format ***"
		elif NODE_PATH="$ROOT/build/js/node_modules" node "$ROOT/tests/js/check_pprof.js" "$o/p.pb.gz" |
			python3 -c 'import json,sys; r=json.load(sys.stdin); sys.exit(0 if int(r["samples"]) > 1000 and not r["errors"] else 1)'
		then ok "partial pprof: a valid profile of the samples read, exit 1"
		else bad "partial pprof: the profile does not decode"; fi
	fi
	if run_partial speedscope speedscope -o "$o/s.json"; then
		python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["profiles"] else 1)' "$o/s.json" &&
			ok "partial speedscope: valid JSON, exit 1" || bad "partial speedscope: invalid JSON"
	fi
	if run_partial flamegraph flamegraph -o "$o/f.svg"; then
		python3 -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' "$o/f.svg" &&
			ok "partial flamegraph: well-formed SVG, exit 1" || bad "partial flamegraph: malformed SVG"
	fi
	if run_partial inject inject --merge -o "$o/i.data"; then
		"$DSTACK" stat -i "$o/i.data" >"$o/i.stat" 2>&1
		n=$(awk '$1 == "samples" { print $2 }' "$o/i.stat")
		grep -q '^records.bad  *0$' "$o/i.stat" && [ "${n:-0}" -gt 1000 ] &&
			ok "partial inject: a valid perf.data with $n samples, exit 1" || bad "partial inject: $(head -3 "$o/i.stat")"
	fi
}

partial_suite
