// Parallel loops for the CPU backend's own kernels on the OpenMP runtime oneDNN already uses
// (libgomp), so kiln's loops and oneDNN's share one thread pool instead of oversubscribing.
// GCC builds compile the kernels with -fopenmp (CMakeLists.txt); others do not (clang's would
// bring in libomp), so there this calls GOMP_parallel, the libgomp entry point GCC emits for
// `#pragma omp parallel`.
//
// Between the kernels of one run the team can stay up (hold_team, which the executor uses for
// runs of kernels whose only threading is parallel_for, Kernel::runs_in_team): a loop then
// hands its shares to the held workers through one cache line instead of starting an OpenMP
// region. A libgomp region costs microseconds even with spinning workers (the worker starts
// well after the call, and a cache line takes hundreds of nanoseconds from one core to the
// other), several times what a loop handed to a held team costs, and a CNN runs dozens of such
// loops per run (bench/results/history-code-comments.md).
#pragma once
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "backends/team_choice.h"

#ifndef _OPENMP
extern "C" void GOMP_parallel(void (*fn)(void*), void* data, unsigned num_threads, unsigned flags);
#endif

namespace kiln::backends::cpu {

using backends::TeamChoice;

// Elementwise-like kernels split work across the team from this many elements up. Low on
// purpose: after an op that ran on two threads, each half of its output sits in the cache of
// the core that wrote it, and one thread reading (and overwriting) the other core's fresh lines
// runs several times slower than on its own, while waking a spinning team costs far less.
// Split the pixels (the outer dims) in order, as the producers do, so each thread reads its own
// half.
constexpr int64_t kParallelMinElements = 4096;

// Kernels whose outputs are products (convolutions, matrix products) split from this many
// multiply-adds as well, whatever their output count: their work per output is the depth of the
// product, so a late layer with a few pixels and megabytes of weights (a 1x1 conv of 2048 inputs
// on a 3x3 image: 9 pixels, 8M multiply-adds) is well worth a second thread though it has fewer
// outputs than kParallelMinElements. An AVX-512 FMA does 16 multiply-adds, so this is the
// elementwise threshold counted in vector instructions.
constexpr int64_t kParallelMinMacs = kParallelMinElements * 16;

// The team for a kernel of `outputs` output elements costing `macs` multiply-adds: `threads`
// when either reaches its threshold, else one.
inline int product_team(int64_t outputs, int64_t macs, int threads) {
  return outputs >= kParallelMinElements || macs >= kParallelMinMacs ? threads : 1;
}

class PersistentTeam;

// The team held by hold_team: its calling thread hands out jobs, the others wait for them.
class HeldTeam {
 public:
  using Job = void (*)(void* data, int thread, int team);
  explicit HeldTeam(int size)
      : size_(size), done_(new Done[static_cast<size_t>(size)]), mine_(static_cast<size_t>(size)) {}
  // The team this thread holds and may hand a job to now: nullptr on the workers, outside
  // hold_team, and while this thread runs its own share of a job (a loop nested in it runs inline).
  static HeldTeam* current();
  int size() const { return size_; }
  // Runs job(data, t, team) for t in [0, team) (team <= size()), t = 0 on this thread. The
  // workers get a copy of data's first `bytes` bytes in the line they wait on, where they fit
  // (kInlineBytes): a job's arguments then reach them with the hand-off itself, not as one more
  // line fetched from this thread's stack. A share whose worker has not begun it when this
  // thread is done with its own runs here instead (each share is claimed once, by whichever
  // thread comes first): a worker whose core the machine gave to another process for a while
  // then costs the job its share's time, not the time until that worker runs again.
  void run(int team, Job job, void* data, size_t bytes = 0);
  static constexpr size_t kInlineBytes = 32;
  // The workers' side: runs the jobs handed out until stop().
  void serve(int thread);
  void stop() { post(nullptr, nullptr, 0); }
  // Whether this thread runs a share of a job now, or serves a team (a loop there runs inline).
  static bool in_share();
  // Whether the workers are waiting for the next job now: each answered the last job (this
  // thread did not run its share for it) and none has blocked since. Not so at a hold's first
  // job (an OpenMP region's workers are still starting), after a PersistentTeam's workers
  // blocked, or after a job whose share a worker had not begun: a job then waits for them (or
  // this thread runs their shares), which a loop of a few microseconds should not.
  bool workers_waiting() const {
    if (seq_ == 0 || parked_.load(std::memory_order_relaxed) != 0) return false;
    for (int t = 1; t < size_; ++t)
      if (done_[t].seq.load(std::memory_order_relaxed) != seq_) return false;
    return true;
  }

 private:
  friend void hold_team(int threads, const std::function<void()>& body, TeamChoice* choice, PersistentTeam* persistent);
  friend class PersistentTeam;
  struct alignas(64) Slot {
    std::atomic<uint64_t> seq{0};
    Job job = nullptr;
    void* data = nullptr;
    int team = 0;
    alignas(8) unsigned char bytes[kInlineBytes];  // the job's arguments, when they fit
  };
  static_assert(sizeof(Slot) == 64, "a slot is one cache line");
  struct alignas(64) Done {
    std::atomic<uint64_t> seq{0};  // the last job whose share this worker answered
    // The last job whose share for this worker someone took, in a line of its own: the holder
    // reads it only when the worker is late, so a worker's claim finds it in its own cache.
    alignas(64) std::atomic<uint64_t> claimed{0};
  };
  void post(Job job, void* data, int team, size_t bytes = 0);
  static thread_local HeldTeam* current_;
  static thread_local bool in_share_;
  int size_;
  // Workers that outlive their holder (PersistentTeam) block after a while without a job
  // (`parked_` of them now), so an idle session holds no core; post() then wakes them.
  bool parks_ = false;
  std::atomic<int> parked_{0};
  Slot slot_;
  std::unique_ptr<Done[]> done_;
  uint64_t seq_ = 0;
  std::vector<char> mine_;  // the holder's: which workers' shares of the current job it claimed
};

// A team whose workers are threads of its own that stay between holds, for runs in which no
// kernel starts an OpenMP region (every instruction's threading is parallel_for): there a
// held team's OpenMP region is the only one, and starting it (several microseconds where a
// cache line takes hundreds of nanoseconds between cores) costs as much as a small model's
// kernels gain from the second thread. Its workers spin a while after a hold, so the next
// run's loops reach them at once, then block. Kept away from runs with OpenMP kernels: a
// libgomp worker spinning after its region would share a core with one of these.
class PersistentTeam {
 public:
  explicit PersistentTeam(int threads);
  ~PersistentTeam();
  PersistentTeam(const PersistentTeam&) = delete;
  PersistentTeam& operator=(const PersistentTeam&) = delete;
  int size() const { return held_.size(); }

 private:
  friend void hold_team(int threads, const std::function<void()>& body, TeamChoice* choice, PersistentTeam* persistent);
  HeldTeam held_;
  std::atomic<bool> busy_{false};  // one holder at a time; another caller makes a team of its own
  std::vector<std::thread> workers_;
};

// Runs body() on this thread while a team of `threads` threads (this one included) is held
// for the parallel loops body starts; plainly when threads <= 1, when there are fewer cores
// than threads, or inside a team already. With `choice`, the stretch's loops may instead run on
// this thread alone (a team of one) when that has been faster (backends/team_choice.h). With
// `persistent` (of `threads` threads, not held by another caller now), its workers are the
// team instead of an OpenMP region's.
// An exception from body() is rethrown here once the team is released.
void hold_team(int threads, const std::function<void()>& body, TeamChoice* choice = nullptr,
               PersistentTeam* persistent = nullptr);

// Calls f(begin, end) on disjoint ranges covering [0, n), one range per thread of a team of at
// most `threads`: the held team's when this thread holds one (hold_team), else an OpenMP
// region's; inline when one thread is enough or we are already inside a team.
template <typename F>
void parallel_for(int64_t n, int threads, const F& f) {
  const int64_t team = std::min<int64_t>(threads, n);
  struct Job {
    const F* f;
    int64_t n;
  } job{&f, n};
  if (team > 1)
    if (HeldTeam* held = HeldTeam::current()) {
      held->run(static_cast<int>(std::min<int64_t>(team, held->size())), [](void* p, int t, int nt) {
        const Job& j = *static_cast<const Job*>(p);
        const int64_t b = j.n * t / nt, e = j.n * (t + 1) / nt;
        if (b < e) (*j.f)(b, e);
      }, &job, sizeof(job));
      return;
    }
  if (team <= 1 || omp_in_parallel() || HeldTeam::in_share()) {
    if (n > 0) f(int64_t{0}, n);
    return;
  }
  auto body = [](void* p) {
    const Job& j = *static_cast<const Job*>(p);
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t b = j.n * t / nt, e = j.n * (t + 1) / nt;
    if (b < e) (*j.f)(b, e);
  };
#ifdef _OPENMP
#pragma omp parallel num_threads(static_cast<int>(team))
  body(&job);
#else
  GOMP_parallel(body, &job, static_cast<unsigned>(team), 0);
#endif
}

}  // namespace kiln::backends::cpu
