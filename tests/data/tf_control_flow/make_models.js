// Small TensorFlow control-flow graphs written by hand as TF.js graph models, and their
// references computed by TensorFlow.js's graph executor.
//
// Setup (once):
//   mkdir -p /opt/tfjs-peer && cd /opt/tfjs-peer && echo '{"private":true}' > package.json &&
//   npm install --ignore-scripts @tensorflow/tfjs@4.22.0
// Run (from this folder):
//   NODE_PATH=/opt/tfjs-peer/node_modules node make_models.js [name ...]
//
// For each model <name> it writes <name>/model.json (modelTopology: a GraphDef in proto3 JSON,
// TF2 functions in library.function), <name>/weights.bin (every Const's value, as the TF.js
// converter stores them: float32/int32/bool, named after the Const node, function bodies'
// included) and <name>/test_data_set_N/{input_K.pb, output_K.pb}: ONNX TensorProtos (dims,
// data_type, name, raw_data), inputs named by Placeholder, outputs by tensor name "node:k".
// Every reference is computed twice (two executeAsync calls) and must be bit-identical.
'use strict';
const fs = require('fs');
const path = require('path');
const tf = require('@tensorflow/tfjs');

const HERE = __dirname;

// ---------------------------------------------------------------- GraphDef in proto3 JSON
const b64 = (s) => Buffer.from(s, 'utf8').toString('base64');
const A = {
  type: (t) => ({ type: t }),
  types: (ts) => ({ list: { type: ts } }),
  i: (v) => ({ i: String(v) }),
  b: (v) => ({ b: v }),
  s: (v) => ({ s: b64(v) }),
  func: (name) => ({ func: { name } }),
  shape: (dims) => (dims === null ? { shape: { unknownRank: true } }
    : { shape: { dim: dims.map((d) => ({ size: String(d) })) } }),
  shapes: (list) => ({ list: { shape: list.map((d) => A.shape(d).shape) } }),
};
const JS_DTYPE = { DT_FLOAT: 'float32', DT_INT32: 'int32', DT_BOOL: 'bool' };

class Builder {
  constructor() {
    this.nodes = [];
    this.functions = [];
    this.weights = [];  // {name, shape, dtype, bytes}
  }
  static node(list, name, op, inputs = [], attr = {}) {
    const n = { name, op, input: inputs, attr };
    if (!inputs.length) delete n.input;
    list.push(n);
    return n;
  }
  add(name, op, inputs = [], attr = {}) { return Builder.node(this.nodes, name, op, inputs, attr); }
  placeholder(name, dtype, dims) { return this.add(name, 'Placeholder', [], { dtype: A.type(dtype), shape: A.shape(dims) }); }
  // A Const whose value lives in the weights file (TF.js reads every Const from there).
  constIn(list, name, dtype, dims, values, inputs = []) {
    const n = Builder.node(list, name, 'Const', inputs, {
      dtype: A.type(dtype),
      value: { tensor: { dtype, tensorShape: { dim: dims.map((d) => ({ size: String(d) })) } } },
    });
    if (!n.attr.value.tensor.tensorShape.dim.length) n.attr.value.tensor.tensorShape = {};
    const js = JS_DTYPE[dtype];
    const arr = js === 'float32' ? Float32Array.from(values) : js === 'int32' ? Int32Array.from(values)
      : Uint8Array.from(values.map((v) => (v ? 1 : 0)));
    this.weights.push({ name, shape: dims, dtype: js, bytes: Buffer.from(arr.buffer) });
    return n;
  }
  const(name, dtype, dims, values, inputs = []) { return this.constIn(this.nodes, name, dtype, dims, values, inputs); }
  // A FunctionDef: args [[name, dtype]], outputs [[name, dtype, "node:out_arg:k"]]; fill(F) adds
  // nodes through F.add / F.const.
  func(name, args, outputs, fill) {
    const nodeDef = [];
    const F = {
      add: (n, op, inputs = [], attr = {}) => Builder.node(nodeDef, n, op, inputs, attr),
      const: (n, dtype, dims, values, inputs = []) => this.constIn(nodeDef, n, dtype, dims, values, inputs),
    };
    fill(F);
    const ret = {};
    for (const [o, , r] of outputs) ret[o] = r;
    this.functions.push({
      signature: {
        name,
        inputArg: args.map(([n, t]) => ({ name: n, type: t })),
        outputArg: outputs.map(([n, t]) => ({ name: n, type: t })),
      },
      nodeDef,
      ret,
    });
  }
  write(dir, signature) {
    fs.mkdirSync(dir, { recursive: true });
    const topology = { node: this.nodes, library: {}, versions: { producer: 1286 } };
    if (this.functions.length) topology.library.function = this.functions;
    const model = {
      format: 'graph-model',
      generatedBy: 'hand-written (tests/data/tf_control_flow/make_models.js)',
      convertedBy: null,
      signature,
      modelTopology: topology,
      weightsManifest: [{
        paths: ['weights.bin'],
        weights: this.weights.map(({ name, shape, dtype }) => ({ name, shape, dtype })),
      }],
    };
    fs.writeFileSync(path.join(dir, 'model.json'), JSON.stringify(model, null, 1) + '\n');
    fs.writeFileSync(path.join(dir, 'weights.bin'), Buffer.concat(this.weights.map((w) => w.bytes)));
  }
}

const sig = (inputs, outputs) => ({
  inputs: Object.fromEntries(inputs.map(([n, t]) => [n, { name: `${n}:0`, dtype: t }])),
  outputs: Object.fromEntries(outputs.map(([n, t]) => [n, { name: n, dtype: t }])),
});

// ---------------------------------------------------------------- the models
// Each: build() -> Builder; inputs: [name, dtype]; outputs: tensor names; sets: feeds per
// test_data_set (name -> [values, dims]).
const MODELS = {};

// TF2 While: a counter and an accumulator, with x passed through as a loop variable (TF2 passes
// every captured value so). i < 5: s = s * x + float(i).
MODELS.while_counter = {
  inputs: [['x', 'DT_FLOAT']],
  outputs: [['while:0', 'DT_INT32'], ['while:1', 'DT_FLOAT']],
  sets: [{ x: [[0.5, 1.0, 1.5], [3]] }],
  build() {
    const g = new Builder();
    g.placeholder('x', 'DT_FLOAT', [3]);
    g.const('i0', 'DT_INT32', [], [0]);
    g.const('s0', 'DT_FLOAT', [3], [1, 1, 1]);
    g.add('while', 'While', ['i0', 's0', 'x'], {
      T: A.types(['DT_INT32', 'DT_FLOAT', 'DT_FLOAT']),
      cond: A.func('while_cond'), body: A.func('while_body'),
      output_shapes: A.shapes([[], [3], [3]]), parallel_iterations: A.i(10),
    });
    g.func('while_cond', [['i', 'DT_INT32'], ['s', 'DT_FLOAT'], ['x', 'DT_FLOAT']], [['less', 'DT_BOOL', 'Less:z:0']], (F) => {
      F.const('while_cond/limit', 'DT_INT32', [], [5]);
      F.add('Less', 'Less', ['i', 'while_cond/limit:output:0'], { T: A.type('DT_INT32') });
    });
    g.func('while_body', [['i', 'DT_INT32'], ['s', 'DT_FLOAT'], ['x', 'DT_FLOAT']],
      [['i_next', 'DT_INT32', 'add:z:0'], ['s_next', 'DT_FLOAT', 'add_1:z:0'], ['x_out', 'DT_FLOAT', 'Identity:output:0']], (F) => {
        F.const('while_body/one', 'DT_INT32', [], [1]);
        F.add('add', 'AddV2', ['i', 'while_body/one:output:0'], { T: A.type('DT_INT32') });
        F.add('mul', 'Mul', ['s', 'x'], { T: A.type('DT_FLOAT') });
        F.add('Cast', 'Cast', ['i'], { SrcT: A.type('DT_INT32'), DstT: A.type('DT_FLOAT') });
        F.add('add_1', 'AddV2', ['mul:z:0', 'Cast:y:0'], { T: A.type('DT_FLOAT') });
        F.add('Identity', 'Identity', ['x'], { T: A.type('DT_FLOAT') });
      });
    return g;
  },
};

// TF2 StatelessWhile whose trip count is an input (n = 3, and n = 0: no trip at all), with an
// invariant weight matrix: p = tanh(p @ w + 0.1) while i < n.
MODELS.while_invariant = {
  inputs: [['n', 'DT_INT32'], ['w', 'DT_FLOAT']],
  outputs: [['while:1', 'DT_FLOAT']],
  sets: [
    { n: [[3], []], w: [[0.5, -0.25, 0.75, 1.0], [2, 2]] },
    { n: [[0], []], w: [[0.5, -0.25, 0.75, 1.0], [2, 2]] },
  ],
  build() {
    const g = new Builder();
    g.placeholder('n', 'DT_INT32', []);
    g.placeholder('w', 'DT_FLOAT', [2, 2]);
    g.const('i0', 'DT_INT32', [], [0]);
    g.const('p0', 'DT_FLOAT', [2, 2], [1, 2, -1, 0.5]);
    g.add('while', 'StatelessWhile', ['i0', 'p0', 'w', 'n'], {
      T: A.types(['DT_INT32', 'DT_FLOAT', 'DT_FLOAT', 'DT_INT32']),
      cond: A.func('cond'), body: A.func('body'),
      output_shapes: A.shapes([[], [2, 2], [2, 2], []]), parallel_iterations: A.i(10),
    });
    const args = [['i', 'DT_INT32'], ['p', 'DT_FLOAT'], ['w', 'DT_FLOAT'], ['n', 'DT_INT32']];
    g.func('cond', args, [['less', 'DT_BOOL', 'Less:z:0']], (F) => {
      F.add('Less', 'Less', ['i', 'n'], { T: A.type('DT_INT32') });
    });
    g.func('body', args,
      [['i1', 'DT_INT32', 'add:z:0'], ['p1', 'DT_FLOAT', 'Tanh:y:0'], ['w1', 'DT_FLOAT', 'w'], ['n1', 'DT_INT32', 'n']], (F) => {
        F.const('body/one', 'DT_INT32', [], [1]);
        F.const('body/bias', 'DT_FLOAT', [], [0.1]);
        F.add('add', 'AddV2', ['i', 'body/one:output:0'], { T: A.type('DT_INT32') });
        F.add('MatMul', 'MatMul', ['p', 'w'], { T: A.type('DT_FLOAT'), transpose_a: A.b(false), transpose_b: A.b(false) });
        F.add('add_1', 'AddV2', ['MatMul:product:0', 'body/bias:output:0'], { T: A.type('DT_FLOAT') });
        F.add('Tanh', 'Tanh', ['add_1:z:0'], { T: A.type('DT_FLOAT') });
      });
    return g;
  },
};

// TF2 If on a comparison, two outputs per branch: sum(x) > 0 ? (x * y, x + y) : (x - y, -x).
MODELS.if_compare = {
  inputs: [['x', 'DT_FLOAT'], ['y', 'DT_FLOAT']],
  outputs: [['cond:0', 'DT_FLOAT'], ['cond:1', 'DT_FLOAT']],
  sets: [
    { x: [[1, 2, -0.5], [3]], y: [[4, -1, 2], [3]] },
    { x: [[-1, 0.5, -2], [3]], y: [[4, -1, 2], [3]] },
  ],
  build() {
    const g = new Builder();
    g.placeholder('x', 'DT_FLOAT', [3]);
    g.placeholder('y', 'DT_FLOAT', [3]);
    g.const('axis', 'DT_INT32', [1], [0]);
    g.const('zero', 'DT_FLOAT', [], [0]);
    g.add('Sum', 'Sum', ['x', 'axis'], { T: A.type('DT_FLOAT'), Tidx: A.type('DT_INT32'), keep_dims: A.b(false) });
    g.add('Greater', 'Greater', ['Sum', 'zero'], { T: A.type('DT_FLOAT') });
    g.add('cond', 'If', ['Greater', 'x', 'y'], {
      Tcond: A.type('DT_BOOL'), Tin: A.types(['DT_FLOAT', 'DT_FLOAT']), Tout: A.types(['DT_FLOAT', 'DT_FLOAT']),
      then_branch: A.func('cond_true'), else_branch: A.func('cond_false'), output_shapes: A.shapes([[3], [3]]),
    });
    const args = [['x', 'DT_FLOAT'], ['y', 'DT_FLOAT']];
    g.func('cond_true', args, [['a', 'DT_FLOAT', 'mul:z:0'], ['b', 'DT_FLOAT', 'add:z:0']], (F) => {
      F.add('mul', 'Mul', ['x', 'y'], { T: A.type('DT_FLOAT') });
      F.add('add', 'AddV2', ['x', 'y'], { T: A.type('DT_FLOAT') });
    });
    g.func('cond_false', args, [['a', 'DT_FLOAT', 'sub:z:0'], ['b', 'DT_FLOAT', 'neg:y:0']], (F) => {
      F.add('sub', 'Sub', ['x', 'y'], { T: A.type('DT_FLOAT') });
      F.add('neg', 'Neg', ['x'], { T: A.type('DT_FLOAT') });
    });
    return g;
  },
};

// tf.map_fn as TF2 lowers it: the input unstacked into a TensorList, a reserved output list
// written item by item in a While (the cond reads the input list's length), then stacked:
// y[i] = x[i] * x[i] + i. The last item written is also a loop variable: TF.js's function
// executor disposes every tensor a body made that the body does not return, the items a
// TensorList holds included, so a body that does not return them leaves a list of disposed
// tensors behind.
MODELS.tensorlist_map = {
  inputs: [['x', 'DT_FLOAT']],
  outputs: [['stack:0', 'DT_FLOAT']],
  sets: [{ x: [[1, 2, 3, -1, -2, -3, 0.5, 0.25, 0.125, 4, 5, 6], [4, 3]] }],
  build() {
    const g = new Builder();
    g.placeholder('x', 'DT_FLOAT', [4, 3]);
    g.const('element_shape', 'DT_INT32', [1], [3]);
    g.const('n', 'DT_INT32', [], [4]);
    g.const('i0', 'DT_INT32', [], [0]);
    g.add('in_list', 'TensorListFromTensor', ['x', 'element_shape'],
      { element_dtype: A.type('DT_FLOAT'), shape_type: A.type('DT_INT32') });
    g.add('out_list', 'TensorListReserve', ['element_shape', 'n'],
      { element_dtype: A.type('DT_FLOAT'), shape_type: A.type('DT_INT32') });
    g.const('last0', 'DT_FLOAT', [3], [0, 0, 0]);
    g.add('while', 'While', ['i0', 'in_list', 'out_list', 'last0'], {
      T: A.types(['DT_INT32', 'DT_VARIANT', 'DT_VARIANT', 'DT_FLOAT']), cond: A.func('map_cond'), body: A.func('map_body'),
      output_shapes: A.shapes([[], [], [], [3]]), parallel_iterations: A.i(10),
    });
    g.add('stack', 'TensorListStack', ['while:2', 'element_shape'],
      { element_dtype: A.type('DT_FLOAT'), num_elements: A.i(4) });
    const args = [['i', 'DT_INT32'], ['in_list', 'DT_VARIANT'], ['out_list', 'DT_VARIANT'], ['last', 'DT_FLOAT']];
    g.func('map_cond', args, [['less', 'DT_BOOL', 'Less:z:0']], (F) => {
      F.add('Length', 'TensorListLength', ['in_list']);
      F.add('Less', 'Less', ['i', 'Length:length:0'], { T: A.type('DT_INT32') });
    });
    g.func('map_body', args,
      [['i1', 'DT_INT32', 'add:z:0'], ['in1', 'DT_VARIANT', 'in_list'], ['out1', 'DT_VARIANT', 'SetItem:output_handle:0'],
        ['last1', 'DT_FLOAT', 'y:z:0']], (F) => {
        F.const('map_body/one', 'DT_INT32', [], [1]);
        F.const('map_body/shape', 'DT_INT32', [1], [3]);
        F.add('GetItem', 'TensorListGetItem', ['in_list', 'i', 'map_body/shape:output:0'], { element_dtype: A.type('DT_FLOAT') });
        F.add('square', 'Mul', ['GetItem:item:0', 'GetItem:item:0'], { T: A.type('DT_FLOAT') });
        F.add('Cast', 'Cast', ['i'], { SrcT: A.type('DT_INT32'), DstT: A.type('DT_FLOAT') });
        F.add('y', 'AddV2', ['square:z:0', 'Cast:y:0'], { T: A.type('DT_FLOAT') });
        F.add('SetItem', 'TensorListSetItem', ['out_list', 'i', 'y:z:0'], { element_dtype: A.type('DT_FLOAT') });
        F.add('add', 'AddV2', ['i', 'map_body/one:output:0'], { T: A.type('DT_INT32') });
      });
    return g;
  },
};

// A TensorList accumulator: an empty list pushed back once per trip (n = 3 trips, from an
// input), then stacked: acc[k] = x * k. The item pushed is also a loop variable (see
// tensorlist_map).
MODELS.tensorlist_accumulate = {
  inputs: [['x', 'DT_FLOAT'], ['n', 'DT_INT32']],
  outputs: [['stack:0', 'DT_FLOAT']],
  sets: [{ x: [[1, -2], [2]], n: [[3], []] }],
  build() {
    const g = new Builder();
    g.placeholder('x', 'DT_FLOAT', [2]);
    g.placeholder('n', 'DT_INT32', []);
    g.const('element_shape', 'DT_INT32', [1], [2]);
    g.const('max_elements', 'DT_INT32', [], [-1]);
    g.const('i0', 'DT_INT32', [], [0]);
    g.add('acc', 'EmptyTensorList', ['element_shape', 'max_elements'],
      { element_dtype: A.type('DT_FLOAT'), shape_type: A.type('DT_INT32') });
    g.const('last0', 'DT_FLOAT', [2], [0, 0]);
    g.add('while', 'While', ['i0', 'acc', 'x', 'n', 'last0'], {
      T: A.types(['DT_INT32', 'DT_VARIANT', 'DT_FLOAT', 'DT_INT32', 'DT_FLOAT']), cond: A.func('acc_cond'),
      body: A.func('acc_body'), output_shapes: A.shapes([[], [], [2], [], [2]]), parallel_iterations: A.i(10),
    });
    g.add('stack', 'TensorListStack', ['while:1', 'element_shape'],
      { element_dtype: A.type('DT_FLOAT'), num_elements: A.i(-1) });
    const args = [['i', 'DT_INT32'], ['acc', 'DT_VARIANT'], ['x', 'DT_FLOAT'], ['n', 'DT_INT32'], ['last', 'DT_FLOAT']];
    g.func('acc_cond', args, [['less', 'DT_BOOL', 'Less:z:0']], (F) => {
      F.add('Less', 'Less', ['i', 'n'], { T: A.type('DT_INT32') });
    });
    g.func('acc_body', args,
      [['i1', 'DT_INT32', 'add:z:0'], ['acc1', 'DT_VARIANT', 'PushBack:output_handle:0'], ['x1', 'DT_FLOAT', 'x'],
        ['n1', 'DT_INT32', 'n'], ['last1', 'DT_FLOAT', 'scaled:z:0']], (F) => {
        F.const('acc_body/one', 'DT_INT32', [], [1]);
        F.add('Cast', 'Cast', ['i'], { SrcT: A.type('DT_INT32'), DstT: A.type('DT_FLOAT') });
        F.add('scaled', 'Mul', ['x', 'Cast:y:0'], { T: A.type('DT_FLOAT') });
        F.add('PushBack', 'TensorListPushBack', ['acc', 'scaled:z:0'], { element_dtype: A.type('DT_FLOAT') });
        F.add('add', 'AddV2', ['i', 'acc_body/one:output:0'], { T: A.type('DT_INT32') });
      });
    return g;
  },
};

// A TensorFlow 1 while-loop frame (tf.compat.v1.while_loop): one loop variable v and one
// invariant x (Enter is_constant): while sum(v) < 100: v = v * x + 1.
MODELS.tf1_while = {
  inputs: [['x', 'DT_FLOAT']],
  outputs: [['out:0', 'DT_FLOAT']],
  sets: [{ x: [[1.5, 2.0], [2]] }],
  build() {
    const g = new Builder();
    const F = 'while/while_context';
    g.placeholder('x', 'DT_FLOAT', [2]);
    g.const('v0', 'DT_FLOAT', [2], [1, 2]);
    g.add('while/Enter', 'Enter', ['v0'], { T: A.type('DT_FLOAT'), frame_name: A.s(F), is_constant: A.b(false), parallel_iterations: A.i(10) });
    g.add('while/Enter_1', 'Enter', ['x'], { T: A.type('DT_FLOAT'), frame_name: A.s(F), is_constant: A.b(true), parallel_iterations: A.i(10) });
    g.add('while/Merge', 'Merge', ['while/Enter', 'while/NextIteration'], { T: A.type('DT_FLOAT'), N: A.i(2) });
    g.const('while/Const', 'DT_INT32', [1], [0], ['^while/Merge']);
    g.add('while/Sum', 'Sum', ['while/Merge', 'while/Const'], { T: A.type('DT_FLOAT'), Tidx: A.type('DT_INT32'), keep_dims: A.b(false) });
    g.const('while/Less/y', 'DT_FLOAT', [], [100], ['^while/Merge']);
    g.add('while/Less', 'Less', ['while/Sum', 'while/Less/y'], { T: A.type('DT_FLOAT') });
    g.add('while/LoopCond', 'LoopCond', ['while/Less']);
    g.add('while/Switch', 'Switch', ['while/Merge', 'while/LoopCond'], { T: A.type('DT_FLOAT') });
    g.add('while/Identity', 'Identity', ['while/Switch:1'], { T: A.type('DT_FLOAT') });
    g.add('while/mul', 'Mul', ['while/Identity', 'while/Enter_1'], { T: A.type('DT_FLOAT') });
    g.const('while/add/y', 'DT_FLOAT', [], [1], ['^while/Identity']);
    g.add('while/add', 'AddV2', ['while/mul', 'while/add/y'], { T: A.type('DT_FLOAT') });
    g.add('while/NextIteration', 'NextIteration', ['while/add'], { T: A.type('DT_FLOAT') });
    g.add('while/Exit', 'Exit', ['while/Switch'], { T: A.type('DT_FLOAT') });
    g.add('out', 'Identity', ['while/Exit'], { T: A.type('DT_FLOAT') });
    return g;
  },
};

// A TensorFlow 1 frame with two loop variables (a counter and an accumulator), two invariants
// (the trip count n and x) and a TensorArray written once per trip (its flow a loop variable,
// its handle an invariant), gathered after the loop:
// for i in range(n): acc = acc * 0.5 + x; ta[i] = acc.
MODELS.tf1_tensor_array = {
  inputs: [['x', 'DT_FLOAT'], ['n', 'DT_INT32']],
  outputs: [['acc:0', 'DT_FLOAT'], ['stacked:0', 'DT_FLOAT']],
  sets: [{ x: [[1, 2, 4], [3]], n: [[4], []] }],
  build() { return tensorArrayLoop(false); },
};

// The same loop with a TensorArray of dynamic size, created empty: every write appends.
MODELS.tf1_tensor_array_dynamic = {
  inputs: [['x', 'DT_FLOAT'], ['n', 'DT_INT32']],
  outputs: [['acc:0', 'DT_FLOAT'], ['stacked:0', 'DT_FLOAT']],
  sets: [{ x: [[1, 2, 4], [3]], n: [[4], []] }],
  build() { return tensorArrayLoop(true); },
};

function tensorArrayLoop(dynamic) {
  {
    const g = new Builder();
    const F = 'loop/while_context';
    const enter = (name, input, dtype, constant) => g.add(name, 'Enter', [input],
      { T: A.type(dtype), frame_name: A.s(F), is_constant: A.b(constant), parallel_iterations: A.i(10) });
    g.placeholder('x', 'DT_FLOAT', [3]);
    g.placeholder('n', 'DT_INT32', []);
    g.const('i0', 'DT_INT32', [], [0]);
    g.const('acc0', 'DT_FLOAT', [3], [0, 0, 0]);
    if (dynamic) g.const('ta_size', 'DT_INT32', [], [0]);
    g.add('ta', 'TensorArrayV3', [dynamic ? 'ta_size' : 'n'], {
      dtype: A.type('DT_FLOAT'), element_shape: A.shape([3]), dynamic_size: A.b(dynamic), clear_after_read: A.b(true),
      identical_element_shapes: A.b(true), tensor_array_name: A.s(''),
    });
    enter('loop/Enter', 'i0', 'DT_INT32', false);
    enter('loop/Enter_1', 'acc0', 'DT_FLOAT', false);
    enter('loop/Enter_2', 'ta:1', 'DT_FLOAT', false);
    enter('loop/Enter_3', 'n', 'DT_INT32', true);
    enter('loop/Enter_4', 'x', 'DT_FLOAT', true);
    enter('loop/Enter_5', 'ta', 'DT_RESOURCE', true);
    for (const [k, t] of [['', 'DT_INT32'], ['_1', 'DT_FLOAT'], ['_2', 'DT_FLOAT']]) {
      g.add(`loop/Merge${k}`, 'Merge', [`loop/Enter${k}`, `loop/NextIteration${k}`], { T: A.type(t), N: A.i(2) });
    }
    g.add('loop/Less', 'Less', ['loop/Merge', 'loop/Enter_3'], { T: A.type('DT_INT32') });
    g.add('loop/LoopCond', 'LoopCond', ['loop/Less']);
    for (const [k, t] of [['', 'DT_INT32'], ['_1', 'DT_FLOAT'], ['_2', 'DT_FLOAT']]) {
      g.add(`loop/Switch${k}`, 'Switch', [`loop/Merge${k}`, 'loop/LoopCond'], { T: A.type(t) });
      g.add(`loop/Identity${k}`, 'Identity', [`loop/Switch${k}:1`], { T: A.type(t) });
    }
    g.const('loop/add/y', 'DT_INT32', [], [1], ['^loop/Identity']);
    g.add('loop/add', 'AddV2', ['loop/Identity', 'loop/add/y'], { T: A.type('DT_INT32') });
    g.const('loop/mul/y', 'DT_FLOAT', [], [0.5], ['^loop/Identity']);
    g.add('loop/mul', 'Mul', ['loop/Identity_1', 'loop/mul/y'], { T: A.type('DT_FLOAT') });
    g.add('loop/add_1', 'AddV2', ['loop/mul', 'loop/Enter_4'], { T: A.type('DT_FLOAT') });
    g.add('loop/write', 'TensorArrayWriteV3', ['loop/Enter_5', 'loop/Identity', 'loop/add_1', 'loop/Identity_2'],
      { T: A.type('DT_FLOAT') });
    for (const [k, t, v] of [['', 'DT_INT32', 'loop/add'], ['_1', 'DT_FLOAT', 'loop/add_1'], ['_2', 'DT_FLOAT', 'loop/write']]) {
      g.add(`loop/NextIteration${k}`, 'NextIteration', [v], { T: A.type(t) });
      g.add(`loop/Exit${k}`, 'Exit', [`loop/Switch${k}`], { T: A.type(t) });
    }
    g.add('acc', 'Identity', ['loop/Exit_1'], { T: A.type('DT_FLOAT') });
    g.add('size', 'TensorArraySizeV3', ['ta', 'loop/Exit_2']);
    g.const('range/start', 'DT_INT32', [], [0]);
    g.const('range/delta', 'DT_INT32', [], [1]);
    g.add('range', 'Range', ['range/start', 'size', 'range/delta'], { Tidx: A.type('DT_INT32') });
    g.add('stacked', 'TensorArrayGatherV3', ['ta', 'range', 'loop/Exit_2'],
      { dtype: A.type('DT_FLOAT'), element_shape: A.shape([3]) });
    return g;
  }
}

// Two TF1 frames, one inside the other's body: the inner loop's initial values are Consts of
// the outer frame and it reads the outer counter through an invariant Enter:
// for k in range(m): acc += sum(float(j) for j in range(k)).
MODELS.tf1_nested = {
  inputs: [['m', 'DT_INT32']],
  outputs: [['acc:0', 'DT_FLOAT'], ['outer/Exit:0', 'DT_INT32']],
  sets: [{ m: [[5], []] }, { m: [[1], []] }],
  build() {
    const g = new Builder();
    const enter = (name, input, dtype, frame, constant) => g.add(name, 'Enter', [input],
      { T: A.type(dtype), frame_name: A.s(frame), is_constant: A.b(constant), parallel_iterations: A.i(10) });
    // loop variables [suffix, dtype] of a frame at `p` (prefix), with their Merge, Switch, Identity.
    const vars = (p, list) => {
      for (const [k, t] of list) g.add(`${p}/Merge${k}`, 'Merge', [`${p}/Enter${k}`, `${p}/NextIteration${k}`], { T: A.type(t), N: A.i(2) });
    };
    const switches = (p, list) => {
      for (const [k, t] of list) {
        g.add(`${p}/Switch${k}`, 'Switch', [`${p}/Merge${k}`, `${p}/LoopCond`], { T: A.type(t) });
        g.add(`${p}/Identity${k}`, 'Identity', [`${p}/Switch${k}:1`], { T: A.type(t) });
      }
    };
    const close = (p, list) => {
      for (const [k, t, v] of list) {
        g.add(`${p}/NextIteration${k}`, 'NextIteration', [v], { T: A.type(t) });
        g.add(`${p}/Exit${k}`, 'Exit', [`${p}/Switch${k}`], { T: A.type(t) });
      }
    };
    const O = 'outer/while_context', I = 'outer/inner/while_context';
    g.placeholder('m', 'DT_INT32', []);
    g.const('k0', 'DT_INT32', [], [0]);
    g.const('acc0', 'DT_FLOAT', [], [0]);
    enter('outer/Enter', 'k0', 'DT_INT32', O, false);
    enter('outer/Enter_1', 'acc0', 'DT_FLOAT', O, false);
    enter('outer/Enter_2', 'm', 'DT_INT32', O, true);
    const ov = [['', 'DT_INT32'], ['_1', 'DT_FLOAT']];
    vars('outer', ov);
    g.add('outer/Less', 'Less', ['outer/Merge', 'outer/Enter_2'], { T: A.type('DT_INT32') });
    g.add('outer/LoopCond', 'LoopCond', ['outer/Less']);
    switches('outer', ov);
    // the inner loop, in the outer body
    g.const('outer/j0', 'DT_INT32', [], [0], ['^outer/Identity']);
    g.const('outer/t0', 'DT_FLOAT', [], [0], ['^outer/Identity']);
    enter('outer/inner/Enter', 'outer/j0', 'DT_INT32', I, false);
    enter('outer/inner/Enter_1', 'outer/t0', 'DT_FLOAT', I, false);
    enter('outer/inner/Enter_2', 'outer/Identity', 'DT_INT32', I, true);
    const iv = [['', 'DT_INT32'], ['_1', 'DT_FLOAT']];
    vars('outer/inner', iv);
    g.add('outer/inner/Less', 'Less', ['outer/inner/Merge', 'outer/inner/Enter_2'], { T: A.type('DT_INT32') });
    g.add('outer/inner/LoopCond', 'LoopCond', ['outer/inner/Less']);
    switches('outer/inner', iv);
    g.const('outer/inner/add/y', 'DT_INT32', [], [1], ['^outer/inner/Identity']);
    g.add('outer/inner/add', 'AddV2', ['outer/inner/Identity', 'outer/inner/add/y'], { T: A.type('DT_INT32') });
    g.add('outer/inner/Cast', 'Cast', ['outer/inner/Identity'], { SrcT: A.type('DT_INT32'), DstT: A.type('DT_FLOAT') });
    g.add('outer/inner/add_1', 'AddV2', ['outer/inner/Identity_1', 'outer/inner/Cast'], { T: A.type('DT_FLOAT') });
    close('outer/inner', [['', 'DT_INT32', 'outer/inner/add'], ['_1', 'DT_FLOAT', 'outer/inner/add_1']]);
    // the rest of the outer body
    g.const('outer/add/y', 'DT_INT32', [], [1], ['^outer/Identity']);
    g.add('outer/add', 'AddV2', ['outer/Identity', 'outer/add/y'], { T: A.type('DT_INT32') });
    g.add('outer/add_1', 'AddV2', ['outer/Identity_1', 'outer/inner/Exit_1'], { T: A.type('DT_FLOAT') });
    close('outer', [['', 'DT_INT32', 'outer/add'], ['_1', 'DT_FLOAT', 'outer/add_1']]);
    g.add('acc', 'Identity', ['outer/Exit_1'], { T: A.type('DT_FLOAT') });
    return g;
  },
};

// A TensorFlow 1 conditional (tf.compat.v1.cond) with two results (two Merges on one pred),
// Consts in the branches (there by a control input from the branch's pivot, as TF1 writes
// them) and a conditional nested in the false branch:
// if sum(x) > 0: (2x, x + 7) else: (v = x - 1; 10v if max(v) > 0 else -v, -x).
// (No branch result is a Const itself: TF.js holds every Const from the start, so a Merge
// reading one forwards it even when its branch is not taken; TensorFlow and kiln do not.)
MODELS.tf1_cond = {
  inputs: [['x', 'DT_FLOAT']],
  outputs: [['out:0', 'DT_FLOAT'], ['cond/Merge_1:0', 'DT_FLOAT']],
  sets: [{ x: [[1, 2, -0.5], [3]] }, { x: [[-1, 0.5, -2], [3]] }, { x: [[-3, 2, 0], [3]] }],
  build() {
    const g = new Builder();
    const f32 = { T: A.type('DT_FLOAT') };
    // Switch(pred, pred) and its two pivots, pred's Identity the data Switches take (as TF1 does).
    const pivots = (p, pred) => {
      g.add(`${p}/Switch`, 'Switch', [pred, pred], { T: A.type('DT_BOOL') });
      g.add(`${p}/switch_t`, 'Identity', [`${p}/Switch:1`], { T: A.type('DT_BOOL') });
      g.add(`${p}/switch_f`, 'Identity', [`${p}/Switch:0`], { T: A.type('DT_BOOL') });
      g.add(`${p}/pred_id`, 'Identity', [pred], { T: A.type('DT_BOOL') });
    };
    g.placeholder('x', 'DT_FLOAT', [3]);
    g.const('axis', 'DT_INT32', [1], [0]);
    g.const('zero', 'DT_FLOAT', [], [0]);
    g.add('Sum', 'Sum', ['x', 'axis'], { ...f32, Tidx: A.type('DT_INT32'), keep_dims: A.b(false) });
    g.add('Greater', 'Greater', ['Sum', 'zero'], f32);
    pivots('cond', 'Greater');
    // true branch
    g.add('cond/mul/Switch', 'Switch', ['x', 'cond/pred_id'], f32);
    g.const('cond/mul/y', 'DT_FLOAT', [], [2], ['^cond/switch_t']);
    g.add('cond/mul', 'Mul', ['cond/mul/Switch:1', 'cond/mul/y'], f32);
    g.const('cond/seven', 'DT_FLOAT', [], [7], ['^cond/switch_t']);
    g.add('cond/add', 'AddV2', ['cond/mul/Switch:1', 'cond/seven'], f32);
    // false branch, with a conditional inside
    g.add('cond/sub/Switch', 'Switch', ['x', 'cond/pred_id'], f32);
    g.const('cond/sub/y', 'DT_FLOAT', [], [1], ['^cond/switch_f']);
    g.add('cond/sub', 'Sub', ['cond/sub/Switch', 'cond/sub/y'], f32);
    g.add('cond/neg', 'Neg', ['cond/sub/Switch'], f32);
    g.const('cond/axis', 'DT_INT32', [1], [0], ['^cond/switch_f']);
    g.add('cond/Max', 'Max', ['cond/sub', 'cond/axis'], { ...f32, Tidx: A.type('DT_INT32'), keep_dims: A.b(false) });
    g.const('cond/zero', 'DT_FLOAT', [], [0], ['^cond/switch_f']);
    g.add('cond/Greater', 'Greater', ['cond/Max', 'cond/zero'], f32);
    pivots('cond/inner', 'cond/Greater');
    g.add('cond/inner/mul/Switch', 'Switch', ['cond/sub', 'cond/inner/pred_id'], f32);
    g.const('cond/inner/mul/y', 'DT_FLOAT', [], [10], ['^cond/inner/switch_t']);
    g.add('cond/inner/mul', 'Mul', ['cond/inner/mul/Switch:1', 'cond/inner/mul/y'], f32);
    g.add('cond/inner/neg/Switch', 'Switch', ['cond/sub', 'cond/inner/pred_id'], f32);
    g.add('cond/inner/neg', 'Neg', ['cond/inner/neg/Switch'], f32);
    g.add('cond/inner/Merge', 'Merge', ['cond/inner/neg', 'cond/inner/mul'], { ...f32, N: A.i(2) });
    // the results
    g.add('cond/Merge', 'Merge', ['cond/inner/Merge', 'cond/mul'], { ...f32, N: A.i(2) });
    g.add('cond/Merge_1', 'Merge', ['cond/neg', 'cond/add'], { ...f32, N: A.i(2) });
    g.add('out', 'Identity', ['cond/Merge'], f32);
    return g;
  },
};

// A TF1 conditional inside a TF1 loop's body: for i in range(n): acc = acc * 2 if i < 2 else
// acc + x (the branches read the loop variable and an invariant through Switches on the
// body's predicate).
MODELS.tf1_while_cond = {
  inputs: [['x', 'DT_FLOAT'], ['n', 'DT_INT32']],
  outputs: [['acc:0', 'DT_FLOAT']],
  sets: [{ x: [[1, -3], [2]], n: [[5], []] }],
  build() {
    const g = new Builder();
    const f32 = { T: A.type('DT_FLOAT') };
    const F = 'loop/while_context';
    const enter = (name, input, dtype, constant) => g.add(name, 'Enter', [input],
      { T: A.type(dtype), frame_name: A.s(F), is_constant: A.b(constant), parallel_iterations: A.i(10) });
    g.placeholder('x', 'DT_FLOAT', [2]);
    g.placeholder('n', 'DT_INT32', []);
    g.const('i0', 'DT_INT32', [], [0]);
    g.const('acc0', 'DT_FLOAT', [2], [1, 1]);
    enter('loop/Enter', 'i0', 'DT_INT32', false);
    enter('loop/Enter_1', 'acc0', 'DT_FLOAT', false);
    enter('loop/Enter_2', 'n', 'DT_INT32', true);
    enter('loop/Enter_3', 'x', 'DT_FLOAT', true);
    const lv = [['', 'DT_INT32'], ['_1', 'DT_FLOAT']];
    for (const [k, t] of lv) g.add(`loop/Merge${k}`, 'Merge', [`loop/Enter${k}`, `loop/NextIteration${k}`], { T: A.type(t), N: A.i(2) });
    g.add('loop/Less', 'Less', ['loop/Merge', 'loop/Enter_2'], { T: A.type('DT_INT32') });
    g.add('loop/LoopCond', 'LoopCond', ['loop/Less']);
    for (const [k, t] of lv) {
      g.add(`loop/Switch${k}`, 'Switch', [`loop/Merge${k}`, 'loop/LoopCond'], { T: A.type(t) });
      g.add(`loop/Identity${k}`, 'Identity', [`loop/Switch${k}:1`], { T: A.type(t) });
    }
    // the conditional in the body
    g.const('loop/two', 'DT_INT32', [], [2], ['^loop/Identity']);
    g.add('loop/Less_1', 'Less', ['loop/Identity', 'loop/two'], { T: A.type('DT_INT32') });
    g.add('loop/cond/Switch', 'Switch', ['loop/Less_1', 'loop/Less_1'], { T: A.type('DT_BOOL') });
    g.add('loop/cond/switch_t', 'Identity', ['loop/cond/Switch:1'], { T: A.type('DT_BOOL') });
    g.add('loop/cond/pred_id', 'Identity', ['loop/Less_1'], { T: A.type('DT_BOOL') });
    g.add('loop/cond/mul/Switch', 'Switch', ['loop/Identity_1', 'loop/cond/pred_id'], f32);
    g.const('loop/cond/mul/y', 'DT_FLOAT', [], [2], ['^loop/cond/switch_t']);
    g.add('loop/cond/mul', 'Mul', ['loop/cond/mul/Switch:1', 'loop/cond/mul/y'], f32);
    g.add('loop/cond/add/Switch', 'Switch', ['loop/Identity_1', 'loop/cond/pred_id'], f32);
    g.add('loop/cond/add/Switch_1', 'Switch', ['loop/Enter_3', 'loop/cond/pred_id'], f32);
    g.add('loop/cond/add', 'AddV2', ['loop/cond/add/Switch', 'loop/cond/add/Switch_1'], f32);
    g.add('loop/cond/Merge', 'Merge', ['loop/cond/add', 'loop/cond/mul'], { ...f32, N: A.i(2) });
    g.const('loop/add/y', 'DT_INT32', [], [1], ['^loop/Identity']);
    g.add('loop/add', 'AddV2', ['loop/Identity', 'loop/add/y'], { T: A.type('DT_INT32') });
    for (const [k, t, v] of [['', 'DT_INT32', 'loop/add'], ['_1', 'DT_FLOAT', 'loop/cond/Merge']]) {
      g.add(`loop/NextIteration${k}`, 'NextIteration', [v], { T: A.type(t) });
      g.add(`loop/Exit${k}`, 'Exit', [`loop/Switch${k}`], { T: A.type(t) });
    }
    g.add('acc', 'Identity', ['loop/Exit_1'], f32);
    return g;
  },
};

// ---------------------------------------------------------------- TensorProto writer
// The same bytes as /work/shared/tf-models/make_refs.js writes (and
// onnx.numpy_helper.from_array(array, name).SerializeToString() gives).
const ONNX_TYPE = { float32: 1, int32: 6, bool: 9 };
function varint(x) {
  let v = BigInt.asUintN(64, BigInt(x));
  const out = [];
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v) b |= 0x80;
    out.push(b);
  } while (v);
  return Buffer.from(out);
}
function tensorProto(name, dtype, dims, data) {
  const arr = dtype === 'float32' ? Float32Array.from(data) : dtype === 'int32' ? Int32Array.from(data) : Uint8Array.from(data);
  const raw = Buffer.from(arr.buffer, arr.byteOffset, arr.byteLength);
  const parts = [];
  for (const d of dims) parts.push(Buffer.from([(1 << 3) | 0]), varint(d));
  parts.push(Buffer.from([(2 << 3) | 0]), varint(ONNX_TYPE[dtype]));
  const nb = Buffer.from(name, 'utf8');
  parts.push(Buffer.from([(8 << 3) | 2]), varint(nb.length), nb);
  parts.push(Buffer.from([(9 << 3) | 2]), varint(raw.length), raw);
  return Buffer.concat(parts);
}

function localHandler(dir) {
  return {
    load: async () => {
      const json = JSON.parse(fs.readFileSync(path.join(dir, 'model.json'), 'utf8'));
      return tf.io.getModelArtifactsForJSON(json, async (manifest) => {
        const specs = [];
        const bufs = [];
        for (const group of manifest) {
          for (const p of group.paths) {
            const b = fs.readFileSync(path.join(dir, p));
            bufs.push(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
          }
          specs.push(...group.weights);
        }
        return [specs, tf.io.concatenateArrayBuffers(bufs)];
      });
    },
  };
}

async function main() {
  const warn = console.warn;
  console.warn = (...a) => { if (!String(a[0]).includes('You can use model.execute() instead')) warn(...a); };
  await tf.setBackend('cpu');
  await tf.ready();
  const names = process.argv.length > 2 ? process.argv.slice(2) : Object.keys(MODELS);
  for (const name of names) {
    const spec = MODELS[name];
    if (!spec) throw new Error('unknown model ' + name);
    const dir = path.join(HERE, name);
    spec.build().write(dir, sig(spec.inputs, spec.outputs));
    const model = await tf.loadGraphModel(localHandler(dir));
    const outNames = spec.outputs.map(([n]) => n);
    for (const old of fs.readdirSync(dir)) {
      if (old.startsWith('test_data_set_')) fs.rmSync(path.join(dir, old), { recursive: true });
    }
    for (const [s, set] of spec.sets.entries()) {
      const feeds = {};
      for (const [iname, dtype] of spec.inputs) {
        const [values, dims] = set[iname];
        feeds[iname] = tf.tensor(values, dims, JS_DTYPE[dtype]);
      }
      const run = async () => { const r = await model.executeAsync(feeds, outNames); return Array.isArray(r) ? r : [r]; };
      const a = await run();
      const b = await run();
      const sd = path.join(dir, `test_data_set_${s}`);
      fs.mkdirSync(sd, { recursive: true });
      spec.inputs.forEach(([iname, dtype], k) => {
        const t = feeds[iname];
        fs.writeFileSync(path.join(sd, `input_${k}.pb`), tensorProto(iname, JS_DTYPE[dtype], t.shape, t.dataSync()));
      });
      const shown = [];
      a.forEach((t, k) => {
        const d1 = Buffer.from(t.dataSync().buffer);
        const d2 = Buffer.from(b[k].dataSync().buffer);
        if (t.shape.join() !== b[k].shape.join() || Buffer.compare(d1, d2) !== 0) {
          throw new Error(`${name}: output ${outNames[k]} differs between two runs`);
        }
        fs.writeFileSync(path.join(sd, `output_${k}.pb`), tensorProto(outNames[k], t.dtype, t.shape, t.dataSync()));
        shown.push(`${outNames[k]}${JSON.stringify(t.shape)} ${t.dtype} ${JSON.stringify(Array.from(t.dataSync()).map((v) => +v.toPrecision(6)))}`);
      });
      console.log(`${name} set ${s}: ${shown.join('; ')}`);
      [...a, ...b, ...Object.values(feeds)].forEach((t) => t.dispose());
    }
    model.dispose();
  }
}

main().catch((e) => { console.error(e && e.stack || e); process.exit(1); });
