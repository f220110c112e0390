#include "ops/core/registry.h"

#include "ops/core/onnx_versions.h"

namespace kiln::ops {

Registry& Registry::instance() {
  static Registry r;
  return r;
}

void Registry::add(OpDef def) {
  auto key = std::make_pair(def.domain, def.name);
  defs_[key] = std::move(def);
}

const OpDef* Registry::find(const std::string& domain, const std::string& name) const {
  auto it = defs_.find({domain == "ai.onnx" ? "" : domain, name});
  return it == defs_.end() ? nullptr : &it->second;
}

const OpDef& Registry::lookup(const ir::Node& node) const {
  const OpDef* def = find(node.domain(), node.op_type());
  std::string dom = node.domain().empty() ? "ai.onnx" : node.domain();
  if (!def) throw UnsupportedError(node.describe() + ": unsupported op '" + node.op_type() + "' in domain '" + dom + "'");
  int64_t opset = node.owner() ? node.owner()->opset(node.domain()) : 0;
  if (opset < def->since_version)
    throw UnsupportedError(node.describe() + ": op '" + node.op_type() + "' at opset " + std::to_string(opset) +
                           " is not supported (kiln implements it from opset " +
                           std::to_string(def->since_version) + ")");
  if (dom == "ai.onnx")
    if (const OnnxVersionChange* c = onnx_version_change(node.op_type(), opset); c && c->version > def->max_version)
      throw UnsupportedError(node.describe() + ": " + node.op_type() + "-" + std::to_string(c->version) + " (opset " +
                             std::to_string(opset) + ") brought " + c->what + ", which kiln does not implement yet");
  return *def;
}

std::vector<const OpDef*> Registry::all() const {
  std::vector<const OpDef*> out;
  for (const auto& [k, d] : defs_) out.push_back(&d);
  return out;
}

}  // namespace kiln::ops
