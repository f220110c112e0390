// Resize (opset 10+) and Upsample on float tensors, at most two axes changed, with scales,
// sizes and roi known at creation: the per-axis tap tables planned once (ops/core/
// resize_geometry.h), the rows interpolated by kiln_kernels::resize_rows (src/kernels/resize.h,
// the kernel emitted C++ calls too), separable and in float, the threads splitting the output
// rows. Other forms (more axes, tf_crop_and_resize outside the input, integer types) stay on the
// reference kernel.
#include <kiln/error.h>

#include <memory>
#include <optional>
#include <vector>

#include "backends/cpu/kernels.h"
#include "backends/cpu/parallel.h"
#include "kernels/resize.h"
#include "ops/core/resize_geometry.h"

namespace kiln::backends::cpu {

namespace {

class ResizeKernel : public Kernel {
 public:
  bool runs_in_team() const override { return true; }
  ResizeKernel(ops::SeparableResize r, const std::vector<int64_t>& in, const std::vector<int64_t>& out, int threads)
      : r_(std::move(r)), threads_(threads) {
    for (size_t k = 0; k < r_.axes.size(); ++k) weights_.emplace_back(r_.plans[k].w.begin(), r_.plans[k].w.end());
    for (size_t k = 0; k < r_.axes.size(); ++k)
      axes_.push_back({r_.plans[k].taps, in[r_.axes[k]], out[r_.axes[k]], r_.plans[k].idx.data(), weights_[k].data()});
    rows_ = r_.outer * out[r_.axes[0]];
    scratch_ = kiln_kernels::resize_scratch_floats(r_.mid, r_.inner, axes_[0], axes_.size() > 1 ? &axes_[1] : nullptr);
    elements_ = 1;
    for (int64_t d : out) elements_ *= d;
  }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    const float* x = inputs[0]->data<float>();
    float* y = outputs[0]->data<float>();
    const int threads = elements_ >= kParallelMinElements ? threads_ : 1;
    parallel_for(rows_, threads, [&](int64_t begin, int64_t end) {
      std::vector<float> scratch(static_cast<size_t>(scratch_));
      kiln_kernels::resize_rows(begin, end, r_.mid, r_.inner, axes_[0], axes_.size() > 1 ? &axes_[1] : nullptr, x, y,
                                scratch.data());
    });
  }

 private:
  ops::SeparableResize r_;
  std::vector<std::vector<float>> weights_;
  std::vector<kiln_kernels::ResizeAxis> axes_;
  int64_t rows_ = 0, scratch_ = 0, elements_ = 0;
  int threads_;
};

std::unique_ptr<Kernel> make_resize(const ir::Node& n, int threads) {
  const ir::Value* x = n.input(0);
  const ir::Value* y = n.output(0);
  if (!x->type.is_static() || !y->type.is_static() || x->type.dtype != DType::Float) return nullptr;
  const int64_t opset = n.owner() ? n.owner()->opset("") : 17;
  try {
    const ops::ResizeAttrs a = ops::read_resize_attrs(n, opset);
    const ops::ResizeInputSlots s = ops::resize_slots(n, opset);
    const Tensor* given[3] = {nullptr, nullptr, nullptr};
    const int slots[3] = {s.scales, s.sizes, s.roi};
    for (int k = 0; k < 3; ++k) {
      if (slots[k] < 0 || !n.has_input(slots[k])) continue;
      if (!n.input(slots[k])->is_constant()) return nullptr;
      given[k] = &n.input(slots[k])->constant();
    }
    std::vector<float> attr_scales;
    if (n.op_type() == "Upsample" && opset < 9) attr_scales = n.attr_floats("scales");
    const std::vector<int64_t> in = x->type.static_dims(), out = y->type.static_dims();
    const ops::ResizeGeometry g = ops::resolve_resize(n, a, in, given[0], given[1], given[2], attr_scales);
    if (g.out != out) return nullptr;
    std::optional<ops::SeparableResize> r = ops::separable_resize(a, g, in);
    if (!r) return nullptr;
    return std::make_unique<ResizeKernel>(std::move(*r), in, out, threads);
  } catch (const Error&) {
    return nullptr;  // the reference kernel says what is wrong
  }
}

}  // namespace

void add_resize_kernels(std::vector<KernelFactory>& t) {
  t.push_back({"", "Resize", make_resize});
  t.push_back({"", "Upsample", make_resize});
}

}  // namespace kiln::backends::cpu
