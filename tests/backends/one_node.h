// A one-node graph over inputs of any dtype (integer indices, Slice starts, split sizes) with
// output types from shape inference, run on the reference kernels and on the cpu backend; the
// harness of the data-movement and reduction kernel tests (kernel_check.h makes float inputs).
#pragma once
#include <gtest/gtest.h>
#include <kiln/tensor.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <thread>

#include "backends/backend.h"
#include "ops/core/infer_graph.h"

namespace kiln::one_node {

struct In {
  Tensor value;           // undefined = absent optional input
  bool constant = false;  // an initializer (the kernel may read it at creation)
};

inline Tensor random(DType t, const std::vector<int64_t>& dims, unsigned seed = 7) {
  std::mt19937 rng(seed);
  Tensor x(t, dims);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t i = 0; i < x.numel(); ++i) {
    switch (t) {
      case DType::Float: x.data<float>()[i] = u(rng); break;
      case DType::Double: x.data<double>()[i] = u(rng); break;
      case DType::Int64: x.data<int64_t>()[i] = static_cast<int64_t>(rng()); break;
      case DType::Int32: x.data<int32_t>()[i] = static_cast<int32_t>(rng()); break;
      case DType::UInt8: x.data<uint8_t>()[i] = static_cast<uint8_t>(rng()); break;
      case DType::Float16: x.data<Float16>()[i] = Float16(u(rng)); break;
      default: break;
    }
  }
  return x;
}

inline Tensor ints(const std::vector<int64_t>& v) { return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v); }

class OneNode {
 public:
  OneNode(const std::string& op, std::vector<In> inputs, int num_outputs, ir::Attributes attrs = {},
          int64_t opset = 17)
      : g_(std::make_unique<ir::Graph>()), inputs_(std::move(inputs)) {
    g_->opsets[""] = opset;
    std::vector<ir::Value*> ins;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      const Tensor& t = inputs_[i].value;
      const std::string name = "in" + std::to_string(i);
      if (!t.defined()) ins.push_back(nullptr);
      else if (inputs_[i].constant) ins.push_back(g_->add_constant(name, t));
      else ins.push_back(g_->add_input(name, ir::TensorType::from_dims(t.dtype(), t.dims())));
    }
    std::vector<ir::Value*> outs;
    for (int i = 0; i < num_outputs; ++i) outs.push_back(g_->add_value("y" + std::to_string(i)));
    node_ = g_->add_node(op, ins, outs, std::move(attrs), "n");
    for (ir::Value* o : outs) g_->add_output(o);
    ops::ShapeInference().run(*g_);
  }

  const ir::Node& node() const { return *node_; }

  std::vector<const Tensor*> args() const {
    std::vector<const Tensor*> p;
    for (const In& in : inputs_) p.push_back(in.value.defined() ? &in.value : nullptr);
    return p;
  }

  std::unique_ptr<backends::Kernel> kernel(int threads = 1) const {
    return backends::make_cpu_backend(threads)->create(*node_);
  }

  std::vector<Tensor> reference() const { return ops::run_reference(*node_, args()); }

  std::vector<Tensor> run(const backends::Kernel& k) const {
    std::vector<Tensor> outs;
    std::vector<Tensor*> ptrs;
    for (const ir::Value* o : node_->outputs()) outs.emplace_back(o->type.dtype, o->type.static_dims());
    for (Tensor& t : outs) ptrs.push_back(&t);
    k.run(args(), ptrs);
    return outs;
  }

 private:
  std::unique_ptr<ir::Graph> g_;
  ir::Node* node_;
  std::vector<In> inputs_;
};

// Same dtype and dims, and equal bytes (tol = 0) or float values within tol relative.
inline void expect_same(const Tensor& want, const Tensor& got, float tol, const std::string& what) {
  ASSERT_EQ(want.dtype(), got.dtype()) << what;
  ASSERT_EQ(want.dims(), got.dims()) << what;
  if (tol == 0.f || want.dtype() != DType::Float) {
    EXPECT_EQ(std::memcmp(want.raw(), got.raw(), want.nbytes()), 0) << what;
    return;
  }
  for (int64_t i = 0; i < want.numel(); ++i) {
    const float e = want.data<float>()[i], a = got.data<float>()[i];
    if (std::isnan(e) && std::isnan(a)) continue;
    ASSERT_NEAR(a, e, tol * std::max(1.f, std::fabs(e))) << what << " at " << i;
  }
}

// Runs the node both ways (twice on the kernel, and from two threads at once) and compares.
// Returns false when the backend declined it, which must match expect_kernel.
inline bool check(const OneNode& n, bool expect_kernel = true, float tol = 0.f, int threads = 1) {
  auto k = n.kernel(threads);
  EXPECT_EQ(k != nullptr, expect_kernel) << n.node().op_type();
  if (!k) return false;
  const std::vector<Tensor> want = n.reference();
  for (int round = 0; round < 2; ++round) {
    const std::vector<Tensor> got = n.run(*k);
    for (size_t i = 0; i < want.size(); ++i) expect_same(want[i], got[i], tol, "output " + std::to_string(i));
  }
  std::vector<Tensor> a, b;
  std::thread t1([&] { a = n.run(*k); });
  std::thread t2([&] { b = n.run(*k); });
  t1.join();
  t2.join();
  for (size_t i = 0; i < want.size(); ++i) {
    expect_same(want[i], a[i], tol, "concurrent output " + std::to_string(i));
    expect_same(want[i], b[i], tol, "concurrent output " + std::to_string(i));
  }
  return true;
}

}  // namespace kiln::one_node
