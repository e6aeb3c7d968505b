# What the library exports is its API, and only its API.
#
# The API is the functions include/dstack/*.h declares (as gcc's -aux-info
# lists them).  The suite builds the shared object (make BUILD/libdstack.so,
# linked with lib/libdstack.map) and checks:
#  - its dynamic symbols are exactly those functions (none missing from the
#    version script, nothing internal leaking out);
#  - in the static archive, which has no such filter, no internal function
#    looks public: a global that is not API must not carry the API's ds_
#    prefix, and must carry the internal dsi_ one (a static archive's
#    globals share the namespace of every program that links it);
#  - a program linked against the shared object reads a recording as the
#    same program linked statically does.
# The release pass only: this is about names, not about running under the
# sanitizers.
api_suite() {
	if [ "$DSTACK" != "$ROOT/$BUILD/dstack" ]; then
		return
	fi
	local o="$WORK/out/api" so="$ROOT/$BUILD/libdstack.so" ar="$ROOT/$BUILD/libdstack.a"
	mkdir -p "$o"
	if ! make -C "$ROOT" --no-print-directory BUILD="$BUILD" "$BUILD/libdstack.so" >"$o/make.log" 2>&1; then
		bad "api: make $BUILD/libdstack.so: $(tail -3 "$o/make.log")"; return
	fi

	# the declarations of the public headers
	local h
	for h in "$ROOT"/include/dstack/*.h; do echo "#include \"dstack/${h##*/}\""; done >"$o/all.c"
	if ! gcc -std=c11 -D_GNU_SOURCE -I"$ROOT/include" -fsyntax-only -aux-info "$o/aux" "$o/all.c" 2>"$o/cc.err"; then
		bad "api: the public headers do not compile on their own: $(head -3 "$o/cc.err")"; return
	fi
	grep -E '^/\* ([^ ]*/)?include/dstack/[^ ]*\.h:' "$o/aux" | sed -E 's/.*[ *]([A-Za-z_][A-Za-z0-9_]*) \(.*/\1/' |
		sort -u >"$o/api"

	nm -D --defined-only "$so" | awk '{ print $NF }' | sed 's/@.*//' | sort -u >"$o/exported"
	local missing extra
	missing=$(comm -23 "$o/api" "$o/exported" | tr '\n' ' ')
	extra=$(comm -13 "$o/api" "$o/exported" | tr '\n' ' ')
	if [ -s "$o/api" ] && [ -z "$missing$extra" ]; then
		ok "api: libdstack.so exports exactly the $(wc -l <"$o/api") functions include/dstack/*.h declares"
	else
		bad "api: libdstack.so exports${missing:+, missing: $missing}${extra:+, beyond the headers: $extra} (lib/libdstack.map)"
	fi

	# the static archive: every global is API or dsi_
	nm -g --defined-only "$ar" | awk 'NF == 3 { print $3 }' | sort -u >"$o/globals"
	local looks_public unprefixed
	looks_public=$(comm -13 "$o/api" "$o/globals" | grep '^ds_' | tr '\n' ' ')
	unprefixed=$(comm -13 "$o/api" "$o/globals" | grep -v -e '^ds_' -e '^dsi_' | tr '\n' ' ')
	if [ -z "$looks_public" ]; then
		ok "api: no internal global of libdstack.a carries the API's ds_ prefix"
	else
		bad "api: internal functions with the API's ds_ prefix (rename them dsi_): $looks_public"
	fi
	if [ -z "$unprefixed" ]; then
		ok "api: every internal global of libdstack.a carries dsi_ ($(comm -13 "$o/api" "$o/globals" | wc -l) of them)"
	else
		bad "api: internal globals of libdstack.a without the dsi_ prefix: $unprefixed"
	fi

	# a program of the API's, linked both ways
	cat >"$o/count.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include "dstack/log.h"
#include "dstack/reader.h"

int main(int argc, char **argv)
{
	struct ds_reader *r = ds_reader__open(argv[argc - 1]);
	struct ds_record rec;
	unsigned long n = 0, bytes = 0;
	int rc;

	if (!r) {
		printf("open: %s\n", ds_errmsg());
		return 1;
	}
	while ((rc = ds_reader__next(r, &rec)) > 0) {
		n++;
		bytes += rec.hdr->size;
	}
	printf("%lu records, %lu bytes, %zu events, last %d\n", n, bytes, ds_reader__nr_evsels(r), rc);
	ds_reader__close(r);
	return 0;
}
EOF
	local cf=(-std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -I"$ROOT/include")
	local data="$ROOT/examples/cpu.defer.data"
	if ! gcc "${cf[@]}" -o "$o/count-so" "$o/count.c" -L"$ROOT/$BUILD" -Wl,-rpath,"$ROOT/$BUILD" -ldstack 2>"$o/cc.err" ||
	   ! gcc "${cf[@]}" -o "$o/count-a" "$o/count.c" "$ar" -lelf -ldw -lzstd -lz -liberty -lm -lpthread 2>>"$o/cc.err"; then
		bad "api: a program of the API's does not link: $(head -3 "$o/cc.err")"; return
	fi
	local got want
	got=$("$o/count-so" "$data" 2>&1)
	want=$("$o/count-a" "$data" 2>&1)
	if [ -n "$want" ] && [ "$got" = "$want" ] && ldd "$o/count-so" | grep -q "libdstack.so => $ROOT/$BUILD/"; then
		ok "api: a program linked against libdstack.so reads as the static one does ($got)"
	else
		bad "api: linked against libdstack.so: \"$got\"; statically: \"$want\""
	fi
}
api_suite
