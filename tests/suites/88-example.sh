# The library as a program outside this tree uses it: `make install` to a
# temporary prefix, examples/folded.c built with that prefix's headers and
# library only (no -Ilib, -I., -Iutil: what it needs must be installed), run
# on every corpus recording: its folded stacks equal `dstack folded`'s byte
# for byte; examples/top.c the same way, its entries those of `dstack report
# --children --sort sym -g none`.  On the ASan pass both are the ASan build's (leaks checked).
example_suite() {
	local bdir=$BUILD mode=release san=() prefix n ks o
	if [ -n "${ASAN:-}" ] && [ "$DSTACK" = "$ROOT/$ASAN/dstack" ]; then
		bdir=$ASAN mode=asan san=(-fsanitize=address,undefined -fno-omit-frame-pointer)
	fi
	prefix=$WORK/out/example-prefix-$mode
	o=$WORK/out/example-$mode
	rm -rf "$prefix"
	if ! make -s -C "$ROOT" BUILD="$bdir" MODE="$mode" PREFIX="$prefix" DESTDIR= install >"$o.make" 2>&1; then
		bad "example: make install PREFIX=$prefix failed: $(tail -3 "$o.make")"; return
	fi
	if [ ! -f "$prefix/include/dstack/profile.h" ] || [ ! -f "$prefix/lib/libdstack.a" ]; then
		bad "example: the install lacks dstack/profile.h or libdstack.a"; return
	fi
	# the installed headers name only installed headers
	local missing
	missing=$(grep -ho '#include "[^"]*"' "$prefix"/include/dstack/*.h | sed 's/#include "\(.*\)"/\1/' | sort -u |
		while read -r h; do [ -f "$prefix/include/$h" ] || echo "$h"; done)
	if [ -n "$missing" ]; then bad "example: installed headers include what is not installed: $missing"
	else ok "example: installed headers ($(ls "$prefix"/include/dstack | wc -l)) include only installed ones"; fi
	if ! (cd "$WORK/out" && ${CC:-cc} -std=c11 -Wall -Wextra -Werror -O1 -g "${san[@]}" -I"$prefix/include" \
		-o "$o.bin" "$ROOT/examples/folded.c" "$prefix/lib/libdstack.a" \
		-lelf -ldw -lzstd -lz -liberty -lm -lpthread) >"$o.cc" 2>&1; then
		bad "example: examples/folded.c does not build against the installed tree: $(head -5 "$o.cc")"; return
	fi
	ok "example: examples/folded.c built with -I$prefix/include and libdstack.a only"
	for f in "$WORK"/data/*.data; do
		n=$(basename "$f" .data)
		ks=$(kallsyms_for "$n")
		"$DSTACK" folded -i "$f" --symfs "$WORK/symfs-root/symfs" --kallsyms "$ks" >"$o.$n.want" 2>/dev/null
		if ! "$o.bin" "$f" "$WORK/symfs-root/symfs" "$ks" >"$o.$n.got" 2>"$o.$n.err"; then
			bad "example $n: exit status $?: $(tail -2 "$o.$n.err")"; continue
		fi
		if [ ! -s "$o.$n.want" ]; then bad "example $n: dstack folded printed nothing"
		elif cmp -s "$o.$n.want" "$o.$n.got"; then ok "example $n: the same $(wc -l <"$o.$n.got") folded stacks as dstack folded"
		else bad "example $n: differs from dstack folded: $(diff "$o.$n.want" "$o.$n.got" | head -4 | tr '\n' ' ')"; fi
	done
	# examples/top.c (dstack/report.h): its lines are the entries of report --children --sort sym -g none,
	# "CHILDREN SELF SYMBOL" (one column where the report has no cumulative profile, a pipe's: both the same)
	if ! (cd "$WORK/out" && ${CC:-cc} -std=c11 -Wall -Wextra -Werror -O1 -g "${san[@]}" -I"$prefix/include" \
		-o "$o.top" "$ROOT/examples/top.c" "$prefix/lib/libdstack.a" \
		-lelf -ldw -lzstd -lz -liberty -lm -lpthread) >"$o.topcc" 2>&1; then
		bad "example: examples/top.c does not build against the installed tree: $(head -5 "$o.topcc")"
	else
		ok "example: examples/top.c built with -I$prefix/include and libdstack.a only"
		for f in "$WORK"/data/*.data; do
			n=$(basename "$f" .data)
			ks=$(kallsyms_for "$n")
			"$DSTACK" report --stdio --children --sort sym -g none -q -i "$f" --symfs "$WORK/symfs-root/symfs" \
				--kallsyms "$ks" 2>/dev/null | sed -n -e 's/^ *\([0-9.]*\)% *\([0-9.]*\)%  \(.*\)$/\1 \2 \3/p' \
				-e t -e 's/^ *\([0-9.]*\)%  \(.*\)$/\1 \1 \2/p' >"$o.$n.topwant"
			if ! "$o.top" "$f" "$WORK/symfs-root/symfs" "$ks" >"$o.$n.topgot" 2>"$o.$n.toperr"; then
				bad "example-top $n: exit status $?: $(tail -2 "$o.$n.toperr")"; continue
			fi
			if [ ! -s "$o.$n.topwant" ]; then bad "example-top $n: dstack report printed no entry"
			elif cmp -s "$o.$n.topwant" "$o.$n.topgot"; then
				ok "example-top $n: the same $(wc -l <"$o.$n.topgot") entries as dstack report --children --sort sym"
			else bad "example-top $n: differs from dstack report: $(diff "$o.$n.topwant" "$o.$n.topgot" | head -4 | tr '\n' ' ')"; fi
		done
	fi
	# an input it cannot open: an exit status and the reason, through the log
	if "$o.bin" "$WORK/out/no-such.data" >"$o.none" 2>"$o.none.err"; then
		bad "example: exit status 0 on a missing input"
	elif grep -q "no-such.data" "$o.none.err"; then ok "example: a missing input fails, said: $(head -1 "$o.none.err")"
	else bad "example: a missing input fails without saying why: $(head -2 "$o.none.err")"; fi
}
example_suite
