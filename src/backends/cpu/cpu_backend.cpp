// The optimized CPU backend: a table from op type to a kernel factory. Factories decline
// (return nullptr) for forms they do not handle; the reference kernels run those.
#include <omp.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "backends/backend.h"
#include "backends/cpu/conv_concat.h"
#include "backends/cpu/elementwise_program.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/reduce_spec.h"
#include "backends/cpu/simd.h"
#include "backends/cpu/winograd_conv.h"

namespace kiln::backends {

namespace {

class CpuBackend : public Backend {
 public:
  explicit CpuBackend(int threads) : threads_(threads) {}
  std::string name() const override { return "cpu"; }
  int threads() const override { return threads_; }
  std::vector<std::string> isa_features() const override {
    if (__builtin_cpu_supports("avx512f")) return {"avx512f"};
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return {"avx2", "fma"};
    return {};
  }
  bool prefers_channels_last() const override { return true; }
  bool can_fuse(const ir::Node& node) const override {
    if (cpu::elementwise_supported(node)) return true;
    auto r = cpu::reduce_spec(node);
    return r && r->n > 0;
  }
  // In a team only: there each thread multiplies the rows it has just computed, where a separate
  // elementwise pass leaves its output in the caches of whichever core wrote it; one thread finds
  // that output in its own caches anyway, and the chunks' repeated weight reads cost it about as
  // much as they save (bench/results/experiments-20261205-session29.md).
  bool takes_conv_prologue(const ir::Node& node) const override {
    cpu::DisabledKernels scope(&disabled_kernels());
    return threads() > 1 && cpu::prologue_conv_takes(node);
  }
  bool chains_gemvs(const ir::Node& first, const ir::Node& second) const override {
    cpu::DisabledKernels scope(&disabled_kernels());
    return cpu::gemv_chain_takes(first, second, threads());
  }
  bool deals_branches(const std::vector<std::vector<const ir::Node*>>& branches) const override {
    cpu::DisabledKernels scope(&disabled_kernels());
    return cpu::conv_concat_deals(branches, threads());
  }
  bool splits_chain_channels() const override {
    cpu::DisabledKernels scope(&disabled_kernels());
    return threads() > 1 && cpu::chain_channels_available();
  }
  // Both of its Attention kernels (attention.cpp) take strided operands.
  bool reads_attention_layouts() const override { return true; }
  // oneDNN's Winograd (on a CPU with AVX-512, from kOnednnWinogradMinChannels input channels)
  // runs the 3x3 stride-1 convs kiln's own Winograd does not take, where Winograd pays at all.
  // The blocked-layout pass has checked the conv's form and its channels-last input.
  bool runs_blocked(const ir::Node& node) const override {
    cpu::DisabledKernels scope(&disabled_kernels());
    if (!cpu::has_avx512() || !cpu::kernel_enabled("onednn_winograd")) return false;
    const ir::Value* x = node.num_inputs() > 0 ? node.input(0) : nullptr;
    if (!x || !x->type.is_static() || x->type.rank() != 4 || x->type.static_dims()[3] < cpu::kOnednnWinogradMinChannels)
      return false;
    if (!cpu::winograd_pays(node)) return false;
    return !cpu::kernel_enabled("kiln_winograd") || !cpu::kiln_winograd_accepts(node);
  }
  // omp_set_num_threads sets the calling thread's team size only: a run on another thread than
  // the one that made the session would otherwise get one thread per core.
  void enter_run() const override { omp_set_num_threads(std::max(1, threads_)); }
  void hold_team(const std::function<void()>& body, TeamChoice* choice, bool whole_run) const override {
    cpu::PersistentTeam* persistent = nullptr;
    if (whole_run && threads_ > 1) {
      std::call_once(persistent_once_, [this] { persistent_ = std::make_unique<cpu::PersistentTeam>(threads_); });
      persistent = persistent_.get();
    }
    cpu::hold_team(threads_, body, choice, persistent);
  }
  std::unique_ptr<Kernel> create(const ir::Node& node) const override {
    for (KernelCandidate& c : candidates(node))
      if (auto k = c.make()) return k;
    return nullptr;
  }
  std::vector<KernelCandidate> candidates(const ir::Node& node) const override {
    cpu::DisabledKernels scope(&disabled_kernels());
    std::vector<KernelCandidate> c;
    for (const auto& f : cpu::kernel_factories())
      if (f.domain == node.domain() && f.op == node.op_type() && cpu::kernel_enabled(name_of(f))) {
        plan::KernelSpec spec{.backend = name(), .impl = name_of(f), .threads = threads_};
        if (f.choose) spec.params = f.choose(node, threads_);
        c.push_back({spec, [this, &f, &node, spec] { return build(f, node, spec); }});
      }
    return c;
  }
  std::unique_ptr<Kernel> instantiate(const ir::Node& node, const plan::KernelSpec& spec) const override {
    if (spec.backend != name()) return nullptr;
    for (const auto& f : cpu::kernel_factories())
      if (f.domain == node.domain() && f.op == node.op_type() && name_of(f) == spec.impl)
        if (auto k = build(f, node, spec)) return k;
    return nullptr;
  }
  plan::KernelSpec rederive(const ir::Node& node, plan::KernelSpec spec, int threads) const override {
    for (const auto& f : cpu::kernel_factories())
      if (f.domain == node.domain() && f.op == node.op_type() && name_of(f) == spec.impl && f.choose) {
        const auto fresh = f.choose(node, threads);
        for (const std::string& p : f.thread_params)
          if (auto it = fresh.find(p); it != fresh.end()) spec.params[p] = it->second;
        break;
      }
    spec.threads = threads;
    return spec;
  }
  plan::ParamChoices param_choices(const ir::Node& node, const plan::KernelSpec& spec) const override {
    for (const auto& f : cpu::kernel_factories())
      if (f.domain == node.domain() && f.op == node.op_type() && name_of(f) == spec.impl && f.choices)
        return f.choices(node, spec.threads);
    return {};
  }
  std::vector<std::string> kernel_names() const override {
    std::vector<std::string> names;
    for (const auto& f : cpu::kernel_factories())
      if (std::find(names.begin(), names.end(), name_of(f)) == names.end()) names.push_back(name_of(f));
    return names;
  }

 private:
  static std::string name_of(const cpu::KernelFactory& f) { return f.name.empty() ? "kiln" : f.name; }
  // The kernel of factory f for spec, which names f's implementation; nullptr when it declines.
  std::unique_ptr<Kernel> build(const cpu::KernelFactory& f, const ir::Node& node, const plan::KernelSpec& spec) const {
    cpu::DisabledKernels scope(&disabled_kernels());
    std::unique_ptr<Kernel> k = f.make_spec ? f.make_spec(node, spec) : f.make(node, spec.threads);
    if (k) k->set_spec(spec);
    return k;
  }

  int threads_;
  // The team runs whose every kernel threads through parallel_for hold (cpu::PersistentTeam),
  // started by the first such run.
  mutable std::once_flag persistent_once_;
  mutable std::unique_ptr<cpu::PersistentTeam> persistent_;
};

}  // namespace

// oneDNN runs on OpenMP: its team size is the session's intra-op thread count (oversubscribed
// OpenMP teams spin and run many times slower on a busy machine).
std::unique_ptr<Backend> make_cpu_backend(int threads) {
  omp_set_num_threads(std::max(1, threads));
  return std::make_unique<CpuBackend>(threads);
}

}  // namespace kiln::backends
