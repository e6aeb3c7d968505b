#!/bin/bash
# same-outputs.sh OLD NEW: every command of dstack run by two binaries on
# every corpus recording, outputs compared byte for byte (a refactoring
# changes no output).  Prints each difference and exits 1 on any.
#   OLD, NEW  dstack binaries (e.g. a build of the base commit and of HEAD)
# The corpus is ../shared/corpus beside the checkout (DSTACK_CORPUS overrides).
set -u
old=$1 new=$2
root=$(cd "$(dirname "$0")/.." && pwd)
corpus=${DSTACK_CORPUS:-$(cd "$root/.." && pwd)/shared/corpus}
[ -d "$corpus/data" ] || { echo "same-outputs: no corpus at $corpus" >&2; exit 2; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cmds=(
	"script" "script --no-merge-callchains" "script -F comm,tid,time,event,ip,sym,dso,period"
	"script -F +srcline" "script -G" "report --stdio" "report --stdio --no-children"
	"report --stdio --children --sort dso,sym" "report --stdio -g none --sort pid,comm"
	"report --stdio --sort srcline -g none" "folded" "flamegraph" "pprof -o -" "speedscope -o -"
	"stat" "dump" "script --header-only" "inject --merge -o -"
)
n=0 bad=0
for d in "$corpus"/data/*.data; do
	b=$(basename "$d" .data)
	ks=$corpus/kallsyms
	for c in "${cmds[@]}"; do
		# shellcheck disable=SC2086
		"$old" $c -q -i "$d" --symfs "$corpus/symfs" --kallsyms "$ks" >"$tmp/o" 2>"$tmp/oe"; orc=$?
		# shellcheck disable=SC2086
		"$new" $c -q -i "$d" --symfs "$corpus/symfs" --kallsyms "$ks" >"$tmp/n" 2>"$tmp/ne"; nrc=$?
		n=$((n + 1))
		if [ $orc -ne $nrc ] || ! cmp -s "$tmp/o" "$tmp/n" || ! cmp -s "$tmp/oe" "$tmp/ne"; then
			bad=$((bad + 1))
			echo "DIFF $b: $c (exit $orc -> $nrc)"
			diff "$tmp/o" "$tmp/n" | head -5 | cut -c -200
			diff "$tmp/oe" "$tmp/ne" | head -3 | cut -c -200
		fi
	done
done
echo "same-outputs: $((n - bad))/$n command runs byte-identical"
[ $bad -eq 0 ]
