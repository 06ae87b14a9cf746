#!/usr/bin/env node
// Runs a model in onnxruntime-node: the oracle and peer of onnxtool's tests and benchmarks.
//
//   node ort_run.js MODEL [--input NAME=FILE.npy]... [--output-dir DIR] [--threads N]
//                   [--benchmark N [--against MODEL2]] [--no-spin]
//                   [--level disabled|basic|extended|layout|all]
//                   [--optimized-model OUT] [--json]
//   node ort_run.js --batch JOBS.json [--threads N] [--level L]
//
// - Inputs and outputs are .npy files (format 1.0-3.0, little-endian, C order): float32, float64,
//   float16, int8, uint8, int16, uint16, int32, uint32, int64, uint64, bool. Outputs are written
//   as DIR/<output name, characters outside [A-Za-z0-9_.-] replaced by _>.npy, as `onnxtool run`
//   names them.
// - --threads N sets intraOpNumThreads (0, the default: onnxruntime's choice, one per core);
//   inter-op parallelism is off (sequential execution), as in onnxtool.
// - --benchmark N times N runs after one warm-up run, exactly like `onnxtool run --benchmark`,
//   and reports the same statistics: median, min and p90, where the q-quantile of the sorted
//   times t[0..n-1] is t[min(n-1, floor(q*(n-1) + 0.5))]. Timed runs write into output tensors
//   allocated once, as a C/C++ caller's would (no copy into a fresh JS buffer per run).
// - --against MODEL2 (with --benchmark) times MODEL2 on the same inputs in the same process, its
//   runs alternating with MODEL's, so that a shared machine's drift slows both alike: the ratio
//   of the two medians is what to compare (JSON: "against_latency_ms").
// - --no-spin stops idle intra-op threads from spin-waiting (session.intra_op.allow_spinning=0).
//   On a 2-core machine, 2 spinning threads compete with node's own threads and a run's time
//   jumps between two levels (PaddleOCR cls: 1.6 or 6 ms for the same model); without spinning
//   the medians repeat within a few percent.
// - --level sets graphOptimizationLevel (default all, onnxruntime's own default); "disable" and
//   "none" mean disabled.
// - --optimized-model OUT saves the model as onnxruntime optimized it at --level
//   (optimizedModelFilePath); without inputs the script stops after loading.
// - --json prints {"outputs": [{"name", "dtype", "shape", "file"}], "latency_ms": {"median",
//   "min", "p90", "runs"} or null, "threads": n}; otherwise one line per output and the latency.
//
// - --batch runs many models in one process (the suite-wide tests: one node start-up, not one
//   per model). JOBS.json is a list of {"model", "inputs": {NAME: FILE.npy}, "output_dir"} and
//   optionally "level" (that job's --level) and "optimized_model" (that job's --optimized-model:
//   without inputs the job stops after loading); for each job one JSON line is printed: {"model", "ok", "error" (first line, when not ok),
//   "outputs": [{"name", "file"}]}. A job that fails does not stop the others; exit 0.
//
// onnxruntime-node is found in $ONNXTOOL_ORT_DIR, else $ONNXTOOL_CACHE_DIR/ort, else
// <repository>/.cache/ort (where testdata/fetch_models.sh installs it). Errors: one line on
// stderr, exit 2 for bad usage or unreadable input, 1 when onnxruntime fails.
'use strict';
const fs = require('fs');
const path = require('path');

class UsageError extends Error {}

function ortDir() {
  if (process.env.ONNXTOOL_ORT_DIR) return process.env.ONNXTOOL_ORT_DIR;
  const cache = process.env.ONNXTOOL_CACHE_DIR || path.join(__dirname, '..', '..', '.cache');
  return path.join(cache, 'ort');
}

// descr -> [onnxruntime type, typed array]. '|' and '<' forms of one-byte types are both read.
const DTYPES = {
  '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array], '<f2': ['float16', Uint16Array],
  '|i1': ['int8', Int8Array], '|u1': ['uint8', Uint8Array], '<i2': ['int16', Int16Array],
  '<u2': ['uint16', Uint16Array], '<i4': ['int32', Int32Array], '<u4': ['uint32', Uint32Array],
  '<i8': ['int64', BigInt64Array], '<u8': ['uint64', BigUint64Array], '|b1': ['bool', Uint8Array],
};

function readNpy(file) {
  let buf;
  try {
    buf = fs.readFileSync(file);
  } catch (e) {
    throw new UsageError(`${file}: cannot read (${e.code || e.message})`);
  }
  const bad = why => new UsageError(`${file}: ${why}`);
  if (buf.length < 10 || buf.toString('latin1', 0, 6) !== '\x93NUMPY') throw bad('not a .npy file (bad magic)');
  const major = buf[6];
  if (major < 1 || major > 3) throw bad(`unsupported .npy format version ${major}`);
  const start = major === 1 ? 10 : 12;
  if (buf.length < start) throw bad('truncated .npy header');
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  if (start + headerLen > buf.length) throw bad(`.npy header length ${headerLen} is invalid`);
  const header = buf.toString(major === 3 ? 'utf8' : 'latin1', start, start + headerLen);
  const descrMatch = /'descr':\s*'([^']+)'/.exec(header);
  const shapeMatch = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!descrMatch || !shapeMatch) throw bad('malformed .npy header');
  if (!/'fortran_order':\s*False/.test(header)) throw bad('Fortran-order .npy data is not supported');
  let descr = descrMatch[1];
  if (descr[0] === '=') descr = '<' + descr.slice(1);
  if (/^[<>|=]?[iub]1$/.test(descr)) descr = '|' + descr.slice(-2);
  const spec = DTYPES[descr];
  if (!spec) throw bad(`.npy dtype '${descr}' is not supported`);
  const shape = shapeMatch[1].split(',').map(s => s.trim()).filter(s => s.length).map(s => {
    if (!/^\d+$/.test(s)) throw bad(`malformed .npy shape (${shapeMatch[1]})`);
    return Number(s);
  });
  const [type, Ctor] = spec;
  const n = shape.reduce((a, b) => a * b, 1);
  const bytes = n * Ctor.BYTES_PER_ELEMENT;
  const data = buf.subarray(start + headerLen);
  if (!Number.isSafeInteger(bytes) || data.length < bytes) throw bad(`.npy data is shorter than its shape (${shape}) needs`);
  const copy = new ArrayBuffer(bytes);  // aligned, owned storage
  new Uint8Array(copy).set(data.subarray(0, bytes));
  return [type, new Ctor(copy), shape];
}

function writeNpy(file, tensor) {
  const entry = Object.entries(DTYPES).find(([, [t]]) => t === tensor.type);
  if (!entry) throw new Error(`output type ${tensor.type} cannot be written as .npy`);
  const shape = tensor.dims.length === 1 ? `(${tensor.dims[0]},)` : `(${tensor.dims.join(', ')})`;
  let header = `{'descr': '${entry[0]}', 'fortran_order': False, 'shape': ${shape}, }`;
  header += ' '.repeat((64 - ((10 + header.length + 1) % 64)) % 64) + '\n';
  const major = header.length > 65535 ? 2 : 1;
  const head = Buffer.alloc(major === 1 ? 10 : 12);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = major;
  head[7] = 0;
  if (major === 1) head.writeUInt16LE(header.length, 8);
  else head.writeUInt32LE(header.length, 8);
  let data = tensor.data;
  if (tensor.type === 'bool' && !(data instanceof Uint8Array)) data = Uint8Array.from(data, v => (v ? 1 : 0));
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const tmp = `${file}.tmp`;
  fs.writeFileSync(tmp, Buffer.concat([head, Buffer.from(header, 'latin1'), body]));
  fs.renameSync(tmp, file);
}

function safeName(name) { return name.replace(/[^A-Za-z0-9_.-]/g, '_'); }

// The q-quantile of sorted times, as onnxtool run computes it.
function quantile(sorted, q) {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * (sorted.length - 1) + 0.5))];
}

const LEVELS = { disable: 'disabled', disabled: 'disabled', none: 'disabled', basic: 'basic', extended: 'extended',
  layout: 'layout', all: 'all' };

function parseArgs(args) {
  const opts = { inputs: [], threads: 0, benchmark: 0, level: 'all', json: false };
  const count = (flag, text) => {
    if (!/^\d+$/.test(text)) throw new UsageError(`${flag} expects a non-negative integer, got '${text}'`);
    return Number(text);
  };
  for (let i = 0; i < args.length; ++i) {
    const a = args[i];
    const next = () => { if (i + 1 >= args.length) throw new UsageError(`${a} needs a value`); return args[++i]; };
    if (a === '--input') opts.inputs.push(next());
    else if (a === '--output-dir') opts.outputDir = next();
    else if (a === '--threads') opts.threads = count(a, next());
    else if (a === '--benchmark') opts.benchmark = count(a, next());
    else if (a === '--against') opts.against = next();
    else if (a === '--no-spin') opts.noSpin = true;
    else if (a === '--level') {
      const l = next();
      if (!LEVELS[l]) throw new UsageError(`--level expects one of ${Object.keys(LEVELS).join(', ')}, got '${l}'`);
      opts.level = LEVELS[l];
    } else if (a === '--optimized-model') opts.optimized = next();
    else if (a === '--json') opts.json = true;
    else if (a === '--batch') opts.batch = next();
    else if (a.startsWith('--')) throw new UsageError(`unknown option ${a}`);
    else if (!opts.model) opts.model = a;
    else throw new UsageError(`unexpected argument ${a}`);
  }
  if (!opts.model && !opts.batch) throw new UsageError('usage: ort_run.js MODEL [--input NAME=FILE.npy]... [--output-dir DIR] [--threads N] [--benchmark N [--against MODEL2]] [--no-spin] [--level L] [--optimized-model OUT] [--json]');
  if (opts.against && !opts.benchmark) throw new UsageError('--against needs --benchmark N');
  return opts;
}

function loadOrt() {
  const where = ortDir();
  try {
    return require(path.join(where, 'node_modules', 'onnxruntime-node'));
  } catch (e) {
    throw new UsageError(`onnxruntime-node is not installed in ${where} (run testdata/fetch_models.sh): ${e.message.split('\n')[0]}`);
  }
}

async function runBatch(ort, opts) {
  let jobs;
  try {
    jobs = JSON.parse(fs.readFileSync(opts.batch, 'utf8'));
  } catch (e) {
    throw new UsageError(`${opts.batch}: cannot read the job list (${e.message.split('\n')[0]})`);
  }
  const sessionOptions = {
    intraOpNumThreads: opts.threads, interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: opts.level,
  };
  if (opts.noSpin) sessionOptions.extra = { session: { intra_op: { allow_spinning: '0' } } };
  for (const job of jobs) {
    const line = { model: job.model, ok: true, outputs: [] };
    try {
      const feeds = {};
      for (const [name, file] of Object.entries(job.inputs || {})) {
        const [type, data, shape] = readNpy(file);
        feeds[name] = new ort.Tensor(type, type === 'bool' ? Array.from(data, v => v !== 0) : data, shape);
      }
      let options = sessionOptions;
      if (job.level !== undefined) {  // this job's own optimization level
        if (!LEVELS[job.level]) throw new Error(`job level expects one of ${Object.keys(LEVELS).join(', ')}, got '${job.level}'`);
        options = { ...sessionOptions, graphOptimizationLevel: LEVELS[job.level] };
      }
      if (job.optimized_model) options = { ...options, optimizedModelFilePath: job.optimized_model };
      const session = await ort.InferenceSession.create(job.model, options);
      if (job.optimized_model && !Object.keys(feeds).length) {
        await session.release();
        console.log(JSON.stringify(line));
        continue;
      }
      const results = await session.run(feeds);
      if (job.output_dir && !fs.existsSync(job.output_dir)) fs.mkdirSync(job.output_dir, { recursive: true });
      for (const name of session.outputNames) {
        const file = job.output_dir ? path.join(job.output_dir, safeName(name) + '.npy') : null;
        if (file) writeNpy(file, results[name]);
        line.outputs.push({ name, file });
      }
      await session.release();
    } catch (e) {
      line.ok = false;
      line.error = String(e && e.message ? e.message : e).split('\n')[0];
    }
    console.log(JSON.stringify(line));
  }
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const ort = loadOrt();
  if (opts.batch) return runBatch(ort, opts);
  const feeds = {};
  for (const spec of opts.inputs) {
    const eq = spec.indexOf('=');
    if (eq <= 0) throw new UsageError(`--input expects NAME=FILE, got '${spec}'`);
    const name = spec.slice(0, eq);
    if (name in feeds) throw new UsageError(`input '${name}' is given twice`);
    const [type, data, shape] = readNpy(spec.slice(eq + 1));
    feeds[name] = new ort.Tensor(type, type === 'bool' ? Array.from(data, v => v !== 0) : data, shape);
  }
  if (opts.outputDir && !fs.existsSync(opts.outputDir)) fs.mkdirSync(opts.outputDir, { recursive: true });

  const sessionOptions = {
    intraOpNumThreads: opts.threads, interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: opts.level,
  };
  if (opts.noSpin) sessionOptions.extra = { session: { intra_op: { allow_spinning: '0' } } };
  if (opts.optimized) sessionOptions.optimizedModelFilePath = opts.optimized;
  const session = await ort.InferenceSession.create(opts.model, sessionOptions);
  if (!opts.inputs.length && opts.optimized) return;

  let results = await session.run(feeds);  // the warm-up run; its outputs are the ones written
  delete sessionOptions.optimizedModelFilePath;
  const other = opts.against ? await ort.InferenceSession.create(opts.against, sessionOptions) : null;
  if (other) await other.run(feeds);
  // Timed runs write into output tensors allocated once (the warm-up run gave their types and
  // shapes): otherwise the binding copies every output into a fresh JS buffer each run, a cost
  // (about 0.6 ms per MiB) a C/C++ caller of onnxruntime does not pay. Strings cannot be
  // pre-allocated; a model with a string output is timed with the copy.
  const fetchesFor = (s, warm) => {
    const fetches = {};
    for (const name of s.outputNames) {
      const t = warm[name];
      if (!t || t.type === 'string' || !t.data || !t.data.constructor) return null;
      fetches[name] = new ort.Tensor(t.type, new t.data.constructor(t.data.length), t.dims);
    }
    return fetches;
  };
  // onnxruntime checks pre-allocated outputs against the model's declared shapes: a model
  // whose declarations are wrong (ddddocr_rec declares rank 2 for a rank-3 output) is refused
  // that way, and timed with the copy.
  const usable = async (s, fetches) => {
    if (!fetches) return null;
    try {
      await s.run(feeds, fetches);
      return fetches;
    } catch (e) {
      return null;
    }
  };
  const preallocated = new Map();
  if (opts.benchmark) {
    preallocated.set(session, await usable(session, fetchesFor(session, results)));
    if (other) preallocated.set(other, await usable(other, fetchesFor(other, await other.run(feeds))));
  }
  const timed = async s => {
    const fetches = preallocated.get(s);
    const t0 = process.hrtime.bigint();
    if (fetches) await s.run(feeds, fetches);
    else await s.run(feeds);
    return Number(process.hrtime.bigint() - t0) / 1e6;
  };
  const times = [];
  const otherTimes = [];
  for (let i = 0; i < opts.benchmark; ++i) {
    times.push(await timed(session));
    if (other) otherTimes.push(await timed(other));
  }
  times.sort((a, b) => a - b);
  otherTimes.sort((a, b) => a - b);

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
  results = null;
  const stats = t => (t.length ? { median: quantile(t, 0.5), min: t[0], p90: quantile(t, 0.9), runs: t.length } : null);
  const latency = stats(times);
  const againstLatency = stats(otherTimes);
  if (opts.json) {
    const doc = { outputs, latency_ms: latency, threads: opts.threads };
    if (other) doc.against_latency_ms = againstLatency;
    console.log(JSON.stringify(doc));
    return;
  }
  for (const o of outputs) console.log(`${o.name}: ${o.dtype} [${o.shape.join(', ')}]${o.file ? `  -> ${o.file}` : ''}`);
  if (latency) {
    console.log(`latency over ${latency.runs} runs: median ${latency.median.toFixed(3)} ms, ` +
                `min ${latency.min.toFixed(3)} ms, p90 ${latency.p90.toFixed(3)} ms`);
  }
  if (againstLatency) {
    console.log(`${opts.against}, runs alternating: median ${againstLatency.median.toFixed(3)} ms, ` +
                `min ${againstLatency.min.toFixed(3)} ms, p90 ${againstLatency.p90.toFixed(3)} ms`);
  }
}

main().catch(e => {
  console.error(`ort_run.js: ${String(e && e.message ? e.message : e).split('\n')[0]}`);
  process.exit(e instanceof UsageError ? 2 : 1);
});
