// The emitted projects' kernels (src/kernels/), with the weights packed as the C++
// target packs them, against the reference kernels on random inputs with odd shapes.
#include <gtest/gtest.h>

// This file instantiates the kernels' vector helpers (src/kernels/common.h) in a build without
// the wider registers: GCC's note on their by-value ABI (-Wpsabi) concerns no call here.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

#include <algorithm>
#include <array>
#include <cmath>

#include "../backends/one_node.h"
#include "codegen/cpp/weight_packing.h"
#include "kernels/attention.h"
#include "kernels/conv2d.h"
#include "kernels/depthwise_rows.h"
#include "kernels/gemm.h"
#include "kernels/gemv.h"
#include "kernels/norm.h"
#include "kernels/onednn_conv.h"
#include "kernels/parallel.h"
#include "kernels/pointwise_rows.h"
#include "kernels/pool.h"
#include "kernels/stem_rows.h"
#include "kernels/winograd.h"

namespace kiln::codegen {
namespace {

using one_node::In;
using one_node::OneNode;
using one_node::random;

// NCHW <-> NHWC of a 4-D float tensor.
Tensor to_nhwc(const Tensor& x) {
  const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  Tensor y(DType::Float, {N, H, W, C});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < H * W; ++i) y.data<float>()[(n * H * W + i) * C + c] = x.data<float>()[(n * C + c) * H * W + i];
  return y;
}

void expect_close(const Tensor& want, const float* got, const std::string& what) {
  for (int64_t i = 0; i < want.numel(); ++i) {
    const float e = want.data<float>()[i];
    ASSERT_NEAR(got[i], e, 1e-4f * std::max(1.f, std::fabs(e))) << what << " at " << i;
  }
}

struct ConvCase {
  int64_t N, C, H, W, M, KH, KW, G, stride, dilation;
  std::vector<int64_t> pads;
  bool relu, residual;
};

template <int PANEL>
void check_conv(const ConvCase& k) {
  const Tensor x = random(DType::Float, {k.N, k.C, k.H, k.W}, 1);
  const Tensor w = random(DType::Float, {k.M, k.C / k.G, k.KH, k.KW}, 2);
  const Tensor b = random(DType::Float, {k.M}, 3);
  ir::Attributes a;
  a["group"] = ir::Attribute::of_int(k.G);
  a["strides"] = ir::Attribute::of_ints({k.stride, k.stride});
  a["dilations"] = ir::Attribute::of_ints({k.dilation, k.dilation});
  a["pads"] = ir::Attribute::of_ints(k.pads);
  a["kernel_shape"] = ir::Attribute::of_ints({k.KH, k.KW});
  OneNode conv("Conv", {{x}, {w, true}, {b, true}}, 1, a);
  const Tensor ref = conv.reference()[0];
  const int64_t OH = ref.dim(2), OW = ref.dim(3);
  Tensor z = random(DType::Float, {k.N, k.M, OH, OW}, 4);
  Tensor want = to_nhwc(ref);
  const Tensor z_nhwc = to_nhwc(z);
  for (int64_t i = 0; i < want.numel(); ++i) {
    float v = want.data<float>()[i] + (k.residual ? z_nhwc.data<float>()[i] : 0.f);
    want.data<float>()[i] = k.relu ? std::max(v, 0.f) : v;
  }
  const Tensor xh = to_nhwc(x);
  const kiln_kernels::Conv2dShape s{k.N, k.H, k.W, k.C, OH, OW, k.M, k.KH, k.KW, k.stride, k.stride,
                                    k.pads[0], k.pads[1], k.dilation, k.dilation, k.G};
  std::vector<float> y(want.numel(), -7.f);
  const float* zp = k.residual ? z_nhwc.data<float>() : nullptr;
  const bool depthwise = k.G == k.C && k.M == k.C;
  if (depthwise) {
    const auto pw = cpp::pack_depthwise(w.data<float>(), k.C, k.KH, k.KW);
    if (k.relu) kiln_kernels::depthwise_nhwc<kiln_kernels::Act::Relu>(s, xh.data<float>(), pw.data(), b.data<float>(), zp, y.data());
    else kiln_kernels::depthwise_nhwc<kiln_kernels::Act::None>(s, xh.data<float>(), pw.data(), b.data<float>(), zp, y.data());
  } else {
    const auto pw = cpp::pack_conv2d(w.data<float>(), k.M, k.C, k.G, k.KH, k.KW, PANEL);
    const auto pb = cpp::pack_conv2d_bias(b.data<float>(), k.M, k.G, PANEL);
    if (k.relu)
      kiln_kernels::conv2d_nhwc<kiln_kernels::Act::Relu, PANEL>(s, xh.data<float>(), pw.data(), pb.data(), zp, y.data());
    else
      kiln_kernels::conv2d_nhwc<kiln_kernels::Act::None, PANEL>(s, xh.data<float>(), pw.data(), pb.data(), zp, y.data());
  }
  expect_close(want, y.data(), "conv C=" + std::to_string(k.C) + " M=" + std::to_string(k.M) + " G=" + std::to_string(k.G) +
                                   " panel " + std::to_string(PANEL));
}

TEST(CodegenKernels, Conv2dNhwc) {
  const std::vector<ConvCase> cases = {
      {1, 3, 9, 7, 5, 3, 3, 1, 1, 1, {1, 1, 1, 1}, true, false},       // a stem: few inputs
      {2, 8, 6, 11, 70, 1, 1, 1, 1, 1, {0, 0, 0, 0}, false, true},     // 1x1, 70 outputs, residual
      {1, 6, 13, 10, 9, 3, 3, 3, 2, 1, {1, 0, 2, 1}, true, false},     // groups, stride, uneven pads
      {1, 4, 12, 12, 20, 3, 2, 2, 1, 2, {2, 1, 2, 1}, false, false},   // dilation, 3x2 kernel
      {1, 16, 8, 9, 16, 3, 3, 16, 1, 1, {1, 1, 1, 1}, true, true},     // depthwise
      {2, 70, 7, 5, 70, 5, 5, 70, 2, 1, {2, 2, 2, 2}, false, false},   // depthwise 5x5 s2, 70 channels
      {1, 40, 9, 8, 40, 3, 3, 40, 1, 1, {1, 1, 1, 1}, true, true},     // depthwise, 2 vectors and 8 more
      {1, 40, 5, 5, 130, 3, 3, 1, 1, 1, {1, 1, 1, 1}, true, false},    // three panels of outputs
  };
  for (const ConvCase& c : cases) {
    check_conv<32>(c);
    check_conv<64>(c);
  }
}

TEST(CodegenKernels, WinogradF23) {
  // Odd extents (a last tile half outside), uneven pads, outputs that are not whole panels.
  for (const auto& [C, M, H, W, pt, pl] : std::vector<std::array<int64_t, 6>>{{5, 7, 9, 11, 1, 1}, {70, 40, 6, 7, 1, 0},
                                                                            {16, 130, 8, 8, 0, 1}}) {
    const Tensor x = random(DType::Float, {1, C, H, W}, 18), w = random(DType::Float, {M, C, 3, 3}, 19);
    const Tensor b = random(DType::Float, {M}, 20);
    ir::Attributes a;
    a["pads"] = ir::Attribute::of_ints({pt, pl, 1, 1});
    a["kernel_shape"] = ir::Attribute::of_ints({3, 3});
    OneNode conv("Conv", {{x}, {w, true}, {b, true}}, 1, a);
    const Tensor ref = conv.reference()[0];
    const Tensor want = to_nhwc(ref);
    const kiln_kernels::WinogradShape s{1, H, W, C, ref.dim(2), ref.dim(3), M, pt, pl};
    std::vector<float> y(want.numel());
    kiln_kernels::Team team(2);
    for (kiln_kernels::Team* t : {static_cast<kiln_kernels::Team*>(nullptr), &team}) {
      const auto u64 = cpp::pack_winograd_f23(w.data<float>(), M, C, 64);
      kiln_kernels::winograd_f23_nhwc<kiln_kernels::Act::None, 64>(s, to_nhwc(x).data<float>(), u64.data(),
                                                                  b.data<float>(), nullptr, y.data(), 0.f, 0.f, t);
      expect_close(want, y.data(), "winograd panel 64, C=" + std::to_string(C));
      const auto u32 = cpp::pack_winograd_f23(w.data<float>(), M, C, 32);
      kiln_kernels::winograd_f23_nhwc<kiln_kernels::Act::None, 32>(s, to_nhwc(x).data<float>(), u32.data(),
                                                                  b.data<float>(), nullptr, y.data(), 0.f, 0.f, t);
      expect_close(want, y.data(), "winograd panel 32, C=" + std::to_string(C));
    }
  }
}

// The AVX-512 kernels kiln's CPU backend runs, which emitted code calls on such CPUs
// (depthwise_rows.h, pointwise_rows.h), on whole tensors through the emitted code's entry points.
bool avx512() { return __builtin_cpu_supports("avx512f"); }

TEST(CodegenKernels, DepthwiseRowsMatchTheReference) {
  if (!avx512()) GTEST_SKIP() << "this CPU has no AVX-512F, which the kernel needs";
  kiln_kernels::Team team(2);
  struct Case {
    int64_t N, C, H, W, K, stride, pad;
  };
  // 3x3 and 5x5 (registers), 7x7 (the generic row), strides 1 and 2, channels not a multiple of
  // 16, widths below a group of eight pixels, two images.
  for (const Case& k : {Case{1, 32, 9, 11, 3, 1, 1}, Case{2, 20, 8, 5, 3, 2, 1}, Case{1, 40, 7, 13, 5, 1, 2},
                        Case{1, 17, 10, 9, 5, 2, 2}, Case{1, 16, 6, 7, 7, 1, 3}, Case{1, 48, 3, 3, 3, 1, 0}}) {
    const Tensor x = random(DType::Float, {k.N, k.C, k.H, k.W}, 21);
    const Tensor w = random(DType::Float, {k.C, 1, k.K, k.K}, 22);
    const Tensor b = random(DType::Float, {k.C}, 23);
    ir::Attributes a;
    a["group"] = ir::Attribute::of_int(k.C);
    a["strides"] = ir::Attribute::of_ints({k.stride, k.stride});
    a["pads"] = ir::Attribute::of_ints({k.pad, k.pad, k.pad, k.pad});
    a["kernel_shape"] = ir::Attribute::of_ints({k.K, k.K});
    const Tensor ref = to_nhwc(OneNode("Conv", {{x}, {w, true}, {b, true}}, 1, a).reference()[0]);
    const int64_t OH = ref.dim(1), OW = ref.dim(2), C16 = (k.C + 15) / 16 * 16;
    const kiln_kernels::Conv2dShape s{k.N, k.H, k.W, k.C, OH, OW, k.C, k.K, k.K, k.stride, k.stride, k.pad, k.pad, 1, 1, k.C};
    const kiln_kernels::DepthwiseShape d{k.H, k.W, k.C, OH, OW, k.K, k.K, k.stride, k.stride, k.pad, k.pad};
    std::vector<float> pw(C16 * k.K * k.K), pb(C16);
    kiln_kernels::pack_depthwise(d, w.data<float>(), b.data<float>(), pw.data(), pb.data());
    const Tensor xh = to_nhwc(x);
    const std::string what = "depthwise C=" + std::to_string(k.C) + " K=" + std::to_string(k.K) + " stride " +
                             std::to_string(k.stride);
    for (kiln_kernels::Team* t : {static_cast<kiln_kernels::Team*>(nullptr), &team}) {
      // Clip in registers; Tanh after the rows are written.
      std::vector<float> y(ref.numel(), -7.f), want(ref.numel());
      kiln_kernels::depthwise_nhwc_rows<kiln_kernels::Act::Clip>(s, xh.data<float>(), pw.data(), pb.data(), y.data(),
                                                                 -1.f, 1.5f, t);
      for (int64_t i = 0; i < ref.numel(); ++i) want[i] = std::min(std::max(ref.data<float>()[i], -1.f), 1.5f);
      expect_close(Tensor::from_vector<float>({ref.numel()}, want), y.data(), what + " Clip");
      kiln_kernels::depthwise_nhwc_rows<kiln_kernels::Act::Tanh>(s, xh.data<float>(), pw.data(), pb.data(),
                                                                      y.data(), 0.f, 0.f, t);
      for (int64_t i = 0; i < ref.numel(); ++i)
        want[i] = kiln_kernels::activate<kiln_kernels::Act::Tanh>(ref.data<float>()[i], 0.f, 0.f);
      expect_close(Tensor::from_vector<float>({ref.numel()}, want), y.data(), what + " Tanh");
    }
  }
}

TEST(CodegenKernels, StemRowsMatchTheReference) {
  if (!avx512()) GTEST_SKIP() << "this CPU has no AVX-512F, which the kernel needs";
  kiln_kernels::Team team(2);
  struct Case {
    int64_t N, C, H, W, M, K, stride, pad;
  };
  // mobilenet's 3x3/2 3 -> 32, resnet's 7x7/2 3 -> 64 (a block of four vectors), a 5x5/1 on four
  // channels to 20 outputs (a partial vector), a 3x1-wide odd image, two images.
  for (const Case& k : {Case{1, 3, 17, 15, 32, 3, 2, 1}, Case{1, 3, 23, 21, 64, 7, 2, 3}, Case{2, 4, 9, 11, 20, 5, 1, 2},
                        Case{1, 2, 6, 3, 80, 3, 1, 1}}) {
    const Tensor x = random(DType::Float, {k.N, k.C, k.H, k.W}, 41);
    const Tensor w = random(DType::Float, {k.M, k.C, k.K, k.K}, 42);
    const Tensor b = random(DType::Float, {k.M}, 43);
    ir::Attributes a;
    a["strides"] = ir::Attribute::of_ints({k.stride, k.stride});
    a["pads"] = ir::Attribute::of_ints({k.pad, k.pad, k.pad, k.pad});
    a["kernel_shape"] = ir::Attribute::of_ints({k.K, k.K});
    const Tensor ref = to_nhwc(OneNode("Conv", {{x}, {w, true}, {b, true}}, 1, a).reference()[0]);
    const int64_t OH = ref.dim(1), OW = ref.dim(2);
    const kiln_kernels::Conv2dShape s{k.N, k.H, k.W, k.C, OH, OW, k.M, k.K, k.K, k.stride, k.stride, k.pad, k.pad, 1, 1, 1};
    const kiln_kernels::StemLayout L(kiln_kernels::StemShape{k.H, k.W, k.C, OH, OW, k.M, k.K, k.K, k.stride, k.stride, k.pad, k.pad},
                                     false);
    float* pw = static_cast<float*>(std::aligned_alloc(64, (L.packed_size() * 4 + 63) / 64 * 64));
    L.pack(w.data<float>(), pw);
    std::vector<float> pb(L.bias_size(), 0.f);
    std::copy(b.data<float>(), b.data<float>() + k.M, pb.begin());
    const Tensor xh = to_nhwc(x);
    const std::string what = "stem C=" + std::to_string(k.C) + " M=" + std::to_string(k.M) + " K=" + std::to_string(k.K);
    for (kiln_kernels::Team* t : {static_cast<kiln_kernels::Team*>(nullptr), &team}) {
      std::vector<float> y(ref.numel(), -7.f), want(ref.numel());
      kiln_kernels::stem_conv_nhwc<kiln_kernels::Act::Clip>(s, xh.data<float>(), pw, pb.data(), y.data(), -1.f, 1.5f, t);
      for (int64_t i = 0; i < ref.numel(); ++i) want[i] = std::min(std::max(ref.data<float>()[i], -1.f), 1.5f);
      expect_close(Tensor::from_vector<float>({ref.numel()}, want), y.data(), what + " Clip");
      kiln_kernels::stem_conv_nhwc<kiln_kernels::Act::Tanh>(s, xh.data<float>(), pw, pb.data(), y.data(), 0.f, 0.f, t);
      for (int64_t i = 0; i < ref.numel(); ++i)
        want[i] = kiln_kernels::activate<kiln_kernels::Act::Tanh>(ref.data<float>()[i], 0.f, 0.f);
      expect_close(Tensor::from_vector<float>({ref.numel()}, want), y.data(), what + " Tanh");
    }
    std::free(pw);
  }
}

// NHWC <-> nChw16c (C a multiple of 16).
std::vector<float> nhwc_to_blocked(const float* x, int64_t N, int64_t P, int64_t C) {
  std::vector<float> y(static_cast<size_t>(N * P * C));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t p = 0; p < P; ++p)
      for (int64_t c = 0; c < C; ++c) y[((n * (C / 16) + c / 16) * P + p) * 16 + c % 16] = x[(n * P + p) * C + c];
  return y;
}

TEST(CodegenKernels, OnednnConvMatchesTheReference) {
  namespace kk = kiln_kernels;
  struct Case {
    int64_t N, C, H, W, M, KH, KW, G, stride, dilation;
    std::vector<int64_t> pads;  // top, left, bottom, right
    unsigned flags;
    kk::Act act;
    bool bias, z_in_place;
  };
  const unsigned wino = kk::kOnednnWinograd, res = kk::kOnednnResidual;
  const unsigned blocked = kk::kOnednnXBlocked | kk::kOnednnYBlocked | kk::kOnednnZBlocked;
  std::vector<Case> cases = {
      {1, 5, 9, 11, 7, 3, 3, 1, 2, 1, {1, 0, 2, 1}, 0, kk::Act::Relu, true, false},           // stride 2, uneven pads
      {2, 8, 6, 7, 12, 3, 3, 2, 1, 2, {2, 2, 2, 2}, res, kk::Act::SiLU, false, false},         // groups, dilation, SiLU after
      {1, 24, 5, 6, 40, 1, 1, 1, 1, 1, {0, 0, 0, 0}, res, kk::Act::Clip, true, true},          // 1x1, residual in place
      // Winograd asked for where oneDNN has none (a stride of 2 here; any conv on a CPU without
      // AVX-512): the direct algorithm runs it.
      {1, 5, 9, 11, 7, 3, 3, 1, 2, 1, {1, 1, 1, 1}, wino, kk::Act::Relu, true, false},
  };
  if (__builtin_cpu_supports("avx512f")) {  // oneDNN 2.x's Winograd is AVX-512 only
    cases.push_back({1, 32, 9, 10, 48, 3, 3, 1, 1, 1, {1, 1, 1, 1}, wino | res, kk::Act::Relu, true, true});
    cases.push_back({1, 32, 8, 7, 16, 3, 3, 1, 1, 1, {1, 1, 1, 1}, wino | res | blocked, kk::Act::None, true, false});
    cases.push_back({1, 16, 6, 6, 32, 3, 3, 1, 1, 1, {1, 1, 1, 1}, res | blocked, kk::Act::Relu, false, true});  // direct
  }
  kk::Team team(2);
  for (const Case& k : cases) {
    const Tensor x = random(DType::Float, {k.N, k.C, k.H, k.W}, 51);
    const Tensor w = random(DType::Float, {k.M, k.C / k.G, k.KH, k.KW}, 52);
    const Tensor b = random(DType::Float, {k.M}, 53);
    ir::Attributes a;
    a["group"] = ir::Attribute::of_int(k.G);
    a["strides"] = ir::Attribute::of_ints({k.stride, k.stride});
    a["dilations"] = ir::Attribute::of_ints({k.dilation, k.dilation});
    a["pads"] = ir::Attribute::of_ints({k.pads[0], k.pads[1], k.pads[2], k.pads[3]});
    a["kernel_shape"] = ir::Attribute::of_ints({k.KH, k.KW});
    std::vector<In> ins = {{x}, {w, true}};
    if (k.bias) ins.push_back({b, true});
    const Tensor ref = to_nhwc(OneNode("Conv", ins, 1, a).reference()[0]);
    const int64_t OH = ref.dim(1), OW = ref.dim(2), n = ref.numel();
    const Tensor z = random(DType::Float, {k.N, OH, OW, k.M}, 54);
    std::vector<float> want(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const float v = ref.data<float>()[i] + ((k.flags & res) ? z.data<float>()[i] : 0.f);
      want[i] = kk::activate(k.act, v, -0.5f, 2.f);
    }
    const kk::OnednnConvShape s{k.N, k.H, k.W, k.C, OH, OW, k.M, k.KH, k.KW, k.stride, k.stride, k.pads[0], k.pads[1],
                                k.pads[2], k.pads[3], k.dilation, k.dilation, k.G};
    const kk::OnednnConv conv(s, k.flags, k.act, -0.5f, 2.f, w.data<float>(), k.bias ? b.data<float>() : nullptr);
    const bool is_blocked = (k.flags & kk::kOnednnYBlocked) != 0;
    const Tensor xh = to_nhwc(x);
    std::vector<float> xin(xh.data<float>(), xh.data<float>() + xh.numel());
    std::vector<float> zin(z.data<float>(), z.data<float>() + n), wanted = want;
    if (is_blocked) {
      xin = nhwc_to_blocked(xh.data<float>(), k.N, k.H * k.W, k.C);
      zin = nhwc_to_blocked(z.data<float>(), k.N, OH * OW, k.M);
      wanted = nhwc_to_blocked(want.data(), k.N, OH * OW, k.M);
    }
    const std::string what = "oneDNN conv C=" + std::to_string(k.C) + " M=" + std::to_string(k.M) + " flags " +
                             std::to_string(k.flags);
    for (kk::Team* t : {static_cast<kk::Team*>(nullptr), &team}) {
      std::vector<float> y = k.z_in_place ? zin : std::vector<float>(static_cast<size_t>(n), -7.f);
      conv.run(xin.data(), (k.flags & res) ? (k.z_in_place ? y.data() : zin.data()) : nullptr, y.data(), t);
      for (int64_t i = 0; i < n; ++i)  // Winograd's transforms round differently from the direct sum
        ASSERT_NEAR(y[i], wanted[i], 2e-4f * std::max(1.f, std::fabs(wanted[i]))) << what << " at " << i;
    }
  }
}

// One-row products on kernels/gemv.h: blocks of 64 outputs and a partial last one, weights
// either way round, alpha, bias and an activation; with a team of two, a product split by
// blocks and one with fewer blocks than threads (split by inputs).
TEST(CodegenKernels, GemvMatchesTheReference) {
  namespace kk = kiln_kernels;
  kk::Team team(2);
  for (const auto& [n, k] : std::vector<std::pair<int64_t, int64_t>>{{1000, 70}, {37, 900}, {64, 5}, {130, 257}}) {
    for (const bool k_major : {false, true}) {
      const Tensor w = random(DType::Float, {n, k}, 61), x = random(DType::Float, {k}, 62), b = random(DType::Float, {n}, 63);
      const kk::GemvLayout L{n, k};
      std::vector<float> packed(static_cast<size_t>(L.packed_size()));
      std::vector<float> wk(static_cast<size_t>(n * k));  // w as the kernel is given it
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < k; ++j) wk[k_major ? j * n + i : i * k + j] = w.data<float>()[i * k + j];
      L.pack(wk.data(), k_major, 0.5f, packed.data());
      std::vector<float> want(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        double acc = 0;
        for (int64_t j = 0; j < k; ++j) acc += double(w.data<float>()[i * k + j]) * x.data<float>()[j];
        want[i] = std::max(0.f, 0.5f * static_cast<float>(acc) + b.data<float>()[i]);
      }
      for (kk::Team* t : {static_cast<kk::Team*>(nullptr), &team}) {
        std::vector<float> y(static_cast<size_t>(n), -7.f);
        kk::gemv_act<kk::Act::Relu>(L, packed.data(), x.data<float>(), b.data<float>(), y.data(), 0.f, 0.f, t);
        for (int64_t i = 0; i < n; ++i)
          ASSERT_NEAR(y[i], want[i], 1e-4f * std::max(1.f, std::fabs(want[i])))
              << "gemv n=" << n << " k=" << k << (k_major ? " k-major" : "") << (t ? " team" : "") << " at " << i;
      }
    }
  }
}

TEST(CodegenKernels, PointwiseRowsMatchTheReference) {
  if (!avx512()) GTEST_SKIP() << "this CPU has no AVX-512F, which the kernel needs";
  kiln_kernels::Team team(2);
  struct Case {
    int64_t M, K, N;
    bool pair, k_major;
    int64_t depth;
  };
  // Pair mode (N <= 24, odd K), blocks of 1-4 vectors with a partial last one, several input
  // ranges (K > depth), weights given either way round, one row.
  for (const Case& k : {Case{37, 21, 24, true, false, 64}, Case{50, 16, 13, true, true, 64}, Case{29, 40, 100, false, false, 64},
                        Case{64, 300, 144, false, true, 128}, Case{1, 96, 1000, false, false, 64},
                        Case{23, 130, 17, false, false, 32}}) {
    const Tensor x = random(DType::Float, {k.M, k.K}, 31), w = random(DType::Float, {k.N, k.K}, 32);
    const Tensor b = random(DType::Float, {k.N}, 33), z = random(DType::Float, {k.M, k.N}, 34);
    std::vector<float> want(k.M * k.N), wk(k.K * k.N);
    for (int64_t n = 0; n < k.N; ++n)
      for (int64_t c = 0; c < k.K; ++c) wk[c * k.N + n] = w.data<float>()[n * k.K + c];
    const kiln_kernels::PointwiseLayout L(k.K, k.N, k.pair, k.depth, k.N);
    float* packed = static_cast<float*>(std::aligned_alloc(64, (L.packed_size() * 4 + 63) / 64 * 64));
    L.pack(k.k_major ? wk.data() : w.data<float>(), k.k_major, packed);
    std::vector<float> bias(kiln_kernels::PointwiseLayout::round16(k.N), 0.f);
    std::copy(b.data<float>(), b.data<float>() + k.N, bias.begin());
    const std::string what = "pointwise M=" + std::to_string(k.M) + " K=" + std::to_string(k.K) + " N=" +
                             std::to_string(k.N) + (k.pair ? " pair" : "");
    for (const bool split : {false, true})
      for (kiln_kernels::Team* t : {static_cast<kiln_kernels::Team*>(nullptr), &team}) {
        std::vector<float> y(k.M * k.N, -7.f);
        // Relu and a residual in registers; Sigmoid after the rows are written.
        kiln_kernels::pointwise_nhwc<kiln_kernels::Act::Relu>(L, k.M, x.data<float>(), packed, bias.data(),
                                                              z.data<float>(), y.data(), 0.f, 0.f, split, t);
        for (int64_t m = 0; m < k.M; ++m)
          for (int64_t n = 0; n < k.N; ++n) {
            double v = b.data<float>()[n] + z.data<float>()[m * k.N + n];
            for (int64_t c = 0; c < k.K; ++c) v += double(x.data<float>()[m * k.K + c]) * w.data<float>()[n * k.K + c];
            want[m * k.N + n] = static_cast<float>(std::max(v, 0.0));
          }
        expect_close(Tensor::from_vector<float>({k.M * k.N}, want), y.data(), what + " Relu");
        kiln_kernels::pointwise_nhwc<kiln_kernels::Act::Sigmoid>(L, k.M, x.data<float>(), packed, bias.data(), nullptr,
                                                                 y.data(), 0.f, 0.f, split, t);
        for (int64_t m = 0; m < k.M; ++m)
          for (int64_t n = 0; n < k.N; ++n) {
            double v = b.data<float>()[n];
            for (int64_t c = 0; c < k.K; ++c) v += double(x.data<float>()[m * k.K + c]) * w.data<float>()[n * k.K + c];
            want[m * k.N + n] = static_cast<float>(1.0 / (1.0 + std::exp(-v)));
          }
        expect_close(Tensor::from_vector<float>({k.M * k.N}, want), y.data(), what + " Sigmoid");
      }
    std::free(packed);
  }
}

TEST(CodegenKernels, ATeamSplitsTheWorkAndMatchesOneThread) {
  kiln_kernels::Team team(3);
  for (const int64_t M : {1, 5, 40}) {
    const int64_t K = 33, N = 150;
    const Tensor a = random(DType::Float, {M, K}, 16), b = random(DType::Float, {K, N}, 17);
    const auto bp = cpp::pack_gemm_b(b.data<float>(), K, N, false, 1.f, 64);
    std::vector<float> one(M * N), three(M * N);
    kiln_kernels::gemm_packed<kiln_kernels::Act::Relu, 64>(M, K, N, a.data<float>(), K, bp.data(), nullptr, nullptr, 0,
                                                          one.data(), N);
    for (int round = 0; round < 20; ++round) {
      kiln_kernels::gemm_packed<kiln_kernels::Act::Relu, 64>(M, K, N, a.data<float>(), K, bp.data(), nullptr, nullptr, 0,
                                                            three.data(), N, 0.f, 0.f, &team);
      ASSERT_EQ(one, three) << "M=" << M << " round " << round;
    }
  }
  std::vector<int> hits(1000, 0);
  team.parallel_for(1000, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) ++hits[i];
  });
  EXPECT_EQ(std::count(hits.begin(), hits.end(), 1), 1000);
}

TEST(CodegenKernels, Pool2dNhwc) {
  for (const bool is_max : {true, false})
    for (const int64_t include_pad : {0, 1}) {
      const Tensor x = random(DType::Float, {2, 5, 9, 7}, 5);
      ir::Attributes a;
      a["kernel_shape"] = ir::Attribute::of_ints({3, 2});
      a["strides"] = ir::Attribute::of_ints({2, 2});
      a["pads"] = ir::Attribute::of_ints({1, 0, 1, 1});
      a["ceil_mode"] = ir::Attribute::of_int(1);
      if (!is_max) a["count_include_pad"] = ir::Attribute::of_int(include_pad);
      OneNode pool(is_max ? "MaxPool" : "AveragePool", {{x}}, 1, a);
      const Tensor ref = pool.reference()[0];
      const Tensor want = to_nhwc(ref);
      const kiln_kernels::Pool2dShape s{2, 9, 7, 5, ref.dim(2), ref.dim(3), 3, 2, 2, 2, 1, 0, 1, 1, 1, 1};
      std::vector<float> y(want.numel());
      kiln_kernels::pool2d_nhwc(s, is_max, include_pad != 0, to_nhwc(x).data<float>(), y.data());
      expect_close(want, y.data(), is_max ? "max pool" : "average pool");
    }
}

TEST(CodegenKernels, GemmPacked) {
  for (const int64_t M : {1, 3, 7, 13})
    for (const bool trans : {false, true}) {
      const int64_t K = 37, N = 75;
      const Tensor a = random(DType::Float, {M, K}, 6);
      const Tensor b = random(DType::Float, trans ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N}, 7);
      const Tensor c = random(DType::Float, {N}, 8);
      ir::Attributes at;
      at["transB"] = ir::Attribute::of_int(trans ? 1 : 0);
      at["alpha"] = ir::Attribute::of_float(0.5f);
      OneNode gemm("Gemm", {{a}, {b, true}, {c, true}}, 1, at);
      const Tensor want = gemm.reference()[0];
      std::vector<float> y(M * N);
      const auto b32 = cpp::pack_gemm_b(b.data<float>(), K, N, trans, 0.5f, 32);
      kiln_kernels::gemm_packed<kiln_kernels::Act::None, 32>(M, K, N, a.data<float>(), K, b32.data(), c.data<float>(),
                                                            nullptr, 0, y.data(), N);
      expect_close(want, y.data(), "gemm panel 32, M=" + std::to_string(M));
      const auto b64 = cpp::pack_gemm_b(b.data<float>(), K, N, trans, 0.5f, 64);
      kiln_kernels::gemm_packed<kiln_kernels::Act::None, 64>(M, K, N, a.data<float>(), K, b64.data(), c.data<float>(),
                                                            nullptr, 0, y.data(), N);
      expect_close(want, y.data(), "gemm panel 64, M=" + std::to_string(M));
    }
}

TEST(CodegenKernels, SoftmaxAndLayerNorm) {
  const Tensor x = random(DType::Float, {3, 5, 7}, 9);
  ir::Attributes a;
  a["axis"] = ir::Attribute::of_int(1);
  OneNode sm("Softmax", {{x}}, 1, a, 13);
  std::vector<float> y(x.numel());
  kiln_kernels::softmax(3, 5, 7, x.data<float>(), y.data());
  expect_close(sm.reference()[0], y.data(), "softmax over a middle axis");

  const Tensor g = random(DType::Float, {7}, 10), b = random(DType::Float, {7}, 11);
  ir::Attributes ln;
  ln["epsilon"] = ir::Attribute::of_float(1e-3f);
  OneNode norm("LayerNormalization", {{x}, {g, true}, {b, true}}, 1, ln);
  kiln_kernels::layernorm_rows(15, 7, x.data<float>(), nullptr, g.data<float>(), b.data<float>(), nullptr, 1e-3f, y.data(),
                               nullptr);
  expect_close(norm.reference()[0], y.data(), "layer norm");
}

TEST(CodegenKernels, AttentionHead) {
  const int64_t Sq = 5, D = 8, Sk = 7, Dv = 6;
  const Tensor q = random(DType::Float, {1, Sq, D}, 12), k = random(DType::Float, {1, D, Sk}, 13);
  const Tensor v = random(DType::Float, {1, Sk, Dv}, 14), m = random(DType::Float, {1, 1, Sk}, 15);
  ir::Attributes a;
  a["scale"] = ir::Attribute::of_float(0.35f);
  // kiln.Attention lives in the kiln domain (OneNode builds ai.onnx nodes).
  ir::Graph g;
  g.opsets[""] = 17;
  g.opsets["kiln"] = 1;
  std::vector<ir::Value*> ins;
  const Tensor* data[] = {&q, &k, &v, &m};
  for (int i = 0; i < 4; ++i) ins.push_back(g.add_input("in" + std::to_string(i), ir::TensorType::from_dims(DType::Float, data[i]->dims())));
  ir::Value* y = g.add_value("y", ir::TensorType::from_dims(DType::Float, {1, Sq, Dv}));
  ir::Node* n = g.add_node("Attention", ins, {y}, a, "att", "kiln");
  const Tensor want = ops::run_reference(*n, {&q, &k, &v, &m})[0];
  std::vector<float> out(Sq * Dv);
  kiln_kernels::attention_head<64>(Sq, D, Sk, Dv, 0.35f, q.data<float>(), k.data<float>(), v.data<float>(), m.data<float>(),
                                   1, Sk, out.data());
  expect_close(want, out.data(), "attention, panel 64");
  kiln_kernels::attention_head<32>(Sq, D, Sk, Dv, 0.35f, q.data<float>(), k.data<float>(), v.data<float>(), m.data<float>(),
                                   1, Sk, out.data());
  expect_close(want, out.data(), "attention, panel 32");
}

// A head read in place from [S, H, D] tensors (rows H * D floats apart), the keys as K's rows,
// written into an [Sq, H, Dv] output: the layout kiln.Attention's perms describe.
TEST(CodegenKernels, AttentionHeadInPlace) {
  const int64_t Sq = 5, D = 8, Sk = 7, Dv = 6, H = 3, h = 1;
  const Tensor q = random(DType::Float, {Sq, H, D}, 22), k = random(DType::Float, {Sk, H, D}, 23);
  const Tensor v = random(DType::Float, {Sk, H, Dv}, 24);
  // The same head, dense, through the plain form.
  std::vector<float> qh(Sq * D), kt(D * Sk), vh(Sk * Dv), want(Sq * Dv), out(Sq * H * Dv, 0.f);
  for (int64_t i = 0; i < Sq; ++i)
    for (int64_t e = 0; e < D; ++e) qh[i * D + e] = q.data<float>()[(i * H + h) * D + e];
  for (int64_t j = 0; j < Sk; ++j)
    for (int64_t e = 0; e < D; ++e) kt[e * Sk + j] = k.data<float>()[(j * H + h) * D + e];
  for (int64_t j = 0; j < Sk; ++j)
    for (int64_t e = 0; e < Dv; ++e) vh[j * Dv + e] = v.data<float>()[(j * H + h) * Dv + e];
  kiln_kernels::attention_head<64>(Sq, D, Sk, Dv, 0.35f, qh.data(), kt.data(), vh.data(), nullptr, 1, 1, want.data());
  const kiln_kernels::HeadLayout layout{H * D, H * D, H * Dv, H * Dv, true};
  kiln_kernels::attention_head<32>(Sq, D, Sk, Dv, 0.35f, q.data<float>() + h * D, k.data<float>() + h * D,
                                   v.data<float>() + h * Dv, nullptr, 1, 1, out.data() + h * Dv, layout);
  for (int64_t i = 0; i < Sq; ++i)
    for (int64_t e = 0; e < Dv; ++e) EXPECT_NEAR(out[(i * H + h) * Dv + e], want[i * Dv + e], 1e-5f) << i << "," << e;
}

}  // namespace
}  // namespace kiln::codegen
