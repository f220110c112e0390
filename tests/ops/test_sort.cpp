#include <kiln/error.h>

#include <algorithm>
#include <numeric>

#include "op_test_util.h"

namespace kiln::testing {

namespace {
using A = ir::Attribute;
Tensor F(std::vector<int64_t> dims, std::vector<float> v) { return Tensor::from_vector<float>(std::move(dims), v); }
Tensor I(std::vector<int64_t> dims, std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(std::move(dims), v); }
Tensor K(int64_t k) { return I({1}, {k}); }
}  // namespace

TEST(TopK, LargestAlongLastAxis) {
  Tensor x(DType::Float, {3, 4});
  for (int i = 0; i < 12; ++i) x.data<float>()[i] = static_cast<float>(i);
  auto out = run_op({.op = "TopK", .inputs = {x, K(3)}, .num_outputs = 2, .constant = {false, true}});
  expect_near(out[0], F({3, 3}, {3, 2, 1, 7, 6, 5, 11, 10, 9}));
  expect_near(out[1], I({3, 3}, {3, 2, 1, 3, 2, 1, 3, 2, 1}));
  // Opset 1 form: k is an attribute.
  auto old = run_op({.op = "TopK", .inputs = {x}, .attrs = {{"k", A::of_int(3)}}, .num_outputs = 2, .opset = 9});
  expect_near(old[0], out[0]);
}

TEST(TopK, TiesKeepLowerIndexAndSmallest) {
  auto out = run_op({.op = "TopK", .inputs = {F({4}, {1, 3, 3, 2}), K(2)}, .num_outputs = 2});
  expect_near(out[0], F({2}, {3, 3}));
  expect_near(out[1], I({2}, {1, 2}));
  out = run_op({.op = "TopK", .inputs = {F({4}, {2, 1, 1, 3}), K(3)}, .attrs = {{"largest", A::of_int(0)}},
                .num_outputs = 2});
  expect_near(out[0], F({3}, {1, 1, 2}));
  expect_near(out[1], I({3}, {1, 2, 0}));
}

TEST(TopK, OddShapeMiddleAxis) {
  Tensor x = random_float({3, 5, 7});
  auto out = run_op({.op = "TopK", .inputs = {x, K(2)}, .attrs = {{"axis", A::of_int(-2)}}, .num_outputs = 2});
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{3, 2, 7}));
  for (int o = 0; o < 3; ++o)
    for (int i = 0; i < 7; ++i) {
      std::vector<int> idx(5);
      std::iota(idx.begin(), idx.end(), 0);
      auto v = [&](int j) { return x.data<float>()[(o * 5 + j) * 7 + i]; };
      std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return v(a) > v(b); });
      for (int j = 0; j < 2; ++j) {
        EXPECT_EQ(out[1].data<int64_t>()[(o * 2 + j) * 7 + i], idx[j]);
        EXPECT_EQ(out[0].data<float>()[(o * 2 + j) * 7 + i], v(idx[j]));
      }
    }
}

TEST(TopK, IntegerInput) {
  auto out = run_op({.op = "TopK", .inputs = {Tensor::from_vector<int32_t>({3}, {5, -1, 7}), K(1)}, .num_outputs = 2});
  expect_near(out[0], Tensor::from_vector<int32_t>({1}, {7}));
}

TEST(TopK, ShapesAndErrors) {
  auto t = infer_op("TopK", {T(DType::Float, {S("b"), 10}), T(DType::Int64, {1})}, {}, 2, 11, {Tensor(), K(3)});
  EXPECT_EQ(t[0].str(), "float[b,3]");
  EXPECT_EQ(t[1].str(), "int64[b,3]");
  t = infer_op("TopK", {T(DType::Float, {S("b"), 10}), T(DType::Int64, {1})}, {}, 2);
  EXPECT_TRUE(t[0].dims[1].is_symbolic());
  EXPECT_EQ(t[0].dims[0].symbol, "b");
  EXPECT_THROW(infer_op("TopK", {T(DType::Float, {2, 10}), T(DType::Int64, {1})}, {}, 2, 11, {Tensor(), K(11)}),
               kiln::Error);
  EXPECT_THROW(run_op({.op = "TopK", .inputs = {F({3}, {1, 2, 3}), K(-1)}, .num_outputs = 2}), kiln::Error);
  EXPECT_THROW(run_op({.op = "TopK", .inputs = {F({3}, {1, 2, 3}), K(4)}, .num_outputs = 2}), kiln::Error);
  EXPECT_THROW(infer_op("TopK", {T(DType::Float, {3})}, {}, 2, 11), kiln::Error);
}

TEST(CumSum, ExclusiveAndReverse) {
  Tensor x = F({5}, {1, 2, 3, 4, 5});
  Tensor axis = Tensor::scalar<int32_t>(0);
  auto run = [&](int ex, int rev) {
    return run_op({.op = "CumSum", .inputs = {x, axis}, .attrs = {{"exclusive", A::of_int(ex)}, {"reverse", A::of_int(rev)}}})[0];
  };
  expect_near(run(0, 0), F({5}, {1, 3, 6, 10, 15}));
  expect_near(run(1, 0), F({5}, {0, 1, 3, 6, 10}));
  expect_near(run(0, 1), F({5}, {15, 14, 12, 9, 5}));
  expect_near(run(1, 1), F({5}, {14, 12, 9, 5, 0}));
}

TEST(CumSum, AxesAndIntegers) {
  Tensor x = Tensor::from_vector<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto out = run_op({.op = "CumSum", .inputs = {x, I({1}, {-1})}});
  expect_near(out[0], Tensor::from_vector<int32_t>({2, 3}, {1, 3, 6, 4, 9, 15}));
  out = run_op({.op = "CumSum", .inputs = {x, Tensor::scalar<int64_t>(0)}});
  expect_near(out[0], Tensor::from_vector<int32_t>({2, 3}, {1, 2, 3, 5, 7, 9}));
  auto t = infer_op("CumSum", {T(DType::Float, {S("b"), 3}), T(DType::Int64, {})});
  EXPECT_EQ(t[0].str(), "float[b,3]");
  EXPECT_THROW(run_op({.op = "CumSum", .inputs = {x, Tensor::scalar<int64_t>(2)}}), kiln::Error);
  EXPECT_THROW(run_op({.op = "CumSum", .inputs = {x, I({2}, {0, 1})}}), kiln::Error);
  EXPECT_THROW(infer_op("CumSum", {T(DType::Float, {2}), T(DType::Float, {})}), kiln::Error);
}

TEST(Unique, FlattenedSortedAndUnsorted) {
  Tensor x = F({2, 3}, {2, 1, 1, 3, 4, 3});
  auto out = run_op({.op = "Unique", .inputs = {x}, .num_outputs = 4});
  expect_near(out[0], F({4}, {1, 2, 3, 4}));
  expect_near(out[1], I({4}, {1, 0, 3, 4}));
  expect_near(out[2], I({6}, {1, 0, 0, 2, 3, 2}));
  expect_near(out[3], I({4}, {2, 1, 2, 1}));
  out = run_op({.op = "Unique", .inputs = {x}, .attrs = {{"sorted", A::of_int(0)}}, .num_outputs = 4});
  expect_near(out[0], F({4}, {2, 1, 3, 4}));
  expect_near(out[1], I({4}, {0, 1, 3, 4}));
  expect_near(out[2], I({6}, {0, 1, 1, 2, 3, 2}));
  expect_near(out[3], I({4}, {1, 2, 2, 1}));
}

TEST(Unique, AlongAxis) {
  Tensor x = F({3, 3}, {2, 3, 4, 1, 0, 0, 1, 0, 0});
  auto out = run_op({.op = "Unique", .inputs = {x}, .attrs = {{"axis", A::of_int(0)}}, .num_outputs = 4});
  expect_near(out[0], F({2, 3}, {1, 0, 0, 2, 3, 4}));
  expect_near(out[1], I({2}, {1, 0}));
  expect_near(out[2], I({3}, {1, 0, 0}));
  expect_near(out[3], I({2}, {2, 1}));
  // Columns: [2,1,1], [3,0,0], [4,0,0] -> sorted [2,1,1] < [3,0,0] < [4,0,0], all distinct.
  out = run_op({.op = "Unique", .inputs = {x}, .attrs = {{"axis", A::of_int(-1)}}, .num_outputs = 1});
  expect_near(out[0], x);
  auto t = infer_op("Unique", {T(DType::Float, {S("n"), 3})}, {{"axis", A::of_int(0)}}, 4);
  EXPECT_TRUE(t[0].dims[0].is_symbolic());
  EXPECT_EQ(t[0].dims[1].value, 3);
  EXPECT_EQ(t[2].str(), "int64[n]");
  EXPECT_THROW(infer_op("Unique", {T(DType::Float, {2})}, {{"axis", A::of_int(1)}}), kiln::Error);
}

TEST(NonMaxSuppression, SuppressByIou) {
  Tensor boxes = F({1, 6, 4}, {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, -0.1f, 1, 0.9f, 0, 10, 1, 11, 0, 10.1f, 1, 11.1f, 0, 100, 1, 101});
  Tensor scores = F({1, 1, 6}, {0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f});
  auto out = run_op({.op = "NonMaxSuppression",
                     .inputs = {boxes, scores, I({1}, {3}), F({1}, {0.5f}), F({1}, {0.0f})}});
  expect_near(out[0], I({3, 3}, {0, 0, 3, 0, 0, 0, 0, 0, 5}));
  // Score threshold drops the last box; max 2 per class.
  out = run_op({.op = "NonMaxSuppression", .inputs = {boxes, scores, I({1}, {2}), F({1}, {0.5f}), F({1}, {0.4f})}});
  expect_near(out[0], I({2, 3}, {0, 0, 3, 0, 0, 0}));
  // No max_output_boxes_per_class: nothing selected.
  out = run_op({.op = "NonMaxSuppression", .inputs = {boxes, scores}});
  EXPECT_EQ(out[0].dims(), (std::vector<int64_t>{0, 3}));
  EXPECT_THROW(run_op({.op = "NonMaxSuppression", .inputs = {F({1, 6, 3}, {}), scores}}), kiln::Error);
}

TEST(NonMaxSuppression, CenterPointBoxes) {
  Tensor boxes = F({1, 3, 4}, {0.5f, 0.5f, 1, 1, 0.5f, 0.6f, 1, 1, 5, 5, 1, 1});
  Tensor scores = F({1, 1, 3}, {0.9f, 0.8f, 0.7f});
  auto out = run_op({.op = "NonMaxSuppression", .inputs = {boxes, scores, I({1}, {10}), F({1}, {0.5f})},
                     .attrs = {{"center_point_box", A::of_int(1)}}});
  expect_near(out[0], I({2, 3}, {0, 0, 0, 0, 0, 2}));
}

}  // namespace kiln::testing
