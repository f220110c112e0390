// ai.onnx.ml TreeEnsemble (ML opset 5): a forest of binary decision trees over X [N, F]. Each
// tree routes a row from its root to one leaf; the leaves' weights combine per target into
// Y [N, n_targets], of X's dtype (float, double or float16).
//
// The trees are flat arrays. Interior node i compares X[row, nodes_featureids[i]] with
// nodes_splits[i] by nodes_modes[i] (uint8: 0 LEQ, 1 LT, 2 GTE, 3 GT, 4 EQ, 5 NEQ, 6 MEMBER)
// and goes on to nodes_truenodeids[i] or nodes_falsenodeids[i]: an index into leaf_weights /
// leaf_targetids where nodes_trueleafs / nodes_falseleafs say so, else another node. A NaN
// feature takes the true branch where nodes_missing_value_tracks_true says so (else it
// compares as NaN does). MEMBER nodes test membership of a set: membership_values split at
// its NaNs, the k-th set for the k-th MEMBER node in nodes_modes order (the spec's order).
//
// aggregate_function as ONNX's reference computes it: SUM, AVERAGE (the sum over the number of
// trees), MIN and MAX (a target no leaf reaches keeps the dtype's largest or lowest value).
// post_transform, which that reference leaves out, as its ML-domain meaning: SOFTMAX per row,
// LOGISTIC, SOFTMAX_ZERO (a softmax of the nonzero scores, zeros stay zero) and PROBIT
// (sqrt(2) * erfinv(2 s - 1)). n_targets, when absent, is one more than the largest target id.
#include <kiln/error.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "ops/core/dispatch.h"
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

namespace {

enum Mode : uint8_t { kLeq = 0, kLt, kGte, kGt, kEq, kNeq, kMember };
enum Aggregate : int64_t { kAverage = 0, kSum, kMin, kMax };
enum PostTransform : int64_t { kNone = 0, kSoftmax, kLogistic, kSoftmaxZero, kProbit };

struct Ensemble {
  std::vector<int64_t> feature;
  std::vector<double> split;
  std::vector<uint8_t> mode;
  std::vector<int64_t> next[2];  // [0]: the false branch, [1]: the true branch
  std::vector<int64_t> is_leaf[2];
  std::vector<int64_t> nan_true;
  std::vector<std::vector<double>> members;  // sorted, for MEMBER nodes
  std::vector<int64_t> roots;
  std::vector<double> weight;
  std::vector<int64_t> target;
  int64_t n_targets = 0;
  int64_t aggregate = kSum, post = kNone;
};

bool is_tree_dtype(DType t) { return t == DType::Float || t == DType::Double || t == DType::Float16; }

template <typename Ctx>
std::vector<int64_t> required_ints(const Ctx& ctx, const std::string& name) {
  if (!ctx.node().has_attr(name)) ctx.fail("missing required attribute '" + name + "'");
  return ctx.node().attr_ints(name);
}

// A float tensor attribute (splits, weights, membership values): 1-D, of X's dtype (`x`;
// Undefined when not known yet), as doubles.
template <typename Ctx>
std::vector<double> real_tensor(const Ctx& ctx, const std::string& name, DType x) {
  const Tensor& t = ctx.node().attr_tensor_required(name);
  if (t.rank() != 1) ctx.fail(name + " must be 1-D, got " + t.describe());
  if (!is_tree_dtype(t.dtype())) ctx.fail(name + " must be float, double or float16, got " + t.describe());
  if (x != DType::Undefined && t.dtype() != x)
    ctx.fail(name + " is " + t.describe() + " but X is " + dtype_name(x) + "; they must share a dtype");
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = t.as_double(i);
  return v;
}

template <typename Ctx>
void check_length(const Ctx& ctx, const std::string& name, size_t got, size_t want, const std::string& of) {
  if (got != want)
    ctx.fail(name + " has " + std::to_string(got) + " entries but " + of + " has " + std::to_string(want));
}

// Interior-node links must not loop, or a row would never reach a leaf: a depth-first walk
// from every root (explicit stack, as trees can be deep) that meets a node on its own path.
template <typename Ctx>
void check_acyclic(const Ctx& ctx, const Ensemble& e) {
  const size_t n = e.feature.size();
  std::vector<uint8_t> state(n, 0);  // 0 unseen, 1 on the current path, 2 done
  std::vector<std::pair<int64_t, int>> stack;  // node, next branch to follow
  for (int64_t root : e.roots) {
    if (state[root]) continue;
    state[root] = 1;
    stack.push_back({root, 0});
    while (!stack.empty()) {
      const int64_t i = stack.back().first;
      const int branch = stack.back().second++;
      if (branch == 2) {
        state[i] = 2;
        stack.pop_back();
        continue;
      }
      if (e.is_leaf[branch][i]) continue;
      const int64_t c = e.next[branch][i];
      if (state[c] == 1)
        ctx.fail("the trees have a cycle: node " + std::to_string(i) + "'s " + (branch ? "true" : "false") +
                 " branch leads back to node " + std::to_string(c));
      if (state[c] == 0) {
        state[c] = 1;
        stack.push_back({c, 0});
      }
    }
  }
}

// Reads and checks every attribute; x: X's dtype (Undefined when not known yet).
template <typename Ctx>
Ensemble read_ensemble(const Ctx& ctx, DType x) {
  const ir::Node& node = ctx.node();
  Ensemble e;
  e.split = real_tensor(ctx, "nodes_splits", x);
  const size_t n = e.split.size();
  e.feature = required_ints(ctx, "nodes_featureids");
  e.next[1] = required_ints(ctx, "nodes_truenodeids");
  e.next[0] = required_ints(ctx, "nodes_falsenodeids");
  e.is_leaf[1] = required_ints(ctx, "nodes_trueleafs");
  e.is_leaf[0] = required_ints(ctx, "nodes_falseleafs");
  e.nan_true = node.attr_ints("nodes_missing_value_tracks_true", std::vector<int64_t>(n, 0));
  const std::pair<const char*, const std::vector<int64_t>*> per_node[] = {
      {"nodes_featureids", &e.feature},
      {"nodes_truenodeids", &e.next[1]},
      {"nodes_falsenodeids", &e.next[0]},
      {"nodes_trueleafs", &e.is_leaf[1]},
      {"nodes_falseleafs", &e.is_leaf[0]},
      {"nodes_missing_value_tracks_true", &e.nan_true}};
  for (const auto& [name, v] : per_node) check_length(ctx, name, v->size(), n, "nodes_splits");
  const Tensor& modes = node.attr_tensor_required("nodes_modes");
  if (modes.dtype() != DType::UInt8 || modes.rank() != 1)
    ctx.fail("nodes_modes must be a 1-D uint8 tensor, got " + modes.describe());
  check_length(ctx, "nodes_modes", static_cast<size_t>(modes.numel()), n, "nodes_splits");
  e.mode.assign(modes.data<uint8_t>(), modes.data<uint8_t>() + n);
  if (node.has_attr("nodes_hitrates"))
    check_length(ctx, "nodes_hitrates", static_cast<size_t>(node.attr_tensor_required("nodes_hitrates").numel()), n,
                 "nodes_splits");

  e.weight = real_tensor(ctx, "leaf_weights", x);
  e.target = required_ints(ctx, "leaf_targetids");
  const size_t leaves = e.weight.size();
  check_length(ctx, "leaf_targetids", e.target.size(), leaves, "leaf_weights");
  e.roots = required_ints(ctx, "tree_roots");
  if (e.roots.empty()) ctx.fail("tree_roots is empty; the ensemble needs at least one tree");

  for (size_t i = 0; i < n; ++i) {
    const std::string at = "node " + std::to_string(i);
    if (e.mode[i] > kMember) ctx.fail(at + " has mode " + std::to_string(e.mode[i]) + "; nodes_modes are 0 to 6");
    if (e.feature[i] < 0) ctx.fail(at + " reads feature " + std::to_string(e.feature[i]) + ", which is negative");
    if (e.nan_true[i] != 0 && e.nan_true[i] != 1)
      ctx.fail(at + ": nodes_missing_value_tracks_true must be 0 or 1, got " + std::to_string(e.nan_true[i]));
    for (int b = 0; b < 2; ++b) {
      const char* side = b ? "true" : "false";
      if (e.is_leaf[b][i] != 0 && e.is_leaf[b][i] != 1)
        ctx.fail(at + ": nodes_" + side + "leafs must be 0 or 1, got " + std::to_string(e.is_leaf[b][i]));
      const int64_t c = e.next[b][i], limit = static_cast<int64_t>(e.is_leaf[b][i] ? leaves : n);
      if (c < 0 || c >= limit)
        ctx.fail(at + "'s " + side + " branch points at " + (e.is_leaf[b][i] ? "leaf " : "node ") + std::to_string(c) +
                 ", outside [0, " + std::to_string(limit) + ")");
    }
  }
  for (int64_t r : e.roots)
    if (r < 0 || r >= static_cast<int64_t>(n))
      ctx.fail("tree root " + std::to_string(r) + " is outside the " + std::to_string(n) + " nodes");
  check_acyclic(ctx, e);

  // One set per MEMBER node: the runs of membership_values between NaNs (the last NaN optional).
  e.members.resize(n);
  const size_t n_member = static_cast<size_t>(std::count(e.mode.begin(), e.mode.end(), kMember));
  std::vector<std::vector<double>> sets;
  if (node.has_attr("membership_values")) {
    std::vector<double> run;
    const std::vector<double> mv = real_tensor(ctx, "membership_values", x);
    for (size_t i = 0; i < mv.size(); ++i) {
      if (!std::isnan(mv[i])) run.push_back(mv[i]);
      if (std::isnan(mv[i]) || i + 1 == mv.size()) {
        sets.push_back(std::move(run));
        run.clear();
      }
    }
  }
  if (sets.size() != n_member)
    ctx.fail("membership_values holds " + std::to_string(sets.size()) + " NaN-separated sets but nodes_modes has " +
             std::to_string(n_member) + " BRANCH_MEMBER nodes");
  for (size_t i = 0, k = 0; i < n; ++i)
    if (e.mode[i] == kMember) {
      e.members[i] = std::move(sets[k++]);
      std::sort(e.members[i].begin(), e.members[i].end());
    }

  int64_t max_target = -1;
  for (size_t j = 0; j < leaves; ++j) {
    if (e.target[j] < 0) ctx.fail("leaf " + std::to_string(j) + " has negative target id " + std::to_string(e.target[j]));
    max_target = std::max(max_target, e.target[j]);
  }
  e.n_targets = node.attr_int("n_targets", max_target + 1);
  if (e.n_targets < 1) ctx.fail("n_targets must be >= 1, got " + std::to_string(e.n_targets));
  if (max_target >= e.n_targets)
    ctx.fail("leaf target id " + std::to_string(max_target) + " is outside n_targets " + std::to_string(e.n_targets));
  e.aggregate = node.attr_int("aggregate_function", kSum);
  if (e.aggregate < kAverage || e.aggregate > kMax)
    ctx.fail("aggregate_function must be 0 (AVERAGE), 1 (SUM), 2 (MIN) or 3 (MAX), got " + std::to_string(e.aggregate));
  e.post = node.attr_int("post_transform", kNone);
  if (e.post < kNone || e.post > kProbit)
    ctx.fail("post_transform must be 0 (NONE), 1 (SOFTMAX), 2 (LOGISTIC), 3 (SOFTMAX_ZERO) or 4 (PROBIT), got " +
             std::to_string(e.post));
  return e;
}

template <typename Ctx>
void check_features(const Ctx& ctx, const Ensemble& e, int64_t features) {
  for (size_t i = 0; i < e.feature.size(); ++i)
    if (e.feature[i] >= features)
      ctx.fail("node " + std::to_string(i) + " reads feature " + std::to_string(e.feature[i]) + " but X has " +
               std::to_string(features) + " features");
}

bool goes_true(const Ensemble& e, size_t i, double v) {
  if (std::isnan(v) && e.nan_true[i]) return true;
  const double s = e.split[i];
  switch (e.mode[i]) {
    case kLeq: return v <= s;
    case kLt: return v < s;
    case kGte: return v >= s;
    case kGt: return v > s;
    case kEq: return v == s;
    case kNeq: return v != s;
    default: return !std::isnan(v) && std::binary_search(e.members[i].begin(), e.members[i].end(), v);
  }
}

// The leaf a row reaches from `root` (read_ensemble ruled out cycles).
int64_t leaf_of(const Ensemble& e, int64_t root, const double* row) {
  int64_t i = root;
  for (;;) {
    const int b = goes_true(e, static_cast<size_t>(i), row[e.feature[i]]) ? 1 : 0;
    if (e.is_leaf[b][i]) return e.next[b][i];
    i = e.next[b][i];
  }
}

// erfinv(y) for y in (-1, 1): Giles' single-precision approximation, then two Newton steps
// on erf for double accuracy.
double erfinv(double y) {
  if (y <= -1) return -std::numeric_limits<double>::infinity();
  if (y >= 1) return std::numeric_limits<double>::infinity();
  double w = -std::log((1 - y) * (1 + y)), p;
  if (w < 5) {
    w -= 2.5;
    p = 2.81022636e-08;
    for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164,
                     0.246640727, 1.50140941})
      p = c + p * w;
  } else {
    w = std::sqrt(w) - 3;
    p = -0.000200214257;
    for (double c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
                     1.00167406, 2.83297682})
      p = c + p * w;
  }
  double x = p * y;
  const double two_over_sqrt_pi = 2 / std::sqrt(std::acos(-1.0));
  for (int k = 0; k < 2; ++k) x -= (std::erf(x) - y) / (two_over_sqrt_pi * std::exp(-x * x));
  return x;
}

void post_transform(int64_t post, double* s, int64_t n) {
  if (post == kLogistic) {
    for (int64_t j = 0; j < n; ++j) s[j] = 1 / (1 + std::exp(-s[j]));
  } else if (post == kProbit) {
    for (int64_t j = 0; j < n; ++j) s[j] = std::sqrt(2.0) * erfinv(2 * s[j] - 1);
  } else if (post == kSoftmax || post == kSoftmaxZero) {
    const bool skip_zeros = post == kSoftmaxZero;
    double top = -std::numeric_limits<double>::infinity(), sum = 0;
    for (int64_t j = 0; j < n; ++j)
      if (!(skip_zeros && s[j] == 0)) top = std::max(top, s[j]);
    for (int64_t j = 0; j < n; ++j)
      if (!(skip_zeros && s[j] == 0)) sum += s[j] = std::exp(s[j] - top);
    for (int64_t j = 0; j < n; ++j)
      if (!(skip_zeros && s[j] == 0)) s[j] /= sum;
  }
}

// The largest finite value of dtype t (MIN starts there, MAX at its negation).
double dtype_max(DType t) {
  if (t == DType::Float16) return 65504.0;
  return t == DType::Float ? std::numeric_limits<float>::max() : std::numeric_limits<double>::max();
}

void infer_tree_ensemble(InferContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  if (x.dtype != DType::Undefined && !is_tree_dtype(x.dtype)) ctx.fail("X must be float, double or float16, got " + x.str());
  if (x.rank_known && x.rank() != 2) ctx.fail("X must be 2-D [N, F], got " + x.str());
  const Ensemble e = read_ensemble(ctx, x.dtype);
  if (x.rank_known && x.dims[1].is_static()) check_features(ctx, e, x.dims[1].value);
  const ir::Dim rows = x.rank_known ? x.dims[0] : ctx.fresh_dim();
  ctx.set_output(0, x.dtype, {rows, ir::Dim(e.n_targets)});
}

void tree_ensemble_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (!is_tree_dtype(x.dtype())) ctx.fail("X must be float, double or float16, got " + x.describe());
  if (x.rank() != 2) ctx.fail("X must be 2-D [N, F], got " + x.describe());
  const Ensemble e = read_ensemble(ctx, x.dtype());
  const int64_t rows = x.dim(0), features = x.dim(1), targets = e.n_targets;
  check_features(ctx, e, features);
  const double start = e.aggregate == kMin ? dtype_max(x.dtype()) : e.aggregate == kMax ? -dtype_max(x.dtype()) : 0.0;
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    // Y first: n_targets comes from the model, and an output over the memory cap is a
    // kiln::Error before any scratch of that size exists.
    T* y = ctx.make_output(0, x.dtype(), {rows, targets}).template data<T>();
    std::vector<double> row(static_cast<size_t>(features)), score(static_cast<size_t>(targets));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t f = 0; f < features; ++f) row[f] = x.as_double(r * features + f);
      std::fill(score.begin(), score.end(), start);
      for (int64_t root : e.roots) {
        const int64_t leaf = leaf_of(e, root, row.data());
        double& s = score[e.target[leaf]];
        const double w = e.weight[leaf];
        s = e.aggregate == kMin ? std::min(s, w) : e.aggregate == kMax ? std::max(s, w) : s + w;
      }
      if (e.aggregate == kAverage)
        for (double& s : score) s /= static_cast<double>(e.roots.size());
      post_transform(e.post, score.data(), targets);
      for (int64_t t = 0; t < targets; ++t) y[r * targets + t] = static_cast<T>(static_cast<compute_t<T>>(score[t]));
    }
  });
}

}  // namespace

KILN_REGISTER_OPS(tree_ensemble) {
  reg.add({.name = "TreeEnsemble", .domain = "ai.onnx.ml", .since_version = 5, .min_inputs = 1, .max_inputs = 1,
           .pattern = PatternKind::Opaque, .infer = infer_tree_ensemble, .kernel = tree_ensemble_kernel});
}

}  // namespace kiln::ops
