#!/usr/bin/env node
// native-vector-store 0.4.0 in `quarry-bench vectors`: loadDir of a directory of its JSON files
// (arrays of {id, text, metadata: {embedding}}), the first answer, then every query one at a time
// (search(q, k), a brute-force scan with OpenMP threads: OMP_NUM_THREADS=1 for one thread).
// Prints JSON lines: a `load` record and an `exact` record with every query's ids (quarry-bench
// computes the recall).
//
//   node scripts/vectors-nvs.js ADDON.node DIR QUERIES.f32 NQ DIMS K OUT.jsonl
//
// Records go to OUT.jsonl, not stdout: the addon's C++ code prints to stdout too, and its
// buffered output can land inside a line of ours.
'use strict';
const fs = require('fs');

const [addon, dir, queriesPath, nqS, dimsS, kS, outPath] = process.argv.slice(2);
fs.writeFileSync(outPath, '');
const emit = (rec) => fs.appendFileSync(outPath, JSON.stringify(rec) + '\n');
const nq = Number(nqS);
const dims = Number(dimsS);
const k = Number(kS);
const { VectorStore } = require(addon);

const buf = fs.readFileSync(queriesPath);
const queries = [];
for (let i = 0; i < nq; i++) {
  const q = new Float32Array(dims);
  for (let j = 0; j < dims; j++) q[j] = buf.readFloatLE((i * dims + j) * 4);
  queries.push(q);
}

const files = fs.readdirSync(dir).filter((f) => f.endsWith('.json')).length;
const t0 = process.hrtime.bigint();
const store = new VectorStore(dims);
store.loadDir(dir);
const loaded = Number(process.hrtime.bigint() - t0) / 1e9;
store.search(queries[0], k);
const first = Number(process.hrtime.bigint() - t0) / 1e9;
const docs = typeof store.size === 'function' ? store.size() : null;
const threads = process.env.OMP_NUM_THREADS || 'all';
emit({
  engine: 'nvs', op: 'load', docs, files, seconds_to_commit: loaded, seconds_to_first_answer: first,
  threads, note: 'loadDir (one reader, simdjson parser threads, finalize), one search; in memory, nothing written',
});

for (let i = 0; i < Math.min(20, nq); i++) store.search(queries[i], k);
const lat = [];
const ids = [];
for (let i = 0; i < nq; i++) {
  const t = process.hrtime.bigint();
  const hits = store.search(queries[i], k);
  lat.push(Number(process.hrtime.bigint() - t) / 1000);
  ids.push(hits.map((h) => String(h.id)));
}
const sorted = [...lat].sort((a, b) => a - b);
const pct = (p) => sorted[Math.max(1, Math.min(sorted.length, Math.ceil((p / 100) * sorted.length))) - 1];
const sum = lat.reduce((a, b) => a + b, 0);
emit({
  engine: 'nvs', op: 'exact', version: '0.4.0', p50_us: pct(50), p99_us: pct(99), mean_us: sum / nq,
  qps: nq / (sum / 1e6), ids,
});
