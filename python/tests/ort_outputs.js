#!/usr/bin/env node
'use strict';
// ONNX Runtime (onnxruntime-node, CPU EP) on a model and input files, its outputs written as raw
// bytes for test_ort_peer.py to compare kiln's with:
//   node ort_outputs.js MODEL.onnx OUT_DIR INPUT_0.pb [INPUT_1.pb ...]
// writes OUT_DIR/output_K.bin and OUT_DIR/outputs.json ([{name, type, dims}]). onnxruntime-node
// from $ORT_NODE_MODULE, else $PEERS_NPM_PREFIX (/opt/peers)/node_modules; the TensorProto
// reader from $KILN_SHARED_PEERS/tensorproto.js.
const fs = require('fs');
const path = require('path');
const ort = require(process.env.ORT_NODE_MODULE ||
  path.join(process.env.PEERS_NPM_PREFIX || '/opt/peers', 'node_modules', 'onnxruntime-node'));
const { parseTensorProto } = require(path.join(process.env.KILN_SHARED_PEERS, 'tensorproto.js'));

(async () => {
  const [model, outDir, ...inputs] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(model, { intraOpNumThreads: 1, graphOptimizationLevel: 'all' });
  const feeds = {};
  session.inputNames.forEach((name, i) => {
    const t = parseTensorProto(fs.readFileSync(inputs[i]));
    feeds[name] = new ort.Tensor(t.type || 'float32', t.data, t.dims);
  });
  const results = await session.run(feeds);
  const meta = session.outputNames.map((name, k) => {
    const t = results[name];
    fs.writeFileSync(path.join(outDir, `output_${k}.bin`), Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
    return { name, type: t.type, dims: t.dims };
  });
  fs.writeFileSync(path.join(outDir, 'outputs.json'), JSON.stringify(meta));
})().catch((e) => { console.error(String(e)); process.exit(2); });
