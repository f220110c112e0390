// kiln.GemvChain (src/lower/fuse_gemv_chain.cpp): a one-row product whose output only a small
// one-row product reads (an MLP's last layers: 512 -> 512 -> 10), as one job of the team. Each
// thread computes its blocks of the first product's outputs (bias and activation included) and
// at once the second product's partial sums over those outputs, which are its inputs (the
// second split by its inputs, not its outputs); the calling thread then adds the partials,
// the bias and the activation. The threads meet once, where as two kernels they meet after the
// first, and the second, too small to split (gemv_threads), runs on one thread meanwhile.
#include <algorithm>
#include <memory>
#include <optional>
#include <vector>

#include "backends/cpu/activation_apply.h"
#include "backends/cpu/gemv_form.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/packed_gemv.h"
#include "backends/cpu/parallel.h"
#include "kernels/thread_scratch.h"

namespace kiln::backends::cpu {

namespace {

constexpr int64_t kBlock = PackedGemv::kBlock;

// The two products of a chain's body, in order; nullopt when the body is not that.
std::optional<std::pair<GemvForm, GemvForm>> chain_forms(const ir::Node& node) {
  auto it = node.attrs.find("body");
  if (it == node.attrs.end() || !it->second.g || node.num_outputs() != 1) return std::nullopt;
  const std::vector<ir::Node*> nodes = it->second.g->nodes();
  if (nodes.size() != 2 || nodes[1]->input(0) != nodes[0]->output(0)) return std::nullopt;
  std::optional<GemvForm> first = gemv_form(*nodes[0]), second = gemv_form(*nodes[1]);
  if (!first || !second || second->k != first->n) return std::nullopt;
  return std::make_pair(std::move(*first), std::move(*second));
}

class GemvChainKernel : public Kernel {
 public:
  bool runs_in_team() const override { return true; }
  GemvChainKernel(const GemvForm& first, const GemvForm& second, int threads)
      : w1_(first.w, first.k_major, first.alpha, first.n, first.k, "kiln_gemv/blocks"),
        w2_(second.w, second.k_major, second.alpha, second.n, second.k, "kiln_gemv/blocks"),
        b1_(first.bias), b2_(second.bias), act1_(first.act), act2_(second.act),
        team_(static_cast<int>(std::clamp<int64_t>(threads, 1, w1_.blocks()))) {}

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    const float* x = inputs[0]->data<float>();
    float* y = outputs[0]->data<float>();
    // The first product's outputs, then each thread's partial sums of the second (kBlock floats
    // each, a cache line apart), in the caller's scratch: the workers write their parts of it.
    const int64_t n1 = w1_.n();
    const int64_t h_floats = (n1 + 15) / 16 * 16;
    float* h = static_cast<float*>(kiln_kernels::thread_scratch(static_cast<size_t>(h_floats + team_ * kBlock) * sizeof(float)));
    float* partials = h + h_floats;
    const int64_t blocks = w1_.blocks();
    parallel_for(team_, team_, [&](int64_t t0, int64_t t1) {
      alignas(64) float acc[kBlock];
      for (int64_t t = t0; t < t1; ++t) {
        float* p = partials + t * kBlock;
        std::fill(p, p + kBlock, 0.f);
        for (int64_t blk = blocks * t / team_; blk < blocks * (t + 1) / team_; ++blk) {
          const int64_t k0 = blk * kBlock, valid = w1_.block_outputs(blk);
          w1_.block(blk, x, 0, w1_.k(), acc);
          for (int64_t i = 0; i < valid; ++i) h[k0 + i] = acc[i] + (b1_.empty() ? 0.f : b1_[k0 + i]);
          apply_activation(act1_, h + k0, valid);
          w2_.block(0, h, k0, k0 + valid, acc);
          for (int64_t i = 0; i < w2_.n(); ++i) p[i] += acc[i];
        }
      }
    });
    const int64_t n2 = w2_.n();
    for (int64_t i = 0; i < n2; ++i) {
      float s = b2_.empty() ? 0.f : b2_[i];
      for (int t = 0; t < team_; ++t) s += partials[t * kBlock + i];
      y[i] = s;
    }
    apply_activation(act2_, y, n2);
  }

 private:
  PackedGemv w1_, w2_;
  std::vector<float> b1_, b2_;
  ops::Activation act1_, act2_;
  int team_;
};

std::unique_ptr<Kernel> make_gemv_chain(const ir::Node& node, int threads) {
  if (!kernel_enabled("kiln_gemv_chain")) return nullptr;
  const auto forms = chain_forms(node);
  if (!forms || forms->second.n > kBlock) return nullptr;
  return std::make_unique<GemvChainKernel>(forms->first, forms->second, threads);
}

}  // namespace

bool gemv_chain_takes(const ir::Node& first, const ir::Node& second, int threads) {
  if (threads < 2 || !kernel_enabled("kiln_gemv_chain")) return false;
  const std::optional<GemvForm> a = gemv_form(first), b = gemv_form(second);
  if (!a || !b || b->k != a->n || b->n > kBlock) return false;
  // The first product splits across the team (gemv_threads, a block of outputs each at least);
  // the second, alone, would run on one thread.
  const kiln_kernels::GemvLayout la{a->n, a->k}, lb{b->n, b->k};
  return kiln_kernels::gemv_threads(la, threads) > 1 && la.blocks() >= threads && kiln_kernels::gemv_threads(lb, threads) == 1;
}

void add_gemv_chain_kernels(std::vector<KernelFactory>& table) {
  table.push_back({.domain = "kiln", .op = "GemvChain", .make = make_gemv_chain, .name = "kiln_gemv_chain"});
}

}  // namespace kiln::backends::cpu
