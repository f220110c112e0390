// kiln's embedded runtime: load a model once, run it many times.
//
// Thread safety: run() may be called from several threads on one Session at once. Each run
// takes its own arena from the plan's pool; plans (one per input-shape signature) are built
// once under a lock and shared.
//
//   auto s = kiln::Session::create("model.onnx");
//   auto outs = s->run({{"input", tensor}});   // name -> Tensor
#pragma once
#include <kiln/error.h>
#include <kiln/limits.h>
#include <kiln/tensor.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kiln {

struct TensorInfo {
  std::string name;
  DType dtype = DType::Undefined;
  bool rank_known = false;
  // One entry per dim: the extent, or -1 when symbolic/unknown (its name is in `symbols`).
  std::vector<int64_t> dims;
  std::vector<std::string> symbols;  // "" for static dims, the symbol or "?" otherwise
  bool is_sequence = false;          // a sequence of such tensors
  bool is_optional = false;          // may also be None
  std::string str() const;           // "float[batch,3,224,224]", "seq<float[*]>"
};

struct SessionOptions {
  int threads = 1;
  // "cpu": the optimized CPU backend where it has a kernel, the reference kernels elsewhere;
  // "reference": the reference kernels only.
  std::string backend = "cpu";
  // Names of intermediate values to return as extra outputs (for debugging).
  std::vector<std::string> keep;
  // Graph optimization level (src/passes/pipelines.h): 0 none, 1 basic, 2 extended, 3 all.
  // Skipped when `keep` names values, since rewrites may remove them.
  int opt_level = 3;
  // Operator fusion level (src/fusion/): 0 none, 1 elementwise chains, 2 + broadcast, 3 + the
  // elementwise epilogues of Conv/Gemm/MatMul. Fused groups run as one kernel on the cpu
  // backend; the reference backend ignores it.
  int fusion_level = 3;
  // Kernel selection by timing: where the backend has several kernels for a node, time each on
  // the real shapes once and keep the fastest, remembered in `tune_cache` (a JSON file; "" =
  // $KILN_CACHE_DIR, $XDG_CACHE_HOME/kiln or ~/.cache/kiln, + /kernels.json) for later sessions.
  bool tune = false;
  std::string tune_cache;
  // Lowering rewrites of the cpu backend to skip, by name: "channels_last" (layout
  // assignment), "channel_shuffle", "channel_scale", "conv_concat", "conv_chain",
  // "blocked_layout" (docs/architecture.md).
  // For isolating a problem or measuring what one rewrite is worth (`kiln bench --pair-disable`).
  std::vector<std::string> disabled_passes;
  // Kernel implementations of the cpu backend to skip, by name ("kiln_pointwise",
  // "kiln_depthwise", "gemv", "onednn_winograd", ...: `kiln bench --disable` lists them); the
  // node falls to the next candidate, at worst the reference kernel.
  std::vector<std::string> disabled_kernels;
  // Largest single allocation the model may cause (an initializer, a value's tensor, a run's
  // arena), checked before allocating: at load, when shapes are known (session creation and
  // each new input-shape signature) and at run time. See kiln/limits.h for the default.
  int64_t memory_cap_bytes = default_memory_cap_bytes();
  // Iterations one Loop node may run before the run fails (a condition that never turns false).
  int64_t max_loop_iterations = kDefaultMaxLoopIterations;
  // When set, every instruction of every run is timed into a Chrome trace written to this file
  // (Perfetto, chrome://tracing) by end_profiling() or when the session ends.
  std::string profile_file;
};

// What a session has compiled and what it loaded ready-made (a .kiln file's plans).
struct SessionStats {
  int64_t plans_built = 0;       // plans compiled here: optimizer-free shape binding, lowering, kernel choice
  int64_t plans_loaded = 0;      // plans read from a .kiln file
  int64_t optimizer_passes = 0;  // graph optimizer passes run (at creation)
  int64_t lowering_passes = 0;   // lowering passes run, over all plans built
  int64_t kernel_choices = 0;    // kernels chosen by the backend's rule or by timing
  int64_t splits_rederived = 0;  // loaded kernels whose work splits were re-made for this thread count
  int64_t packed_buffers_loaded = 0;  // stored packed weights loaded kernels use as they are
  int64_t kernels_repacked = 0;       // loaded kernels that packed weights of their own instead
  int plan_threads = 0;          // the thread count a loaded plan was made for (0: none loaded)
};

class Session {
 public:
  // `model_path`: an ONNX model, or a .kiln file written by save() (`kiln compile`), which runs
  // without its source: its plans are loaded, not compiled.
  static std::unique_ptr<Session> create(const std::string& model_path, const SessionOptions& opts = {});
  // The same from a file's bytes (ONNX or .kiln).
  static std::unique_ptr<Session> create_from_bytes(const std::string& model_bytes, const SessionOptions& opts = {},
                                                    const std::string& model_dir = ".");
  ~Session();

  const std::vector<TensorInfo>& inputs() const;
  const std::vector<TensorInfo>& outputs() const;

  // Runs the model. Every graph input must be given, with a matching dtype and shape (symbolic
  // dims are bound from the inputs; contradicting bindings are an error). Returns every graph
  // output and every `keep` value by name.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs) const;
  // Positional form: inputs in the order of inputs(); outputs in the order of outputs().
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;

  // Writes the outputs into caller-provided tensors (e.g. Tensor::wrap over the caller's
  // memory), one per graph output in the order of outputs(), each with the output's dtype and
  // shape; a mismatch is an error naming the output. The results are copied in once computed.
  void run_into(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) const;

  // How many execution plans (one per distinct input-shape signature) this session has built.
  // A second run with known shapes reuses its plan; the count stays.
  int64_t plans_built() const;
  SessionStats stats() const;
  // Compiles the plan for these input dims now (one vector per input, in inputs() order), as
  // the first run with them would.
  void prepare(const std::vector<std::vector<int64_t>>& input_dims);
  // Writes the session as a .kiln file: its optimized graph (when an input has symbolic dims)
  // and every plan built so far, with their lowered graphs and kernel specs.
  void save(const std::string& path) const;
  // Re-checks every memory plan built so far with the independent checker: "" when no two
  // buffers live at the same time overlap, else the problem found.
  std::string verify_plans() const;
  // Bytes of the largest arena among the plans built so far (one arena per concurrent run).
  int64_t arena_bytes() const;
  // Blocks until every kernel of the plans built so far has finished the weight preparation it
  // left to a background thread at creation. A session runs correctly at once; some convs run
  // a slower form until then (for resnet18, a fraction of a second). Benchmarks call this first.
  void wait_ready() const;
  // Profiling (SessionOptions::profile_file): drop the events so far (the warm-up runs); write
  // the trace and return its path ("" without profiling); the time per op and backend as a
  // text table, most time first.
  void restart_profiling();
  std::string end_profiling();
  std::string profile_table() const;

  struct Impl;

 private:
  friend struct SessionAccess;  // kiln's own tests and tools (src/runtime/session_access.h)
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln
