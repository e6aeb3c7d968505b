# --debuginfod: a stripped binary of a recording made here (the host's perf) is
# symbolized only through Debian's own debuginfod server, started on 127.0.0.1 serving
# a directory with its debug file; a second run takes the cache and asks nothing (the
# server's request counter); an unreachable server, a server that never answers and a
# build-id the server does not know give one line each, no hang, frames unknown.
debuginfod_suite() {
	local o="$WORK/out/debuginfod" port dpid res t0 t1
	if ! command -v debuginfod >/dev/null || ! command -v debuginfod-find >/dev/null; then
		echo "SKIPPED debuginfod: *** Debian's debuginfod package is not installed (debuginfod, debuginfod-find) ***"; return
	fi
	rm -rf "$o"; mkdir -p "$o/srv" "$o/bin"
	cc -O2 -g -fno-omit-frame-pointer -o "$o/full" "$ROOT/tests/vm/diff-wl.c" &&
		objcopy --only-keep-debug "$o/full" "$o/srv/prog.debug" && strip -s -o "$o/bin/prog" "$o/full" || {
		bad "debuginfod: cannot build the workload"; return; }
	# a second binary (another build-id) whose debug file the server does not have
	sed 's/#define UNIT 200000UL/#define UNIT 150000UL/' "$ROOT/tests/vm/diff-wl.c" | cc -O2 -g -fno-omit-frame-pointer -o "$o/full2" -x c - &&
		strip -s -o "$o/bin/other" "$o/full2" || { bad "debuginfod: cannot build the workloads"; return; }
	if ! command -v perf >/dev/null ||
	   ! perf record -q -g -o "$o/rec.data" -- sh -c "'$o/bin/prog' base 40; '$o/bin/other' base 40" >/dev/null 2>"$o/rec.err"; then
		echo "SKIPPED debuginfod: *** the host's perf cannot record here: $(tail -1 "$o/rec.err") ***"; return
	fi
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	debuginfod -F -p "$port" -d "$o/db.sqlite" "$o/srv" >"$o/server.log" 2>&1 &
	dpid=$!
	local url="http://127.0.0.1:$port" bid
	bid=$(readelf -n "$o/bin/prog" | awk '/Build ID/ { print $3 }')
	# ready once it serves the debug file (a throwaway cache for the probe)
	local i=0
	until DEBUGINFOD_URLS=$url DEBUGINFOD_CACHE_PATH="$o/probe" debuginfod-find debuginfo "$bid" >/dev/null 2>&1; do
		i=$((i + 1)); [ $i -gt 100 ] && break; rm -rf "$o/probe"; sleep 0.2
	done
	requests() { python3 -c 'import re, sys, urllib.request
m = urllib.request.urlopen(sys.argv[1] + "/metrics", timeout=5).read().decode()
print(sum(int(float(v)) for v in re.findall(r"^http_requests_total\{type=\"debuginfo\"\} (\S+)", m, re.M)))' "$url"; }
	local args=(report --stdio --no-children --sort dso,sym -g none -i "$o/rec.data")
	"$DSTACK" "${args[@]}" >"$o/plain" 2>&1
	local before; before=$(requests)
	DEBUGINFOD_CACHE_PATH="$o/cache" "$DSTACK" "${args[@]}" --debuginfod="$url" >"$o/first" 2>"$o/first.err"
	local mid; mid=$(requests)
	DEBUGINFOD_CACHE_PATH="$o/cache" "$DSTACK" "${args[@]}" --debuginfod="$url" >"$o/second" 2>"$o/second.err"
	local after; after=$(requests)
	# every name of prog: only through the server
	if grep -q ' prog .*\] 0x' "$o/plain" && ! grep -q ' prog .*common_work' "$o/plain" &&
	   grep -q ' prog .*\[\.\] common_work' "$o/first" && grep -q ' prog .*\[\.\] leaf_a' "$o/first" &&
	   ! grep -q ' prog .*\] 0x' "$o/first" &&
	   grep -q "debuginfod: $o/bin/prog: debug file fetched" "$o/first.err" && [ $((mid - before)) -ge 1 ]; then
		ok "debuginfod: the stripped binary symbolized only through the server ($((mid - before)) request(s)): $(grep -m1 "bin/prog" "$o/first.err")"
	else bad "debuginfod: first run: $(head -3 "$o/first.err"); $(grep ' prog ' "$o/first" | head -2)"; fi
	if cmp -s "$o/first" "$o/second" && [ "$after" = "$mid" ] && grep -q "bin/prog: debug file from the cache" "$o/second.err"; then
		ok "debuginfod: the second run takes the cache: no request (server count $after), same report"
	else bad "debuginfod: second run: requests $mid -> $after; $(head -2 "$o/second.err")"; fi
	# the binary the server does not know: one line, its frames stay unknown
	if [ "$(grep -c "bin/other" "$o/first.err")" = 1 ] && grep -q "bin/other: build-id .* unknown to the servers" "$o/first.err" &&
	   grep -q ' other .*\] 0x' "$o/first"; then
		ok "debuginfod: an unknown build-id: one line ($(grep "bin/other" "$o/first.err" | cut -c1-120)...), frames unknown"
	else bad "debuginfod: unknown build-id: $(grep "bin/other" "$o/first.err")"; fi
	# the same debug file gives DWARF: source lines of the stripped binary
	DEBUGINFOD_CACHE_PATH="$o/cache" "$DSTACK" report --stdio --no-children --sort dso,srcline -g none -i "$o/rec.data" \
		--debuginfod="$url" >"$o/lines" 2>/dev/null
	if grep -q ' prog .*diff-wl\.c:[0-9]' "$o/lines" && ! grep -q ' prog .*diff-wl\.c:[0-9]' "$o/plain"; then
		ok "debuginfod: its DWARF gives source lines: $(grep -m1 ' prog .*diff-wl\.c:' "$o/lines" | tr -s ' ')"
	else bad "debuginfod: no source lines through the server: $(grep ' prog ' "$o/lines" | head -2)"; fi
	kill "$dpid" 2>/dev/null; wait "$dpid" 2>/dev/null
	# an unreachable server (the port is closed now): one line per binary, frames unknown, at once
	# (prog and other; the sh that ran them may have been sampled too: its line is not counted)
	t0=$(date +%s%N)
	DEBUGINFOD_CACHE_PATH="$o/cache-x" "$DSTACK" "${args[@]}" --debuginfod="$url" >"$o/down" 2>"$o/down.err"
	t1=$(date +%s%N)
	if [ "$(grep -c "debuginfod: $o/bin/" "$o/down.err")" = 2 ] && grep -q "bin/prog: build-id .*: Connection refused" "$o/down.err" &&
	   grep -q ' prog .*\] 0x' "$o/down" && [ $(((t1 - t0) / 1000000)) -lt 5000 ]; then
		ok "debuginfod: an unreachable server: one line per binary, frames unknown, $(((t1 - t0) / 1000000)) ms"
	else bad "debuginfod: unreachable server: $(cat "$o/down.err" | head -3)"; fi
	# a server that accepts and never answers: cut off at the timeout, never a hang
	python3 - "$o/hang.port" <<'PY' &
import socket, sys, time
s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(16)
open(sys.argv[1], 'w').write(str(s.getsockname()[1]))
held, end = [], time.time() + 60
s.settimeout(1)
while time.time() < end:
    try: held.append(s.accept())
    except OSError: pass
PY
	local hpid=$!
	i=0; while [ ! -s "$o/hang.port" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	t0=$(date +%s%N)
	DEBUGINFOD_TIMEOUT=1 DEBUGINFOD_CACHE_PATH="$o/cache-h" timeout 60 "$DSTACK" "${args[@]}" \
		--debuginfod="http://127.0.0.1:$(cat "$o/hang.port")" >"$o/hang" 2>"$o/hang.err"
	res=$?
	t1=$(date +%s%N)
	kill "$hpid" 2>/dev/null; wait "$hpid" 2>/dev/null
	if [ $res = 0 ] && [ "$(grep -c "debuginfod: $o/bin/" "$o/hang.err")" = 2 ] && grep -q "bin/prog: build-id .*: no answer within 1 s" "$o/hang.err" &&
	   grep -q ' prog .*\] 0x' "$o/hang" && [ $(((t1 - t0) / 1000000)) -lt 15000 ]; then
		ok "debuginfod: a server that never answers: $(grep -m1 "bin/prog" "$o/hang.err" | sed 's/.*: //'), both binaries at once in $(((t1 - t0) / 1000000)) ms, frames unknown"
	else bad "debuginfod: silent server: exit $res after $(((t1 - t0) / 1000000)) ms: $(head -3 "$o/hang.err")"; fi
	# no server named at all
	DEBUGINFOD_URLS= "$DSTACK" "${args[@]}" --debuginfod >/dev/null 2>"$o/none.err"
	if grep -q "no server" "$o/none.err" && [ "$(wc -l <"$o/none.err")" = 1 ]; then ok "debuginfod: no server named: $(cat "$o/none.err")"
	else bad "debuginfod: no server: $(cat "$o/none.err")"; fi
}
debuginfod_suite
