// kiln.ConvChain of an inverted-residual block (1x1 expand -> depthwise -> 1x1 project, the
// project's residual optional; or with a squeeze-excitation: the depthwise output's global
// average pool -> fc1 -> fc2 scaling the project's input channels; in RegNet's blocks a grouped
// 3x3 conv of narrow groups in the depthwise conv's place) split by the block's middle channels
// instead of by rows.
// Each thread of the team computes its slice of the expanded channels for the whole image, the
// depthwise conv of those channels and the project's partial sums over them, all in its own
// buffer (a core's cache): no row is computed twice, where a split by rows recomputes the rows
// around each share's edge in the layers before the depthwise (an eighth of the expand at 14
// rows and two threads) and on a 7-row image cannot split evenly. A second job adds the partial
// sums, bias and residual a share of the pixels each, then the project's activation. With a
// squeeze-excitation each thread pools its channels and multiplies them by fc1's columns for
// them in the first job; in a job between, each adds those parts up (fc1's sums: a few dozen
// floats), computes fc2 for its own channels and then the project's partial sums scaled by them.
// What
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
#include "backends/cpu/depthwise_conv.h"
#include "backends/cpu/grouped_conv.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/pointwise_conv.h"
#include "backends/cpu/simd.h"
#include "kernels/thread_scratch.h"

namespace kiln::backends::cpu {

namespace {

// The convs of a chain's body: expand -> depthwise -> project (kiln's kernels for each:
// stride-1 1x1 convs, a depthwise conv of at most 5x5 taps), or with a squeeze-excitation
// between: the depthwise output's global average pool -> fc1 -> fc2 (1x1 convs on the pooled
// vector) scaling the project's input channels (its channel scale S).
struct Block {
  const ir::Node *expand = nullptr, *depthwise = nullptr, *project = nullptr;
  const ir::Node *fc1 = nullptr, *fc2 = nullptr;  // both or neither
  PointwiseConvShape e{}, p{};
  DepthwiseShape d{};        // the middle conv's geometry (C its channels, in and out)
  int64_t grouped = 0;       // > 0: the middle conv is grouped, this many channels a group
  ops::Activation mid_act{ops::Activation::None};
  int64_t squeezed = 0;  // fc1's outputs
  int z_input = -1;      // the chain input that is the project's residual
};

// fc: a 1x1 FusedConv of an [1, 1, 1, K] value into N channels (no residual or scale), whose
// epilogue kiln applies; its N, or 0.
int64_t squeeze_conv(const ir::Node* fc, const ir::Value* x, int64_t K) {
  if (!fc || fc->domain() != "kiln" || fc->op_type() != "FusedConv" || fc->input(0) != x) return 0;
  if (fc->num_inputs() > 3 && (fc->input(3) || (fc->num_inputs() > 4 && fc->input(4)))) return 0;
  const auto s = pointwise_conv_shape(*fc);
  if (!s || s->pixels != 1 || s->images != 1 || s->K != K || !fc->input(1)->is_constant()) return 0;
  if (fc->num_inputs() > 2 && fc->input(2) && !fc->input(2)->is_constant()) return 0;
  return s->N;
}

std::optional<Block> block_of(const ir::Node& node) {
  auto it = node.attrs.find("body");
  if (it == node.attrs.end() || !it->second.g || node.num_outputs() != 1) return std::nullopt;
  const ir::Graph& body = *it->second.g;
  const std::vector<ir::Node*> nodes = body.nodes();
  if ((nodes.size() != 3 && nodes.size() != 6) || body.outputs().size() != 1 ||
      body.outputs()[0] != nodes.back()->output(0))
    return std::nullopt;
  Block b;
  b.expand = nodes[0], b.depthwise = nodes[1], b.project = nodes.back();
  if (nodes.size() == 6) {
    const ir::Node* pool = nodes[2];
    b.fc1 = nodes[3], b.fc2 = nodes[4];
    if (pool->domain() != "kiln" || pool->op_type() != "NhwcGlobalAveragePool" || pool->num_inputs() != 1 ||
        pool->input(0) != b.depthwise->output(0))
      return std::nullopt;
    const int64_t C = b.depthwise->output(0)->type.static_dims().back();
    b.squeezed = squeeze_conv(b.fc1, pool->output(0), C);
    if (b.squeezed < 1 || squeeze_conv(b.fc2, b.fc1->output(0), b.squeezed) != C) return std::nullopt;
    if (b.project->num_inputs() < 5 || b.project->input(4) != b.fc2->output(0)) return std::nullopt;
  } else if (b.project->num_inputs() > 4 && b.project->input(4)) {
    return std::nullopt;
  }
  const auto e = pointwise_conv_shape(*b.expand), p = pointwise_conv_shape(*b.project);
  std::unique_ptr<DepthwiseShape> d = depthwise_shape(*b.depthwise);
  if (d && d->KH * d->KW <= 25) {
    b.mid_act = ops::activation_of(*b.depthwise);
  } else if (const auto g = row_conv_geometry(*b.depthwise); g && grouped_conv_takes(*g) && epilogue_of(*b.depthwise)) {
    // A grouped conv of narrow groups (RegNet's): a slice of whole vectors holds whole groups.
    d = std::make_unique<DepthwiseShape>(DepthwiseShape{g->H, g->W, g->C, g->OH, g->OW, g->KH, g->KW, g->SH, g->SW,
                                                        g->PT, g->PL});
    b.grouped = g->C / g->G;
    b.mid_act = *epilogue_of(*b.depthwise);
  } else {
    d.reset();
  }
  if (!e || !p || !d || e->images != p->images) return std::nullopt;
  if (b.expand->num_inputs() > 4 && b.expand->input(4)) return std::nullopt;  // a channel scale
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

// Floats of each thread's buffers: its expanded and depthwise slices, its partial sums, and
// with a squeeze-excitation its slice's part of fc1's sums, fc1's output (each thread its own
// copy) and its channels' means, then scales.
struct Buffers {
  int64_t expanded, filtered, partial, squeezed, hidden, scales;
  int64_t floats() const { return expanded + filtered + partial + squeezed + hidden + scales; }
};

int64_t round16(int64_t n) { return (n + 15) / 16 * 16; }

Buffers buffers_of(const Block& b, int64_t slice) {
  const bool se = b.fc1 != nullptr;
  return {round16(b.e.pixels * slice), round16(b.p.pixels * slice), round16(b.p.pixels * b.p.N),
          se ? round16(b.squeezed) : 0, se ? round16(b.squeezed) : 0, se ? round16(slice) : 0};
}

const float* constant_or_null(const ir::Node* n, int input) {
  return n->num_inputs() > input && n->input(input) ? n->input(input)->constant().data<float>() : nullptr;
}

// y = p + q + b + z (q, b, z: or nullptr; z may be y, the residual added in place).
KILN_SIMD void add_partials(const float* p, const float* q, const float* b, const float* z, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = p[i] + (q ? q[i] : 0.f) + (b ? b[i] : 0.f) + (z ? z[i] : 0.f);
}

KILN_SIMD void add_partial(const float* p, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += p[i];
}

// y += a * x (n floats).
KILN_SIMD void add_scaled(float a, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

class ChannelSplitChainKernel : public Kernel {
 public:
  bool runs_in_team() const override { return true; }
  // The residual is read only where the same element of the output is then written (after the
  // first job has read all of the block's input, which may be the residual).
  bool writes_over(int input) const override { return input == b_.z_input; }

  // A slice for each thread of the team, but at least a vector of channels each (one slice,
  // the whole block, where the middle has fewer than 32).
  ChannelSplitChainKernel(const Block& b, int team) : b_(b) {
    const int64_t C = b.d.C, K = b.e.K, OC = b.p.N;
    const int threads = static_cast<int>(std::clamp<int64_t>(C / 16, 1, team));
    const float *we = constant_or_null(b.expand, 1), *be = constant_or_null(b.expand, 2);
    const float *wd = constant_or_null(b.depthwise, 1), *bd = constant_or_null(b.depthwise, 2);
    const float* wp = constant_or_null(b.project, 1);
    if (const float* bp = constant_or_null(b.project, 2)) bias_.assign(bp, bp + OC);
    if (b.fc1) {
      fc1_act_ = *epilogue_of(*b.fc1), fc2_act_ = *epilogue_of(*b.fc2);
      if (const float* b1 = constant_or_null(b.fc1, 2)) fc1_bias_.assign(b1, b1 + b.squeezed);
      fc1_bias_.resize(static_cast<size_t>(b.squeezed), 0.f);
    }
    for (int t = 0; t < threads; ++t) {
      const int64_t c0 = slice_start(C, t, threads), c1 = slice_start(C, t + 1, threads), n = c1 - c0;
      Slice s;
      s.c0 = c0, s.c1 = c1, s.buffers = buffers_of(b, n), s.offset = total_floats_;
      total_floats_ += s.buffers.floats();
      s.expand = std::make_unique<PointwiseRows>(K, n, RowWeights(we + c0 * K), be ? be + c0 : nullptr, b.e.act, n, 1);
      DepthwiseShape ds = b.d;
      ds.C = n;
      if (b.grouped) {
        const RowConvGeometry g{ds.H, ds.W, n, ds.OH, ds.OW, n, ds.KH, ds.KW, ds.SH, ds.SW, ds.PT, ds.PL, n / b.grouped};
        s.grouped = std::make_unique<GroupedConv>(g, wd + c0 * b.grouped * ds.KH * ds.KW, bd ? bd + c0 : nullptr,
                                                  b.mid_act);
      } else {
        s.depthwise = std::make_unique<DepthwiseConv>(ds, wd + c0 * ds.KH * ds.KW, bd ? bd + c0 : nullptr, b.mid_act);
      }
      std::vector<float> cols(static_cast<size_t>(OC * n));  // the project's columns [c0, c1)
      for (int64_t o = 0; o < OC; ++o) std::memcpy(&cols[o * n], wp + o * C + c0, n * sizeof(float));
      s.project = std::make_unique<PointwiseRows>(n, OC, RowWeights(cols.data()), nullptr,
                                                  ops::Activation{ops::Activation::None}, OC, 1);
      if (b.fc1) {  // fc1's weights of channels [c0, c1), fc2's for them, both transposed
        const int64_t S = b.squeezed;
        const float* w1 = b.fc1->input(1)->constant().data<float>();
        const float* w2 = b.fc2->input(1)->constant().data<float>();
        s.fc1.resize(static_cast<size_t>(n * S));
        s.fc2.resize(static_cast<size_t>(S * n));
        for (int64_t c = 0; c < n; ++c)
          for (int64_t j = 0; j < S; ++j) s.fc1[c * S + j] = w1[j * C + c0 + c], s.fc2[j * n + c] = w2[(c0 + c) * S + j];
        s.fc2_bias.assign(static_cast<size_t>(n), 0.f);
        if (const float* b2 = constant_or_null(b.fc2, 2)) std::copy(b2 + c0, b2 + c1, s.fc2_bias.begin());
      }
      slices_.push_back(std::move(s));
    }
  }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    const int64_t in_image = b_.e.pixels * b_.e.K, out_image = b_.p.pixels * b_.p.N;
    // The slices' buffers, one after another in the calling thread's buffer: each slice always
    // written by the same thread of the team, its lines stay in that core's cache from run to
    // run (a thread's own scratch would not do: a thread may run several slices).
    float* buf = static_cast<float*>(kiln_kernels::thread_scratch(total_floats_ * sizeof(float)));
    if (!buf) throw Error("kiln.ConvChain: out of memory for the channel slices' buffers");
    for (int64_t i = 0; i < b_.e.images; ++i)
      run_image(static_cast<const float*>(inputs[0]->raw()) + i * in_image,
                b_.z_input >= 0 ? static_cast<const float*>(inputs[b_.z_input]->raw()) + i * out_image : nullptr,
                static_cast<float*>(outputs[0]->raw()) + i * out_image, buf);
  }

 private:
  void run_image(const float* x, const float* z, float* y, float* buf) const {
    const int T = static_cast<int>(slices_.size());
    // Each thread its slice of the middle channels through the block (with a squeeze-excitation,
    // up to its slice's part of fc1's sums; the project once every slice's part is there).
    parallel_for(T, T, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) run_slice(slices_[t], x, buf);
    });
    if (b_.fc1) {
      parallel_for(T, T, [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) excite_and_project(slices_[t], buf);
      });
    }
    // Then each thread a share of the pixels: the partial sums added, with bias and residual,
    // and the project's activation.
    const int64_t pixels = b_.p.pixels, OC = b_.p.N;
    const float* bias = bias_.empty() ? nullptr : bias_.data();
    parallel_for(T, T, [&](int64_t t0, int64_t t1) {
      for (int64_t m = pixels * t0 / T, m1 = pixels * t1 / T; m < m1; ++m) {
        float* row = y + m * OC;
        add_partials(slices_[0].partial(buf) + m * OC, T > 1 ? slices_[1].partial(buf) + m * OC : nullptr, bias,
                     z ? z + m * OC : nullptr, row, OC);
        for (int t = 2; t < T; ++t) add_partial(slices_[t].partial(buf) + m * OC, row, OC);
        apply_activation(b_.p.act, row, OC);
      }
    });
  }

  struct Slice {
    int64_t c0 = 0, c1 = 0;
    Buffers buffers{};
    int64_t offset = 0;  // of its buffers in the run's, in floats
    std::unique_ptr<PointwiseRows> expand, project;
    std::unique_ptr<DepthwiseConv> depthwise;
    std::unique_ptr<GroupedConv> grouped;  // instead of the depthwise conv
    // fc1's weights of the slice's channels [slice][squeezed], fc2's [squeezed][slice] (each
    // product a sum of scaled rows, which vectorizes), fc2's bias [slice].
    std::vector<float> fc1, fc2, fc2_bias;
    float* filtered(float* run) const { return run + offset + buffers.expanded; }
    float* partial(float* run) const { return filtered(run) + buffers.filtered; }
    float* squeezed(float* run) const { return partial(run) + buffers.partial; }
    float* hidden(float* run) const { return squeezed(run) + buffers.squeezed; }
    float* scales(float* run) const { return hidden(run) + buffers.hidden; }
  };

  // The slice through the block in the run's buffer `run`, up to the project's partial sums
  // (pixels x OC floats), which with a squeeze-excitation excite_and_project computes.
  void run_slice(const Slice& s, const float* x, float* run) const {
    float *expanded = run + s.offset, *filtered = s.filtered(run);
    s.expand->rows(x, 0, b_.e.pixels, expanded, nullptr, nullptr);
    if (s.grouped) s.grouped->rows(expanded, 0, filtered, 0, b_.d.OH);
    else s.depthwise->rows(expanded, 0, filtered, 0, b_.d.OH);
    if (b_.fc1) squeeze(s, run);
    else s.project->rows(filtered, 0, b_.p.pixels, s.partial(run), nullptr, nullptr);
  }

  // The slice's channel means (the global average pool; in the buffer its scales take later)
  // times fc1's columns for them: its part of fc1's sums, before bias and activation.
  void squeeze(const Slice& s, float* run) const {
    const int64_t n = s.c1 - s.c0, pixels = b_.p.pixels, S = b_.squeezed;
    const float* filtered = s.filtered(run);
    float *mean = s.scales(run), *part = s.squeezed(run);
    std::fill(mean, mean + n, 0.f);
    for (int64_t m = 0; m < pixels; ++m) add_partial(filtered + m * n, mean, n);
    const float inv = 1.f / static_cast<float>(pixels);
    std::fill(part, part + S, 0.f);
    for (int64_t c = 0; c < n; ++c) add_scaled(mean[c] * inv, s.fc1.data() + c * S, part, S);
  }

  // fc1 from every slice's part, then fc2 for this slice's channels (their scales), then the
  // project's partial sums over the slice's channels, scaled.
  void excite_and_project(const Slice& s, float* run) const {
    const int64_t S = b_.squeezed, n = s.c1 - s.c0;
    float *hidden = s.hidden(run), *scale = s.scales(run);
    std::copy(fc1_bias_.begin(), fc1_bias_.end(), hidden);
    for (const Slice& other : slices_) add_partial(other.squeezed(run), hidden, S);
    apply_activation(fc1_act_, hidden, S);
    std::copy(s.fc2_bias.begin(), s.fc2_bias.end(), scale);
    for (int64_t j = 0; j < S; ++j) add_scaled(hidden[j], s.fc2.data() + j * n, scale, n);
    apply_activation(fc2_act_, scale, n);
    s.project->rows(s.filtered(run), 0, b_.p.pixels, s.partial(run), nullptr, scale);
  }

  Block b_;
  int64_t total_floats_ = 0;
  std::vector<float> bias_, fc1_bias_;
  ops::Activation fc1_act_{ops::Activation::None}, fc2_act_{ops::Activation::None};
  std::vector<Slice> slices_;
};

// Every chain the lowering marked (it weighs the row split against this one for the image's
// size: lower/fuse_conv_chain.h), for a team.
bool chain_splits_channels(const ir::Node& node, int threads) {
  return threads >= 2 && node.attr_int("split_channels", 0) && chain_channels_available() && block_of(node);
}

std::unique_ptr<Kernel> make_chain_channels(const ir::Node& node, int threads) {
  if (!chain_splits_channels(node, threads)) return nullptr;
  return std::make_unique<ChannelSplitChainKernel>(*block_of(node), threads);
}

}  // namespace

bool chain_channels_available() { return has_avx512() && kernel_enabled("kiln_chain_channels"); }

void add_conv_chain_channel_kernels(std::vector<KernelFactory>& table) {
  table.push_back({.domain = "kiln", .op = "ConvChain", .make = make_chain_channels, .name = "kiln_chain_channels"});
}

}  // namespace kiln::backends::cpu
