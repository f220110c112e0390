// The CUDA subset an emitted CUDA project uses, run on the CPU: the same kernel file compiled as
// host C++ (kiln compile --target cuda --check-on-cpu, or -DKILN_MODEL_ON_CPU=ON), so that its
// index arithmetic is checked against reference outputs on machines without a GPU.
//
// A launch runs its grid block by block. A kernel launched with KILN_LAUNCH runs each thread to
// the end in turn; one launched with KILN_LAUNCH_SYNC (it calls __syncthreads or a warp shuffle)
// runs its block's threads as fibers that switch at every barrier, so shared memory (a static
// local: one copy, the block's) and the barrier mean what they mean on the GPU. A barrier in a
// kernel launched without _SYNC aborts with a message.
//
// Device memory is host memory; streams and graphs are no-ops; kiln_cuda::gemm (blas.cuh) is a
// plain loop. Runs one launch at a time, on the calling thread.
#pragma once
#include <ucontext.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <tuple>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __restrict__ __restrict

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

namespace kiln_cuda_shim {

inline dim3 thread_idx, block_idx, block_dim, grid_dim;

// A fiber switch: on x86-64 the callee-saved registers and the stack pointer (no system call),
// elsewhere ucontext's swapcontext.
#if defined(__x86_64__)
extern "C" void kiln_cuda_shim_switch(void** save_sp, void* load_sp);
__asm__(
    ".text\n"
    ".globl kiln_cuda_shim_switch\n"
    ".type kiln_cuda_shim_switch,@function\n"
    "kiln_cuda_shim_switch:\n"
    "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
    "  movq %rsp, (%rdi)\n"
    "  movq %rsi, %rsp\n"
    "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
    "  ret\n"
    ".size kiln_cuda_shim_switch, .-kiln_cuda_shim_switch\n");
#endif

struct Fibers {
  struct Fiber {
    std::vector<char> stack;
#if defined(__x86_64__)
    void* sp = nullptr;
#else
    ucontext_t ctx;
#endif
    bool started = false;  // its loop runs: it waits at the end of a thread for the next
    bool done = false;     // its thread of the current block has ended
  };
  std::vector<Fiber> f;
#if defined(__x86_64__)
  void* scheduler_sp = nullptr;
#else
  ucontext_t scheduler;
#endif
  std::vector<uint64_t> lanes;  // one word per thread, for the warp shuffles
  int current = -1;             // -1: not in a fibered launch
  void (*entry)(void*) = nullptr;
  void* arg = nullptr;
};
inline Fibers fibers;

// From fiber `current` to the scheduler.
inline void to_scheduler() {
  Fibers& s = fibers;
  Fibers::Fiber& f = s.f[static_cast<size_t>(s.current)];
#if defined(__x86_64__)
  kiln_cuda_shim_switch(&f.sp, s.scheduler_sp);
#else
  swapcontext(&f.ctx, &s.scheduler);
#endif
}

// A fiber runs one thread of a block after another: after each it waits for the next block.
[[noreturn]] inline void fiber_main() {
  for (;;) {
    Fibers& s = fibers;
    s.entry(s.arg);
    s.f[static_cast<size_t>(s.current)].done = true;
    to_scheduler();
  }
}

// From the scheduler to fiber t, until it reaches a barrier or the end of its thread.
inline void resume(unsigned t) {
  constexpr size_t kStack = 256 * 1024;
  Fibers& s = fibers;
  Fibers::Fiber& f = s.f[t];
  if (!f.started) {
    f.started = true;
    f.stack.resize(kStack);
#if defined(__x86_64__)
    // The stack as kiln_cuda_shim_switch leaves it: six registers, then fiber_main's address and
    // a return address slot, 16-byte aligned as after a call.
    uintptr_t top = reinterpret_cast<uintptr_t>(f.stack.data() + kStack) & ~uintptr_t{15};
    void** sp = reinterpret_cast<void**>(top);
    *--sp = nullptr;
    *--sp = reinterpret_cast<void*>(&fiber_main);
    for (int r = 0; r < 6; ++r) *--sp = nullptr;
    f.sp = sp;
#else
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack.data();
    f.ctx.uc_stack.ss_size = kStack;
    f.ctx.uc_link = nullptr;
    makecontext(&f.ctx, fiber_main, 0);
#endif
  }
#if defined(__x86_64__)
  kiln_cuda_shim_switch(&s.scheduler_sp, f.sp);
#else
  swapcontext(&s.scheduler, &f.ctx);
#endif
}

// Runs every thread of the block once to its next barrier, until all have ended.
inline void run_block_fibered(unsigned threads, void (*entry)(void*), void* arg) {
  Fibers& s = fibers;
  if (s.f.size() < threads) s.f.resize(threads);
  s.lanes.assign(threads, 0);
  s.entry = entry;
  s.arg = arg;
  for (unsigned t = 0; t < threads; ++t) s.f[t].done = false;
  for (bool live = true; live;) {
    live = false;
    for (unsigned t = 0; t < threads; ++t) {
      if (s.f[t].done) continue;
      s.current = static_cast<int>(t);
      thread_idx = dim3(t % block_dim.x, t / block_dim.x % block_dim.y, t / (block_dim.x * block_dim.y));
      resume(t);
      live = live || !s.f[t].done;
    }
  }
  s.current = -1;
}

inline void barrier() {
  if (fibers.current < 0) {
    std::fprintf(stderr, "kiln cuda shim: __syncthreads in a kernel not launched with KILN_LAUNCH_SYNC\n");
    std::abort();
  }
  to_scheduler();
}

template <class T>
T shuffle(T v, int from_lane_offset, bool xor_mode) {
  static_assert(sizeof(T) <= 8, "a shuffled value fits a word");
  Fibers& f = fibers;
  if (f.current < 0) barrier();  // aborts with the message
  const unsigned t = static_cast<unsigned>(f.current);
  uint64_t w = 0;
  std::memcpy(&w, &v, sizeof(T));
  f.lanes[t] = w;
  barrier();
  const unsigned lane = t % 32, base = t - lane;
  const unsigned src_lane = xor_mode ? (lane ^ static_cast<unsigned>(from_lane_offset)) : lane + static_cast<unsigned>(from_lane_offset);
  T r = v;
  if (src_lane < 32 && base + src_lane < f.lanes.size()) std::memcpy(&r, &f.lanes[base + src_lane], sizeof(T));
  barrier();
  return r;
}

template <class... P, class... A>
void launch_grid(void (*kernel)(P...), dim3 grid, dim3 block, bool fibered, A... args) {
  grid_dim = grid;
  block_dim = block;
  const unsigned threads = block.x * block.y * block.z;
  struct Call {
    void (*k)(P...);
    std::tuple<A...> a;
    static void run(void* self) {
      Call* c = static_cast<Call*>(self);
      std::apply(c->k, c->a);
    }
  } call{kernel, std::tuple<A...>(args...)};
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        block_idx = dim3(bx, by, bz);
        if (fibered) {
          run_block_fibered(threads, &Call::run, &call);
          continue;
        }
        for (unsigned t = 0; t < threads; ++t) {
          thread_idx = dim3(t % block.x, t / block.x % block.y, t / (block.x * block.y));
          Call::run(&call);
        }
      }
}

template <class... P>
struct Launch {
  void (*kernel)(P...);
  dim3 grid, block;
  bool fibered;
  template <class... A>
  void operator()(A... args) const {
    launch_grid(kernel, grid, block, fibered, static_cast<P>(args)...);
  }
};

template <class... P>
Launch<P...> launcher(void (*kernel)(P...), dim3 grid, dim3 block, bool fibered) {
  return {kernel, grid, block, fibered};
}

}  // namespace kiln_cuda_shim

#define threadIdx (::kiln_cuda_shim::thread_idx)
#define blockIdx (::kiln_cuda_shim::block_idx)
#define blockDim (::kiln_cuda_shim::block_dim)
#define gridDim (::kiln_cuda_shim::grid_dim)

inline void __syncthreads() { kiln_cuda_shim::barrier(); }
template <class T>
inline T __shfl_down_sync(unsigned, T v, int delta) {
  return kiln_cuda_shim::shuffle(v, delta, false);
}
template <class T>
inline T __shfl_xor_sync(unsigned, T v, int mask) {
  return kiln_cuda_shim::shuffle(v, mask, true);
}

#define KILN_LAUNCH(kernel, grid, block, stream) ::kiln_cuda_shim::launcher(kernel, grid, block, false)
#define KILN_LAUNCH_SYNC(kernel, grid, block, stream) ::kiln_cuda_shim::launcher(kernel, grid, block, true)

// The runtime API calls model.cu makes, on host memory.
typedef int cudaError_t;
typedef void* cudaStream_t;
typedef void* cudaGraph_t;
typedef void* cudaGraphExec_t;
constexpr cudaError_t cudaSuccess = 0;
enum cudaMemcpyKind { cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice, cudaMemcpyDefault };
inline const char* cudaGetErrorString(cudaError_t) { return "no error (kiln cuda shim)"; }
inline cudaError_t cudaGetLastError() { return cudaSuccess; }
inline cudaError_t cudaMalloc(void** p, size_t bytes) {
  *p = std::aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
  return *p ? cudaSuccess : 2;
}
inline cudaError_t cudaFree(void* p) {
  std::free(p);
  return cudaSuccess;
}
inline cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, cudaMemcpyKind, cudaStream_t) {
  if (n) std::memmove(d, s, n);
  return cudaSuccess;
}
inline cudaError_t cudaMemcpy(void* d, const void* s, size_t n, cudaMemcpyKind k) { return cudaMemcpyAsync(d, s, n, k, nullptr); }
inline cudaError_t cudaMemsetAsync(void* d, int v, size_t n, cudaStream_t) {
  std::memset(d, v, n);
  return cudaSuccess;
}
inline cudaError_t cudaStreamCreate(cudaStream_t* s) {
  *s = nullptr;
  return cudaSuccess;
}
inline cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
typedef void (*cudaHostFn_t)(void*);
inline cudaError_t cudaLaunchHostFunc(cudaStream_t, cudaHostFn_t fn, void* data) {
  fn(data);
  return cudaSuccess;
}
