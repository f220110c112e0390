// Helpers for pass tests: build a small graph with the Graph API, run one pass (verifier on),
// then check op counts and that outputs on random inputs are unchanged (reference kernels).
#pragma once
#include <gtest/gtest.h>
#include <kiln/tensor.h>

#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>

#include "ir/graph.h"
#include "ir/verifier.h"
#include "ops/core/infer_graph.h"
#include "passes/graph_util.h"
#include "passes/pass_manager.h"
#include "passes/pipelines.h"
#include "runtime/reference_executor.h"

namespace kiln::passes::testing {

inline Tensor random_tensor(DType dt, const std::vector<int64_t>& dims, uint32_t seed, float lo = -1, float hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  Tensor t(dt, dims);
  for (int64_t i = 0; i < t.numel(); ++i) {
    float v = u(rng);
    switch (dt) {
      case DType::Float: t.data<float>()[i] = v; break;
      case DType::Double: t.data<double>()[i] = v; break;
      case DType::Int64: t.data<int64_t>()[i] = static_cast<int64_t>(v * 4); break;
      default: break;
    }
  }
  return t;
}

// A tiny graph builder: single-output ops, named values.
struct Builder {
  std::unique_ptr<ir::Graph> g = std::make_unique<ir::Graph>();
  uint32_t seed = 100;
  explicit Builder(int opset = 13) { g->opsets[""] = opset; }
  ir::Value* in(const std::string& name, std::vector<int64_t> dims, DType dt = DType::Float) {
    return g->add_input(name, ir::TensorType::from_dims(dt, dims));
  }
  ir::Value* c(Tensor t) { return g->add_constant(g->unique_name("c"), std::move(t)); }
  ir::Value* rand(std::vector<int64_t> dims, float lo = -1, float hi = 1) {
    return c(random_tensor(DType::Float, dims, seed++, lo, hi));
  }
  ir::Value* scalar(float v) { return c(Tensor::scalar<float>(v)); }
  ir::Value* ints(std::vector<int64_t> v) { return c(Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v)); }
  ir::Value* op(const std::string& type, std::vector<ir::Value*> ins, ir::Attributes attrs = {},
                const std::string& domain = "") {
    ir::Value* o = g->add_value(g->unique_name(type + "_out"));
    g->add_node(type, std::move(ins), {o}, std::move(attrs), "", domain);
    return o;
  }
  void out(ir::Value* v) { g->add_output(v); }
};

inline ir::Attribute I(int64_t v) { return ir::Attribute::of_int(v); }
inline ir::Attribute F(float v) { return ir::Attribute::of_float(v); }
inline ir::Attribute Is(std::vector<int64_t> v) { return ir::Attribute::of_ints(std::move(v)); }
inline ir::Attribute S(std::string v) { return ir::Attribute::of_string(std::move(v)); }

// An inference BatchNormalization of x's `c` channels with random statistics (variance >= 0.2).
inline ir::Value* batchnorm(Builder& b, ir::Value* x, int64_t c) {
  return b.op("BatchNormalization", {x, b.rand({c}, 0.5f, 1.5f), b.rand({c}), b.rand({c}), b.rand({c}, 0.2f, 2.f)},
              {{"epsilon", F(1e-3f)}});
}

inline int count(const ir::Graph& g, const std::string& op) {
  int n = 0;
  for (const ir::Node* node : g.nodes()) n += node->op_type() == op;
  return n;
}

inline std::vector<Tensor> run(const ir::Graph& g, const std::vector<Tensor>& ins) {
  return runtime::ReferenceExecutor(g).run(ins);
}

inline std::vector<Tensor> random_inputs(const ir::Graph& g, uint32_t seed = 7) {
  std::vector<Tensor> ins;
  for (const ir::Value* v : g.inputs()) ins.push_back(random_tensor(v->type.dtype, v->type.static_dims(), seed++));
  return ins;
}

inline void expect_close(const Tensor& a, const Tensor& b, double tol) {
  ASSERT_EQ(a.dims(), b.dims());
  ASSERT_EQ(a.dtype(), b.dtype());
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = a.as_double(i), y = b.as_double(i);
    ASSERT_NEAR(x, y, tol * (1 + std::abs(y))) << "element " << i;
  }
}

// Both graphs give the same outputs on the same random inputs (reference kernels).
inline void expect_same_outputs(const ir::Graph& ref, const ir::Graph& opt, double tol) {
  std::vector<Tensor> ins = random_inputs(ref);
  std::vector<Tensor> a = run(ref, ins), b = run(opt, ins);
  EXPECT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) expect_close(b[i], a[i], tol);
}

// Builds the graph twice, optimizes one copy with `passes` (verifier on, to a fixed point)
// and compares outputs on random inputs. Returns the optimized graph for count checks.
inline std::unique_ptr<ir::Graph> check_rewrite(const std::function<void(Builder&)>& build,
                                                std::vector<std::unique_ptr<Pass>> passes, double tol = 1e-5) {
  Builder ref, opt;
  build(ref);
  build(opt);
  ops::ShapeInference().run(*ref.g);
  ops::ShapeInference().run(*opt.g);
  std::vector<std::string> names;
  for (const ir::Value* v : opt.g->outputs()) names.push_back(v->name());
  PassManager pm(PassManager::Options{.verify = true});
  pm.add_stage(std::move(passes));
  pm.run(*opt.g);
  remove_dead_nodes(*opt.g);
  restore_output_names(*opt.g, names);
  ir::verify(*opt.g);
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(opt.g->outputs()[i]->name(), names[i]);
  expect_same_outputs(*ref.g, *opt.g, tol);
  return std::move(opt.g);
}

// The same for a lowering rewrite (src/lower/): `rewrite` runs once on the second copy (with the
// kiln domain declared) and returns how many rewrites it made, which must be `expect`.
inline std::unique_ptr<ir::Graph> check_lowering(const std::function<void(Builder&)>& build,
                                                 const std::function<int(ir::Graph&)>& rewrite, int expect,
                                                 double tol = 1e-5) {
  Builder ref, opt;
  ref.g->opsets["kiln"] = opt.g->opsets["kiln"] = 1;
  build(ref);
  build(opt);
  ops::ShapeInference().run(*ref.g);
  ops::ShapeInference().run(*opt.g);
  EXPECT_EQ(rewrite(*opt.g), expect);
  ops::ShapeInference().run(*opt.g);
  ir::verify(*opt.g);
  expect_same_outputs(*ref.g, *opt.g, tol);
  return std::move(opt.g);
}

template <typename... P>
std::vector<std::unique_ptr<Pass>> passes_of(P... p) {
  std::vector<std::unique_ptr<Pass>> v;
  (v.push_back(std::move(p)), ...);
  return v;
}

}  // namespace kiln::passes::testing
