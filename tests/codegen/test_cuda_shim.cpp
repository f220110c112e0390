// The CUDA host shim's streams (src/kernels/cuda/host_shim.h): work on a stream waits for a
// synchronization point, events order streams as on a GPU, and streams run in an order other
// than the program's (kiln_cuda_shim::set_order), so that a missing event wait gives a wrong
// value here. Each test checks real values under both orders.
#include <gtest/gtest.h>

#include <ostream>
#include <vector>

#define KILN_CUDA_ON_CPU
#include "kernels/cuda/blas.cuh"

namespace kiln_cuda_shim {
// The order's name in test names and messages.
inline const char* name(Order o) { return o == Order::newest ? "newest" : "oldest"; }
void PrintTo(Order o, std::ostream* os) { *os << name(o); }
}  // namespace kiln_cuda_shim

namespace {

using kiln_cuda_shim::Order;

__global__ void fill(float* y, int n, float v) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) y[i] = v;
}

__global__ void copy(const float* x, float* y, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) y[i] = x[i];
}

// A block's sum through the warp shuffles and shared memory (kiln_kernels::block_reduce).
__global__ void block_sum(const float* x, float* y) {
  __shared__ float scratch[kiln_kernels::kRowThreads / kiln_kernels::kWarp];
  const float s = kiln_kernels::block_reduce(x[blockIdx.x * blockDim.x + threadIdx.x], scratch, kiln_kernels::SumOp{});
  if (threadIdx.x == 0) y[blockIdx.x] = s;
}

struct Scale {
  float by;
};
__global__ void scale(const float* x, float* y, int n, Scale s) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) y[i] = x[i] * s.by;
}

constexpr int kN = 100;

// Two streams (a created first), an event and two device buffers of kN floats, both 1.
struct Shim : ::testing::TestWithParam<Order> {
  cudaStream_t a = nullptr, b = nullptr;
  cudaEvent_t e = nullptr;
  float* x = nullptr;
  float* y = nullptr;

  void SetUp() override {
    kiln_cuda_shim::set_order(GetParam());
    ASSERT_EQ(cudaStreamCreate(&a), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), cudaSuccess);
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&x), kN * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&y), kN * sizeof(float)), cudaSuccess);
    KILN_LAUNCH(fill, 1, 128, nullptr)(x, kN, 1.f);
    KILN_LAUNCH(fill, 1, 128, nullptr)(y, kN, 1.f);
  }
  void TearDown() override {
    cudaEventDestroy(e);
    cudaStreamDestroy(b);
    cudaStreamDestroy(a);
    cudaFree(x);
    cudaFree(y);
  }
  // Every element of p is v.
  static void expect_all(const float* p, float v) {
    for (int i = 0; i < kN; ++i) ASSERT_EQ(p[i], v) << "at " << i;
  }
};

TEST_P(Shim, AWaitOrdersTheStreamsUnderBothOrders) {
  KILN_LAUNCH(fill, 1, 128, a)(x, kN, 7.f);
  cudaEventRecord(e, a);
  cudaStreamWaitEvent(b, e, 0);
  KILN_LAUNCH(copy, 1, 128, b)(x, y, kN);
  expect_all(x, 1.f);  // queued, not run
  expect_all(y, 1.f);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  expect_all(x, 7.f);
  expect_all(y, 7.f);
}

// Without the wait, newest runs b's copy before a's fill (a stale copy); oldest runs a first.
TEST_P(Shim, WithoutTheWaitTheOrderDecides) {
  KILN_LAUNCH(fill, 1, 128, a)(x, kN, 7.f);
  KILN_LAUNCH(copy, 1, 128, b)(x, y, kN);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  expect_all(x, 7.f);
  expect_all(y, GetParam() == Order::newest ? 1.f : 7.f);
}

TEST_P(Shim, AWaitForAnEventNeverRecordedWaitsForNothing) {
  KILN_LAUNCH(fill, 1, 128, a)(x, kN, 7.f);
  cudaStreamWaitEvent(b, e, 0);
  KILN_LAUNCH(copy, 1, 128, b)(x, y, kN);
  cudaEventRecord(e, a);  // after the wait: not what it waits for
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  expect_all(y, GetParam() == Order::newest ? 1.f : 7.f);
}

// e recorded twice on a: b's wait, made between the records, is for the first. The second comes
// after a waits for b's copy, so a wait for the most recent record at run time could never end.
TEST_P(Shim, AWaitIsForTheRecordBeforeIt) {
  cudaEvent_t copied = nullptr;
  cudaEventCreate(&copied);
  KILN_LAUNCH(fill, 1, 128, a)(x, kN, 7.f);
  cudaEventRecord(e, a);
  cudaStreamWaitEvent(b, e, 0);
  KILN_LAUNCH(copy, 1, 128, b)(x, y, kN);
  cudaEventRecord(copied, b);
  cudaStreamWaitEvent(a, copied, 0);
  KILN_LAUNCH(fill, 1, 128, a)(x, kN, 9.f);
  cudaEventRecord(e, a);
  ASSERT_EQ(cudaEventSynchronize(copied), cudaSuccess);
  expect_all(y, 7.f);
  expect_all(x, 7.f);  // a's second fill is not needed by the copy: still queued
  ASSERT_EQ(cudaEventSynchronize(e), cudaSuccess);
  expect_all(x, 9.f);
  cudaEventDestroy(copied);
}

// cudaStreamSynchronize(b) runs a up to the record b waits for, and no further.
TEST_P(Shim, AStreamSynchronizationRunsWhatItWaitsFor) {
  KILN_LAUNCH(fill, 1, 128, a)(x, kN, 7.f);
  cudaEventRecord(e, a);
  KILN_LAUNCH(fill, 1, 128, a)(x, kN, 9.f);
  cudaStreamWaitEvent(b, e, 0);
  KILN_LAUNCH(copy, 1, 128, b)(x, y, kN);
  ASSERT_EQ(cudaStreamSynchronize(b), cudaSuccess);
  expect_all(y, 7.f);
  expect_all(x, 7.f);
  ASSERT_EQ(cudaStreamSynchronize(a), cudaSuccess);
  expect_all(x, 9.f);
}

// Work another stream does not wait for is not run by a stream's synchronization: a forgotten
// join shows whatever the order.
TEST_P(Shim, AStreamSynchronizationLeavesUnjoinedWork) {
  KILN_LAUNCH(fill, 1, 128, b)(y, kN, 5.f);
  KILN_LAUNCH(fill, 1, 128, a)(x, kN, 7.f);
  ASSERT_EQ(cudaStreamSynchronize(a), cudaSuccess);
  expect_all(x, 7.f);
  expect_all(y, 1.f);
}

struct Seen {
  const float* x;
  std::vector<float> values;
};
void look(void* p) {
  Seen* s = static_cast<Seen*>(p);
  s->values.push_back(s->x[kN - 1]);
}

TEST_P(Shim, HostFunctionsRunInStreamOrder) {
  Seen seen{x, {}};
  KILN_LAUNCH(fill, 1, 128, a)(x, kN, 5.f);
  cudaLaunchHostFunc(a, look, &seen);
  cudaMemsetAsync(x, 0, kN * sizeof(float), a);
  cudaLaunchHostFunc(a, look, &seen);
  KILN_LAUNCH(fill, 1, 128, b)(y, kN, 3.f);
  cudaMemcpyAsync(x, y, kN * sizeof(float), cudaMemcpyDeviceToDevice, a);  // no wait for b: y as it was
  cudaLaunchHostFunc(a, look, &seen);
  EXPECT_TRUE(seen.values.empty());
  ASSERT_EQ(cudaStreamSynchronize(a), cudaSuccess);
  EXPECT_EQ(seen.values, (std::vector<float>{5.f, 0.f, 1.f}));
  expect_all(y, 1.f);  // b not synchronized
  ASSERT_EQ(cudaStreamSynchronize(b), cudaSuccess);
  expect_all(y, 3.f);
}

// Work on the null stream runs after all queued work, at once.
TEST_P(Shim, TheNullStreamRunsEverythingFirst) {
  KILN_LAUNCH(fill, 1, 128, a)(x, kN, 7.f);
  KILN_LAUNCH(fill, 1, 128, b)(y, kN, 5.f);
  float host[kN] = {};
  ASSERT_EQ(cudaMemcpy(host, x, sizeof(host), cudaMemcpyDeviceToHost), cudaSuccess);
  expect_all(host, 7.f);
  expect_all(y, 5.f);

  KILN_LAUNCH(fill, 1, 128, a)(x, kN, 2.f);
  cudaEventRecord(e, nullptr);  // done at once, after a's fill
  ASSERT_EQ(cudaEventQuery(e), cudaSuccess);
  expect_all(x, 2.f);

  KILN_LAUNCH(fill, 1, 128, b)(y, kN, 4.f);
  KILN_LAUNCH(copy, 1, 128, 0)(y, x, kN);
  expect_all(x, 4.f);
}

TEST_P(Shim, DestroyingAStreamRunsItsWork) {
  cudaStream_t c = nullptr;
  cudaStreamCreate(&c);
  cudaEventRecord(e, a);  // nothing before it
  KILN_LAUNCH(fill, 1, 128, a)(x, kN, 7.f);
  cudaEventRecord(e, a);
  cudaStreamWaitEvent(c, e, 0);
  KILN_LAUNCH(copy, 1, 128, c)(x, y, kN);
  cudaStreamDestroy(c);
  expect_all(y, 7.f);
}

// A kernel with barriers and shuffles runs as fibers when its stream gets to it; the arguments
// are the values at the launch, whatever the caller's variables hold later.
TEST_P(Shim, AQueuedSyncLaunchKeepsItsArguments) {
  std::vector<float> in(2 * kiln_kernels::kRowThreads);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 7) - 2.f;
  float sums[2] = {};
  Scale s{3.f};
  KILN_LAUNCH(scale, 4, 256, a)(in.data(), in.data(), static_cast<int>(in.size()), s);
  s.by = 0.f;
  KILN_LAUNCH_SYNC(block_sum, 2, kiln_kernels::kRowThreads, a)(in.data(), sums);
  EXPECT_EQ(sums[0], 0.f);
  ASSERT_EQ(cudaStreamSynchronize(a), cudaSuccess);
  for (int blk = 0; blk < 2; ++blk) {
    float want = 0.f;
    for (int t = 0; t < kiln_kernels::kRowThreads; ++t)
      want += 3.f * (static_cast<float>((blk * kiln_kernels::kRowThreads + t) % 7) - 2.f);
    EXPECT_EQ(sums[blk], want) << "block " << blk;
  }
}

// The product is queued on its Blas's stream like im2col (conv.cuh) before it.
TEST_P(Shim, TheProductRunsOnItsStream) {
  kiln_cuda::Blas blas;
  ASSERT_TRUE(blas.create(b));
  float A[2 * 3] = {1, 2, 3, 4, 5, 6}, B[3 * 2] = {1, 0, 0, 1, 1, 1}, C[2 * 2] = {};
  KILN_LAUNCH(fill, 1, 32, a)(A, 2, 0.f);  // A's first row: 0 0 3
  cudaEventRecord(e, a);
  cudaStreamWaitEvent(b, e, 0);
  EXPECT_EQ(blas.gemm(false, false, 2, 2, 3, 1.f, A, 3, 0, B, 2, 0, 0.f, C, 2, 0, 1), nullptr);
  EXPECT_EQ(C[0], 0.f);
  ASSERT_EQ(cudaStreamSynchronize(b), cudaSuccess);
  EXPECT_EQ(C[0], 3.f);
  EXPECT_EQ(C[1], 3.f);
  EXPECT_EQ(C[2], 10.f);
  EXPECT_EQ(C[3], 11.f);
  blas.destroy();
}

void synchronize_inside(void* s) { cudaStreamSynchronize(static_cast<cudaStream_t>(s)); }

// CUDA forbids CUDA calls in a host function; here it would re-enter the scheduler.
TEST_P(Shim, ACudaCallInsideQueuedWorkAborts) {
  EXPECT_DEATH(
      {
        cudaLaunchHostFunc(a, synchronize_inside, b);
        cudaStreamSynchronize(a);
      },
      "inside queued work.*: cudaStreamSynchronize");
}

INSTANTIATE_TEST_SUITE_P(CudaShim, Shim, ::testing::Values(Order::newest, Order::oldest),
                         [](const ::testing::TestParamInfo<Order>& p) { return kiln_cuda_shim::name(p.param); });

TEST(CudaShim, TheOrderIsNewestOrOldest) {
  EXPECT_EQ(kiln_cuda_shim::order_named(nullptr), Order::newest);
  EXPECT_EQ(kiln_cuda_shim::order_named("newest"), Order::newest);
  EXPECT_EQ(kiln_cuda_shim::order_named("oldest"), Order::oldest);
  EXPECT_DEATH(kiln_cuda_shim::order_named("sideways"), "KILN_CUDA_SHIM_ORDER must be newest or oldest, not sideways");
}

}  // namespace
