// ONNX Runtime's own per-node profile of a shared model, to set beside `KILN_PROFILE=node
// build/kiln bench ...`: runs the model R times with enableProfiling and prints the mean time
// per op type and the N slowest nodes per run (bench/ort_profile_summary.py reads the trace).
//
//   node bench/ort_profile.js ../shared/models/efficientnet_b0 [--threads 1] [--runs 100] [--top 30]
//
// Needs the peers (bash ../shared/peers/setup.sh); ORT_NODE_MODULE overrides where
// onnxruntime-node is found, as for ../shared/peers/ort_bench.js.
const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');

const args = process.argv.slice(2);
const opt = (name, def) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : def; };
const modelDir = args[0];
if (!modelDir || !fs.existsSync(path.join(modelDir, 'model.onnx'))) {
  console.error('usage: node bench/ort_profile.js MODEL_DIR [--threads T] [--runs R] [--top N]');
  process.exit(2);
}
// KILN_SHARED: the shared folder (peers/) when it is not ../shared beside the checkout.
const shared = process.env.KILN_SHARED || path.resolve(__dirname, '..', '..', 'shared');
if (!fs.existsSync(path.join(shared, 'peers', 'tensorproto.js'))) {
  console.error(`no shared folder at ${shared} (peers/tensorproto.js): set KILN_SHARED=DIR`);
  process.exit(2);
}
const ORT_MODULE = process.env.ORT_NODE_MODULE ||
  path.join(process.env.PEERS_NPM_PREFIX || '/opt/peers', 'node_modules', 'onnxruntime-node');
const ort = require(ORT_MODULE);
const { parseTensorProto } = require(path.join(shared, 'peers', 'tensorproto.js'));

(async () => {
  const threads = Number(opt('--threads', 1)), runs = Number(opt('--runs', 100));
  const prefix = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ort-profile-')), 'p');
  const session = await ort.InferenceSession.create(path.join(modelDir, 'model.onnx'), {
    intraOpNumThreads: threads, interOpNumThreads: 1, graphOptimizationLevel: 'all',
    enableProfiling: true, profileFilePrefix: prefix });
  const dataDir = path.join(modelDir, 'test_data_set_0');
  const files = fs.readdirSync(dataDir).filter(f => f.startsWith('input_')).sort();
  const feeds = {};
  session.inputNames.forEach((name, i) => {
    const t = parseTensorProto(fs.readFileSync(path.join(dataDir, files[i])));
    feeds[name] = new ort.Tensor(t.type || 'float32', t.data, t.dims);
  });
  for (let i = 0; i < runs; i++) await session.run(feeds);
  const trace = session.endProfiling();
  const file = fs.existsSync(trace) ? trace : path.join(path.dirname(prefix),
      fs.readdirSync(path.dirname(prefix)).find(f => f.endsWith('.json')));
  process.stdout.write(execFileSync('/usr/bin/python3',
      [path.join(__dirname, 'ort_profile_summary.py'), file, String(runs), opt('--top', '30')]));
})();
