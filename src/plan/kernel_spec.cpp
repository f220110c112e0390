#include "plan/kernel_spec.h"

#include <kiln/error.h>

namespace kiln::plan {

std::string param_str(const ParamValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  std::string r = "[";
  for (int64_t x : std::get<std::vector<int64_t>>(v)) r += (r.size() > 1 ? "," : "") + std::to_string(x);
  return r + "]";
}

std::string KernelSpec::str() const {
  if (on_reference()) return backend;
  std::string r = backend + ":" + impl;
  if (!params.empty()) {
    r += "{";
    bool first = true;
    for (const auto& [k, v] : params) {
      r += (first ? "" : ",") + k + "=" + param_str(v);
      first = false;
    }
    r += "}";
  }
  return r;
}

namespace {
template <typename T>
const T& get(const KernelSpec& s, const std::string& name, const char* kind) {
  auto it = s.params.find(name);
  if (it == s.params.end()) throw Error("kernel spec " + s.str() + ": no parameter '" + name + "'");
  const T* v = std::get_if<T>(&it->second);
  if (!v) throw Error("kernel spec " + s.str() + ": parameter '" + name + "' is not " + kind);
  return *v;
}
}  // namespace

int64_t KernelSpec::get_int(const std::string& name) const { return get<int64_t>(*this, name, "an integer"); }
const std::vector<int64_t>& KernelSpec::get_ints(const std::string& name) const {
  return get<std::vector<int64_t>>(*this, name, "a list of integers");
}
const std::string& KernelSpec::get_string(const std::string& name) const {
  return get<std::string>(*this, name, "a name");
}

nlohmann::ordered_json to_json(const KernelSpec& s) {
  nlohmann::ordered_json j;
  j["backend"] = s.backend;
  if (s.on_reference()) return j;
  j["impl"] = s.impl;
  j["threads"] = s.threads;
  nlohmann::ordered_json p = nlohmann::ordered_json::object();
  for (const auto& [k, v] : s.params) std::visit([&, &k = k](const auto& x) { p[k] = x; }, v);
  j["params"] = p;
  return j;
}

KernelSpec kernel_spec_from_json(const nlohmann::json& j) {
  auto bad = [&](const std::string& why) { return Error("kernel spec " + j.dump() + ": " + why); };
  if (!j.is_object() || !j.contains("backend") || !j["backend"].is_string()) throw bad("needs a \"backend\" name");
  KernelSpec s;
  s.backend = j["backend"].get<std::string>();
  if (s.on_reference()) return s;
  if (!j.contains("impl") || !j["impl"].is_string()) throw bad("needs an \"impl\" name");
  s.impl = j["impl"].get<std::string>();
  if (j.contains("threads")) {
    if (!j["threads"].is_number_integer() || j["threads"].get<int64_t>() < 1 || j["threads"].get<int64_t>() > 4096)
      throw bad("\"threads\" must be an integer in 1..4096");
    s.threads = j["threads"].get<int>();
  }
  if (j.contains("params")) {
    if (!j["params"].is_object()) throw bad("\"params\" must be an object");
    for (const auto& [k, v] : j["params"].items()) {
      if (v.is_number_integer()) {
        s.params[k] = v.get<int64_t>();
      } else if (v.is_string()) {
        s.params[k] = v.get<std::string>();
      } else if (v.is_array()) {
        std::vector<int64_t> xs;
        for (const auto& x : v) {
          if (!x.is_number_integer()) throw bad("parameter '" + k + "' must hold integers");
          xs.push_back(x.get<int64_t>());
        }
        s.params[k] = std::move(xs);
      } else {
        throw bad("parameter '" + k + "' must be an integer, a list of integers or a name");
      }
    }
  }
  return s;
}

}  // namespace kiln::plan
