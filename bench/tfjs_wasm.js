#!/usr/bin/env node
'use strict';
// TensorFlow.js's WebAssembly backend (XNNPACK kernels, one thread) timing a TF.js graph model on
// its test_data_set_0 inputs: the peer bench/tfjs_compare.sh sets kiln beside.
//   NODE_PATH=/opt/tfjs-peer/node_modules node tfjs_wasm.js MODEL_DIR [RUNS] [WARMUP]
// prints one JSON line: {"model", "backend", "median_ms", "min_ms", "max_ms", "runs"}.
// Needs @tensorflow/tfjs and @tensorflow/tfjs-backend-wasm (4.22.0) under NODE_PATH.
const fs = require('fs');
const path = require('path');
const tf = require('@tensorflow/tfjs');
require('@tensorflow/tfjs-backend-wasm');

// An onnx.TensorProto .pb (dims 1, data_type 2, name 8, raw_data 9) as a tf.Tensor.
function readTensor(file) {
  const buf = fs.readFileSync(file);
  let pos = 0;
  const varint = (b) => {
    let r = 0, mul = 1;
    for (;;) {
      const x = b[pos++];
      r += (x & 0x7f) * mul;
      if (!(x & 0x80)) return r;
      mul *= 128;
    }
  };
  const t = { dims: [], type: 0, name: '', raw: null };
  while (pos < buf.length) {
    const key = varint(buf), field = key >>> 3, wire = key & 7;
    if (wire === 0) {
      const v = varint(buf);
      if (field === 1) t.dims.push(v);
      else if (field === 2) t.type = v;
      continue;
    }
    const len = varint(buf), sub = buf.subarray(pos, pos + len);
    pos += len;
    if (field === 1) {
      const outer = pos;
      pos = 0;
      while (pos < sub.length) t.dims.push(varint(sub));
      pos = outer;
    } else if (field === 8) t.name = sub.toString('utf8');
    else if (field === 9) t.raw = Uint8Array.from(sub);
  }
  const [Typed, dtype] = t.type === 6 ? [Int32Array, 'int32'] : [Float32Array, 'float32'];
  return { name: t.name, tensor: tf.tensor(new Typed(t.raw.buffer), t.dims, dtype) };
}

// model.json and its shards, concatenated in manifest order, as TF.js's loader wants them.
function localModel(dir) {
  return {
    load: async () => {
      const json = JSON.parse(fs.readFileSync(path.join(dir, 'model.json'), 'utf8'));
      const specs = [], parts = [];
      for (const group of json.weightsManifest || []) {
        for (const p of group.paths) parts.push(fs.readFileSync(path.join(dir, p)));
        specs.push(...group.weights);
      }
      const all = Buffer.concat(parts);
      return {
        modelTopology: json.modelTopology, format: json.format, generatedBy: json.generatedBy,
        convertedBy: json.convertedBy, signature: json.signature, userDefinedMetadata: json.userDefinedMetadata,
        weightSpecs: specs, weightData: all.buffer.slice(all.byteOffset, all.byteOffset + all.byteLength),
      };
    },
  };
}

const warn = console.warn;
console.warn = (...a) => { if (!String(a[0]).includes('You can use model.execute() instead')) warn(...a); };

(async () => {
  const [dir, runsArg, warmArg] = process.argv.slice(2);
  const runs = Number(runsArg || 30), warmup = Number(warmArg || 5);
  await tf.setBackend('wasm');
  await tf.ready();
  const model = await tf.loadGraphModel(localModel(dir));
  const set = path.join(dir, 'test_data_set_0');
  const feeds = {};
  for (const f of fs.readdirSync(set).filter((x) => x.startsWith('input_')).sort()) {
    const { name, tensor } = readTensor(path.join(set, f));
    feeds[name] = tensor;
  }
  const once = async () => {
    const out = await model.executeAsync(feeds);
    const list = Array.isArray(out) ? out : out instanceof tf.Tensor ? [out] : Object.values(out);
    for (const t of list) await t.data();  // the outputs read back, as a caller would
    tf.dispose(list);
  };
  for (let i = 0; i < warmup; ++i) await once();
  const times = [];
  for (let i = 0; i < runs; ++i) {
    const t0 = process.hrtime.bigint();
    await once();
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((a, b) => a - b);
  console.log(JSON.stringify({ model: path.basename(dir), backend: tf.getBackend(), median_ms: times[times.length >> 1],
                               min_ms: times[0], max_ms: times[times.length - 1], runs }));
})().catch((e) => { console.error(String(e.stack || e)); process.exit(2); });
