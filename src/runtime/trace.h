// A session's profile as a Chrome trace (SessionOptions::profile_file; `kiln run/bench --profile
// FILE.json`; Python's enable_profiling): one complete ("X") event per instruction per run, on
// the thread that ran it, with the node, its op, the nodes of its fused group, the shapes of its
// operands, its backend and implementation in args. Loads in Perfetto and chrome://tracing.
// The same events give the text table of `--profile-table` (per op and backend, most time first).
#pragma once
#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "lower/program.h"

namespace kiln::runtime {

class Trace {
 public:
  using Clock = std::chrono::steady_clock;
  explicit Trace(std::string path) : path_(std::move(path)), origin_(Clock::now()) {}

  void add(const lower::Instruction& ins, Clock::time_point start, Clock::time_point end);
  // Drops the events so far (the warm-up runs), keeping the file's time origin.
  void clear();
  // Writes the file (a kiln::Error when it cannot); returns its path.
  std::string write() const;
  // Per op and backend: total ms, calls and share of the time, most time first.
  std::string table() const;
  const std::string& path() const { return path_; }
  size_t size() const;

 private:
  struct Event {
    std::string name, op, backend, impl, group, shapes;
    double start_us = 0, dur_us = 0;
    uint64_t thread = 0;
  };
  std::string path_;
  Clock::time_point origin_;
  mutable std::mutex mu_;
  std::vector<Event> events_;
};

}  // namespace kiln::runtime
