// TopK on float tensors along any axis, K known at creation: each row is scanned once against
// the worst of the K best so far (a heap), so most elements cost one comparison, and the K
// kept are sorted at the end. The order is the reference kernel's: NaN counts as the largest
// value, equal values keep the lower index first. Rows split over the team.
#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>

#include "backends/cpu/kernels.h"
#include "backends/cpu/node_args.h"
#include "backends/cpu/parallel.h"

namespace kiln::backends::cpu {

namespace {

class TopKKernel : public Kernel {
 public:
  TopKKernel(int64_t outer, int64_t n, int64_t inner, int64_t k, bool largest, int threads)
      : outer_(outer), n_(n), inner_(inner), k_(k), largest_(largest),
        threads_(outer * n * inner >= (1 << 16) && outer * inner > 1 ? threads : 1) {}
  bool runs_in_team() const override { return true; }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    const float* x = inputs[0]->data<float>();
    float* values = outputs[0] ? outputs[0]->data<float>() : nullptr;
    int64_t* indices = outputs[1] ? outputs[1]->data<int64_t>() : nullptr;
    parallel_for(outer_ * inner_, threads_, [&](int64_t begin, int64_t end) {
      std::vector<std::pair<float, int64_t>> heap;
      heap.reserve(static_cast<size_t>(k_));
      for (int64_t row = begin; row < end; ++row) {
        const int64_t o = row / inner_, i = row % inner_;
        const float* src = x + o * n_ * inner_ + i;
        select(src, heap);
        for (int64_t j = 0; j < k_; ++j) {
          const int64_t at = (o * k_ + j) * inner_ + i;
          if (values) values[at] = heap[j].first;
          if (indices) indices[at] = heap[j].second;
        }
      }
    });
  }

 private:
  // Whether (a, ia) comes before (b, ib) in the output.
  bool before(float a, int64_t ia, float b, int64_t ib) const {
    const bool na = std::isnan(a), nb = std::isnan(b);
    if (largest_) {
      if (na != nb) return na;
      if (a != b && !na) return a > b;
    } else {
      if (na != nb) return nb;
      if (a != b && !na) return a < b;
    }
    return ia < ib;
  }

  // The K best of a row (stride inner_), sorted.
  void select(const float* src, std::vector<std::pair<float, int64_t>>& heap) const {
    heap.clear();
    // Heap ordered so that its front is the worst kept ("before" puts better ones first).
    auto worse_first = [&](const std::pair<float, int64_t>& a, const std::pair<float, int64_t>& b) {
      return before(a.first, a.second, b.first, b.second);
    };
    if (k_ > 0) {
      for (int64_t j = 0; j < n_; ++j) {
        const float v = src[j * inner_];
        if (static_cast<int64_t>(heap.size()) < k_) {
          heap.emplace_back(v, j);
          std::push_heap(heap.begin(), heap.end(), worse_first);
        } else if (before(v, j, heap.front().first, heap.front().second)) {
          std::pop_heap(heap.begin(), heap.end(), worse_first);
          heap.back() = {v, j};
          std::push_heap(heap.begin(), heap.end(), worse_first);
        }
      }
    }
    std::sort(heap.begin(), heap.end(), worse_first);
  }

  int64_t outer_, n_, inner_, k_;
  bool largest_;
  int threads_;
};

std::unique_ptr<Kernel> make_topk(const ir::Node& node, int threads) {
  if (node.owner()->opset() < 10 || node.num_inputs() != 2 || node.num_outputs() != 2) return nullptr;
  const ir::Value* x = node.input(0);
  if (!x || x->type.dtype != DType::Float || !x->type.is_static() || x->type.rank() == 0) return nullptr;
  const auto k = constant_ints(node, 1);
  if (!k || k->size() != 1) return nullptr;
  const std::vector<int64_t> d = x->type.static_dims();
  const auto axis = axis_in(node.attr_int("axis", -1), static_cast<int64_t>(d.size()));
  if (!axis || (*k)[0] < 0 || (*k)[0] > d[*axis]) return nullptr;
  return std::make_unique<TopKKernel>(dims_product(d, 0, *axis), d[*axis], dims_product(d, *axis + 1, d.size()), (*k)[0],
                                      node.attr_int("largest", 1) != 0, threads);
}

}  // namespace

void add_topk_kernels(std::vector<KernelFactory>& table) { table.push_back({"", "TopK", make_topk}); }

}  // namespace kiln::backends::cpu
