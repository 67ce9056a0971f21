// ort_run.js — runs an ONNX model once in onnxruntime (npm onnxruntime-node), for onnx_export.py.
//
//   node ort_run.js NODE_MODULES MODEL OUT_DIR NAME=FILE:TYPE:DIMS ...
//
// Each input is a raw little-endian file of ONNX Runtime tensor type TYPE (float32, uint8, int8, int32,
// int64) and comma-separated DIMS (empty for a scalar). The session runs with all graph optimisations (so
// onnxruntime fuses QDQ node groups into its int8 kernels) on one thread. Writes OUT_DIR/meta.json (the
// outputs in the model's order: name, type, dims) and OUT_DIR/<i>.bin, the raw data of output i. Errors go
// to stderr with exit status 1.
'use strict';

const fs = require('fs');
const path = require('path');

const ARRAYS = {
  float32: Float32Array, uint8: Uint8Array, int8: Int8Array, int32: Int32Array, int64: BigInt64Array,
  bool: Uint8Array,
};

async function main() {
  const [modules, model, outDir, ...specs] = process.argv.slice(2);
  const ort = require(path.join(modules, 'onnxruntime-node'));
  const feeds = {};
  for (const spec of specs) {
    const eq = spec.indexOf('=');
    const [file, type, dims] = spec.slice(eq + 1).split(':');
    const shape = dims ? dims.split(',').map(Number) : [];
    const buf = fs.readFileSync(file);
    const Arr = ARRAYS[type];
    if (!Arr) throw new Error(`unknown type ${type}`);
    // Copy into a fresh, aligned typed array (a Buffer's offset in its pool need not be aligned).
    const data = new Arr(buf.length / Arr.BYTES_PER_ELEMENT);
    new Uint8Array(data.buffer).set(buf);
    feeds[spec.slice(0, eq)] = new ort.Tensor(type, data, shape);
  }
  const session = await ort.InferenceSession.create(model, {
    executionProviders: ['cpu'], graphOptimizationLevel: 'all', intraOpNumThreads: 1, interOpNumThreads: 1,
  });
  const results = await session.run(feeds);
  const meta = [];
  session.outputNames.forEach((name, i) => {
    const t = results[name];
    fs.writeFileSync(path.join(outDir, `${i}.bin`), Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
    meta.push({ name, type: t.type, dims: t.dims });
  });
  fs.writeFileSync(path.join(outDir, 'meta.json'), JSON.stringify(meta));
}

main().catch((err) => {
  process.stderr.write(`ort_run: ${err.message || err}\n`);
  process.exit(1);
});
