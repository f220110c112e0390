#!/usr/bin/env node
'use strict';
// Runs an ONNX model in ONNX Runtime (onnxruntime-node, CPU EP) on a test data set and compares
// its outputs with the set's reference outputs, matched by name ("x" and "x:0" are one tensor):
//   node ort_check.js MODEL.onnx SET_DIR [RTOL ATOL]
// |got - ref| <= atol + rtol * |ref| per element. Exit 0 when every reference matches, 1 when
// one does not, 2 when the model does not load or run. onnxruntime-node from $ORT_NODE_MODULE,
// else $PEERS_NPM_PREFIX (/opt/peers)/node_modules; the TensorProto reader from
// $KILN_SHARED_PEERS/tensorproto.js.
const fs = require('fs');
const path = require('path');
const ort = require(process.env.ORT_NODE_MODULE ||
  path.join(process.env.PEERS_NPM_PREFIX || '/opt/peers', 'node_modules', 'onnxruntime-node'));
const { parseTensorProto } = require(path.join(process.env.KILN_SHARED_PEERS, 'tensorproto.js'));

const same = (a, b) => a === b || `${a}:0` === b || a === `${b}:0`;

(async () => {
  const [model, setDir, rtolArg, atolArg] = process.argv.slice(2);
  const rtol = Number(rtolArg || 1e-3), atol = Number(atolArg || 1e-4);
  const files = fs.readdirSync(setDir);
  const read = (prefix) => files.filter((f) => f.startsWith(prefix) && f.endsWith('.pb'))
    .sort((a, b) => parseInt(a.slice(prefix.length), 10) - parseInt(b.slice(prefix.length), 10))
    .map((f) => parseTensorProto(fs.readFileSync(path.join(setDir, f))));
  const inputs = read('input_'), refs = read('output_');
  const session = await ort.InferenceSession.create(model, { intraOpNumThreads: 1 });
  const feeds = {};
  session.inputNames.forEach((name, i) => {
    const t = inputs.find((x) => same(x.name, name)) || inputs[i];
    feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
  });
  const results = await session.run(feeds);
  let ok = true;
  refs.forEach((ref, k) => {
    const name = session.outputNames.find((n) => same(ref.name, n)) || session.outputNames[k];
    const got = results[name];
    let worst = 0, bad = 0;
    if (!got || got.data.length !== ref.data.length) {
      console.log(`  ${name}: shape differs (${got ? got.dims : 'missing'} vs ${ref.dims})`);
      ok = false;
      return;
    }
    for (let i = 0; i < ref.data.length; ++i) {
      const d = Math.abs(Number(got.data[i]) - Number(ref.data[i]));
      worst = Math.max(worst, d);
      if (!(d <= atol + rtol * Math.abs(Number(ref.data[i])))) ++bad;
    }
    console.log(`  ${name}: max_abs ${worst.toExponential(3)} ${bad ? `MISMATCH (${bad} elements)` : 'ok'}`);
    if (bad) ok = false;
  });
  process.exit(ok ? 0 : 1);
})().catch((e) => { console.error(String(e)); process.exit(2); });
