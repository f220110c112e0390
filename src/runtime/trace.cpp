#include "runtime/trace.h"

#include <kiln/error.h>

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "backends/backend.h"

namespace kiln::runtime {

namespace {

std::string shapes_of(const ir::Node& n) {
  std::string s;
  auto add = [&](const ir::Value* v) {
    s += s.empty() || s.back() == '>' ? "" : ", ";
    s += v ? v->type.str() : "-";
  };
  for (int i = 0; i < n.num_inputs(); ++i) add(n.has_input(i) ? n.input(i) : nullptr);
  s += " -> ";
  for (int i = 0; i < n.num_outputs(); ++i) {
    if (i) s += ", ";
    s += n.output(i) ? n.output(i)->type.str() : "-";
  }
  return s;
}

// The names of the nodes a fused op stands for (its body graph's), else its own.
std::string group_of(const ir::Node& n) {
  auto it = n.attrs.find("body");
  if (it == n.attrs.end() || !it->second.g) return n.name();
  std::string s;
  for (const ir::Node* m : it->second.g->nodes()) s += (s.empty() ? "" : ", ") + m->name();
  return s;
}

}  // namespace

void Trace::add(const lower::Instruction& ins, Clock::time_point start, Clock::time_point end) {
  const ir::Node& n = *ins.node;
  Event e;
  e.name = n.name().empty() ? n.op_type() : n.name();
  e.op = (n.domain().empty() ? "" : n.domain() + ".") + n.op_type();
  e.backend = ins.backend;
  e.impl = ins.kernel ? ins.kernel->spec().impl : "reference";
  e.group = group_of(n);
  e.shapes = shapes_of(n);
  e.start_us = std::chrono::duration<double, std::micro>(start - origin_).count();
  e.dur_us = std::chrono::duration<double, std::micro>(end - start).count();
  e.thread = std::hash<std::thread::id>{}(std::this_thread::get_id()) % 100000;
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back(std::move(e));
}

void Trace::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  events_.clear();
}

size_t Trace::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_.size();
}

std::string Trace::write() const {
  nlohmann::json events = nlohmann::json::array();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Event& e : events_)
      events.push_back({{"name", e.name}, {"cat", e.op}, {"ph", "X"}, {"ts", e.start_us}, {"dur", e.dur_us},
                        {"pid", 1}, {"tid", e.thread},
                        {"args", {{"op", e.op}, {"nodes", e.group}, {"shapes", e.shapes}, {"backend", e.backend},
                                  {"implementation", e.impl}}}});
  }
  std::ofstream f(path_, std::ios::trunc);
  if (!f) throw Error("cannot write the profile '" + path_ + "'");
  f << nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump() << "\n";
  if (!f) throw Error("cannot write the profile '" + path_ + "'");
  return path_;
}

std::string Trace::table() const {
  struct Row {
    double us = 0;
    int64_t calls = 0;
  };
  std::map<std::string, Row> rows;
  double total = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Event& e : events_) {
      Row& r = rows[e.op + " [" + e.backend + "]"];
      r.us += e.dur_us;
      ++r.calls;
      total += e.dur_us;
    }
  }
  std::vector<std::pair<std::string, Row>> sorted(rows.begin(), rows.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second.us > b.second.us; });
  std::string out = fmt::format("{:<60} {:>10} {:>8} {:>6}\n", "op [backend]", "total ms", "calls", "%");
  for (const auto& [k, r] : sorted)
    out += fmt::format("{:<60} {:>10.3f} {:>8} {:>6.1f}\n", k, r.us / 1e3, r.calls, total > 0 ? 100.0 * r.us / total : 0.0);
  return out;
}

}  // namespace kiln::runtime
