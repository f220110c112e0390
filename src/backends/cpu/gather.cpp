// Gather on any axis and any plain element type, with int32/int64 indices that are constant
// (checked once, at creation) or computed at run time (checked before any copy, so a bad index
// is a kiln::Error, never an out-of-bounds read). Output block (o, k) is input block
// (o, index[k]) of `inner` elements: a memcpy, or a typed move when blocks are single elements.
#include <kiln/error.h>

#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "backends/cpu/kernels.h"
#include "backends/cpu/node_args.h"
#include "backends/cpu/parallel.h"

namespace kiln::backends::cpu {

namespace {

constexpr int64_t kParallelBytes = 256 << 10;

// index into [0, extent), negative counting from the end; nullopt when out of range.
std::optional<int64_t> wrap_index(int64_t i, int64_t extent) {
  if (i < -extent || i >= extent) return std::nullopt;
  return i < 0 ? i + extent : i;
}

template <typename T>
void gather_elements(const T* src, T* dst, const int64_t* idx, int64_t n, int64_t extent, int64_t begin, int64_t end) {
  for (int64_t item = begin; item < end; ++item) dst[item] = src[item / n * extent + idx[item % n]];
}

class GatherKernel : public Kernel {
 public:
  bool runs_in_team() const override { return true; }
  GatherKernel(int64_t outer, int64_t extent, int64_t inner, size_t elem, std::vector<int64_t> fixed, int threads)
      : outer_(outer), extent_(extent), inner_(inner), elem_(elem), fixed_(std::move(fixed)), threads_(threads) {}

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    std::vector<int64_t> runtime;
    if (fixed_.empty() && inputs[1]->numel() > 0) runtime = checked_indices(*inputs[1]);
    const std::vector<int64_t>& idx = fixed_.empty() ? runtime : fixed_;
    const int64_t n = static_cast<int64_t>(idx.size());
    const auto* src = static_cast<const char*>(inputs[0]->raw());
    auto* dst = static_cast<char*>(outputs[0]->raw());
    const int64_t block = inner_ * static_cast<int64_t>(elem_);
    const int threads = outer_ * n * block >= kParallelBytes ? threads_ : 1;
    // Fewer blocks than threads (q, k and v taken out of an attention's permuted qkv by a scalar
    // index: one block each): the threads split each block into pieces of whole cache lines, so
    // that none copies a whole block alone while the others wait, reading lines the others wrote.
    const int64_t blocks = outer_ * n;
    const int64_t pieces = threads > 1 && blocks < threads && inner_ > 1 ? (threads + blocks - 1) / blocks : 1;
    if (pieces > 1) {
      parallel_for(blocks * pieces, threads, [&](int64_t begin, int64_t end) {
        for (int64_t item = begin; item < end; ++item) {
          const int64_t b = item / pieces, p = item % pieces, o = b / n, k = b % n;
          const int64_t lo = block * p / pieces / 64 * 64, hi = p + 1 == pieces ? block : block * (p + 1) / pieces / 64 * 64;
          std::memcpy(dst + b * block + lo, src + (o * extent_ + idx[k]) * block + lo, static_cast<size_t>(hi - lo));
        }
      });
      return;
    }
    parallel_for(blocks, threads, [&](int64_t begin, int64_t end) {
      if (inner_ == 1) {
        switch (elem_) {
          case 4:
            return gather_elements(reinterpret_cast<const uint32_t*>(src), reinterpret_cast<uint32_t*>(dst),
                                   idx.data(), n, extent_, begin, end);
          case 8:
            return gather_elements(reinterpret_cast<const uint64_t*>(src), reinterpret_cast<uint64_t*>(dst),
                                   idx.data(), n, extent_, begin, end);
          default: break;
        }
      }
      for (int64_t item = begin; item < end; ++item) {
        const int64_t o = item / n, k = item % n;
        std::memcpy(dst + item * block, src + (o * extent_ + idx[k]) * block, static_cast<size_t>(block));
      }
    });
  }

 private:
  std::vector<int64_t> checked_indices(const Tensor& t) const {
    std::vector<int64_t> v = t.to_int64_vector();
    for (int64_t& i : v) {
      auto w = wrap_index(i, extent_);
      if (!w)
        throw Error("index " + std::to_string(i) + " is out of range for an axis of extent " + std::to_string(extent_));
      i = *w;
    }
    return v;
  }

  int64_t outer_, extent_, inner_;
  size_t elem_;
  std::vector<int64_t> fixed_;  // constant indices, already wrapped; empty = read at run time
  int threads_;
};

std::unique_ptr<Kernel> make_gather(const ir::Node& node, int threads) {
  if (node.num_inputs() != 2 || node.num_outputs() != 1 || !node.output(0)) return nullptr;
  const ir::Value* x = node.input(0);
  const ir::Value* ind = node.input(1);
  const ir::Value* y = node.output(0);
  const size_t es = plain_elem_size(x);
  if (es == 0 || plain_elem_size(y) != es || x->type.dtype != y->type.dtype) return nullptr;
  if (!plain_elem_size(ind) || (ind->type.dtype != DType::Int64 && ind->type.dtype != DType::Int32)) return nullptr;
  const std::vector<int64_t> xd = x->type.static_dims(), id = ind->type.static_dims();
  const int64_t rank = static_cast<int64_t>(xd.size());
  auto axis = axis_in(node.attr_int("axis", 0), rank);
  if (rank == 0 || !axis) return nullptr;
  std::vector<int64_t> want(xd.begin(), xd.begin() + *axis);
  want.insert(want.end(), id.begin(), id.end());
  want.insert(want.end(), xd.begin() + *axis + 1, xd.end());
  if (y->type.static_dims() != want) return nullptr;
  const int64_t extent = xd[*axis];
  std::vector<int64_t> fixed;
  if (ind->is_constant()) {
    const Tensor& t = ind->constant();
    if (t.dims() != id || (t.dtype() != DType::Int64 && t.dtype() != DType::Int32)) return nullptr;
    for (int64_t i : t.to_int64_vector()) {
      auto w = wrap_index(i, extent);
      if (!w) return nullptr;  // the reference kernel reports it
      fixed.push_back(*w);
    }
  }
  return std::make_unique<GatherKernel>(dims_product(xd, 0, *axis), extent, dims_product(xd, *axis + 1, xd.size()),
                                        es, std::move(fixed), threads);
}

}  // namespace

void add_gather_kernels(std::vector<KernelFactory>& table) { table.push_back({"", "Gather", make_gather}); }

}  // namespace kiln::backends::cpu
