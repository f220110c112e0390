// Limits on what a model can make kiln do. A model file is untrusted input: its dims can ask
// for any amount of memory and its loops for any number of iterations. Going over a limit is a
// kiln::Error that names the node or value, never an OOM kill or a hang.
#pragma once
#include <cstdint>
#include <string>

namespace kiln {

// The default cap on one allocation sized by the model (a tensor, an initializer, a run's
// arena): 16 GiB or the machine's physical memory, whichever is smaller.
//  - Not more than physical memory: tensors are zero-filled, so every page of a larger
//    allocation would be touched and the process would be OOM-killed (or swap to a crawl)
//    instead of getting an error it can report.
//  - Not more than 16 GiB: no single tensor of an inference model comes near it (the largest
//    embedding tables and KV caches are a few GiB), while one hostile dim asks for terabytes;
//    a cap that grew with a large server would let such a file take the whole machine.
// Raise it per session (SessionOptions::memory_cap_bytes, `kiln run --memory-cap`).
int64_t default_memory_cap_bytes();

// Iterations one Loop node may run before it is an error: far more than any real model needs,
// few enough that a condition that never becomes false ends in minutes, not never.
constexpr int64_t kDefaultMaxLoopIterations = int64_t{1} << 31;

struct Limits {
  int64_t memory_cap_bytes = default_memory_cap_bytes();
  int64_t max_loop_iterations = kDefaultMaxLoopIterations;
};

// The limits in force on the calling thread: those of its innermost LimitsScope, else the
// defaults. Kernels run on the thread that called Session::run, so they see its session's.
const Limits& current_limits();

// Sets the calling thread's limits while it exists. Sessions hold one while loading,
// compiling and running a model.
class LimitsScope {
 public:
  explicit LimitsScope(const Limits& limits);
  ~LimitsScope();
  LimitsScope(const LimitsScope&) = delete;
  LimitsScope& operator=(const LimitsScope&) = delete;

 private:
  Limits mine_;
  const Limits* saved_;
};

// Throws kiln::Error("<what> needs N bytes, more than the memory cap of C bytes") when `bytes`
// is over the calling thread's memory cap.
void check_memory_cap(int64_t bytes, const std::string& what);

}  // namespace kiln
