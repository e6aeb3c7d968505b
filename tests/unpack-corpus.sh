#!/bin/sh
# Unpack the bundled corpus (recordings, binaries, kallsyms) into DIR once.
set -eu
WORK=$1
CORPUS=$(cd "$(dirname "$0")" && pwd)/corpus
[ -f "$WORK/.unpacked" ] && exit 0
mkdir -p "$WORK/data" "$WORK/out" "$WORK/symfs-root"
for f in "$CORPUS"/data/*.zst; do
	b=$(basename "$f" .zst)
	zstd -q -d -f "$f" -o "$WORK/data/$b"
done
zstd -q -d -f "$CORPUS/kallsyms.zst" -o "$WORK/kallsyms"
zstd -q -dc "$CORPUS/symfs.tar.zst" | tar xf - -C "$WORK/symfs-root"
touch "$WORK/.unpacked"
