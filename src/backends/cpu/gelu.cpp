// Gelu, float32: ai.onnx's (approximate = none | tanh, formed by the optimizer from the erf or
// tanh subgraph in any opset) and com.microsoft's (erf). One vectorized pass in parallel chunks.
#include <algorithm>
#include <memory>

#include "backends/cpu/activation_apply.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/onednn_common.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/simd.h"

namespace kiln::backends::cpu {

namespace {

class GeluKernel : public Kernel {
 public:
  bool runs_in_team() const override { return true; }
  GeluKernel(int64_t n, bool tanh_form, int threads) : n_(n), tanh_(tanh_form), threads_(threads) {}

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    const float* x = inputs[0]->data<float>();
    float* y = outputs[0]->data<float>();
    constexpr int64_t kChunk = 16384;  // elements per work item: 64 KiB in and out
    const int64_t chunks = (n_ + kChunk - 1) / kChunk;
    parallel_for(chunks, threads_, [&](int64_t b, int64_t e) {
      const int64_t lo = b * kChunk, hi = std::min(n_, e * kChunk);
      if (tanh_) gelu_tanh(x + lo, y + lo, hi - lo);
      else gelu_erf(x + lo, y + lo, hi - lo);
    });
  }

 private:
  int64_t n_;
  bool tanh_;
  int threads_;
};

std::unique_ptr<Kernel> make_gelu(const ir::Node& node, int threads) {
  if (node.num_inputs() != 1 || node.num_outputs() != 1) return nullptr;
  const ir::Value *x = node.input(0), *y = node.output(0);
  if (!dnnl_util::static_float(x) || !dnnl_util::static_float(y) || x->type.static_dims() != y->type.static_dims())
    return nullptr;
  const std::string approx = node.domain().empty() ? node.attr_string("approximate", "none") : "none";
  if (approx != "none" && approx != "tanh") return nullptr;
  const int64_t n = *x->type.static_numel();
  if (n == 0) return nullptr;
  return std::make_unique<GeluKernel>(n, approx == "tanh", threads);
}

}  // namespace

void add_gelu_kernels(std::vector<KernelFactory>& table) {
  table.push_back({"", "Gelu", make_gelu});
  table.push_back({"com.microsoft", "Gelu", make_gelu});
}

}  // namespace kiln::backends::cpu
