// The optimized CPU backend: a table from op type to a kernel factory. Factories decline
// (return nullptr) for forms they do not handle; the reference kernels run those.
#include <omp.h>

#include <algorithm>
#include <functional>
#include <map>

#include "backends/backend.h"
#include "backends/cpu/elementwise_program.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/reduce_spec.h"

namespace kiln::backends {

namespace {

class CpuBackend : public Backend {
 public:
  explicit CpuBackend(int threads) : threads_(threads) {}
  std::string name() const override { return "cpu"; }
  int threads() const override { return threads_; }
  bool prefers_channels_last() const override { return true; }
  bool can_fuse(const ir::Node& node) const override {
    if (cpu::elementwise_supported(node)) return true;
    auto r = cpu::reduce_spec(node);
    return r && r->n > 0;
  }
  // omp_set_num_threads sets the calling thread's team size only: a run on another thread than
  // the one that made the session would otherwise get one thread per core.
  void enter_run() const override { omp_set_num_threads(std::max(1, threads_)); }
  void hold_team(const std::function<void()>& body) const override { cpu::hold_team(threads_, body); }
  std::unique_ptr<Kernel> create(const ir::Node& node) const override {
    cpu::DisabledKernels scope(&disabled_kernels());
    for (const auto& f : cpu::kernel_factories())
      if (f.domain == node.domain() && f.op == node.op_type() && cpu::kernel_enabled(name_of(f)))
        if (auto k = f.make(node, threads_)) return k;
    return nullptr;
  }
  std::vector<KernelCandidate> candidates(const ir::Node& node) const override {
    cpu::DisabledKernels scope(&disabled_kernels());
    std::vector<KernelCandidate> c;
    for (const auto& f : cpu::kernel_factories())
      if (f.domain == node.domain() && f.op == node.op_type() && cpu::kernel_enabled(name_of(f)))
        c.push_back({name_of(f), [this, &f, &node] {
                       cpu::DisabledKernels scope(&disabled_kernels());
                       return f.make(node, threads_);
                     }});
    return c;
  }
  std::vector<std::string> kernel_names() const override {
    std::vector<std::string> names;
    for (const auto& f : cpu::kernel_factories())
      if (std::find(names.begin(), names.end(), name_of(f)) == names.end()) names.push_back(name_of(f));
    return names;
  }

 private:
  static std::string name_of(const cpu::KernelFactory& f) { return f.name.empty() ? "kiln" : f.name; }

  int threads_;
};

}  // namespace

// oneDNN runs on OpenMP: its team size is the session's intra-op thread count (oversubscribed
// OpenMP teams spin and run many times slower on a busy machine).
std::unique_ptr<Backend> make_cpu_backend(int threads) {
  omp_set_num_threads(std::max(1, threads));
  return std::make_unique<CpuBackend>(threads);
}

}  // namespace kiln::backends
