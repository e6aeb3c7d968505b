#!/bin/sh
# Install the Debian (bookworm) packages dstack builds and tests with.
# Only missing packages are installed; as root, or through sudo.
set -eu
pkgs="make gcc libc6-dev libelf-dev libdw-dev libzstd-dev zlib1g-dev zstd python3 libstdc++-12-dev libiberty-dev clang libclang-rt-14-dev"
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# test-only: headless Chromium renders the flame graph; node and npm run the
# independent pprof decoder and speedscope's schema check (tests/js).  A node
# from elsewhere (it ships its own npm) is kept as it is.
# debuginfod: its client (debuginfod-find, through libdebuginfod) fetches for
# --debuginfod, its server is what the test fetches from; golang-go: go tool
# pprof reads the pprof exports in the tests.
for p in chromium debuginfod libdebuginfod-dev golang-go; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
command -v node >/dev/null || missing="$missing nodejs"
command -v npm >/dev/null || missing="$missing npm"
[ -z "$missing" ] && exit 0
echo "install-deps: installing$missing" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
