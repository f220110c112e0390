// Parallel loops for the CPU backend's own kernels on the OpenMP runtime oneDNN already uses
// (libgomp), so kiln's loops and oneDNN's share one thread pool instead of oversubscribing.
// GCC builds compile the kernels with -fopenmp (CMakeLists.txt); others do not (clang's would
// bring in libomp), so there this calls GOMP_parallel, the libgomp entry point GCC emits for
// `#pragma omp parallel`.
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstdint>

#ifndef _OPENMP
extern "C" void GOMP_parallel(void (*fn)(void*), void* data, unsigned num_threads, unsigned flags);
#endif

namespace kiln::backends::cpu {

// Elementwise-like kernels split work across the team from this many elements up. Low on
// purpose: after an op that ran on two threads, each half of its output sits in the cache of
// the core that wrote it, and one thread reading (and overwriting) the other core's fresh lines
// runs 2-3.5x slower than on its own (256 KiB: 8.6 vs 29.7 us on the 2-vCPU Xeon machines),
// while waking a spinning team costs about a microsecond. Split the pixels (the outer dims) in
// order, as the producers do, so each thread reads its own half.
constexpr int64_t kParallelMinElements = 4096;

// Calls f(begin, end) on disjoint ranges covering [0, n), one range per thread of a team of at
// most `threads`; inline when one thread is enough or we are already inside a team.
template <typename F>
void parallel_for(int64_t n, int threads, const F& f) {
  const int64_t team = std::min<int64_t>(threads, n);
  if (team <= 1 || omp_in_parallel()) {
    if (n > 0) f(int64_t{0}, n);
    return;
  }
  struct Job {
    const F* f;
    int64_t n;
  } job{&f, n};
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
