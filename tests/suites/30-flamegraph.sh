# dstack flamegraph: well-formed SVG on every corpus recording whose bottom frame holds
# the samples `dstack stat` counts and whose frames nest (a frame is at least as wide as
# what it calls, inside it); deterministic; rendered by headless Chromium (not blank,
# kernel and user colours both there), and its script zooms and searches.
flame_check() { # SVG STAT_SAMPLES
	python3 - "$1" "$2" <<'PY'
import sys, xml.etree.ElementTree as ET
ns = '{http://www.w3.org/2000/svg}'
root = ET.parse(sys.argv[1]).getroot()
want = int(sys.argv[2])
gs = [g for g in root.iter(ns + 'g') if g.get('class') == 'f']
errs = []
fr = [(int(g.get('data-d')), int(g.get('data-o')), int(g.get('data-s')), g.get('data-k'), g.get('data-n'), g.find(ns + 'title').text, float(g.find(ns + 'rect').get('width'))) for g in gs]
if not fr or fr[0][0] != 0: errs.append('first frame is not the root')
elif fr[0][2] != want: errs.append('root has %d samples, stat says %d' % (fr[0][2], want))
if root.get('data-samples') != str(want): errs.append('svg data-samples %s' % root.get('data-samples'))
# nesting: each frame lies inside the last frame one level below it (depth-first order)
open_at = {}
for d, o, s, k, n, t, w in fr:
    if d:
        p = open_at.get(d - 1)
        if not p or o < p[0] or o + s > p[0] + p[1]: errs.append('frame %s at depth %d is outside its caller' % (n, d)); break
    open_at[d] = (o, s)
    if '%d samples' % s not in t: errs.append('title of %s lacks its sample count' % n); break
kern = sum(1 for f in fr if f[3] == '1')
if not root.find(ns + 'script').text.strip(): errs.append('no script')
print('; '.join(errs) or '%d frames (%d kernel), depth %d, root %d samples' % (len(fr), kern, max(f[0] for f in fr), fr[0][2]))
sys.exit(1 if errs else 0)
PY
}

# distinct colours of a PNG screenshot, and how many are "kernel" (blue-green) / "user" (warm)
png_colours() {
	python3 - "$1" <<'PY'
import struct, sys, zlib
data = open(sys.argv[1], 'rb').read()
assert data[:8] == b'\x89PNG\r\n\x1a\n', 'not a PNG'
pos, idat, w = 8, b'', 0
while pos < len(data):
    n, typ = struct.unpack('>I4s', data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if typ == b'IHDR': w, h, depth, ctype = struct.unpack('>IIBB', body[:10])
    if typ == b'IDAT': idat += body
    pos += 12 + n
bpp = {2: 3, 6: 4}[ctype]
raw, stride, prev, cols, out = zlib.decompress(idat), w * bpp, bytearray(w * bpp), set(), bytearray()
i = 0
for y in range(h):
    f = raw[i]; line = bytearray(raw[i + 1:i + 1 + stride]); i += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0; b = prev[x]; c = prev[x - bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    prev = line
    for x in range(0, stride, bpp): cols.add(bytes(line[x:x + 3]))
kern = sum(1 for c in cols if c[2] > 150 and c[0] < 110)
user = sum(1 for c in cols if c[0] > 200 and c[2] < 60)
print(len(cols), kern, user)
PY
}

chromium_run() { # ARGS... (headless, no network, a throwaway profile)
	local prof; prof=$(mktemp -d)
	timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--user-data-dir="$prof" "$@" 2>/dev/null
	local rc=$?
	rm -rf "$prof"
	return $rc
}

flamegraph_suite() {
	local f n ks o want res
	for f in "$ROOT"/tests/corpus/oracle/*.report.zst; do
		n=$(basename "$f" .report.zst)
		ks=$(kallsyms_for "$n")
		o="$WORK/out/$n.flame.svg"
		if ! "$DSTACK" flamegraph --symfs "$WORK/symfs-root/symfs" --kallsyms "$ks" -i "$WORK/data/$n.data" -o "$o" 2>"$o.err"; then
			bad "flamegraph $n: exit status $?: $(tail -3 "$o.err")"; continue
		fi
		want=$("$DSTACK" stat -i "$WORK/data/$n.data" | awk '$1 == "samples" { print $2 }')
		if res=$(flame_check "$o" "${want:-0}" 2>&1); then ok "flamegraph $n: $res"
		else bad "flamegraph $n: $res"; fi
	done
	local opts=(--symfs "$WORK/symfs-root/symfs" --kallsyms "$WORK/kallsyms" -i "$WORK/data/mix.defer.data")
	o="$WORK/out/flame-mix"
	"$DSTACK" flamegraph "${opts[@]}" -o "$o.a.svg"
	"$DSTACK" flamegraph "${opts[@]}" -o - >"$o.b.svg"
	if [ -s "$o.a.svg" ] && cmp -s "$o.a.svg" "$o.b.svg"; then ok "flamegraph: same bytes twice (-o FILE and -o -)"
	else bad "flamegraph: output differs between runs"; fi
	(cd "$WORK/out" && rm -f flamegraph.svg && "$DSTACK" flamegraph "${opts[@]}" && cmp -s flamegraph.svg "$o.a.svg")
	if [ $? -eq 0 ]; then ok "flamegraph: writes flamegraph.svg by default"; else bad "flamegraph: default output file"; fi
	"$DSTACK" flamegraph "${opts[@]}" --comm nosuchcomm -o "$o.none.svg"
	if res=$(flame_check "$o.none.svg" 0 2>&1); then ok "flamegraph: a filter that keeps nothing gives an empty graph ($res)"
	else bad "flamegraph: empty graph: $res"; fi

	if ! command -v chromium >/dev/null; then
		echo "SKIPPED: flamegraph rendering: chromium is not installed (scripts/install-deps.sh installs it)"
		return
	fi
	local shot="$WORK/out/flamegraph-shot.png" cols
	rm -f "$shot"
	cp "$WORK/out/cxx.defer.flame.svg" "$WORK/out/shot.svg"
	chromium_run --screenshot="$shot" --window-size=1200,800 "file://$WORK/out/shot.svg" >/dev/null
	if [ -s "$shot" ] && cols=$(png_colours "$shot") && set -- $cols && [ "$1" -ge 30 ] && [ "$2" -ge 5 ] && [ "$3" -ge 5 ]; then
		ok "flamegraph: Chromium renders cxx.defer ($1 colours: $2 kernel-blue, $3 user-warm) -> $shot"
	else bad "flamegraph: Chromium screenshot missing or blank (${cols:-no png})"; fi

	# the script: click a frame (it fills the width, frames outside it hide),
	# search (window.prompt answered) colours matches and reports a percentage
	sed 's#</svg>$##' "$WORK/out/cxx.defer.flame.svg" >"$o.js.svg"
	cat >>"$o.js.svg" <<'EOF_JS'
<script><![CDATA[
(function () {
  var fs = Array.prototype.slice.call(document.querySelectorAll('g.f'));
  var z = fs.filter(function (g) { return g.getAttribute('data-d') === '3'; })
            .sort(function (a, b) { return b.getAttribute('data-s') - a.getAttribute('data-s'); })[0];
  z.dispatchEvent(new MouseEvent('click', { bubbles: true }));
  var zoomWidth = z.querySelector('rect').getAttribute('width');
  var hidden = fs.filter(function (g) { return g.style.display === 'none'; }).length;
  z.dispatchEvent(new MouseEvent('mouseover', { bubbles: true }));
  var status = document.getElementById('status').textContent;
  window.prompt = function () { return '^main$'; };
  document.getElementById('search').dispatchEvent(new MouseEvent('click', { bubbles: true }));
  var magenta = fs.filter(function (g) { return g.querySelector('rect').getAttribute('fill') === 'rgb(230,0,230)'; }).length;
  document.documentElement.setAttribute('data-result', [zoomWidth, hidden, magenta, document.getElementById('matched').textContent, status].join('|'));
})();
]]></script>
</svg>
EOF_JS
	res=$(chromium_run --dump-dom "file://$o.js.svg" | grep -o 'data-result="[^"]*"' | head -1)
	if python3 - "$res" <<'PY'
import sys
r = sys.argv[1].split('"')[1].split('|') if '"' in sys.argv[1] else []
ok = len(r) == 5 and float(r[0]) == 1180 and int(r[1]) > 0 and int(r[2]) >= 1 and r[3].startswith('Matched: ') \
     and float(r[3].split()[1].rstrip('%')) > 0 and 'samples' in r[4] and '%' in r[4]
sys.exit(0 if ok else 1)
PY
	then ok "flamegraph: script zooms, hovers and searches ($res)"
	else bad "flamegraph: script did not behave: ${res:-no result}"; fi
}
flamegraph_suite
