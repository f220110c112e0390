// \file Common-subexpression elimination. Two nodes with the same op, domain, attributes and
// input values compute the same outputs (for deterministic ops), so the later one's outputs
// are replaced by the earlier one's. Constants with equal dtype, dims and bytes are merged
// first, so `Reshape(x, [1,128,4,64])` built from two separate Constant nodes also meets.
#include <kiln/error.h>

#include <cstring>
#include <unordered_map>
#include <vector>

#include "ops/core/registry.h"
#include "passes/graph_util.h"
#include "passes/pass.h"

namespace kiln::passes {

namespace {

void put_tensor(std::string& k, const Tensor& t) {
  k += dtype_name(t.dtype()) + "[";
  for (int64_t d : t.dims()) k += std::to_string(d) + ",";
  k += "]";
  if (t.dtype() == DType::String) {
    for (int64_t i = 0; i < t.numel(); ++i) k += t.data<std::string>()[i] + '\0';
  } else if (t.raw()) {
    k.append(static_cast<const char*>(t.raw()), t.nbytes());
  }
}

// A byte string that is equal exactly when two nodes compute the same thing; empty when the
// node must not be merged.
std::string node_key(const ir::Node& n) {
  if (has_subgraph(n)) return "";
  const ops::OpDef* def = ops::Registry::instance().find(n.domain(), n.op_type());
  if (!def || !def->deterministic) return "";
  std::string k = n.domain() + "\x01" + n.op_type() + "\x01" + std::to_string(n.num_outputs()) + "\x01";
  for (const ir::Value* v : n.inputs()) {
    const void* p = v;
    k.append(reinterpret_cast<const char*>(&p), sizeof p);
  }
  for (const ir::Value* o : n.outputs()) k += o ? "o" : "-";
  for (const auto& [name, a] : n.attrs) {
    k += "\x02" + name + "\x03" + std::to_string(static_cast<int>(a.kind)) + ":";
    switch (a.kind) {
      case ir::Attribute::Kind::Float: k.append(reinterpret_cast<const char*>(&a.f), sizeof a.f); break;
      case ir::Attribute::Kind::Int: k += std::to_string(a.i); break;
      case ir::Attribute::Kind::String: k += a.s; break;
      case ir::Attribute::Kind::Tensor: put_tensor(k, a.t); break;
      case ir::Attribute::Kind::Floats: k.append(reinterpret_cast<const char*>(a.floats.data()), a.floats.size() * 4); break;
      case ir::Attribute::Kind::Ints:
        for (int64_t i : a.ints) k += std::to_string(i) + ",";
        break;
      case ir::Attribute::Kind::Strings:
        for (const auto& s : a.strings) k += s + '\0';
        break;
      case ir::Attribute::Kind::Tensors:
        for (const auto& t : a.tensors) put_tensor(k, t);
        break;
      default: return "";
    }
  }
  return k;
}

class Cse : public Pass {
 public:
  std::string name() const override { return "cse"; }

  bool run(ir::Graph& g) override {
    bool changed = merge_constants(g);
    std::unordered_map<std::string, ir::Node*> seen;
    for (ir::Node* n : g.nodes()) {
      std::string k = node_key(*n);
      if (k.empty()) continue;
      auto [it, fresh] = seen.emplace(std::move(k), n);
      if (fresh) continue;
      ir::Node* keep = it->second;
      for (int i = 0; i < n->num_outputs(); ++i)
        if (n->output(i)) g.replace_all_uses(n->output(i), keep->output(i));
      changed = true;
    }
    return changed;
  }

 private:
  // Constants are grouped by dtype and dims and compared byte for byte within a group (memcmp
  // stops at the first difference): keying them by their whole contents would copy every
  // weight into a string on every run of the pass.
  static bool merge_constants(ir::Graph& g) {
    bool changed = false;
    std::unordered_map<std::string, std::vector<ir::Value*>> groups;
    for (ir::Value* v : g.constants()) {
      if (v->uses().empty() || v->constant().is_sequence() || v->constant().is_none()) continue;
      const Tensor& t = v->constant();
      std::string k = dtype_name(t.dtype()) + "[";
      for (int64_t d : t.dims()) k += std::to_string(d) + ",";
      std::vector<ir::Value*>& kept = groups[k];
      ir::Value* same = nullptr;
      for (ir::Value* w : kept)
        if (same_contents(w->constant(), t)) {
          same = w;
          break;
        }
      if (!same) {
        kept.push_back(v);
        continue;
      }
      if (is_graph_output(g, v)) continue;
      g.replace_all_uses(v, same);
      changed = true;
    }
    return changed;
  }

  static bool same_contents(const Tensor& a, const Tensor& b) {
    if (a.dtype() != b.dtype() || a.dims() != b.dims()) return false;
    if (a.dtype() == DType::String) {
      for (int64_t i = 0; i < a.numel(); ++i)
        if (a.data<std::string>()[i] != b.data<std::string>()[i]) return false;
      return true;
    }
    if (a.nbytes() == 0 || a.raw() == b.raw()) return true;
    return a.raw() && b.raw() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
  }
};

}  // namespace

std::unique_ptr<Pass> make_cse() { return std::make_unique<Cse>(); }

}  // namespace kiln::passes
