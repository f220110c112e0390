// What runs one instruction, as data: the backend, the implementation, and every choice kernel
// selection made for it (tile sizes, work splits, layouts, the team size the splits were made
// for). The op itself (attributes, types, constants) is the instruction's node in the plan's
// graph; the spec holds what the backend decided about running it.
//
//   cpu:kiln_winograd{tile=4}   cpu:kiln_pointwise{block=64,split=pixels}   reference
//
// A backend builds a kernel from (node, spec) alone and reports the spec it was built from
// (Kernel::spec()), so a plan can be printed, saved, edited and loaded without re-deciding.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

namespace kiln::plan {

// A resolved parameter: an integer, a list of integers or a name.
using ParamValue = std::variant<int64_t, std::vector<int64_t>, std::string>;
std::string param_str(const ParamValue& v);

struct KernelSpec {
  std::string backend = "reference";  // "cpu"; "reference" = the node's reference kernel
  std::string impl;                   // the implementation: "onednn_winograd", "kiln_pointwise", ...
  int threads = 1;                    // the team size its work splits were made for
  std::map<std::string, ParamValue> params;  // its resolved choices, by name

  bool operator==(const KernelSpec&) const = default;
  bool on_reference() const { return backend == "reference"; }
  // "cpu:kiln_winograd{tile=4}"; "reference".
  std::string str() const;
  // The parameter `name`; a kiln::Error naming it when it is absent or of another kind.
  int64_t get_int(const std::string& name) const;
  const std::vector<int64_t>& get_ints(const std::string& name) const;
  const std::string& get_string(const std::string& name) const;
};

// The valid values of each parameter an implementation lists for one node (for tests that
// edit plans, and for tuning).
using ParamChoices = std::map<std::string, std::vector<ParamValue>>;

nlohmann::ordered_json to_json(const KernelSpec& s);
// The inverse of to_json; a kiln::Error saying what is malformed.
KernelSpec kernel_spec_from_json(const nlohmann::json& j);

}  // namespace kiln::plan
