// hold_team and HeldTeam (parallel.h): one OpenMP region for a run of kernels, or a
// PersistentTeam's own threads, its workers waiting on a cache line for the loops' shares.
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <thread>

#include "backends/cpu/parallel.h"

namespace kiln::backends::cpu {

thread_local HeldTeam* HeldTeam::current_ = nullptr;
thread_local bool HeldTeam::in_share_ = false;

// Out of line: GCC 12's -fsanitize=null reports loads of these thread-locals inlined into
// other translation units (a test's) as loads through a null pointer.
HeldTeam* HeldTeam::current() { return current_; }
bool HeldTeam::in_share() { return in_share_; }

namespace {

// Spins on a cache line until ready() (a held worker picks up its share within a fraction of a
// microsecond), and after 4096 pauses (tens of microseconds: the other thread was preempted, or
// this one waits through a long serial op) yields the core between looks, so a thread it waits
// for that shares the core can run.
template <typename Ready>
void wait_until(const Ready& ready) {
  for (int spins = 0; !ready(); ++spins)
    if (spins < 4096) _mm_pause();
    else std::this_thread::yield();
}

// How long a PersistentTeam's worker spins without a job before it blocks: about libgomp's
// default spin before its workers sleep.
constexpr std::chrono::microseconds kSpinBeforeBlocking{1000};

}  // namespace

void HeldTeam::post(Job job, void* data, int team, size_t bytes) {
  slot_.job = job;
  if (bytes > 0 && bytes <= kInlineBytes) {
    std::memcpy(slot_.bytes, data, bytes);
    slot_.data = slot_.bytes;
  } else {
    slot_.data = data;
  }
  slot_.team = team;
  // Sequentially consistent with the parked_ count the workers raise before blocking: either
  // this sees a worker parked and wakes it, or the worker sees the new job and does not block.
  slot_.seq.store(++seq_, std::memory_order_seq_cst);
  if (parks_ && parked_.load(std::memory_order_seq_cst) > 0) slot_.seq.notify_all();
}

void HeldTeam::run(int team, Job job, void* data, size_t bytes) {
  post(job, data, team, bytes);
  {
    // A loop inside this thread's share runs inline (a PersistentTeam's holder is in no OpenMP
    // region that would tell parallel_for so).
    struct Share {
      HeldTeam* team;
      explicit Share(HeldTeam* t) : team(t) { current_ = nullptr, in_share_ = true; }
      ~Share() { current_ = team, in_share_ = false; }
    } share(this);
    job(data, 0, team);
  }
  // Every worker answers every job (those past `team` at once), so none can still be reading
  // the slot when the next job is written into it.
  for (int t = 1; t < size_; ++t) wait_until([&] { return done_[t].seq.load(std::memory_order_acquire) == seq_; });
}

void HeldTeam::serve(int thread) {
  in_share_ = true;
  for (uint64_t seen = 0;;) {
    uint64_t s = seen;
    if (parks_) {
      // Spin for the next job (within a run it comes in microseconds, and the next run's first
      // often within a millisecond), then block until post() wakes this thread: waking a
      // blocked thread costs tens of microseconds, more than a small model's whole run.
      auto idle_since = std::chrono::steady_clock::now();
      for (uint32_t spins = 1; (s = slot_.seq.load(std::memory_order_acquire)) == seen; ++spins) {
        _mm_pause();
        if (spins % 256 != 0 || std::chrono::steady_clock::now() - idle_since < kSpinBeforeBlocking) continue;
        parked_.fetch_add(1, std::memory_order_seq_cst);
        slot_.seq.wait(seen, std::memory_order_seq_cst);
        parked_.fetch_sub(1, std::memory_order_relaxed);
        idle_since = std::chrono::steady_clock::now();
      }
    } else {
      wait_until([&] { return (s = slot_.seq.load(std::memory_order_acquire)) != seen; });
    }
    seen = s;
    if (!slot_.job) return;
    if (thread < slot_.team) slot_.job(slot_.data, thread, slot_.team);
    done_[thread].seq.store(s, std::memory_order_release);
  }
}

PersistentTeam::PersistentTeam(int threads) : held_(std::max(1, threads)) {
  held_.parks_ = true;
  for (int t = 1; t < held_.size(); ++t) workers_.emplace_back([this, t] { held_.serve(t); });
}

PersistentTeam::~PersistentTeam() {
  held_.stop();
  for (std::thread& w : workers_) w.join();
}

void hold_team(int threads, const std::function<void()>& body, TeamChoice* choice, PersistentTeam* persistent) {
  // More threads than cores: workers spinning for a job would take the core from the thread
  // they wait for (libgomp throttles its spinning there), so each loop starts its own team.
  // The cores this process may run on, asked once: the call is a system call (sched_getaffinity),
  // a microsecond in a VM, which a model of a few microseconds per run would pay every run.
  static const int cores = omp_get_num_procs();
  if (threads <= 1 || threads > cores || omp_in_parallel() || HeldTeam::current() || HeldTeam::in_share()) {
    body();
    return;
  }
  const bool team = !choice || choice->use_team();
  const auto t0 = std::chrono::steady_clock::now();
  auto timed = [&] {
    if (choice)
      choice->record(team, std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
  };
  // body() with `held` as this thread's team, however body ends.
  auto run_holding = [&](HeldTeam* held) {
    HeldTeam::current_ = held;
    try {
      body();
    } catch (...) {
      HeldTeam::current_ = nullptr;
      throw;
    }
    HeldTeam::current_ = nullptr;
  };
  if (!team) {  // a team of one: the loops run inline on this thread
    HeldTeam solo(1);
    run_holding(&solo);
    timed();
    return;
  }
  if (persistent && persistent->size() == threads && !persistent->busy_.exchange(true, std::memory_order_acquire)) {
    struct Release {
      std::atomic<bool>& busy;
      ~Release() { busy.store(false, std::memory_order_release); }
    } release{persistent->busy_};
    run_holding(&persistent->held_);
    timed();
    return;
  }
  HeldTeam held(threads);
  std::exception_ptr error;
  parallel_for(threads, threads, [&](int64_t, int64_t) {
    const int thread = omp_get_thread_num();
    if (thread > 0) {
      held.serve(thread);
      return;
    }
    held.size_ = omp_get_num_threads();  // the OpenMP runtime may give fewer than asked
    try {
      run_holding(&held);
    } catch (...) {
      error = std::current_exception();
    }
    held.stop();
  });
  if (error) std::rethrow_exception(error);
  timed();
}

}  // namespace kiln::backends::cpu
