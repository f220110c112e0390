// hold_team and HeldTeam (parallel.h): one OpenMP region for a run of kernels, or a
// PersistentTeam's own threads, its workers waiting on a cache line for the loops' shares.
#include <immintrin.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <thread>
#include <vector>

#include "backends/cpu/parallel.h"

namespace kiln::backends::cpu {

thread_local HeldTeam* HeldTeam::current_ = nullptr;
thread_local bool HeldTeam::in_share_ = false;

// Out of line: GCC 12's -fsanitize=null reports loads of these thread-locals inlined into
// other translation units (a test's) as loads through a null pointer.
HeldTeam* HeldTeam::current() { return current_; }
bool HeldTeam::in_share() { return in_share_; }

namespace {

// One look's wait in a spin on a cache line: a pause, and every kYieldEvery looks the core
// given up instead (sched_yield: returns at once where no other thread wants this core). Two
// threads of a team can share one core (the scheduler placed a new worker beside its holder, a
// kernel that packs a VM's threads onto few vCPUs, a busy machine): one that only paused would
// keep the other, whose share or whose next job it waits for, off the core until preempted
// (a scheduler tick, or a worker's whole spin before it blocks: a millisecond per job).
// 1024 pauses are 4-16 us (a pause takes 4-16 ns on current x86 cores): much longer than a
// hand-off between cores, so a team on two cores rarely pays the system call.
constexpr uint32_t kYieldEvery = 1024;
inline void relax(uint32_t spins) {
  if (spins % kYieldEvery == 0) std::this_thread::yield();
  else _mm_pause();
}

// Spins on a cache line until ready() (a held worker picks up its share within a fraction of a
// microsecond), yielding now and then (relax).
template <typename Ready>
void wait_until(const Ready& ready) {
  for (uint32_t spins = 1; !ready(); ++spins) relax(spins);
}

// How long (looks at the worker's answer) the holder waits after its own share before it takes
// a share its worker has not begun: a worker starts within a microsecond of the hand-off unless
// its core is busy with something else, and looking at the claim sooner would take the line the
// worker claims in out of its cache on every job.
constexpr uint32_t kStealAfter = 2048;

// Takes a share of job `seq` for the caller, unless the other side (the holder or the share's
// worker) took it first: a share's `claimed` only grows, so a worker that saw an older job late
// cannot take a newer one's share by it.
bool claim(std::atomic<uint64_t>& claimed, uint64_t seq) {
  uint64_t had = claimed.load(std::memory_order_relaxed);
  while (had < seq)
    if (claimed.compare_exchange_weak(had, seq, std::memory_order_acq_rel, std::memory_order_relaxed)) return true;
  return false;
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
      HeldTeam* held = current_;
      bool was_in_share = in_share_;
      Share() { current_ = nullptr, in_share_ = true; }
      ~Share() { current_ = held, in_share_ = was_in_share; }
    } share;
    job(data, 0, team);
    // A share no worker has begun a while after this thread finished its own (and the empty
    // one of a worker past `team`) is this thread's now.
    for (int t = 1; t < size_; ++t) {
      auto answered = [&] { return done_[t].seq.load(std::memory_order_acquire) == seq_; };
      uint32_t spins = 1;
      for (; spins <= kStealAfter && !answered(); ++spins) relax(spins);
      mine_[t] = spins > kStealAfter && claim(done_[t].claimed, seq_);
      if (mine_[t] && t < team) job(data, t, team);
    }
  }
  // A worker that took its share answers when it is done; one whose share this thread took
  // reads nothing of the slot, so the next job may be written into it.
  for (int t = 1; t < size_; ++t)
    if (!mine_[t]) wait_until([&] { return done_[t].seq.load(std::memory_order_acquire) == seq_; });
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
        relax(spins);
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
    // The holder ran this share itself (and posts the next job without waiting for this one).
    if (!claim(done_[thread].claimed, s)) continue;
    if (!slot_.job) return;
    if (thread < slot_.team) slot_.job(slot_.data, thread, slot_.team);
    done_[thread].seq.store(s, std::memory_order_release);
  }
}

namespace {

// The CPUs a new worker starts on: those this process may run on other than the creating
// thread's, in turn. The scheduler places a new thread beside its creator; a worker that first
// ran beside its holder stayed there for many milliseconds on a kernel that packs a VM's threads
// onto few vCPUs, each of its jobs waiting for the two to take turns on one core. Empty where the
// affinity calls are missing or there is no other CPU.
std::vector<int> start_cpus() {
  std::vector<int> cpus;
#ifdef __linux__
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  const int here = sched_getcpu();
  if (here < 0 || sched_getaffinity(0, sizeof allowed, &allowed) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (c != here && CPU_ISSET(c, &allowed)) cpus.push_back(c);
#endif
  return cpus;
}

// Moves the calling thread onto `cpu`, then lets it run anywhere it could before: a start, not a
// pinning (the scheduler stays free to move it).
void start_on(int cpu) {
#ifdef __linux__
  cpu_set_t allowed, one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0 || sched_setaffinity(0, sizeof one, &one) != 0) return;
  sched_setaffinity(0, sizeof allowed, &allowed);
#else
  (void)cpu;
#endif
}

}  // namespace

PersistentTeam::PersistentTeam(int threads) : held_(std::max(1, threads)) {
  held_.parks_ = true;
  const std::vector<int> cpus = start_cpus();
  for (int t = 1; t < held_.size(); ++t) {
    const int cpu = cpus.empty() ? -1 : cpus[(t - 1) % cpus.size()];
    workers_.emplace_back([this, t, cpu] {
      if (cpu >= 0) start_on(cpu);
      held_.serve(t);
    });
  }
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
