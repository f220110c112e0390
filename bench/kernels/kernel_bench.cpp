// Per-kernel microbenchmarks (Google Benchmark): one node with the shapes a shared model gives
// it, each CPU-backend candidate timed at 1 and 2 threads. For finding which kernel of a model
// is slow and trying a change, before bench/compare.sh measures the whole model against ORT.
//
//   make kernel-bench && build/kiln_kernel_bench --benchmark_filter=SeMul
#include <benchmark/benchmark.h>
#include <kiln/tensor.h>

#include <omp.h>
#include <sys/mman.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <tuple>

#include "backends/backend.h"
#include "backends/cpu/depthwise_conv.h"
#include "backends/cpu/pointwise_conv.h"
#include "backends/cpu/simd.h"
#include "backends/cpu/softmax_row.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/stem_conv.h"
#include "backends/cpu/winograd_conv.h"
#include "ops/core/infer_graph.h"

namespace {

using namespace kiln;

struct OneNode {
  std::string op, domain;
  std::vector<std::vector<int64_t>> in_dims;
  std::vector<bool> constant;
  ir::Attributes attrs = {};
  // Copies of the node with their own weights, run in turn: with more weights than the L2
  // holds, each run reads them from L3, as in a model.
  int copies = 1;
};

void run_case(benchmark::State& state, const OneNode& c, size_t candidate) {
  const int threads = static_cast<int>(state.range(0));
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  auto backend = backends::make_cpu_backend(threads);
  backend->enter_run();
  std::vector<std::unique_ptr<ir::Graph>> graphs;
  std::vector<std::unique_ptr<backends::Kernel>> kernels;
  std::vector<Tensor> data;
  ir::Value* y = nullptr;
  for (int copy = 0; copy < c.copies; ++copy) {
    auto& g = *graphs.emplace_back(std::make_unique<ir::Graph>());
    g.opsets[""] = 17;
    g.opsets["kiln"] = 1;
    std::vector<ir::Value*> ins;
    for (size_t i = 0; i < c.in_dims.size(); ++i) {
      Tensor t(DType::Float, c.in_dims[i]);
      for (int64_t k = 0; k < t.numel(); ++k) t.data<float>()[k] = u(rng);
      const std::string name = "in" + std::to_string(i);
      ins.push_back(c.constant[i] ? g.add_constant(name, t)
                                  : g.add_input(name, ir::TensorType::from_dims(DType::Float, c.in_dims[i])));
      if (copy == 0) data.push_back(std::move(t));
    }
    y = g.add_value("y");
    ir::Node* n = g.add_node(c.op, ins, {y}, c.attrs, "n", c.domain);
    g.add_output(y);
    ops::ShapeInference().run(g);
    auto cands = backend->candidates(*n);
    if (candidate >= cands.size()) return state.SkipWithError("no such candidate");
    auto kernel = cands[candidate].make();
    if (!kernel) return state.SkipWithError(("declined: " + cands[candidate].spec.impl).c_str());
    state.SetLabel(cands[candidate].spec.impl);
    kernels.push_back(std::move(kernel));
  }
  std::vector<const Tensor*> in_ptrs;
  for (const Tensor& t : data) in_ptrs.push_back(&t);
  Tensor out(DType::Float, y->type.static_dims());
  std::vector<Tensor*> out_ptrs{&out};
  size_t next = 0;
  for (auto _ : state) {
    kernels[next]->run(in_ptrs, out_ptrs);
    next = (next + 1) % kernels.size();
  }
  state.SetBytesProcessed(state.iterations() * (out.nbytes() + (c.constant[0] ? 0 : data[0].nbytes())));
}

void add(const std::string& name, OneNode c, size_t candidates = 1) {
  for (size_t k = 0; k < candidates; ++k)
    benchmark::RegisterBenchmark((name + "/" + std::to_string(k)).c_str(),
                                 [c, k](benchmark::State& s) { run_case(s, c, k); })
        ->Arg(1)
        ->Arg(2)
        ->UseRealTime();
}

// The machine's FP32 peak: independent AVX-512 FMA chains (16 of them, more than the FMA
// latency times the two FMA ports), on 1 and 2 threads. The "% of peak" of a model's run is
// measured against this number taken on the same machine at the same time (bench/efficiency.sh),
// since the machines this runs on differ (KERNELS.md's peak was taken on a Zen 5 at 4.2 GHz).
__attribute__((target("avx512f"), noinline)) float fma_chains(int64_t iters) {
  typedef float v16 __attribute__((vector_size(64)));
  v16 a[16];
  const v16 m = v16{} + 0.9999f, c = v16{} + 1e-4f;
  for (int i = 0; i < 16; ++i) a[i] = v16{} + static_cast<float>(i);
  for (int64_t k = 0; k < iters; ++k)
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) a[i] = a[i] * m + c;
  v16 s = a[0];
  for (int i = 1; i < 16; ++i) s += a[i];
  float r = 0;
  for (int i = 0; i < 16; ++i) r += s[i];
  return r;
}

void fma_peak(benchmark::State& state) {
  if (!backends::cpu::has_avx512()) return state.SkipWithError("no AVX-512");
  const int threads = static_cast<int>(state.range(0));
  constexpr int64_t kIters = 1 << 20;
  float sink = 0;
  for (auto _ : state) {
#pragma omp parallel num_threads(threads) reduction(+ : sink)
    sink += fma_chains(kIters);
  }
  benchmark::DoNotOptimize(sink);
  state.counters["GFLOPS"] = benchmark::Counter(static_cast<double>(state.iterations()) * threads * kIters * 16 * 16 * 2 / 1e9,
                                                benchmark::Counter::kIsRate);
}

// kiln's 1x1 kernel on the pixels of one chain band (PointwiseRows, as a kiln.ConvChain runs
// it): `pixels` of K channels into a window of N, ReLU6; GFLOPS to set beside FmaPeak.
void pointwise_rows(benchmark::State& state, int64_t pixels, int64_t K, int64_t N) {
  if (!backends::cpu::has_avx512()) return state.SkipWithError("no AVX-512");
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> x(pixels * K), w(N * K), b(N), y(pixels * N);
  for (float* v : {x.data(), w.data(), b.data()})
    for (int64_t i = 0; i < (v == x.data() ? pixels * K : v == w.data() ? N * K : N); ++i) v[i] = u(rng);
  ops::Activation act{ops::Activation::Clip};
  act.a = 0.f;
  act.b = 6.f;
  backends::cpu::PointwiseRows pw(K, N, w.data(), b.data(), act, N);
  for (auto _ : state) pw.rows(x.data(), 0, pixels, y.data(), nullptr, nullptr);
  state.counters["GFLOPS"] = benchmark::Counter(static_cast<double>(state.iterations()) * pixels * K * N * 2 / 1e9,
                                                benchmark::Counter::kIsRate);
}

// kiln's stem kernel on rows as a ConvChain runs it (mobilenet_v2's 3x3/2, 3 -> 32 on 224x224,
// ReLU6), reading the NHWC image (arg 0) or the NCHW planes the chain takes when the input's
// Transpose joined it (arg 1); GFLOPS to set beside FmaPeak.
void stem_rows(benchmark::State& state) {
  const bool planar = state.range(0) != 0;
  backends::cpu::StemShape s;
  s.H = s.W = 224, s.C = 3, s.OH = s.OW = 112, s.OC = 32, s.KH = s.KW = 3, s.SH = s.SW = 2, s.PT = s.PL = 1;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> x(224 * 224 * 3), w(32 * 27), b(32), y(112 * 112 * 32);
  for (std::vector<float>* v : {&x, &w, &b})
    for (float& f : *v) f = u(rng);
  ops::Activation act{ops::Activation::Clip};
  act.a = 0.f;
  act.b = 6.f;
  const backends::cpu::StemConv stem(s, w.data(), b.data(), act, planar);
  for (auto _ : state) stem.rows(x.data(), 0, y.data(), 0, s.OH);
  state.counters["GFLOPS"] = benchmark::Counter(static_cast<double>(state.iterations()) * 112 * 112 * 32 * 27 * 2 / 1e9,
                                                benchmark::Counter::kIsRate);
}

// kiln's depthwise kernel (mobilenet_v2's 7x7x960, 3x3, ReLU6) with its input where a chain's
// first window is: at the start of a mapping, the page before it not mapped (arg 1), or with
// mapped pages around it (arg 0). The masked-out loads of the edge pixels must not go outside
// the rows (depthwise_conv.cpp, edge_tap): there they take a slow path.
void depthwise_at_mapping_start(benchmark::State& state) {
  if (!backends::cpu::has_avx512()) return state.SkipWithError("no AVX-512");
  backends::cpu::DepthwiseShape s;
  s.H = s.W = s.OH = s.OW = 7, s.C = 960, s.KH = s.KW = 3, s.PT = s.PL = 1;
  const size_t page = 4096, bytes = 7 * 7 * 960 * sizeof(float), span = (bytes + page - 1) / page * page;
  // A guard page, the input, a guard page, the output: the guards unmapped (arg 1) or touched.
  char* m = static_cast<char*>(mmap(nullptr, 2 * span + 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (m == MAP_FAILED) return state.SkipWithError("mmap failed");
  float* x = reinterpret_cast<float*>(m + page);
  float* y = reinterpret_cast<float*>(m + 2 * page + span);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> w(960 * 9), b(960);
  for (std::vector<float>* v : {&w, &b})
    for (float& f : *v) f = u(rng);
  for (size_t i = 0; i < bytes / sizeof(float); ++i) x[i] = u(rng);
  if (state.range(0)) {
    munmap(m, page);
    munmap(m + page + span, page);
  } else {
    std::memset(m, 0, page);
    std::memset(m + page + span, 0, page);
  }
  ops::Activation act{ops::Activation::Clip};
  act.a = 0.f;
  act.b = 6.f;
  const backends::cpu::DepthwiseConv dw(s, w.data(), b.data(), act);
  for (auto _ : state) dw.rows(x, 0, y, 0, 7);
  benchmark::DoNotOptimize(y[0]);
  if (state.range(0)) {
    munmap(m + page, span);
    munmap(m + 2 * page + span, span);
  } else {
    munmap(m, 2 * span + 2 * page);
  }
}

// kiln's Winograd conv (C -> C on HxH, 3x3, pad 1, ReLU) with explicit parameters, in a held
// team as a model runs it: args threads, tile side, tiles per block, split (0 tiles, 1
// outputs). 16 copies of the weights, run in turn, so each run reads its weights from beyond
// the L2 as in a model.
void winograd(benchmark::State& state, int64_t hw, int64_t c, int64_t oc) {
  if (!backends::cpu::has_avx512()) return state.SkipWithError("no AVX-512");
  const int threads = static_cast<int>(state.range(0));
  backends::cpu::WinogradShape s{hw, hw, c, hw, hw, oc, 3, 3, 1, 1};
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> x(hw * hw * c), w(oc * c * 9), b(oc), y(hw * hw * oc);
  for (std::vector<float>* v : {&x, &w, &b})
    for (float& f : *v) f = u(rng);
  std::vector<backends::cpu::WinogradConv> convs;
  for (int i = 0; i < 16; ++i)
    convs.emplace_back(s, w.data(), b.data(), ops::Activation{ops::Activation::Relu}, threads,
                       static_cast<int>(state.range(1)), state.range(2), state.range(3) != 0);
  size_t next = 0;
  backends::cpu::hold_team(threads, [&] {
    for (auto _ : state) {
      convs[next].run(x.data(), y.data(), oc);
      next = (next + 1) % convs.size();
    }
  });
  state.counters["GFLOPS"] = benchmark::Counter(static_cast<double>(state.iterations()) * hw * hw * c * oc * 9 * 2 / 1e9,
                                                benchmark::Counter::kIsRate);
}

// What a held team costs on this machine: hold_team on 2 threads around `range(0)` parallel
// loops of nothing (0: the team's start and end alone), as a small model's run pays them.
void held_team_handoffs(benchmark::State& state) {
  const int64_t loops = state.range(0);
  std::atomic<int64_t> sink{0};
  for (auto _ : state)
    backends::cpu::hold_team(2, [&] {
      for (int64_t i = 0; i < loops; ++i)
        backends::cpu::parallel_for(2, 2, [&](int64_t b, int64_t e) { sink.fetch_add(e - b, std::memory_order_relaxed); });
    });
  benchmark::DoNotOptimize(sink.load());
}

// The attention kernel's score rows (vit_tiny's: 197 columns, 3 heads x 197 rows), softmax in
// place with the scale.
void softmax_rows(benchmark::State& state) {
  const int64_t n = state.range(0), rows = 3 * n;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-4.f, 4.f);
  std::vector<float> x(rows * n);
  for (float& f : x) f = u(rng);
  std::vector<float> y = x;
  for (auto _ : state) {
    std::copy(x.begin(), x.end(), y.begin());
    for (int64_t r = 0; r < rows; ++r) backends::cpu::softmax_row(y.data() + r * n, y.data() + r * n, n, 0.125f, nullptr, 0.f);
  }
  state.counters["ns_per_element"] = benchmark::Counter(static_cast<double>(state.iterations()) * rows * n,
                                                        benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

int register_all() {
  benchmark::RegisterBenchmark("FmaPeak", fma_peak)->Arg(1)->Arg(2)->UseRealTime();
  benchmark::RegisterBenchmark("HeldTeamHandoffs", held_team_handoffs)->Arg(0)->Arg(1)->Arg(3)->Arg(10)->UseRealTime();
  benchmark::RegisterBenchmark("SoftmaxRows", softmax_rows)->Arg(197)->Arg(128)->Arg(256)->UseRealTime();
  benchmark::RegisterBenchmark("StemRows_224_3to32", stem_rows)->Arg(0)->Arg(1)->UseRealTime();
  benchmark::RegisterBenchmark("Depthwise3x3_960x7_MappingStart", depthwise_at_mapping_start)
      ->Arg(0)
      ->Arg(1)
      ->UseRealTime();
  // resnet's C -> C layers, densenet121's 128 -> 32 (its dense layers' 3x3 convs) and inception_v3's
  // 96 -> 96 on 35x35 (weights beyond L2 on an image of three blocks).
  for (auto [hw, c, oc] : {std::tuple<int64_t, int64_t, int64_t>{56, 64, 64}, {28, 128, 128}, {14, 256, 256}, {7, 512, 512},
                           {56, 128, 32}, {28, 128, 32}, {35, 96, 96}, {71, 80, 192}, {147, 32, 64}}) {
    auto* b = benchmark::RegisterBenchmark(
        ("Winograd_" + std::to_string(c) + "to" + std::to_string(oc) + "x" + std::to_string(hw)).c_str(),
        [hw, c, oc](benchmark::State& s) { winograd(s, hw, c, oc); });
    for (int64_t t : {1, 2})
      for (int64_t tile : {2, 4})
        for (int64_t bt : {8, 24, 48, 96})
          for (int64_t split : {0, 1})
            if (t > 1 || split == 0) b->Args({t, tile, bt, split});
    b->UseRealTime();
  }
  // An image input's NCHW -> NHWC (the layout pass's first Transpose): a 3-way interleave.
  add("Transpose_3x224x224_ToNhwc", {"Transpose", "", {{1, 3, 224, 224}}, {false}, {{"perm", ir::Attribute::of_ints({0, 2, 3, 1})}}});
  // efficientnet_b0's squeeze-excitation scales, channels-last.
  add("SeMul_112x112x32", {"Mul", "", {{1, 112, 112, 32}, {1, 1, 1, 32}}, {false, false}});
  add("SeMul_56x56x144", {"Mul", "", {{1, 56, 56, 144}, {1, 1, 1, 144}}, {false, false}});
  add("SeMul_14x14x672", {"Mul", "", {{1, 14, 14, 672}, {1, 1, 1, 672}}, {false, false}});
  add("NhwcGap_112x112x32", {"NhwcGlobalAveragePool", "kiln", {{1, 112, 112, 32}}, {false}}, 2);
  add("NhwcGap_14x14x672", {"NhwcGlobalAveragePool", "kiln", {{1, 14, 14, 672}}, {false}}, 2);
  add("NhwcGap_7x7x1280", {"NhwcGlobalAveragePool", "kiln", {{1, 7, 7, 1280}}, {false}}, 1);
  // efficientnet_b0's squeeze-excitation convs on a 1x1 image: gemv, then oneDNN.
  const ir::Attributes se = {{"channels_last", ir::Attribute::of_int(1)},
                             {"activation", ir::Attribute::of_string("SiLU")}};
  add("SeConv_1152to48", {"FusedConv", "kiln", {{1, 1, 1, 1152}, {48, 1152, 1, 1}, {48}}, {false, true, true}, se}, 2);
  add("SeConv_48to1152", {"FusedConv", "kiln", {{1, 1, 1, 48}, {1152, 48, 1, 1}, {1152}}, {false, true, true}, se}, 2);
  // efficientnet_b0's widest expand conv (1x1, 16 -> 96 on 112x112): SiLU vs Relu vs none shows
  // what the activation epilogue costs on a memory-bound conv.
  for (const char* act : {"SiLU", "Relu", ""}) {
    ir::Attributes a = {{"channels_last", ir::Attribute::of_int(1)}};
    if (*act) a["activation"] = ir::Attribute::of_string(act);
    add(std::string("Expand1x1_16to96_112_") + (*act ? act : "none"),
        {"FusedConv", "kiln", {{1, 112, 112, 16}, {96, 16, 1, 1}, {96}}, {false, true, true}, a}, 8);
  }
  // efficientnet_b0's first depthwise conv (3x3, 32 channels on 112x112), and mobilenet_v2's
  // on 14x14x576: each candidate (kiln's depthwise kernel, then oneDNN's).
  for (const char* act : {"SiLU", ""}) {
    ir::Attributes a = {{"channels_last", ir::Attribute::of_int(1)},
                        {"group", ir::Attribute::of_int(32)},
                        {"pads", ir::Attribute::of_ints({1, 1, 1, 1})}};
    if (*act) a["activation"] = ir::Attribute::of_string(act);
    add(std::string("Depthwise3x3_32x112_") + (*act ? act : "none"),
        {"FusedConv", "kiln", {{1, 112, 112, 32}, {32, 1, 3, 3}, {32}}, {false, true, true}, a}, 8);
  }
  const ir::Attributes dw576 = {{"channels_last", ir::Attribute::of_int(1)},
                                {"group", ir::Attribute::of_int(576)},
                                {"pads", ir::Attribute::of_ints({1, 1, 1, 1})},
                                {"activation", ir::Attribute::of_string("Clip")},
                                {"activation_params", ir::Attribute::of_floats({0.f, 6.f})}};
  for (auto [c, hw] : {std::pair<int64_t, int64_t>{144, 56}, {192, 28}}) {
    ir::Attributes a = dw576;
    a["group"] = ir::Attribute::of_int(c);
    add("Depthwise3x3_" + std::to_string(c) + "x" + std::to_string(hw) + "_Clip",
        {"FusedConv", "kiln", {{1, hw, hw, c}, {c, 1, 3, 3}, {c}}, {false, true, true}, a}, 2);
  }
  ir::Attributes dw960 = dw576;
  dw960["group"] = ir::Attribute::of_int(960);
  add("Depthwise3x3_960x7_Clip", {"FusedConv", "kiln", {{1, 7, 7, 960}, {960, 1, 3, 3}, {960}}, {false, true, true}, dw960}, 2);
  add("Depthwise3x3_576x14_Clip", {"FusedConv", "kiln", {{1, 14, 14, 576}, {576, 1, 3, 3}, {576}}, {false, true, true}, dw576}, 8);
  // resnet18's 3x3 convs (channels-last, bias, Relu): each candidate (brgconv NHWC, NCHW/any,
  // Winograd).
  const ir::Attributes r18 = {{"channels_last", ir::Attribute::of_int(1)},
                              {"pads", ir::Attribute::of_ints({1, 1, 1, 1})},
                              {"activation", ir::Attribute::of_string("Relu")}};
  add("Conv3x3_64x56", {"FusedConv", "kiln", {{1, 56, 56, 64}, {64, 64, 3, 3}, {64}}, {false, true, true}, r18}, 8);
  add("Conv3x3_128x28", {"FusedConv", "kiln", {{1, 28, 28, 128}, {128, 128, 3, 3}, {128}}, {false, true, true}, r18}, 8);
  add("Conv3x3_256x14", {"FusedConv", "kiln", {{1, 14, 14, 256}, {256, 256, 3, 3}, {256}}, {false, true, true}, r18}, 8);
  add("Conv3x3_512x7", {"FusedConv", "kiln", {{1, 7, 7, 512}, {512, 512, 3, 3}, {512}}, {false, true, true}, r18}, 8);
  // resnet18's stride-2 convs: the stem (7x7, 3 -> 64) and each stage's first 3x3.
  ir::Attributes stem = r18;
  stem["pads"] = ir::Attribute::of_ints({3, 3, 3, 3});
  stem["strides"] = ir::Attribute::of_ints({2, 2});
  add("Stem7x7s2_3to64_224", {"FusedConv", "kiln", {{1, 224, 224, 3}, {64, 3, 7, 7}, {64}}, {false, true, true}, stem}, 8);
  // mobilenet_v2's stem (3x3/2, 3 -> 32, Clip 0..6).
  ir::Attributes mstem = stem;
  mstem["pads"] = ir::Attribute::of_ints({1, 1, 1, 1});
  mstem["activation"] = ir::Attribute::of_string("Clip");
  mstem["activation_params"] = ir::Attribute::of_floats({0.f, 6.f});
  add("Stem3x3s2_3to32_224", {"FusedConv", "kiln", {{1, 224, 224, 3}, {32, 3, 3, 3}, {32}}, {false, true, true}, mstem}, 8);
  ir::Attributes s2 = r18;
  s2["strides"] = ir::Attribute::of_ints({2, 2});
  add("Conv3x3s2_64to128_56", {"FusedConv", "kiln", {{1, 56, 56, 64}, {128, 64, 3, 3}, {128}}, {false, true, true}, s2}, 8);
  add("Conv3x3s2_128to256_28", {"FusedConv", "kiln", {{1, 28, 28, 128}, {256, 128, 3, 3}, {256}}, {false, true, true}, s2}, 8);
  add("Conv3x3s2_256to512_14", {"FusedConv", "kiln", {{1, 14, 14, 256}, {512, 256, 3, 3}, {512}}, {false, true, true}, s2}, 8);
  // squeezenet1_1's expand3x3 convs.
  add("Expand3x3_16x55", {"FusedConv", "kiln", {{1, 55, 55, 16}, {64, 16, 3, 3}, {64}}, {false, true, true}, r18}, 8);
  add("Expand3x3_32x27", {"FusedConv", "kiln", {{1, 27, 27, 32}, {128, 32, 3, 3}, {128}}, {false, true, true}, r18}, 8);
  add("Expand3x3_48x13", {"FusedConv", "kiln", {{1, 13, 13, 48}, {192, 48, 3, 3}, {192}}, {false, true, true}, r18}, 8);
  add("Expand3x3_64x13", {"FusedConv", "kiln", {{1, 13, 13, 64}, {256, 64, 3, 3}, {256}}, {false, true, true}, r18}, 8);
  // squeezenet1_1's first MaxPool (3x3 stride 2, ceil_mode) and resnet18's (3x3 stride 2, pad 1),
  // channels-last: kiln, then oneDNN.
  add("MaxPool3x3s2_64x111", {"NhwcMaxPool", "kiln", {{1, 111, 111, 64}}, {false},
                              {{"kernel_shape", ir::Attribute::of_ints({3, 3})},
                               {"strides", ir::Attribute::of_ints({2, 2})},
                               {"ceil_mode", ir::Attribute::of_int(1)}}}, 2);
  add("MaxPool3x3s2p1_64x112", {"NhwcMaxPool", "kiln", {{1, 112, 112, 64}}, {false},
                                {{"kernel_shape", ir::Attribute::of_ints({3, 3})},
                                 {"strides", ir::Attribute::of_ints({2, 2})},
                                 {"pads", ir::Attribute::of_ints({1, 1, 1, 1})}}}, 2);
  // squeezenet1_1's classifier, a 1x1 conv 512 -> 1000 on 13x13.
  const ir::Attributes relu = {{"channels_last", ir::Attribute::of_int(1)},
                               {"activation", ir::Attribute::of_string("Relu")}};
  const ir::Attributes cl = {{"channels_last", ir::Attribute::of_int(1)}};
  add("Classifier1x1_512x13", {"FusedConv", "kiln", {{1, 13, 13, 512}, {1000, 512, 1, 1}, {1000}}, {false, true, true}, relu}, 8);
  add("MatMul_169x512x1000", {"MatMul", "", {{169, 512}, {512, 1000}}, {false, true}}, 1);
  // Transformer MLPs' first linear layer with its GELU (vit_tiny's, convnext_tiny's first stage on
  // channels-last pixels, a BERT's), the activation in the kernel's epilogue.
  const ir::Attributes gelu = {{"activation", ir::Attribute::of_string("Gelu")}};
  add("FusedMatMulGelu_197x192x768", {"FusedMatMul", "kiln", {{197, 192}, {192, 768}, {768}}, {false, true, true}, gelu}, 1);
  add("FusedMatMulGelu_3136x96x384", {"FusedMatMul", "kiln", {{3136, 96}, {96, 384}, {384}}, {false, true, true}, gelu}, 1);
  add("FusedMatMulGelu_128x256x1024", {"FusedMatMul", "kiln", {{128, 256}, {256, 1024}, {1024}}, {false, true, true}, gelu}, 1);
  // efficientnet_b0's 1x1 convs, early (many pixels, few channels) and late (few pixels, wide
  // channels).
  add("Pointwise_14x14_112to672", {"FusedConv", "kiln", {{1, 14, 14, 112}, {672, 112, 1, 1}, {672}}, {false, true, true}, relu}, 8);
  add("Pointwise_7x7_1152to192", {"FusedConv", "kiln", {{1, 7, 7, 1152}, {192, 1152, 1, 1}, {192}}, {false, true, true}, cl}, 8);
  add("Pointwise_7x7_320to1280", {"FusedConv", "kiln", {{1, 7, 7, 320}, {1280, 320, 1, 1}, {1280}}, {false, true, true}, relu}, 8);
  // mobilenet_v2's late 1x1 convs: projections (wide K, few outputs) and expansions.
  add("Pointwise_14x14_576to96", {"FusedConv", "kiln", {{1, 14, 14, 576}, {96, 576, 1, 1}, {96}}, {false, true, true}, cl}, 8);
  add("Pointwise_7x7_960to160", {"FusedConv", "kiln", {{1, 7, 7, 960}, {160, 960, 1, 1}, {160}}, {false, true, true}, cl}, 8);
  add("Pointwise_7x7_160to960", {"FusedConv", "kiln", {{1, 7, 7, 160}, {960, 160, 1, 1}, {960}}, {false, true, true}, relu}, 8);
  // The same with their weights cold (8 copies: from memory, as in a model), and resnet50's
  // last stage's (4 MiB of weights on 49 pixels).
  for (const char* shape : {"320to1280", "160to960", "960to160", "2048to512", "512to2048"}) {
    const int64_t k = std::atoi(shape), n = std::atoi(std::strchr(shape, 'o') + 1);
    OneNode cold{"FusedConv", "kiln", {{1, 7, 7, k}, {n, k, 1, 1}, {n}}, {false, true, true}, cl};
    cold.copies = 8;
    add(std::string("PointwiseCold_7x7_") + shape, cold, 8);
  }
  // mobilenet_v2's small-K expansions as its chains run them, one band at a time.
  for (auto [name, px, k, n] : {std::tuple{"PointwiseRows_2352px_16to96", 2352, 16, 96},
                                std::tuple{"PointwiseRows_1120px_24to144", 1120, 24, 144},
                                std::tuple{"PointwiseRows_784px_32to192", 784, 32, 192},
                                std::tuple{"PointwiseRows_196px_64to384", 196, 64, 384}, std::tuple{"PointwiseRows_784px_40to240", 784, 40, 240}, std::tuple{"PointwiseRows_196px_80to480", 196, 80, 480}, std::tuple{"PointwiseRows_49px_160to960", 49, 160, 960}, std::tuple{"PointwiseRows_196px_96to576", 196, 96, 576}, std::tuple{"PointwiseRows_196px_576to96", 196, 576, 96}, std::tuple{"PointwiseRows_784px_144to40", 784, 144, 40}, std::tuple{"PointwiseRows_196px_240to80", 196, 240, 80}, std::tuple{"PointwiseRows_196px_480to80", 196, 480, 80}, std::tuple{"PointwiseRows_196px_16to480", 196, 80, 480}, std::tuple{"PointwiseRows_3136px_16to96", 3136, 16, 96}})
    benchmark::RegisterBenchmark(name, [px, k, n](benchmark::State& s) { pointwise_rows(s, px, k, n); })->UseRealTime();
  // resnet50's 1x1 convs on 56x56: wide inputs (256 channels) into 64 or 128.
  add("Pointwise_56x56_256to64", {"FusedConv", "kiln", {{1, 56, 56, 256}, {64, 256, 1, 1}, {64}}, {false, true, true}, relu}, 8);
  add("Pointwise_56x56_256to128", {"FusedConv", "kiln", {{1, 56, 56, 256}, {128, 256, 1, 1}, {128}}, {false, true, true}, relu}, 8);
  add("Pointwise_56x56_64to256", {"FusedConv", "kiln", {{1, 56, 56, 64}, {256, 64, 1, 1}, {256}}, {false, true, true}, relu}, 8);
  add("Pointwise_56x56_24to144", {"FusedConv", "kiln", {{1, 56, 56, 24}, {144, 24, 1, 1}, {144}}, {false, true, true}, relu}, 8);
  // The classifier of mobilenet_v2 / efficientnet_b0: gemv, then oneDNN.
  add("Classifier_1280x1000",
      {"Gemm", "", {{1, 1280}, {1000, 1280}, {1000}}, {false, true, true},
       {{"transB", ir::Attribute::of_int(1)}}},
      2);
  // The same with its weights cold (8 copies, 41 MB: from memory, as in a model, where the
  // other layers' weights and activations pass through the caches between two runs).
  OneNode cold_classifier{"Gemm", "", {{1, 1280}, {1000, 1280}, {1000}}, {false, true, true},
                          {{"transB", ir::Attribute::of_int(1)}}};
  cold_classifier.copies = 8;
  add("ClassifierCold_1280x1000", cold_classifier, 1);
  return 0;
}

const int registered = register_all();

}  // namespace

BENCHMARK_MAIN();
