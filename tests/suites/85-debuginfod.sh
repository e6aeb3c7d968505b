# debuginfod: stripped binaries symbolized only through Debian's own debuginfod server,
# started on 127.0.0.1 serving a directory with one debug file, on two recordings:
#   - perf 7.2's, made fresh in the guest as it records by default: build-ids only in
#     the MMAP2 records, no build-id table in the header (tests/vm/debuginfod-job.sh);
#     dstack's script equals perf 7.2's on the unstripped binary;
#   - the host's perf's, whose header lists the sampled binaries (asked before the samples).
# On each: one line per binary asked, once (fetched; unknown to the server); a second run
# takes the cache and asks nothing (the server's request counter); the DWARF gives source
# lines.  On the guest's: DEBUGINFOD_URLS alone turns the lookup on, --no-debuginfod off;
# a closed port (unreachable) and a server that accepts and never answers (timed out)
# give one line per binary, no hang, frames unknown.
# The ASan pass (DSTACK_NO_VM) reads the release pass's guest recording again.

# di_requests URL: the server's debuginfo requests so far
di_requests() {
	python3 -c 'import re, sys, urllib.request
m = urllib.request.urlopen(sys.argv[1] + "/metrics", timeout=5).read().decode()
print(sum(int(float(v)) for v in re.findall(r"^http_requests_total\{type=\"debuginfo\"\} (\S+)", m, re.M)))' "$1"
}

# di_once ERRFILE: no binary has two debuginfod lines (prints the repeated ones)
di_once() {
	sed -n 's/^dstack [a-z]*: debuginfod: \([^:]*\): .*/\1/p' "$1" | sort | uniq -d | grep . && return 1
	return 0
}

# di_guest VMDIR: the guest's recording VMDIR/out/mmap2.data of VMDIR/job/{prog,other}
# (stripped; VMDIR/full: prog before), recorded now, or the release pass's (ASan pass);
# VMDIR/p7.script: perf 7.2's script on the unstripped binary.  Says why when it has none.
di_guest() {
	local vm=$1
	if [ -n "${DSTACK_NO_VM:-}" ]; then
		[ -f "$vm/out/mmap2.data" ] && [ -f "$vm/p7.script" ] && return 0
		echo "SKIPPED debuginfod (guest): *** DSTACK_NO_VM=${DSTACK_NO_VM}, no recording from a release pass ***"; return 1
	fi
	if ! kvm_ready; then
		echo "SKIPPED debuginfod (guest): *** no kernel-vm at $KVM_DIR (not set up): perf 7.x's MMAP2 build-ids untested ***"; return 1
	fi
	rm -rf "$vm"; mkdir -p "$vm/job" "$vm/out" "$vm/sff/job"
	cp "$ROOT/tests/vm/debuginfod-job.sh" "$vm/job/run.sh"
	# static: the guest's libc is not the host's
	cc -static -O2 -g -fno-omit-frame-pointer -o "$vm/full" "$ROOT/tests/vm/diff-wl.c" &&
		strip -s -o "$vm/job/prog" "$vm/full" &&
		sed 's/#define UNIT 200000UL/#define UNIT 150000UL/' "$ROOT/tests/vm/diff-wl.c" |
		cc -static -O2 -g -fno-omit-frame-pointer -o "$vm/full2" -x c - && strip -s -o "$vm/job/other" "$vm/full2" ||
		{ bad "debuginfod (guest): cannot build the workloads"; return 1; }
	if ! kvm_run_job 200 "$vm/job" "$vm/out" "$vm/run.log" || ! grep -q 'rc 0' "$vm/out/rc"; then
		bad "debuginfod (guest): the guest job failed: $(tail -2 "$vm/run.log") $(tail -2 "$vm/out/rec.log" 2>/dev/null)"; return 1
	fi
	cp "$vm/full" "$vm/sff/job/prog"; cp "$vm/job/other" "$vm/sff/job/other"
	"$KVM_PERF7" script -i "/host$vm/out/mmap2.data" --symfs "/host$vm/sff" >"$vm/p7.script" 2>"$vm/p7.err" ||
		{ bad "debuginfod (guest): perf 7.2 script: $(tail -2 "$vm/p7.err")"; return 1; }
}

# di_server DIR: Debian's debuginfod serving DIR on 127.0.0.1 (its pid in di_pid, its
# URL in di_url), ready once it serves each DIR/*.debug (probed with a throwaway cache)
di_server() {
	local dir=$1 port i=0 bid f
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	debuginfod -F -p "$port" -d "$dir.sqlite" "$dir" >"$dir.log" 2>&1 &
	di_pid=$!
	di_url="http://127.0.0.1:$port"
	for f in "$dir"/*.debug; do
		bid=$(readelf -n "$f" 2>/dev/null | awk '/Build ID/ { print $3 }')
		until DEBUGINFOD_URLS=$di_url DEBUGINFOD_CACHE_PATH="$dir.probe" debuginfod-find debuginfo "$bid" >/dev/null 2>&1; do
			i=$((i + 1)); [ $i -gt 100 ] && return 1; rm -rf "$dir.probe"; sleep 0.2
		done
		rm -rf "$dir.probe"
	done
}

# di_checks NAME DIR REC PROG OTHER [DSTACK ARGS...]: on recording REC, PROG (a path as
# recorded) symbolized only through the server, OTHER's build-id unknown to it
di_checks() {
	local name=$1 d=$2 rec=$3 prog=$4 other=$5 before mid after
	shift 5
	local args=(report --stdio --no-children --sort dso,sym -g none -i "$rec" "$@")
	local p=${prog##*/} q=${other##*/}
	"$DSTACK" "${args[@]}" >"$d/plain" 2>&1
	before=$(di_requests "$di_url")
	DEBUGINFOD_CACHE_PATH="$d/cache" "$DSTACK" "${args[@]}" --debuginfod="$di_url" >"$d/first" 2>"$d/first.err"
	mid=$(di_requests "$di_url")
	DEBUGINFOD_CACHE_PATH="$d/cache" "$DSTACK" "${args[@]}" --debuginfod="$di_url" >"$d/second" 2>"$d/second.err"
	after=$(di_requests "$di_url")
	if grep -q " $p .*\] 0x" "$d/plain" && ! grep -q " $p .*common_work" "$d/plain" &&
	   grep -q " $p .*\[\.\] common_work" "$d/first" && grep -q " $p .*\[\.\] leaf_a" "$d/first" &&
	   ! grep -q " $p .*\] 0x" "$d/first" && [ "$(grep -c "debuginfod: $prog: debug file fetched" "$d/first.err")" = 1 ] &&
	   [ $((mid - before)) -ge 1 ] && di_once "$d/first.err"; then
		ok "debuginfod ($name): the stripped binary symbolized only through the server ($((mid - before)) request(s)), one line: $(grep -m1 "$prog" "$d/first.err" | cut -c1-150)"
	else bad "debuginfod ($name): first run: $(head -3 "$d/first.err"); $(grep " $p " "$d/first" | head -2)"; fi
	if cmp -s "$d/first" "$d/second" && [ "$after" = "$mid" ] && grep -q "$prog: debug file from the cache" "$d/second.err" &&
	   di_once "$d/second.err"; then
		ok "debuginfod ($name): the second run takes the cache: no request (server count $after), same report"
	else bad "debuginfod ($name): second run: requests $mid -> $after; $(head -2 "$d/second.err")"; fi
	if [ "$(grep -c "$other" "$d/first.err")" = 1 ] && grep -q "$other: build-id .* unknown to the servers" "$d/first.err" &&
	   grep -q " $q .*\] 0x" "$d/first"; then
		ok "debuginfod ($name): an unknown build-id: one line ($(grep "$other" "$d/first.err" | cut -c1-110)...), frames unknown"
	else bad "debuginfod ($name): unknown build-id: $(grep "$other" "$d/first.err")"; fi
	# the same debug file gives DWARF: source lines of the stripped binary
	DEBUGINFOD_CACHE_PATH="$d/cache" "$DSTACK" report --stdio --no-children --sort dso,srcline -g none -i "$rec" "$@" \
		--debuginfod="$di_url" >"$d/lines" 2>/dev/null
	if grep -q " $p .*diff-wl\.c:[0-9]" "$d/lines" && ! grep -q " $p .*diff-wl\.c:[0-9]" "$d/plain"; then
		ok "debuginfod ($name): its DWARF gives source lines: $(grep -m1 " $p .*diff-wl\.c:" "$d/lines" | tr -s ' ')"
	else bad "debuginfod ($name): no source lines through the server: $(grep " $p " "$d/lines" | head -2)"; fi
}

# di_failures DIR REC PROG OTHER URL [DSTACK ARGS...]: the server at URL is gone (its port closed),
# then one that never answers; each binary said once, at once, frames unknown
di_failures() {
	local d=$1 rec=$2 prog=$3 other=$4 url=$5 t0 t1 res hpid i=0
	shift 5
	local args=(report --stdio --no-children --sort dso,sym -g none -i "$rec" "$@") p=${prog##*/}
	t0=$(date +%s%N)
	DEBUGINFOD_CACHE_PATH="$d/cache-x" "$DSTACK" "${args[@]}" --debuginfod="$url" >"$d/down" 2>"$d/down.err"
	t1=$(date +%s%N)
	if grep -q "$prog: build-id .*: Connection refused" "$d/down.err" && grep -q "$other: build-id .*: Connection refused" "$d/down.err" &&
	   di_once "$d/down.err" && grep -q " $p .*\] 0x" "$d/down" && [ $(((t1 - t0) / 1000000)) -lt 5000 ]; then
		ok "debuginfod: an unreachable server: one line per binary, frames unknown, $(((t1 - t0) / 1000000)) ms"
	else bad "debuginfod: unreachable server: $(head -3 "$d/down.err")"; fi
	# a server that accepts and never answers: cut off at the timeout, never a hang
	# (the two workloads' samples only: each binary waits its timeout, one after the other)
	python3 - "$d/hang.port" <<'PY' &
import socket, sys, time
s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(16)
open(sys.argv[1], 'w').write(str(s.getsockname()[1]))
held, end = [], time.time() + 60
s.settimeout(1)
while time.time() < end:
    try: held.append(s.accept())
    except OSError: pass
PY
	hpid=$!
	while [ ! -s "$d/hang.port" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	t0=$(date +%s%N)
	DEBUGINFOD_TIMEOUT=1 DEBUGINFOD_CACHE_PATH="$d/cache-h" timeout 60 "$DSTACK" "${args[@]}" --comm "$p,${other##*/}" \
		--debuginfod="http://127.0.0.1:$(cat "$d/hang.port")" >"$d/hang" 2>"$d/hang.err"
	res=$?
	t1=$(date +%s%N)
	kill "$hpid" 2>/dev/null; wait "$hpid" 2>/dev/null
	if [ $res = 0 ] && grep -q "$prog: build-id .*: no answer within 1 s" "$d/hang.err" &&
	   grep -q "$other: build-id .*: no answer within 1 s" "$d/hang.err" && di_once "$d/hang.err" &&
	   grep -q " $p .*\] 0x" "$d/hang" && [ $(((t1 - t0) / 1000000)) -lt 20000 ]; then
		ok "debuginfod: a server that never answers: $(grep -m1 "$prog" "$d/hang.err" | sed 's/.*: //'), $(grep -c debuginfod: "$d/hang.err") binaries in $(((t1 - t0) / 1000000)) ms, frames unknown"
	else bad "debuginfod: silent server: exit $res after $(((t1 - t0) / 1000000)) ms: $(head -3 "$d/hang.err")"; fi
}

debuginfod_suite() {
	local o="$WORK/out/debuginfod" vm="$WORK/out/debuginfod-vm" guest=
	if ! command -v debuginfod >/dev/null || ! command -v debuginfod-find >/dev/null; then
		echo "SKIPPED debuginfod: *** Debian's debuginfod package is not installed (debuginfod, debuginfod-find) ***"; return
	fi
	rm -rf "$o"; mkdir -p "$o/srv" "$o/bin" "$o/host" "$o/guest" "$o/sf/job"
	di_guest "$vm" && guest=1
	# the host's recording: its header lists the sampled binaries
	cc -O2 -g -fno-omit-frame-pointer -o "$o/full" "$ROOT/tests/vm/diff-wl.c" &&
		objcopy --only-keep-debug "$o/full" "$o/srv/prog.debug" && strip -s -o "$o/bin/prog" "$o/full" &&
		sed 's/#define UNIT 200000UL/#define UNIT 150000UL/' "$ROOT/tests/vm/diff-wl.c" |
		cc -O2 -g -fno-omit-frame-pointer -o "$o/full2" -x c - && strip -s -o "$o/bin/other" "$o/full2" ||
		{ bad "debuginfod: cannot build the workloads"; return; }
	local host=1
	if ! command -v perf >/dev/null ||
	   ! perf record -q -g -o "$o/rec.data" -- sh -c "'$o/bin/prog' base 40; '$o/bin/other' base 40" >/dev/null 2>"$o/rec.err"; then
		echo "SKIPPED debuginfod (host): *** the host's perf cannot record here: $(tail -1 "$o/rec.err") ***"; host=
	fi
	[ -n "$guest" ] && objcopy --only-keep-debug "$vm/full" "$o/srv/guest-prog.debug" &&
		cp "$vm/job/prog" "$vm/job/other" "$o/sf/job/"
	if ! di_server "$o/srv"; then
		bad "debuginfod: the server did not start: $(tail -2 "$o/srv.log")"; kill "$di_pid" 2>/dev/null; wait "$di_pid" 2>/dev/null; return
	fi
	[ -n "$host" ] && di_checks host "$o/host" "$o/rec.data" "$o/bin/prog" "$o/bin/other"
	if [ -n "$guest" ]; then
		local g="$o/guest" rec="$vm/out/mmap2.data" before after
		if grep -q '^# missing features:.* BUILD_ID' <("$DSTACK" report --header-only -i "$rec" 2>&1) &&
		   "$DSTACK" dump -i "$rec" 2>/dev/null | grep -q 'MMAP2 .*<[0-9a-f]*>\]: /job/prog'; then
			ok "debuginfod (guest): perf 7.2's recording names /job/prog's build-id in its MMAP2 record only (no build-id table)"
		else bad "debuginfod (guest): the recording is not MMAP2-only: $("$DSTACK" report --header-only -i "$rec" 2>&1 | grep -i 'missing')"; fi
		di_checks guest "$g" "$rec" /job/prog /job/other --symfs "$o/sf"
		# the frames perf 7.2 prints with the binary before it was stripped
		DEBUGINFOD_CACHE_PATH="$g/cache" "$DSTACK" script -i "$rec" --symfs "$o/sf" --debuginfod="$di_url" >"$g/script" 2>"$g/script.err"
		if cmp -s "$g/script" "$vm/p7.script" && grep -q common_work "$g/script"; then
			ok "debuginfod (guest): script through the server equals perf 7.2's on the unstripped binary ($(wc -l <"$g/script") lines)"
		else bad "debuginfod (guest): script differs from perf 7.2's on the unstripped binary: $(diff "$g/script" "$vm/p7.script" | head -4)"; fi
		# diff reads two inputs: each binary still said once
		DEBUGINFOD_CACHE_PATH="$g/cache" "$DSTACK" diff --symfs "$o/sf" --debuginfod="$di_url" "$rec" "$rec" >"$g/diff" 2>"$g/diff.err"
		if [ "$(grep -c "/job/prog: debug file from the cache" "$g/diff.err")" = 1 ] && di_once "$g/diff.err" &&
		   grep -q common_work "$g/diff"; then
			ok "debuginfod (guest): diff of two inputs: each binary said once ($(grep -c debuginfod: "$g/diff.err") lines)"
		else bad "debuginfod (guest): diff: $(head -3 "$g/diff.err")"; fi
		# DEBUGINFOD_URLS alone turns it on; --no-debuginfod off (no line, no request)
		DEBUGINFOD_URLS=$di_url DEBUGINFOD_CACHE_PATH="$g/cache-env" "$DSTACK" script -i "$rec" --symfs "$o/sf" >"$g/env" 2>"$g/env.err"
		before=$(di_requests "$di_url")
		DEBUGINFOD_URLS=$di_url DEBUGINFOD_CACHE_PATH="$g/cache-off" "$DSTACK" script -i "$rec" --symfs "$o/sf" --no-debuginfod \
			>"$g/off" 2>"$g/off.err"
		after=$(di_requests "$di_url")
		if cmp -s "$g/env" "$vm/p7.script" && grep -q "/job/prog: debug file fetched" "$g/env.err" && di_once "$g/env.err" &&
		   ! grep -q debuginfod "$g/off.err" && ! grep -q common_work "$g/off" && [ "$before" = "$after" ] && [ ! -e "$g/cache-off" ]; then
			ok "debuginfod (guest): DEBUGINFOD_URLS alone turns it on (same frames), --no-debuginfod off (nothing asked, nothing said)"
		else bad "debuginfod (guest): DEBUGINFOD_URLS / --no-debuginfod: $(head -2 "$g/env.err") / $(head -2 "$g/off.err") (requests $before -> $after)"; fi
	fi
	kill "$di_pid" 2>/dev/null; wait "$di_pid" 2>/dev/null
	# the failures, on the guest's recording (each binary asked at its first need), else the host's
	if [ -n "$guest" ]; then di_failures "$o/guest" "$vm/out/mmap2.data" /job/prog /job/other "$di_url" --symfs "$o/sf"
	elif [ -n "$host" ]; then di_failures "$o/host" "$o/rec.data" "$o/bin/prog" "$o/bin/other" "$di_url"; fi
	# no server named at all
	if [ -n "$host" ] || [ -n "$guest" ]; then
		DEBUGINFOD_URLS= "$DSTACK" report --stdio -i "$([ -n "$host" ] && echo "$o/rec.data" || echo "$vm/out/mmap2.data")" \
			--debuginfod >/dev/null 2>"$o/none.err"
		if grep -q "no server" "$o/none.err" && [ "$(wc -l <"$o/none.err")" = 1 ]; then ok "debuginfod: no server named: $(cat "$o/none.err")"
		else bad "debuginfod: no server: $(cat "$o/none.err")"; fi
	fi
}
debuginfod_suite
