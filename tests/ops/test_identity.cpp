#include <kiln/error.h>

#include "op_test_util.h"

namespace kiln::testing {

TEST(Identity, SharesInput) {
  Tensor x = random_float({2, 3});
  auto out = run_op({.op = "Identity", .inputs = {x}});
  expect_near(out[0], x);
}

TEST(Identity, KeepsSymbolicShape) {
  auto t = infer_op("Identity", {T(DType::Float, {S("batch"), 3})});
  EXPECT_EQ(t[0].str(), "float[batch,3]");
}

TEST(Dropout, InferenceModeWithMask) {
  Tensor x = random_float({4, 5});
  auto out = run_op({.op = "Dropout", .inputs = {x}, .num_outputs = 2});
  expect_near(out[0], x);
  ASSERT_EQ(out[1].dtype(), DType::Bool);
  for (int64_t i = 0; i < out[1].numel(); ++i) EXPECT_TRUE(out[1].data<bool>()[i]);
}

// Training mode with ratio 0 drops nothing: identity and an all-true mask. Other ratios are
// random and unsupported.
TEST(Dropout, TrainingModeZeroRatio) {
  Tensor x = random_float({3, 5, 7});
  auto out = run_op({.op = "Dropout", .inputs = {x, Tensor::scalar<float>(0.f), Tensor::scalar<bool>(true)}, .num_outputs = 2});
  expect_near(out[0], x);
  for (int64_t i = 0; i < out[1].numel(); ++i) EXPECT_TRUE(out[1].data<bool>()[i]);
  EXPECT_THROW(run_op({.op = "Dropout", .inputs = {x, Tensor::scalar<float>(0.5f), Tensor::scalar<bool>(true)}}),
               kiln::UnsupportedError);
  EXPECT_THROW(run_op({.op = "Dropout", .inputs = {x, Tensor(), Tensor::scalar<bool>(true)}}), kiln::UnsupportedError)
      << "the default ratio is 0.5";
  expect_near(run_op({.op = "Dropout", .inputs = {x, Tensor::scalar<float>(0.5f), Tensor::scalar<bool>(false)}})[0], x);
}

}  // namespace kiln::testing
