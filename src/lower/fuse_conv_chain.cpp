#include "lower/fuse_conv_chain.h"

#include <algorithm>
#include <unordered_set>

#include "lower/fuse_conv_prologue.h"
#include "lower/outline.h"
#include "ir/graph_util.h"
#include "ops/core/conv_geometry.h"

namespace kiln::lower {

namespace {

bool static_float4(const ir::Value* v) {
  return v && v->type.is_tensor() && v->type.rank_known && v->type.rank() == 4 && v->type.is_static() &&
         v->type.dtype == DType::Float;
}

// A FusedConv the banded kernel runs: channels-last and plain NHWC on every end, constant
// weights and bias, explicit pads, no dilation. Not the 3x3 stride-1 dense convs, which run a
// Winograd form on the whole tensor, nor grouped ones (below) unless `grouped` (the middle of a
// block split by channels).
bool member(const ir::Node* n, bool grouped_ok = false) {
  if (!n || n->domain() != "kiln" || n->op_type() != "FusedConv" || !n->attr_int("channels_last", 0)) return false;
  if (n->num_inputs() < 2 || n->num_outputs() != 1 || !static_float4(n->output(0))) return false;
  if (n->num_inputs() > 4 && n->input(4)) return false;  // a channel scale S
  if (n->attr_int("x_blocked", 0) || n->attr_int("y_blocked", 0) || n->attr_int("z_blocked", 0)) return false;
  if (!n->input(0) || n->input(0)->is_constant() || !static_float4(n->input(0))) return false;
  if (!n->input(1) || !n->input(1)->is_constant() || (n->num_inputs() > 2 && n->input(2) && !n->input(2)->is_constant()))
    return false;
  if (n->num_inputs() > 3 && n->input(3) && (n->input(3)->is_constant() || !static_float4(n->input(3)))) return false;
  if (ops::auto_pad_of(*n) != ops::AutoPad::NotSet) return false;
  if (n->attr_ints("dilations", {1, 1}) != std::vector<int64_t>{1, 1}) return false;
  const auto wd = n->input(1)->type.static_dims();
  if (wd.size() != 4) return false;
  const bool winograd = n->attr_int("group", 1) == 1 && wd[2] == 3 && wd[3] == 3 &&
                        n->attr_ints("strides", {1, 1}) == std::vector<int64_t>{1, 1};
  // Grouped convs other than depthwise have no kiln band kernel: on a band of plain NHWC rows
  // oneDNN runs them with few channels per group in each vector, at a fraction of the speed it
  // reaches on the whole tensor in its own layout, so they end a chain.
  const int64_t group = n->attr_int("group", 1);
  const bool grouped = group > 1 && !(wd[1] == 1 && group == wd[0]);
  return !winograd && (!grouped || grouped_ok);
}

// One filter per channel.
bool depthwise(const ir::Node* n) {
  const auto wd = n->input(1)->type.static_dims();
  return wd[1] == 1 && n->attr_int("group", 1) == wd[0] && wd[0] > 1;
}

// The middle conv of a block split by channels: each output channel reads only the input
// channels of its own slice. A depthwise conv, or a grouped one of narrow groups as kiln's
// grouped kernel takes them (3x3, stride 1 or 2, 2-16 channels a group, as many out as in).
bool channel_local(const ir::Node* n) {
  if (depthwise(n)) return true;
  const auto wd = n->input(1)->type.static_dims();
  const int64_t group = n->attr_int("group", 1);
  const auto st = n->attr_ints("strides", {1, 1});
  const int64_t cg = wd[1];
  return group > 1 && wd[0] == group * cg && (cg == 2 || cg == 4 || cg == 8 || cg == 16) && wd[2] == 3 && wd[3] == 3 &&
         st.size() == 2 && (st[1] == 1 || st[1] == 2);
}

// A channels-last max or average pool the banded kernel runs after a conv (squeezenet's and
// resnet18's stem: a 3 MB conv output that only the pool reads).
bool pool_member(const ir::Node* n) {
  if (!n || n->domain() != "kiln" || (n->op_type() != "NhwcMaxPool" && n->op_type() != "NhwcAveragePool")) return false;
  if (n->num_inputs() != 1 || n->num_outputs() != 1 || !static_float4(n->input(0)) || !static_float4(n->output(0)))
    return false;
  if (n->input(0)->is_constant() || ops::auto_pad_of(*n) != ops::AutoPad::NotSet) return false;
  if (n->attr_ints("kernel_shape").size() != 2 || n->attr_ints("dilations", {1, 1}) != std::vector<int64_t>{1, 1})
    return false;
  return n->attr_ints("strides", {1, 1}).size() == 2 && n->attr_ints("pads", {0, 0, 0, 0}).size() == 4;
}

int64_t bytes_of(const ir::Value* v) {
  int64_t bytes = 4;
  for (int64_t d : v->type.static_dims()) bytes *= d;
  return bytes;
}

// A 1x1 conv of stride 1 without pads.
bool pointwise(const ir::Node* n) {
  const auto wd = n->input(1)->type.static_dims();
  return n->attr_int("group", 1) == 1 && wd[2] == 1 && wd[3] == 1 &&
         n->attr_ints("strides", {1, 1}) == std::vector<int64_t>{1, 1} &&
         n->attr_ints("pads", {0, 0, 0, 0}) == std::vector<int64_t>{0, 0, 0, 0};
}

// A dense conv of 2 to 9 taps on at most 8 input channels (a model's stem, on its image).
bool stem(const ir::Node* n) {
  const auto wd = n->input(1)->type.static_dims();
  return n->attr_int("group", 1) == 1 && wd[1] <= 8 && wd[2] * wd[3] > 1 && wd[2] * wd[3] <= 9;
}

// A layer of few multiply-adds per element it reads or writes, which the banded kernel runs on
// kiln's own row kernels: a pool or depthwise conv of at most 3x3 taps, a 1x1 stride-1 conv, a
// stem. A tensor between two such layers is worth keeping in bands even where it fits the L2,
// its trip through the cache being a real part of their time. Not a dense conv of more taps or
// channels (a 1x7, a 3x3 stride-2 reduction): its multiply-adds hide that trip, and in a chain
// it runs as a oneDNN primitive on plain rows, slower than alone.
bool light_layer(const ir::Node* c) {
  if (pool_member(c)) {
    const auto k = c->attr_ints("kernel_shape");
    return k[0] * k[1] <= 9;
  }
  const auto wd = c->input(1)->type.static_dims();
  return (depthwise(c) && wd[2] * wd[3] <= 9) || pointwise(c) || stem(c);
}

// The conv or pool after `n` in a chain: the only reader of n's output, reading it as its X,
// when that output is big enough to be worth keeping in bands (`light_min_bytes` between two
// light layers).
ir::Node* next_link(const ir::Graph& g, const ir::Node* n, int64_t min_bytes, int64_t light_min_bytes, bool pools) {
  const ir::Value* y = n->output(0);
  if (y->uses().size() != 1 || ir::is_graph_output(g, y)) return nullptr;
  const ir::Use& u = y->uses()[0];
  if (u.input_index != 0 || !(member(u.node) || (pools && pool_member(u.node)))) return nullptr;
  const int64_t min = light_layer(n) && light_layer(u.node) ? std::min(min_bytes, light_min_bytes) : min_bytes;
  return bytes_of(y) >= min ? u.node : nullptr;
}

// The global average pool of `y`, channels-last, if one reads it.
ir::Node* pool_of(const ir::Value* y) {
  for (const ir::Use& u : y->uses())
    if (u.node->domain() == "kiln" && u.node->op_type() == "NhwcGlobalAveragePool" && u.input_index == 0 &&
        u.node->num_outputs() == 1 && static_float4(u.node->output(0)))
      return u.node;
  return nullptr;
}

// The Transpose NCHW -> NHWC that only `n` reads, when n is a conv on few input channels and of
// at most 3x3 taps (the stem on the model's input image, whose kernel then reads the NCHW
// planes as they are): it joins the chain in front, so the transposed image is never written.
// Not for larger kernels: resnet18's 7x7 stem read planar measured slower than the Transpose in
// front (`--pair-disable conv_chain_input` measures it).
ir::Node* transpose_into(const ir::Graph& g, const ir::Node* n) {
  const ir::Value* x = n->input(0);
  ir::Node* t = x->producer();
  if (!t || !t->domain().empty() || t->op_type() != "Transpose" || t->num_inputs() != 1 || !static_float4(t->input(0)))
    return nullptr;
  if (t->attr_ints("perm") != std::vector<int64_t>{0, 2, 3, 1} || x->uses().size() != 1 || ir::is_graph_output(g, x))
    return nullptr;
  return stem(n) ? t : nullptr;
}

// How evenly `threads` share a chain's work, as the kernel splits it (src/kernels/chain_schedule.h,
// which this layer does not include: out_rows * t / threads): each thread computes its
// share of the last output's rows and, in every layer before, the rows those read, so the rows
// around a share's edges are computed by both neighbours (a 7x1 conv's three on each side). The
// ideal share (all the layers' multiply-adds over the threads) over the largest.
double chain_share_efficiency(const std::vector<ir::Node*>& chain, int threads) {
  struct Rows {
    int64_t out, in, kernel, stride, pad;
    double row_cost;  // multiply-adds (a pool's window reads) per output row
  };
  std::vector<Rows> layers;
  double total = 0;
  for (const ir::Node* n : chain) {
    const auto xd = n->input(0)->type.static_dims(), yd = n->output(0)->type.static_dims();
    const auto strides = n->attr_ints("strides", {1, 1}), pads = n->attr_ints("pads", {0, 0, 0, 0});
    Rows r{yd[1], xd[1], 1, strides[0], pads[0], 0};
    if (pool_member(n)) {
      const auto k = n->attr_ints("kernel_shape");
      r.kernel = k[0];
      r.row_cost = static_cast<double>(yd[2]) * yd[3] * k[0] * k[1];
    } else {
      const auto wd = n->input(1)->type.static_dims();
      r.kernel = wd[2];
      r.row_cost = static_cast<double>(yd[2]) * yd[3] * wd[1] * wd[2] * wd[3];
    }
    total += r.out * r.row_cost;
    layers.push_back(r);
  }
  double largest = 0;
  const int64_t rows = layers.back().out;
  for (int t = 0; t < threads; ++t) {
    int64_t r0 = rows * t / threads, r1 = rows * (t + 1) / threads;
    double work = 0;
    for (auto it = layers.rbegin(); it != layers.rend() && r0 < r1; ++it) {
      work += static_cast<double>(r1 - r0) * it->row_cost;
      const int64_t a = r0 * it->stride - it->pad, b = (r1 - 1) * it->stride - it->pad + it->kernel;
      r0 = std::max<int64_t>(a, 0);
      r1 = std::min(b, it->in);
    }
    largest = std::max(largest, work);
  }
  return largest > 0 ? total / threads / largest : 1.0;
}

// An inverted-residual block: a 1x1 conv (pointwise), a depthwise conv, a 1x1 conv, the last
// one's residual optional, no global pool after it.

bool inverted_residual(const std::vector<ir::Node*>& chain) {
  if (chain.size() != 3 || pool_member(chain[1]) || pool_member(chain[2]) || pool_of(chain[2]->output(0))) return false;
  return pointwise(chain[0]) && depthwise(chain[1]) && pointwise(chain[2]) && !(chain[0]->num_inputs() > 3 && chain[0]->input(3));
}

// How evenly `threads` share an inverted-residual block split by its middle channels
// (backends/cpu/conv_chain_channels.cpp), as chain_share_efficiency for the row split: each
// thread's share of the multiply-adds is even, but it reads the other threads' part of the
// block's input (K channels a pixel) and of their partial sums for its pixels (OC channels),
// each float costing kCrossCoreMacsPerFloat multiply-adds.
double channel_share_efficiency(const std::vector<ir::Node*>& chain, int threads) {
  const int64_t K = chain[0]->input(1)->type.static_dims()[1], C = chain[0]->input(1)->type.static_dims()[0];
  const auto dwd = chain[1]->input(1)->type.static_dims();
  // The middle conv's multiply-adds per channel and pixel: its taps, times a group's channels.
  const int64_t OC = chain[2]->input(1)->type.static_dims()[0], taps = dwd[1] * dwd[2] * dwd[3];
  // Per pixel, over a thread's share of the multiply-adds (the depthwise conv's pixels taken as
  // the block's input's: an upper bound of its share where it has a stride).
  const double exchanged = static_cast<double>(threads - 1) * static_cast<double>(K + OC);
  const double macs = static_cast<double>(C) * static_cast<double>(K + OC + taps);
  return 1.0 / (1.0 + kCrossCoreMacsPerFloat * exchanged / macs);
}

// The only reader of v, as input `index` of a kiln `op`; null if v has another reader or is an
// output of the graph.
ir::Node* sole_reader(const ir::Graph& g, const ir::Value* v, const char* op, int index) {
  if (v->uses().size() != 1 || ir::is_graph_output(g, v)) return nullptr;
  const ir::Use& u = v->uses()[0];
  return u.input_index == index && u.node->domain() == "kiln" && u.node->op_type() == op ? u.node : nullptr;
}

// A 1x1 FusedConv of a pooled vector: constant weights, no residual or scale.
bool squeeze_conv(const ir::Node* n) {
  if (!n || n->num_inputs() < 2 || n->num_outputs() != 1 || !n->input(1)->is_constant() || !static_float4(n->output(0)))
    return false;
  if (n->num_inputs() > 2 && n->input(2) && !n->input(2)->is_constant()) return false;
  if (n->num_inputs() > 3 && (n->input(3) || (n->num_inputs() > 4 && n->input(4)))) return false;
  const auto wd = n->input(1)->type.static_dims();
  return wd.size() == 4 && wd[2] == 1 && wd[3] == 1 && n->attr_int("group", 1) == 1;
}

// An inverted-residual block with a squeeze-excitation (efficientnet's, mobilenet_v3's), as
// [expand, depthwise, pool, fc1, fc2, project]: the depthwise output's global average pool ->
// fc1 -> fc2 gives the channel scale S of the project, which also reads the depthwise output.
// Empty where `e` does not start one.
std::vector<ir::Node*> squeeze_excitation_block(const ir::Graph& g, ir::Node* e) {
  if (!member(e) || !pointwise(e) || (e->num_inputs() > 3 && e->input(3))) return {};
  ir::Node* d = sole_reader(g, e->output(0), "FusedConv", 0);
  if (!member(d, /*grouped_ok=*/true) || !channel_local(d)) return {};
  const ir::Value* y = d->output(0);
  if (y->uses().size() != 2 || ir::is_graph_output(g, y)) return {};
  ir::Node *pool = nullptr, *q = nullptr;
  for (const ir::Use& u : y->uses()) {
    if (u.input_index != 0 || u.node->domain() != "kiln") return {};
    if (u.node->op_type() == "NhwcGlobalAveragePool") pool = u.node;
    else if (u.node->op_type() == "FusedConv") q = u.node;
  }
  if (!pool || !q || !static_float4(pool->output(0))) return {};
  ir::Node* fc1 = sole_reader(g, pool->output(0), "FusedConv", 0);
  ir::Node* fc2 = fc1 ? sole_reader(g, fc1->output(0), "FusedConv", 0) : nullptr;
  if (!squeeze_conv(fc1) || !squeeze_conv(fc2) || sole_reader(g, fc2->output(0), "FusedConv", 4) != q) return {};
  // The project as a chain member but for its scale.
  if (!q->attr_int("channels_last", 0) || q->num_outputs() != 1 || !static_float4(q->output(0)) ||
      !q->input(1)->is_constant() || (q->input(2) && !q->input(2)->is_constant()) ||
      (q->input(3) && (q->input(3)->is_constant() || !static_float4(q->input(3)))) ||
      q->attr_int("x_blocked", 0) || q->attr_int("y_blocked", 0) || q->attr_int("z_blocked", 0) || !pointwise(q))
    return {};
  return {e, d, pool, fc1, fc2, q};
}

}  // namespace

int fuse_conv_chains(ir::Graph& g, int64_t min_bytes, int64_t light_min_bytes, bool pools, int threads,
                     bool input_transpose, bool channels, const std::function<bool(const ir::Node&)>& takes_prologue) {
  const bool split = channels && threads > 1;
  // A conv that will compute its elementwise input itself (fuse_conv_prologue) starts no chain:
  // the prologue keeps a whole tensor (DenseNet's BatchNorm + ReLU before a transition's conv)
  // out of memory, where a chain would leave it to a separate pass.
  auto keeps_prologue = [&](const ir::Node* n) {
    return takes_prologue && conv_prologue_of(g, n) && takes_prologue(*n);
  };
  std::vector<std::vector<ir::Node*>> chains;
  std::unordered_set<const ir::Node*> taken, split_channels;
  // Squeeze-excitation blocks first: split by channels their threads meet three times (the
  // squeeze, the project, the partial sums), where as separate ops they meet at each of six.
  if (split)
    for (ir::Node* n : g.nodes()) {
      if (taken.count(n) || keeps_prologue(n)) continue;
      std::vector<ir::Node*> block = squeeze_excitation_block(g, n);
      if (block.empty()) continue;
      const std::vector<ir::Node*> convs{block[0], block[1], block[5]};
      if (std::any_of(block.begin(), block.end(), [&](const ir::Node* m) { return taken.count(m) > 0; }) ||
          channel_share_efficiency(convs, threads) < 0.9)
        continue;
      taken.insert(block.begin(), block.end());
      split_channels.insert(block.front());
      chains.push_back(std::move(block));
    }
  for (ir::Node* n : g.nodes()) {  // topological order: a chain is met at its first conv
    if (taken.count(n) || !member(n) || keeps_prologue(n)) continue;  // (a pool joins after a conv, never first)
    std::vector<ir::Node*> chain{n};
    for (ir::Node* next; (next = next_link(g, chain.back(), min_bytes, light_min_bytes, pools)) && !taken.count(next);)
      chain.push_back(next);
    // With a team, an inverted-residual block is one chain whatever its links' size: split by
    // its channels, its threads then meet once (for the partial sums), not after every conv.
    if (split && chain.size() < 3) {
      std::vector<ir::Node*> block{n};
      while (block.size() < 3)
        if (ir::Node* next = next_link(g, block.back(), 0, 0, false); next && !taken.count(next)) block.push_back(next);
        else break;
      if (inverted_residual(block) && channel_share_efficiency(block, threads) > chain_share_efficiency(block, threads))
        chain = block;
    }
    // A global average pool of the last output joins (efficientnet's squeeze-excitation): the
    // kernel sums each band while it is in cache instead of reading the tensor again. Then one
    // conv with a big output is a chain too.
    ir::Node* pool = pool_of(chain.back()->output(0));
    // A single depthwise conv of at most 5x5 taps (efficientnet's, before their squeeze) with
    // its pool from `light_min_bytes`: its rows are summed while in cache, where a separate
    // pool reads them again.
    const auto wd = n->input(1)->type.static_dims();
    const int64_t pool_min = depthwise(n) && wd[2] * wd[3] <= 25 ? std::min(min_bytes, light_min_bytes) : min_bytes;
    if (chain.size() < 2 && !(pool && bytes_of(n->output(0)) >= pool_min)) continue;
    // The kernel splits the last output's rows between the threads; where the shares are
    // uneven (7 rows: 4 and 3) or overlap much in the layers before (inception's 7x1 convs on
    // 17 rows), separate convs, which split pixels, keep both cores busier.
    const double rows = threads > 1 ? chain_share_efficiency(chain, threads) : 1.0;
    const double by_channel = split && inverted_residual(chain) ? channel_share_efficiency(chain, threads) : 0.0;
    const bool by_channels = by_channel > rows;
    if (std::max(rows, by_channel) < 0.9) continue;
    taken.insert(chain.begin(), chain.end());
    if (by_channels) split_channels.insert(chain.front());
    if (pool) chain.push_back(pool);
    if (ir::Node* t = input_transpose ? transpose_into(g, n) : nullptr) chain.insert(chain.begin(), t);
    chains.push_back(std::move(chain));
  }
  for (const std::vector<ir::Node*>& c : chains) {
    const bool pooled = c.back()->op_type() == "NhwcGlobalAveragePool";
    std::vector<ir::Value*> results{c[c.size() - (pooled ? 2 : 1)]->output(0)};
    if (pooled) results.push_back(c.back()->output(0));
    const ir::Node* first_conv = c.front()->op_type() == "Transpose" ? c[1] : c.front();
    ir::Node* chain = outline(g, c, results, "ConvChain", "conv_chain_" + first_conv->name());
    if (split_channels.count(c.front())) chain->attrs["split_channels"] = ir::Attribute::of_int(1);
  }
  if (!chains.empty()) g.topological_sort();
  return static_cast<int>(chains.size());
}

std::unique_ptr<passes::Pass> make_conv_chain_pass(int threads, bool input_transpose, bool channels,
                                                   std::function<bool(const ir::Node&)> takes_prologue, int* chains) {
  return std::make_unique<passes::FunctionPass>("conv_chain", [=](ir::Graph& g) {
    *chains = fuse_conv_chains(g, kConvChainMinBytes, kConvChainLightMinBytes, /*pools=*/true, threads, input_transpose,
                               channels, takes_prologue);
    return *chains > 0;
  });
}

}  // namespace kiln::lower
