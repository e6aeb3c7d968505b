#!/bin/sh
# Builds the unwinder's test workloads into JOBDIR with the sid toolchain
# (gcc 16, binutils 2.47: SFrame v3) and the trixie one (binutils 2.44:
# SFrame v2), all without frame pointers.  Usage: build.sh SIDCC JOBDIR
set -eu
SIDCC=$1 J=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$J"
cp "$here/uw.c" "$here/uwxx.cc" "$here/badcfi.c" "$here/sf.c" "$here/vdso.c" "$here/run.sh" "$here/../../corpus/wl.c" "$J/"
cd "$J"
O="-O2 -g -fomit-frame-pointer"
"$SIDCC" $O -pthread -o uw uw.c
SID_TOOL=g++ "$SIDCC" $O -o uwxx uwxx.cc
"$SIDCC" -m32 -static $O -pthread -o uw32 uw.c
# a return address read into a data segment, i386 and x86-64
"$SIDCC" -m32 -static $O -o bc32 badcfi.c
"$SIDCC" -static $O -o bc64 badcfi.c
# most time in clock_gettime, in the vDSO: 64-bit, and i386 ([vdso32])
"$SIDCC" $O -o vd vdso.c
"$SIDCC" -m32 -static $O -o vd32 vdso.c
"$SIDCC" $O -Wa,--gsframe -o sf3 sf.c
KVM_SUITE=trixie "$SIDCC" $O -Wa,--gsframe -o sf2 sf.c
# the corpus workload (frame pointers) for the hybrid runs, and dstack
"$SIDCC" -O2 -g -fno-omit-frame-pointer -pthread -o wl wl.c
[ -z "${DSTACK:-}" ] || cp "$DSTACK" dstack
# copies with the DWARF unwind tables removed: only .sframe is left
for v in 2 3; do
	SID_TOOL=objcopy "$SIDCC" --remove-section .eh_frame --remove-section .eh_frame_hdr \
		--remove-section .debug_frame sf$v sf${v}x
done
