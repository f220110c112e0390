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
// Streams defer: a launch, an async copy or memset, a host function or a product (blas.cuh) on a
// stream made by cudaStreamCreate is queued on that stream, its arguments taken by value, and
// runs only at a synchronization point (cudaStreamSynchronize, cudaEventSynchronize,
// cudaDeviceSynchronize, cudaMemcpy, cudaFree, cudaStreamDestroy, any operation on the null
// stream), which runs the work it must wait for and no more: a stream synchronization runs that
// stream and, through its cudaStreamWaitEvent waits, the other streams' work up to the awaited
// cudaEventRecord. Among the streams whose next item can run, the scheduler picks by
// KILN_CUDA_SHIM_ORDER, read once (kiln_cuda_shim::set_order in tests): `newest` (the default)
// runs the most recently created stream first, so side streams run before the main stream's
// earlier work; `oldest` runs them as late as it can. So a missing event wait, which on a GPU
// is a race that usually goes unnoticed, shows as a wrong answer here: a branch that reads what
// another stream writes without waiting for it reads it stale under one order or the other, and
// work joined by no wait does not run by the synchronization at all. The null stream is the
// legacy default stream: an operation on it runs all queued work first, then runs at once.
//
// Device memory is host memory; there are no graphs (model.cu launches one by one here);
// kiln_cuda::gemm (blas.cuh) is a plain loop. One host thread: work runs on the calling thread,
// one item at a time, and a CUDA call from inside a queued item (CUDA forbids them in host
// functions) aborts with a message.
#pragma once
#include <ucontext.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>
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

// Streams and events. A stream is a queue of work items; a cudaEventRecord is an item too, and
// a cudaStreamWaitEvent an item that holds its stream until the record it names has run. The
// items run at synchronization points only: each runs the work it has to wait for (need()), in
// the order the policy picks (pick()), and then returns.

struct Stream;

// One cudaEventRecord: done once its stream has run everything queued before it.
struct Record {
  Stream* stream = nullptr;  // where it is queued, while not done
  uint64_t seq = 0;          // its place in that stream's queue, counting every item ever queued
  bool done = false;
};

// An item of a stream's queue: work (a launch, a copy, a host function, a product), a record to
// mark done, or a wait for a record.
struct Item {
  std::function<void()> work;
  std::shared_ptr<Record> record;
  std::shared_ptr<Record> wait;
};

// What a cudaStream_t points to.
struct Stream {
  uint64_t index = 0;  // its place in creation order (the order the policy picks by), for messages
  std::deque<Item> items;
  uint64_t popped = 0;  // items run so far: items[i] was the (popped + i)th queued
  size_t need = 0;      // the items at the front that the running synchronization must run
};

// An event is its most recent record (null when never recorded): a wait or a synchronization
// made now is about that one, even if the event is recorded again before it runs.
struct Event {
  std::shared_ptr<Record> latest;
};

// Which stream runs first when several can: the most recently created (side streams as early as
// possible) or the first created (side streams as late as possible).
enum class Order { newest, oldest };

struct Scheduler {
  std::vector<std::unique_ptr<Stream>> streams;  // live ones, in creation order
  uint64_t created = 0;
  Order order = Order::newest;
  bool order_known = false;  // read from the environment, or set by set_order
  bool in_work = false;      // an item (or null-stream work) is running
};
inline Scheduler scheduler;

[[noreturn]] inline void fatal(const char* what, const char* call) {
  std::fprintf(stderr, "kiln cuda shim: %s%s\n", what, call);
  std::abort();
}

// KILN_CUDA_SHIM_ORDER's value (null or empty: the default). Anything else aborts: a typo would
// quietly check one order only.
inline Order order_named(const char* name) {
  if (!name || !*name || std::strcmp(name, "newest") == 0) return Order::newest;
  if (std::strcmp(name, "oldest") == 0) return Order::oldest;
  fatal("KILN_CUDA_SHIM_ORDER must be newest or oldest, not ", name);
}

inline Order order() {
  Scheduler& q = scheduler;
  if (!q.order_known) {
    q.order = order_named(std::getenv("KILN_CUDA_SHIM_ORDER"));
    q.order_known = true;
  }
  return q.order;
}

// For tests: the order from now on, whatever the environment says.
inline void set_order(Order o) {
  scheduler.order = o;
  scheduler.order_known = true;
}

// CUDA forbids CUDA calls in a host function; here one would also re-enter the scheduler while it
// runs an item.
inline void outside_work(const char* call) {
  if (scheduler.in_work) fatal("a CUDA call inside queued work (a host function or kernel): ", call);
}

// A stream argument: one cudaStreamCreate made and cudaStreamDestroy has not freed.
inline void check_live(const Stream* s, const char* call) {
  for (const auto& t : scheduler.streams)
    if (t.get() == s) return;
  fatal("an unknown or destroyed stream passed to ", call);
}

inline void run_work(const std::function<void()>& work) {
  scheduler.in_work = true;
  work();
  scheduler.in_work = false;
}

inline bool runnable(const Item& it) { return !it.wait || it.wait->done; }

// Runs the item at s's front, taken off the queue first.
inline void run_front(Stream* s) {
  Item it = std::move(s->items.front());
  s->items.pop_front();
  ++s->popped;
  --s->need;
  if (it.record) {
    it.record->done = true;
    it.record->stream = nullptr;
  }
  if (it.work) run_work(it.work);
}

// Where record r (not done) is in its stream's queue.
inline size_t place(const Record& r) { return static_cast<size_t>(r.seq - r.stream->popped); }

// Marks the first n items of s needed, and through their waits the work those wait for.
inline void need(Stream* s, size_t n) {
  std::vector<std::pair<Stream*, size_t>> todo{{s, n}};
  while (!todo.empty()) {
    const auto [t, k] = todo.back();
    todo.pop_back();
    const size_t from = t->need;
    if (k <= from) continue;
    t->need = k;
    for (size_t i = from; i < k; ++i)
      if (const Record* r = t->items[i].wait.get(); r && !r->done) todo.emplace_back(r->stream, place(*r) + 1);
  }
}

// The stream to run next: by the order, among those whose next needed item can run; null when
// none can.
inline Stream* pick() {
  const bool newest = order() == Order::newest;
  Stream* best = nullptr;
  for (const auto& s : scheduler.streams)
    if (s->need > 0 && runnable(s->items.front()) && (!best || newest)) best = s.get();
  return best;
}

// Runs the needed work: the picked stream until it blocks or has run its needed items, then the
// next pick. Needed work left then waits for a record that nothing can run.
inline void run_needed() {
  while (Stream* s = pick())
    while (s->need > 0 && runnable(s->items.front())) run_front(s);
  for (const auto& s : scheduler.streams)
    if (s->need > 0) {
      std::fprintf(stderr, "kiln cuda shim: stream %llu (in creation order) waits for an event record nothing runs\n",
                   static_cast<unsigned long long>(s->index));
      std::abort();
    }
}

inline void sync_stream(Stream* s) {
  need(s, s->items.size());
  run_needed();
}

inline void sync_record(const Record* r) {
  if (!r || r->done) return;
  need(r->stream, place(*r) + 1);
  run_needed();
}

inline void sync_all() {
  for (const auto& s : scheduler.streams) need(s.get(), s->items.size());
  run_needed();
}

// Work on stream s: queued; on the null stream, run now, after everything queued.
inline void submit(Stream* s, std::function<void()> work, const char* call) {
  outside_work(call);
  if (!s) {
    sync_all();
    run_work(work);
    return;
  }
  check_live(s, call);
  s->items.push_back(Item{std::move(work), nullptr, nullptr});
}

inline Stream* create_stream() {
  outside_work("cudaStreamCreate");
  Scheduler& q = scheduler;
  q.streams.push_back(std::make_unique<Stream>());
  q.streams.back()->index = q.created++;
  return q.streams.back().get();
}

inline void destroy_stream(Stream* s) {
  outside_work("cudaStreamDestroy");
  check_live(s, "cudaStreamDestroy");
  sync_stream(s);
  auto& v = scheduler.streams;
  for (auto it = v.begin(); it != v.end(); ++it)
    if (it->get() == s) {
      v.erase(it);
      return;
    }
}

inline void record(Event* e, Stream* s) {
  outside_work("cudaEventRecord");
  auto r = std::make_shared<Record>();
  e->latest = r;
  if (!s) {
    sync_all();
    r->done = true;
    return;
  }
  check_live(s, "cudaEventRecord");
  r->stream = s;
  r->seq = s->popped + s->items.size();
  s->items.push_back(Item{{}, std::move(r), nullptr});
}

// A wait for e's most recent record as of now; none when e was never recorded.
inline void wait(Stream* s, const Event* e) {
  outside_work("cudaStreamWaitEvent");
  if (!s) return sync_all();
  check_live(s, "cudaStreamWaitEvent");
  if (e->latest && !e->latest->done) s->items.push_back(Item{{}, nullptr, e->latest});
}

template <class... P>
struct Launch {
  void (*kernel)(P...);
  dim3 grid, block;
  Stream* stream;
  bool fibered;
  // The arguments converted to the kernel's parameter types and kept by value: the launch runs
  // when the stream gets to it, after the caller's locals may be gone.
  template <class... A>
  void operator()(A... args) const {
    submit(
        stream,
        [k = kernel, g = grid, b = block, f = fibered, a = std::tuple<std::decay_t<P>...>(static_cast<P>(args)...)] {
          std::apply([&](const auto&... v) { launch_grid(k, g, b, f, v...); }, a);
        },
        "a kernel launch");
  }
};

template <class... P>
Launch<P...> launcher(void (*kernel)(P...), dim3 grid, dim3 block, Stream* stream, bool fibered) {
  return {kernel, grid, block, stream, fibered};
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

#define KILN_LAUNCH(kernel, grid, block, stream) ::kiln_cuda_shim::launcher(kernel, grid, block, stream, false)
#define KILN_LAUNCH_SYNC(kernel, grid, block, stream) ::kiln_cuda_shim::launcher(kernel, grid, block, stream, true)

// The runtime API calls model.cu makes, on host memory.
typedef int cudaError_t;
typedef kiln_cuda_shim::Stream* cudaStream_t;
typedef kiln_cuda_shim::Event* cudaEvent_t;
typedef void* cudaGraph_t;
typedef void* cudaGraphExec_t;
constexpr cudaError_t cudaSuccess = 0;
constexpr cudaError_t cudaErrorInvalidValue = 1;
constexpr unsigned cudaStreamDefault = 0, cudaStreamNonBlocking = 1;
constexpr unsigned cudaEventDefault = 0, cudaEventBlockingSync = 1, cudaEventDisableTiming = 2;
enum cudaMemcpyKind { cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice, cudaMemcpyDefault };
inline const char* cudaGetErrorString(cudaError_t) { return "no error (kiln cuda shim)"; }
inline cudaError_t cudaGetLastError() { return cudaSuccess; }
inline cudaError_t cudaMalloc(void** p, size_t bytes) {
  *p = std::aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
  return *p ? cudaSuccess : 2;
}
// Synchronous, as in CUDA: queued work may still use the memory.
inline cudaError_t cudaFree(void* p) {
  kiln_cuda_shim::outside_work("cudaFree");
  kiln_cuda_shim::sync_all();
  std::free(p);
  return cudaSuccess;
}
inline cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, cudaMemcpyKind, cudaStream_t stream) {
  kiln_cuda_shim::submit(stream, [d, s, n] { if (n) std::memmove(d, s, n); }, "cudaMemcpyAsync");
  return cudaSuccess;
}
// On the null stream: after all queued work.
inline cudaError_t cudaMemcpy(void* d, const void* s, size_t n, cudaMemcpyKind k) { return cudaMemcpyAsync(d, s, n, k, nullptr); }
inline cudaError_t cudaMemsetAsync(void* d, int v, size_t n, cudaStream_t stream) {
  kiln_cuda_shim::submit(stream, [d, v, n] { std::memset(d, v, n); }, "cudaMemsetAsync");
  return cudaSuccess;
}
inline cudaError_t cudaStreamCreate(cudaStream_t* s) {
  *s = kiln_cuda_shim::create_stream();
  return cudaSuccess;
}
// Non-blocking streams are made alike: the shim's null stream runs every stream's work first.
inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) { return cudaStreamCreate(s); }
inline cudaError_t cudaStreamDestroy(cudaStream_t s) {
  kiln_cuda_shim::destroy_stream(s);
  return cudaSuccess;
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  kiln_cuda_shim::outside_work("cudaStreamSynchronize");
  if (!s) {
    kiln_cuda_shim::sync_all();
    return cudaSuccess;
  }
  kiln_cuda_shim::check_live(s, "cudaStreamSynchronize");
  kiln_cuda_shim::sync_stream(s);
  return cudaSuccess;
}
inline cudaError_t cudaDeviceSynchronize() {
  kiln_cuda_shim::outside_work("cudaDeviceSynchronize");
  kiln_cuda_shim::sync_all();
  return cudaSuccess;
}
typedef void (*cudaHostFn_t)(void*);
inline cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void* data) {
  kiln_cuda_shim::submit(s, [fn, data] { fn(data); }, "cudaLaunchHostFunc");
  return cudaSuccess;
}
inline cudaError_t cudaEventCreate(cudaEvent_t* e) {
  *e = new kiln_cuda_shim::Event;
  return cudaSuccess;
}
inline cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned) { return cudaEventCreate(e); }
// Queued records and waits keep what they refer to: an event may go while they are pending.
inline cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete e;
  return cudaSuccess;
}
inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s = nullptr) {
  if (!e) return cudaErrorInvalidValue;
  kiln_cuda_shim::record(e, s);
  return cudaSuccess;
}
inline cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags = 0) {
  if (!e || flags != 0) return cudaErrorInvalidValue;
  kiln_cuda_shim::wait(s, e);
  return cudaSuccess;
}
inline cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  if (!e) return cudaErrorInvalidValue;
  kiln_cuda_shim::outside_work("cudaEventSynchronize");
  kiln_cuda_shim::sync_record(e->latest.get());
  return cudaSuccess;
}
// Runs the work the record waits for, then answers that it is done: a caller polling for it
// would otherwise wait forever, since nothing runs between calls.
inline cudaError_t cudaEventQuery(cudaEvent_t e) { return cudaEventSynchronize(e); }
