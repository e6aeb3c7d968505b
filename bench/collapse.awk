# Collapse `perf script` output into folded stacks ("comm;outer;...;inner count"),
# roughly like FlameGraph's stackcollapse-perf.pl --kernel: the floor that the
# `dstack folded` row is timed against.  Not byte-compatible; only the sample
# total is compared.
/^[^ \t]/ { comm = $1; n = 0; next }
/^[ \t]+[0-9a-f]+ / {
	sym = $2; sub(/\+0x[0-9a-f]+$/, "", sym)
	if (sym == "[unknown]") { dso = $NF; gsub(/[()]/, "", dso); n2 = split(dso, p, "/"); sym = "[" p[n2] "]" }
	if ($NF ~ /kernel\.kallsyms/) sym = sym "_[k]"
	f[++n] = sym; next
}
/^$/ {
	if (comm == "") next
	s = comm
	for (i = n; i >= 1; i--) s = s ";" f[i]
	c[s]++; comm = ""; n = 0
}
END { for (s in c) print s, c[s] }
