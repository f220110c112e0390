// LRN of any window size on kiln's loops (src/kernels/lrn.h, which emitted code runs too): the
// team splits the (image, channel) planes. oneDNN's primitive (onednn_lrn.cpp) comes first for
// odd sizes; its window leans the other way from ONNX's for even ones, which run here.
#include <memory>
#include <vector>

#include "backends/cpu/kernels.h"
#include "backends/cpu/onednn_common.h"
#include "backends/cpu/parallel.h"
#include "kernels/lrn.h"

namespace kiln::backends::cpu {

namespace {

class LrnKernel : public Kernel {
 public:
  LrnKernel(const kiln_kernels::LrnShape& s, int threads) : s_(s), threads_(threads) {}
  bool runs_in_team() const override { return true; }
  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    const float* x = inputs[0]->data<float>();
    float* y = outputs[0]->data<float>();
    const int team = s_.N * s_.C * s_.P >= kParallelMinElements ? threads_ : 1;
    parallel_for(s_.N * s_.C, team, [&](int64_t q0, int64_t q1) { kiln_kernels::lrn_planes(s_, x, y, q0, q1); });
  }

 private:
  kiln_kernels::LrnShape s_;
  int threads_;
};

std::unique_ptr<Kernel> make_lrn(const ir::Node& node, int threads) {
  if (node.num_inputs() != 1 || node.num_outputs() != 1) return nullptr;
  const ir::Value* x = node.input(0);
  if (!dnnl_util::static_float(x) || !dnnl_util::static_float(node.output(0))) return nullptr;
  const std::vector<int64_t> d = x->type.static_dims();
  const int64_t size = node.attr_int("size", 0);
  if (d.size() < 2 || node.output(0)->type.static_dims() != d || size < 1) return nullptr;
  int64_t plane = 1;
  for (size_t i = 2; i < d.size(); ++i) plane *= d[i];
  const kiln_kernels::LrnShape s{d[0], d[1], plane, size, node.attr_float("alpha", 1e-4f), node.attr_float("beta", 0.75f),
                                 node.attr_float("bias", 1.f)};
  return std::make_unique<LrnKernel>(s, threads);
}

}  // namespace

void add_lrn_kernels(std::vector<KernelFactory>& table) { table.push_back({"", "LRN", make_lrn}); }

}  // namespace kiln::backends::cpu
