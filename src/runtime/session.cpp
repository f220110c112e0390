#include <kiln/session.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>

#include "frontend/load_model.h"
#include "frontend/onnx/exporter.h"
#include "frontend/onnx/importer.h"
#include "ir/clone.h"
#include "ir/verifier.h"
#include "ir/zeroed_memory.h"
#include "lower/pipelines.h"
#include "ops/core/infer_graph.h"
#include "passes/pipelines.h"
#include "runtime/compiled_plan.h"
#include "runtime/input_check.h"
#include "runtime/kiln_file.h"
#include "runtime/packed_store.h"
#include "runtime/plan_loader.h"
#include "runtime/session_access.h"
#include "runtime/trace.h"
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
  // First, so it ends last: the runs' large outputs, freed by the caller, serve the next run's.
  ReuseFreedBuffers reuse_freed;
  Limits limits;
  std::unique_ptr<ir::Graph> graph;
  std::vector<TensorInfo> inputs, outputs;
  std::vector<const ir::Value*> keep;
  std::vector<std::string> keep_names;
  std::unique_ptr<runtime::ReferenceExecutor> exec;  // for runs with non-tensor inputs
  std::unique_ptr<backends::Backend> backend;          // null: reference kernels only
  int fusion_level = 3, opt_level = 3;
  std::vector<std::string> disabled_passes;
  SessionStats counters;  // plans_built lives in the atomic below

  // One compiled plan per input-shape signature.
  std::mutex mu;
  std::map<std::string, std::shared_ptr<runtime::CompiledPlan>> plans;
  std::atomic<int64_t> plans_built{0};

  // The plan the last run used (under mu), found again without building a signature: most
  // programs run one input shape over and over, and a small model's run takes microseconds.
  std::shared_ptr<runtime::CompiledPlan> last_plan;

  std::shared_ptr<runtime::CompiledPlan> plan_for(const std::vector<Tensor>& ins) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (last_plan && last_plan->input_dims.size() == ins.size() &&
          std::equal(ins.begin(), ins.end(), last_plan->input_dims.begin(),
                     [](const Tensor& t, const std::vector<int64_t>& d) { return t.dims() == d; }))
        return last_plan;
    }
    std::vector<std::vector<int64_t>> dims;
    for (const Tensor& t : ins) dims.push_back(t.dims());
    return plan_for_dims(dims);
  }

  std::shared_ptr<runtime::CompiledPlan> plan_for_dims(const std::vector<std::vector<int64_t>>& dims) {
    const std::string sig = signature(dims);
    std::lock_guard<std::mutex> lock(mu);
    auto it = plans.find(sig);
    if (it != plans.end()) return last_plan = it->second;
    if (!compilable)
      throw Error("input shapes " + sig + ": this .kiln file holds no plan for them and no graph to compile one from");
    std::shared_ptr<runtime::CompiledPlan> cp = runtime::compile(*graph, dims, keep_names, backend.get(), fusion_level,
                                                                     disabled_passes);
    cp->input_dims = dims;
    ++plans_built;
    for (const passes::PassStats& ps : cp->lowering) counters.lowering_passes += ps.runs;
    counters.kernel_choices += cp->kernel_choices;
    plans[sig] = cp;
    return last_plan = cp;
  }

  static std::string signature(const std::vector<std::vector<int64_t>>& dims) {
    std::string sig;
    for (const auto& d : dims) {
      for (int64_t x : d) sig += std::to_string(x) + ",";
      sig += ";";
    }
    return sig;
  }
  bool compilable = true;  // false: a .kiln file of static inputs, which holds no graph to compile from

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
      outs = runtime::execute(cp->program, cp->memory, *arena, ins, kept ? &kept_local : nullptr, backend.get(),
                              trace.get(), cp->team_choices.get());
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
    opt_level = opts.opt_level;
    if (opts.opt_level > 0 && opts.keep.empty()) {
      passes::OptimizeOptions o;
      o.level = opts.opt_level;
      for (const passes::PassStats& ps : passes::optimize(*graph, o)) counters.optimizer_passes += ps.runs;
    }
    // Rewrites make new values; a static one over the cap fails here, not at its first run.
    runtime::check_value_sizes(*graph);
    setup(opts);
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

  // A .kiln file's session: its optimized graph (or, for static inputs, its plan's graph) and
  // its plans as they were saved; nothing is optimized, lowered or chosen.
  Impl(runtime::KilnFile f, const SessionOptions& opts) : limits(limits_of(opts)) {
    if (!opts.keep.empty()) throw Error("keep: a .kiln file holds the optimized graph only; run the source model");
    const nlohmann::json& m = f.manifest;
    auto field = [&](const char* k) -> const nlohmann::json& {
      if (!m.contains(k)) throw Error(".kiln file: its manifest lacks \"" + std::string(k) + "\"");
      return m[k];
    };
    const nlohmann::json& plans_json = field("plans");
    if (!plans_json.is_array() || plans_json.size() != f.plan_graphs.size())
      throw Error(".kiln file: its manifest lists " + std::string(plans_json.is_array() ? std::to_string(plans_json.size()) : "no") +
                  " plans for " + std::to_string(f.plan_graphs.size()) + " plan graphs");
    const nlohmann::json& o = field("options");
    if (!o.is_object() || !o.contains("fusion_level") || !o["fusion_level"].is_number_integer() ||
        !o.contains("opt_level") || !o["opt_level"].is_number_integer())
      throw Error(".kiln file: its manifest's options need integer fusion_level and opt_level");
    compilable = !f.graph.empty();
    SessionOptions eff = opts;
    eff.fusion_level = o["fusion_level"].get<int>();
    opt_level = o["opt_level"].get<int>();
    if (!compilable && f.plan_graphs.empty()) throw Error(".kiln file: holds neither a graph nor a plan");
    // The graphs' weights are views of the file's constants section where it lies in memory
    // kiln owns (read_kiln_file), copies of the caller's bytes otherwise.
    const onnx_fe::ExternalSection section{f.constants, f.storage};
    onnx_fe::ImportOptions io;
    io.section = &section;
    std::vector<std::unique_ptr<ir::Graph>> lowered_graphs;
    for (std::string_view bytes : f.plan_graphs) {
      lowered_graphs.push_back(onnx_fe::load_model_bytes(bytes, ".", io));
      ir::verify(*lowered_graphs.back());
      ops::ShapeInference().run(*lowered_graphs.back());
    }
    // Static inputs: the plan's graph serves as the session's (inputs, outputs, runs the
    // reference executor takes); its clone shares the weights.
    graph = compilable ? onnx_fe::load_model_bytes(f.graph, ".", io) : ir::clone(*lowered_graphs[0]);
    ir::verify(*graph);
    runtime::check_value_sizes(*graph);
    if (compilable) ops::ShapeInference().run(*graph);
    runtime::check_value_sizes(*graph);
    setup(eff);
    LimitsScope scope(limits);
    for (size_t i = 0; i < lowered_graphs.size(); ++i) {
      const nlohmann::json& pj = plans_json[i];
      if (!pj.is_object() || !pj.contains("dims") || !pj.contains("plan") || !pj["dims"].is_array())
        throw Error(".kiln file: plan " + std::to_string(i) + " needs \"dims\" and \"plan\"");
      std::vector<std::vector<int64_t>> dims;
      for (const auto& d : pj["dims"]) {
        if (!d.is_array()) throw Error(".kiln file: plan " + std::to_string(i) + ": \"dims\" must be lists of integers");
        std::vector<int64_t> xs;
        for (const auto& x : d) {
          if (!x.is_number_integer() || x.get<int64_t>() < 0)
            throw Error(".kiln file: plan " + std::to_string(i) + ": \"dims\" must be lists of integers");
          xs.push_back(x.get<int64_t>());
        }
        dims.push_back(std::move(xs));
      }
      runtime::check_input_dims(*graph, dims);
      plan::ExecutablePlan e = plan::executable_plan_from_json(pj["plan"]);
      counters.plan_threads = e.threads;
      std::unique_ptr<ir::Graph> lowered = std::move(lowered_graphs[i]);
      std::vector<backends::PackedWeights> packed;
      if (pj.contains("packed"))
        packed = runtime::packed_weights_from_json(pj["packed"], e.instructions.size(), f.constants, f.storage);
      runtime::PlanLoadStats ls;
      std::shared_ptr<runtime::CompiledPlan> cp =
          runtime::load_compiled_plan(std::move(lowered), std::move(e), backend.get(), &packed, &ls);
      cp->input_dims = dims;
      counters.splits_rederived += ls.rederived;
      counters.packed_buffers_loaded += ls.buffers_replayed;
      counters.kernels_repacked += ls.kernels_repacked;
      ++counters.plans_loaded;
      plans[signature(dims)] = std::move(cp);
    }
  }

  // Backend, tuning, disabled kernels and passes, fusion level: what every way of creating a
  // session shares.
  void setup(const SessionOptions& opts) {
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
          for (const std::string& k : lower::lowering_pass_names()) passes += (passes.empty() ? "" : ", ") + k;
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
      const auto& known = lower::lowering_pass_names();
      if (std::find(known.begin(), known.end(), name) == known.end()) {
        std::string list;
        for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
        throw Error("unknown lowering pass '" + name + "' to disable (known: " + list + ")");
      }
    }
    disabled_passes = opts.disabled_passes;
    if (!opts.profile_file.empty()) trace = std::make_unique<runtime::Trace>(opts.profile_file);
  }

  // SessionOptions::profile_file: the trace, written by end_profiling or when the session ends.
  std::unique_ptr<runtime::Trace> trace;
  bool trace_written = false;
  ~Impl() {
    if (trace && !trace_written) try {
        trace->write();
      } catch (const Error&) {  // a destructor cannot report it; end_profiling() does
      }
  }
};

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

std::unique_ptr<Session> Session::create(const std::string& model_path, const SessionOptions& opts) {
  LimitsScope scope(limits_of(opts));
  RecycleLargeBuffers recycle;  // the file's bytes, once copied out, hold the packed weights
  if (runtime::is_kiln_file(model_path))
    return std::unique_ptr<Session>(new Session(std::make_unique<Impl>(runtime::read_kiln_file(model_path), opts)));
  return std::unique_ptr<Session>(new Session(std::make_unique<Impl>(frontend::load_model(model_path), opts)));
}

std::unique_ptr<Session> Session::create_from_bytes(const std::string& bytes, const SessionOptions& opts,
                                                    const std::string& model_dir) {
  LimitsScope scope(limits_of(opts));
  RecycleLargeBuffers recycle;
  if (runtime::looks_like_kiln_file(bytes))
    return std::unique_ptr<Session>(new Session(std::make_unique<Impl>(runtime::parse_kiln_file(bytes), opts)));
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

std::vector<std::shared_ptr<runtime::CompiledPlan>> SessionAccess::plans(const Session& s) {
  std::lock_guard<std::mutex> lock(s.impl_->mu);
  std::vector<std::shared_ptr<runtime::CompiledPlan>> r;
  for (const auto& [sig, cp] : s.impl_->plans) r.push_back(cp);
  return r;
}

SessionStats Session::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  SessionStats s = impl_->counters;
  s.plans_built = impl_->plans_built;
  return s;
}

void Session::prepare(const std::vector<std::vector<int64_t>>& input_dims) {
  LimitsScope scope(impl_->limits);
  runtime::check_input_dims(*impl_->graph, input_dims);
  impl_->plan_for_dims(input_dims);
}

void Session::save(const std::string& path) const {
  runtime::KilnFile f;
  std::lock_guard<std::mutex> lock(impl_->mu);
  bool all_static = true;
  for (const ir::Value* v : impl_->graph->inputs()) all_static = all_static && v->type.is_tensor() && v->type.is_static();
  std::vector<std::string> sections;  // what f's views point into
  sections.reserve(impl_->plans.size() + 1);
  // Every graph's weights go to one constants section, each distinct tensor once.
  onnx_fe::ExternalSectionWriter constants;
  onnx_fe::ExportOptions eo;
  eo.section = &constants;
  if (!all_static || impl_->plans.empty())
    f.graph = sections.emplace_back(onnx_fe::export_model_bytes(*impl_->graph, eo));
  f.manifest["producer"] = "kiln";
  f.manifest["options"] = {{"opt_level", impl_->opt_level}, {"fusion_level", impl_->fusion_level},
                           {"backend", impl_->backend ? impl_->backend->name() : "reference"}};
  f.manifest["plans"] = nlohmann::json::array();
  for (const auto& [sig, cp] : impl_->plans) {
    nlohmann::json entry = {{"dims", cp->input_dims}, {"plan", plan::to_json(cp->plan)}};
    // The kernels' packed weights, so that loading does not pack again.
    if (impl_->backend) entry["packed"] = runtime::record_packed_weights(*cp, *impl_->backend, constants);
    f.manifest["plans"].push_back(std::move(entry));
    f.plan_graphs.push_back(sections.emplace_back(onnx_fe::export_model_bytes(*cp->graph, eo)));
  }
  f.constants = constants.bytes();
  runtime::write_kiln_file(path, f);
}

int64_t Session::arena_bytes() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  int64_t most = 0;
  for (const auto& [sig, cp] : impl_->plans) most = std::max(most, cp->memory.arena_bytes);
  return most;
}

void Session::restart_profiling() {
  if (impl_->trace) impl_->trace->clear();
}

std::string Session::end_profiling() {
  if (!impl_->trace) return "";
  impl_->trace_written = true;
  return impl_->trace->write();
}

std::string Session::profile_table() const { return impl_->trace ? impl_->trace->table() : ""; }

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
  ordered.reserve(impl_->graph->inputs().size());
  for (const ir::Value* v : impl_->graph->inputs()) {
    auto it = inputs.find(v->name());
    if (it == inputs.end()) throw Error("missing required input '" + v->name() + "'");
    ordered.push_back(it->second);
  }
  if (inputs.size() != ordered.size())  // every input was found, so some name is not one
    for (const auto& [name, t] : inputs)
      if (std::none_of(impl_->graph->inputs().begin(), impl_->graph->inputs().end(),
                       [&](const ir::Value* v) { return v->name() == name; }))
        throw Error("the model has no input named '" + name + "'");
  runtime::check_inputs(*impl_->graph, ordered);
  // The kept values by name, when the session keeps any: the outputs come by position.
  runtime::ValueMap kept;
  std::vector<Tensor> outs = impl_->run(ordered, impl_->keep.empty() ? nullptr : &kept);
  std::map<std::string, Tensor> result;
  for (size_t i = 0; i < outs.size(); ++i) result[impl_->graph->outputs()[i]->name()] = outs[i];
  for (auto& [v, t] : kept) result[v->name()] = t;
  return result;
}

}  // namespace kiln
