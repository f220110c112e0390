// A team of threads held for the life of an emitted model (kiln compile --threads N): the calling
// thread and N-1 workers split each kernel's work, parallel_for(n, f) calling f(begin, end) on
// contiguous parts of [0, n). Workers spin briefly between kernels (the next one usually follows
// within microseconds) and then sleep, so an idle model costs no CPU. A null team, or a team of
// one, runs f(0, n) on the caller. Where the project is compiled with OpenMP (it calls oneDNN,
// whose threads are OpenMP's), the team is OpenMP's instead, so that one set of threads serves
// both: two sets spinning beside each other on the same cores would take turns.
#pragma once
#ifdef _OPENMP
#include <omp.h>
#endif
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace kiln_kernels {

#ifdef _OPENMP
class Team {
 public:
  explicit Team(int threads) : size_(threads < 1 ? 1 : threads) {}
  Team(const Team&) = delete;
  Team& operator=(const Team&) = delete;

  int size() const { return size_; }

  template <typename F>
  void parallel_for(int64_t n, F&& f) {
    const int parts = static_cast<int>(std::min<int64_t>(size_, n));
    if (parts <= 1) {
      if (n > 0) f(int64_t{0}, n);
      return;
    }
#pragma omp parallel num_threads(parts)
    {
      // OpenMP may give fewer threads than asked: the parts are of the team it gave.
      const int i = omp_get_thread_num(), k = omp_get_num_threads();
      const int64_t b = n * i / k, e = n * (i + 1) / k;
      if (b < e) f(b, e);
    }
  }

 private:
  const int size_;
};
#else
class Team {
 public:
  explicit Team(int threads) : size_(threads < 1 ? 1 : threads) {
    for (int i = 1; i < size_; ++i) workers_.emplace_back([this, i] { work(i); });
  }
  ~Team() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      generation_.fetch_add(1);
    }
    cv_.notify_all();
    for (std::thread& t : workers_) t.join();
  }
  Team(const Team&) = delete;
  Team& operator=(const Team&) = delete;

  int size() const { return size_; }

  template <typename F>
  void parallel_for(int64_t n, F&& f) {
    const int parts = static_cast<int>(std::min<int64_t>(size_, n));
    if (parts <= 1) {
      if (n > 0) f(int64_t{0}, n);
      return;
    }
    using Fn = std::remove_reference_t<F>;
    fn_ = [](void* ctx, int64_t b, int64_t e) { (*static_cast<Fn*>(ctx))(b, e); };
    ctx_ = const_cast<void*>(static_cast<const void*>(&f));
    n_ = n;
    parts_ = parts;
    pending_.store(size_ - 1);  // every worker answers every call, so none can lag a call behind
    {
      std::lock_guard<std::mutex> lock(mu_);
      generation_.fetch_add(1);
    }
    cv_.notify_all();
    run_part(0);
    while (pending_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
  }

 private:
  void run_part(int i) {
    if (i >= parts_) return;
    const int64_t b = n_ * i / parts_, e = n_ * (i + 1) / parts_;
    if (b < e) fn_(ctx_, b, e);
  }

  void work(int i) {
    uint64_t seen = 0;
    for (;;) {
      // Spin a little for the next kernel, then sleep until one comes.
      for (int spin = 0; spin < 20000 && generation_.load(std::memory_order_acquire) == seen; ++spin)
        std::this_thread::yield();
      if (generation_.load(std::memory_order_acquire) == seen) {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return generation_.load() != seen; });
      }
      seen = generation_.load(std::memory_order_acquire);
      if (stop_) return;
      run_part(i);
      pending_.fetch_sub(1, std::memory_order_release);
    }
  }

  const int size_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  bool stop_ = false;
  void (*fn_)(void*, int64_t, int64_t) = nullptr;
  void* ctx_ = nullptr;
  int64_t n_ = 0;
  int parts_ = 0;
};
#endif

// f(begin, end) over [0, n): on the team, or on the caller without one.
template <typename F>
inline void parallel_for(Team* team, int64_t n, F&& f) {
  if (team) team->parallel_for(n, f);
  else if (n > 0) f(int64_t{0}, n);
}

}  // namespace kiln_kernels
