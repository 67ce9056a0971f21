// ort_outputs.js — expected outputs for the opset 18-21 test cases, from onnxruntime-node (gen.py runs it).
//
// node ort_outputs.js JOB.json: JOB is a list of {model, inputs: [{name, type, dims, data}], out}; data is
// base64 of the little-endian raw bytes. Each model runs once in a CPU session (graph optimisation off,
// so onnxruntime's own kernels give the answer, not its fused rewrites) and its outputs are written to
// `out` as the same JSON form, in the order the session lists them. onnxruntime-node is found under
// bench/node_modules (`cd bench && npm install --ignore-scripts`).
'use strict';

const fs = require('fs');
const path = require('path');

const ort = require(path.join(__dirname, '..', '..', '..', 'bench', 'node_modules', 'onnxruntime-node'));

const ARRAYS = {
  float32: Float32Array, float64: Float64Array, int8: Int8Array, uint8: Uint8Array, int16: Int16Array,
  uint16: Uint16Array, int32: Int32Array, uint32: Uint32Array, int64: BigInt64Array, uint64: BigUint64Array,
  bool: Uint8Array,
};

function toTensor(t) {
  const buf = Buffer.from(t.data, 'base64');
  const A = ARRAYS[t.type];
  const copy = new ArrayBuffer(buf.length);
  new Uint8Array(copy).set(buf);
  return new ort.Tensor(t.type, new A(copy), t.dims);
}

function fromTensor(name, t) {
  const d = t.data;
  const bytes = Buffer.from(d.buffer, d.byteOffset, d.byteLength);
  return {name, type: t.type, dims: t.dims.map(Number), data: bytes.toString('base64')};
}

async function main() {
  const jobs = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  for (const job of jobs) {
    let session;
    try {
      session = await ort.InferenceSession.create(job.model, {
        executionProviders: ['cpu'], graphOptimizationLevel: 'disabled', intraOpNumThreads: 1,
      });
    } catch (e) {
      process.stderr.write(`${job.model}: ${e.message}\n`);
      process.exit(1);
    }
    const feeds = {};
    for (const t of job.inputs) feeds[t.name] = toTensor(t);
    const res = await session.run(feeds);
    fs.writeFileSync(job.out, JSON.stringify(session.outputNames.map((n) => fromTensor(n, res[n]))));
  }
}

main().catch((e) => {
  process.stderr.write(`ort_outputs: ${e.stack || e}\n`);
  process.exit(1);
});
