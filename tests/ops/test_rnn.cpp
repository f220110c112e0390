#include <kiln/error.h>

#include <algorithm>
#include <cmath>

#include "op_test_util.h"

namespace kiln::testing {

namespace {

using ir::Attribute;

// X: seq 3, batch 1, input 2. Expected values below come from a numpy transcription of the
// ONNX equations.
Tensor small_x() { return Tensor::from_vector<float>({3, 1, 2}, {0.5f, -1.0f, 1.5f, 0.25f, -0.75f, 2.0f}); }

Tensor gru_w() {
  return Tensor::from_vector<float>({1, 6, 2}, {-0.30f, -0.25f, -0.20f, -0.15f, -0.10f, -0.05f, 0.00f, 0.05f, 0.10f, 0.15f, 0.20f, 0.25f});
}
Tensor gru_r() {
  return Tensor::from_vector<float>({1, 6, 2}, {0.20f, 0.24f, 0.12f, 0.16f, 0.04f, 0.08f, -0.04f, 0.00f, -0.12f, -0.08f, -0.20f, -0.16f});
}
Tensor gru_b() {
  return Tensor::from_vector<float>({1, 12}, {-0.05f, -0.04f, -0.03f, -0.02f, -0.01f, 0.00f, 0.01f, 0.02f, 0.03f, 0.04f, 0.05f, 0.06f});
}

// A layer's tensors replicated into `dirs` directions.
Tensor repeat_dirs(const Tensor& t, int64_t dirs) {
  std::vector<int64_t> d = t.dims();
  d[0] = dirs;
  Tensor out(t.dtype(), d);
  for (int64_t k = 0; k < dirs; ++k)
    std::copy_n(t.data<float>(), t.numel(), out.data<float>() + k * t.numel());
  return out;
}

// Reverses X along the sequence axis (layout 0).
Tensor reverse_seq(const Tensor& x) {
  Tensor out(x.dtype(), x.dims());
  const int64_t S = x.dim(0), row = x.numel() / S;
  for (int64_t t = 0; t < S; ++t) std::copy_n(x.data<float>() + t * row, row, out.data<float>() + (S - 1 - t) * row);
  return out;
}

ir::Attributes hidden(int64_t h) { return {{"hidden_size", Attribute::of_int(h)}}; }

}  // namespace

TEST(RNN, HandComputedTanh) {
  Tensor w = Tensor::from_vector<float>({1, 2, 2}, {0.1f, 0.2f, -0.3f, 0.4f});
  Tensor r = Tensor::from_vector<float>({1, 2, 2}, {0.5f, -0.6f, 0.7f, 0.8f});
  Tensor b = Tensor::from_vector<float>({1, 4}, {0.01f, -0.02f, 0.03f, 0.04f});
  auto out = run_op({.op = "RNN", .inputs = {small_x(), w, r, b}, .attrs = hidden(2), .num_outputs = 2});
  expect_near(out[0], Tensor::from_vector<float>({3, 1, 1, 2}, {-0.1095585f, -0.4853811f, 0.4433956f, -0.6612298f, 0.7545493f, 0.6785345f}));
  expect_near(out[1], Tensor::from_vector<float>({1, 1, 2}, {0.7545493f, 0.6785345f}));
}

TEST(RNN, ActivationsWithAlphaBeta) {
  // One unit, weight 1, no recurrence: Y_t = act(x_t).
  Tensor x = Tensor::from_vector<float>({3, 1, 1}, {-2.f, 0.5f, 3.f});
  Tensor w = Tensor::from_vector<float>({1, 1, 1}, {1.f});
  Tensor r = Tensor::from_vector<float>({1, 1, 1}, {0.f});
  auto run = [&](const std::string& act, std::vector<float> alpha, std::vector<float> beta) {
    ir::Attributes a = hidden(1);
    a["activations"] = Attribute();
    a["activations"].kind = Attribute::Kind::Strings;
    a["activations"].strings = {act};
    if (!alpha.empty()) a["activation_alpha"] = Attribute::of_floats(alpha);
    if (!beta.empty()) a["activation_beta"] = Attribute::of_floats(beta);
    return run_op({.op = "RNN", .inputs = {x, w, r}, .attrs = a})[0];
  };
  expect_near(run("Relu", {}, {}), Tensor::from_vector<float>({3, 1, 1, 1}, {0.f, 0.5f, 3.f}));
  expect_near(run("Affine", {2.f}, {1.f}), Tensor::from_vector<float>({3, 1, 1, 1}, {-3.f, 2.f, 7.f}));
  expect_near(run("LeakyRelu", {0.1f}, {}), Tensor::from_vector<float>({3, 1, 1, 1}, {-0.2f, 0.5f, 3.f}));
  expect_near(run("ThresholdedRelu", {1.f}, {}), Tensor::from_vector<float>({3, 1, 1, 1}, {0.f, 0.f, 3.f}));
  expect_near(run("HardSigmoid", {0.2f}, {0.5f}), Tensor::from_vector<float>({3, 1, 1, 1}, {0.1f, 0.6f, 1.f}));
  expect_near(run("ScaledTanh", {2.f}, {0.5f}),
              Tensor::from_vector<float>({3, 1, 1, 1}, {2 * std::tanh(-1.f), 2 * std::tanh(0.25f), 2 * std::tanh(1.5f)}));
  expect_near(run("Elu", {1.f}, {}), Tensor::from_vector<float>({3, 1, 1, 1}, {std::exp(-2.f) - 1, 0.5f, 3.f}));
  expect_near(run("Softsign", {}, {}), Tensor::from_vector<float>({3, 1, 1, 1}, {-2.f / 3, 0.5f / 1.5f, 0.75f}));
  expect_near(run("Softplus", {}, {}),
              Tensor::from_vector<float>({3, 1, 1, 1}, {std::log1p(std::exp(-2.f)), std::log1p(std::exp(0.5f)), std::log1p(std::exp(3.f))}));
  EXPECT_THROW(run("Bogus", {}, {}), kiln::Error);
}

TEST(RNN, ClipBoundsPreActivation) {
  Tensor x = Tensor::from_vector<float>({2, 1, 1}, {-5.f, 5.f});
  Tensor w = Tensor::from_vector<float>({1, 1, 1}, {1.f});
  Tensor r = Tensor::from_vector<float>({1, 1, 1}, {0.f});
  ir::Attributes a = hidden(1);
  a["clip"] = Attribute::of_float(1.f);
  auto out = run_op({.op = "RNN", .inputs = {x, w, r}, .attrs = a});
  expect_near(out[0], Tensor::from_vector<float>({2, 1, 1, 1}, {std::tanh(-1.f), std::tanh(1.f)}));
}

TEST(RNN, ReverseIsForwardOnReversedSequence) {
  Tensor x = random_float({4, 3, 5}, -1, 1, 2);
  Tensor w = random_float({1, 7, 5}, -0.5f, 0.5f, 3), r = random_float({1, 7, 7}, -0.5f, 0.5f, 4);
  ir::Attributes a = hidden(7);
  auto fwd = run_op({.op = "RNN", .inputs = {reverse_seq(x), w, r}, .attrs = a, .num_outputs = 2});
  a["direction"] = Attribute::of_string("reverse");
  auto rev = run_op({.op = "RNN", .inputs = {x, w, r}, .attrs = a, .num_outputs = 2});
  expect_near(rev[1], fwd[1]);
  expect_near(rev[0], reverse_seq(fwd[0]).reshaped({4, 1, 3, 7}));
}

TEST(RNN, BidirectionalStacksBothDirections) {
  Tensor x = random_float({3, 2, 4}, -1, 1, 5);
  Tensor w = random_float({1, 5, 4}, -0.5f, 0.5f, 6), r = random_float({1, 5, 5}, -0.5f, 0.5f, 7);
  auto fwd = run_op({.op = "RNN", .inputs = {x, w, r}, .attrs = hidden(5), .num_outputs = 2});
  ir::Attributes a = hidden(5);
  a["direction"] = Attribute::of_string("reverse");
  auto rev = run_op({.op = "RNN", .inputs = {x, w, r}, .attrs = a, .num_outputs = 2});
  a["direction"] = Attribute::of_string("bidirectional");
  auto bi = run_op({.op = "RNN", .inputs = {x, repeat_dirs(w, 2), repeat_dirs(r, 2)}, .attrs = a, .num_outputs = 2});
  ASSERT_EQ(bi[0].dims(), (std::vector<int64_t>{3, 2, 2, 5}));
  for (int64_t t = 0; t < 3; ++t)
    for (int64_t i = 0; i < 10; ++i) {
      EXPECT_NEAR(bi[0].data<float>()[(t * 2 + 0) * 10 + i], fwd[0].data<float>()[t * 10 + i], 1e-6);
      EXPECT_NEAR(bi[0].data<float>()[(t * 2 + 1) * 10 + i], rev[0].data<float>()[t * 10 + i], 1e-6);
    }
  for (int64_t i = 0; i < 10; ++i) {
    EXPECT_NEAR(bi[1].data<float>()[i], fwd[1].data<float>()[i], 1e-6);
    EXPECT_NEAR(bi[1].data<float>()[10 + i], rev[1].data<float>()[i], 1e-6);
  }
}

TEST(RNN, SequenceLensAndInitialH) {
  // Batch 2; the second element stops after 1 step, so its later Y rows are 0 and Y_h is its
  // state after step 0.
  Tensor x = random_float({3, 2, 3}, -1, 1, 8);
  Tensor w = random_float({1, 4, 3}, -0.5f, 0.5f, 9), r = random_float({1, 4, 4}, -0.5f, 0.5f, 10);
  Tensor b = random_float({1, 8}, -0.1f, 0.1f, 11), h0 = random_float({1, 2, 4}, -1, 1, 12);
  Tensor lens = Tensor::from_vector<int32_t>({2}, {3, 1});
  auto out = run_op({.op = "RNN", .inputs = {x, w, r, b, lens, h0}, .attrs = hidden(4), .num_outputs = 2});
  const float* y = out[0].data<float>();
  for (int64_t t = 1; t < 3; ++t)
    for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(y[(t * 2 + 1) * 4 + i], 0.f);
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(out[1].data<float>()[4 + i], y[4 + i]);           // batch 1: step 0
    EXPECT_EQ(out[1].data<float>()[i], y[(2 * 2 + 0) * 4 + i]);  // batch 0: step 2
  }
  // Step 0 of batch 1 by hand: tanh(x W^T + h0 R^T + Wb + Rb).
  for (int64_t j = 0; j < 4; ++j) {
    double s = b.data<float>()[j] + b.data<float>()[4 + j];
    for (int64_t k = 0; k < 3; ++k) s += x.data<float>()[3 + k] * w.data<float>()[j * 3 + k];
    for (int64_t k = 0; k < 4; ++k) s += h0.data<float>()[4 + k] * r.data<float>()[j * 4 + k];
    EXPECT_NEAR(y[4 + j], std::tanh(s), 1e-6);
  }
  // Lengths out of range are rejected.
  Tensor bad = Tensor::from_vector<int32_t>({2}, {4, 1});
  EXPECT_THROW(run_op({.op = "RNN", .inputs = {x, w, r, b, bad}, .attrs = hidden(4)}), kiln::Error);
}

TEST(RNN, BatchMajorLayout) {
  Tensor x = random_float({3, 2, 4}, -1, 1, 13);  // [seq, batch, input]
  Tensor w = random_float({1, 5, 4}, -0.5f, 0.5f, 14), r = random_float({1, 5, 5}, -0.5f, 0.5f, 15);
  auto ref = run_op({.op = "RNN", .inputs = {x, w, r}, .attrs = hidden(5), .num_outputs = 2});
  Tensor xb(DType::Float, {2, 3, 4});
  for (int64_t t = 0; t < 3; ++t)
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t i = 0; i < 4; ++i) xb.data<float>()[(b * 3 + t) * 4 + i] = x.data<float>()[(t * 2 + b) * 4 + i];
  ir::Attributes a = hidden(5);
  a["layout"] = Attribute::of_int(1);
  auto out = run_op({.op = "RNN", .inputs = {xb, w, r}, .attrs = a, .num_outputs = 2});
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{2, 3, 1, 5}));
  ASSERT_EQ(out[1].dims(), (std::vector<int64_t>{2, 1, 5}));
  for (int64_t t = 0; t < 3; ++t)
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t i = 0; i < 5; ++i)
        EXPECT_EQ(out[0].data<float>()[(b * 3 + t) * 5 + i], ref[0].data<float>()[(t * 2 + b) * 5 + i]);
  expect_near(out[1].reshaped({1, 2, 5}), ref[1]);
  EXPECT_THROW(run_op({.op = "RNN", .inputs = {xb, w, r}, .attrs = a, .opset = 13}), kiln::Error);
}

TEST(GRU, HandComputedBothResetModes) {
  auto out = run_op({.op = "GRU", .inputs = {small_x(), gru_w(), gru_r(), gru_b()}, .attrs = hidden(2), .num_outputs = 2});
  expect_near(out[0], Tensor::from_vector<float>({3, 1, 1, 2}, {-0.0290654f, -0.0442058f, 0.1343587f, 0.2208477f, 0.1948505f, 0.2950092f}));
  expect_near(out[1], Tensor::from_vector<float>({1, 1, 2}, {0.1948505f, 0.2950092f}));
  ir::Attributes a = hidden(2);
  a["linear_before_reset"] = Attribute::of_int(1);
  out = run_op({.op = "GRU", .inputs = {small_x(), gru_w(), gru_r(), gru_b()}, .attrs = a});
  expect_near(out[0], Tensor::from_vector<float>({3, 1, 1, 2}, {-0.0411264f, -0.0590364f, 0.1144480f, 0.2018163f, 0.1743599f, 0.2744603f}));
}

TEST(GRU, DoubleMatchesFloat) {
  Tensor x = random_float({2, 3, 3}, -1, 1, 20);
  Tensor w = random_float({1, 12, 3}, -0.5f, 0.5f, 21), r = random_float({1, 12, 4}, -0.5f, 0.5f, 22);
  auto f = run_op({.op = "GRU", .inputs = {x, w, r}, .attrs = hidden(4)});
  auto to_d = [](const Tensor& t) {
    Tensor d(DType::Double, t.dims());
    for (int64_t i = 0; i < t.numel(); ++i) d.data<double>()[i] = t.data<float>()[i];
    return d;
  };
  auto d = run_op({.op = "GRU", .inputs = {to_d(x), to_d(w), to_d(r)}, .attrs = hidden(4)});
  expect_near(d[0], to_d(f[0]), 1e-5);
}

TEST(LSTM, HandComputedWithPeepholes) {
  Tensor w = Tensor::from_vector<float>({1, 8, 2}, {-0.20f, -0.17f, -0.14f, -0.11f, -0.08f, -0.05f, -0.02f, 0.01f,
                                                    0.04f, 0.07f, 0.10f, 0.13f, 0.16f, 0.19f, 0.22f, 0.25f});
  Tensor r = Tensor::from_vector<float>({1, 8, 2}, {0.18f, 0.20f, 0.14f, 0.16f, 0.10f, 0.12f, 0.06f, 0.08f,
                                                    0.02f, 0.04f, -0.02f, 0.00f, -0.06f, -0.04f, -0.10f, -0.08f});
  Tensor b = Tensor::from_vector<float>({1, 16}, {-0.08f, -0.07f, -0.06f, -0.05f, -0.04f, -0.03f, -0.02f, -0.01f,
                                                  0.00f, 0.01f, 0.02f, 0.03f, 0.04f, 0.05f, 0.06f, 0.07f});
  Tensor p = Tensor::from_vector<float>({1, 6}, {0.1f, -0.1f, 0.2f, -0.2f, 0.3f, -0.3f});
  auto out = run_op({.op = "LSTM", .inputs = {small_x(), w, r, b, Tensor(), Tensor(), Tensor(), p}, .attrs = hidden(2),
                     .num_outputs = 3});
  expect_near(out[0], Tensor::from_vector<float>({3, 1, 1, 2}, {-0.0170561f, -0.0194307f, 0.0492216f, 0.0759701f, 0.0894744f, 0.1224483f}));
  expect_near(out[1], Tensor::from_vector<float>({1, 1, 2}, {0.0894744f, 0.1224483f}));
  expect_near(out[2], Tensor::from_vector<float>({1, 1, 2}, {0.1836399f, 0.2535002f}));
}

TEST(LSTM, InputForgetCouplesGates) {
  // One unit, zero weights except the input gate: i = sigmoid(0) = 0.5, so f = 0.5 and
  // c_t = 0.5 c0 + 0.5 tanh(0) = 0.5 c0.
  Tensor x = Tensor::from_vector<float>({1, 1, 1}, {1.f});
  Tensor w(DType::Float, {1, 4, 1}), r(DType::Float, {1, 4, 1});
  Tensor c0 = Tensor::from_vector<float>({1, 1, 1}, {2.f});
  ir::Attributes a = hidden(1);
  a["input_forget"] = Attribute::of_int(1);
  auto out = run_op({.op = "LSTM", .inputs = {x, w, r, Tensor(), Tensor(), Tensor(), c0}, .attrs = a, .num_outputs = 3});
  expect_near(out[2], Tensor::from_vector<float>({1, 1, 1}, {1.f}));
  expect_near(out[1], Tensor::from_vector<float>({1, 1, 1}, {0.5f * std::tanh(1.f)}));
}

TEST(LSTM, ThreeOutputsSymbolic) {
  Tensor x = random_float({2, 1, 3}, -1, 1, 30);
  Tensor w = random_float({1, 8, 3}, -0.5f, 0.5f, 31), r = random_float({1, 8, 2}, -0.5f, 0.5f, 32);
  auto t = infer_op("LSTM", {T(DType::Float, {S("seq"), S("batch"), 3}), T(DType::Float, {1, 8, 3}), T(DType::Float, {1, 8, 2})},
                    hidden(2), 3);
  EXPECT_EQ(t[0].str(), "float[seq,1,batch,2]");
  EXPECT_EQ(t[1].str(), "float[1,batch,2]");
  EXPECT_EQ(t[2].str(), "float[1,batch,2]");
  auto out = run_op({.op = "LSTM", .inputs = {x, w, r}, .attrs = hidden(2), .num_outputs = 3});
  EXPECT_EQ(out[2].dims(), (std::vector<int64_t>{1, 1, 2}));
}

TEST(RNN, InferenceSymbolicAndErrors) {
  ir::Attributes a = hidden(4);
  a["direction"] = Attribute::of_string("bidirectional");
  a["layout"] = Attribute::of_int(1);
  auto t = infer_op("GRU", {T(DType::Float, {S("b"), S("s"), 3}), T(DType::Float, {2, 12, 3}), T(DType::Float, {2, 12, 4})}, a, 2);
  EXPECT_EQ(t[0].str(), "float[b,s,2,4]");
  EXPECT_EQ(t[1].str(), "float[b,2,4]");
  // hidden_size from R when the attribute is absent.
  auto u = infer_op("RNN", {T(DType::Float, {5, 2, 3}), T(DType::Float, {1, 6, 3}), T(DType::Float, {1, 6, 6})}, {}, 2);
  EXPECT_EQ(u[1].str(), "float[1,2,6]");
  // Unknown rank X: symbolic seq/batch.
  auto v = infer_op("RNN", {ir::TensorType::unranked(DType::Float), T(DType::Float, {1, 6, 3}), T(DType::Float, {1, 6, 6})}, hidden(6), 1);
  EXPECT_EQ(v[0].rank(), 4);
  // Mismatched gate dims, bad direction, wrong rank.
  EXPECT_THROW(infer_op("GRU", {T(DType::Float, {5, 2, 3}), T(DType::Float, {1, 8, 3}), T(DType::Float, {1, 12, 4})}, hidden(4)), kiln::Error);
  ir::Attributes bad = hidden(4);
  bad["direction"] = Attribute::of_string("sideways");
  EXPECT_THROW(infer_op("RNN", {T(DType::Float, {5, 2, 3}), T(DType::Float, {1, 4, 3}), T(DType::Float, {1, 4, 4})}, bad), kiln::Error);
  EXPECT_THROW(infer_op("RNN", {T(DType::Float, {5, 3}), T(DType::Float, {1, 4, 3}), T(DType::Float, {1, 4, 4})}, hidden(4)), kiln::Error);
  // Wrong number of activations for a bidirectional LSTM.
  ir::Attributes acts = hidden(4);
  acts["direction"] = Attribute::of_string("bidirectional");
  acts["activations"] = Attribute();
  acts["activations"].kind = Attribute::Kind::Strings;
  acts["activations"].strings = {"Sigmoid", "Tanh"};
  EXPECT_THROW(infer_op("LSTM", {T(DType::Float, {5, 2, 3}), T(DType::Float, {2, 16, 3}), T(DType::Float, {2, 16, 4})}, acts), kiln::Error);
  // Kernel-side shape check: B of the wrong size.
  Tensor x = random_float({2, 1, 3}), w = random_float({1, 4, 3}), r = random_float({1, 4, 4}), b = random_float({1, 7});
  EXPECT_THROW(run_op({.op = "RNN", .inputs = {x, w, r, b}, .attrs = hidden(4)}), kiln::Error);
}

}  // namespace kiln::testing
