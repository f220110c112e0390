// Runs one node on the reference kernels and on the cpu backend and compares the results; the
// shared harness of the per-kernel-file tests in this folder.
#pragma once
#include <gtest/gtest.h>
#include <kiln/tensor.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <thread>

#include "backends/backend.h"
#include "ops/core/infer_graph.h"

namespace kiln::kernel_check {

struct Case {
  std::string op, domain;
  std::vector<std::vector<int64_t>> in_dims;
  std::vector<bool> constant;  // per input
  std::vector<std::vector<int64_t>> out_dims;
  ir::Attributes attrs = {};
  int64_t opset = 17;
  int threads = 1;
  float tol = 1e-4f;
  // Fills input i (default: uniform in [-1, 1]).
  std::function<void(size_t i, Tensor&)> fill = nullptr;
  // Also run from two threads at once (Kernel::run must be thread-safe).
  bool concurrent = false;
  // Also run with output 0 written over input 0 (elementwise ops the planner runs in place).
  bool in_place = false;
  // Also run with output 0 written over input `written_over` (a residual the plan lets a conv
  // overwrite), which the kernel must then accept (Kernel::writes_over); -1: not.
  int written_over = -1;
  // Optional inputs left out (the node gets no value there, the kernel a null tensor).
  std::vector<size_t> unset_inputs = {};
  // Kernel implementations the backend may not use (the next one that takes the node runs).
  std::vector<std::string> disabled = {};
  // The implementation expected to run the node ("" = any).
  std::string impl = "";
};

inline Tensor random_tensor(const std::vector<int64_t>& dims, std::mt19937& rng) {
  Tensor t(DType::Float, dims);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

// Returns false when the backend declined the node (and checks that matches expect_kernel).
inline bool check(const Case& c, bool expect_kernel = true) {
  std::mt19937 rng(42);
  ir::Graph g;
  g.opsets[""] = c.opset;
  g.opsets["kiln"] = 1;
  g.opsets["com.microsoft"] = 1;
  std::vector<ir::Value*> ins;
  std::vector<Tensor> data;
  auto unset = [&](size_t i) { return std::find(c.unset_inputs.begin(), c.unset_inputs.end(), i) != c.unset_inputs.end(); };
  for (size_t i = 0; i < c.in_dims.size(); ++i) {
    data.push_back(random_tensor(c.in_dims[i], rng));
    if (c.fill) c.fill(i, data.back());
    const std::string name = "in" + std::to_string(i);
    ins.push_back(unset(i) ? nullptr
                  : c.constant[i] ? g.add_constant(name, data.back())
                                  : g.add_input(name, ir::TensorType::from_dims(DType::Float, c.in_dims[i])));
  }
  std::vector<ir::Value*> outs;
  for (size_t i = 0; i < c.out_dims.size(); ++i)
    outs.push_back(g.add_value("y" + std::to_string(i), ir::TensorType::from_dims(DType::Float, c.out_dims[i])));
  ir::Node* n = g.add_node(c.op, ins, outs, c.attrs, "n", c.domain);
  for (ir::Value* o : outs) g.add_output(o);
  std::vector<const Tensor*> ptrs;
  for (size_t i = 0; i < data.size(); ++i) ptrs.push_back(unset(i) ? nullptr : &data[i]);
  const std::vector<Tensor> expected = ops::run_reference(*n, ptrs);
  auto backend = backends::make_cpu_backend(c.threads);
  backend->set_disabled_kernels(c.disabled);
  auto kernel = backend->create(*n);
  EXPECT_EQ(kernel != nullptr, expect_kernel) << c.op;
  if (!kernel) return false;
  if (!c.impl.empty()) {
    EXPECT_EQ(kernel->spec().impl, c.impl) << c.op;
  }
  auto compare = [&](const std::vector<Tensor>& actual) {
    for (size_t k = 0; k < c.out_dims.size(); ++k) {
      EXPECT_EQ(expected[k].dims(), c.out_dims[k]) << c.op << " output " << k;
      if (expected[k].dims() != c.out_dims[k]) return;
      for (int64_t i = 0; i < expected[k].numel(); ++i) {
        const float e = expected[k].data<float>()[i], a = actual[k].data<float>()[i];
        EXPECT_NEAR(a, e, c.tol * std::max(1.f, std::fabs(e))) << c.op << " output " << k << " at " << i;
        if (std::fabs(a - e) > c.tol * std::max(1.f, std::fabs(e))) return;  // one report is enough
      }
    }
  };
  auto run = [&]() {
    std::vector<Tensor> actual;
    for (const auto& d : c.out_dims) actual.emplace_back(DType::Float, d);
    std::vector<Tensor*> out_ptrs;
    for (auto& t : actual) out_ptrs.push_back(&t);
    kernel->run(ptrs, out_ptrs);
    return actual;
  };
  // Twice: prepacked state must not be consumed by a run.
  for (int round = 0; round < 2; ++round) compare(run());
  if (c.concurrent) {
    std::vector<Tensor> a, b;
    std::thread t1([&] { for (int i = 0; i < 20; ++i) a = run(); });
    std::thread t2([&] { for (int i = 0; i < 20; ++i) b = run(); });
    t1.join();
    t2.join();
    compare(a);
    compare(b);
  }
  if (c.in_place) {
    Tensor x = data[0].clone();
    std::vector<const Tensor*> in = ptrs;
    in[0] = &x;
    kernel->run(in, {&x});
    compare({x});
  }
  if (c.written_over >= 0) {
    EXPECT_TRUE(kernel->writes_over(c.written_over)) << c.op << " input " << c.written_over;
    Tensor z = data[static_cast<size_t>(c.written_over)].clone();
    std::vector<const Tensor*> in = ptrs;
    in[static_cast<size_t>(c.written_over)] = &z;
    kernel->run(in, {&z});
    compare({z});
  }
  return true;
}

// The implementation the cpu backend would pick first for a FusedConv with input x, weights of
// shape w (constant), attributes a and, if asked, a channel scale S; "" when every candidate
// declines.
inline std::string first_fused_conv_kernel(const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                                           const ir::Attributes& a, bool channel_scale = false) {
  ir::Graph g;
  g.opsets[""] = 17;
  g.opsets["kiln"] = 1;
  ir::Value* xv = g.add_input("x", ir::TensorType::from_dims(DType::Float, x));
  ir::Value* y = g.add_value("y");
  std::vector<ir::Value*> ins{xv, g.add_constant("w", Tensor(DType::Float, w))};
  if (channel_scale)  // FusedConv's S, after no bias and no residual
    ins.insert(ins.end(), {nullptr, nullptr, g.add_input("s", ir::TensorType::from_dims(DType::Float, {x[0], 1, 1, x[3]}))});
  ir::Node* node = g.add_node("FusedConv", ins, {y}, a, "n", "kiln");
  g.add_output(y);
  ops::ShapeInference().run(g);
  auto backend = backends::make_cpu_backend(1);
  for (const auto& c : backend->candidates(*node))
    if (c.make()) return c.spec.impl;
  return "";
}

}  // namespace kiln::kernel_check
