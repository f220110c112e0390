// Each optimized CPU kernel against the reference kernel for the same node, on random inputs
// with odd shapes.
#include <gtest/gtest.h>
#include <kiln/tensor.h>

#include <cmath>
#include <functional>
#include <random>
#include <thread>

#include "backends/backend.h"
#include "backends/cpu/depthwise_conv.h"
#include "backends/cpu/nhwc_pool.h"
#include "backends/cpu/simd.h"
#include "backends/cpu/stem_conv.h"
#include "lower/fuse_conv_chain.h"
#include "lower/fuse_conv_concat.h"
#include "ops/core/infer_graph.h"

namespace kiln {
namespace {

Tensor random_tensor(std::vector<int64_t> dims, std::mt19937& rng) {
  Tensor t(DType::Float, dims);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

struct Case {
  std::string op, domain;
  std::vector<std::vector<int64_t>> in_dims;
  std::vector<bool> constant;  // per input
  std::vector<int64_t> out_dims;
  ir::Attributes attrs;
  std::string candidate = "";  // a named implementation instead of the backend's first choice
  int threads = 1;
};

// Builds the node, runs it on the reference kernels and on the cpu backend; returns false when
// the backend declined.
bool check(const Case& c, bool expect_kernel = true) {
  std::mt19937 rng(42);
  ir::Graph g;
  g.opsets[""] = 17;
  g.opsets["kiln"] = 1;
  std::vector<ir::Value*> ins;
  std::vector<Tensor> data;
  for (size_t i = 0; i < c.in_dims.size(); ++i) {
    data.push_back(random_tensor(c.in_dims[i], rng));
    const std::string name = "in" + std::to_string(i);
    ins.push_back(c.constant[i] ? g.add_constant(name, data.back())
                                : g.add_input(name, ir::TensorType::from_dims(DType::Float, c.in_dims[i])));
  }
  ir::Value* y = g.add_value("y", ir::TensorType::from_dims(DType::Float, c.out_dims));
  ir::Node* n = g.add_node(c.op, ins, {y}, c.attrs, "n", c.domain);
  g.add_output(y);
  std::vector<const Tensor*> ptrs;
  for (auto& t : data) ptrs.push_back(&t);
  const Tensor expected = ops::run_reference(*n, ptrs)[0];
  EXPECT_EQ(expected.dims(), c.out_dims);
  auto backend = backends::make_cpu_backend(c.threads);
  std::unique_ptr<backends::Kernel> kernel;
  if (c.candidate.empty()) kernel = backend->create(*n);
  for (const auto& k : backend->candidates(*n))
    if (!c.candidate.empty() && k.spec.impl == c.candidate) kernel = k.make();
  EXPECT_EQ(kernel != nullptr, expect_kernel) << c.op << " " << c.candidate;
  if (!kernel) return false;
  auto close = [&](const Tensor& actual, const char* when) {
    for (int64_t i = 0; i < expected.numel(); ++i) {
      const float e = expected.data<float>()[i];
      EXPECT_NEAR(actual.data<float>()[i], e, 1e-4 * std::max(1.f, std::fabs(e))) << c.op << " " << when << " at " << i;
    }
  };
  // At once (a kernel may still be preparing its final form in the background), then in the
  // final form, twice: prepacked state must not be consumed by a run.
  Tensor first(DType::Float, c.out_dims);
  kernel->run(ptrs, {&first});
  close(first, "before wait_ready");
  kernel->wait_ready();
  Tensor actual(DType::Float, c.out_dims), again(DType::Float, c.out_dims);
  kernel->run(ptrs, {&actual});
  kernel->run(ptrs, {&again});
  close(actual, "after wait_ready");
  for (int64_t i = 0; i < expected.numel(); ++i) EXPECT_EQ(actual.data<float>()[i], again.data<float>()[i]);
  return true;
}

ir::Attributes conv_attrs(std::vector<int64_t> strides, std::vector<int64_t> pads, std::vector<int64_t> dil,
                          int64_t group) {
  return {{"strides", ir::Attribute::of_ints(strides)},
          {"pads", ir::Attribute::of_ints(pads)},
          {"dilations", ir::Attribute::of_ints(dil)},
          {"group", ir::Attribute::of_int(group)}};
}

// A graph of one channels-last FusedConv (no bias) on input "x", its output "y" untyped until
// shape inference.
ir::Node* single_nhwc_conv(ir::Graph& g, std::vector<int64_t> x_dims, std::vector<int64_t> w_dims, ir::Attributes a,
                           std::mt19937& rng) {
  g.opsets[""] = 17;
  g.opsets["kiln"] = 1;
  a["channels_last"] = ir::Attribute::of_int(1);
  ir::Value* x = g.add_input("x", ir::TensorType::from_dims(DType::Float, x_dims));
  ir::Value* w = g.add_constant("w", random_tensor(w_dims, rng));
  ir::Value* y = g.add_value("y");
  ir::Node* n = g.add_node("FusedConv", {x, w}, {y}, a, "n", "kiln");
  g.add_output(y);
  return n;
}

TEST(CpuKernels, ConvPlain) {
  check({"Conv", "", {{2, 13, 17, 19}, {7, 13, 3, 3}, {7}}, {false, true, true}, {2, 7, 17, 19},
         conv_attrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1)});
}

TEST(CpuKernels, ConvNoBiasStridedAsymmetricPads) {
  // H: (17 + 0 + 2 - 3) / 2 + 1 = 9; W: (19 + 1 + 0 - 3) / 2 + 1 = 9
  check({"Conv", "", {{1, 13, 17, 19}, {5, 13, 3, 3}}, {false, true}, {1, 5, 9, 9},
         conv_attrs({2, 2}, {0, 1, 2, 0}, {1, 1}, 1)});
}

TEST(CpuKernels, ConvGroupsDilated) {
  // 12 -> 9 channels in 3 groups; dilation 2: effective kernel 5. H: 17-5+1=13, W: 19-5+1=15
  check({"Conv", "", {{1, 12, 17, 19}, {9, 4, 3, 3}, {9}}, {false, true, true}, {1, 9, 13, 15},
         conv_attrs({1, 1}, {0, 0, 0, 0}, {2, 2}, 3)});
}

TEST(CpuKernels, ConvDepthwise) {
  check({"Conv", "", {{1, 13, 17, 19}, {13, 1, 3, 3}, {13}}, {false, true, true}, {1, 13, 9, 10},
         conv_attrs({2, 2}, {1, 1, 1, 1}, {1, 1}, 13)});
}

TEST(CpuKernels, ConvPointwiseAndAutoPad) {
  check({"Conv", "", {{1, 13, 17, 19}, {29, 13, 1, 1}}, {false, true}, {1, 29, 17, 19},
         conv_attrs({1, 1}, {0, 0, 0, 0}, {1, 1}, 1)});
  for (const char* mode : {"SAME_UPPER", "SAME_LOWER"}) {
    ir::Attributes a = {{"strides", ir::Attribute::of_ints({2, 2})}, {"auto_pad", ir::Attribute::of_string(mode)}};
    check({"Conv", "", {{1, 6, 17, 18}, {8, 6, 4, 4}}, {false, true}, {1, 8, 9, 9}, a});
  }
  ir::Attributes valid = {{"auto_pad", ir::Attribute::of_string("VALID")}};
  check({"Conv", "", {{1, 6, 17, 18}, {8, 6, 4, 4}}, {false, true}, {1, 8, 14, 15}, valid});
  // Dilated, odd totals: kernel 3x2, dilations 2x3 on 9x7, strides 2x1: H total 4 (2, 2), W
  // total 3 (1, 2 UPPER; 2, 1 LOWER).
  for (const char* mode : {"SAME_UPPER", "SAME_LOWER"}) {
    ir::Attributes a = {{"strides", ir::Attribute::of_ints({2, 1})},
                        {"dilations", ir::Attribute::of_ints({2, 3})},
                        {"auto_pad", ir::Attribute::of_string(mode)}};
    check({"Conv", "", {{1, 6, 9, 7}, {8, 6, 3, 2}}, {false, true}, {1, 8, 5, 7}, a});
  }
}

TEST(CpuKernels, FusedConvActivations) {
  const std::vector<std::pair<std::string, std::vector<float>>> acts = {
      {"Relu", {}},       {"Clip", {-0.3f, 0.4f}}, {"Sigmoid", {}},  {"Tanh", {}},
      {"SiLU", {}},       {"Gelu", {}},            {"GeluTanh", {}}, {"HardSigmoid", {0.3f, 0.4f}},
      {"HardSwish", {}},  {"LeakyRelu", {0.07f}}};
  for (const auto& [act, params] : acts) {
    ir::Attributes a = conv_attrs({2, 1}, {1, 0, 0, 1}, {1, 1}, 1);
    a["activation"] = ir::Attribute::of_string(act);
    if (!params.empty()) a["activation_params"] = ir::Attribute::of_floats(params);
    SCOPED_TRACE(act);
    // H: (17 + 1 - 3) / 2 + 1 = 8; W: 19 + 1 - 3 + 1 = 18
    check({"FusedConv", "kiln", {{1, 13, 17, 19}, {7, 13, 3, 3}, {7}}, {false, true, true}, {1, 7, 8, 18}, a});
  }
}

TEST(CpuKernels, FusedConvResidualNchwAndNhwc) {
  ir::Attributes a = conv_attrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1);
  a["activation"] = ir::Attribute::of_string("Relu");
  check({"FusedConv", "kiln", {{1, 13, 17, 19}, {7, 13, 3, 3}, {7}, {1, 7, 17, 19}}, {false, true, true, false},
         {1, 7, 17, 19}, a});
  a["channels_last"] = ir::Attribute::of_int(1);
  check({"FusedConv", "kiln", {{2, 17, 19, 13}, {7, 13, 3, 3}, {7}, {2, 17, 19, 7}}, {false, true, true, false},
         {2, 17, 19, 7}, a});
  // Channels-last without residual or bias, strided, depthwise.
  ir::Attributes d = conv_attrs({2, 2}, {1, 1, 1, 1}, {1, 1}, 13);
  d["channels_last"] = ir::Attribute::of_int(1);
  check({"FusedConv", "kiln", {{1, 17, 19, 13}, {13, 1, 3, 3}}, {false, true}, {1, 9, 10, 13}, d});
}

// Winograd (the first choice for 3x3 stride-1 convs) with bias, residual and Relu, channels-last
// and NCHW, and each other implementation on the same node.
TEST(CpuKernels, ConvImplementations) {
  ir::Attributes a = conv_attrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1);
  a["activation"] = ir::Attribute::of_string("Relu");
  for (const char* impl : {"onednn_winograd", "onednn", "onednn_alt_layout"}) {
    SCOPED_TRACE(impl);
    Case nchw{"FusedConv", "kiln", {{1, 16, 15, 13}, {32, 16, 3, 3}, {32}, {1, 32, 15, 13}}, {false, true, true, false},
              {1, 32, 15, 13}, a, impl};
    check(nchw);
    Case nhwc = nchw;
    nhwc.attrs["channels_last"] = ir::Attribute::of_int(1);
    nhwc.in_dims = {{2, 15, 13, 16}, {32, 16, 3, 3}, {32}, {2, 15, 13, 32}};
    nhwc.out_dims = {2, 15, 13, 32};
    check(nhwc);
    // At 2 threads the NHWC <-> nChw16c reorders are kiln's (blocked_reorder.cpp), here with
    // channels not a multiple of 16 on both ends.
    Case odd = nhwc;
    odd.threads = 2;
    odd.in_dims = {{2, 15, 13, 20}, {24, 20, 3, 3}, {24}, {2, 15, 13, 24}};
    odd.out_dims = {2, 15, 13, 24};
    check(odd);
    nhwc.threads = 2;
    check(nhwc);
  }
}

// Activations in nChw16c under an NHWC type (src/lower/blocked_layout.cpp): every combination
// of a blocked input X, output Y and residual Z, on each implementation (random inputs read as
// blocked by both sides; 16 channels would be one block, the order of NHWC).
TEST(CpuKernels, ConvBlockedActivations) {
  for (const char* impl : {"onednn_winograd", "onednn", "onednn_alt_layout"})
    for (int mask = 1; mask < 8; ++mask) {
      SCOPED_TRACE(std::string(impl) + " mask " + std::to_string(mask));
      ir::Attributes a = conv_attrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1);
      a["activation"] = ir::Attribute::of_string("Relu");
      a["channels_last"] = ir::Attribute::of_int(1);
      if (mask & 1) a["x_blocked"] = ir::Attribute::of_int(1);
      if (mask & 2) a["y_blocked"] = ir::Attribute::of_int(1);
      if (mask & 4) a["z_blocked"] = ir::Attribute::of_int(1);
      for (int threads : {1, 2})
        check({"FusedConv", "kiln", {{2, 9, 7, 32}, {48, 32, 3, 3}, {48}, {2, 9, 7, 48}}, {false, true, true, false},
               {2, 9, 7, 48}, a, impl, threads});
    }
  // Channels not a multiple of 16: declined (shape inference rejects the node too).
  ir::Attributes bad = conv_attrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1);
  bad["x_blocked"] = ir::Attribute::of_int(1);
  ir::Graph g;
  std::mt19937 rng(5);
  single_nhwc_conv(g, {1, 5, 5, 12}, {16, 12, 3, 3}, bad, rng);
  EXPECT_THROW(ops::ShapeInference().run(g), Error);
}

// A kiln.ConvConcat's kernel against `expected` (its body on the reference kernels): kiln's
// Winograd and 1x1 kernels writing their slices, then oneDNN's convs reordering into them, at 1
// and 2 threads, each step split across the team and the branches dealt; each kernel run twice
// (scratch reused).
void expect_conv_concat_matches(const ir::Node& n, const Tensor& in, const Tensor& expected) {
  for (const std::vector<std::string>& disabled :
       {std::vector<std::string>{}, std::vector<std::string>{"kiln_winograd", "kiln_pointwise"}})
    for (int threads : {1, 2})
      for (const char* schedule : {"split", "parts"}) {
        auto backend = backends::make_cpu_backend(threads);
        backend->set_disabled_kernels(disabled);
        const plan::KernelSpec spec{.backend = "cpu", .impl = "onednn", .threads = threads,
                                    .params = {{"schedule", std::string(schedule)}}};
        auto kernel = backend->instantiate(n, spec);
        ASSERT_TRUE(kernel);
        kernel->wait_ready();
        for (int run = 0; run < 2; ++run) {
          // Dealt parts run on the held team when every part can, else on an OpenMP region.
          Tensor actual(DType::Float, expected.dims());
          backend->hold_team([&] { kernel->run({&in}, {&actual}); });
          for (int64_t i = 0; i < expected.numel(); ++i) {
            const float e = expected.data<float>()[i];
            ASSERT_NEAR(actual.data<float>()[i], e, 5e-4 * std::max(1.f, std::fabs(e)))
                << "threads " << threads << ", " << schedule << (disabled.empty() ? "" : ", oneDNN") << " at " << i;
          }
        }
      }
}

// kiln.ConvConcat (src/lower/fuse_conv_concat.cpp): each conv writes its channel slice of the
// output. A 1x1 piece (direct conv), a Winograd piece and a stride-1 3x3 with odd channels
// (direct), at 1 and 2 threads, each conv split across the team or the convs dealt to the
// threads whole, against the body run on the reference kernels; with 520 input channels the 1x1
// piece has 540 KB of weights, so that at 2 threads it splits its outputs.
void check_conv_concat(int64_t channels, int64_t pointwise_outputs) {
  std::mt19937 rng(11);
  ir::Graph g;
  g.opsets[""] = 17;
  g.opsets["kiln"] = 1;
  ir::Value* x = g.add_input("x", ir::TensorType::from_dims(DType::Float, {2, 9, 7, channels}));
  auto piece = [&](int64_t oc, int64_t k, const std::string& name) {
    ir::Attributes a = conv_attrs({1, 1}, {k / 2, k / 2, k / 2, k / 2}, {1, 1}, 1);
    a["channels_last"] = ir::Attribute::of_int(1);
    a["activation"] = ir::Attribute::of_string("Relu");
    ir::Value* w = g.add_constant(name + "_w", random_tensor({oc, channels, k, k}, rng));
    ir::Value* b = g.add_constant(name + "_b", random_tensor({oc}, rng));
    ir::Value* y = g.add_value(name);
    g.add_node("FusedConv", {x, w, b}, {y}, a, name, "kiln");
    return y;
  };
  ir::Value* a = piece(pointwise_outputs, 1, "a");
  ir::Value* b = piece(16, 3, "b");
  ir::Value* c = piece(7, 3, "c");
  ir::Value* y = g.add_value("y");
  g.add_node("Concat", {a, b, c}, {y}, {{"axis", ir::Attribute::of_int(3)}}, "cat");
  g.add_output(y);
  ops::ShapeInference().run(g);
  ASSERT_EQ(lower::fuse_conv_concat(g), 1);
  ops::ShapeInference().run(g);
  const ir::Node* n = g.nodes().back();
  ASSERT_EQ(n->op_type(), "ConvConcat");
  Tensor in = random_tensor({2, 9, 7, channels}, rng);
  const Tensor expected = ops::run_reference(*n, {&in})[0];
  ASSERT_EQ(expected.dims(), (std::vector<int64_t>{2, 9, 7, pointwise_outputs + 23}));
  expect_conv_concat_matches(*n, in, expected);
}

TEST(CpuKernels, ConvConcatWritesSlices) {
  check_conv_concat(16, 5);
  check_conv_concat(520, 260);
}

// A kiln.ConvConcat whose body holds whole branches (fuse_conv_concat with a backend that deals
// them): a 1x1 branch, 1x1 -> 3x3 (kiln's Winograd), 1x1 -> 1x3 -> 3x1 (oneDNN) and an average
// pool -> 1x1, each step passing its result to the next in the thread's scratch, at 1 and 2
// threads, split and dealt, kiln's kernels and oneDNN's, against the body on the reference
// kernels.
TEST(CpuKernels, ConvConcatRunsWholeBranches) {
  std::mt19937 rng(12);
  ir::Graph g;
  g.opsets[""] = 17;
  g.opsets["kiln"] = 1;
  const int64_t C = 32;
  ir::Value* x = g.add_input("x", ir::TensorType::from_dims(DType::Float, {2, 9, 10, C}));
  int made = 0;
  auto conv = [&](ir::Value* in, int64_t ic, int64_t oc, int64_t kh, int64_t kw) {
    ir::Attributes a = conv_attrs({1, 1}, {kh / 2, kw / 2, kh / 2, kw / 2}, {1, 1}, 1);
    a["channels_last"] = ir::Attribute::of_int(1);
    a["activation"] = ir::Attribute::of_string("Relu");
    const std::string name = "conv" + std::to_string(made++);
    ir::Value* w = g.add_constant(name + "_w", random_tensor({oc, ic, kh, kw}, rng));
    ir::Value* b = g.add_constant(name + "_b", random_tensor({oc}, rng));
    ir::Value* y = g.add_value(name);
    g.add_node("FusedConv", {in, w, b}, {y}, a, name, "kiln");
    return y;
  };
  ir::Value* a = conv(x, C, 16, 1, 1);
  ir::Value* c = conv(conv(x, C, 16, 1, 1), 16, 24, 3, 3);
  ir::Value* d = conv(conv(conv(x, C, 16, 1, 1), 16, 20, 1, 3), 20, 21, 3, 1);
  ir::Value* p = g.add_value("pooled");
  g.add_node("NhwcAveragePool", {x}, {p},
             {{"kernel_shape", ir::Attribute::of_ints({3, 3})}, {"pads", ir::Attribute::of_ints({1, 1, 1, 1})},
              {"strides", ir::Attribute::of_ints({1, 1})}},
             "pool", "kiln");
  ir::Value* e = conv(p, C, 7, 1, 1);
  ir::Value* y = g.add_value("y");
  g.add_node("Concat", {a, c, d, e}, {y}, {{"axis", ir::Attribute::of_int(3)}}, "cat");
  g.add_output(y);
  ops::ShapeInference().run(g);
  ASSERT_EQ(lower::fuse_conv_concat(g, [](const std::vector<std::vector<const ir::Node*>>&) { return true; }), 1);
  ops::ShapeInference().run(g);
  const ir::Node* n = g.nodes().back();
  ASSERT_EQ(n->op_type(), "ConvConcat");
  ASSERT_EQ(n->attrs.at("body").g->num_nodes(), 9u);
  Tensor in = random_tensor({2, 9, 10, C}, rng);
  const Tensor expected = ops::run_reference(*n, {&in})[0];
  ASSERT_EQ(expected.dims(), (std::vector<int64_t>{2, 9, 10, 68}));
  expect_conv_concat_matches(*n, in, expected);
}

// kiln's channels-last depthwise conv (depthwise_conv.cpp) against the reference: channels a
// multiple of 16 and not (masked blocks), 3x3 at strides 1 (rows in pairs, and an odd row left
// over) and 2 with asymmetric pads (groups of
// eight pixels inside the row and at its edges, and shorter tails), 5x5 at strides 1 and 2
// (rows narrower than the kernel), a 2x2 and a 1x3 kernel (the generic path), images narrower
// than a block of pixels and wider, with the activations it applies in registers and one it
// applies after, at 1 and 2 threads. Dilated (a segmentation backbone's last stage: 5x5 at
// dilation 2 on a 10x10 map, most taps in the padding): dilation 2 across the row (row_kxk's
// taps), any dilation down the rows (the rows the kernel is given), images narrower than the
// taps' span.
TEST(CpuKernels, DepthwiseConv) {
  struct Shape {
    int64_t c, h, w, k_h, k_w, stride;
    std::vector<int64_t> pads;
    int64_t dh = 1, dw = 1;
  };
  const Shape shapes[] = {{32, 9, 23, 3, 3, 1, {1, 1, 1, 1}}, {19, 11, 6, 3, 3, 2, {1, 0, 0, 1}},
                          {48, 5, 3, 3, 3, 1, {0, 1, 2, 1}},  {24, 6, 40, 3, 3, 2, {1, 1, 1, 1}},
                          {40, 9, 21, 5, 5, 1, {2, 2, 2, 2}}, {20, 7, 4, 5, 5, 1, {2, 1, 2, 2}},
                          {35, 11, 37, 5, 5, 2, {1, 2, 2, 1}}, {21, 8, 17, 2, 2, 2, {0, 0, 1, 1}},
                          {16, 7, 13, 1, 3, 1, {0, 1, 0, 1}}, {20, 8, 11, 3, 3, 1, {0, 1, 2, 1}},
                          {32, 10, 10, 5, 5, 1, {4, 4, 4, 4}, 2, 2}, {19, 9, 23, 3, 3, 1, {2, 2, 2, 2}, 2, 2},
                          {40, 13, 6, 5, 5, 1, {2, 4, 2, 4}, 1, 2},  {24, 11, 17, 3, 3, 1, {3, 2, 3, 2}, 3, 2},
                          {48, 7, 3, 5, 5, 1, {4, 4, 4, 4}, 2, 2},   {20, 12, 30, 3, 3, 1, {0, 1, 2, 0}, 2, 2}};
  for (const Shape& sh : shapes)
    for (const char* act : {"", "Relu", "Clip", "SiLU", "HardSwish", "HardSigmoid", "LeakyRelu"})
      for (int threads : {1, 2}) {
        SCOPED_TRACE("c " + std::to_string(sh.c) + " w " + std::to_string(sh.w) + " dilations " + std::to_string(sh.dh) +
                     "," + std::to_string(sh.dw) + " " + act + " threads " + std::to_string(threads));
        ir::Attributes a = conv_attrs({sh.stride, sh.stride}, sh.pads, {sh.dh, sh.dw}, sh.c);
        a["channels_last"] = ir::Attribute::of_int(1);
        if (*act) a["activation"] = ir::Attribute::of_string(act);
        if (std::string(act) == "Clip") a["activation_params"] = ir::Attribute::of_floats({-0.2f, 0.3f});
        if (std::string(act) == "HardSigmoid") a["activation_params"] = ir::Attribute::of_floats({0.3f, 0.4f});
        if (std::string(act) == "LeakyRelu") a["activation_params"] = ir::Attribute::of_floats({0.07f});
        const int64_t oh = (sh.h + sh.pads[0] + sh.pads[2] - (sh.k_h - 1) * sh.dh - 1) / sh.stride + 1;
        const int64_t ow = (sh.w + sh.pads[1] + sh.pads[3] - (sh.k_w - 1) * sh.dw - 1) / sh.stride + 1;
        check({"FusedConv", "kiln", {{2, sh.h, sh.w, sh.c}, {sh.c, 1, sh.k_h, sh.k_w}, {sh.c}}, {false, true, true},
               {2, oh, ow, sh.c}, a, "kiln_depthwise", threads});
      }
  // 7x7, a residual, dilation 3 across the rows and a dilated stride are oneDNN's.
  ir::Attributes a = conv_attrs({1, 1}, {3, 3, 3, 3}, {1, 1}, 16);
  a["channels_last"] = ir::Attribute::of_int(1);
  EXPECT_FALSE(check({"FusedConv", "kiln", {{1, 7, 7, 16}, {16, 1, 7, 7}}, {false, true}, {1, 7, 7, 16}, a,
                      "kiln_depthwise"},
                     false));
  a["dilations"] = ir::Attribute::of_ints({3, 3});
  EXPECT_FALSE(check({"FusedConv", "kiln", {{1, 7, 7, 16}, {16, 1, 3, 3}}, {false, true}, {1, 7, 7, 16}, a,
                      "kiln_depthwise"},
                     false));
  a["dilations"] = ir::Attribute::of_ints({1, 1});
  a["pads"] = ir::Attribute::of_ints({1, 1, 1, 1});
  EXPECT_FALSE(check({"FusedConv", "kiln", {{1, 7, 7, 16}, {16, 1, 3, 3}, {16}, {1, 7, 7, 16}}, {false, true, true, false},
                      {1, 7, 7, 16}, a, "kiln_depthwise"},
                     false));
  a = conv_attrs({2, 2}, {2, 2, 2, 2}, {2, 2}, 16);
  a["channels_last"] = ir::Attribute::of_int(1);
  EXPECT_FALSE(check({"FusedConv", "kiln", {{1, 9, 9, 16}, {16, 1, 3, 3}}, {false, true}, {1, 5, 5, 16}, a,
                      "kiln_depthwise"},
                     false));
}

// FusedConv's channel scale S (src/lower/fold_channel_scale.cpp): the packed weights times S
// in each run, with a residual and SiLU, 1x1 and 3x3, on both direct-conv candidates at 1 and 2
// threads; the GEMV and Winograd decline it.
TEST(CpuKernels, ConvChannelScale) {
  for (int64_t k : {1, 3})
    for (const char* impl : {"onednn", "onednn_alt_layout"})
      for (int threads : {1, 2}) {
        SCOPED_TRACE(std::string(impl) + " k " + std::to_string(k) + " threads " + std::to_string(threads));
        ir::Attributes a = conv_attrs({1, 1}, {k / 2, k / 2, k / 2, k / 2}, {1, 1}, 1);
        a["channels_last"] = ir::Attribute::of_int(1);
        a["activation"] = ir::Attribute::of_string("SiLU");
        check({"FusedConv", "kiln", {{1, 9, 7, 19}, {21, 19, k, k}, {21}, {1, 9, 7, 21}, {1, 1, 1, 19}},
               {false, true, true, false, false}, {1, 9, 7, 21}, a, impl, threads});
      }
  ir::Attributes a = conv_attrs({1, 1}, {0, 0, 0, 0}, {1, 1}, 1);
  a["channels_last"] = ir::Attribute::of_int(1);
  EXPECT_FALSE(check({"FusedConv", "kiln", {{1, 1, 1, 16}, {8, 16, 1, 1}, {8}, {1, 1, 1, 8}, {1, 1, 1, 16}},
                      {false, true, true, false, false}, {1, 1, 1, 8}, a, "gemv"},
                     false));
  a["pads"] = ir::Attribute::of_ints({1, 1, 1, 1});
  EXPECT_FALSE(check({"FusedConv", "kiln", {{1, 5, 5, 16}, {16, 16, 3, 3}, {16}, {1, 5, 5, 16}, {1, 1, 1, 16}},
                      {false, true, true, false, false}, {1, 5, 5, 16}, a, "onednn_winograd"},
                     false));
}

// The row-at-a-time kernels a ConvChain runs on its windows (depthwise, stem, pool) reading
// their input rows from a ring (row r in slot r % ring, row_slot) write what they write reading
// the whole image: each output row from a ring of four rows holding just the rows it reads,
// placed where the row numbers put them (so a kernel's rows wrap around the ring's end).
TEST(CpuKernels, RowKernelsReadTheirInputFromARing) {
  std::mt19937 rng(3);
  constexpr int64_t H = 11, W = 9, kRing = 4;
  // out_rows(x, x_row0, y, oy0, oy1, ring) for one kernel; rows of `in_row` floats in, `out_row` out.
  auto check = [&](const char* what, int64_t C, int64_t OH, int64_t out_row, int64_t K, int64_t S, int64_t P,
                   const std::function<void(const float*, float*, int64_t, int64_t)>& rows) {
    SCOPED_TRACE(what);
    const int64_t in_row = W * C;
    const Tensor x = random_tensor({1, H, W, C}, rng);
    std::vector<float> whole(static_cast<size_t>(OH * out_row)), ringed(static_cast<size_t>(out_row));
    rows(x.data<float>(), whole.data(), 0, 0);
    for (int64_t oy = 0; oy < OH; ++oy) {
      std::vector<float> ring(static_cast<size_t>(kRing * in_row), std::nanf(""));
      for (int64_t r = std::max<int64_t>(0, oy * S - P); r < std::min(H, oy * S - P + K); ++r)
        std::copy_n(x.data<float>() + r * in_row, in_row, ring.data() + (r % kRing) * in_row);
      rows(ring.data(), ringed.data(), oy, kRing);
      for (int64_t i = 0; i < out_row; ++i) ASSERT_EQ(ringed[i], whole[oy * out_row + i]) << "row " << oy << " at " << i;
    }
  };
  // rows(x, y, oy, ring): output row oy from x (ring 0: the whole image, all rows).
  backends::cpu::DepthwiseShape d;
  d.H = H, d.W = W, d.C = 20, d.OH = 6, d.OW = 5, d.KH = 3, d.KW = 3, d.SH = 2, d.SW = 2, d.PT = 1, d.PL = 1;
  const Tensor dw_w = random_tensor({20, 1, 3, 3}, rng), dw_b = random_tensor({20}, rng);
  const backends::cpu::DepthwiseConv dw(d, dw_w.data<float>(), dw_b.data<float>(), {ops::Activation::Relu});
  check("depthwise", 20, d.OH, d.OW * 20, 3, 2, 1, [&](const float* x, float* y, int64_t oy, int64_t ring) {
    if (ring) dw.rows(x, 0, y, oy, oy + 1, ring);
    else dw.rows(x, 0, y, 0, d.OH);
  });
  backends::cpu::StemShape st;
  st.H = H, st.W = W, st.C = 3, st.OH = 11, st.OW = 9, st.OC = 24, st.KH = 3, st.KW = 3, st.PT = 1, st.PL = 1;
  const Tensor st_w = random_tensor({24, 3, 3, 3}, rng), st_b = random_tensor({24}, rng);
  if (backends::cpu::has_avx512()) {
    const backends::cpu::StemConv stem(st, st_w.data<float>(), st_b.data<float>(), {ops::Activation::None});
    check("stem", 3, st.OH, st.OW * 24, 3, 1, 1, [&](const float* x, float* y, int64_t oy, int64_t ring) {
      if (ring) stem.rows(x, 0, y, oy, oy + 1, ring);
      else stem.rows(x, 0, y, 0, st.OH);
    });
  }
  const backends::cpu::PoolWindow pw{3, 3, 2, 2, 1, 1, 0, 0, 1, 1, H, W, 17, 6, 5, true, false};
  check("max pool", 17, pw.OH, pw.OW * 17, 3, 2, 0, [&](const float* x, float* y, int64_t oy, int64_t ring) {
    if (ring) backends::cpu::pool_rows(pw, x, 0, y, oy, oy + 1, ring);
    else backends::cpu::pool_rows(pw, x, 0, y, 0, pw.OH);
  });
}

// Runs a kiln.ConvChain node on the cpu backend in bands of `band` rows (0: sized to the cache)
// at `threads`, the `disabled` kernels off, and compares its first output with `expected`.
void check_chain_bands(ir::Node& node, const std::vector<const Tensor*>& args, const Tensor& expected, int64_t band,
                       int threads, const std::vector<std::string>& disabled = {}) {
  node.attrs["band_rows"] = ir::Attribute::of_int(band);
  auto backend = backends::make_cpu_backend(threads);
  if (!disabled.empty()) backend->set_disabled_kernels(disabled);
  auto kernel = backend->create(node);
  ASSERT_TRUE(kernel);
  Tensor actual(DType::Float, expected.dims());
  kernel->run(args, {&actual});
  for (int64_t i = 0; i < actual.numel(); ++i) {
    const float e = expected.data<float>()[i];
    ASSERT_NEAR(actual.data<float>()[i], e, 1e-4 * std::max(1.f, std::fabs(e))) << "at " << i;
  }
}

// A kiln.ConvChain (src/lower/fuse_conv_chain.cpp) for the tests below: a dense stride-2 stem
// with asymmetric pads, a depthwise 3x3, a 1x1 project with SiLU, an expand, a stride-2
// depthwise and a 1x1 project adding a residual from outside the chain, on two odd-sized images;
// `pooled` adds the output's global average pool, which joins as a second output. Holds the
// inputs and the body's results on the reference kernels.
struct ChainCase {
  ir::Graph g;
  ir::Node* node = nullptr;
  Tensor in, res;
  std::vector<const Tensor*> args;
  std::vector<Tensor> expected;
  bool pooled;

  explicit ChainCase(bool pool) : pooled(pool) {
    std::mt19937 rng(13);
    g.opsets[""] = 17;
    g.opsets["kiln"] = 1;
    ir::Value* x = g.add_input("x", ir::TensorType::from_dims(DType::Float, {2, 23, 18, 3}));
    ir::Value* r = g.add_input("r", ir::TensorType::from_dims(DType::Float, {2, 6, 4, 7}));
    int id = 0;
    auto conv = [&](ir::Value* in, int64_t oc, int64_t c_per_group, int64_t k, int64_t stride,
                    std::vector<int64_t> pads, const char* act, ir::Value* z = nullptr) {
      const std::string name = "c" + std::to_string(id++);
      ir::Attributes a = conv_attrs({stride, stride}, pads, {1, 1}, c_per_group == 1 && oc > 1 ? oc : 1);
      a["channels_last"] = ir::Attribute::of_int(1);
      if (*act) a["activation"] = ir::Attribute::of_string(act);
      if (std::string(act) == "Clip") a["activation_params"] = ir::Attribute::of_floats({0.f, 6.f});
      std::vector<ir::Value*> ins{in, g.add_constant(name + "_w", random_tensor({oc, c_per_group, k, k}, rng)),
                                  g.add_constant(name + "_b", random_tensor({oc}, rng))};
      if (z) ins.push_back(z);
      ir::Value* y = g.add_value(name);
      g.add_node("FusedConv", ins, {y}, a, name, "kiln");
      return y;
    };
    ir::Value* v = conv(x, 8, 3, 3, 2, {1, 0, 1, 1}, "Relu");  // [2, 12, 9, 8]
    v = conv(v, 8, 1, 3, 1, {1, 1, 1, 1}, "Clip");             // depthwise
    v = conv(v, 5, 8, 1, 1, {0, 0, 0, 0}, "SiLU");
    v = conv(v, 15, 5, 1, 1, {0, 0, 0, 0}, "Clip");
    v = conv(v, 15, 1, 3, 2, {0, 1, 1, 0}, "SiLU");  // depthwise, stride 2: [2, 6, 4, 15]
    v = conv(v, 7, 15, 1, 1, {0, 0, 0, 0}, "", r);
    g.add_output(v);
    if (pooled) {
      ir::Value* p = g.add_value("pool");
      g.add_node("NhwcGlobalAveragePool", {v}, {p}, {}, "gap", "kiln");
      g.add_output(p);
    }
    ops::ShapeInference().run(g);
    EXPECT_EQ(v->type.static_dims(), (std::vector<int64_t>{2, 6, 4, 7}));
    EXPECT_EQ(lower::fuse_conv_chains(g, 0), 1);
    ops::ShapeInference().run(g);
    node = g.nodes().back();
    EXPECT_EQ(node->op_type(), "ConvChain");
    in = random_tensor({2, 23, 18, 3}, rng);
    res = random_tensor({2, 6, 4, 7}, rng);
    args = node->input(0)->name() == "x" ? std::vector<const Tensor*>{&in, &res} : std::vector<const Tensor*>{&res, &in};
    expected = ops::run_reference(*node, args);
    EXPECT_EQ(expected.size(), pooled ? 2u : 1u);
  }

  // Runs `kernel` and compares both outputs with the reference.
  void check(const backends::Kernel& kernel, const std::string& what) const {
    Tensor actual(DType::Float, expected[0].dims()), pool(DType::Float, {2, 1, 1, 7});
    kernel.run(args, pooled ? std::vector<Tensor*>{&actual, &pool} : std::vector<Tensor*>{&actual});
    if (pooled) {
      for (int64_t i = 0; i < pool.numel(); ++i)
        EXPECT_NEAR(pool.data<float>()[i], expected[1].data<float>()[i], 1e-4f) << what << ", pool channel " << i;
    }
    for (int64_t i = 0; i < actual.numel(); ++i) {
      const float e = expected[0].data<float>()[i];
      ASSERT_NEAR(actual.data<float>()[i], e, 1e-4 * std::max(1.f, std::fabs(e))) << what << " at " << i;
    }
  }
};

// The chain band by band: bands of 1, 2 and 3 rows and one band for all, at 1 and 2 threads,
// plain and pooled, the stem on kiln's stem kernel and on oneDNN's primitives.
TEST(CpuKernels, ConvChainBands) {
  for (bool pooled : {false, true}) {
    ChainCase c(pooled);
    for (bool kiln_stem : {true, false})
      for (int64_t band : {1, 2, 3, 0})
        for (int threads : {1, 2}) {
          c.node->attrs["band_rows"] = ir::Attribute::of_int(band);
          auto backend = backends::make_cpu_backend(threads);
          if (!kiln_stem) backend->set_disabled_kernels({"kiln_stem_conv"});
          auto kernel = backend->create(*c.node);
          ASSERT_TRUE(kernel);
          c.check(*kernel, std::string(pooled ? "pooled" : "plain") + (kiln_stem ? " kiln_stem_conv" : " onednn") +
                               " band " + std::to_string(band) + " threads " + std::to_string(threads));
        }
  }
}

// A chain's 1x1 layers on kiln's pointwise kernel and on oneDNN's primitives: more than 128
// input channels (partial sums kept in the window between ranges), 150 outputs (three blocks,
// the last masked) and a 1x1 project adding a residual, band by band at 1 and 2 threads.
TEST(CpuKernels, ConvChainWidePointwise) {
  std::mt19937 rng(5);
  ir::Graph g;
  g.opsets[""] = 17;
  g.opsets["kiln"] = 1;
  ir::Value* x = g.add_input("x", ir::TensorType::from_dims(DType::Float, {1, 9, 11, 140}));
  ir::Value* r = g.add_input("r", ir::TensorType::from_dims(DType::Float, {1, 9, 11, 20}));
  auto conv = [&](ir::Value* in, const std::string& name, int64_t oc, int64_t c_per_group, int64_t k, const char* act,
                  ir::Value* z) {
    ir::Attributes a = conv_attrs({1, 1}, {k / 2, k / 2, k / 2, k / 2}, {1, 1}, c_per_group == 1 ? oc : 1);
    a["channels_last"] = ir::Attribute::of_int(1);
    if (*act) a["activation"] = ir::Attribute::of_string(act);
    if (std::string(act) == "Clip") a["activation_params"] = ir::Attribute::of_floats({0.f, 6.f});
    std::vector<ir::Value*> ins{in, g.add_constant(name + "_w", random_tensor({oc, c_per_group, k, k}, rng)),
                                g.add_constant(name + "_b", random_tensor({oc}, rng))};
    if (z) ins.push_back(z);
    ir::Value* y = g.add_value(name);
    g.add_node("FusedConv", ins, {y}, a, name, "kiln");
    return y;
  };
  ir::Value* v = conv(x, "expand", 150, 140, 1, "Clip", nullptr);
  v = conv(v, "dw", 150, 1, 3, "Relu", nullptr);
  v = conv(v, "project", 20, 150, 1, "", r);
  g.add_output(v);
  ops::ShapeInference().run(g);
  ASSERT_EQ(lower::fuse_conv_chains(g, 0), 1);
  ops::ShapeInference().run(g);
  ir::Node* node = g.nodes().back();
  ASSERT_EQ(node->op_type(), "ConvChain");
  const Tensor in = random_tensor({1, 9, 11, 140}, rng), res = random_tensor({1, 9, 11, 20}, rng);
  const std::vector<const Tensor*> args =
      node->input(0)->name() == "x" ? std::vector<const Tensor*>{&in, &res} : std::vector<const Tensor*>{&res, &in};
  const std::vector<Tensor> expected = ops::run_reference(*node, args);
  for (bool kiln_pointwise : {true, false})
    for (int64_t band : {1, 3, 0})
      for (int threads : {1, 2}) {
        SCOPED_TRACE(std::string(kiln_pointwise ? "kiln_pointwise" : "onednn") + " band " + std::to_string(band) +
                     " threads " + std::to_string(threads));
        check_chain_bands(*node, args, expected[0], band, threads,
                          kiln_pointwise ? std::vector<std::string>{} : std::vector<std::string>{"kiln_pointwise"});
      }
}

// A pooled chain of one 5x5 depthwise conv at strides 1 and 2 (efficientnet's before their
// squeeze-excitation) on kiln's depthwise kernel, band by band at 1 and 2 threads.
TEST(CpuKernels, ConvChainDepthwise5x5Pooled) {
  for (int64_t stride : {1, 2}) {
    std::mt19937 rng(7);
    ir::Graph g;
    g.opsets[""] = 17;
    g.opsets["kiln"] = 1;
    ir::Value* x = g.add_input("x", ir::TensorType::from_dims(DType::Float, {1, 11, 9, 20}));
    ir::Attributes a = conv_attrs({stride, stride}, {2, 2, 2, 2}, {1, 1}, 20);
    a["channels_last"] = ir::Attribute::of_int(1);
    a["activation"] = ir::Attribute::of_string("SiLU");
    ir::Value* d = g.add_value("d");
    g.add_node("FusedConv",
               {x, g.add_constant("w", random_tensor({20, 1, 5, 5}, rng)), g.add_constant("b", random_tensor({20}, rng))},
               {d}, a, "dw", "kiln");
    ir::Value* p = g.add_value("p");
    g.add_node("NhwcGlobalAveragePool", {d}, {p}, {}, "gap", "kiln");
    g.add_output(d);
    g.add_output(p);
    ops::ShapeInference().run(g);
    ASSERT_EQ(lower::fuse_conv_chains(g, 0), 1);
    ops::ShapeInference().run(g);
    ir::Node* node = g.nodes().back();
    ASSERT_EQ(node->op_type(), "ConvChain");
    const Tensor in = random_tensor({1, 11, 9, 20}, rng);
    const std::vector<Tensor> expected = ops::run_reference(*node, {&in});
    ASSERT_EQ(expected.size(), 2u);
    for (int64_t band : {1, 2, 0})
      for (int threads : {1, 2}) {
        SCOPED_TRACE("stride " + std::to_string(stride) + " band " + std::to_string(band) + " threads " +
                     std::to_string(threads));
        node->attrs["band_rows"] = ir::Attribute::of_int(band);
        auto kernel = backends::make_cpu_backend(threads)->create(*node);
        ASSERT_TRUE(kernel);
        Tensor y(DType::Float, expected[0].dims()), pool(DType::Float, expected[1].dims());
        kernel->run({&in}, {&y, &pool});
        for (int64_t i = 0; i < y.numel(); ++i)
          ASSERT_NEAR(y.data<float>()[i], expected[0].data<float>()[i], 1e-4f) << "at " << i;
        for (int64_t i = 0; i < pool.numel(); ++i)
          EXPECT_NEAR(pool.data<float>()[i], expected[1].data<float>()[i], 1e-4f) << "pool channel " << i;
      }
  }
}

// Pools inside a chain (squeezenet's and resnet18's stem -> max pool): a stride-2 conv, a 3x3
// stride-2 max pool whose last window hangs over the input (ceil_mode), a 1x1 conv, and a 2x2
// average pool counting its padding as the last layer; band by band at 1 and 2 threads.
TEST(CpuKernels, ConvChainPools) {
  std::mt19937 rng(5);
  ir::Graph g;
  g.opsets[""] = 17;
  g.opsets["kiln"] = 1;
  ir::Value* x = g.add_input("x", ir::TensorType::from_dims(DType::Float, {2, 29, 20, 3}));
  auto conv = [&](ir::Value* in, int64_t oc, int64_t ic, int64_t k, int64_t stride, std::vector<int64_t> pads,
                  const std::string& name) {
    ir::Attributes a = conv_attrs({stride, stride}, pads, {1, 1}, 1);
    a["channels_last"] = ir::Attribute::of_int(1);
    a["activation"] = ir::Attribute::of_string("Relu");
    ir::Value* y = g.add_value(name);
    g.add_node("FusedConv", {in, g.add_constant(name + "_w", random_tensor({oc, ic, k, k}, rng)),
                             g.add_constant(name + "_b", random_tensor({oc}, rng))},
               {y}, a, name, "kiln");
    return y;
  };
  auto pool = [&](const char* op, ir::Value* in, int64_t k, int64_t stride, std::vector<int64_t> pads,
                  ir::Attributes a, const std::string& name) {
    a["kernel_shape"] = ir::Attribute::of_ints({k, k});
    a["strides"] = ir::Attribute::of_ints({stride, stride});
    a["pads"] = ir::Attribute::of_ints(pads);
    ir::Value* y = g.add_value(name);
    g.add_node(op, {in}, {y}, a, name, "kiln");
    return y;
  };
  ir::Value* v = conv(x, 17, 3, 3, 2, {0, 1, 0, 1}, "stem");                                       // [2, 14, 10, 17]
  v = pool("NhwcMaxPool", v, 3, 2, {0, 0, 0, 0}, {{"ceil_mode", ir::Attribute::of_int(1)}}, "max");  // [2, 7, 5, 17]
  v = conv(v, 9, 17, 1, 1, {0, 0, 0, 0}, "squeeze");
  v = pool("NhwcAveragePool", v, 2, 1, {1, 0, 0, 1}, {{"count_include_pad", ir::Attribute::of_int(1)}}, "avg");
  g.add_output(v);
  ops::ShapeInference().run(g);
  ASSERT_EQ(v->type.static_dims(), (std::vector<int64_t>{2, 7, 5, 9}));
  ASSERT_EQ(lower::fuse_conv_chains(g, 0), 1);
  ops::ShapeInference().run(g);
  ir::Node* node = g.nodes().back();
  ASSERT_EQ(node->op_type(), "ConvChain");
  const Tensor in = random_tensor({2, 29, 20, 3}, rng);
  const std::vector<const Tensor*> args{&in};
  const Tensor expected = ops::run_reference(*node, args)[0];
  for (int64_t band : {1, 2, 3, 0})
    for (int threads : {1, 2}) {
      SCOPED_TRACE("band " + std::to_string(band) + " threads " + std::to_string(threads));
      check_chain_bands(*node, args, expected, band, threads);
    }
}

// A chain on the model's NCHW input: the Transpose to NHWC before the stem joins the chain and
// the stem reads the planes (kiln's stem kernel), or (kiln_stem_conv disabled, so oneDNN runs
// the stem) the kernel transposes each image first; band by band at 1 and 2 threads, 3x3 and
// 2x2 stems.
TEST(CpuKernels, ConvChainOnNchwInput) {
  for (int64_t k : {3, 2}) {
    std::mt19937 rng(9);
    ir::Graph g;
    g.opsets[""] = 17;
    g.opsets["kiln"] = 1;
    ir::Value* x = g.add_input("x", ir::TensorType::from_dims(DType::Float, {2, 3, 21, 17}));
    ir::Value* t = g.add_value("t");
    g.add_node("Transpose", {x}, {t}, {{"perm", ir::Attribute::of_ints({0, 2, 3, 1})}}, "layout");
    auto conv = [&](ir::Value* in, int64_t oc, int64_t c_per_group, int64_t kk, int64_t stride, const std::string& name) {
      ir::Attributes a = conv_attrs({stride, stride}, {kk / 2, kk / 2, kk / 2, kk / 2}, {1, 1}, c_per_group == 1 ? oc : 1);
      a["channels_last"] = ir::Attribute::of_int(1);
      a["activation"] = ir::Attribute::of_string("Relu");
      ir::Value* y = g.add_value(name);
      g.add_node("FusedConv", {in, g.add_constant(name + "_w", random_tensor({oc, c_per_group, kk, kk}, rng)),
                               g.add_constant(name + "_b", random_tensor({oc}, rng))},
                 {y}, a, name, "kiln");
      return y;
    };
    ir::Value* v = conv(t, 16, 3, k, 2, "stem");  // [2, 11, 9, 16]
    v = conv(v, 16, 1, 3, 1, "dw");
    v = conv(v, 24, 16, 1, 1, "pw");
    g.add_output(v);
    ops::ShapeInference().run(g);
    ASSERT_EQ(lower::fuse_conv_chains(g, 0), 1);
    ops::ShapeInference().run(g);
    ASSERT_EQ(g.nodes().size(), 1u);  // the Transpose is in the chain
    ir::Node* node = g.nodes().back();
    ASSERT_EQ(node->op_type(), "ConvChain");
    ASSERT_EQ(node->input(0), x);
    const Tensor in = random_tensor({2, 3, 21, 17}, rng);
    const std::vector<const Tensor*> args{&in};
    const Tensor expected = ops::run_reference(*node, args)[0];
    for (bool kiln_stem : {true, false})
      for (int64_t band : {1, 2, 0})
        for (int threads : {1, 2}) {
          SCOPED_TRACE("k " + std::to_string(k) + (kiln_stem ? " kiln_stem_conv" : " onednn") + " band " +
                       std::to_string(band) + " threads " + std::to_string(threads));
          check_chain_bands(*node, args, expected, band, threads,
                            kiln_stem ? std::vector<std::string>{} : std::vector<std::string>{"kiln_stem_conv"});
        }
  }
}

// Two callers of one kernel at once (sessions share kernels): each run's line buffers belong to
// its own thread. One thread per run, so ThreadSanitizer (make tsan) sees every synchronization
// (libgomp's team is not instrumented).
TEST(CpuKernels, ConvChainConcurrentCallers) {
  for (bool pooled : {false, true}) {
    ChainCase c(pooled);
    c.node->attrs["band_rows"] = ir::Attribute::of_int(2);
    auto kernel = backends::make_cpu_backend(1)->create(*c.node);
    ASSERT_TRUE(kernel);
    auto work = [&] {
      for (int i = 0; i < 3; ++i) c.check(*kernel, pooled ? "pooled, concurrent" : "plain, concurrent");
    };
    std::thread t0(work), t1(work);
    t0.join();
    t1.join();
  }
}

// Winograd weights from 256x256x3x3 up are transformed in the background while the direct conv
// runs (TieredKernel): both forms, with a residual and SiLU applied after the primitive.
TEST(CpuKernels, ConvWinogradBuiltInTheBackground) {
  ir::Attributes a = conv_attrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1);
  a["activation"] = ir::Attribute::of_string("SiLU");
  a["channels_last"] = ir::Attribute::of_int(1);
  Case c{"FusedConv", "kiln", {{1, 7, 8, 256}, {256, 256, 3, 3}, {256}, {1, 7, 8, 256}}, {false, true, true, false},
         {1, 7, 8, 256}, a, "onednn_winograd"};
  check(c);
  // Destroyed while the transform still runs: the destructor waits for it.
  ir::Graph g;
  std::mt19937 rng(3);
  ir::Node* n = single_nhwc_conv(g, {1, 7, 7, 512}, {512, 512, 3, 3}, conv_attrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1), rng);
  ops::ShapeInference().run(g);
  ASSERT_EQ(n->output(0)->type.static_dims(), (std::vector<int64_t>{1, 7, 7, 512}));
  auto backend = backends::make_cpu_backend(1);
  auto kernel = backend->create(*n);
  ASSERT_TRUE(kernel);
  kernel.reset();
  // Two threads running it while the transform finishes: every result is either form's.
  kernel = backend->create(*n);
  ASSERT_TRUE(kernel);
  Tensor in = random_tensor({1, 7, 7, 512}, rng);
  std::vector<Tensor> outs[2];
  auto work = [&](int t) {
    for (int i = 0; i < 4; ++i) {
      outs[t].emplace_back(DType::Float, std::vector<int64_t>{1, 7, 7, 512});
      kernel->run({&in}, {&outs[t].back()});
    }
  };
  std::thread t0(work, 0), t1(work, 1);
  t0.join();
  t1.join();
  kernel->wait_ready();
  Tensor want(DType::Float, {1, 7, 7, 512});
  kernel->run({&in}, {&want});
  for (const auto& per_thread : outs)
    for (const Tensor& got : per_thread)
      for (int64_t i = 0; i < want.numel(); ++i)
        ASSERT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-3 * std::max(1.f, std::fabs(want.data<float>()[i])));
}

TEST(CpuKernels, ConvTranspose) {
  auto attrs = [](std::vector<int64_t> s, std::vector<int64_t> p, std::vector<int64_t> d, int64_t g,
                  std::vector<int64_t> opad) {
    ir::Attributes a = conv_attrs(s, p, d, g);
    a["output_padding"] = ir::Attribute::of_ints(opad);
    return a;
  };
  // H: 2*(7-1) + 1 + 3 - 1 - 1 = 14; W: 2*(9-1) + 0 + 3 - 0 - 2 = 17
  check({"ConvTranspose", "", {{1, 6, 7, 9}, {6, 5, 3, 3}, {5}}, {false, true, true}, {1, 5, 14, 17},
         attrs({2, 2}, {1, 0, 1, 2}, {1, 1}, 1, {1, 0})});
  // Groups and dilation, no bias: 3*(5-1) + 2*(3-1)+1 = 17; W: 1*(6-1) + 5 = 10
  check({"ConvTranspose", "", {{2, 6, 5, 6}, {6, 2, 3, 3}}, {false, true}, {2, 6, 17, 10},
         attrs({3, 1}, {0, 0, 0, 0}, {2, 2}, 3, {0, 0})});
  // 1-D, stride 2: 2*(11-1) + 4 - 1 - 1 = 22
  check({"ConvTranspose", "", {{1, 3, 11}, {3, 4, 4}, {4}}, {false, true, true}, {1, 4, 22},
         {{"strides", ir::Attribute::of_ints({2})}, {"pads", ir::Attribute::of_ints({1, 1})}}});
  // SAME_UPPER: out = in * stride
  check({"ConvTranspose", "", {{1, 4, 5, 5}, {4, 3, 3, 3}}, {false, true}, {1, 3, 10, 10},
         {{"strides", ir::Attribute::of_ints({2, 2})}, {"auto_pad", ir::Attribute::of_string("SAME_UPPER")}}});
  // SAME_LOWER and SAME_UPPER with odd totals: H 2*4+3-10 = 1, W (dilation 2) 2*4+5-10 = 3.
  for (const char* mode : {"SAME_UPPER", "SAME_LOWER"})
    check({"ConvTranspose", "", {{1, 4, 5, 5}, {4, 3, 3, 3}}, {false, true}, {1, 3, 10, 10},
           {{"strides", ir::Attribute::of_ints({2, 2})}, {"dilations", ir::Attribute::of_ints({1, 2})},
            {"auto_pad", ir::Attribute::of_string(mode)}}});
  // output_shape asks for one more row than the natural extent: padding_r goes negative, the
  // reference kernel runs it.
  check({"ConvTranspose", "", {{1, 4, 5, 5}, {4, 3, 3, 3}}, {false, true}, {1, 3, 12, 11},
         {{"strides", ir::Attribute::of_ints({2, 2})}, {"output_shape", ir::Attribute::of_ints({12, 11})}}},
        false);
}

TEST(CpuKernels, PoolingNchwAndNhwc) {
  auto attrs = [](std::vector<int64_t> k, std::vector<int64_t> s, std::vector<int64_t> p, int64_t ceil) {
    return ir::Attributes{{"kernel_shape", ir::Attribute::of_ints(k)}, {"strides", ir::Attribute::of_ints(s)},
                          {"pads", ir::Attribute::of_ints(p)}, {"ceil_mode", ir::Attribute::of_int(ceil)}};
  };
  // (17 + 2 - 3) / 2 + 1 = 9, (19 + 2 - 3) / 2 + 1 = 10
  check({"MaxPool", "", {{2, 5, 17, 19}}, {false}, {2, 5, 9, 10}, attrs({3, 3}, {2, 2}, {1, 1, 1, 1}, 0)});
  check({"NhwcMaxPool", "kiln", {{2, 17, 19, 5}}, {false}, {2, 9, 10, 5}, attrs({3, 3}, {2, 2}, {1, 1, 1, 1}, 0)});
  // ceil_mode: ceil((17 - 3) / 2) + 1 = 8, ceil((19 - 3) / 2) + 1 = 9
  check({"MaxPool", "", {{1, 5, 17, 19}}, {false}, {1, 5, 8, 9}, attrs({3, 3}, {2, 2}, {0, 0, 0, 0}, 1)});
  check({"AveragePool", "", {{1, 5, 17, 20}}, {false}, {1, 5, 8, 10}, attrs({3, 3}, {2, 2}, {0, 0, 0, 0}, 1)});
  check({"NhwcAveragePool", "kiln", {{1, 17, 19, 5}}, {false}, {1, 9, 10, 5}, attrs({3, 3}, {2, 2}, {1, 1, 1, 1}, 0)});
  ir::Attributes inc = attrs({3, 3}, {1, 1}, {1, 1, 1, 1}, 0);
  inc["count_include_pad"] = ir::Attribute::of_int(1);
  check({"AveragePool", "", {{1, 5, 7, 6}}, {false}, {1, 5, 7, 6}, inc});
  check({"GlobalAveragePool", "", {{2, 13, 7, 5}}, {false}, {2, 13, 1, 1}, {}});
  check({"NhwcGlobalAveragePool", "kiln", {{2, 7, 5, 13}}, {false}, {2, 1, 1, 13}, {}});
  check({"GlobalMaxPool", "", {{2, 13, 7, 5}}, {false}, {2, 13, 1, 1}, {}});
  // SAME with dilations and odd totals: kernel 3x2, dilations 2x3 on 9x8, strides 2x1: H out 5,
  // total 4; W out 8, total 3.
  for (const char* mode : {"SAME_UPPER", "SAME_LOWER"}) {
    ir::Attributes same = {{"kernel_shape", ir::Attribute::of_ints({3, 2})},
                           {"strides", ir::Attribute::of_ints({2, 1})},
                           {"dilations", ir::Attribute::of_ints({2, 3})},
                           {"auto_pad", ir::Attribute::of_string(mode)}};
    check({"MaxPool", "", {{1, 5, 9, 8}}, {false}, {1, 5, 5, 8}, same});
    check({"NhwcMaxPool", "kiln", {{1, 9, 8, 5}}, {false}, {1, 5, 8, 5}, same});
    same.erase("dilations");
    check({"AveragePool", "", {{1, 5, 9, 8}}, {false}, {1, 5, 5, 8}, same});
  }
}

// 1-D (sequences, audio) and 3-D (video, volumes) pooling on oneDNN, as 2-D: strides, pads,
// ceil_mode, dilations, global forms.
TEST(CpuKernels, PoolingOneAndThreeD) {
  auto inc2d = [] {
    return ir::Attributes{{"kernel_shape", ir::Attribute::of_ints({3, 3})}, {"pads", ir::Attribute::of_ints({1, 1, 1, 1})},
                          {"count_include_pad", ir::Attribute::of_int(1)}};
  };
  auto attrs = [](std::vector<int64_t> k, std::vector<int64_t> s, std::vector<int64_t> p, int64_t ceil) {
    return ir::Attributes{{"kernel_shape", ir::Attribute::of_ints(k)}, {"strides", ir::Attribute::of_ints(s)},
                          {"pads", ir::Attribute::of_ints(p)}, {"ceil_mode", ir::Attribute::of_int(ceil)}};
  };
  // 1-D: (29 + 2 - 3) / 2 + 1 = 15; ceil_mode: ceil((29 - 4) / 3) + 1 = 10
  check({"MaxPool", "", {{2, 5, 29}}, {false}, {2, 5, 15}, attrs({3}, {2}, {1, 1}, 0)});
  check({"AveragePool", "", {{2, 5, 29}}, {false}, {2, 5, 10}, attrs({4}, {3}, {0, 0}, 1)});
  ir::Attributes dil = attrs({3}, {1}, {0, 0}, 0);
  dil["dilations"] = ir::Attribute::of_ints({2});
  check({"MaxPool", "", {{1, 3, 9}}, {false}, {1, 3, 5}, dil});
  check({"GlobalAveragePool", "", {{2, 7, 13}}, {false}, {2, 7, 1}, {}});
  // 3-D: D (6 + 0 - 2) / 2 + 1 = 3, H (9 + 2 - 3) / 2 + 1 = 5, W (10 + 2 - 3) / 2 + 1 = 5
  check({"MaxPool", "", {{1, 4, 6, 9, 10}}, {false}, {1, 4, 3, 5, 5}, attrs({2, 3, 3}, {2, 2, 2}, {0, 1, 1, 0, 1, 1}, 0)});
  ir::Attributes inc = attrs({3, 3, 3}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}, 0);
  inc["count_include_pad"] = ir::Attribute::of_int(1);
  check({"AveragePool", "", {{2, 3, 5, 6, 7}}, {false}, {2, 3, 5, 6, 7}, inc});
  check({"AveragePool", "", {{2, 3, 5, 6, 7}}, {false}, {2, 3, 3, 3, 4}, attrs({2, 2, 2}, {2, 2, 2}, {0, 0, 0, 0, 0, 0}, 1)});
  check({"GlobalMaxPool", "", {{1, 5, 3, 4, 6}}, {false}, {1, 5, 1, 1, 1}, {}});
  // From 16 channels the pool runs in oneDNN's blocked layout (20: a block and a padded one).
  check({"MaxPool", "", {{2, 20, 29}}, {false}, {2, 20, 15}, attrs({3}, {2}, {1, 1}, 0)});
  check({"AveragePool", "", {{1, 20, 29}}, {false}, {1, 20, 10}, attrs({4}, {3}, {0, 0}, 1)});
  check({"MaxPool", "", {{1, 20, 17, 19}}, {false}, {1, 20, 8, 9}, attrs({3, 3}, {2, 2}, {0, 0, 0, 0}, 1)});
  check({"AveragePool", "", {{1, 33, 9, 8}}, {false}, {1, 33, 9, 8}, inc2d()});
  check({"MaxPool", "", {{1, 20, 6, 9, 10}}, {false}, {1, 20, 3, 5, 5}, attrs({2, 3, 3}, {2, 2, 2}, {0, 1, 1, 0, 1, 1}, 0)});
  check({"AveragePool", "", {{1, 20, 5, 6, 7}}, {false}, {1, 20, 5, 6, 7}, inc});
  check({"GlobalAveragePool", "", {{2, 20, 13}}, {false}, {2, 20, 1}, {}});
}

// 1-D and 3-D convolutions on oneDNN: groups, strides, dilations, pads, auto_pad, and a
// FusedConv's activation and residual.
TEST(CpuKernels, ConvOneAndThreeD) {
  // 1-D: (50 + 1 + 2 - 5) / 2 + 1 = 25; groups 2, dilation 2: 50 + 2 + 2 - 9 + 1 = 46
  check({"Conv", "", {{2, 6, 50}, {8, 6, 5}, {8}}, {false, true, true}, {2, 8, 25}, conv_attrs({2}, {1, 2}, {1}, 1)});
  check({"Conv", "", {{1, 6, 50}, {4, 3, 5}}, {false, true}, {1, 4, 46}, conv_attrs({1}, {2, 2}, {2}, 2)});
  check({"Conv", "", {{1, 6, 50}, {6, 1, 3}}, {false, true}, {1, 6, 17},
        {{"strides", ir::Attribute::of_ints({3})}, {"auto_pad", ir::Attribute::of_string("SAME_UPPER")}, {"group", ir::Attribute::of_int(6)}}});
  // 3-D: D (5 + 2 - 3) / 1 + 1 = 5, H (9 + 1 - 3) / 2 + 1 = 4, W (8 + 2 - 3) / 2 + 1 = 4
  check({"Conv", "", {{1, 4, 5, 9, 8}, {6, 4, 3, 3, 3}, {6}}, {false, true, true}, {1, 6, 5, 4, 4},
         conv_attrs({1, 2, 2}, {1, 1, 1, 1, 0, 1}, {1, 1, 1}, 1)});
  check({"Conv", "", {{2, 6, 4, 7, 7}, {6, 3, 1, 3, 3}}, {false, true}, {2, 6, 4, 3, 3}, conv_attrs({1, 1, 1}, {0, 0, 0, 0, 0, 0}, {1, 2, 2}, 2)});
  for (const char* act : {"Relu", "SiLU"}) {
    ir::Attributes a = conv_attrs({1}, {1, 1}, {1}, 1);
    a["activation"] = ir::Attribute::of_string(act);
    check({"FusedConv", "kiln", {{1, 8, 40}, {8, 8, 3}, {8}, {1, 8, 40}}, {false, true, true, false}, {1, 8, 40}, a});
    ir::Attributes a3 = conv_attrs({1, 1, 1}, {1, 1, 1, 1, 1, 1}, {1, 1, 1}, 1);
    a3["activation"] = ir::Attribute::of_string(act);
    check({"FusedConv", "kiln", {{1, 5, 4, 6, 7}, {8, 5, 3, 3, 3}, {8}, {1, 8, 4, 6, 7}}, {false, true, true, false},
           {1, 8, 4, 6, 7}, a3});
  }
}

// 3-D transposed convolution: strides, pads, output_padding, groups.
TEST(CpuKernels, ConvTransposeThreeD) {
  // D 2*(3-1) + 2 - 0 - 0 = 6, H 2*(4-1) + 3 - 1 - 1 + 1 = 8, W 1*(5-1) + 3 - 1 - 1 = 5
  ir::Attributes a = conv_attrs({2, 2, 1}, {0, 1, 1, 0, 1, 1}, {1, 1, 1}, 2);
  a["output_padding"] = ir::Attribute::of_ints({0, 1, 0});
  check({"ConvTranspose", "", {{1, 4, 3, 4, 5}, {4, 3, 2, 3, 3}, {6}}, {false, true, true}, {1, 6, 6, 8, 5}, a});
}

// LRN across channels on oneDNN: odd windows, the blocked layout from 16 channels, 1-D and 3-D;
// even windows (and any, when asked) on kiln's loops, at 1 and 2 threads, runs of more than 256
// pixels.
TEST(CpuKernels, Lrn) {
  auto lrn = [](int64_t size, float bias) {
    return ir::Attributes{{"size", ir::Attribute::of_int(size)}, {"alpha", ir::Attribute::of_float(2e-3f)},
                          {"beta", ir::Attribute::of_float(0.75f)}, {"bias", ir::Attribute::of_float(bias)}};
  };
  check({"LRN", "", {{2, 5, 7, 6}}, {false}, {2, 5, 7, 6}, lrn(3, 1.f)});
  check({"LRN", "", {{1, 20, 9, 11}}, {false}, {1, 20, 9, 11}, lrn(5, 2.f)});
  check({"LRN", "", {{1, 24, 13}}, {false}, {1, 24, 13}, lrn(5, 1.f)});
  check({"LRN", "", {{1, 17, 3, 4, 5}}, {false}, {1, 17, 3, 4, 5}, lrn(3, 1.f)});
  // An even window leans the other way in oneDNN: kiln's loops run it.
  check({"LRN", "", {{1, 24, 13}}, {false}, {1, 24, 13}, lrn(4, 1.f)});
  for (int threads : {1, 2}) {
    check({"LRN", "", {{2, 7, 19, 17}}, {false}, {2, 7, 19, 17}, lrn(2, 1.5f), "kiln", threads});
    check({"LRN", "", {{1, 9, 5}}, {false}, {1, 9, 5}, lrn(5, 1.f), "kiln", threads});
    check({"LRN", "", {{3, 4}}, {false}, {3, 4}, lrn(6, 1.f), "kiln", threads});
  }
}

TEST(CpuKernels, ConvDeclines) {
  // Non-constant weights: the reference kernel runs it.
  check({"Conv", "", {{1, 3, 5, 5}, {2, 3, 3, 3}}, {false, false}, {1, 2, 3, 3}, {}}, false);
}

}  // namespace
}  // namespace kiln
