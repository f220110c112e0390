// ai.onnx.ml TreeEnsemble (ML opset 5), against trees evaluated here by plain recursion.
#include <kiln/error.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>

#include "op_test_util.h"

namespace kiln::testing {

namespace {
using A = ir::Attribute;
constexpr const char* kMl = "ai.onnx.ml";
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// A tensor of dtype t (float, double or float16) from doubles.
Tensor reals(DType t, const std::vector<double>& v) {
  const int64_t n = static_cast<int64_t>(v.size());
  if (t == DType::Double) return Tensor::from_vector<double>({n}, v);
  if (t == DType::Float) return Tensor::from_vector<float>({n}, std::vector<float>(v.begin(), v.end()));
  std::vector<Float16> h;
  for (double d : v) h.push_back(Float16(static_cast<float>(d)));
  return Tensor::from_vector<Float16>({n}, h);
}

Tensor matrix(DType t, int64_t rows, int64_t cols, const std::vector<double>& v) { return reals(t, v).reshaped({rows, cols}); }

// The flat attribute form of a forest.
struct Flat {
  std::vector<int64_t> feature, true_id, false_id, true_leaf, false_leaf, roots, target, missing_true;
  std::vector<double> split, weight, members;
  std::vector<uint8_t> mode;
  int64_t n_targets = -1, aggregate = 1, post = 0;

  ir::Attributes attrs(DType t) const {
    ir::Attributes a = {{"nodes_featureids", A::of_ints(feature)},
                        {"nodes_splits", A::of_tensor(reals(t, split))},
                        {"nodes_modes", A::of_tensor(Tensor::from_vector<uint8_t>({static_cast<int64_t>(mode.size())}, mode))},
                        {"nodes_truenodeids", A::of_ints(true_id)},
                        {"nodes_falsenodeids", A::of_ints(false_id)},
                        {"nodes_trueleafs", A::of_ints(true_leaf)},
                        {"nodes_falseleafs", A::of_ints(false_leaf)},
                        {"tree_roots", A::of_ints(roots)},
                        {"leaf_targetids", A::of_ints(target)},
                        {"leaf_weights", A::of_tensor(reals(t, weight))},
                        {"aggregate_function", A::of_int(aggregate)},
                        {"post_transform", A::of_int(post)}};
    if (n_targets >= 0) a["n_targets"] = A::of_int(n_targets);
    if (!members.empty()) a["membership_values"] = A::of_tensor(reals(t, members));
    if (!missing_true.empty()) a["nodes_missing_value_tracks_true"] = A::of_ints(missing_true);
    return a;
  }
};

std::vector<Tensor> run_forest(const Tensor& x, const ir::Attributes& attrs) {
  return run_op({.op = "TreeEnsemble", .inputs = {x}, .attrs = attrs, .domain = kMl, .domain_opset = 5});
}

// A tree as nested nodes, evaluated by recursion: the test's reference.
struct Tree {
  bool leaf = false;
  double weight = 0;
  int64_t target = 0;
  int64_t feature = 0;
  uint8_t mode = 0;
  double split = 0;
  std::vector<double> set;
  bool nan_true = false;
  std::unique_ptr<Tree> yes, no;

  double eval(const double* row, int64_t* target_out) const {
    if (leaf) {
      *target_out = target;
      return weight;
    }
    const double v = row[feature];
    bool t = false;
    switch (mode) {
      case 0: t = v <= split; break;
      case 1: t = v < split; break;
      case 2: t = v >= split; break;
      case 3: t = v > split; break;
      case 4: t = v == split; break;
      case 5: t = v != split; break;
      default: t = std::find(set.begin(), set.end(), v) != set.end();
    }
    if (std::isnan(v) && nan_true) t = true;
    return (t ? yes : no)->eval(row, target_out);
  }

  // Appends this (interior) node and its subtree to f; returns its node index.
  int64_t flatten(Flat& f) const {
    const int64_t at = static_cast<int64_t>(f.feature.size());
    f.feature.push_back(feature);
    f.split.push_back(mode == 6 ? 0 : split);
    f.mode.push_back(mode);
    f.missing_true.push_back(nan_true);
    for (auto* v : {&f.true_id, &f.false_id, &f.true_leaf, &f.false_leaf}) v->push_back(0);
    if (mode == 6) {
      f.members.insert(f.members.end(), set.begin(), set.end());
      f.members.push_back(kNaN);
    }
    auto link = [&](const Tree& child, std::vector<int64_t>& id, std::vector<int64_t>& is_leaf) {
      if (child.leaf) {
        id[at] = static_cast<int64_t>(f.weight.size());
        is_leaf[at] = 1;
        f.weight.push_back(child.weight);
        f.target.push_back(child.target);
      } else {
        id[at] = child.flatten(f);
      }
    };
    link(*yes, f.true_id, f.true_leaf);
    link(*no, f.false_id, f.false_leaf);
    return at;
  }
};

// A random tree over `features` features whose splits and weights are exact in dtype t.
std::unique_ptr<Tree> random_tree(std::mt19937& rng, int depth, int64_t features, int64_t targets) {
  auto t = std::make_unique<Tree>();
  std::uniform_int_distribution<int> coin(0, 3);
  auto q = [&] { return std::uniform_int_distribution<int>(-8, 8)(rng) / 4.0; };  // multiples of 1/4
  if (depth == 0 || (depth < 3 && coin(rng) == 0)) {
    t->leaf = true;
    t->weight = q() + 3;
    t->target = std::uniform_int_distribution<int64_t>(0, targets - 1)(rng);
    return t;
  }
  t->feature = std::uniform_int_distribution<int64_t>(0, features - 1)(rng);
  t->mode = static_cast<uint8_t>(std::uniform_int_distribution<int>(0, 6)(rng));
  t->split = q();
  if (t->mode == 6)
    for (int k = 0; k < 3; ++k) t->set.push_back(q());
  t->nan_true = coin(rng) == 0;
  t->yes = random_tree(rng, depth - 1, features, targets);
  t->no = random_tree(rng, depth - 1, features, targets);
  return t;
}

// Y by recursion over `trees`, aggregated as the op's aggregate_function `agg` says.
std::vector<double> expected(const std::vector<std::unique_ptr<Tree>>& trees, const std::vector<double>& x, int64_t rows,
                             int64_t features, int64_t targets, int agg, double max) {
  std::vector<double> y(static_cast<size_t>(rows * targets), agg == 2 ? max : agg == 3 ? -max : 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (const auto& t : trees) {
      int64_t target = 0;
      const double w = t->eval(&x[r * features], &target);
      double& s = y[r * targets + target];
      s = agg == 2 ? std::min(s, w) : agg == 3 ? std::max(s, w) : s + (agg == 0 ? w / static_cast<double>(trees.size()) : w);
    }
  return y;
}
}  // namespace

// The ONNX example: one tree whose interior nodes are LEQ then two set tests.
TEST(TreeEnsemble, SetMembershipExample) {
  Flat f;
  f.feature = {0, 0, 0};
  f.split = {11, 232344, kNaN};
  f.mode = {0, 6, 6};
  f.true_id = {1, 0, 1};
  f.false_id = {2, 2, 3};
  f.true_leaf = {0, 1, 1};
  f.false_leaf = {1, 0, 1};
  f.roots = {0};
  f.target = {0, 1, 2, 3};
  f.weight = {1, 10, 1000, 100};
  f.members = {1.2, 3.7, 8, 9, kNaN, 12, 7, kNaN};
  f.n_targets = 4;
  Tensor x = matrix(DType::Float, 6, 1, {1.2, 3.4, -0.12, kNaN, 12, 7});
  const std::vector<double> want = {1, 0, 0, 0, 0, 0, 0, 100, 0, 0, 0, 100, 0, 0, 1000, 0, 0, 0, 1000, 0, 0, 10, 0, 0};
  expect_near(run_forest(x, f.attrs(DType::Float))[0], matrix(DType::Float, 6, 4, want));
  // The last set needs no closing NaN, and 0 is a member like any other value.
  f.members = {1.2, 3.7, 8, 9, kNaN, 12, 0, 7};
  Tensor x0 = matrix(DType::Float, 2, 1, {0, 7});
  expect_near(run_forest(x0, f.attrs(DType::Float))[0], matrix(DType::Float, 2, 4, {0, 10, 0, 0, 0, 10, 0, 0}));
}

// Each comparison mode at a root on feature 1, with and without NaN tracking the true branch.
TEST(TreeEnsemble, EveryComparisonMode) {
  const std::vector<double> col = {0.4, 0.5, 0.6, kNaN, -1};
  std::vector<double> xv;
  for (double v : col) xv.insert(xv.end(), {9, v, -9});
  for (DType t : {DType::Float, DType::Double, DType::Float16})
    for (uint8_t mode = 0; mode < 6; ++mode)
      for (int64_t nan_true : {0, 1}) {
        SCOPED_TRACE(dtype_name(t) + " mode " + std::to_string(mode) + " nan_true " + std::to_string(nan_true));
        Flat f;
        f.feature = {1};
        f.split = {0.5};
        f.mode = {mode};
        f.true_id = {0};
        f.false_id = {1};
        f.true_leaf = {1};
        f.false_leaf = {1};
        f.roots = {0};
        f.target = {0, 0};
        f.weight = {1, 2};
        f.missing_true = {nan_true};
        std::vector<double> want;
        for (double v : col) {
          const bool yes[] = {v <= 0.5, v < 0.5, v >= 0.5, v > 0.5, v == 0.5, v != 0.5};
          want.push_back((yes[mode] || (std::isnan(v) && nan_true)) ? 1 : 2);
        }
        expect_near(run_forest(matrix(t, 5, 3, xv), f.attrs(t))[0], matrix(t, 5, 1, want));
      }
}

// Random forests of every mode, every aggregate function and dtype, on an odd shape.
TEST(TreeEnsemble, RandomForestsMatchRecursion) {
  const int64_t rows = 7, features = 5, targets = 3;
  for (DType t : {DType::Float, DType::Double, DType::Float16})
    for (int agg = 0; agg < 4; ++agg)
      for (uint32_t seed = 1; seed <= 3; ++seed) {
        SCOPED_TRACE(dtype_name(t) + " aggregate " + std::to_string(agg) + " seed " + std::to_string(seed));
        std::mt19937 rng(seed * 7919 + static_cast<uint32_t>(agg));
        std::vector<std::unique_ptr<Tree>> trees;
        Flat f;
        for (int k = 0; k < 4; ++k) {
          trees.push_back(random_tree(rng, 4, features, targets));  // a depth-4 root is never a leaf
          f.roots.push_back(trees.back()->flatten(f));
        }
        f.aggregate = agg;
        f.n_targets = targets;
        std::vector<double> x;
        std::uniform_int_distribution<int> q(-10, 10);
        for (int64_t i = 0; i < rows * features; ++i) x.push_back(i % 11 == 4 ? kNaN : q(rng) / 4.0);
        const double max = t == DType::Float16 ? 65504.0 : t == DType::Float ? std::numeric_limits<float>::max()
                                                                              : std::numeric_limits<double>::max();
        const std::vector<double> want = expected(trees, x, rows, features, targets, agg, max);
        expect_near(run_forest(matrix(t, rows, features, x), f.attrs(t))[0], matrix(t, rows, targets, want), 1e-6, 1e-3);
      }
}

TEST(TreeEnsemble, PostTransforms) {
  // Two one-leaf trees (both branches at the same leaf) give scores {a, 0, b}.
  auto forest = [](double a, double b, int64_t post) {
    Flat f;
    f.feature = {0, 0};
    f.split = {0, 0};
    f.mode = {0, 0};
    f.true_id = {0, 1};
    f.false_id = {0, 1};
    f.true_leaf = {1, 1};
    f.false_leaf = {1, 1};
    f.roots = {0, 1};
    f.target = {0, 2};
    f.weight = {a, b};
    f.post = post;
    return f;
  };
  Tensor x = matrix(DType::Double, 1, 1, {0});
  const double e1 = std::exp(1.0), em2 = std::exp(-2.0), one = 1.0;
  expect_near(run_forest(x, forest(1, -2, 0).attrs(DType::Double))[0], matrix(DType::Double, 1, 3, {1, 0, -2}));
  expect_near(run_forest(x, forest(1, -2, 1).attrs(DType::Double))[0],
              matrix(DType::Double, 1, 3, {e1 / (e1 + one + em2), one / (e1 + one + em2), em2 / (e1 + one + em2)}), 1e-12, 1e-9);
  expect_near(run_forest(x, forest(1, -2, 2).attrs(DType::Double))[0],
              matrix(DType::Double, 1, 3, {1 / (1 + std::exp(-1.0)), 0.5, 1 / (1 + std::exp(2.0))}), 1e-12, 1e-9);
  expect_near(run_forest(x, forest(1, -2, 3).attrs(DType::Double))[0],
              matrix(DType::Double, 1, 3, {e1 / (e1 + em2), 0, em2 / (e1 + em2)}), 1e-12, 1e-9);
  // Normal quantiles: probit(0.975) = 1.959963984540054, probit(0.1) = -1.2815515655446004,
  // probit(0) = -inf.
  const double inf = std::numeric_limits<double>::infinity();
  expect_near(run_forest(x, forest(0.975, 0.1, 4).attrs(DType::Double))[0],
              matrix(DType::Double, 1, 3, {1.959963984540054, -inf, -1.2815515655446004}), 1e-12, 1e-9);
}

TEST(TreeEnsemble, ShapeInference) {
  Flat f;
  f.feature = {2};
  f.split = {0};
  f.mode = {0};
  f.true_id = {0};
  f.false_id = {1};
  f.true_leaf = {1};
  f.false_leaf = {1};
  f.roots = {0};
  f.target = {0, 4};  // no n_targets: one more than the largest target id
  f.weight = {1, 2};
  auto t = infer_op("TreeEnsemble", {T(DType::Float16, {S("n"), 3})}, f.attrs(DType::Float16), 1, 17, {}, kMl, 5);
  EXPECT_EQ(t[0].str(), "float16[n,5]");
  expect_near(run_forest(matrix(DType::Float16, 2, 3, {0, 0, -1, 0, 0, 1}), f.attrs(DType::Float16))[0],
              matrix(DType::Float16, 2, 5, {1, 0, 0, 0, 0, 0, 0, 0, 0, 2}));
}

TEST(TreeEnsemble, BadTreesAndInputs) {
  // A valid two-node tree that each case below breaks in one place.
  Flat good;
  good.feature = {0, 1};
  good.split = {0, 0};
  good.mode = {0, 1};
  good.true_id = {1, 0};
  good.false_id = {0, 1};
  good.true_leaf = {0, 1};
  good.false_leaf = {1, 1};
  good.roots = {0};
  good.target = {0, 1};
  good.weight = {1, 2};
  Tensor x = matrix(DType::Float, 2, 2, {0, 1, 2, 3});
  auto fails = [&](Flat f, const std::string& what, const Tensor& in = Tensor()) {
    expect_error([&] { run_forest(in.defined() ? in : x, f.attrs(DType::Float)); }, what);
  };
  ASSERT_EQ(run_forest(x, good.attrs(DType::Float))[0].dims(), (std::vector<int64_t>{2, 2}));

  Flat f = good;
  f.true_leaf = {0, 0};
  f.true_id = {1, 0};  // node 1's true branch back to node 0
  fails(f, "(TreeEnsemble): the trees have a cycle: node 1's true branch leads back to node 0");
  f = good;
  f.true_leaf = {0, 0};
  f.true_id = {1, 1};  // a self-loop
  fails(f, "node 1's true branch leads back to node 1");
  f = good;
  f.true_id = {2, 0};
  fails(f, "node 0's true branch points at node 2, outside [0, 2)");
  f = good;
  f.false_id = {5, 1};
  fails(f, "node 0's false branch points at leaf 5, outside [0, 2)");
  f = good;
  f.roots = {0, 2};
  fails(f, "tree root 2 is outside the 2 nodes");
  f = good;
  f.roots = {};
  fails(f, "tree_roots is empty");
  f = good;
  f.mode = {0, 7};
  fails(f, "node 1 has mode 7");
  f = good;
  f.true_leaf = {0, 2};
  fails(f, "nodes_trueleafs must be 0 or 1");
  f = good;
  f.n_targets = 1;
  fails(f, "leaf target id 1 is outside n_targets 1");
  f = good;
  f.feature = {0, 2};
  fails(f, "node 1 reads feature 2 but X has 2 features");
  f = good;
  f.false_id = {0};
  fails(f, "nodes_falsenodeids has 1 entries but nodes_splits has 2");
  f = good;
  f.target = {0};
  fails(f, "leaf_targetids has 1 entries but leaf_weights has 2");
  f = good;
  f.mode = {6, 1};
  fails(f, "membership_values holds 0 NaN-separated sets but nodes_modes has 1 BRANCH_MEMBER nodes");
  f.members = {1, kNaN, 2, kNaN};
  fails(f, "membership_values holds 2 NaN-separated sets");
  f = good;
  f.aggregate = 4;
  fails(f, "aggregate_function must be 0 (AVERAGE)");
  f = good;
  f.post = 5;
  fails(f, "post_transform must be 0 (NONE)");
  fails(good, "X must be 2-D [N, F]", reals(DType::Float, {1, 2}));
  fails(good, "X must be float, double or float16", Tensor::from_vector<int64_t>({1, 2}, {1, 2}));
  fails(good, "nodes_splits is float[2] but X is double", matrix(DType::Double, 1, 2, {1, 2}));

  ir::Attributes a = good.attrs(DType::Float);
  a.erase("nodes_trueleafs");
  expect_error([&] { run_forest(x, a); }, "missing required attribute 'nodes_trueleafs'");
  a = good.attrs(DType::Float);
  a["nodes_modes"] = A::of_tensor(Tensor::from_vector<int64_t>({2}, {0, 1}));
  expect_error([&] { run_forest(x, a); }, "nodes_modes must be a 1-D uint8 tensor");
}

}  // namespace kiln::testing
