# Reliability of every command (docs/errors.md): a failed output (full
# disk, closed pipe with SIGPIPE ignored or at its default) is said and
# exits 3, never 0; non-regular files where binaries or kallsyms are looked
# for (a FIFO, a directory, /dev/zero) are refused unopened, nothing hangs;
# a damaged binary is reported as damaged, not as a build-id mismatch; a
# sample with no frames at all first in the file (pprof once copied from a
# NULL buffer for it: the ASan+UBSan pass of this suite catches it).
outputs_suite() {
	local o="$WORK/out/outputs" in="$WORK/data/cpu.defer.data" c rc err name
	local sy=(--symfs "$WORK/symfs-root/symfs" --kallsyms "$WORK/kallsyms")
	local rel=(python3 "$ROOT/tests/reliability.py")
	rm -rf "$o"; mkdir -p "$o"
	# every command, its output on stdout (inject -o -; the exports -o -)
	local cmds=("script" "stat" "dump" "report --stdio" "folded" "flamegraph -o -" "pprof -o -"
		    "speedscope -o -" "inject --merge -o -" "script --header-only" "report --header-only"
		    "report --stdio --header")
	local full=0 pipe_ign=0 pipe_dfl=0 n=0
	for c in "${cmds[@]}"; do
		name=${c%% *}; n=$((n + 1))
		# shellcheck disable=SC2086
		timeout 60 "$DSTACK" $c -i "$in" "${sy[@]}" >/dev/full 2>"$o/$name.full"; rc=$?
		if [ $rc -eq 3 ] && grep -q "^dstack $name: writing stdout: No space left on device$" "$o/$name.full" &&
		   ! grep -q "wrote" "$o/$name.full"; then full=$((full + 1))
		else bad "outputs: $c >/dev/full: exit $rc: $(grep -v build-id "$o/$name.full" | tail -2)"; fi
		# shellcheck disable=SC2086
		timeout 60 "${rel[@]}" closed-pipe ign "$DSTACK" $c -i "$in" "${sy[@]}" 2>"$o/$name.ign"
		if grep -q "^status 3$" "$o/$name.ign" && grep -q "^dstack $name: writing stdout: Broken pipe$" "$o/$name.ign" &&
		   [ "$(grep -c 'writing stdout' "$o/$name.ign")" = 1 ] && ! grep -q "wrote" "$o/$name.ign"; then
			pipe_ign=$((pipe_ign + 1))
		else bad "outputs: $c, pipe closed, SIGPIPE ignored: $(grep -v build-id "$o/$name.ign" | tail -3)"; fi
		# shellcheck disable=SC2086
		timeout 60 "${rel[@]}" closed-pipe dfl "$DSTACK" $c -i "$in" "${sy[@]}" 2>"$o/$name.dfl"
		if grep -q "^signal 13$" "$o/$name.dfl" && ! grep -q "writing" "$o/$name.dfl"; then
			pipe_dfl=$((pipe_dfl + 1))
		else bad "outputs: $c, pipe closed, SIGPIPE default: $(grep -v build-id "$o/$name.dfl" | tail -3)"; fi
	done
	[ $full = $n ] && ok "outputs: all $n commands to /dev/full: exit 3, 'dstack CMD: writing stdout: No space left on device', no success line"
	[ $pipe_ign = $n ] && ok "outputs: all $n commands into a closed pipe, SIGPIPE ignored: exit 3, 'writing stdout: Broken pipe' once"
	[ $pipe_dfl = $n ] && ok "outputs: all $n commands into a closed pipe, SIGPIPE default: ended by SIGPIPE, silent"
	# -o FILE that cannot be written
	local files=0 m=0
	for c in folded flamegraph pprof speedscope "inject --merge"; do
		name=${c%% *}; m=$((m + 1))
		# shellcheck disable=SC2086
		timeout 60 "$DSTACK" $c -i "$in" "${sy[@]}" -o /dev/full 2>"$o/$name.ofull"; rc=$?
		if [ $rc -eq 3 ] && grep -q "^dstack $name: .*/dev/full: .*No space left on device$" "$o/$name.ofull" &&
		   ! grep -q "wrote" "$o/$name.ofull"; then files=$((files + 1))
		else bad "outputs: $c -o /dev/full: exit $rc: $(grep -v build-id "$o/$name.ofull" | tail -2)"; fi
	done
	[ $files = $m ] && ok "outputs: all $m commands with -o /dev/full: exit 3 naming /dev/full"
	# the recorder writing into a closed pipe stops and ends its command
	if "$DSTACK" record -o - -F 200 -- true >/dev/null 2>"$o/rec.probe"; then
		timeout 20 "${rel[@]}" closed-pipe dfl "$DSTACK" record -o - -F 1000 -- sleep 30 2>"$o/rec.pipe"
		if grep -q "^status 3$" "$o/rec.pipe" && grep -q "^dstack record: writing stdout: Broken pipe$" "$o/rec.pipe"; then
			ok "outputs: record -o - into a closed pipe: exit 3 'writing stdout: Broken pipe', its command ended (no 30 s wait)"
		else bad "outputs: record -o - into a closed pipe: $(tail -3 "$o/rec.pipe")"; fi
	else
		echo "SKIPPED outputs: record into a closed pipe: *** cannot record here: $(tail -1 "$o/rec.probe") ***"
	fi

	# non-regular files where a binary (libc) or kallsyms is looked for
	local libc=usr/lib/x86_64-linux-gnu/libc.so.6 kind good=0 total=0
	for kind in fifo dir zero; do
		rm -rf "$o/symfs-$kind"; cp -a "$WORK/symfs-root/symfs" "$o/symfs-$kind"; rm -f "$o/symfs-$kind/$libc"
		case $kind in
		fifo) mkfifo "$o/symfs-$kind/$libc" ;;
		dir) mkdir "$o/symfs-$kind/$libc" ;;
		zero) ln -s /dev/zero "$o/symfs-$kind/$libc" ;;
		esac
		for c in script "report --stdio" folded "flamegraph -o -" "pprof -o -" "speedscope -o -" "inject --merge -o -"; do
			name=${c%% *}; total=$((total + 1))
			# shellcheck disable=SC2086
			timeout 60 "$DSTACK" $c -i "$in" --symfs "$o/symfs-$kind" --kallsyms "$WORK/kallsyms" \
				>"$o/$name.$kind.out" 2>"$o/$name.$kind.err"; rc=$?
			err=$(grep -c "symfs-$kind//*$libc: not a regular file, not read$" "$o/$name.$kind.err")
			# inject reads no binary: it must just not hang
			if [ $rc -eq 0 ] && { [ "$name" = inject ] || [ "$err" = 1 ]; } && [ -s "$o/$name.$kind.out" ] &&
			   ! grep -q "mismatch" "$o/$name.$kind.err"; then good=$((good + 1))
			else bad "outputs: $c with libc a $kind in --symfs: exit $rc (124: hung), $(tail -2 "$o/$name.$kind.err")"; fi
		done
	done
	[ $good = $total ] && ok "outputs: libc a FIFO, a directory, /dev/zero in --symfs: $total runs of 7 commands, none hangs, 'FILE: not a regular file, not read' once each"
	mkfifo "$o/kallsyms.fifo"
	good=0
	for k in "$o/kallsyms.fifo" /dev/zero "$o"; do
		timeout 60 "$DSTACK" script -i "$in" --symfs "$WORK/symfs-root/symfs" --kallsyms "$k" >"$o/ks.out" 2>"$o/ks.err"; rc=$?
		if [ $rc -eq 0 ] && grep -q "^dstack: $k: not a regular file, not read: no kernel symbols$" "$o/ks.err"; then
			good=$((good + 1))
		else bad "outputs: --kallsyms $k: exit $rc (124: hung): $(tail -2 "$o/ks.err")"; fi
	done
	[ $good = 3 ] && ok "outputs: --kallsyms a FIFO, /dev/zero, a directory: refused unopened, named, no hang"

	# -i a directory: said so (it was "file is too short ... (0 bytes)")
	"$DSTACK" stat -i "$o" >/dev/null 2>"$o/dir.err"; rc=$?
	if [ $rc -eq 1 ] && grep -q "^dstack stat: $o: Is a directory (a perf.data directory holds a file 'data')$" "$o/dir.err"; then
		ok "outputs: -i a directory: exit 1, '$(cat "$o/dir.err")'"
	else bad "outputs: -i a directory: exit $rc: $(cat "$o/dir.err")"; fi

	# a libc whose .dynsym header points past the end: called damaged, by name and cause
	rm -rf "$o/symfs-dynsym"; cp -a "$WORK/symfs-root/symfs" "$o/symfs-dynsym"; chmod u+w "$o/symfs-dynsym/$libc"
	python3 - "$o/symfs-dynsym/$libc" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], 'rb').read())
shoff, = struct.unpack_from('<Q', b, 0x28)
shentsize, shnum = struct.unpack_from('<HH', b, 0x3a)
for i in range(shnum):
    sh = shoff + i * shentsize
    if struct.unpack_from('<I', b, sh + 4)[0] in (2, 11):   # SYMTAB, DYNSYM
        struct.pack_into('<QQ', b, sh + 24, len(b) - 8, 1 << 40)
open(sys.argv[1], 'wb').write(b)
PY
	"$DSTACK" script -i "$in" --symfs "$o/symfs-dynsym" --kallsyms "$WORK/kallsyms" >"$o/dynsym.out" 2>"$o/dynsym.err"; rc=$?
	if [ $rc -eq 0 ] && grep -q "symfs-dynsym//*$libc: corrupt or unreadable ELF (its dynamic symbol table (.dynsym) is unreadable), no symbols$" "$o/dynsym.err" &&
	   ! grep -q "libc.so.6.*mismatch\|mismatch.*libc.so.6" "$o/dynsym.err"; then
		ok "outputs: a libc with a damaged .dynsym: '$(grep -o 'corrupt.*' "$o/dynsym.err" | head -1)', no build-id mismatch claimed"
	else bad "outputs: damaged libc: exit $rc: $(grep libc "$o/dynsym.err" | head -3)"; fi

	# the first sample with no frames at all, through every export
	"${rel[@]}" empty-stack "$WORK/data/pipe.defer.data" "$o/empty.data"
	good=0
	for c in script folded "pprof -o $o/empty.pb.gz" "speedscope -o $o/empty.json" "flamegraph -o $o/empty.svg" "report --stdio"; do
		# shellcheck disable=SC2086
		if "$DSTACK" $c -i "$o/empty.data" "${sy[@]}" >"$o/empty.out" 2>"$o/empty.err"; then good=$((good + 1))
		else bad "outputs: $c, first sample without frames: exit $? $(tail -2 "$o/empty.err")"; fi
	done
	if [ $good = 6 ] && gzip -t "$o/empty.pb.gz" && python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$o/empty.json"; then
		ok "outputs: a first sample without frames: 6 commands exit 0, the pprof and speedscope files valid"
	else bad "outputs: a first sample without frames: $good of 6, or invalid files"; fi
}
outputs_suite
