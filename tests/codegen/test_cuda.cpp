// kiln compile --target cuda on a model built here, whose odd shapes reach every kernel of
// kernels/cuda/ and every product form: strided, asymmetrically padded and grouped convolutions
// (on the host shim: conv.cuh's im2col and product), a depthwise one, pools with pads, a
// residual, Gemm with transB, batched and constant MatMuls, layer norm, softmax over the last and
// a middle axis, reductions, Gather, Pad, DepthToSpace (channels-last) and Resize (one and two
// axes), a GRU, and a Dropout with its mask, which has no CUDA kernel and runs on the CPU with
// copies around it. The project is built as host C++ through the CUDA shim
// (-DKILN_MODEL_ON_CPU=ON: no GPU needed) and run on test data the reference kernels computed,
// with the shim's streams run in either order; its many independent outputs take several
// streams, whose waits the run cannot do without. A bad index fails the run with a message.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "project_build.h"

namespace kiln::codegen {
namespace {

Tensor ints(const std::vector<int64_t>& v) { return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v); }

std::unique_ptr<ir::Graph> cuda_mix(std::mt19937& rng) {
  auto g = std::make_unique<ir::Graph>();
  g->opsets[""] = 17;
  ir::Value* x = g->add_input("x", ir::TensorType::from_dims(DType::Float, {2, 6, 9, 7}));
  ir::Value* h = g->add_input("h", ir::TensorType::from_dims(DType::Float, {3, 10}));
  ir::Value* a = g->add_input("a", ir::TensorType::from_dims(DType::Float, {2, 3, 4}));
  ir::Value* idx = g->add_input("idx", ir::TensorType::from_dims(DType::Int64, {4}));
  int made = 0;
  auto node = [&](const std::string& op, std::vector<ir::Value*> ins, ir::Attributes at = {}) {
    ir::Value* o = g->add_value(op + std::to_string(made) + "_out");
    g->add_node(op, ins, {o}, std::move(at), op + std::to_string(made++));
    return o;
  };
  auto c = [&](const std::string& name, Tensor t) { return g->add_constant(name, std::move(t)); };
  auto w = [&](const std::string& name, const std::vector<int64_t>& dims) { return c(name, random_tensor(dims, rng)); };
  auto conv = [&](ir::Value* in, ir::Value* weights, ir::Value* bias, int64_t group, std::vector<int64_t> pads,
                  std::vector<int64_t> strides) {
    ir::Attributes at;
    at["group"] = ir::Attribute::of_int(group);
    at["pads"] = ir::Attribute::of_ints(std::move(pads));
    at["strides"] = ir::Attribute::of_ints(std::move(strides));
    return node("Conv", bias ? std::vector<ir::Value*>{in, weights, bias} : std::vector<ir::Value*>{in, weights}, at);
  };
  ir::Value* y1 = node("Relu", {conv(x, w("w1", {8, 6, 3, 3}), w("b1", {8}), 1, {1, 0, 1, 2}, {2, 2})});
  ir::Value* y2 = conv(y1, w("w2", {8, 4, 3, 3}), w("b2", {8}), 2, {1, 1, 1, 1}, {1, 1});
  ir::Value* z = node("Add", {y2, y1});
  ir::Value* dw = node("Clip", {conv(z, w("w3", {8, 1, 3, 3}), w("b3", {8}), 8, {1, 1, 1, 1}, {1, 1}),
                                c("lo", Tensor::scalar<float>(0.f)), c("hi", Tensor::scalar<float>(1.5f))});
  ir::Value* pw = conv(dw, w("w4", {5, 8, 1, 1}), w("b4", {5}), 1, {0, 0, 0, 0}, {1, 1});
  ir::Attributes maxp;
  maxp["kernel_shape"] = ir::Attribute::of_ints({2, 3});
  maxp["strides"] = ir::Attribute::of_ints({1, 2});
  ir::Value* mp = node("MaxPool", {z}, maxp);
  ir::Attributes avgp;
  avgp["kernel_shape"] = ir::Attribute::of_ints({3, 3});
  avgp["pads"] = ir::Attribute::of_ints({1, 1, 0, 1});
  avgp["count_include_pad"] = ir::Attribute::of_int(1);
  ir::Value* ap = node("AveragePool", {z}, avgp);
  // Pads alike on both sides, strides and pads apart per axis: what cuDNN runs (with
  // -DKILN_MODEL_CUDNN=ON; the asymmetric ones above stay on im2col and the pool kernel), this
  // one with its bias and ReLU in the same call; the grouped one above with its bias and the
  // residual, the 1x1 with its bias.
  ir::Value* wide = node("Relu", {conv(z, w("w5", {6, 8, 3, 1}), w("b5", {6}), 1, {1, 0, 1, 0}, {1, 2})});
  ir::Attributes avgx = avgp, maxs = maxp;
  avgx["kernel_shape"] = ir::Attribute::of_ints({3, 2});
  avgx["pads"] = ir::Attribute::of_ints({1, 0, 1, 0});
  avgx["strides"] = ir::Attribute::of_ints({2, 1});
  avgx["count_include_pad"] = ir::Attribute::of_int(0);
  ir::Value* ap_x = node("AveragePool", {z}, avgx);
  avgx["count_include_pad"] = ir::Attribute::of_int(1);
  ir::Value* ap_in = node("AveragePool", {z}, avgx);
  maxs["kernel_shape"] = ir::Attribute::of_ints({3, 3});
  maxs["pads"] = ir::Attribute::of_ints({1, 0, 1, 0});
  maxs["strides"] = ir::Attribute::of_ints({2, 1});
  ir::Value* mp_s = node("MaxPool", {z}, maxs);
  // After a channels-last conv: kiln.NhwcDepthToSpace, a generated kernel too.
  ir::Attributes block2;
  block2["blocksize"] = ir::Attribute::of_int(2);
  ir::Value* d2s = node("DepthToSpace", {z}, block2);
  ir::Value* flat = node("Flatten", {node("GlobalAveragePool", {pw})});
  ir::Attributes gemm;
  gemm["transB"] = ir::Attribute::of_int(1);
  ir::Value* fc = node("Gemm", {flat, w("wg", {7, 5}), w("bg", {7})}, gemm);
  ir::Value* ln = node("LayerNormalization", {h, w("gamma", {10}), w("beta", {10})});
  ir::Attributes ax0;
  ax0["axis"] = ir::Attribute::of_int(0);
  ir::Value* soft_rows = node("Softmax", {h});
  ir::Value* soft_cols = node("Softmax", {h}, ax0);
  ir::Attributes sum;
  sum["keepdims"] = ir::Attribute::of_int(0);
  ir::Value* rs = node("ReduceSum", {h, c("axes", ints({0}))}, sum);
  // More reduced elements than outputs: a block per output, reducing as a tree (over axes apart
  // from each other, and over all but the first).
  ir::Attributes apart = sum, inner;
  apart["axes"] = ir::Attribute::of_ints({0, 2, 3});
  inner["axes"] = ir::Attribute::of_ints({1, 2, 3});
  ir::Value* tree_max = node("ReduceMax", {x}, apart);
  ir::Value* tree_mean = node("ReduceMean", {x}, inner);
  ir::Value* gathered = node("Gather", {h, idx}, ax0);
  ir::Attributes perm;
  perm["perm"] = ir::Attribute::of_ints({0, 2, 1});
  ir::Value* batched = node("MatMul", {a, node("Transpose", {a}, perm)});
  ir::Value* by_const = node("MatMul", {a, w("wm", {4, 6})});
  ir::Value* padded = node("Pad", {h, c("pads", ints({0, 1, 1, 2})), c("pad_value", Tensor::scalar<float>(-0.5f))});
  ir::Attributes linear;
  linear["mode"] = ir::Attribute::of_string("linear");
  ir::Value* resized = node("Resize", {padded, nullptr, c("scales", Tensor::from_vector<float>({2}, {2.f, 1.5f}))}, linear);
  ir::Attributes cubic;
  cubic["mode"] = ir::Attribute::of_string("cubic");
  ir::Value* one_axis = node("Resize", {h, nullptr, c("scales1", Tensor::from_vector<float>({2}, {1.f, 1.7f}))}, cubic);
  // Dropout's mask output has no CUDA kernel: placed on the CPU, with copies around it (its
  // input to the host, its outputs back).
  ir::Value* kept = g->add_value("kept");
  ir::Value* mask = g->add_value("mask");
  g->add_node("Dropout", {node("Sigmoid", {padded})}, {kept, mask}, {}, "dropout");
  // A GRU: its input projections on the product, its steps a block per sequence.
  ir::Value* gru_y = g->add_value("gru_y");
  ir::Value* gru_h = g->add_value("gru_h");
  ir::Attributes gru;
  gru["hidden_size"] = ir::Attribute::of_int(5);
  g->add_node("GRU", {a, w("gru_w", {1, 15, 4}), w("gru_r", {1, 15, 5}), w("gru_b", {1, 30})}, {gru_y, gru_h}, gru,
              "gru");
  for (ir::Value* v : {pw, mp, ap, wide, ap_x, ap_in, mp_s, d2s, fc, ln, soft_rows, soft_cols, rs, tree_max, tree_mean, gathered, batched, by_const, resized, one_axis, kept, mask,
                       gru_y, gru_h})
    g->add_output(v);
  return g;
}

fs::path make_project(const std::string& name, const std::string& flags = "") {
  const fs::path dir = scratch(name);
  std::mt19937 rng(11);
  auto g = cuda_mix(rng);
  std::vector<Tensor> inputs;
  for (int i = 0; i < 3; ++i) inputs.push_back(random_tensor(g->inputs()[static_cast<size_t>(i)]->type.static_dims(), rng));
  inputs.push_back(ints({2, -1, 0, -3}));
  write_model_with_data(*g, dir, inputs);
  const Result r = sh(std::string(KILN_BINARY) + " compile " + (dir / "model.onnx").string() + " --target cuda -o " +
                      (dir / "project").string() + " --check-on-cpu " + flags);
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find(flags.empty() ? " streams\n" : "; 1 stream\n"), std::string::npos) << r.out;
  return dir;
}

Result build(const fs::path& dir) {
  return sh("cmake -S " + (dir / "project").string() + " -B " + (dir / "project" / "build").string() +
            " -DCMAKE_CXX_FLAGS='-Wall -Wextra -Werror' && cmake --build " + (dir / "project" / "build").string());
}

// Runs the built project's check with the host shim running its streams in `order`: "newest"
// (side streams as early as their waits allow) or "oldest" (as late).
Result run_check(const fs::path& dir, const std::string& order) {
  return sh("KILN_CUDA_SHIM_ORDER=" + order + " " + (dir / "project" / "build" / "kiln_model_main").string() +
            " --runs 1 --warmup 0");
}

TEST(CodegenCuda, EveryKernelMatchesOnTheHostShim) {
  const fs::path dir = make_project("cuda-mix");
  Result r = build(dir);
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* order : {"newest", "oldest"}) {
    r = run_check(dir, order);
    EXPECT_EQ(r.status, 0) << order << "\n" << r.out;
    EXPECT_NE(r.out.find("check passed"), std::string::npos) << order << "\n" << r.out;
    EXPECT_NE(r.out.find("device latency"), std::string::npos) << r.out;  // the _device API ran too
  }

  // The same model.cu with cuDNN's calls for the convolutions and pools it can express, run as
  // loops (kernels/cuda/cudnn_shim.h): the arguments kiln gives cuDNN checked too.
  r = sh("cmake -S " + (dir / "project").string() + " -B " + (dir / "project" / "build-cudnn").string() +
         " -DKILN_MODEL_CUDNN=ON -DCMAKE_CXX_FLAGS='-Wall -Wextra -Werror' && cmake --build " +
         (dir / "project" / "build-cudnn").string());
  ASSERT_EQ(r.status, 0) << r.out;
  r = sh("KILN_CUDNN_SHIM_REPORT=1 " + (dir / "project" / "build-cudnn" / "kiln_model_main").string() + " --runs 1 --warmup 0");
  EXPECT_NE(r.out.find("check passed"), std::string::npos) << r.out;
  // Per run three convolutions (the grouped one, the one apart per axis, the 1x1) and four pools
  // (all but the one padded on one side); three runs (the check and both latencies).
  EXPECT_NE(r.out.find("cudnn shim: 9 convolutions, 12 pools"), std::string::npos) << r.out;

  std::ifstream f(dir / "project" / "model.cu");
  const std::string code((std::istreambuf_iterator<char>(f)), {});
  for (const char* k : {"c.convs[", "c.pools[", "kiln_kernels::bias_act", "c.on_host(", "c.to_host(", "c.to_device(", "kiln_kernels::depthwise_nhwc",
                        "kiln_kernels::layernorm_rows", "kiln_kernels::softmax_rows", "kiln_kernels::softmax_strided",
                        "kiln_kernels::gather_rows", "kiln_kernels::resize_separable", "c.blas->gemm(",
                        "kiln_kernels::recurrent_steps", "_tree, ", "kiln_kernels::block_reduce(acc",
                        "__global__ void k_", "c.fork(", "c.on(1)", "c.wait(", "c.record("})
    EXPECT_NE(code.find(k), std::string::npos) << "model.cu does not use " << k;

  // inspect --plan --target cuda: every instruction's device and stream, the waits across them.
  r = sh(std::string(KILN_BINARY) + " inspect " + (dir / "model.onnx").string() + " --plan --target cuda");
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* k : {" streams\n", "  cuda  stream 0", "  cuda  stream 1", " after ", "  cpu  stream ",
                        "1 on the CPU (Dropout)", "NhwcDepthToSpace", "kiln.Copy '", "  to host: arena+", "  to device: output "})
    EXPECT_NE(r.out.find(k), std::string::npos) << "inspect --plan --target cuda lacks '" << k << "'\n" << r.out;
  // --json: the placed plan as data, here on one stream.
  r = sh(std::string(KILN_BINARY) + " inspect " + (dir / "model.onnx").string() + " --plan --target cuda --json --streams 1 2>/dev/null");
  ASSERT_EQ(r.status, 0) << r.out;
  const nlohmann::json placed = nlohmann::json::parse(r.out);
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0]["target"], "cuda");
  EXPECT_EQ(placed[0]["arenas"].size(), 2u);
  int cpu = 0, copies = 0;
  for (const auto& i : placed[0]["instructions"]) {
    cpu += i["device"] == "cpu" ? 1 : 0;
    copies += i["op"] == "Copy" ? 1 : 0;
    EXPECT_LE(i["stream"].get<int>(), 0);
    EXPECT_TRUE(i["after"].empty());
  }
  EXPECT_EQ(cpu, 1);
  EXPECT_EQ(copies, 3);
  if (!HasFailure()) fs::remove_all(dir);
}

// The streams' waits are what keeps the branches right: the same project without them gives
// wrong outputs on the host shim, whose streams run out of program order.
TEST(CodegenCuda, WithoutItsWaitsTheRunIsWrong) {
  const fs::path dir = make_project("cuda-no-waits");
  const fs::path cu = dir / "project" / "model.cu";
  std::ifstream in(cu);
  std::string code((std::istreambuf_iterator<char>(in)), {}), kept;
  in.close();
  int removed = 0;
  for (size_t at = 0; at < code.size();) {
    const size_t end = code.find('\n', at);
    const std::string line = code.substr(at, end == std::string::npos ? std::string::npos : end - at + 1);
    if (line.find("if (!c.wait(") != std::string::npos)
      ++removed;
    else
      kept += line;
    at = end == std::string::npos ? code.size() : end + 1;
  }
  ASSERT_GT(removed, 0);
  std::ofstream(cu) << kept;
  Result r = build(dir);
  ASSERT_EQ(r.status, 0) << r.out;
  r = run_check(dir, "newest");
  EXPECT_EQ(r.out.find("check passed"), std::string::npos) << r.out;
  if (!HasFailure()) fs::remove_all(dir);
}

TEST(CodegenCuda, OneStreamRunsInPlanOrder) {
  const fs::path dir = make_project("cuda-one-stream", "--streams 1");
  std::ifstream f(dir / "project" / "model.cu");
  const std::string code((std::istreambuf_iterator<char>(f)), {});
  for (const char* k : {"c.fork(", "c.on(", "c.wait("}) EXPECT_EQ(code.find(k), std::string::npos) << k;
  Result r = build(dir);
  ASSERT_EQ(r.status, 0) << r.out;
  r = run_check(dir, "newest");
  EXPECT_NE(r.out.find("check passed"), std::string::npos) << r.out;
  if (!HasFailure()) fs::remove_all(dir);
}

// RNN, GRU and LSTM in every form (project_build.h's recurrent_model), on the GPU's kernels.
TEST(CodegenCuda, RecurrentLayersMatchOnTheHostShim) {
  const fs::path dir = scratch("cuda-recurrent");
  write_recurrent_model(dir);
  Result r = sh(std::string(KILN_BINARY) + " compile " + (dir / "model.onnx").string() + " --target cuda -o " +
                (dir / "project").string() + " --check-on-cpu");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find(" 0 on the CPU"), std::string::npos) << r.out;
  r = build(dir);
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* order : {"newest", "oldest"}) {
    r = run_check(dir, order);
    EXPECT_NE(r.out.find("check passed"), std::string::npos) << order << "\n" << r.out;
  }
  if (!HasFailure()) fs::remove_all(dir);
}

// Three independent branches: two reductions and a Dropout on the CPU (its copies in a chain on
// its stream), with nothing to wait for, so the project has no events to record or wait on;
// nvcc (-Werror) then must not meet helpers it never calls, and builds the copies and the host
// call. Both reductions reduce as trees (more reduced elements than outputs).
TEST(CodegenCuda, StreamsWithoutWaitsBuildWithNvcc) {
  auto g = std::make_unique<ir::Graph>();
  g->opsets[""] = 17;
  ir::Value* x = g->add_input("x", ir::TensorType::from_dims(DType::Float, {2, 6, 9, 7}));
  ir::Attributes apart, inner;
  apart["axes"] = ir::Attribute::of_ints({0, 2, 3});
  apart["keepdims"] = ir::Attribute::of_int(0);
  inner["axes"] = ir::Attribute::of_ints({1, 2, 3});
  ir::Value* y1 = g->add_value("y1");
  ir::Value* y2 = g->add_value("y2");
  g->add_node("ReduceMax", {x}, {y1}, apart, "max");
  g->add_node("ReduceMean", {x}, {y2}, inner, "mean");
  // and a third on the CPU (Dropout's mask has no CUDA kernel), its copies in a chain on its
  // stream: x to the host mirror, the mask back (what nothing reads on the GPU stays there)
  ir::Value* kept = g->add_value("kept");
  ir::Value* mask = g->add_value("mask");
  g->add_node("Dropout", {x}, {kept, mask}, {}, "dropout");
  for (ir::Value* v : {y1, y2, mask}) g->add_output(v);
  const fs::path dir = scratch("cuda-no-events");
  std::mt19937 rng(4);
  write_model_with_data(*g, dir, {random_tensor({2, 6, 9, 7}, rng)});
  Result r = sh(std::string(KILN_BINARY) + " compile " + (dir / "model.onnx").string() + " --target cuda -o " +
                (dir / "project").string() + " --check-on-cpu");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("1 on the CPU (Dropout); 1 copy to the host (3024 bytes), 1 to the device (756 bytes); 3 streams"),
            std::string::npos)
      << r.out;
  std::ifstream f(dir / "project" / "model.cu");
  const std::string code((std::istreambuf_iterator<char>(f)), {});
  EXPECT_EQ(code.find("c.wait("), std::string::npos);
  EXPECT_NE(code.find("_tree, "), std::string::npos);
  EXPECT_NE(code.find("c.on_host(0)"), std::string::npos);
  r = build(dir);
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* order : {"newest", "oldest"}) EXPECT_NE(run_check(dir, order).out.find("check passed"), std::string::npos);
  const char* nvcc = "/usr/local/cuda/bin/nvcc";
  if (!fs::exists(nvcc)) {
    const char* ci = std::getenv("CI");
    if (ci && std::string(ci) == "true") FAIL() << "no " << nvcc << " (under CI it must be there)";
    GTEST_SKIP() << "no " << nvcc << ": the nvcc build is not checked";
  }
  r = sh("cmake -S " + (dir / "project").string() + " -B " + (dir / "project" / "build-gpu").string() +
         " -DKILN_MODEL_ON_CPU=OFF -DCMAKE_CUDA_COMPILER=" + nvcc +
         " -DCMAKE_CUDA_ARCHITECTURES=90 '-DCMAKE_CUDA_FLAGS=-Werror all-warnings -Xcompiler=-Werror' && cmake --build " +
         (dir / "project" / "build-gpu").string() + " --target kiln_model");
  EXPECT_EQ(r.status, 0) << r.out;
  if (!HasFailure()) fs::remove_all(dir);
}

TEST(CodegenCuda, AnIndexOutOfRangeFailsTheRun) {
  const fs::path dir = make_project("cuda-bad-index");
  Result r = build(dir);
  ASSERT_EQ(r.status, 0) << r.out;
  const fs::path bad = dir / "project" / "test_data_set_0" / "input_3.pb";
  onnx_fe::save_tensor_file(ints({2, 3, 0, 0}), "idx", bad);  // h has 3 rows
  r = sh((dir / "project" / "build" / "kiln_model_main").string() + " --runs 1 --warmup 0");
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("index out of range"), std::string::npos) << r.out;
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace kiln::codegen
