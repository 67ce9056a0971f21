// ort_bench.js — times an ONNX model in onnxruntime (the npm package onnxruntime-node), for bench/run.py.
//
// The session is the configuration the issue compares against: graph optimisation level 'all',
// intra-op threads N, inter-op threads 1, sequential execution, CPU execution provider. The input is a raw
// little-endian float32 file plus its name and dims (run.py converts the model's TensorProto input so both
// sides read the same numbers). Timing is process.hrtime around each awaited session.run, outputs included.
//
// Modes:
//   node ort_bench.js serve MODEL INPUT.f32 NAME DIMS THREADS [OUTPUT.f32]
//       builds the session, runs it once (warm-up; its first output is written to OUTPUT.f32 as raw
//       float32 when given, for run.py's correctness check), prints {"ready":true,"first_ms":...}, then reads
//       commands from stdin, one per line: "bench K" runs K timed runs and prints
//       {"min_ms":...,"median_ms":...,"runs":K}; "quit" (or end of input) exits. A long-lived process
//       lets run.py interleave runners without paying session creation in every round.
//   node ort_bench.js mem MODEL INPUT.f32 NAME DIMS THREADS RUNS
//       builds the session, runs it RUNS times and exits (run.py reads its peak RSS);
//   node ort_bench.js baseline
//       only loads onnxruntime-node (its native library included) and exits: the RSS that mem's figure
//       is measured against.
// DIMS is comma-separated ("1,3,224,224"). The package is found under bench/node_modules.
'use strict';

const fs = require('fs');
const path = require('path');
const readline = require('readline');

const ort = require(path.join(__dirname, 'node_modules', 'onnxruntime-node'));

function fail(msg) {
  process.stderr.write(`ort_bench: ${msg}\n`);
  process.exit(1);
}

async function makeSession(model, threads) {
  return ort.InferenceSession.create(model, {
    executionProviders: ['cpu'],
    graphOptimizationLevel: 'all',
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
  });
}

function loadInput(file, name, dims) {
  const buf = fs.readFileSync(file);
  const shape = dims.split(',').map(Number);
  const count = shape.reduce((a, b) => a * b, 1);
  if (buf.length !== count * 4) fail(`${file}: ${buf.length} bytes, expected ${count * 4} for [${shape}]`);
  // Copy into an aligned Float32Array (the Buffer's offset in its pool need not be a multiple of 4).
  const data = new Float32Array(count);
  for (let i = 0; i < count; i++) data[i] = buf.readFloatLE(i * 4);
  return { [name]: new ort.Tensor('float32', data, shape) };
}

async function timeRuns(session, feeds, k) {
  const times = [];
  for (let i = 0; i < k; i++) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((a, b) => a - b);
  const mid = times.length >> 1;
  const median = times.length % 2 ? times[mid] : (times[mid - 1] + times[mid]) / 2;
  return { min_ms: times[0], median_ms: median, runs: k };
}

function send(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

async function serve(args) {
  if (args.length !== 5 && args.length !== 6) fail('usage: serve MODEL INPUT.f32 NAME DIMS THREADS [OUTPUT.f32]');
  const [model, input, name, dims, threads, output] = args;
  const session = await makeSession(model, Number(threads));
  const feeds = loadInput(input, name, dims);
  const t0 = process.hrtime.bigint();
  const results = await session.run(feeds);
  const firstMs = Number(process.hrtime.bigint() - t0) / 1e6;
  if (output) {
    const data = results[session.outputNames[0]].data;
    fs.writeFileSync(output, Buffer.from(data.buffer, data.byteOffset, data.byteLength));
  }
  send({ ready: true, first_ms: firstMs, version: ort.env.versions.node || null });
  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    const words = line.trim().split(/\s+/);
    if (words[0] === 'quit') break;
    if (words[0] === 'bench' && Number(words[1]) > 0) send(await timeRuns(session, feeds, Number(words[1])));
    else send({ error: `unknown command '${line.trim()}'` });
  }
  rl.close();
}

async function mem(args) {
  if (args.length !== 6) fail('usage: mem MODEL INPUT.f32 NAME DIMS THREADS RUNS');
  const [model, input, name, dims, threads, runs] = args;
  const session = await makeSession(model, Number(threads));
  const feeds = loadInput(input, name, dims);
  send(await timeRuns(session, feeds, Number(runs)));
}

async function main() {
  const [mode, ...args] = process.argv.slice(2);
  if (mode === 'serve') await serve(args);
  else if (mode === 'mem') await mem(args);
  else if (mode === 'baseline') send({ version: ort.env.versions.node || null });
  else fail('usage: ort_bench.js serve|mem|baseline ...');
}

main().then(() => process.exit(0), (e) => fail(e && e.stack ? e.stack : String(e)));
