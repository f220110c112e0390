#include <kiln/session.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <set>

#include "frontend/onnx/importer.h"
#include "ir/verifier.h"
#include "ir/zeroed_memory.h"
#include "ops/core/infer_graph.h"
#include "passes/pipelines.h"
#include "runtime/compiled_plan.h"
#include "runtime/input_check.h"
#include "runtime/reference_executor.h"

namespace kiln {

std::string TensorInfo::str() const {
  std::string s = dtype_name(dtype) + "[";
  if (!rank_known) {
    s += "*]";
  } else {
    for (size_t i = 0; i < dims.size(); ++i)
      s += (i ? "," : "") + (dims[i] >= 0 ? std::to_string(dims[i]) : symbols[i]);
    s += "]";
  }
  if (is_sequence) s = "seq<" + s + ">";
  if (is_optional) s = "optional<" + s + ">";
  return s;
}

namespace {
TensorInfo info_of(const ir::Value& v) {
  TensorInfo t;
  t.name = v.name();
  t.dtype = v.type.dtype;
  t.rank_known = v.type.rank_known;
  t.is_sequence = v.type.is_sequence;
  t.is_optional = v.type.is_optional;
  for (const ir::Dim& d : v.type.dims) {
    t.dims.push_back(d.is_static() ? d.value : -1);
    t.symbols.push_back(d.is_static() ? "" : (d.symbol.empty() ? "?" : d.symbol));
  }
  return t;
}

Limits limits_of(const SessionOptions& o) {
  Limits l;
  l.memory_cap_bytes = o.memory_cap_bytes;
  l.max_loop_iterations = o.max_loop_iterations;
  return l;
}
}  // namespace

struct Session::Impl {
  Limits limits;
  std::unique_ptr<ir::Graph> graph;
  std::vector<TensorInfo> inputs, outputs;
  std::vector<const ir::Value*> keep;
  std::vector<std::string> keep_names;
  std::unique_ptr<runtime::ReferenceExecutor> exec;  // for runs with non-tensor inputs
  std::unique_ptr<backends::Backend> backend;          // null: reference kernels only
  int fusion_level = 3;
  std::vector<std::string> disabled_passes;

  // One compiled plan per input-shape signature.
  std::mutex mu;
  std::map<std::string, std::shared_ptr<runtime::CompiledPlan>> plans;
  std::atomic<int64_t> plans_built{0};

  std::shared_ptr<runtime::CompiledPlan> plan_for(const std::vector<Tensor>& ins) {
    std::vector<std::vector<int64_t>> dims;
    for (const Tensor& t : ins) dims.push_back(t.dims());
    return plan_for_dims(dims);
  }

  std::shared_ptr<runtime::CompiledPlan> plan_for_dims(const std::vector<std::vector<int64_t>>& dims) {
    std::string sig;
    for (const auto& d : dims) {
      for (int64_t x : d) sig += std::to_string(x) + ",";
      sig += ";";
    }
    std::lock_guard<std::mutex> lock(mu);
    auto it = plans.find(sig);
    if (it != plans.end()) return it->second;
    std::shared_ptr<runtime::CompiledPlan> cp = runtime::compile(*graph, dims, keep_names, backend.get(), fusion_level,
                                                                     disabled_passes);
    ++plans_built;
    plans[sig] = cp;
    return cp;
  }

  std::vector<Tensor> run(const std::vector<Tensor>& ins, runtime::ValueMap* kept) {
    LimitsScope scope(limits);
    bool tensors_only = true;
    for (const Tensor& t : ins) tensors_only = tensors_only && t.kind() == ValueKind::Tensor;
    if (!tensors_only) return exec->run(ins, nullptr, kept);
    std::shared_ptr<runtime::CompiledPlan> cp = plan_for(ins);
    std::unique_ptr<runtime::Arena> arena = cp->acquire_arena();
    runtime::ValueMap kept_local;
    std::vector<Tensor> outs;
    try {
      if (backend) backend->enter_run();
      outs = runtime::execute(cp->program, cp->memory, *arena, ins, kept ? &kept_local : nullptr, backend.get());
    } catch (...) {
      cp->release_arena(std::move(arena));
      throw;
    }
    cp->release_arena(std::move(arena));
    if (kept)  // the plan's values live in its clone of the graph: map them back by name
      for (auto& [v, t] : kept_local)
        if (const ir::Value* mine = graph->find_value(v->name())) (*kept)[mine] = t;
    return outs;
  }

  // `g` was loaded under a LimitsScope of `opts`, which the caller still holds.
  explicit Impl(std::unique_ptr<ir::Graph> g, const SessionOptions& opts) : limits(limits_of(opts)), graph(std::move(g)) {
    ir::verify(*graph);
    runtime::check_value_sizes(*graph);  // declared types, before inference multiplies them out
    ops::ShapeInference().run(*graph);
    runtime::check_value_sizes(*graph);  // before the optimizer works with these sizes
    if (opts.opt_level > 0 && opts.keep.empty()) {
      passes::OptimizeOptions o;
      o.level = opts.opt_level;
      passes::optimize(*graph, o);  // re-infers the rewritten graph
    }
    // Rewrites make new values; a static one over the cap fails here, not at its first run.
    runtime::check_value_sizes(*graph);
    for (const ir::Value* v : graph->inputs()) inputs.push_back(info_of(*v));
    for (const ir::Value* v : graph->outputs()) outputs.push_back(info_of(*v));
    for (const std::string& name : opts.keep) {
      const ir::Value* v = graph->find_value(name);
      if (!v) throw Error("keep: the model has no value named '" + name + "'");
      keep.push_back(v);
      keep_names.push_back(name);
    }
    exec = std::make_unique<runtime::ReferenceExecutor>(*graph, keep);
    if (opts.backend == "cpu") backend = backends::make_cpu_backend(opts.threads);
    else if (opts.backend != "reference") throw Error("unknown backend '" + opts.backend + "' (use cpu or reference)");
    if (backend) backend->set_tuning({opts.tune, opts.tune_cache});
    if (!opts.disabled_kernels.empty()) {
      const std::vector<std::string> known = backend ? backend->kernel_names() : std::vector<std::string>{};
      for (const std::string& name : opts.disabled_kernels)
        if (std::find(known.begin(), known.end(), name) == known.end()) {
          std::string passes, kernels;
          for (const std::string& k : runtime::lowering_pass_names()) passes += (passes.empty() ? "" : ", ") + k;
          for (const std::string& k : known) kernels += (kernels.empty() ? "" : ", ") + k;
          throw Error("unknown lowering pass or kernel '" + name + "' to disable (lowering passes: " + passes +
                      "; kernels of the " + opts.backend + " backend: " + (kernels.empty() ? "none" : kernels) + ")");
        }
      backend->set_disabled_kernels(opts.disabled_kernels);
    }
    if (opts.fusion_level < 0 || opts.fusion_level > 3)
      throw Error("fusion level must be 0..3, got " + std::to_string(opts.fusion_level));
    fusion_level = opts.fusion_level;
    for (const std::string& name : opts.disabled_passes) {
      const auto& known = runtime::lowering_pass_names();
      if (std::find(known.begin(), known.end(), name) == known.end()) {
        std::string list;
        for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
        throw Error("unknown lowering pass '" + name + "' to disable (known: " + list + ")");
      }
    }
    disabled_passes = opts.disabled_passes;
    // A model whose inputs are all static tensors has one plan: build it now (kernels created,
    // weights prepacked, memory planned), so the first run costs no more than the others.
    std::vector<std::vector<int64_t>> dims;
    for (const ir::Value* v : graph->inputs()) {
      if (!v->type.is_tensor() || !v->type.is_static() || v->type.dtype == DType::String) return;
      dims.push_back(v->type.static_dims());
    }
    LimitsScope scope(limits);
    plan_for_dims(dims);
  }
};

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

std::unique_ptr<Session> Session::create(const std::string& model_path, const SessionOptions& opts) {
  LimitsScope scope(limits_of(opts));
  RecycleLargeBuffers recycle;  // the file's bytes, once copied out, hold the packed weights
  return std::unique_ptr<Session>(new Session(std::make_unique<Impl>(onnx_fe::load_model(model_path), opts)));
}

std::unique_ptr<Session> Session::create_from_bytes(const std::string& bytes, const SessionOptions& opts,
                                                    const std::string& model_dir) {
  LimitsScope scope(limits_of(opts));
  RecycleLargeBuffers recycle;
  return std::unique_ptr<Session>(
      new Session(std::make_unique<Impl>(onnx_fe::load_model_bytes(bytes, model_dir), opts)));
}

const std::vector<TensorInfo>& Session::inputs() const { return impl_->inputs; }
const std::vector<TensorInfo>& Session::outputs() const { return impl_->outputs; }

std::vector<Tensor> Session::run(const std::vector<Tensor>& inputs) const {
  runtime::check_inputs(*impl_->graph, inputs);
  return impl_->run(inputs, nullptr);
}

void Session::run_into(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) const {
  if (outputs.size() != impl_->outputs.size())
    throw Error("run_into: the model has " + std::to_string(impl_->outputs.size()) + " outputs, " +
                std::to_string(outputs.size()) + " buffers given");
  std::vector<Tensor> results = run(inputs);
  for (size_t i = 0; i < results.size(); ++i) {
    const Tensor& r = results[i];
    Tensor& dst = outputs[i];
    const std::string& name = impl_->outputs[i].name;
    if (r.kind() != ValueKind::Tensor || r.dtype() == DType::String)
      throw Error("run_into: output '" + name + "' is " + r.describe() + ", which needs run()");
    if (dst.dtype() != r.dtype() || dst.dims() != r.dims())
      throw Error("run_into: output '" + name + "' is " + r.describe() + ", the buffer given is " + dst.describe());
    if (r.nbytes() > 0) std::memcpy(dst.raw(), r.raw(), r.nbytes());
  }
}

int64_t Session::plans_built() const { return impl_->plans_built; }

int64_t Session::arena_bytes() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  int64_t most = 0;
  for (const auto& [sig, cp] : impl_->plans) most = std::max(most, cp->memory.arena_bytes);
  return most;
}

void Session::wait_ready() const {
  // Wait outside the lock: a transform takes up to half a second, and runs must not stall on
  // the plan table meanwhile.
  std::vector<std::shared_ptr<const backends::Kernel>> kernels;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    for (const auto& [sig, cp] : impl_->plans)
      for (const lower::Instruction& ins : cp->program.instructions)
        if (ins.kernel) kernels.push_back(ins.kernel);
  }
  for (const auto& k : kernels) k->wait_ready();
}

std::string Session::verify_plans() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  for (const auto& [sig, cp] : impl_->plans) {
    std::string problem = plan::check_plan(cp->program, cp->memory);
    if (!problem.empty()) return "plan for input shapes " + sig + ": " + problem;
  }
  return "";
}

std::map<std::string, Tensor> Session::run(const std::map<std::string, Tensor>& inputs) const {
  std::vector<Tensor> ordered;
  std::set<std::string> used;
  for (const ir::Value* v : impl_->graph->inputs()) {
    auto it = inputs.find(v->name());
    if (it == inputs.end()) throw Error("missing required input '" + v->name() + "'");
    ordered.push_back(it->second);
    used.insert(v->name());
  }
  for (const auto& [name, t] : inputs)
    if (!used.count(name)) throw Error("the model has no input named '" + name + "'");
  runtime::check_inputs(*impl_->graph, ordered);
  runtime::ValueMap kept;
  std::vector<Tensor> outs = impl_->run(ordered, &kept);
  std::map<std::string, Tensor> result;
  for (size_t i = 0; i < outs.size(); ++i) result[impl_->graph->outputs()[i]->name()] = outs[i];
  for (auto& [v, t] : kept) result[v->name()] = t;
  return result;
}

}  // namespace kiln
