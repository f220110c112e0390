// ai.onnx.ml: Binarizer and ArrayFeatureExtractor.
#include <kiln/error.h>

#include "op_test_util.h"

namespace kiln::testing {

TEST(Binarizer, ThresholdOnFloatsAndInts) {
  auto out = run_op({.op = "Binarizer", .inputs = {Tensor::from_vector<float>({4}, {-1, 0.5f, 0.6f, 2})},
                     .attrs = {{"threshold", ir::Attribute::of_float(0.5f)}}, .opset = 1, .domain = "ai.onnx.ml"});
  expect_near(out[0], Tensor::from_vector<float>({4}, {0, 0, 1, 1}));
  out = run_op({.op = "Binarizer", .inputs = {Tensor::from_vector<int64_t>({3}, {-2, 0, 3})}, .opset = 1, .domain = "ai.onnx.ml"});
  expect_near(out[0], Tensor::from_vector<int64_t>({3}, {0, 0, 1}));
}

TEST(ArrayFeatureExtractor, LastAxisAndVectors) {
  Tensor x = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto out = run_op({.op = "ArrayFeatureExtractor", .inputs = {x, Tensor::from_vector<int64_t>({2}, {2, 0})}, .opset = 1,
                     .domain = "ai.onnx.ml"});
  expect_near(out[0], Tensor::from_vector<float>({2, 2}, {3, 1, 6, 4}));
  out = run_op({.op = "ArrayFeatureExtractor", .inputs = {Tensor::from_vector<int64_t>({3}, {7, 8, 9}), Tensor::from_vector<int64_t>({1, 1}, {1})},
                .opset = 1, .domain = "ai.onnx.ml"});
  expect_near(out[0], Tensor::from_vector<int64_t>({1, 1}, {8}));
  EXPECT_THROW(run_op({.op = "ArrayFeatureExtractor", .inputs = {x, Tensor::from_vector<int64_t>({1}, {3})}, .opset = 1,
                       .domain = "ai.onnx.ml"}),
               kiln::Error);
}

}  // namespace kiln::testing
