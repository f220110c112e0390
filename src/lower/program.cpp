#include "lower/program.h"

#include <kiln/error.h>

#include <unordered_map>
#include <unordered_set>

#include "ops/core/registry.h"

namespace kiln::lower {

const char* buffer_kind_name(BufferKind k) {
  switch (k) {
    case BufferKind::Input: return "input";
    case BufferKind::Constant: return "constant";
    case BufferKind::Intermediate: return "arena";
    case BufferKind::Output: return "output";
    case BufferKind::Dynamic: return "dynamic";
  }
  return "?";
}

int Program::root(int id) const {
  while (id >= 0 && buffers[id].alias_of >= 0) id = buffers[id].alias_of;
  return id;
}

namespace {

// Ops whose reference kernel returns its input's storage re-shaped (a view).
bool is_view(const ir::Node& n) {
  static const char* kViews[] = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"};
  if (!n.domain().empty()) return false;
  for (const char* v : kViews)
    if (n.op_type() == v) return n.num_outputs() == 1 || (n.op_type() == "Dropout" && !n.output(1));
  return false;
}

int64_t static_bytes(const ir::TensorType& t) {
  if (!t.is_tensor() || t.dtype == DType::String || t.dtype == DType::Undefined) return -1;
  auto n = t.static_numel();
  if (!n) return -1;
  return *n * static_cast<int64_t>(dtype_size(t.dtype));
}

}  // namespace

bool elementwise_overwrites(const ir::Node& n, int k) {
  const ops::OpDef* def = ops::Registry::instance().find(n.domain(), n.op_type());
  if (!def || n.num_outputs() != 1 || !n.output(0)) return false;
  if (def->pattern != ops::PatternKind::ElemWise && def->pattern != ops::PatternKind::Broadcast) return false;
  // Variadic kernels (Sum, Max, ...) may clear their output before reading every input.
  if (def->max_inputs < 0) return false;
  const ir::Value* in = n.input(k);
  const ir::Value* out = n.output(0);
  if (!in || in->type.dtype != out->type.dtype) return false;
  if (!in->type.is_static() || !out->type.is_static()) return false;
  return in->type.static_dims() == out->type.static_dims();
}

Program lower(const ir::Graph& g, const LowerOptions& opts) {
  Program p;
  std::unordered_map<const ir::Value*, int> id_of;
  auto add = [&](const ir::Value* v, BufferKind kind) {
    Buffer b;
    b.id = static_cast<int>(p.buffers.size());
    b.value = v;
    b.kind = kind;
    b.bytes = kind == BufferKind::Input || kind == BufferKind::Constant ? 0 : static_bytes(v->type);
    if (b.bytes < 0 && kind == BufferKind::Intermediate) b.kind = BufferKind::Dynamic;
    p.buffers.push_back(b);
    id_of[v] = b.id;
    return b.id;
  };
  for (const ir::Value* v : g.inputs()) p.graph_inputs.push_back(add(v, BufferKind::Input));
  // Constants the program reads: those of its nodes' inputs and its outputs (one a fused body
  // reads is the body's kernel's business, one nothing reads no buffer at all).
  std::unordered_set<const ir::Value*> read;
  for (const ir::Node* n : g.nodes())
    for (const ir::Value* v : n->inputs()) read.insert(v);
  read.insert(g.outputs().begin(), g.outputs().end());
  for (const ir::Value* v : g.constants())
    if (read.count(v)) add(v, BufferKind::Constant);
  std::unordered_map<const ir::Value*, bool> is_output;
  for (const ir::Value* v : g.outputs()) is_output[v] = true;
  for (const ir::Value* v : opts.keep) is_output[v] = true;

  // Remaining uses of each value, to know when an input dies (for in-place reuse).
  std::unordered_map<const ir::Value*, int> remaining;
  for (const ir::Node* n : g.nodes())
    for (const ir::Value* v : n->inputs())
      if (v) ++remaining[v];
  // Values read by subgraphs or returned count as never dying here.
  for (const ir::Value* v : g.outputs()) remaining[v] += 1 << 20;

  for (const ir::Node* n : g.nodes()) {
    Instruction ins;
    ins.node = n;
    for (const ir::Value* v : n->inputs()) {
      if (!v) { ins.inputs.push_back(-1); continue; }
      auto it = id_of.find(v);
      // Outer-scope values of a subgraph are not buffers of this program.
      ins.inputs.push_back(it == id_of.end() ? -1 : it->second);
    }
    bool has_subgraph = false;
    for (const auto& [k, a] : n->attrs) has_subgraph = has_subgraph || a.g || !a.graphs.empty();
    for (int k = 0; k < n->num_outputs(); ++k) {
      const ir::Value* o = n->output(k);
      if (!o) { ins.outputs.push_back(-1); continue; }
      BufferKind kind = is_output.count(o) ? BufferKind::Output : BufferKind::Intermediate;
      int id = add(o, kind);
      Buffer& b = p.buffers[id];
      if (kind == BufferKind::Intermediate && b.kind == BufferKind::Intermediate) {
        if (k == 0 && is_view(*n) && ins.inputs[0] >= 0) {
          // Views share their input's storage, whatever its kind.
          b.alias_of = ins.inputs[0];
        } else if (opts.in_place && !has_subgraph) {
          for (int i = 0; i < n->num_inputs(); ++i) {
            int src = ins.inputs[i];
            if (src < 0 || !(elementwise_overwrites(*n, i) || (opts.writes_over && opts.writes_over(*n, i)))) continue;
            int r = p.root(src);
            if (p.buffers[r].kind != BufferKind::Intermediate || p.buffers[r].bytes < b.bytes) continue;
            // The input must die here: this is its last use and nothing else aliases it live.
            const ir::Value* iv = n->input(i);
            if (remaining[iv] != 1) continue;
            bool other_alias_live = false;
            for (const Buffer& ob : p.buffers)
              if (ob.id != src && ob.id != id && p.root(ob.id) == r && ob.value && remaining[ob.value] > 0)
                other_alias_live = true;
            if (other_alias_live) continue;
            b.alias_of = src;
            b.in_place = true;
            break;
          }
        }
      }
      ins.outputs.push_back(id);
    }
    for (const ir::Value* v : n->inputs())
      if (v) --remaining[v];
    p.instructions.push_back(std::move(ins));
  }
  for (const ir::Value* v : g.outputs()) {
    auto it = id_of.find(v);
    if (it == id_of.end()) throw Error("graph output '" + v->name() + "' has no buffer");
    p.graph_outputs.push_back(it->second);
  }
  return p;
}

}  // namespace kiln::lower
