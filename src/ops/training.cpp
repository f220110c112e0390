// Optimizer steps of the ai.onnx.preview.training domain (version 1): Adagrad, Momentum, Adam;
// and Gradient's shape inference (its computation is the backward ops the importer expands it
// into, frontend/onnx/expand_gradient.h).
//
// Each takes the learning rate R and the step count T (scalars), then groups of n tensors
// each: the parameters X1..Xn, their gradients G1..Gn and the optimizer state (H for Adagrad,
// V for Momentum, V and H for Adam). The outputs are the updated X group followed by the
// updated state groups. Arithmetic is done in double.
#include <cmath>
#include <functional>

#include "ops/core/dispatch.h"
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

namespace {

const char* const kDomain = "ai.onnx.preview.training";

// groups_in tensor groups in, groups_out out; group k of the outputs has the type of input
// group out_src[k] (X, then the state groups).
struct Signature {
  int groups_in, groups_out;
  std::vector<int> out_src;
};

template <typename Ctx>
int group_size(const Ctx& ctx, const Signature& sig) {
  const int in = ctx.num_inputs() - 2;
  if (in < sig.groups_in || in % sig.groups_in != 0)
    ctx.fail("expects R, T and " + std::to_string(sig.groups_in) + " equal groups of tensors, got " +
             std::to_string(ctx.num_inputs()) + " inputs");
  const int n = in / sig.groups_in;
  if (ctx.num_outputs() != sig.groups_out * n)
    ctx.fail("expects " + std::to_string(sig.groups_out * n) + " outputs for " + std::to_string(n) +
             " tensors per group, got " + std::to_string(ctx.num_outputs()));
  return n;
}

void infer_optimizer(InferContext& ctx, const Signature& sig) {
  const int n = group_size(ctx, sig);
  const ir::TensorType& r = ctx.input(0);
  const ir::TensorType& t = ctx.input(1);
  if (r.dtype != DType::Undefined && r.dtype != DType::Float && r.dtype != DType::Double)
    ctx.fail("R must be float or double, got " + r.str());
  if (t.dtype != DType::Undefined && t.dtype != DType::Int64) ctx.fail("T must be int64, got " + t.str());
  if ((r.rank_known && r.rank() != 0) || (t.rank_known && t.rank() != 0))
    ctx.fail("R and T must be scalars, got " + r.str() + " and " + t.str());
  for (int i = 0; i < n; ++i) {
    const ir::TensorType& x = ctx.input(2 + i);
    if (x.dtype != DType::Undefined && x.dtype != DType::Float && x.dtype != DType::Double)
      ctx.fail("X" + std::to_string(i + 1) + " must be float or double, got " + x.str());
    for (int g = 1; g < sig.groups_in; ++g) {
      const ir::TensorType& o = ctx.input(2 + g * n + i);
      if (o.dtype != DType::Undefined && x.dtype != DType::Undefined && o.dtype != x.dtype)
        ctx.fail("input " + std::to_string(2 + g * n + i) + " " + o.str() + " must have the dtype of X" +
                 std::to_string(i + 1) + " " + x.str());
      if (!o.rank_known || !x.rank_known) continue;
      bool ok = o.rank() == x.rank();
      for (int d = 0; ok && d < x.rank(); ++d)
        ok = !(o.dims[d].is_static() && x.dims[d].is_static() && o.dims[d].value != x.dims[d].value);
      if (!ok)
        ctx.fail("input " + std::to_string(2 + g * n + i) + " " + o.str() + " must have the shape of X" +
                 std::to_string(i + 1) + " " + x.str());
    }
  }
  for (int k = 0; k < sig.groups_out; ++k)
    for (int i = 0; i < n; ++i)
      if (ctx.has_output(k * n + i)) ctx.set_output(k * n + i, ctx.input(2 + sig.out_src[k] * n + i));
}

// Per element: reads one value of each input group (ins) and writes one value per output
// group (outs).
using Update = std::function<void(const double* ins, double* outs)>;

void run_optimizer(KernelContext& ctx, const Signature& sig, const Update& update) {
  const int n = group_size(ctx, sig);
  const Tensor& r = ctx.input(0);
  const Tensor& t = ctx.input(1);
  if (r.numel() != 1 || (r.dtype() != DType::Float && r.dtype() != DType::Double))
    ctx.fail("R must be a float or double scalar, got " + r.describe());
  if (t.numel() != 1 || t.dtype() != DType::Int64) ctx.fail("T must be an int64 scalar, got " + t.describe());
  for (int i = 0; i < n; ++i) {
    const Tensor& x = ctx.input(2 + i);
    for (int g = 1; g < sig.groups_in; ++g) {
      const Tensor& o = ctx.input(2 + g * n + i);
      if (o.dims() != x.dims() || o.dtype() != x.dtype())
        ctx.fail("input " + std::to_string(2 + g * n + i) + " " + o.describe() + " must match X" +
                 std::to_string(i + 1) + " " + x.describe());
    }
    if (x.dtype() != DType::Float && x.dtype() != DType::Double)
      ctx.fail("X" + std::to_string(i + 1) + " must be float or double, got " + x.describe());
    std::vector<double> in(static_cast<size_t>(sig.groups_in)), out(static_cast<size_t>(sig.groups_out));
    std::vector<Tensor*> outs(static_cast<size_t>(sig.groups_out), nullptr);
    for (int k = 0; k < sig.groups_out; ++k)
      if (ctx.has_output(k * n + i)) outs[k] = &ctx.make_output(k * n + i, x.dtype(), x.dims());
    for (int64_t e = 0; e < x.numel(); ++e) {
      for (int g = 0; g < sig.groups_in; ++g) in[g] = ctx.input(2 + g * n + i).as_double(e);
      update(in.data(), out.data());
      for (int k = 0; k < sig.groups_out; ++k) {
        if (!outs[k]) continue;
        if (x.dtype() == DType::Float) outs[k]->data<float>()[e] = static_cast<float>(out[k]);
        else outs[k]->data<double>()[e] = out[k];
      }
    }
  }
}

const Signature kAdagrad{3, 2, {0, 2}};      // X, G, H -> X, H
const Signature kMomentum{3, 2, {0, 2}};     // X, G, V -> X, V
const Signature kAdam{4, 3, {0, 2, 3}};      // X, G, V, H -> X, V, H

void adagrad_kernel(KernelContext& ctx) {
  const ir::Node& node = ctx.node();
  const double decay = node.attr_float("decay_factor", 0.f);
  const double eps = node.attr_float("epsilon", 1e-6f);
  const double norm = node.attr_float("norm_coefficient", 0.f);
  const double r = ctx.input(0).as_double(0) / (1 + static_cast<double>(ctx.input(1).as_int64(0)) * decay);
  run_optimizer(ctx, kAdagrad, [&](const double* in, double* out) {
    const double g = norm * in[0] + in[1];
    const double h = in[2] + g * g;
    out[0] = in[0] - r * g / (std::sqrt(h) + eps);
    out[1] = h;
  });
}

template <typename Ctx>
float required_float(const Ctx& ctx, const char* name) {
  if (!ctx.node().has_attr(name)) ctx.fail(std::string("attribute '") + name + "' is required");
  return ctx.node().attr_float(name, 0.f);
}

template <typename Ctx>
bool momentum_nesterov(const Ctx& ctx) {
  if (!ctx.node().has_attr("mode")) ctx.fail("attribute 'mode' is required");
  const std::string mode = ctx.node().attr_string("mode", "");
  if (mode != "standard" && mode != "nesterov") ctx.fail("mode must be 'standard' or 'nesterov', got '" + mode + "'");
  return mode == "nesterov";
}

void momentum_kernel(KernelContext& ctx) {
  const double alpha = required_float(ctx, "alpha");
  const double beta = required_float(ctx, "beta");
  const double norm = required_float(ctx, "norm_coefficient");
  const bool nesterov = momentum_nesterov(ctx);
  const double r = ctx.input(0).as_double(0);
  // The first step (T == 0) takes the gradient at full weight.
  const double beta_adj = ctx.input(1).as_int64(0) > 0 ? beta : 1.0;
  run_optimizer(ctx, kMomentum, [&](const double* in, double* out) {
    const double g = norm * in[0] + in[1];
    const double v = alpha * in[2] + beta_adj * g;
    out[0] = nesterov ? in[0] - r * (g + alpha * v) : in[0] - r * v;
    out[1] = v;
  });
}

void adam_kernel(KernelContext& ctx) {
  const ir::Node& node = ctx.node();
  const double alpha = node.attr_float("alpha", 0.9f);
  const double beta = node.attr_float("beta", 0.999f);
  const double eps = node.attr_float("epsilon", 1e-6f);
  const double norm = node.attr_float("norm_coefficient", 0.f);
  const double norm_post = node.attr_float("norm_coefficient_post", 0.f);
  const int64_t t = ctx.input(1).as_int64(0);
  double r = ctx.input(0).as_double(0);
  if (t > 0) {
    const double td = static_cast<double>(t);
    r = r * std::sqrt(1 - std::pow(beta, td)) / (1 - std::pow(alpha, td));
  }
  run_optimizer(ctx, kAdam, [&](const double* in, double* out) {
    const double g = norm * in[0] + in[1];
    const double v = alpha * in[2] + (1 - alpha) * g;
    const double h = beta * in[3] + (1 - beta) * g * g;
    const double x = in[0] - r * v / (std::sqrt(h) + eps);
    out[0] = (1 - norm_post) * x;
    out[1] = v;
    out[2] = h;
  });
}

// Each output is the gradient with respect to the tensor whose value the input of the same
// position gives (xs come first among the inputs), so it has that input's type. The expansion
// checks the attributes; it runs this inference on the graph it reads.
void infer_gradient(InferContext& ctx) {
  for (int i = 0; i < ctx.num_outputs() && i < ctx.num_inputs(); ++i)
    if (ctx.has_output(i)) ctx.set_output(i, ctx.input(i));
}

}  // namespace

KILN_REGISTER_OPS(training) {
  reg.add({.name = "Adagrad", .domain = kDomain, .since_version = 1, .min_inputs = 5, .max_inputs = -1,
           .min_outputs = 2, .max_outputs = -1, .pattern = PatternKind::Opaque,
           .infer = [](InferContext& ctx) { infer_optimizer(ctx, kAdagrad); }, .kernel = adagrad_kernel});
  reg.add({.name = "Momentum", .domain = kDomain, .since_version = 1, .min_inputs = 5, .max_inputs = -1,
           .min_outputs = 2, .max_outputs = -1, .pattern = PatternKind::Opaque,
           .infer = [](InferContext& ctx) {
             required_float(ctx, "alpha");
             required_float(ctx, "beta");
             required_float(ctx, "norm_coefficient");
             momentum_nesterov(ctx);
             infer_optimizer(ctx, kMomentum);
           },
           .kernel = momentum_kernel});
  reg.add({.name = "Adam", .domain = kDomain, .since_version = 1, .min_inputs = 6, .max_inputs = -1,
           .min_outputs = 3, .max_outputs = -1, .pattern = PatternKind::Opaque,
           .infer = [](InferContext& ctx) { infer_optimizer(ctx, kAdam); }, .kernel = adam_kernel});
  // No kernel: nothing runs a Gradient node, the importer replaces it.
  reg.add({.name = "Gradient", .domain = kDomain, .since_version = 1, .min_inputs = 1, .max_inputs = -1,
           .min_outputs = 1, .max_outputs = -1, .pattern = PatternKind::Opaque, .infer = infer_gradient});
}

}  // namespace kiln::ops
