#!/usr/bin/env node
// Runs a model in onnxruntime-node: the oracle and peer of onnxtool's tests and benchmarks.
//
//   node ort_run.js MODEL [--input NAME=FILE.npy]... [--output-dir DIR] [--threads N]
//                   [--benchmark N] [--level disabled|basic|extended|all]
//                   [--optimized-model OUT] [--json]
//
// Inputs and outputs are .npy files (float32, float64, float16, int8, uint8, int32, int64, bool);
// outputs are written as DIR/<name with characters outside [A-Za-z0-9_.-] replaced by _>.npy.
// --benchmark N times N runs after one warm-up and prints the median, min and p90 in ms, as
// `onnxtool run --benchmark` does. --optimized-model saves the model after onnxruntime's graph
// optimizations at --level (and exits after loading when no input is given).
'use strict';
const fs = require('fs');
const path = require('path');

const ORT_DIR = process.env.ONNXTOOL_ORT_DIR || path.join(__dirname, '..', '..', '.cache', 'ort');
const ort = require(path.join(ORT_DIR, 'node_modules', 'onnxruntime-node'));

const DTYPES = {
  '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array], '<f2': ['float16', Uint16Array],
  '|i1': ['int8', Int8Array], '|u1': ['uint8', Uint8Array], '<i4': ['int32', Int32Array],
  '<i8': ['int64', BigInt64Array], '|b1': ['bool', Uint8Array],
};

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(`${file}: not a .npy file`);
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + headerLen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const shapeText = /'shape':\s*\(([^)]*)\)/.exec(header)[1];
  if (/'fortran_order':\s*True/.test(header)) throw new Error(`${file}: fortran_order arrays are not supported`);
  const shape = shapeText.split(',').map(s => s.trim()).filter(s => s.length).map(Number);
  const spec = DTYPES[descr];
  if (!spec) throw new Error(`${file}: dtype ${descr} is not supported`);
  const [type, Ctor] = spec;
  const data = buf.subarray(start + headerLen);
  const n = shape.reduce((a, b) => a * b, 1);
  const copy = new ArrayBuffer(n * Ctor.BYTES_PER_ELEMENT);
  new Uint8Array(copy).set(data.subarray(0, n * Ctor.BYTES_PER_ELEMENT));
  let array = new Ctor(copy);
  if (type === 'bool') array = Uint8Array.from(array);
  return new ort.Tensor(type, type === 'bool' ? Array.from(array, v => v !== 0) : array, shape);
}

function writeNpy(file, tensor) {
  const entry = Object.entries(DTYPES).find(([, [t]]) => t === tensor.type);
  if (!entry) throw new Error(`output type ${tensor.type} cannot be written as .npy`);
  const descr = entry[0];
  const shape = tensor.dims.length === 1 ? `(${tensor.dims[0]},)` : `(${tensor.dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  const pad = 64 - ((10 + header.length + 1) % 64);
  header += ' '.repeat(pad % 64) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head[7] = 0;
  head.writeUInt16LE(header.length, 8);
  let data = tensor.data;
  if (tensor.type === 'bool') data = Uint8Array.from(data, v => (v ? 1 : 0));
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(header, 'latin1'), body]));
}

function safeName(name) { return name.replace(/[^A-Za-z0-9_.-]/g, '_'); }

async function main() {
  const args = process.argv.slice(2);
  const opts = { inputs: [], threads: 1, benchmark: 0, level: 'all', json: false };
  for (let i = 0; i < args.length; ++i) {
    const a = args[i];
    const next = () => { if (i + 1 >= args.length) throw new Error(`${a} needs a value`); return args[++i]; };
    if (a === '--input') opts.inputs.push(next());
    else if (a === '--output-dir') opts.outputDir = next();
    else if (a === '--threads') opts.threads = Number(next());
    else if (a === '--benchmark') opts.benchmark = Number(next());
    else if (a === '--level') opts.level = next();
    else if (a === '--optimized-model') opts.optimized = next();
    else if (a === '--json') opts.json = true;
    else if (!opts.model) opts.model = a;
    else throw new Error(`unexpected argument ${a}`);
  }
  if (!opts.model) throw new Error('usage: ort_run.js MODEL [--input NAME=FILE.npy]... (see the header)');
  const sessionOptions = {
    intraOpNumThreads: opts.threads, interOpNumThreads: 1, graphOptimizationLevel: opts.level,
    executionMode: 'sequential',
  };
  if (opts.optimized) sessionOptions.optimizedModelFilePath = opts.optimized;
  const session = await ort.InferenceSession.create(opts.model, sessionOptions);
  if (!opts.inputs.length && opts.optimized) return;
  const feeds = {};
  for (const spec of opts.inputs) {
    const eq = spec.indexOf('=');
    feeds[spec.slice(0, eq)] = readNpy(spec.slice(eq + 1));
  }
  let results = await session.run(feeds);
  const times = [];
  for (let i = 0; i < opts.benchmark; ++i) {
    const t0 = process.hrtime.bigint();
    results = await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((a, b) => a - b);
  const outputs = [];
  for (const name of session.outputNames) {
    const t = results[name];
    let file = null;
    if (opts.outputDir) {
      file = path.join(opts.outputDir, safeName(name) + '.npy');
      writeNpy(file, t);
    }
    outputs.push({ name, dtype: t.type, shape: t.dims, file });
  }
  const latency = times.length ? {
    median: times[Math.floor(times.length / 2)], min: times[0], p90: times[Math.min(times.length - 1, Math.floor(times.length * 0.9))],
  } : null;
  if (opts.json) console.log(JSON.stringify({ outputs, latency_ms: latency, threads: opts.threads }));
  else if (latency) console.log(`latency over ${times.length} runs: median ${latency.median.toFixed(3)} ms, min ${latency.min.toFixed(3)} ms, p90 ${latency.p90.toFixed(3)} ms`);
}

main().catch(e => { console.error(`ort_run.js: ${e.message.split('\n')[0]}`); process.exit(1); });
