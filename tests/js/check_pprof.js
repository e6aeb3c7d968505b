// Decode a dstack pprof file with the independent `pprof-format` decoder and
// print what the test compares: samples=N total=SUM types=... and the function names.
'use strict';
const fs = require('fs');
const zlib = require('zlib');
const { Profile } = require('pprof-format');

const buf = zlib.gunzipSync(fs.readFileSync(process.argv[2]));
const p = Profile.decode(buf);
const str = (i) => p.stringTable.strings[Number(i)];
let n = 0n, total = 0n;
const errs = [];
for (const s of p.sample) {
	n += BigInt(s.value[0]);
	total += BigInt(s.value[1]);
	if (s.locationId.length === 0) continue;
}
const locs = new Map(p.location.map((l) => [Number(l.id), l]));
const funcs = new Map(p.function.map((f) => [Number(f.id), f]));
const maps = new Map(p.mapping.map((m) => [Number(m.id), m]));
for (const s of p.sample) {
	for (const id of s.locationId) if (!locs.has(Number(id))) errs.push('sample refers to missing location ' + id);
	const keys = s.label.map((l) => str(l.key)).sort().join(',');
	if (keys !== 'comm,pid,tid' && keys !== 'comm,cpu,pid,tid') errs.push('sample labels ' + keys); // cpu: when recorded
}
// equal samples (same locations, same labels) are merged by dstack: none twice
const seen = new Set();
let dups = 0;
for (const s of p.sample) {
	const key = s.locationId.join(',') + '|' + s.label.map((l) => str(l.key) + '=' + str(l.str) + String(l.num)).sort().join(',');
	if (seen.has(key)) dups++;
	seen.add(key);
}
if (dups) errs.push(dups + ' samples repeat an earlier one (locations and labels)');
let inl = 0;
// a Function's filename is its source file (DWARF), else its binary's path
const mapFiles = new Set(p.mapping.map((m) => str(m.filename)));
let srcLines = 0;
for (const l of p.location) {
	for (const ln of l.line) if (Number(ln.line) > 0) srcLines++;
	if (!l.line.length) errs.push('location ' + l.id + ' has no lines');
	if (l.line.length > 1) inl++;
	for (const ln of l.line) if (!funcs.has(Number(ln.functionId))) errs.push('missing function ' + ln.functionId);
	const m = maps.get(Number(l.mappingId));
	if (Number(l.mappingId) && (!m || l.address < m.memoryStart || l.address >= m.memoryLimit))
		errs.push('location ' + l.id + ' outside its mapping');
	// a frame whose function names a binary must sit in that binary's mapping
	const outer = l.line.length ? funcs.get(Number(l.line[l.line.length - 1].functionId)) : null;
	const file = outer ? str(outer.filename) : '';
	if (file.startsWith('/') && mapFiles.has(file) && (!m || str(m.filename) !== file))
		errs.push('location ' + l.id + ' in ' + file + ' has mapping ' + (m ? str(m.filename) : 'none'));
}
const fileMaps = p.mapping.filter((m) => str(m.filename).startsWith('/'));
const withBid = fileMaps.filter((m) => /^[0-9a-f]{40}$/.test(str(m.buildId))).length;
if (str(0) !== '') errs.push('string_table[0] is not empty');
const names = [...new Set(p.function.map((f) => str(f.name)))];
const types = p.sampleType.map((t) => str(t.type) + '/' + str(t.unit)).join(',');
console.log(JSON.stringify({ samples: n.toString(), total: total.toString(), types,
	period_type: p.periodType ? str(p.periodType.type) + '/' + str(p.periodType.unit) : '',
	source_lines: srcLines,
	nr_samples: p.sample.length, locations: p.location.length, inlined_locations: inl,
	functions: p.function.length, mappings: p.mapping.length,
	file_mappings: fileMaps.length, build_ids: withBid,
	time: String(p.timeNanos), duration: String(p.durationNanos), errors: errs.slice(0, 5), names }));
