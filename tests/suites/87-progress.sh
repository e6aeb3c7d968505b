# Progress of a long read: on stderr when it is a terminal (a pty here), with bytes,
# samples and rate, wiped at the end; never on a pipe; -q turns it off; the output
# is the same either way.  DSTACK_PROGRESS_MS=0 shows it from the first events on
# (a corpus file reads faster than the half second a real run waits).
progress_suite() {
	local o="$WORK/out/progress" res
	mkdir -p "$o"
	if res=$(python3 - "$DSTACK" "$WORK" "$o" <<'PY'
import os, pty, re, subprocess, sys
D, W, O = sys.argv[1:4]
opts = ['--symfs', W + '/symfs-root/symfs', '--kallsyms', W + '/kallsyms']
def run(args, tty, extra_env=None, stdin=None):
    env = dict(os.environ, DSTACK_PROGRESS_MS='0', **(extra_env or {}))
    out = open(O + '/out', 'w+b')
    if tty:
        m, s = pty.openpty()
        p = subprocess.Popen([D] + args, stdout=out, stderr=s, stdin=stdin, env=env)
        os.close(s)
        err = b''
        while True:
            try: d = os.read(m, 65536)
            except OSError: break
            if not d: break
            err += d
        os.close(m)
    else:
        p = subprocess.Popen([D] + args, stdout=out, stderr=subprocess.PIPE, stdin=stdin, env=env)
        err = p.communicate()[1]
    p.wait()
    out.seek(0)
    return p.returncode, out.read(), err
errs, said = [], []
data = W + '/data/kernel.defer.data'
rc, plain, perr = run(['report', '--stdio'] + opts + ['-i', data], False)
rc2, out, err = run(['report', '--stdio'] + opts + ['-i', data], True)
lines = [l for l in err.split(b'\r\x1b[K') if l]
prog = [l for l in lines if re.match(rb'dstack report: [\d.]+ [kMG]?B of [\d.]+ [kMG]?B \(\d+%\), [\d.]+[kMG]? samples, [\d.]+ [kMG]?B/s$', l)]
if rc or rc2 or out != plain: errs.append('the output differs with a terminal on stderr')
if len(prog) < 2: errs.append('%d progress lines on a terminal: %r' % (len(prog), err[:200]))
elif not err.endswith(b'\r\x1b[K'): errs.append('the progress line is not wiped at the end')
if perr: errs.append('progress on a pipe: %r' % perr[:100])
if prog: said.append('terminal: %d updates, last "%s"' % (len(prog), prog[-1].decode()))
rc, out, err = run(['report', '--stdio', '-q'] + opts + ['-i', data], True)
# -q: no progress, and (as perf's) the report without its '#' lines
quiet = b''.join(l for l in plain.splitlines(True) if not l.startswith(b'#'))
if err or out != quiet: errs.append('-q on a terminal: %r, output %s' % (err[:100], 'as perf -q' if out == quiet else 'not the report without its # lines'))
# a pipe-mode input: bytes, no total; the export commands too
rc, out, err = run(['pprof', '-o', O + '/p.pb.gz'] + opts + ['-i', '-'], True, stdin=open(W + '/data/pipe.defer.data', 'rb'))
pp = [l for l in err.split(b'\r\x1b[K') if l.startswith(b'dstack pprof: ')]
if rc or not pp or b' of ' in pp[-1] or not re.search(rb'samples, [\d.]+ [kMG]?B/s$', pp[-1]): errs.append('pprof from a pipe: %r' % err[:160])
else: said.append('pipe input: "%s"' % pp[-1].decode())
# the commands that run a session themselves: converting (inject) and counting (stat)
for cmd, args in (('inject', ['inject', '--merge', '-o', O + '/inj.data']), ('stat', ['stat'])):
    rc, out, err = run(args + ['-i', data], True)
    got = [l for l in err.split(b'\r\x1b[K') if l]
    pr = [l for l in got if re.match(rb'dstack %s: [\d.]+ [kMG]?B of [\d.]+ [kMG]?B \(\d+%%\), [\d.]+[kMG]? samples, [\d.]+ [kMG]?B/s$' % cmd.encode(), l)]
    rest = [l for l in got if l not in pr]
    # inject's own summary line comes after the wiped progress, whole
    if rc or len(pr) < 2 or any(b'%' in l and b'samples,' in l for l in rest):
        errs.append('%s on a terminal: exit %d, %d progress lines: %r' % (cmd, rc, len(pr), err[-200:]))
    else:
        said.append('%s: %d updates' % (cmd, len(pr)))
    rc, out, err = run(args + ['-q', '-i', data], True)
    if rc or re.search(rb'\(\d+%\)', err): errs.append('%s -q on a terminal: %r' % (cmd, err[:100]))
print('; '.join(errs) or '; '.join(said) + '; none with -q or on a pipe, same output')
sys.exit(1 if errs else 0)
PY
); then ok "progress: $res"; else bad "progress: $res"; fi
}
progress_suite
