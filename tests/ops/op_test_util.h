// Helpers for op-family unit tests: run one op on the reference kernels (with shape inference
// checked against the kernel's actual outputs) or infer its types on symbolic inputs.
#pragma once
#include <gtest/gtest.h>
#include <kiln/tensor.h>

#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln::testing {

struct OpCall {
  std::string op;
  std::vector<kiln::Tensor> inputs;  // an undefined Tensor() = absent optional input
  ir::Attributes attrs;
  int num_outputs = 1;
  int opset = 17;
  // Inputs given as constants (initializers), so inference sees their values (e.g. a
  // Reshape's shape); by default inputs are graph inputs with static types.
  std::vector<bool> constant;
  std::string domain;
  int domain_opset = 1;  // the opset of `domain` (ai.onnx.ml's ops change with it)
};

// Runs shape inference and the reference kernel; asserts (gtest) that every inferred static
// type matches the kernel's output dtype and dims. Returns the outputs.
std::vector<kiln::Tensor> run_op(const OpCall& call);

// Shape inference only, on given (possibly symbolic) input types. values[i], when defined,
// makes input i a constant with that value (its type is then the value's). domain and
// domain_opset as in OpCall.
std::vector<ir::TensorType> infer_op(const std::string& op, const std::vector<ir::TensorType>& inputs,
                                     const ir::Attributes& attrs = {}, int num_outputs = 1, int opset = 17,
                                     const std::vector<kiln::Tensor>& values = {}, const std::string& domain = "",
                                     int domain_opset = 1);

// Element-wise comparison with |a - e| <= atol + rtol * |e| (NaNs must match); checks dtype
// and dims too.
void expect_near(const kiln::Tensor& actual, const kiln::Tensor& expected, double atol = 1e-5,
                 double rtol = 1e-5);

// Runs f, which must throw a kiln::Error whose message contains `what` (gtest failure otherwise).
void expect_error(const std::function<void()>& f, const std::string& what);

// Deterministic uniform random floats in [lo, hi).
kiln::Tensor random_float(std::vector<int64_t> dims, float lo = -1.f, float hi = 1.f, uint32_t seed = 1);

// Type shorthands: T(DType::Float, {1, "batch", 3}) with ints or symbol names.
ir::TensorType T(DType dtype, std::vector<ir::Dim> dims);
ir::Dim S(const char* symbol);

}  // namespace kiln::testing
