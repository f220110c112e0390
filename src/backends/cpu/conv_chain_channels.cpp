// kiln.ConvChain of an inverted-residual block (1x1 expand -> depthwise -> 1x1 project, the
// project's residual optional) split by the block's wide middle channels instead of by rows.
// Each thread of the team computes its slice of the expanded channels for the whole image, the
// depthwise conv of those channels and the project's partial sums over them, all in its own
// buffer (a core's cache): no row is computed twice, where a split by rows recomputes the rows
// around each share's edge in the layers before the depthwise (an eighth of the expand at 14
// rows and two threads) and on a 7-row image cannot split evenly. A second job adds the partial
// sums, bias and residual a share of the pixels each, then the project's activation: what
// crosses between cores is the block's narrow ends, its input (every thread reads all of it)
// and those partials (as a tensor-parallel transformer layer splits its MLP: columns, then rows,
// then one reduction). The lowering marks the chains where that beats the row split
// (lower/fuse_conv_chain.h, kCrossCoreMacsPerFloat); the C++ code generator runs them banded.
#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "backends/cpu/activation_apply.h"
#include "backends/cpu/cache_size.h"
#include "backends/cpu/depthwise_conv.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/pointwise_conv.h"
#include "backends/cpu/simd.h"
#include "kernels/thread_scratch.h"

namespace kiln::backends::cpu {

namespace {

// The three convs of a chain's body, or nullopt where it is not expand -> depthwise -> project
// (with kiln's kernels for each: stride-1 1x1 convs, a depthwise conv of at most 5x5 taps).
struct Block {
  const ir::Node *expand, *depthwise, *project;
  PointwiseConvShape e, p;
  DepthwiseShape d;
  int z_input = -1;  // the chain input that is the project's residual
};

std::optional<Block> block_of(const ir::Node& node) {
  auto it = node.attrs.find("body");
  if (it == node.attrs.end() || !it->second.g || node.num_outputs() != 1) return std::nullopt;
  const ir::Graph& body = *it->second.g;
  const std::vector<ir::Node*> nodes = body.nodes();
  if (nodes.size() != 3 || body.outputs().size() != 1 || body.outputs()[0] != nodes[2]->output(0)) return std::nullopt;
  Block b{nodes[0], nodes[1], nodes[2], {}, {}, {}};
  const auto e = pointwise_conv_shape(*b.expand), p = pointwise_conv_shape(*b.project);
  const std::unique_ptr<DepthwiseShape> d = depthwise_shape(*b.depthwise);
  if (!e || !p || !d || d->KH * d->KW > 25 || e->images != 1 || p->images != 1) return std::nullopt;
  if (b.expand->input(0) != body.inputs()[0] || b.depthwise->input(0) != b.expand->output(0) ||
      b.project->input(0) != b.depthwise->output(0))
    return std::nullopt;
  if (b.expand->num_inputs() > 3 && b.expand->input(3)) return std::nullopt;  // no residual before the last
  if (const ir::Value* z = b.project->num_inputs() > 3 ? b.project->input(3) : nullptr) {
    const auto& in = body.inputs();
    b.z_input = static_cast<int>(std::find(in.begin(), in.end(), z) - in.begin());
    if (b.z_input >= static_cast<int>(in.size())) return std::nullopt;
  }
  if (e->N != d->C || p->K != d->C || e->pixels != d->H * d->W || p->pixels != d->OH * d->OW) return std::nullopt;
  b.e = *e, b.p = *p, b.d = *d;
  return b;
}

// The first middle channel of thread t's slice of C among `threads`: multiples of 16 (the
// depthwise kernel's vectors), the last slice ending at C.
int64_t slice_start(int64_t C, int t, int threads) {
  if (t >= threads) return C;
  return std::min(C, (C * t / threads + 8) / 16 * 16);
}

// Floats of each thread's buffers: its expanded and depthwise slices and its partial sums.
struct Buffers {
  int64_t expanded, filtered, partial;
  int64_t floats() const { return expanded + filtered + partial; }
};

int64_t round16(int64_t n) { return (n + 15) / 16 * 16; }

Buffers buffers_of(const Block& b, int64_t slice) {
  return {round16(b.e.pixels * slice), round16(b.p.pixels * slice), round16(b.p.pixels * b.p.N)};
}

// y = p + q + b + z (b, z: or nullptr; z may be y, the residual added in place).
KILN_SIMD void add_partials(const float* p, const float* q, const float* b, const float* z, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = p[i] + q[i] + (b ? b[i] : 0.f) + (z ? z[i] : 0.f);
}

KILN_SIMD void add_partial(const float* p, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += p[i];
}

class ChannelSplitChainKernel : public Kernel {
 public:
  bool runs_in_team() const override { return true; }
  // The residual is read only where the same element of the output is then written (after the
  // first job has read all of the block's input, which may be the residual).
  bool writes_over(int input) const override { return input == b_.z_input; }

  // Slices for a team of `threads` (at least two; each slice at least one vector of channels).
  ChannelSplitChainKernel(const Block& b, int threads) : b_(b) {
    const int64_t C = b.d.C, K = b.e.K, OC = b.p.N;
    const float* we = b.expand->input(1)->constant().data<float>();
    const float* be = b.expand->num_inputs() > 2 && b.expand->input(2) ? b.expand->input(2)->constant().data<float>()
                                                                        : nullptr;
    const float* wd = b.depthwise->input(1)->constant().data<float>();
    const float* bd = b.depthwise->num_inputs() > 2 && b.depthwise->input(2)
                          ? b.depthwise->input(2)->constant().data<float>()
                          : nullptr;
    const float* wp = b.project->input(1)->constant().data<float>();
    if (b.project->num_inputs() > 2 && b.project->input(2)) {
      const float* bp = b.project->input(2)->constant().data<float>();
      bias_.assign(bp, bp + OC);
    }
    const ops::Activation dw_act = ops::activation_of(*b.depthwise);
    for (int t = 0; t < threads; ++t) {
      const int64_t c0 = slice_start(C, t, threads), c1 = slice_start(C, t + 1, threads), n = c1 - c0;
      Slice s;
      s.c0 = c0, s.c1 = c1, s.buffers = buffers_of(b, n), s.offset = total_floats_;
      total_floats_ += s.buffers.floats();
      s.expand = std::make_unique<PointwiseRows>(K, n, RowWeights(we + c0 * K), be ? be + c0 : nullptr, b.e.act, n, 1);
      DepthwiseShape ds = b.d;
      ds.C = n;
      s.depthwise = std::make_unique<DepthwiseConv>(ds, wd + c0 * ds.KH * ds.KW, bd ? bd + c0 : nullptr, dw_act);
      std::vector<float> cols(static_cast<size_t>(OC * n));  // the project's columns [c0, c1)
      for (int64_t o = 0; o < OC; ++o) std::memcpy(&cols[o * n], wp + o * C + c0, n * sizeof(float));
      s.project = std::make_unique<PointwiseRows>(n, OC, RowWeights(cols.data()), nullptr,
                                                  ops::Activation{ops::Activation::None}, OC, 1);
      slices_.push_back(std::move(s));
    }
  }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    const float* x = static_cast<const float*>(inputs[0]->raw());
    const float* z = b_.z_input >= 0 ? static_cast<const float*>(inputs[b_.z_input]->raw()) : nullptr;
    float* y = static_cast<float*>(outputs[0]->raw());
    const int T = static_cast<int>(slices_.size());
    std::vector<const float*> partials(T, nullptr);
    // The slices' buffers, one after another in the calling thread's buffer: each slice always
    // written by the same thread of the team, its lines stay in that core's cache from run to
    // run (a thread's own scratch would not do: a thread may run several slices).
    float* buf = static_cast<float*>(kiln_kernels::thread_scratch(total_floats_ * sizeof(float)));
    if (!buf) throw Error("kiln.ConvChain: out of memory for the channel slices' buffers");
    // Each thread its slice of the middle channels through the block.
    parallel_for(T, T, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) partials[t] = run_slice(slices_[t], x, buf + slices_[t].offset);
    });
    // Then each thread a share of the pixels: the partial sums added, with bias and residual,
    // and the project's activation.
    const int64_t pixels = b_.p.pixels, OC = b_.p.N;
    const float* bias = bias_.empty() ? nullptr : bias_.data();
    parallel_for(T, T, [&](int64_t t0, int64_t t1) {
      for (int64_t m = pixels * t0 / T, m1 = pixels * t1 / T; m < m1; ++m) {
        float* row = y + m * OC;
        add_partials(partials[0] + m * OC, partials[1] + m * OC, bias, z ? z + m * OC : nullptr, row, OC);
        for (int t = 2; t < T; ++t) add_partial(partials[t] + m * OC, row, OC);
        apply_activation(b_.p.act, row, OC);
      }
    });
  }

 private:
  struct Slice {
    int64_t c0 = 0, c1 = 0;
    Buffers buffers{};
    int64_t offset = 0;  // of its buffers in the run's, in floats
    std::unique_ptr<PointwiseRows> expand, project;
    std::unique_ptr<DepthwiseConv> depthwise;
  };

  // The slice through the block in `buf` (its buffers' floats): returns its partial sums of
  // the project (pixels x OC floats).
  const float* run_slice(const Slice& s, const float* x, float* buf) const {
    float *expanded = buf, *filtered = buf + s.buffers.expanded, *partial = filtered + s.buffers.filtered;
    s.expand->rows(x, 0, b_.e.pixels, expanded, nullptr, nullptr);
    s.depthwise->rows(expanded, 0, filtered, 0, b_.d.OH);
    s.project->rows(filtered, 0, b_.p.pixels, partial, nullptr, nullptr);
    return partial;
  }

  Block b_;
  int64_t total_floats_ = 0;
  std::vector<float> bias_;
  std::vector<Slice> slices_;
};

bool chain_splits_channels(const ir::Node& node, int threads) {
  if (threads < 2 || !node.attr_int("split_channels", 0) || !has_avx512() || !kernel_enabled("kiln_chain_channels"))
    return false;
  const std::optional<Block> b = block_of(node);
  if (!b || b->d.C < 16 * threads) return false;
  // Each thread's buffers within its share of the L2, as a banded chain's windows are.
  const int64_t slice = round16((b->d.C + threads - 1) / threads);
  return buffers_of(*b, slice).floats() * 4 <= l2_cache_bytes() / 2;
}

std::unique_ptr<Kernel> make_chain_channels(const ir::Node& node, int threads) {
  if (!chain_splits_channels(node, threads)) return nullptr;
  return std::make_unique<ChannelSplitChainKernel>(*block_of(node), threads);
}

}  // namespace

void add_conv_chain_channel_kernels(std::vector<KernelFactory>& table) {
  table.push_back({.domain = "kiln", .op = "ConvChain", .make = make_chain_channels, .name = "kiln_chain_channels"});
}

}  // namespace kiln::backends::cpu
