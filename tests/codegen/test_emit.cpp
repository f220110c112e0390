// kiln compile --target cpp end to end on a model built here: many ops (views, strided copies,
// gathers, reductions, fused elementwise groups of several types), emitted, built with cmake
// and run on test data the reference kernels computed; and the errors of what cannot be emitted.
#include <gtest/gtest.h>
#include <kiln/session.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <random>

#include "frontend/onnx/exporter.h"
#include "frontend/onnx/tensor_proto.h"
#include "ir/graph.h"
#include "project_build.h"

namespace kiln::codegen {
namespace {


Tensor ints(const std::vector<int64_t>& v) { return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v); }

ir::Attribute attr_ints(std::vector<int64_t> v) { return ir::Attribute::of_ints(std::move(v)); }

// A graph of one-output nodes, each named after its op, with constants of random weights.
struct GraphBuilder {
  std::unique_ptr<ir::Graph> g = std::make_unique<ir::Graph>();
  std::mt19937 rng;
  GraphBuilder(int64_t opset, unsigned seed) : rng(seed) { g->opsets[""] = opset; }
  ir::Value* in(const std::string& name, const std::vector<int64_t>& dims) {
    return g->add_input(name, ir::TensorType::from_dims(DType::Float, dims));
  }
  ir::Value* weights(const std::string& name, const std::vector<int64_t>& dims) {
    return g->add_constant(name, random_tensor(dims, rng));
  }
  ir::Value* op(const std::string& type, std::vector<ir::Value*> ins, ir::Attributes a = {}) {
    ir::Value* y = g->add_value(type + std::to_string(g->nodes().size()));
    g->add_node(type, std::move(ins), {y}, std::move(a), y->name());
    return y;
  }
};

// The model.cpp of dir's emitted project.
std::string model_code(const fs::path& dir) {
  std::ifstream f(dir / "project" / "model.cpp");
  return std::string((std::istreambuf_iterator<char>(f)), {});
}

// Runs dir's built program on its test data: it must pass its check.
void expect_check_passes(const fs::path& dir, const std::string& what = "") {
  const Result r = sh((dir / "project" / "build" / "kiln_model_main").string());
  EXPECT_EQ(r.status, 0) << what << ": " << r.out;
  EXPECT_NE(r.out.find("check passed"), std::string::npos) << what << ": " << r.out;
}

// x [2,rows,cols] float and idx [3] int64 through views, copies, gathers, reductions and
// elementwise chains; every intermediate of interest is an output.
std::unique_ptr<ir::Graph> ops_mix(int64_t rows = 6, int64_t cols = 8) {
  auto g = std::make_unique<ir::Graph>();
  g->opsets[""] = 17;
  ir::Value* x = g->add_input("x", ir::TensorType::from_dims(DType::Float, {2, rows, cols}));
  ir::Value* idx = g->add_input("idx", ir::TensorType::from_dims(DType::Int64, {3}));
  auto node = [&](const std::string& op, std::vector<ir::Value*> ins, int outs, ir::Attributes a = {}) {
    std::vector<ir::Value*> o;
    for (int i = 0; i < outs; ++i) o.push_back(g->add_value(op + std::to_string(g->nodes().size()) + "_" + std::to_string(i)));
    g->add_node(op, ins, o, std::move(a), op + std::to_string(g->nodes().size()));
    return o;
  };
  auto c = [&](const std::string& name, Tensor t) { return g->add_constant(name, std::move(t)); };
  ir::Attributes perm;
  perm["perm"] = ir::Attribute::of_ints({0, 2, 1});
  ir::Value* t = node("Transpose", {x}, 1, perm)[0];
  ir::Value* s = node("Slice", {t, c("st", ints({1})), c("en", ints({-1})), c("ax", ints({1})), c("sp", ints({2}))}, 1)[0];
  ir::Attributes ax1;
  ax1["axis"] = ir::Attribute::of_int(1);
  ir::Value* gathered = node("Gather", {x, idx}, 1, ax1)[0];
  ir::Value* soft = node("Softmax", {gathered}, 1)[0];
  ir::Attributes mean;
  mean["axes"] = ir::Attribute::of_ints({1});
  ir::Value* m = node("ReduceMean", {x}, 1, mean)[0];
  ir::Value* sig = node("Sigmoid", {x}, 1)[0];
  ir::Value* f = node("Add", {node("Mul", {sig, x}, 1)[0], m}, 1)[0];
  ir::Value* less = node("Less", {x, c("tenth", Tensor::scalar<float>(0.1f))}, 1)[0];
  ir::Value* w = node("Where", {less, x, node("Pow", {x, c("two", Tensor::scalar<float>(2.f))}, 1)[0]}, 1)[0];
  ir::Value* cat = node("Concat", {s, s}, 1, ax1)[0];
  ir::Attributes split;
  split["axis"] = ir::Attribute::of_int(2);
  std::vector<ir::Value*> parts = node("Split", {x, c("sizes", ints({3, cols - 3}))}, 2, split);
  ir::Attributes mx;
  mx["axes"] = ir::Attribute::of_ints({2});
  mx["keepdims"] = ir::Attribute::of_int(0);
  ir::Value* r = node("ReduceMax", {x}, 1, mx)[0];
  ir::Attributes to;
  to["to"] = ir::Attribute::of_int(static_cast<int64_t>(DType::Float));
  ir::Value* e = node("Expand", {node("Cast", {idx}, 1, to)[0], c("shape", ints({2, 3}))}, 1)[0];
  ir::Value* padded = node("Pad", {x, c("pads", ints({0, 1, 0, 1, 2, 3})), c("pad_value", Tensor::scalar<float>(-1.5f))}, 1)[0];
  ir::Value* mm = node("MatMul", {x, t}, 1)[0];  // [2,rows,cols] x [2,cols,rows]: both computed
  ir::Value* dropped = node("Dropout", {f}, 1)[0];
  ir::Attributes linear;
  linear["mode"] = ir::Attribute::of_string("linear");
  ir::Value* bilinear = node("Resize", {x, nullptr, c("scales2", Tensor::from_vector<float>({3}, {1.f, 2.f, 1.5f}))}, 1, linear)[0];
  ir::Attributes nearest;
  nearest["mode"] = ir::Attribute::of_string("nearest");
  nearest["coordinate_transformation_mode"] = ir::Attribute::of_string("asymmetric");
  ir::Value* upsampled = node("Resize", {x, nullptr, c("scales1", Tensor::from_vector<float>({3}, {1.f, 1.f, 0.5f}))}, 1, nearest)[0];
  for (ir::Value* v : {s, soft, f, w, cat, parts[0], parts[1], r, e, padded, mm, dropped, bilinear, upsampled}) g->add_output(v);
  return g;
}

// Writes g as dir/model.onnx with test_data_set_0: x random, idx {5, -6, 2}.
void write_model(const ir::Graph& g, const fs::path& dir) {
  std::mt19937 rng(3);
  write_model_with_data(g, dir, {random_tensor(g.inputs()[0]->type.static_dims(), rng), ints({5, -6, 2})});
}

TEST(CodegenEmit, OpsMixBuildsAndMatches) {
  const fs::path dir = scratch("ops-mix");
  write_model(*ops_mix(), dir);
  Result r = emit_and_build(dir);
  ASSERT_EQ(r.status, 0) << r.out;
  r = sh((dir / "project" / "build" / "kiln_model_main").string() + " --runs 2");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("check passed"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("MISMATCH"), std::string::npos) << r.out;

  // A damaged weights file is refused with a message, not run.
  std::string bytes;
  {
    std::ifstream f(dir / "project" / "weights.bin", std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(f), {});
  }
  ASSERT_GE(bytes.size(), 64u);
  bytes[16] ^= 0x5a;  // the stored checksum
  std::ofstream(dir / "bad.bin", std::ios::binary) << bytes;
  r = sh((dir / "project" / "build" / "kiln_model_main").string() + " --weights " + (dir / "bad.bin").string());
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("checksum"), std::string::npos) << r.out;
  if (!HasFailure()) fs::remove_all(dir);
}

TEST(CodegenEmit, ATeamOfThreadsMatchesToo) {
  // Large enough that the loop nests split across the team (2 x 96 x 256 elements).
  const fs::path dir = scratch("ops-mix-threads");
  write_model(*ops_mix(96, 256), dir);
  Result r = emit_and_build(dir, "--threads 3");
  ASSERT_EQ(r.status, 0) << r.out;
  r = sh((dir / "project" / "build" / "kiln_model_main").string() + " --runs 5");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("check passed"), std::string::npos) << r.out;
  std::ifstream f(dir / "project" / "model.cpp");
  const std::string code((std::istreambuf_iterator<char>(f)), {});
  EXPECT_NE(code.find("kiln_kernels::parallel_for(c.team"), std::string::npos) << "no loop nest was split";
  if (!HasFailure()) fs::remove_all(dir);
}

// Opset 18 forms: antialiased Resize downscales (tap tables wider than the plain filter's) by
// scales and by sizes, and a Softplus of values large enough that e^x overflows float.
TEST(CodegenEmit, AntialiasedResizeAndLargeSoftplusMatch) {
  auto g = std::make_unique<ir::Graph>();
  g->opsets[""] = 18;
  ir::Value* x = g->add_input("x", ir::TensorType::from_dims(DType::Float, {2, 3, 13, 11}));
  auto node = [&](const std::string& op, std::vector<ir::Value*> ins, ir::Attributes a = {}) {
    ir::Value* o = g->add_value(op + std::to_string(g->nodes().size()));
    g->add_node(op, ins, {o}, std::move(a), op + std::to_string(g->nodes().size()));
    return o;
  };
  auto resize = [&](const char* mode, ir::Value* scales, ir::Value* sizes) {
    ir::Attributes a;
    a["mode"] = ir::Attribute::of_string(mode);
    a["antialias"] = ir::Attribute::of_int(1);
    return node("Resize", {x, nullptr, scales, sizes}, a);
  };
  g->add_output(resize("linear", g->add_constant("scales", Tensor::from_vector<float>({4}, {1, 1, 0.4f, 0.6f})), nullptr));
  g->add_output(resize("cubic", nullptr, g->add_constant("sizes", ints({2, 3, 5, 4}))));
  g->add_output(node("Softplus", {node("Mul", {x, g->add_constant("sixty", Tensor::scalar<float>(60.f))})}));
  const fs::path dir = scratch("antialias");
  std::mt19937 rng(5);
  write_model_with_data(*g, dir, {random_tensor({2, 3, 13, 11}, rng)});
  Result r = emit_and_build(dir);
  ASSERT_EQ(r.status, 0) << r.out;
  r = sh((dir / "project" / "build" / "kiln_model_main").string());
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("check passed"), std::string::npos) << r.out;
  if (!HasFailure()) fs::remove_all(dir);
}

// DepthToSpace after a conv (channels-last, kiln.NhwcDepthToSpace, CRD), on the input (NCHW, DCR)
// and SpaceToDepth (NCHW): the block moves as strided copies.
TEST(CodegenEmit, DepthToSpaceAndSpaceToDepthMatch) {
  auto g = std::make_unique<ir::Graph>();
  g->opsets[""] = 17;
  ir::Value* x = g->add_input("x", ir::TensorType::from_dims(DType::Float, {2, 8, 5, 6}));
  auto node = [&](const std::string& op, std::vector<ir::Value*> ins, ir::Attributes a = {}) {
    ir::Value* o = g->add_value(op + std::to_string(g->nodes().size()));
    g->add_node(op, ins, {o}, std::move(a), op + std::to_string(g->nodes().size()));
    return o;
  };
  std::mt19937 wrng(3);
  ir::Value* w = g->add_constant("w", random_tensor({12, 8, 1, 1}, wrng));
  auto d2s = [&](ir::Value* v, const char* mode) {
    return node("DepthToSpace", {v}, {{"blocksize", ir::Attribute::of_int(2)}, {"mode", ir::Attribute::of_string(mode)}});
  };
  ir::Value* up = d2s(node("Conv", {x, w}), "CRD");  // [2, 3, 10, 12]
  g->add_output(node("SpaceToDepth", {node("Relu", {up})}, {{"blocksize", ir::Attribute::of_int(2)}}));
  g->add_output(d2s(x, "DCR"));  // [2, 2, 10, 12]
  const fs::path dir = scratch("depth-space");
  std::mt19937 rng(9);
  write_model_with_data(*g, dir, {random_tensor({2, 8, 5, 6}, rng)});
  Result r = emit_and_build(dir);
  ASSERT_EQ(r.status, 0) << r.out;
  std::ifstream f(dir / "project" / "model.cpp");
  const std::string code((std::istreambuf_iterator<char>(f)), {});
  EXPECT_NE(code.find("NhwcDepthToSpace"), std::string::npos) << "the conv's DepthToSpace did not go channels-last";
  r = sh((dir / "project" / "build" / "kiln_model_main").string());
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("check passed"), std::string::npos) << r.out;
  if (!HasFailure()) fs::remove_all(dir);
}

// A stem, an inverted-residual block and a classifier: a 3x3 conv on three channels, 1x1 convs
// (pair mode and blocks), a depthwise conv at stride 2, a residual and a Gemm. For a target
// with AVX-512 (this machine's, when it has it) they run on the kernels kiln's CPU backend runs
// (stem_rows.h, pointwise_rows.h, depthwise_rows.h);
// for an AVX2 target on the portable kernels (which a baseline target runs too). Both build and
// match.
TEST(CodegenEmit, ConvBlockMatchesOnEveryIsa) {
  auto g = std::make_unique<ir::Graph>();
  g->opsets[""] = 17;
  ir::Value* x = g->add_input("x", ir::TensorType::from_dims(DType::Float, {2, 3, 14, 14}));
  auto node = [&](const std::string& op, std::vector<ir::Value*> ins, ir::Attributes a = {}) {
    ir::Value* o = g->add_value(op + std::to_string(g->nodes().size()));
    g->add_node(op, ins, {o}, std::move(a), op + std::to_string(g->nodes().size()));
    return o;
  };
  std::mt19937 wrng(4);
  auto conv = [&](ir::Value* v, int64_t cin, int64_t cout, int64_t k, int64_t stride, int64_t group) {
    const std::string n = "w" + std::to_string(g->nodes().size());
    ir::Value* w = g->add_constant(n, random_tensor({cout, cin / group, k, k}, wrng));
    ir::Value* b = g->add_constant(n + "b", random_tensor({cout}, wrng));
    const int64_t p = k / 2;
    return node("Conv", {v, w, b},
                {{"strides", ir::Attribute::of_ints({stride, stride})}, {"pads", ir::Attribute::of_ints({p, p, p, p})},
                 {"group", ir::Attribute::of_int(group)}});
  };
  auto clip = [&](ir::Value* v) {
    return node("Clip", {v, g->add_constant("lo" + std::to_string(g->nodes().size()), Tensor::scalar<float>(0.f)),
                         g->add_constant("hi" + std::to_string(g->nodes().size()), Tensor::scalar<float>(6.f))});
  };
  ir::Value* stem = clip(conv(x, 3, 12, 3, 1, 1));  // few input channels: the stem kernel
  ir::Value* e = clip(conv(stem, 12, 72, 1, 1, 1));  // 1x1 expand: blocks
  ir::Value* d = clip(conv(e, 72, 72, 3, 2, 72));  // depthwise, stride 2
  ir::Value* p = conv(d, 72, 20, 1, 1, 1);         // 1x1 project: pair mode
  ir::Value* r = node("Add", {p, conv(p, 20, 20, 1, 1, 1)});
  ir::Value* pooled = node("Flatten", {node("GlobalAveragePool", {r})});
  ir::Value* fc = g->add_constant("fc", random_tensor({10, 20}, wrng));
  g->add_output(node("Gemm", {pooled, fc, g->add_constant("fcb", random_tensor({10}, wrng))},
                     {{"transB", ir::Attribute::of_int(1)}, {"alpha", ir::Attribute::of_float(0.5f)}}));
  g->add_output(r);
  const fs::path dir = scratch("conv-block");
  std::mt19937 rng(6);
  write_model_with_data(*g, dir, {random_tensor({2, 3, 14, 14}, rng)});
  const bool avx512 = __builtin_cpu_supports("avx512f");
  for (const std::string isa : {"", "avx2"}) {
    if (isa == "avx2" && !__builtin_cpu_supports("avx2")) continue;
    fs::remove_all(dir / "project");
    Result r = emit_and_build(dir, isa.empty() ? "--threads 2" : "--isa " + isa);
    ASSERT_EQ(r.status, 0) << isa << ": " << r.out;
    std::ifstream f(dir / "project" / "model.cpp");
    const std::string code((std::istreambuf_iterator<char>(f)), {});
    const bool shared = isa.empty() && avx512;
    EXPECT_EQ(code.find("kiln_kernels::pointwise_conv_nhwc") != std::string::npos, shared) << isa;
    EXPECT_EQ(code.find("kiln_kernels::depthwise_nhwc_rows") != std::string::npos, shared) << isa;
    EXPECT_EQ(code.find("kiln_kernels::stem_conv_nhwc") != std::string::npos, shared) << isa;
    EXPECT_EQ(code.find("kiln_kernels::pointwise_nhwc<") != std::string::npos, shared) << isa << " (the Gemm)";
    r = sh((dir / "project" / "build" / "kiln_model_main").string());
    EXPECT_EQ(r.status, 0) << isa << ": " << r.out;
    EXPECT_NE(r.out.find("check passed"), std::string::npos) << isa << ": " << r.out;
  }
  if (!HasFailure()) fs::remove_all(dir);
}

// RNN, GRU and LSTM in every form the recurrent kernel takes (project_build.h's recurrent_model),
// each output checked against the reference kernels.
TEST(CodegenEmit, RecurrentLayersMatch) {
  const fs::path dir = scratch("recurrent");
  write_recurrent_model(dir);
  Result r = emit_and_build(dir);
  ASSERT_EQ(r.status, 0) << r.out;
  std::ifstream f(dir / "project" / "model.cpp");
  const std::string code((std::istreambuf_iterator<char>(f)), {});
  EXPECT_NE(code.find("kiln_kernels::recurrent("), std::string::npos);
  r = sh((dir / "project" / "build" / "kiln_model_main").string());
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("check passed"), std::string::npos) << r.out;
  if (!HasFailure()) fs::remove_all(dir);
}

// Convs and pools the plan keeps channels-first, over 1 and 3 spatial dims: a 1-D conv of two
// groups with stride, dilation and a ReLU, max and average pools (counting the pads or not), a
// 3-D conv with a residual and padding at odd sizes, a 3-D average pool, global pools; emitted
// on oneDNN and on kiln's portable loops (--no-onednn), every output checked against the
// reference kernels.
TEST(CodegenEmit, ConvsAndPoolsOfOneAndThreeSpatialDimsMatch) {
  GraphBuilder b(17, 3);
  ir::Value* a = b.in("a", {2, 6, 37});
  ir::Value* c1 = b.op("Conv", {a, b.weights("w1", {8, 3, 5}), b.weights("b1", {8})},
                       {{"group", ir::Attribute::of_int(2)}, {"strides", attr_ints({2})}, {"dilations", attr_ints({2})},
                        {"pads", attr_ints({3, 2})}});
  ir::Value* r1 = b.op("Relu", {c1});
  b.g->add_output(b.op("MaxPool", {r1}, {{"kernel_shape", attr_ints({3})}, {"strides", attr_ints({2})}, {"pads", attr_ints({1, 1})}}));
  b.g->add_output(b.op("AveragePool", {r1},
                       {{"kernel_shape", attr_ints({4})}, {"pads", attr_ints({1, 2})}, {"count_include_pad", ir::Attribute::of_int(1)}}));
  b.g->add_output(b.op("GlobalMaxPool", {r1}));
  ir::Value* v = b.in("v", {1, 5, 6, 9, 7});
  ir::Value* c3 = b.op("Conv", {v, b.weights("w3", {5, 5, 3, 3, 3}), b.weights("b3", {5})}, {{"pads", attr_ints({1, 1, 1, 1, 1, 1})}});
  ir::Value* r3 = b.op("Relu", {b.op("Add", {c3, v})});
  b.g->add_output(b.op("AveragePool", {r3}, {{"kernel_shape", attr_ints({2, 3, 2})}, {"strides", attr_ints({2, 2, 2})}}));
  b.g->add_output(b.op("GlobalAveragePool", {r3}));
  const fs::path dir = scratch("conv-nd");
  std::mt19937 rng(11);
  write_model_with_data(*b.g, dir, {random_tensor({2, 6, 37}, rng), random_tensor({1, 5, 6, 9, 7}, rng)});
  for (const std::string flags : {"", "--no-onednn"}) {
    fs::remove_all(dir / "project");
    const Result r = emit_and_build(dir, flags);
    ASSERT_EQ(r.status, 0) << flags << ": " << r.out;
    const std::string code = model_code(dir);
    EXPECT_EQ(code.find("kiln_kernels::OnednnConvNdShape") != std::string::npos, flags.empty()) << flags;
    EXPECT_EQ(code.find("kiln_kernels::kOnednnResidual") != std::string::npos, flags.empty()) << flags << " (the Add)";
    EXPECT_EQ(code.find("kiln_kernels::conv_nd_nchw") != std::string::npos, !flags.empty()) << flags;
    EXPECT_NE(code.find("kiln_kernels::pool_nd_nchw"), std::string::npos) << flags;
    expect_check_passes(dir, flags);
  }
  if (!HasFailure()) fs::remove_all(dir);
}

// Pad's reflect, edge and wrap modes, Tile, InstanceNormalization (channels-first, and
// channels-last after a conv), GroupNormalization-18 (scale per group), ArgMax and ArgMin, LRN
// of an even window, every output checked against the reference kernels.
TEST(CodegenEmit, PadsTileNormsArgReducesAndLrnMatch) {
  GraphBuilder b(19, 7);
  auto mode = [](const char* m) { return ir::Attributes{{"mode", ir::Attribute::of_string(m)}}; };
  ir::Value* x = b.in("x", {2, 6, 5, 7});
  ir::Value* reflect = b.op("Pad", {x, b.g->add_constant("p1", ints({0, 0, 2, 1, 0, 0, 1, 3}))}, mode("reflect"));
  b.g->add_output(b.op("Pad", {x, b.g->add_constant("p2", ints({0, 0, 1, 0, 0, 0, 0, 2}))}, mode("edge")));
  b.g->add_output(b.op("Pad", {x, b.g->add_constant("p3", ints({0, 0, 3, 2, 0, 0, 4, 1}))}, mode("wrap")));
  b.g->add_output(b.op("Tile", {x, b.g->add_constant("reps", ints({1, 2, 1, 3}))}));
  b.g->add_output(b.op("InstanceNormalization", {reflect, b.weights("is", {6}), b.weights("ib", {6})}));
  b.g->add_output(b.op("GroupNormalization", {x, b.weights("gs", {3}), b.weights("gb", {3})}, {{"num_groups", ir::Attribute::of_int(3)}}));
  ir::Value* conv = b.op("Conv", {x, b.weights("cw", {8, 6, 3, 3}), b.weights("cb", {8})}, {{"pads", attr_ints({1, 1, 1, 1})}});
  b.g->add_output(b.op("Relu", {b.op("InstanceNormalization", {conv, b.weights("ns", {8}), b.weights("nb", {8})})}));
  b.g->add_output(b.op("ArgMax", {x}, {{"axis", ir::Attribute::of_int(1)}, {"keepdims", ir::Attribute::of_int(0)}}));
  b.g->add_output(b.op("ArgMin", {x}, {{"axis", ir::Attribute::of_int(-1)}, {"select_last_index", ir::Attribute::of_int(1)}}));
  b.g->add_output(b.op("LRN", {x}, {{"size", ir::Attribute::of_int(4)}, {"alpha", ir::Attribute::of_float(0.02f)},
                                    {"beta", ir::Attribute::of_float(0.6f)}, {"bias", ir::Attribute::of_float(1.5f)}}));
  const fs::path dir = scratch("pads-norms");
  std::mt19937 rng(17);
  write_model_with_data(*b.g, dir, {random_tensor({2, 6, 5, 7}, rng)});
  const Result r = emit_and_build(dir);
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string code = model_code(dir);
  for (const char* call :
       {"kiln_kernels::axis_gather<", "kiln_kernels::group_norm(", "kiln_kernels::arg_reduce<", "kiln_kernels::lrn_planes("})
    EXPECT_NE(code.find(call), std::string::npos) << call;
  EXPECT_NE(code.find(", true, false, "), std::string::npos) << "the channels-last InstanceNorm after the conv";
  expect_check_passes(dir);
  if (!HasFailure()) fs::remove_all(dir);
}

// ConvTranspose over 1, 2 (channels-last after the layout assignment) and 3 spatial dims:
// strides, pads, output_padding, groups, dilation, an output_shape, SAME_UPPER, a ReLU after;
// every output checked against the reference kernels.
TEST(CodegenEmit, TransposedConvolutionsMatch) {
  GraphBuilder b(17, 9);
  ir::Value* x = b.in("x", {2, 6, 5, 7});
  ir::Value* t1 = b.op("ConvTranspose", {x, b.weights("w1", {6, 4, 3, 3}), b.weights("b1", {8})},
                       {{"group", ir::Attribute::of_int(2)}, {"strides", attr_ints({2, 2})}, {"pads", attr_ints({1, 0, 0, 1})},
                        {"output_padding", attr_ints({1, 0})}, {"dilations", attr_ints({1, 2})}});
  b.g->add_output(b.op("Relu", {t1}));
  b.g->add_output(b.op("ConvTranspose", {x, b.weights("w2", {6, 3, 4, 4})},
                       {{"strides", attr_ints({2, 3})}, {"output_shape", attr_ints({11, 21})}}));
  b.g->add_output(b.op("ConvTranspose", {x, b.weights("w3", {6, 5, 3, 2}), b.weights("b3", {5})},
                       {{"strides", attr_ints({2, 2})}, {"auto_pad", ir::Attribute::of_string("SAME_UPPER")}}));
  ir::Value* a = b.in("a", {1, 4, 9});
  b.g->add_output(b.op("ConvTranspose", {a, b.weights("w4", {4, 3, 5}), b.weights("b4", {3})},
                       {{"strides", attr_ints({3})}, {"pads", attr_ints({2, 1})}}));
  ir::Value* v = b.in("v", {1, 3, 3, 4, 2});
  b.g->add_output(b.op("ConvTranspose", {v, b.weights("w5", {3, 2, 2, 3, 2})}, {{"strides", attr_ints({2, 1, 2})}}));
  const fs::path dir = scratch("conv-transpose");
  std::mt19937 rng(19);
  write_model_with_data(*b.g, dir,
                        {random_tensor({2, 6, 5, 7}, rng), random_tensor({1, 4, 9}, rng), random_tensor({1, 3, 3, 4, 2}, rng)});
  const Result r = emit_and_build(dir);
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string code = model_code(dir);
  EXPECT_NE(code.find("kiln_kernels::conv_transpose_nd<"), std::string::npos);
  EXPECT_NE(code.find(", true};"), std::string::npos) << "a channels-last ConvTranspose";
  expect_check_passes(dir);
  if (!HasFailure()) fs::remove_all(dir);
}

// TopK over a middle axis (largest), the last axis (smallest), and one whose indices nobody
// reads; values and indices checked against the reference kernels.
TEST(CodegenEmit, TopKMatches) {
  GraphBuilder b(17, 23);
  ir::Value* x = b.in("x", {2, 9, 5});
  auto topk = [&](int64_t axis, int64_t k, int64_t largest, bool indices) {
    ir::Value *v = b.g->add_value("values" + std::to_string(b.g->nodes().size())),
              *i = b.g->add_value("indices" + std::to_string(b.g->nodes().size()));
    b.g->add_node("TopK", {x, b.g->add_constant("k" + std::to_string(b.g->nodes().size()), ints({k}))}, {v, i},
                  {{"axis", ir::Attribute::of_int(axis)}, {"largest", ir::Attribute::of_int(largest)}},
                  "topk" + std::to_string(b.g->nodes().size()));
    b.g->add_output(v);
    if (indices) b.g->add_output(i);
  };
  topk(1, 4, 1, true);
  topk(-1, 2, 0, true);
  topk(1, 9, 1, false);
  const fs::path dir = scratch("topk");
  std::mt19937 rng(29);
  write_model_with_data(*b.g, dir, {random_tensor({2, 9, 5}, rng)});
  const Result r = emit_and_build(dir);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(model_code(dir).find("kiln_kernels::topk_rows("), std::string::npos);
  expect_check_passes(dir);
  if (!HasFailure()) fs::remove_all(dir);
}

// Reductions with their elementwise prologue and epilogue (kiln.FusedReduce): an L2 norm over the
// last axis (Mul -> ReduceSum -> Sqrt, mobilefacenet's embedding normalization), a ReduceMax
// over a middle axis of a prologue without epilogue, and a ReduceMean over the last two axes
// with an epilogue; against
// the reference kernels.
TEST(CodegenEmit, FusedReduceMatches) {
  GraphBuilder b(18, 37);
  ir::Value* x = b.in("x", {3, 6, 5});
  auto axes = [&](const char* name, std::vector<int64_t> a) {
    const int64_t n = static_cast<int64_t>(a.size());
    return b.g->add_constant(name, Tensor::from_vector<int64_t>({n}, a));
  };
  ir::Value* sq = b.op("ReduceSum", {b.op("Mul", {x, x}), axes("a0", {-1})}, {{"keepdims", ir::Attribute::of_int(1)}});
  b.g->add_output(b.op("Sqrt", {sq}));
  ir::Value* shifted = b.op("Abs", {b.op("Sub", {x, b.weights("shift", {5})})});
  b.g->add_output(b.op("ReduceMax", {shifted, axes("a1", {1})}, {{"keepdims", ir::Attribute::of_int(0)}}));
  ir::Value* mean = b.op("ReduceMean", {b.op("Exp", {x}), axes("a2", {1, 2})}, {{"keepdims", ir::Attribute::of_int(1)}});
  b.g->add_output(b.op("Mul", {mean, b.weights("scale", {3, 1, 1})}));
  const fs::path dir = scratch("fused-reduce");
  std::mt19937 rng(37);
  write_model_with_data(*b.g, dir, {random_tensor({3, 6, 5}, rng)});
  const Result r = emit_and_build(dir);
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string code = model_code(dir);
  int fused = 0;
  for (size_t at = code.find("// kiln.FusedReduce '"); at != std::string::npos; at = code.find("// kiln.FusedReduce '", at + 1))
    ++fused;
  EXPECT_EQ(fused, 3) << code;
  expect_check_passes(dir);
  if (!HasFailure()) fs::remove_all(dir);
}

// GatherND without and with batch dims, negative indices among them (movenet's keypoint
// gathers); against the reference kernels.
TEST(CodegenEmit, GatherNDMatches) {
  GraphBuilder b(13, 31);
  ir::Value* x = b.in("x", {2, 3, 4, 5});
  auto gather = [&](const char* name, const std::vector<int64_t>& dims, const std::vector<int64_t>& v, int64_t batch) {
    ir::Value* i = b.g->add_constant(name, Tensor::from_vector<int64_t>(dims, v));
    b.g->add_output(b.op("GatherND", {x, i}, {{"batch_dims", ir::Attribute::of_int(batch)}}));
  };
  gather("i0", {3, 2}, {0, 1, 1, -1, 0, 2}, 0);
  gather("i1", {2, 2, 1}, {2, -3, 1, 0}, 1);
  gather("i2", {2, 3}, {1, 2, 3, -1, 0, -5}, 1);
  const fs::path dir = scratch("gather-nd");
  std::mt19937 rng(31);
  write_model_with_data(*b.g, dir, {random_tensor({2, 3, 4, 5}, rng)});
  const Result r = emit_and_build(dir);
  ASSERT_EQ(r.status, 0) << r.out;
  expect_check_passes(dir);
  if (!HasFailure()) fs::remove_all(dir);
}

TEST(CodegenEmit, AnOpWithoutAnEmitterIsAClearError) {
  auto g = std::make_unique<ir::Graph>();
  g->opsets[""] = 17;
  ir::Value* x = g->add_input("x", ir::TensorType::from_dims(DType::Float, {4, 9}));
  ir::Value* y = g->add_value("y");
  g->add_node("CumSum", {x, g->add_constant("axis", ints({1}))}, {y}, {}, "the_cumsum");
  g->add_output(y);
  const fs::path dir = scratch("cumsum");
  onnx_fe::save_model(*g, dir / "model.onnx");
  const Result r = sh(std::string(KILN_BINARY) + " compile " + (dir / "model.onnx").string() + " --target cpp -o " +
                      (dir / "project").string());
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("the_cumsum"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("CumSum"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no emitter"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kiln::codegen
