#!/usr/bin/env bash
# Rename identifiers across the tree: scripts/rename-symbols.sh LISTFILE
#
# LISTFILE holds "OLD NEW" lines (blank lines and "# ..." comments are
# skipped).  Each OLD is replaced by NEW as a whole identifier (word
# boundaries: ds_grow does not touch ds_grow_by or DS_GROW) in the C
# sources, scripts and docs under lib/ util/ cli/ tests/ fuzz/ bench/
# examples/ docs/.  include/ is left alone: the public API is not renamed
# this way.
#
# It refuses, changing nothing, when a line is malformed, an OLD appears
# twice, or a NEW is already an identifier somewhere in those files (the
# rename would merge two names).  Run from anywhere; it works on the
# checkout it lives in.  Afterwards: make, the units, tests/suites/89-api.sh.
set -eu
list=${1:?usage: scripts/rename-symbols.sh LISTFILE}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

dirs=(lib util cli tests fuzz bench examples docs)
mapfile -t files < <(git ls-files -- "${dirs[@]}" |
	grep -E '\.(c|h|sh|py|md|txt|map|js)$|(^|/)README' || true)
[ "${#files[@]}" -gt 0 ] || { echo "rename-symbols: no files under ${dirs[*]}" >&2; exit 1; }

ident='^[A-Za-z_][A-Za-z0-9_]*$'
declare -A seen=()
pairs=()
n=0
while read -r old new rest; do
	n=$((n + 1))
	case $old in ''|'#'*) continue ;; esac
	if [ -n "${rest:-}" ] || ! [[ $old =~ $ident ]] || ! [[ ${new:-} =~ $ident ]]; then
		echo "rename-symbols: $list:$n: expected \"OLD NEW\" identifiers" >&2; exit 1
	fi
	if [ -n "${seen[$old]:-}" ]; then
		echo "rename-symbols: $list:$n: $old listed twice" >&2; exit 1
	fi
	seen[$old]=1
	pairs+=("$old $new")
done <"$list"

# no NEW may exist already, nor be an OLD (the renames would chain)
clash=0
for p in "${pairs[@]}"; do
	new=${p#* }
	if [ -n "${seen[$new]:-}" ]; then
		echo "rename-symbols: $new is both a new and an old name" >&2; clash=1
	elif grep -qw -- "$new" "${files[@]}"; then
		echo "rename-symbols: $new already exists: $(grep -lw -- "$new" "${files[@]}" | head -3 | tr '\n' ' ')" >&2
		clash=1
	fi
done
[ "$clash" -eq 0 ] || exit 1

# one sed program, every file once: s/\bOLD\b/NEW/g per pair
prog=$(for p in "${pairs[@]}"; do printf 's/\\b%s\\b/%s/g\n' "${p% *}" "${p#* }"; done)
changed=0
for f in "${files[@]}"; do
	if grep -qwF -f <(for p in "${pairs[@]}"; do echo "${p% *}"; done) -- "$f"; then
		sed -i -e "$prog" -- "$f"
		changed=$((changed + 1))
	fi
done
echo "rename-symbols: ${#pairs[@]} names, $changed files changed"
