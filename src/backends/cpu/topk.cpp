// TopK on float tensors along any axis, K known at creation: the rows of src/kernels/topk.h
// (which emitted code runs too) split over the team.
#include <memory>

#include "backends/cpu/kernels.h"
#include "backends/cpu/node_args.h"
#include "backends/cpu/parallel.h"
#include "kernels/topk.h"

namespace kiln::backends::cpu {

namespace {

class TopKKernel : public Kernel {
 public:
  TopKKernel(kiln_kernels::TopKShape s, int threads)
      : s_(s), threads_(s.outer * s.n * s.inner >= (1 << 16) && s.outer * s.inner > 1 ? threads : 1) {}
  bool runs_in_team() const override { return true; }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    const float* x = inputs[0]->data<float>();
    float* values = outputs[0] ? outputs[0]->data<float>() : nullptr;
    int64_t* indices = outputs[1] ? outputs[1]->data<int64_t>() : nullptr;
    parallel_for(s_.outer * s_.inner, threads_,
                 [&](int64_t r0, int64_t r1) { kiln_kernels::topk_rows(s_, x, values, indices, r0, r1); });
  }

 private:
  kiln_kernels::TopKShape s_;
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
  const kiln_kernels::TopKShape s{dims_product(d, 0, *axis), d[*axis], dims_product(d, *axis + 1, d.size()), (*k)[0],
                                  node.attr_int("largest", 1) != 0};
  return std::make_unique<TopKKernel>(s, threads);
}

}  // namespace

void add_topk_kernels(std::vector<KernelFactory>& table) { table.push_back({"", "TopK", make_topk}); }

}  // namespace kiln::backends::cpu
