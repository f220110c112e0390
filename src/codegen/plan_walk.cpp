#include "codegen/plan_walk.h"

#include <kiln/error.h>

#include <algorithm>

namespace kiln::codegen {

int64_t Operand::numel() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

int64_t Operand::bytes() const { return numel() * static_cast<int64_t>(dtype_size(dtype)); }

namespace {

int position(const std::vector<int>& ids, int id) {
  auto it = std::find(ids.begin(), ids.end(), id);
  return it == ids.end() ? -1 : static_cast<int>(it - ids.begin());
}

class Resolver {
 public:
  Resolver(const PlanSource& s) : s_(s), p_(*s.plan) {}  // NOLINT

  Operand operand(int id, const std::string& where) const {
    Operand o;
    if (id < 0) return o;
    const plan::PlanBuffer& b = p_.buffers.at(id);
    if (b.mirror_of >= 0) {  // the original's storage, on the host
      if (p_.buffers.at(b.mirror_of).mirror_of >= 0)
        throw Error(where + ": buffer " + std::to_string(id) + " mirrors a mirror");
      o = operand(b.mirror_of, where);
      o.buffer = id;
      o.storage.host = true;
      o.root = root_of(id, where);
      return o;
    }
    o.buffer = id;
    o.value = s_.graph->find_value(b.value);
    if (!o.value) throw Error(where + ": buffer " + std::to_string(id) + " holds '" + b.value + "', which the graph lacks");
    if (!o.value->type.is_tensor() || !o.value->type.is_static())
      throw Error(where + ": '" + b.value + "' (" + o.value->type.str() +
                  ") has no static shape; generated code needs every shape fixed at compile time (give it with --dim)");
    o.dtype = o.value->type.dtype;
    o.dims = o.value->type.static_dims();
    const int root = root_of(id, where);
    const plan::PlanBuffer& r = p_.buffers.at(root);
    o.root = root;
    o.root_bytes = r.bytes;
    switch (r.kind) {
      case lower::BufferKind::Input:
        o.storage = {StorageKind::Input, position(p_.graph_inputs, root), 0};
        break;
      case lower::BufferKind::Output:
        o.storage = {StorageKind::Output, position(p_.graph_outputs, root), 0};
        break;
      case lower::BufferKind::Constant:
        o.storage = {StorageKind::Constant, root, 0};
        if (root != id) o.value = s_.graph->find_value(r.value);
        if (!o.value || !o.value->is_constant()) throw Error(where + ": constant '" + r.value + "' has no data");
        break;
      case lower::BufferKind::Intermediate:
        if (r.arena < 0 || r.offset < 0)
          throw Error(where + ": '" + r.value + "' has no place in the arena (its size is known only at run time)");
        o.storage = {StorageKind::Arena, -1, r.offset};
        break;
      case lower::BufferKind::Dynamic:
        throw Error(where + ": '" + r.value + "' has a size known only at run time; generated code needs static sizes");
    }
    if ((o.storage.kind == StorageKind::Input || o.storage.kind == StorageKind::Output) && o.storage.index < 0)
      throw Error(where + ": buffer " + std::to_string(root) + " is not among the plan's graph inputs or outputs");
    return o;
  }

 private:
  int root_of(int id, const std::string& where) const {
    int root = id;
    for (int hops = 0; p_.buffers.at(root).alias_of >= 0; ++hops) {
      if (hops > static_cast<int>(p_.buffers.size())) throw Error(where + ": buffer aliases form a cycle");
      root = p_.buffers.at(root).alias_of;
    }
    return root;
  }

  const PlanSource& s_;
  const plan::ExecutablePlan& p_;
};

}  // namespace

void walk_plan(int signature, const PlanSource& source, Emitter& e) {
  const plan::ExecutablePlan& p = *source.plan;
  const std::vector<ir::Node*> nodes = source.graph->nodes();
  Resolver r(source);
  std::vector<Operand> ins, outs;
  for (int id : p.graph_inputs) ins.push_back(r.operand(id, "graph input"));
  for (int id : p.graph_outputs) outs.push_back(r.operand(id, "graph output"));
  e.begin(signature, source, ins, outs);
  for (size_t i = 0; i < p.instructions.size(); ++i) {
    const plan::PlanInstruction& pi = p.instructions[i];
    const std::string where = "instruction " + std::to_string(i) + " (" + pi.op + " '" + pi.node + "')";
    Step s;
    s.index = static_cast<int>(i);
    s.instruction = &pi;
    if (pi.is_copy()) {
      if (pi.inputs.size() != 1 || pi.outputs.size() != 1) throw Error(where + ": a copy has one input and one output");
      s.inputs.push_back(r.operand(pi.inputs[0], where));
      s.outputs.push_back(r.operand(pi.outputs[0], where));
      e.step(s);
      continue;
    }
    if (pi.node_index < 0 || pi.node_index >= static_cast<int>(nodes.size()) || nodes[pi.node_index]->name() != pi.node ||
        nodes[pi.node_index]->op_type() != pi.op)
      throw Error(where + ": the plan's graph has no such node at index " + std::to_string(pi.node_index));
    s.node = nodes[pi.node_index];
    for (int id : pi.inputs) s.inputs.push_back(r.operand(id, where));
    for (int id : pi.outputs) s.outputs.push_back(r.operand(id, where));
    e.step(s);
  }
  e.end();
}

}  // namespace kiln::codegen
