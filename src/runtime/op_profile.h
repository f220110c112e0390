// Time per op type and backend across all runs of the process, printed to stderr at exit, when
// the environment sets KILN_PROFILE=1 (per node with KILN_PROFILE=node): ORT's
// enable_profiling in its simplest form. For
// finding where a model's time goes; benchmarks (kiln bench) leave it off.
#pragma once
#include <chrono>
#include <map>
#include <mutex>
#include <string>

#include "ir/graph.h"

namespace kiln::runtime {

class OpProfile {
 public:
  // The process-wide profile, or nullptr when KILN_PROFILE is not set.
  static OpProfile* enabled();
  void add(const ir::Node& n, const std::string& backend, std::chrono::nanoseconds t);
  std::string report() const;  // one line per op type and backend, most time first
  ~OpProfile();

 private:
  struct Entry { int64_t ns = 0, calls = 0; };
  mutable std::mutex mu_;
  std::map<std::string, Entry> by_op_;
  bool per_node_ = false;
};

}  // namespace kiln::runtime
