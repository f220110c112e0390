// Backends create the kernels that run instructions. The optimized CPU backend may decline any
// node (create returns nullptr); the session then runs it on the reference kernels, MNN's
// backup-backend idea. Kernels are created once per compiled plan, when every shape is static,
// so they can prepack weights and pick algorithms up front.
#pragma once
#include <kiln/tensor.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "plan/kernel_spec.h"

namespace kiln::backends {

class TeamChoice;

class Kernel {
 public:
  virtual ~Kernel() = default;
  // inputs: one per node input (nullptr = absent optional). outputs: one per node output,
  // already allocated with the node's static output types (nullptr = not requested).
  // Must be safe to call from several threads at once.
  virtual void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const = 0;
  // Blocks until work the kernel deferred to a background thread at creation (a slow weight
  // transform, see TieredKernel in backends/cpu/onednn_conv.cpp) is done and run() uses its
  // final form. Most kernels have none.
  virtual void wait_ready() const {}
  // Whether run() starts threads only through the CPU backend's parallel_for
  // (backends/cpu/parallel.h), so that it may run inside a team held across several kernels
  // (Backend::hold_team). A kernel that runs a multithreaded oneDNN primitive itself must not:
  // inside the held team the primitive would run on one thread.
  virtual bool runs_in_team() const { return false; }
  // Whether run() may be handed an output that shares input `input`'s storage (the plan writes
  // the output over an input that dies at this node: lower::LowerOptions::writes_over): the
  // kernel reads each element of that input only for the output element at the same place,
  // and before writing it.
  virtual bool writes_over(int input) const {
    (void)input;
    return false;
  }
  // The spec this kernel was built from (Backend::instantiate sets it): every choice it runs by.
  const plan::KernelSpec& spec() const { return spec_; }
  void set_spec(plan::KernelSpec s) { spec_ = std::move(s); }

 private:
  plan::KernelSpec spec_;
};

struct KernelCandidate {
  plan::KernelSpec spec;  // the implementation (spec.impl, e.g. "onednn_alt_layout") and its choices
  // Builds the kernel from `spec` (prepacking weights), or nullptr when this implementation
  // declines the node.
  std::function<std::unique_ptr<Kernel>()> make;
};

// Profiling-based kernel choice (SessionOptions::tune): each node with several candidate
// kernels has them timed once on its real shapes; winners persist in a JSON file.
struct TuneOptions {
  bool enabled = false;
  std::string cache_path;  // "" = $KILN_CACHE_DIR, $XDG_CACHE_HOME/kiln or ~/.cache/kiln, + /kernels.json
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // A kernel for `node` (whose input and output types are static), or nullptr to decline.
  virtual std::unique_ptr<Kernel> create(const ir::Node& node) const = 0;
  // The implementations that may accept `node`, in order of preference (create() returns the
  // first that accepts), each with the choices its rule makes for the node.
  virtual std::vector<KernelCandidate> candidates(const ir::Node& node) const {
    plan::KernelSpec s{.backend = name(), .impl = name(), .threads = threads()};
    return {{s, [this, &node] { return create(node); }}};
  }
  // The kernel `spec` describes for `node`, built from the spec alone: its implementation and
  // parameters are taken as given, never re-decided (a plan loaded or edited). nullptr when that
  // implementation cannot run the node with those parameters.
  virtual std::unique_ptr<Kernel> instantiate(const ir::Node& node, const plan::KernelSpec& spec) const {
    if (spec.backend != name() || spec.impl != name()) return nullptr;
    auto k = create(node);
    if (k) k->set_spec(spec);
    return k;
  }
  // `spec` made for another team size: the same implementation and choices, with the work
  // splits (the parameters the implementation's rule derives from the thread count) derived
  // again for `threads`.
  virtual plan::KernelSpec rederive(const ir::Node&, plan::KernelSpec spec, int threads) const {
    spec.threads = threads;
    return spec;
  }
  // Every valid value of each parameter of `spec`'s implementation for `node` (tests that edit
  // plans; tuning).
  virtual plan::ParamChoices param_choices(const ir::Node&, const plan::KernelSpec&) const { return {}; }
  virtual int threads() const { return 1; }
  // The CPU features kiln's kernels of this backend dispatch on and this machine has (a plan
  // chosen here needs them where it is loaded).
  virtual std::vector<std::string> isa_features() const { return {}; }
  const TuneOptions& tuning() const { return tune_; }
  void set_tuning(TuneOptions t) { tune_ = std::move(t); }
  // The names of the implementations this backend may pick (KernelCandidate::name), and those
  // it must not (SessionOptions::disabled_kernels: measuring what one kernel is worth).
  virtual std::vector<std::string> kernel_names() const { return {name()}; }
  const std::vector<std::string>& disabled_kernels() const { return disabled_; }
  void set_disabled_kernels(std::vector<std::string> names) { disabled_ = std::move(names); }
  // Whether convolutions and pooling should run on NHWC activations (src/lower/layout_assignment.h).
  virtual bool prefers_channels_last() const { return false; }
  // Whether this node may join a fused group this backend runs as one kernel: a
  // kiln.FusedElementwise member, or the reduction ending a kiln.FusedReduce.
  virtual bool can_fuse(const ir::Node&) const { return false; }
  // Whether the kernel this backend would run for a channels-last conv computes in the nChw16c
  // layout (oneDNN's Winograd), reordering NHWC activations in and out: the blocked_layout
  // rewrite hands such convs that layout directly (src/lower/blocked_layout.h).
  virtual bool runs_blocked(const ir::Node&) const { return false; }
  // Whether it runs this FusedConv as a kiln.PrologueConv: its elementwise input computed
  // inside it (src/lower/fuse_conv_prologue.h).
  virtual bool takes_conv_prologue(const ir::Node&) const { return false; }
  // Whether it runs two one-row products, `second` reading `first`'s output, as one
  // kiln.GemvChain (src/lower/fuse_gemv_chain.h).
  virtual bool chains_gemvs(const ir::Node&, const ir::Node&) const { return false; }
  // Whether it runs a kiln.ConvConcat whose branches are these chains of nodes (each in order,
  // its last the conv writing the branch's slice) with the branches dealt out whole to its
  // threads (src/lower/fuse_conv_concat.h); where not, the body holds the slice convs only.
  virtual bool deals_branches(const std::vector<std::vector<const ir::Node*>>&) const { return false; }
  // Whether it runs an inverted-residual kiln.ConvChain marked `split_channels` split by the
  // block's middle channels (src/lower/fuse_conv_chain.h), squeeze-excitation included.
  virtual bool splits_chain_channels() const { return false; }
  // Whether its kiln.Attention kernels read operands through the node's q_perm / k_perm /
  // v_perm / out_perm (src/lower/fold_attention_layout.h) rather than copies.
  virtual bool reads_attention_layouts() const { return false; }
  // Called on the thread about to run a program with this backend's kernels (per-thread
  // runtime settings such as the OpenMP team size live there).
  virtual void enter_run() const {}
  // Runs body() on the calling thread with this backend's threads held as one team for the
  // kernels body runs that runs_in_team(), instead of one team started per kernel. With
  // `choice` (the stretch's, kept across runs), body may run on the calling thread alone when
  // that has been faster (team_choice.h). `whole_run`: body is a whole run of the program, every
  // kernel of it threading through the team alone (the backend may keep that team between runs).
  virtual void hold_team(const std::function<void()>& body, TeamChoice* choice = nullptr, bool whole_run = false) const {
    (void)choice;
    (void)whole_run;
    body();
  }

 private:
  TuneOptions tune_;
  std::vector<std::string> disabled_;
};

// The optimized CPU backend (oneDNN and kiln's own kernels). `threads` = intra-op threads.
std::unique_ptr<Backend> make_cpu_backend(int threads);

}  // namespace kiln::backends
