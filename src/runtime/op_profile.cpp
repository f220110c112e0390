#include "runtime/op_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace kiln::runtime {

OpProfile* OpProfile::enabled() {
  static OpProfile* p = [] () -> OpProfile* {
    const char* e = std::getenv("KILN_PROFILE");
    if (!e || !*e || std::string(e) == "0") return nullptr;
    static OpProfile instance;
    instance.per_node_ = std::string(e) == "node";
    return &instance;
  }();
  return p;
}

void OpProfile::add(const ir::Node& n, const std::string& backend, std::chrono::nanoseconds t) {
  std::string key = (n.domain().empty() ? "" : n.domain() + ".") + n.op_type() + " [" + backend + "]";
  if (per_node_) key += " " + n.name();
  std::lock_guard<std::mutex> lock(mu_);
  Entry& e = by_op_[key];
  e.ns += t.count();
  e.calls += 1;
}

std::string OpProfile::report() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<std::string, Entry>> rows(by_op_.begin(), by_op_.end());
  std::sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.second.ns > b.second.ns; });
  int64_t total = 0;
  for (auto& r : rows) total += r.second.ns;
  std::string out = fmt::format("{:<60} {:>10} {:>8} {:>6}\n", "op [backend]", "total ms", "calls", "%");
  for (auto& [k, e] : rows)
    out += fmt::format("{:<60} {:>10.3f} {:>8} {:>6.1f}\n", k, e.ns / 1e6, e.calls, total ? 100.0 * e.ns / total : 0.0);
  return out;
}

OpProfile::~OpProfile() { std::fputs(report().c_str(), stderr); }

}  // namespace kiln::runtime
