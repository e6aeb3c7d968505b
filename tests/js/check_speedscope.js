// Validate a speedscope file against speedscope's own JSON schema (shipped in
// its npm package) with ajv, and print per-file totals for the test to compare.
'use strict';
const fs = require('fs');
const path = require('path');
const Ajv = require('ajv');

const schemaPath = path.join(path.dirname(require.resolve('speedscope/package.json')), 'dist/release/file-format-schema.json');
const schema = JSON.parse(fs.readFileSync(schemaPath, 'utf8'));
delete schema.$schema; // draft-07 meta-schema id; ajv 8 knows draft-07 without it
const ajv = new Ajv({ allErrors: true, strict: false });
const validate = ajv.compile(schema);
const doc = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const valid = validate(doc);
let samples = 0, weight = 0n;
const errs = valid ? [] : validate.errors.slice(0, 5).map((e) => e.instancePath + ' ' + e.message);
for (const p of doc.profiles || []) {
	samples += p.samples.length;
	if (p.samples.length !== p.weights.length) errs.push(p.name + ': samples and weights differ in length');
	for (const w of p.weights) weight += BigInt(w);
	for (const s of p.samples) for (const f of s) if (f >= doc.shared.frames.length) errs.push(p.name + ': bad frame index ' + f);
}
console.log(JSON.stringify({ valid, samples, weight: weight.toString(), profiles: (doc.profiles || []).length,
	names: (doc.profiles || []).map((p) => p.name).slice(0, 3), frames: doc.shared.frames.length, errors: errs.slice(0, 5) }));
