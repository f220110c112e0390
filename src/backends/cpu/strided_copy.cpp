#include "backends/cpu/strided_copy.h"

#include <algorithm>
#include <cstring>

#include "backends/cpu/parallel.h"
#include "backends/cpu/simd.h"

namespace kiln::backends::cpu {

namespace {

// Copies below this size stay on the calling thread: waking a team costs more than it saves.
constexpr int64_t kParallelBytes = 256 << 10;
// Contiguous runs fewer than this many per thread are split by elements, in units of this many
// elements (whole cache lines of any element size up to 8 bytes).
constexpr int64_t kRunsPerThread = 8;
constexpr int64_t kRunUnit = 1024;
// Work items of the tiled mode are kBlock x kBlock elements, transposed kTile x kTile at a time
// (a tile of 4-byte elements is 16 cache lines read and 16 written).
constexpr int64_t kBlock = 64;

template <typename T>
constexpr int64_t tile_of() {
  return sizeof(T) <= 4 ? 16 : 8;
}

// out[j * out_stride + i] = in[i * in_stride + j] for i in [i0, i1), j in [j0, j1).
template <typename T>
void transpose_block(const T* in, T* out, int64_t i0, int64_t i1, int64_t j0, int64_t j1, int64_t in_stride,
                     int64_t out_stride) {
  constexpr int64_t kTile = tile_of<T>();
  for (int64_t ii = i0; ii < i1; ii += kTile) {
    const int64_t ie = std::min(ii + kTile, i1);
    for (int64_t jj = j0; jj < j1; jj += kTile) {
      const int64_t je = std::min(jj + kTile, j1);
      for (int64_t j = jj; j < je; ++j) {
        T* o = out + j * out_stride;
        const T* s = in + j;
        for (int64_t i = ii; i < ie; ++i) o[i] = s[i * in_stride];
      }
    }
  }
}

// One 8x8 block of 4-byte elements through registers: eight row loads, the unpack/shuffle/
// permute network of an AVX 8x8 transpose, eight row stores (GCC maps each shufflevector to one
// instruction on AVX; the baseline clone does it on SSE halves).
__attribute__((always_inline)) inline void transpose8x8(const uint32_t* in, int64_t in_stride, uint32_t* out,
                                                       int64_t out_stride) {
  typedef uint32_t v8u __attribute__((vector_size(32)));
  v8u r[8], t[8];
  for (int k = 0; k < 8; ++k) std::memcpy(&r[k], in + k * in_stride, sizeof(v8u));
  for (int k = 0; k < 8; k += 2) {
    t[k] = __builtin_shufflevector(r[k], r[k + 1], 0, 8, 1, 9, 4, 12, 5, 13);
    t[k + 1] = __builtin_shufflevector(r[k], r[k + 1], 2, 10, 3, 11, 6, 14, 7, 15);
  }
  for (int k = 0; k < 8; k += 4) {
    r[k] = __builtin_shufflevector(t[k], t[k + 2], 0, 1, 8, 9, 4, 5, 12, 13);
    r[k + 1] = __builtin_shufflevector(t[k], t[k + 2], 2, 3, 10, 11, 6, 7, 14, 15);
    r[k + 2] = __builtin_shufflevector(t[k + 1], t[k + 3], 0, 1, 8, 9, 4, 5, 12, 13);
    r[k + 3] = __builtin_shufflevector(t[k + 1], t[k + 3], 2, 3, 10, 11, 6, 7, 14, 15);
  }
  for (int k = 0; k < 4; ++k) {
    t[k] = __builtin_shufflevector(r[k], r[k + 4], 0, 1, 2, 3, 8, 9, 10, 11);
    t[k + 4] = __builtin_shufflevector(r[k], r[k + 4], 4, 5, 6, 7, 12, 13, 14, 15);
  }
  for (int k = 0; k < 8; ++k) std::memcpy(out + k * out_stride, &t[k], sizeof(v8u));
}

// transpose_block for 4-byte elements (float32, the common case): whole 8x8 blocks in
// registers, the edges element by element.
KILN_SIMD void transpose_block32(const uint32_t* in, uint32_t* out, int64_t i0, int64_t i1, int64_t j0, int64_t j1,
                                 int64_t in_stride, int64_t out_stride) {
  int64_t ii = i0;
  for (; ii + 8 <= i1; ii += 8) {
    int64_t jj = j0;
    for (; jj + 8 <= j1; jj += 8) transpose8x8(in + ii * in_stride + jj, in_stride, out + jj * out_stride + ii, out_stride);
    for (int64_t j = jj; j < j1; ++j)
      for (int64_t i = ii; i < ii + 8; ++i) out[j * out_stride + i] = in[i * in_stride + j];
  }
  if (ii < i1) transpose_block(in, out, ii, i1, j0, j1, in_stride, out_stride);
}

// The transpose of a K x n block for tiny K (an NCHW -> NHWC image with 3 channels, a 2-way
// channel shuffle in NHWC): out[j * K + i] = in[i * in_stride + j]. K constant makes it an
// interleave of K streams that GCC vectorizes with shuffles.
template <typename T, int K>
__attribute__((always_inline)) inline void interleave(const T* in, T* out, int64_t j0, int64_t j1,
                                                      int64_t in_stride) {
  for (int64_t j = j0; j < j1; ++j)
    for (int i = 0; i < K; ++i) out[j * K + i] = in[i * in_stride + j];
}

// The inverse (NHWC -> NCHW with 3 channels): out[j * out_stride + i] = in[i * K + j].
template <typename T, int K>
__attribute__((always_inline)) inline void deinterleave(const T* in, T* out, int64_t i0, int64_t i1,
                                                        int64_t out_stride) {
  for (int64_t i = i0; i < i1; ++i)
    for (int j = 0; j < K; ++j) out[j * out_stride + i] = in[i * K + j];
}

// interleave (or deinterleave) for K in 2..4, over [b, e) of the long axis; false for other K.
template <typename T>
__attribute__((always_inline)) inline bool small_transpose(bool inter, const T* in, T* out, int64_t k, int64_t b,
                                                           int64_t e, int64_t stride) {
  switch (k * 2 + inter) {
    case 5: interleave<T, 2>(in, out, b, e, stride); return true;
    case 7: interleave<T, 3>(in, out, b, e, stride); return true;
    case 9: interleave<T, 4>(in, out, b, e, stride); return true;
    case 4: deinterleave<T, 2>(in, out, b, e, stride); return true;
    case 6: deinterleave<T, 3>(in, out, b, e, stride); return true;
    case 8: deinterleave<T, 4>(in, out, b, e, stride); return true;
    default: return false;
  }
}

KILN_SIMD bool small_transpose32(bool inter, const uint32_t* in, uint32_t* out, int64_t k, int64_t b, int64_t e,
                                 int64_t stride) {
  return small_transpose(inter, in, out, k, b, e, stride);
}

template <typename T>
bool small_transpose_any(bool inter, const T* in, T* out, int64_t k, int64_t b, int64_t e, int64_t stride) {
  if constexpr (sizeof(T) == 4) return small_transpose32(inter, in, out, k, b, e, stride);
  else return small_transpose(inter, in, out, k, b, e, stride);
}

}  // namespace

StridedCopy::StridedCopy(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, int64_t base,
                         size_t elem_size, int threads)
    : base_(base), elem_(elem_size), threads_(threads) {
  numel_ = 1;
  for (int64_t d : dims) numel_ *= d;
  if (numel_ == 0) return;
  // Unit axes do not move anything; an axis whose stride is the next one's whole extent is
  // one longer axis.
  for (size_t k = 0; k < dims.size(); ++k) {
    if (dims[k] == 1) continue;
    if (!dims_.empty() && strides_.back() == strides[k] * dims[k]) {
      dims_.back() *= dims[k];
      strides_.back() = strides[k];
    } else {
      dims_.push_back(dims[k]);
      strides_.push_back(strides[k]);
    }
  }
  if (dims_.empty()) {
    dims_ = {1};
    strides_ = {1};
  }
  const int r = static_cast<int>(dims_.size());
  out_strides_.assign(r, 1);
  for (int k = r - 1; k > 0; --k) out_strides_[k - 1] = out_strides_[k] * dims_[k];
  if (strides_[r - 1] == 1) {
    mode_ = Mode::Runs;
    return;
  }
  mode_ = Mode::Elements;
  for (int k = 0; k < r - 1; ++k)
    if (strides_[k] == 1) {
      mode_ = Mode::Tiled;
      tile_axis_ = k;
    }
}

void StridedCopy::run(const void* in, void* out) const {
  // Factories only plan the sizes visit_elem_size moves (supports()).
  ir::visit_elem_size(elem_, [&](auto tag) {
    using T = decltype(tag);
    run_typed(static_cast<const T*>(in), static_cast<T*>(out));
  });
}

template <typename T>
void StridedCopy::run_typed(const T* in, T* out) const {
  if (mode_ == Mode::Empty) return;
  const int threads = numel_ * static_cast<int64_t>(sizeof(T)) >= kParallelBytes ? threads_ : 1;
  const int r = static_cast<int>(dims_.size());
  const int64_t inner = dims_[r - 1], inner_stride = strides_[r - 1];
  in += base_;

  if (mode_ == Mode::Tiled) {
    const int b = tile_axis_;
    // A tiny extent on either side is an interleave: longer items, so each is worth its setup.
    const int64_t iblock = dims_[b] < 8 ? 16 * kBlock : kBlock, jblock = inner < 8 ? 16 * kBlock : kBlock;
    const int64_t ni = (inner + iblock - 1) / iblock, nj = (dims_[b] + jblock - 1) / jblock;
    const bool inter = inner <= 4 && out_strides_[b] == inner;
    const bool deinter = dims_[b] <= 4 && inner_stride == dims_[b];
    int64_t batches = 1;
    for (int k = 0; k < r - 1; ++k)
      if (k != b) batches *= dims_[k];
    parallel_for(batches * ni * nj, threads, [&](int64_t begin, int64_t end) {
      for (int64_t item = begin; item < end; ++item) {
        int64_t rest = item / (ni * nj);
        const int64_t bi = item % (ni * nj) / nj, bj = item % nj;
        int64_t in_off = 0, out_off = 0;
        for (int k = r - 2; k >= 0; --k) {
          if (k == b) continue;
          const int64_t x = rest % dims_[k];
          rest /= dims_[k];
          in_off += x * strides_[k];
          out_off += x * out_strides_[k];
        }
        const int64_t i0 = bi * iblock, i1 = std::min(inner, i0 + iblock);
        const int64_t j0 = bj * jblock, j1 = std::min(dims_[b], j0 + jblock);
        if (inter && small_transpose_any(true, in + in_off, out + out_off, inner, j0, j1, inner_stride)) continue;
        if (deinter && small_transpose_any(false, in + in_off, out + out_off, dims_[b], i0, i1, out_strides_[b]))
          continue;
        if constexpr (sizeof(T) == 4)
          transpose_block32(in + in_off, out + out_off, i0, i1, j0, j1, inner_stride, out_strides_[b]);
        else
          transpose_block(in + in_off, out + out_off, i0, i1, j0, j1, inner_stride, out_strides_[b]);
      }
    });
    return;
  }

  const int64_t rows = numel_ / inner;
  if (mode_ == Mode::Runs && threads > 1 && rows < kRunsPerThread * threads) {
    // Few long runs (a Slice of the outer rows of an image: one run): the runs' elements split
    // evenly, each thread copying the stretch of the output it covers (the part a pixel split
    // of the next op reads on its core), not whole runs on as many threads as there are runs.
    const int64_t units = (numel_ + kRunUnit - 1) / kRunUnit;
    parallel_for(units, threads, [&](int64_t begin, int64_t end) {
      for (int64_t at = begin * kRunUnit, stop = std::min(numel_, end * kRunUnit); at < stop;) {
        const int64_t row = at / inner, col = at - row * inner, len = std::min(inner - col, stop - at);
        int64_t from = 0, left = row;  // the row's first element in the input
        for (int k = r - 2; k >= 0; --k) {
          from += left % dims_[k] * strides_[k];
          left /= dims_[k];
        }
        std::memcpy(out + at, in + from + col, static_cast<size_t>(len) * sizeof(T));
        at += len;
      }
    });
    return;
  }
  // Runs and Elements: rows of the innermost axis (a memcpy each when it is contiguous).
  parallel_for(rows, threads, [&](int64_t begin, int64_t end) {
    ir::strided_copy_rows(in, out, dims_.data(), strides_.data(), r, 0, begin, end);
  });
}

void transpose_floats(const float* in, float* out, int64_t rows, int64_t cols, int64_t in_stride, int64_t out_stride) {
  static_assert(sizeof(float) == sizeof(uint32_t));
  transpose_block32(reinterpret_cast<const uint32_t*>(in), reinterpret_cast<uint32_t*>(out), 0, rows, 0, cols, in_stride,
                    out_stride);
}

}  // namespace kiln::backends::cpu
