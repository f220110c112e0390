#include "plan/executable_plan.h"

#include <kiln/error.h>

#include <unordered_map>

namespace kiln::plan {

ExecutablePlan make_executable_plan(const lower::Program& p, const MemoryPlan& m, const std::vector<KernelSpec>& specs,
                                    const std::string& target, int threads, std::vector<std::string> isa) {
  if (specs.size() != p.instructions.size())
    throw Error("executable plan: " + std::to_string(specs.size()) + " kernel specs for " +
                std::to_string(p.instructions.size()) + " instructions");
  ExecutablePlan e;
  e.target = target;
  e.threads = threads;
  e.isa = std::move(isa);
  e.graph_inputs = p.graph_inputs;
  e.graph_outputs = p.graph_outputs;
  e.lower_bound_bytes = m.lower_bound_bytes;
  e.memory_strategy = m.strategy;
  e.arenas.push_back({target == "reference" ? "cpu" : target, m.arena_bytes});
  for (const lower::Buffer& b : p.buffers) {
    PlanBuffer pb;
    pb.id = b.id;
    pb.value = b.value->name();
    pb.kind = b.kind;
    pb.dtype = b.value->type.dtype;
    for (const ir::Dim& d : b.value->type.dims) pb.dims.push_back(d.is_static() ? d.value : -1);
    pb.bytes = b.bytes;
    pb.alias_of = b.alias_of;
    pb.in_place = b.in_place;
    if (b.id < static_cast<int>(m.offset_of.size()) && m.offset_of[b.id] >= 0) {
      pb.arena = 0;
      pb.offset = m.offset_of[b.id];
    }
    if (b.kind == lower::BufferKind::Constant) e.constants.push_back(b.id);
    e.buffers.push_back(std::move(pb));
  }
  std::unordered_map<const ir::Node*, int> index;
  if (!p.instructions.empty()) {
    const std::vector<ir::Node*> nodes = p.instructions.front().node->owner()->nodes();
    for (size_t i = 0; i < nodes.size(); ++i) index[nodes[i]] = static_cast<int>(i);
  }
  for (size_t i = 0; i < p.instructions.size(); ++i) {
    const lower::Instruction& ins = p.instructions[i];
    auto at = index.find(ins.node);
    e.instructions.push_back({at == index.end() ? -1 : at->second, ins.node->name(), ins.node->domain(),
                              ins.node->op_type(), specs[i], ins.inputs, ins.outputs});
  }
  return e;
}

bool ExecutablePlan::placed() const {
  for (const PlanInstruction& i : instructions)
    if (!i.device.empty() || i.node_index < 0) return true;
  for (const PlanBuffer& b : buffers)
    if (b.mirror_of >= 0 || b.arena > 0) return true;
  return arenas.size() > 1;
}

nlohmann::ordered_json to_json(const ExecutablePlan& e) {
  nlohmann::ordered_json j;
  j["version"] = ExecutablePlan::kVersion;
  j["target"] = e.target;
  j["threads"] = e.threads;
  j["isa"] = e.isa;
  j["arenas"] = nlohmann::ordered_json::array();
  for (const PlanArena& a : e.arenas) j["arenas"].push_back({{"device", a.device}, {"bytes", a.bytes}});
  j["lower_bound_bytes"] = e.lower_bound_bytes;
  j["memory_strategy"] = e.memory_strategy;
  j["graph_inputs"] = e.graph_inputs;
  j["graph_outputs"] = e.graph_outputs;
  j["constants"] = e.constants;
  j["instructions"] = nlohmann::ordered_json::array();
  for (const PlanInstruction& ins : e.instructions) {
    nlohmann::ordered_json x;
    x["node_index"] = ins.node_index;
    x["node"] = ins.node;
    if (!ins.domain.empty()) x["domain"] = ins.domain;
    x["op"] = ins.op;
    x["kernel"] = to_json(ins.spec);
    x["inputs"] = ins.inputs;
    x["outputs"] = ins.outputs;
    if (!ins.device.empty()) {
      x["device"] = ins.device;
      x["stream"] = ins.stream;
      x["after"] = ins.after;
    }
    j["instructions"].push_back(std::move(x));
  }
  j["buffers"] = nlohmann::ordered_json::array();
  for (const PlanBuffer& b : e.buffers) {
    nlohmann::ordered_json x;
    x["id"] = b.id;
    x["value"] = b.value;
    x["kind"] = lower::buffer_kind_name(b.kind);
    x["dtype"] = dtype_name(b.dtype);
    x["dims"] = b.dims;
    x["bytes"] = b.bytes;
    if (b.alias_of >= 0) x[b.in_place ? "in_place_of" : "view_of"] = b.alias_of;
    if (b.arena >= 0) {
      x["arena"] = b.arena;
      x["offset"] = b.offset;
    }
    if (b.mirror_of >= 0) x["mirror_of"] = b.mirror_of;
    j["buffers"].push_back(std::move(x));
  }
  return j;
}

namespace {

struct Reader {
  const nlohmann::json& j;
  std::string where;
  Error bad(const std::string& why) const { return Error("executable plan: " + where + ": " + why); }
  const nlohmann::json& at(const char* key) const {
    if (!j.is_object() || !j.contains(key)) throw bad(std::string("missing \"") + key + "\"");
    return j[key];
  }
  int64_t integer(const char* key, int64_t lo, int64_t hi) const {
    const nlohmann::json& v = at(key);
    if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
      throw bad(std::string("\"") + key + "\" must be an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
    return v.get<int64_t>();
  }
  std::string string(const char* key) const {
    const nlohmann::json& v = at(key);
    if (!v.is_string()) throw bad(std::string("\"") + key + "\" must be a string");
    return v.get<std::string>();
  }
  std::vector<int64_t> integers(const char* key, int64_t lo, int64_t hi) const {
    const nlohmann::json& v = at(key);
    if (!v.is_array()) throw bad(std::string("\"") + key + "\" must be a list");
    std::vector<int64_t> r;
    for (const auto& x : v) {
      if (!x.is_number_integer() || x.get<int64_t>() < lo || x.get<int64_t>() > hi)
        throw bad(std::string("\"") + key + "\" holds a value outside " + std::to_string(lo) + ".." + std::to_string(hi));
      r.push_back(x.get<int64_t>());
    }
    return r;
  }
  std::vector<int> ids(const char* key, int64_t n) const {
    std::vector<int> r;
    for (int64_t x : integers(key, -1, n - 1)) r.push_back(static_cast<int>(x));
    return r;
  }
};

constexpr int64_t kMaxBytes = int64_t{1} << 50;

lower::BufferKind kind_named(const std::string& s, const Reader& r) {
  for (auto k : {lower::BufferKind::Input, lower::BufferKind::Constant, lower::BufferKind::Intermediate,
                 lower::BufferKind::Output, lower::BufferKind::Dynamic})
    if (s == lower::buffer_kind_name(k)) return k;
  throw r.bad("unknown buffer kind '" + s + "'");
}

DType dtype_named(const std::string& s, const Reader& r) {
  for (int code = 0; code <= static_cast<int>(DType::Int2); ++code) {
    DType t = dtype_from_onnx(code);
    if (t != DType::Undefined && dtype_name(t) == s) return t;
  }
  throw r.bad("unknown dtype '" + s + "'");
}

}  // namespace

ExecutablePlan executable_plan_from_json(const nlohmann::json& j) {
  Reader top{j, "plan"};
  if (top.integer("version", 0, 1 << 30) != ExecutablePlan::kVersion)
    throw top.bad("version " + std::to_string(j["version"].get<int64_t>()) + " (this kiln reads version " +
                  std::to_string(ExecutablePlan::kVersion) + ")");
  ExecutablePlan e;
  e.target = top.string("target");
  e.threads = static_cast<int>(top.integer("threads", 1, 4096));
  const nlohmann::json& isa = top.at("isa");
  if (!isa.is_array()) throw top.bad("\"isa\" must be a list of names");
  for (const auto& f : isa) {
    if (!f.is_string()) throw top.bad("\"isa\" must be a list of names");
    e.isa.push_back(f.get<std::string>());
  }
  const nlohmann::json& arenas = top.at("arenas");
  // One arena; a plan placed on devices has one per device.
  if (!arenas.is_array() || arenas.empty() || arenas.size() > 8) throw top.bad("\"arenas\" must list 1 to 8 arenas");
  for (const auto& a : arenas) {
    Reader r{a, "arena"};
    e.arenas.push_back({r.string("device"), r.integer("bytes", 0, kMaxBytes)});
  }
  e.lower_bound_bytes = top.integer("lower_bound_bytes", 0, kMaxBytes);
  e.memory_strategy = top.string("memory_strategy");
  const nlohmann::json& buffers = top.at("buffers");
  if (!buffers.is_array()) throw top.bad("\"buffers\" must be a list");
  const int64_t nb = static_cast<int64_t>(buffers.size());
  for (int64_t id = 0; id < nb; ++id) {
    Reader r{buffers[id], "buffer " + std::to_string(id)};
    PlanBuffer b;
    b.id = static_cast<int>(r.integer("id", id, id));
    b.value = r.string("value");
    b.kind = kind_named(r.string("kind"), r);
    b.dtype = dtype_named(r.string("dtype"), r);
    b.dims = r.integers("dims", -1, kMaxBytes);
    b.bytes = r.integer("bytes", -1, kMaxBytes);
    for (const char* k : {"view_of", "in_place_of"})
      if (r.j.contains(k)) {
        b.alias_of = static_cast<int>(r.integer(k, 0, id - 1));  // aliases point back
        b.in_place = std::string(k) == "in_place_of";
      }
    if (r.j.contains("arena")) {
      b.arena = static_cast<int>(r.integer("arena", 0, static_cast<int64_t>(e.arenas.size()) - 1));
      b.offset = r.integer("offset", 0, e.arenas[static_cast<size_t>(b.arena)].bytes);
    }
    if (r.j.contains("mirror_of")) b.mirror_of = static_cast<int>(r.integer("mirror_of", 0, id - 1));  // points back
    e.buffers.push_back(std::move(b));
  }
  e.graph_inputs = top.ids("graph_inputs", nb);
  e.graph_outputs = top.ids("graph_outputs", nb);
  e.constants = top.ids("constants", nb);
  const nlohmann::json& code = top.at("instructions");
  if (!code.is_array()) throw top.bad("\"instructions\" must be a list");
  for (size_t i = 0; i < code.size(); ++i) {
    Reader r{code[i], "instruction " + std::to_string(i)};
    PlanInstruction ins;
    ins.node_index = static_cast<int>(r.integer("node_index", -1, 1 << 30));
    ins.node = r.string("node");
    ins.domain = r.j.contains("domain") ? r.string("domain") : "";
    ins.op = r.string("op");
    ins.spec = kernel_spec_from_json(r.at("kernel"));
    ins.inputs = r.ids("inputs", nb);
    ins.outputs = r.ids("outputs", nb);
    if (r.j.contains("device")) {
      ins.device = r.string("device");
      if (ins.device.empty()) throw r.bad("\"device\" must name a device");
      ins.stream = static_cast<int>(r.integer("stream", -1, 1 << 16));
      for (int64_t a : r.integers("after", 0, static_cast<int64_t>(i) - 1)) ins.after.push_back(static_cast<int>(a));
    }
    if (ins.node_index < 0 && !ins.is_copy())
      throw r.bad("\"node_index\" -1 is for copies between devices (kiln.Copy) only");
    if (ins.is_copy() && (ins.device.empty() || ins.inputs.size() != 1 || ins.outputs.size() != 1 || ins.inputs[0] < 0 ||
                          ins.outputs[0] < 0))
      throw r.bad("a copy needs a device, one input and one output");
    e.instructions.push_back(std::move(ins));
  }
  return e;
}

lower::Program program_of(const ExecutablePlan& e, const ir::Graph& g) {
  if (e.placed())
    throw Error("executable plan: it is placed on devices (target " + e.target +
                "): a code generation target's plan, which the runtime does not run");
  lower::Program p;
  const std::vector<ir::Node*> nodes = g.nodes();
  for (const PlanBuffer& b : e.buffers) {
    const ir::Value* v = g.find_value(b.value);
    if (!v) throw Error("executable plan: buffer " + std::to_string(b.id) + " holds '" + b.value + "', which the graph lacks");
    const bool sized = b.kind == lower::BufferKind::Intermediate || b.kind == lower::BufferKind::Output;
    if (sized && v->type.is_tensor() && v->type.is_static() && v->type.dtype != DType::String && b.bytes >= 0) {
      int64_t bytes = static_cast<int64_t>(dtype_size(v->type.dtype));
      for (int64_t d : v->type.static_dims()) bytes *= d;
      if (bytes != b.bytes)
        throw Error("executable plan: buffer " + std::to_string(b.id) + " of '" + b.value + "' (" + v->type.str() +
                    ") has " + std::to_string(b.bytes) + " bytes, its type " + std::to_string(bytes));
    }
    p.buffers.push_back({b.id, v, b.kind, b.bytes, b.alias_of, b.in_place});
  }
  for (size_t i = 0; i < e.instructions.size(); ++i) {
    const PlanInstruction& pi = e.instructions[i];
    if (pi.node_index < 0 || pi.node_index >= static_cast<int>(nodes.size()) || nodes[pi.node_index]->name() != pi.node ||
        nodes[pi.node_index]->op_type() != pi.op || nodes[pi.node_index]->domain() != pi.domain)
      throw Error("executable plan: instruction " + std::to_string(i) + " runs node " + std::to_string(pi.node_index) +
                  " '" + pi.node + "' (" + pi.op + "), which the graph does not have there");
    const ir::Node* n = nodes[pi.node_index];
    if (pi.inputs.size() != static_cast<size_t>(n->num_inputs()) || pi.outputs.size() != static_cast<size_t>(n->num_outputs()))
      throw Error("executable plan: instruction " + std::to_string(i) + " (" + n->describe() + ") has " +
                  std::to_string(pi.inputs.size()) + " inputs and " + std::to_string(pi.outputs.size()) +
                  " outputs, the node " + std::to_string(n->num_inputs()) + " and " + std::to_string(n->num_outputs()));
    auto same = [&](const std::vector<int>& ids, bool inputs) {
      for (size_t k = 0; k < ids.size(); ++k) {
        const ir::Value* v = inputs ? n->input(static_cast<int>(k)) : n->output(static_cast<int>(k));
        if (ids[k] >= 0 && p.buffers[ids[k]].value != v)
          throw Error("executable plan: instruction " + std::to_string(i) + " (" + n->describe() + ") " +
                      (inputs ? "input " : "output ") + std::to_string(k) + " is buffer " + std::to_string(ids[k]) +
                      " of '" + p.buffers[ids[k]].value->name() + "', not of the node's value");
      }
    };
    same(pi.inputs, true);
    same(pi.outputs, false);
    lower::Instruction ins;
    ins.node = n;
    ins.backend = pi.spec.str();
    ins.inputs = pi.inputs;
    ins.outputs = pi.outputs;
    p.instructions.push_back(std::move(ins));
  }
  p.graph_inputs = e.graph_inputs;
  p.graph_outputs = e.graph_outputs;
  return p;
}

MemoryPlan memory_plan_of(const ExecutablePlan& e, const lower::Program& p) {
  MemoryPlan m;
  m.arena_bytes = e.arenas.empty() ? 0 : e.arenas[0].bytes;
  m.lower_bound_bytes = e.lower_bound_bytes;
  m.strategy = e.memory_strategy;
  m.offset_of.assign(e.buffers.size(), -1);
  for (const PlanBuffer& b : e.buffers)
    if (b.arena >= 0) m.offset_of[b.id] = b.offset;
  for (Placement pl : live_ranges(p)) {
    pl.offset = m.offset_of[pl.buffer];
    if (pl.offset < 0) throw Error("executable plan: arena buffer " + std::to_string(pl.buffer) + " has no offset");
    m.placements.push_back(pl);
    m.naive_bytes += pl.size;
  }
  std::string problem = check_plan(p, m);
  if (!problem.empty()) throw Error("executable plan: its memory plan is invalid: " + problem);
  return m;
}

}  // namespace kiln::plan
