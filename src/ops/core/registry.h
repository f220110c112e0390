// The op registry: one OpDef per (domain, op type). Op families (src/ops/<family>.cpp)
// register themselves at static-initialization time:
//
//   KILN_REGISTER_OPS(activation) {
//     reg.add({.name = "Relu", .min_inputs = 1, .max_inputs = 1, ...});
//   }
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ops/core/op_def.h"

namespace kiln::ops {

class Registry {
 public:
  static Registry& instance();
  void add(OpDef def);
  // nullptr when unknown.
  const OpDef* find(const std::string& domain, const std::string& name) const;
  // Throws kiln::UnsupportedError naming the node when its op is unknown or its opset is below
  // the definition's since_version.
  const OpDef& lookup(const ir::Node& node) const;
  std::vector<const OpDef*> all() const;

 private:
  std::map<std::pair<std::string, std::string>, OpDef> defs_;
};

struct Registrar {
  explicit Registrar(void (*fn)(Registry&)) { fn(Registry::instance()); }
};

}  // namespace kiln::ops

#define KILN_REGISTER_OPS(family)                                                \
  static void kiln_register_##family(::kiln::ops::Registry& reg);                \
  static ::kiln::ops::Registrar kiln_registrar_##family(&kiln_register_##family); \
  static void kiln_register_##family(::kiln::ops::Registry& reg)
