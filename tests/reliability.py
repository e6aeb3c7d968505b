#!/usr/bin/env python3
"""Inputs for tests/suites/64-outputs.sh (reliability of every command).

usage: reliability.py empty-stack PIPE_IN OUT
  OUT: the pipe-mode recording PIPE_IN with its first sample's callchain
  emptied (nr 0, the record shortened to match): a sample with no frames
  at all, first in the file (pprof's protobuf writer once copied from a
  NULL buffer for it).
usage: reliability.py closed-pipe ign|dfl CMD ARGS...
  runs CMD with its stdout a pipe whose reader is already gone, SIGPIPE
  ignored (as a parent process may leave it) or at its default; prints
  "status N" or "signal N" on stderr, as the shell would not say which.
usage: reliability.py maxrss CMD ARGS...
  runs CMD (stdout to /dev/null) and prints "status N maxrss KB" on stderr
"""
import resource
import signal
import subprocess
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostile import PerfFile, ST  # noqa: E402


def empty_stack(src, dst):
    raw = open(src, 'rb').read()
    f = PerfFile(raw)
    assert f.pipe, 'a pipe-mode recording: records can change size without a header to fix'
    # the callchain must be the last field for the record to end right after nr
    assert not f.sample_type & ~(ST['IP'] | ST['TID'] | ST['TIME'] | ST['ID'] | ST['CPU'] |
                                 ST['PERIOD'] | ST['CALLCHAIN'] | ST['STREAM_ID'] | ST['IDENTIFIER'])
    off, _, size = f.of_type(9)[0]
    nr_at = f.sample_field(off, 'CALLCHAIN')
    rec = bytearray(raw[off:nr_at + 8])
    struct.pack_into('<Q', rec, nr_at - off, 0)
    struct.pack_into('<H', rec, 6, len(rec))
    open(dst, 'wb').write(raw[:off] + bytes(rec) + raw[off + size:])


def closed_pipe(disp, argv):
    r, w = os.pipe()
    os.close(r)
    pid = os.fork()
    if pid == 0:
        os.dup2(w, 1)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN if disp == 'ign' else signal.SIG_DFL)
        try:
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    os.close(w)
    _, st = os.waitpid(pid, 0)
    if os.WIFSIGNALED(st):
        sys.stderr.write('signal %d\n' % os.WTERMSIG(st))
    else:
        sys.stderr.write('status %d\n' % os.WEXITSTATUS(st))


def maxrss(argv):
    with open(os.devnull, 'wb') as null:
        rc = subprocess.call(argv, stdout=null)
    kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    sys.stderr.write('status %d maxrss %d\n' % (rc, kb))


if __name__ == '__main__':
    if sys.argv[1] == 'maxrss':
        maxrss(sys.argv[2:])
    elif sys.argv[1] == 'closed-pipe':
        closed_pipe(sys.argv[2], sys.argv[3:])
    elif sys.argv[1] == 'empty-stack':
        empty_stack(sys.argv[2], sys.argv[3])
    else:
        sys.exit('unknown: ' + sys.argv[1])
