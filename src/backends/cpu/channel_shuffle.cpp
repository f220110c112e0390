// kiln.ChannelShuffle (src/ops/kiln_shuffle.cpp) for 4-byte elements: each output channel's
// source (input, channel) is tabled at creation. With the channel axis innermost (NHWC) a
// pixel's output channels are gathered from the inputs; ShuffleNet's two-way shuffle of two
// equal halves is an interleave of two contiguous runs, which compiles to vector permutes.
// Otherwise each output channel is a contiguous block, copied whole.
#include <cstring>
#include <memory>

#include "backends/cpu/kernels.h"
#include "backends/cpu/node_args.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/simd.h"

namespace kiln::backends::cpu {

namespace {

// y[2i] = a[i], y[2i+1] = b[i]
KILN_SIMD void interleave(const uint32_t* __restrict a, const uint32_t* __restrict b, uint32_t* __restrict y,
                          int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    y[2 * i] = a[i];
    y[2 * i + 1] = b[i];
  }
}

class ChannelShuffleKernel : public Kernel {
 public:
  bool runs_in_team() const override { return true; }
  struct Out {
    std::vector<int> input;       // per output channel
    std::vector<int64_t> channel;
    int64_t width = 0;
    bool pairs = false;           // alternates input[0], input[1] with consecutive channels
  };
  ChannelShuffleKernel(std::vector<Out> outs, std::vector<int64_t> in_channels, int64_t outer, int64_t inner,
                       int threads)
      : outs_(std::move(outs)), in_channels_(std::move(in_channels)), outer_(outer), inner_(inner),
        threads_(threads) {}

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    std::vector<const uint32_t*> x;
    for (const Tensor* t : inputs) x.push_back(static_cast<const uint32_t*>(t->raw()));
    int64_t total = 0;
    for (const Out& o : outs_) total += o.width;
    const int threads = outer_ * total * inner_ >= kParallelMinElements ? threads_ : 1;
    parallel_for(outer_, threads, [&](int64_t b, int64_t e) {
      for (size_t m = 0; m < outs_.size(); ++m) {
        const Out& o = outs_[m];
        uint32_t* y = static_cast<uint32_t*>(outputs[m]->raw());
        for (int64_t p = b; p < e; ++p) {
          uint32_t* yp = y + p * o.width * inner_;
          if (inner_ == 1 && o.pairs) {
            interleave(x[o.input[0]] + p * in_channels_[o.input[0]] + o.channel[0],
                       x[o.input[1]] + p * in_channels_[o.input[1]] + o.channel[1], yp, o.width / 2);
            continue;
          }
          for (int64_t j = 0; j < o.width; ++j) {
            const uint32_t* src = x[o.input[j]] + (p * in_channels_[o.input[j]] + o.channel[j]) * inner_;
            if (inner_ == 1) yp[j] = *src;
            else std::memcpy(yp + j * inner_, src, static_cast<size_t>(inner_) * sizeof(uint32_t));
          }
        }
      }
    });
  }

 private:
  std::vector<Out> outs_;
  std::vector<int64_t> in_channels_;
  int64_t outer_, inner_;
  int threads_;
};

std::unique_ptr<Kernel> make_channel_shuffle(const ir::Node& node, int threads) {
  if (node.num_inputs() < 1 || node.num_outputs() < 1) return nullptr;
  const ir::Value* x0 = node.input(0);
  if (plain_elem_size(x0) != 4) return nullptr;
  const auto d0 = x0->type.static_dims();
  const int64_t rank = static_cast<int64_t>(d0.size());
  int64_t axis = node.attr_int("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return nullptr;
  std::vector<int64_t> in_channels;
  std::vector<std::pair<int, int64_t>> source;
  for (int i = 0; i < node.num_inputs(); ++i) {
    const ir::Value* x = node.input(i);
    if (plain_elem_size(x) != 4 || x->type.dtype != x0->type.dtype) return nullptr;
    auto d = x->type.static_dims();
    if (static_cast<int64_t>(d.size()) != rank) return nullptr;
    for (int64_t k = 0; k < rank; ++k)
      if (k != axis && d[k] != d0[k]) return nullptr;
    in_channels.push_back(d[axis]);
    for (int64_t c = 0; c < d[axis]; ++c) source.push_back({i, c});
  }
  const int64_t channels = static_cast<int64_t>(source.size()), group = node.attr_int("group", 1);
  const auto ranges = node.attr_ints("ranges");
  if (group < 1 || channels % group || ranges.size() != 2 * static_cast<size_t>(node.num_outputs())) return nullptr;
  std::vector<ChannelShuffleKernel::Out> outs;
  for (int m = 0; m < node.num_outputs(); ++m) {
    ChannelShuffleKernel::Out o;
    const int64_t begin = ranges[2 * m], end = ranges[2 * m + 1];
    if (begin < 0 || begin > end || end > channels || plain_elem_size(node.output(m)) != 4) return nullptr;
    for (int64_t s = begin; s < end; ++s) {
      const auto [in, c] = source[(s % group) * (channels / group) + s / group];
      o.input.push_back(in);
      o.channel.push_back(c);
    }
    o.width = end - begin;
    o.pairs = o.width >= 2 && o.width % 2 == 0 && o.input[0] != o.input[1];
    for (int64_t j = 2; o.pairs && j < o.width; ++j)
      o.pairs = o.input[j] == o.input[j % 2] && o.channel[j] == o.channel[j % 2] + j / 2;
    outs.push_back(std::move(o));
  }
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < axis; ++k) outer *= d0[k];
  for (int64_t k = axis + 1; k < rank; ++k) inner *= d0[k];
  return std::make_unique<ChannelShuffleKernel>(std::move(outs), std::move(in_channels), outer, inner, threads);
}

}  // namespace

void add_channel_shuffle_kernels(std::vector<KernelFactory>& table) {
  table.push_back({"kiln", "ChannelShuffle", make_channel_shuffle});
}

}  // namespace kiln::backends::cpu
