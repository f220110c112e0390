// Control flow (opsets 1..17): If, Loop, Scan (the opset-8 form with a batch axis and the
// opset-9+ form with per-input axes and directions).
//
// Bodies run through KernelContext::subgraphs, which gives them the enclosing values as outer
// scope. Loop-carried values may be tensors, sequences or optionals (all one kiln::Tensor);
// scan outputs are tensors, stacked along a new axis.
#include <kiln/limits.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>

#include "ops/core/infer_graph.h"
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

namespace {

std::shared_ptr<ir::Graph> body_attr(const ir::Node& node, const char* name) {
  std::shared_ptr<ir::Graph> g = node.attr_graph(name);
  if (!g) throw Error(node.describe() + ": missing graph attribute '" + name + "'");
  return g;
}

ir::TensorType unify(InferContext& ctx, const ir::TensorType& a, const ir::TensorType& b) {
  return unify_types(a, b, [&] { return ctx.fresh_dim(); });
}

bool scalar_flag(KernelContext& ctx, const Tensor& t, const char* what) {
  if (t.kind() != ValueKind::Tensor || t.numel() != 1)
    ctx.fail(std::string(what) + " must be a single value, got " + t.describe());
  return t.as_int64(0) != 0;
}

void copy_elems(const Tensor& src, int64_t src_off, Tensor& dst, int64_t dst_off, int64_t n) {
  if (n <= 0) return;
  if (src.dtype() == DType::String) {
    const std::string* s = src.data<std::string>() + src_off;
    std::string* d = dst.data<std::string>() + dst_off;
    for (int64_t i = 0; i < n; ++i) d[i] = s[i];
    return;
  }
  const size_t es = dtype_size(src.dtype());
  std::memcpy(static_cast<char*>(dst.raw()) + dst_off * es, static_cast<const char*>(src.raw()) + src_off * es, n * es);
}

// x[..., index, ...] along axis, with that axis removed.
Tensor take(const Tensor& x, int axis, int64_t index) {
  std::vector<int64_t> dims = x.dims();
  const int64_t outer = product(dims, 0, axis), extent = dims[axis], inner = product(dims, axis + 1);
  dims.erase(dims.begin() + axis);
  Tensor out(x.dtype(), dims);
  for (int64_t o = 0; o < outer; ++o) copy_elems(x, (o * extent + index) * inner, out, o * inner, inner);
  return out;
}

// Stacks equally shaped tensors along a new axis. With no pieces, `empty` gives the element
// type (its static dims, when known).
Tensor stack(KernelContext& ctx, const std::vector<Tensor>& pieces, int64_t axis, const ir::TensorType& empty) {
  if (pieces.empty()) {
    std::vector<int64_t> dims;
    if (empty.is_static()) dims = empty.static_dims();
    axis = std::clamp<int64_t>(axis < 0 ? axis + static_cast<int64_t>(dims.size()) + 1 : axis, 0,
                               static_cast<int64_t>(dims.size()));
    dims.insert(dims.begin() + axis, 0);
    return Tensor(empty.dtype == DType::Undefined ? DType::Float : empty.dtype, dims);
  }
  const Tensor& first = pieces[0];
  for (const Tensor& p : pieces) {
    if (p.kind() != ValueKind::Tensor) ctx.fail("scan outputs must be tensors, got " + p.describe());
    if (p.dtype() != first.dtype() || p.dims() != first.dims())
      ctx.fail("scan output changes shape between iterations: " + first.describe() + " vs " + p.describe());
  }
  const int a = static_cast<int>(normalize_axis(axis, first.rank() + 1, ctx.node()));
  std::vector<int64_t> dims = first.dims();
  const int64_t n = static_cast<int64_t>(pieces.size());
  dims.insert(dims.begin() + a, n);
  Tensor out(first.dtype(), dims);
  const int64_t outer = product(first.dims(), 0, a), inner = product(first.dims(), a);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t o = 0; o < outer; ++o) copy_elems(pieces[t], o * inner, out, (o * n + t) * inner, inner);
  return out;
}

// ---------------------------------------------------------------- If

void infer_if(InferContext& ctx) {
  const ir::TensorType& c = ctx.input(0);
  if (c.dtype != DType::Undefined && c.dtype != DType::Bool) ctx.fail("cond must be bool, got " + c.str());
  auto then_g = body_attr(ctx.node(), "then_branch");
  auto else_g = body_attr(ctx.node(), "else_branch");
  for (const auto& g : {then_g, else_g}) {
    if (!g->inputs().empty()) ctx.fail("branch '" + g->name + "' must not take inputs");
    if (static_cast<int>(g->outputs().size()) != ctx.num_outputs())
      ctx.fail("branch '" + g->name + "' gives " + std::to_string(g->outputs().size()) + " outputs, node has " +
               std::to_string(ctx.num_outputs()));
  }
  // A branch whose shapes do not work out for these inputs (exporters write one branch per
  // case, each valid only for its own) leaves its outputs unknown until run time: only taking
  // it is an error. A branch the known condition selects must infer.
  const Tensor* known = ctx.value(0);
  const bool decided = known && known->numel() == 1;
  auto branch = [&](ir::Graph& g, bool taken) {
    try {
      return infer_subgraph(ctx, g, {});
    } catch (const UnsupportedError&) {
      throw;
    } catch (const Error&) {
      if (decided && taken) throw;
      return std::vector<ir::TensorType>(static_cast<size_t>(ctx.num_outputs()));
    }
  };
  std::vector<ir::TensorType> t = branch(*then_g, decided && known->as_int64(0) != 0);
  std::vector<ir::TensorType> e = branch(*else_g, decided && known->as_int64(0) == 0);
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    if (t[i].dtype != DType::Undefined && e[i].dtype != DType::Undefined && t[i].dtype != e[i].dtype)
      ctx.fail("output " + std::to_string(i) + " has dtype " + dtype_name(t[i].dtype) + " in one branch and " +
               dtype_name(e[i].dtype) + " in the other");
    if (known && known->numel() == 1) ctx.set_output(i, known->as_int64(0) ? t[i] : e[i]);
    else ctx.set_output(i, unify(ctx, t[i], e[i]));
  }
}

void run_if(KernelContext& ctx) {
  if (!ctx.subgraphs) ctx.fail("needs a subgraph runner");
  const bool cond = scalar_flag(ctx, ctx.input(0), "cond");
  auto g = body_attr(ctx.node(), cond ? "then_branch" : "else_branch");
  std::vector<Tensor> outs = (*ctx.subgraphs)(*g, {});
  if (static_cast<int>(outs.size()) != ctx.num_outputs())
    ctx.fail("branch gave " + std::to_string(outs.size()) + " outputs, node has " + std::to_string(ctx.num_outputs()));
  for (int i = 0; i < ctx.num_outputs(); ++i)
    if (ctx.has_output(i)) ctx.set_output(i, outs[i]);
}

// ---------------------------------------------------------------- Loop

// Inputs: M (max trip count), cond, N loop-carried values; body: (iteration, cond, N values)
// -> (cond, N values, K scan outputs); node outputs: N final values, K stacked scan outputs.
// By the spec a Loop without M and cond runs forever (the body's cond output is ignored).
constexpr const char* kNeverEnds =
    "has neither a trip count (M) nor a condition (cond), so by the ONNX spec it never ends";

void infer_loop(InferContext& ctx) {
  auto body = body_attr(ctx.node(), "body");
  const int n = ctx.num_inputs() - 2;
  if (n < 0) ctx.fail("takes at least 2 inputs (M, cond; either may be empty)");
  const int k = ctx.num_outputs() - n;
  if (k < 0) ctx.fail("has fewer outputs than loop-carried values");
  if (!ctx.has_input(0) && !ctx.has_input(1)) ctx.fail(kNeverEnds);
  if (static_cast<int>(body->inputs().size()) != 2 + n)
    ctx.fail("body takes " + std::to_string(body->inputs().size()) + " inputs, expected " + std::to_string(2 + n));
  if (static_cast<int>(body->outputs().size()) != 1 + n + k)
    ctx.fail("body gives " + std::to_string(body->outputs().size()) + " outputs, expected " + std::to_string(1 + n + k));
  if (ctx.has_input(0)) {
    const ir::TensorType& m = ctx.input(0);
    if (m.dtype != DType::Undefined && m.dtype != DType::Int64) ctx.fail("M must be int64, got " + m.str());
  }
  std::vector<ir::TensorType> ins = {ir::TensorType(DType::Int64, {}), ir::TensorType(DType::Bool, {})};
  for (int j = 0; j < n; ++j) ins.push_back(ctx.input(2 + j));
  // A body whose shapes do not work out (for a trip count that may be zero, or for the wider
  // types of later trips) leaves the loop's outputs unknown until run time, where a trip that
  // really fails is the error. Only a loop known to run its first trip must infer it.
  auto unknown_outputs = [&] {
    for (int j = 0; j < n; ++j) {
      ir::TensorType t = ins[2 + j];
      t.rank_known = false;
      t.dims.clear();
      ctx.set_output(j, t);
    }
    for (int s = 0; s < k; ++s) ctx.set_output(n + s, ir::TensorType());
  };
  auto known_flag = [&](int i, bool if_absent) -> std::optional<bool> {
    if (!ctx.has_input(i)) return if_absent;
    const Tensor* t = ctx.value(i);
    if (!t || t->numel() != 1) return std::nullopt;
    return i == 0 ? t->as_int64(0) > 0 : t->as_int64(0) != 0;
  };
  const std::optional<bool> has_trips = known_flag(0, true), starts = known_flag(1, true);
  const bool runs = has_trips && *has_trips && starts && *starts;
  // A trial pass shows which carried values change shape between iterations; the real pass
  // then starts from types that cover every iteration.
  std::vector<ir::TensorType> trial, outs;
  try {
    trial = infer_subgraph(ctx, *body, ins, /*keep=*/false);
  } catch (const UnsupportedError&) {
    throw;
  } catch (const Error&) {
    if (runs) throw;
    return unknown_outputs();
  }
  for (int j = 0; j < n; ++j) ins[2 + j] = unify(ctx, ins[2 + j], trial[1 + j]);
  try {
    outs = infer_subgraph(ctx, *body, ins);
  } catch (const UnsupportedError&) {
    throw;
  } catch (const Error&) {
    return unknown_outputs();
  }
  for (int j = 0; j < n; ++j) {
    ir::TensorType t = unify(ctx, ins[2 + j], outs[1 + j]);
    t.is_optional = outs[1 + j].is_optional;  // an optional that held a value is the value
    ctx.set_output(j, t);
  }
  for (int s = 0; s < k; ++s) {
    ir::TensorType t = outs[1 + n + s];
    if (!t.is_tensor()) throw UnsupportedError("scan outputs of Loop must be tensors, got " + t.str());
    if (t.rank_known) t.dims.insert(t.dims.begin(), ctx.fresh_dim());
    ctx.set_output(n + s, t);
  }
}

void run_loop(KernelContext& ctx) {
  if (!ctx.subgraphs) ctx.fail("needs a subgraph runner");
  auto body = body_attr(ctx.node(), "body");
  const int n = ctx.num_inputs() - 2;
  const int k = ctx.num_outputs() - n;
  if (n < 0 || k < 0) ctx.fail("inputs and outputs do not match the loop-carried values");
  if (!ctx.has_input(0) && !ctx.has_input(1)) ctx.fail(kNeverEnds);
  const int64_t cap = current_limits().max_loop_iterations;
  int64_t max_trips = std::numeric_limits<int64_t>::max();
  if (ctx.has_input(0)) {
    const Tensor& m = ctx.input(0);
    if (m.kind() != ValueKind::Tensor || m.numel() != 1 || m.dtype() != DType::Int64)
      ctx.fail("M must be a single int64, got " + m.describe());
    max_trips = m.as_int64(0);
  }
  bool cond = ctx.has_input(1) ? scalar_flag(ctx, ctx.input(1), "cond") : true;
  std::vector<Tensor> vars;
  for (int j = 0; j < n; ++j) vars.push_back(ctx.input(2 + j));
  std::vector<std::vector<Tensor>> scans(k);
  for (int64_t i = 0; i < max_trips && cond; ++i) {
    if (i >= cap)
      ctx.fail("still running after " + std::to_string(cap) +
               " iterations, the iteration cap (its condition never became false?)");
    std::vector<Tensor> args = {Tensor::scalar<int64_t>(i), Tensor::scalar<bool>(cond)};
    args.insert(args.end(), vars.begin(), vars.end());
    std::vector<Tensor> outs = (*ctx.subgraphs)(*body, args);
    if (static_cast<int>(outs.size()) != 1 + n + k)
      ctx.fail("body gave " + std::to_string(outs.size()) + " outputs, expected " + std::to_string(1 + n + k));
    cond = scalar_flag(ctx, outs[0], "the body's cond output");
    for (int j = 0; j < n; ++j) vars[j] = outs[1 + j];
    for (int s = 0; s < k; ++s) scans[s].push_back(outs[1 + n + s]);
  }
  for (int j = 0; j < n; ++j)
    if (ctx.has_output(j)) ctx.set_output(j, vars[j]);
  for (int s = 0; s < k; ++s)
    if (ctx.has_output(n + s)) ctx.set_output(n + s, stack(ctx, scans[s], 0, body->outputs()[1 + n + s]->type));
}

// ---------------------------------------------------------------- Scan

struct ScanLayout {
  int first_state = 0;  // 1 in the opset-8 form (input 0 = sequence_lens)
  int n = 0, m = 0, k = 0;  // states, scan inputs, scan outputs
  std::vector<int64_t> in_axes, in_dirs, out_axes, out_dirs;
  bool batched = false;  // opset 8: axis 0 of every input and output is a batch
};

ScanLayout scan_layout(const ir::Node& node, int64_t opset) {
  ScanLayout l;
  l.batched = opset < 9;
  l.first_state = l.batched ? 1 : 0;
  l.m = static_cast<int>(node.attr_int_required("num_scan_inputs"));
  l.n = node.num_inputs() - l.first_state - l.m;
  l.k = node.num_outputs() - l.n;
  if (l.m < 1 || l.n < 0 || l.k < 0)
    throw Error(node.describe() + ": num_scan_inputs = " + std::to_string(l.m) + " does not fit its " +
                std::to_string(node.num_inputs()) + " inputs and " + std::to_string(node.num_outputs()) + " outputs");
  auto ints = [&](const char* name, int count) {
    std::vector<int64_t> v = node.attr_ints(name, std::vector<int64_t>(count, 0));
    if (static_cast<int>(v.size()) != count)
      throw Error(node.describe() + ": attribute '" + name + "' needs " + std::to_string(count) + " values");
    for (int64_t d : v)
      if (std::string(name).find("directions") != std::string::npos && d != 0 && d != 1)
        throw Error(node.describe() + ": attribute '" + name + "' values must be 0 or 1");
    return v;
  };
  if (l.batched) {
    l.in_dirs = ints("directions", l.m);
    l.in_axes.assign(l.m, 0);
    l.out_axes.assign(l.k, 0);
    l.out_dirs.assign(l.k, 0);
  } else {
    l.in_axes = ints("scan_input_axes", l.m);
    l.in_dirs = ints("scan_input_directions", l.m);
    l.out_axes = ints("scan_output_axes", l.k);
    l.out_dirs = ints("scan_output_directions", l.k);
  }
  return l;
}

void infer_scan(InferContext& ctx) {
  auto body = body_attr(ctx.node(), "body");
  ScanLayout l = scan_layout(ctx.node(), ctx.opset());
  if (static_cast<int>(body->inputs().size()) != l.n + l.m)
    ctx.fail("body takes " + std::to_string(body->inputs().size()) + " inputs, expected " + std::to_string(l.n + l.m));
  if (static_cast<int>(body->outputs().size()) != l.n + l.k)
    ctx.fail("body gives " + std::to_string(body->outputs().size()) + " outputs, expected " + std::to_string(l.n + l.k));
  const int drop = l.batched ? 1 : 0;  // leading batch axis of states and scan inputs
  std::vector<ir::TensorType> ins;
  ir::Dim batch = ctx.fresh_dim(), length = ctx.fresh_dim();
  bool have_batch = false, have_length = false;
  for (int j = 0; j < l.n; ++j) {
    ir::TensorType t = ctx.input(l.first_state + j);
    if (l.batched && t.rank_known) {
      if (t.rank() < 1) ctx.fail("states need a batch axis");
      if (!have_batch) { batch = t.dims[0]; have_batch = true; }
      t.dims.erase(t.dims.begin());
    }
    ins.push_back(t);
  }
  for (int j = 0; j < l.m; ++j) {
    ir::TensorType t = ctx.input(l.first_state + l.n + j);
    if (t.rank_known) {
      if (l.batched) {
        if (t.rank() < 2) ctx.fail("scan inputs need batch and sequence axes");
        if (!have_batch) { batch = t.dims[0]; have_batch = true; }
        t.dims.erase(t.dims.begin());
      }
      const int a = static_cast<int>(normalize_axis(l.in_axes[j], t.rank(), ctx.node()));
      if (!have_length) { length = t.dims[a]; have_length = true; }
      t.dims.erase(t.dims.begin() + a);
    }
    ins.push_back(t);
  }
  std::vector<ir::TensorType> outs = infer_subgraph(ctx, *body, ins);
  for (int j = 0; j < l.n; ++j) {
    ir::TensorType t = unify(ctx, ins[j], outs[j]);
    if (drop && t.rank_known) t.dims.insert(t.dims.begin(), batch);
    ctx.set_output(j, t);
  }
  for (int s = 0; s < l.k; ++s) {
    ir::TensorType t = outs[l.n + s];
    if (!t.is_tensor()) throw UnsupportedError("scan outputs must be tensors, got " + t.str());
    if (t.rank_known) {
      const int a = static_cast<int>(normalize_axis(l.out_axes[s], t.rank() + 1, ctx.node()));
      t.dims.insert(t.dims.begin() + a, length);
      if (drop) t.dims.insert(t.dims.begin(), batch);
    }
    ctx.set_output(l.n + s, t);
  }
}

// One scan over unbatched states and inputs; returns the final states and stacked outputs.
std::vector<Tensor> scan_once(KernelContext& ctx, const ir::Graph& body, const ScanLayout& l,
                              std::vector<Tensor> states, const std::vector<Tensor>& xs) {
  int64_t length = -1;
  std::vector<int> axes;
  for (int j = 0; j < l.m; ++j) {
    const Tensor& x = xs[j];
    if (x.kind() != ValueKind::Tensor || x.rank() < 1) ctx.fail("scan inputs must be tensors of rank >= 1");
    axes.push_back(static_cast<int>(normalize_axis(l.in_axes[j], x.rank(), ctx.node())));
    const int64_t len = x.dim(axes.back());
    if (length >= 0 && len != length)
      ctx.fail("scan inputs differ in sequence length: " + std::to_string(length) + " vs " + std::to_string(len));
    length = len;
  }
  std::vector<std::vector<Tensor>> pieces(l.k);
  for (int64_t t = 0; t < length; ++t) {
    std::vector<Tensor> args = states;
    for (int j = 0; j < l.m; ++j) args.push_back(take(xs[j], axes[j], l.in_dirs[j] ? length - 1 - t : t));
    std::vector<Tensor> outs = (*ctx.subgraphs)(body, args);
    if (static_cast<int>(outs.size()) != l.n + l.k) ctx.fail("body gave the wrong number of outputs");
    for (int j = 0; j < l.n; ++j) states[j] = outs[j];
    for (int s = 0; s < l.k; ++s) pieces[s].push_back(outs[l.n + s]);
  }
  for (int s = 0; s < l.k; ++s) {
    if (l.out_dirs[s]) std::reverse(pieces[s].begin(), pieces[s].end());
    states.push_back(stack(ctx, pieces[s], l.out_axes[s], body.outputs()[l.n + s]->type));
  }
  return states;
}

void run_scan(KernelContext& ctx) {
  if (!ctx.subgraphs) ctx.fail("needs a subgraph runner");
  auto body = body_attr(ctx.node(), "body");
  ScanLayout l = scan_layout(ctx.node(), ctx.opset());
  std::vector<Tensor> states, xs;
  for (int j = 0; j < l.n; ++j) states.push_back(ctx.input(l.first_state + j));
  for (int j = 0; j < l.m; ++j) xs.push_back(ctx.input(l.first_state + l.n + j));
  std::vector<Tensor> result;
  if (!l.batched) {
    result = scan_once(ctx, *body, l, states, xs);
  } else {
    const Tensor& any = l.n ? states[0] : xs[0];
    if (any.rank() < 1) ctx.fail("inputs need a batch axis");
    const int64_t batch = any.dim(0);
    for (const auto* group : {&states, &xs})
      for (const Tensor& t : *group)
        if (t.kind() != ValueKind::Tensor || t.rank() < 1 || t.dim(0) != batch)
          ctx.fail("every state and scan input needs the batch axis of " + std::to_string(batch));
    if (ctx.has_input(0)) {
      const Tensor& lens = ctx.input(0);
      const int64_t full = xs[0].rank() >= 2 ? xs[0].dim(1) : -1;
      for (int64_t v : lens.to_int64_vector())
        if (v != full) throw UnsupportedError("Scan with sequence_lens shorter than the sequence axis is not supported");
    }
    std::vector<std::vector<Tensor>> per_output(l.n + l.k);
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<Tensor> sb, xb;
      for (const Tensor& t : states) sb.push_back(take(t, 0, b));
      for (const Tensor& t : xs) xb.push_back(take(t, 0, b));
      std::vector<Tensor> r = scan_once(ctx, *body, l, sb, xb);
      for (int i = 0; i < l.n + l.k; ++i) per_output[i].push_back(r[i]);
    }
    for (int i = 0; i < l.n + l.k; ++i) {
      ir::TensorType elem = i < l.n ? body->outputs()[i]->type : ir::TensorType();
      result.push_back(stack(ctx, per_output[i], 0, elem));
    }
  }
  for (int i = 0; i < l.n + l.k; ++i)
    if (ctx.has_output(i)) ctx.set_output(i, result[i]);
}

}  // namespace

KILN_REGISTER_OPS(control_flow) {
  reg.add({.name = "If", .since_version = 1, .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = -1,
           .infer = infer_if, .kernel = run_if});
  // M and cond are both optional (empty names), but their slots always exist.
  reg.add({.name = "Loop", .since_version = 1, .min_inputs = 0, .max_inputs = -1, .min_outputs = 1, .max_outputs = -1,
           .infer = infer_loop, .kernel = run_loop});
  // min_inputs 0: the opset-8 form's first input (sequence_lens) may be empty.
  reg.add({.name = "Scan", .since_version = 8, .min_inputs = 0, .max_inputs = -1, .min_outputs = 1, .max_outputs = -1,
           .infer = infer_scan, .kernel = run_scan});
}

}  // namespace kiln::ops
