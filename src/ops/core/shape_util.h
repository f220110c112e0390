// Shape arithmetic shared by the op families: axis normalization, numpy broadcasting (on
// concrete dims and on symbolic types), strides, strided copies and a broadcasting index walker.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/type.h"
#include "ops/core/op_def.h"

namespace kiln::ops {

// Maps a possibly negative axis into [0, rank); throws kiln::Error naming the node otherwise.
// Whether a and b are the same type: dtype, kinds, rank and every dim the same extent or symbol.
bool same_type(const ir::TensorType& a, const ir::TensorType& b);
// The most specific type covering both (a loop-carried value, an If's two branches): equal dims
// stay, others become dims from `fresh`; different ranks give unknown rank; kinds are or-ed.
ir::TensorType unify_types(const ir::TensorType& a, const ir::TensorType& b, const std::function<ir::Dim()>& fresh);

int64_t normalize_axis(int64_t axis, int64_t rank, const ir::Node& node);
std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t rank, const ir::Node& node);

// a * b for dims and element counts: model files choose them, so an int64 overflow is a
// kiln::Error ("shape overflows int64"), not undefined behaviour.
int64_t mul_dims(int64_t a, int64_t b);
// Product of dims[begin, end), overflow-checked like mul_dims.
int64_t product(const std::vector<int64_t>& dims, size_t begin = 0, size_t end = SIZE_MAX);
// Row-major strides of dims.
std::vector<int64_t> strides_of(const std::vector<int64_t>& dims);

// out (dense, of extents view_dims) = in's elements seen through per-axis element strides from
// `base`: ir::strided_copy for any dtype (Transpose, Slice, Split, Tile, Expand, ...).
void copy_strided(const Tensor& in, Tensor& out, const std::vector<int64_t>& view_dims,
                  const std::vector<int64_t>& in_strides, int64_t base = 0);

// Advances a row-major N-d index over dims (the last axis fastest); returns false, with idx
// back at all zeros, after the last index.
inline bool next_index(std::vector<int64_t>& idx, const std::vector<int64_t>& dims) {
  for (size_t d = dims.size(); d-- > 0;) {
    if (++idx[d] < dims[d]) return true;
    idx[d] = 0;
  }
  return false;
}

// "[1,2,3]", for error messages that quote an ints attribute.
std::string ints_str(const std::vector<int64_t>& v);

// Numpy broadcasting of concrete dims; throws kiln::Error naming the node on a mismatch.
std::vector<int64_t> broadcast_dims(const std::vector<std::vector<int64_t>>& shapes, const ir::Node& node);
// The same on static types with symbolic dims: 1 vs d -> d, equal -> same, two different
// symbols -> a fresh symbol; unknown rank anywhere -> unknown rank.
ir::TensorType broadcast_types(InferContext& ctx, const std::vector<ir::TensorType>& types, DType out);

// Strides for reading an input of `in` dims while walking output dims `out` (0 stride on
// broadcast axes; `in` is right-aligned to `out`).
std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in, const std::vector<int64_t>& out);

// Walks every element of `out` dims in row-major order, tracking the matching linear offset
// of each input. fn(out_index, offsets) where offsets[k] is input k's element offset.
class BroadcastWalker {
 public:
  BroadcastWalker(const std::vector<int64_t>& out, const std::vector<std::vector<int64_t>>& ins);
  template <typename F>
  void run(F&& fn) {
    const int64_t n = product(out_);
    const size_t r = out_.size(), k = strides_.size();
    std::vector<int64_t> idx(r, 0), off(k, 0);
    for (int64_t i = 0; i < n; ++i) {
      fn(i, off.data());
      for (size_t d = r; d-- > 0;) {
        ++idx[d];
        for (size_t j = 0; j < k; ++j) off[j] += strides_[j][d];
        if (idx[d] < out_[d]) break;
        for (size_t j = 0; j < k; ++j) off[j] -= strides_[j][d] * out_[d];
        idx[d] = 0;
      }
    }
  }

 private:
  std::vector<int64_t> out_;
  std::vector<std::vector<int64_t>> strides_;
};

// Shape inference helpers used by many ops.
void infer_same_as_input(InferContext& ctx);  // output 0 = type of input 0
// Output 0 keeps input 0's shape but takes another dtype.
void infer_same_shape(InferContext& ctx, DType dtype);

}  // namespace kiln::ops
