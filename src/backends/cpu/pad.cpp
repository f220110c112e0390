// Pad in constant mode with amounts known at creation (non-negative: no cropping) on any plain
// element type: the output is filled with the pad value, then each innermost row of the input
// is copied to its place, rows split over the team for large tensors. Other modes (reflect,
// edge, wrap) stay with the reference kernel.
#include <cstring>
#include <memory>

#include "backends/cpu/kernels.h"
#include "backends/cpu/node_args.h"
#include "backends/cpu/parallel.h"

namespace kiln::backends::cpu {

namespace {

class PadKernel : public Kernel {
 public:
  PadKernel(std::vector<int64_t> in_dims, std::vector<int64_t> out_dims, std::vector<int64_t> before, size_t elem,
            std::vector<char> fill, int threads)
      : in_(std::move(in_dims)), out_(std::move(out_dims)), before_(std::move(before)), elem_(elem), fill_(std::move(fill)) {
    rows_ = 1;
    for (size_t d = 0; d + 1 < in_.size(); ++d) rows_ *= in_[d];
    int64_t bytes = static_cast<int64_t>(elem_);
    for (int64_t d : out_) bytes *= d;
    threads_ = bytes >= (256 << 10) ? threads : 1;
    zero_fill_ = true;
    for (char c : fill_) zero_fill_ = zero_fill_ && c == 0;
  }
  bool runs_in_team() const override { return true; }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    const char* src = static_cast<const char*>(inputs[0]->raw());
    char* dst = static_cast<char*>(outputs[0]->raw());
    const int64_t total = outputs[0]->numel();
    parallel_for(total, threads_, [&](int64_t begin, int64_t end) {
      if (zero_fill_) {
        std::memset(dst + begin * elem_, 0, static_cast<size_t>(end - begin) * elem_);
        return;
      }
      for (int64_t i = begin; i < end; ++i) std::memcpy(dst + i * elem_, fill_.data(), elem_);
    });
    const int r = static_cast<int>(in_.size());
    const int64_t row = in_.back();
    parallel_for(rows_, threads_, [&](int64_t begin, int64_t end) {
      std::vector<int64_t> idx(r, 0);
      for (int64_t q = begin; q < end; ++q) {
        int64_t rest = q;
        for (int d = r - 2; d >= 0; --d) {
          idx[d] = rest % in_[d];
          rest /= in_[d];
        }
        int64_t at = 0;
        for (int d = 0; d < r - 1; ++d) at = at * out_[d] + idx[d] + before_[d];
        at = at * out_[r - 1] + before_[r - 1];
        std::memcpy(dst + at * elem_, src + q * row * elem_, static_cast<size_t>(row) * elem_);
      }
    });
  }

 private:
  std::vector<int64_t> in_, out_, before_;
  size_t elem_;
  std::vector<char> fill_;
  int64_t rows_ = 1;
  int threads_ = 1;
  bool zero_fill_ = true;
};

std::unique_ptr<Kernel> make_pad(const ir::Node& node, int threads) {
  if (node.owner()->opset() < 11 || node.num_inputs() < 2 || node.num_outputs() != 1) return nullptr;
  if (node.attr_string("mode", "constant") != "constant" || node.has_input(3)) return nullptr;
  const ir::Value* x = node.input(0);
  const ir::Value* y = node.output(0);
  const size_t elem = plain_elem_size(x);
  if (!x || !y || elem == 0 || !x->type.is_static() || !y->type.is_static() || x->type.rank() == 0) return nullptr;
  const auto pads = constant_ints(node, 1);
  const std::vector<int64_t> xd = x->type.static_dims(), yd = y->type.static_dims();
  const size_t r = xd.size();
  if (!pads || pads->size() != 2 * r || yd.size() != r) return nullptr;
  for (size_t d = 0; d < r; ++d)
    if ((*pads)[d] < 0 || (*pads)[d + r] < 0 || yd[d] != xd[d] + (*pads)[d] + (*pads)[d + r]) return nullptr;
  std::vector<char> fill(elem, 0);
  if (node.has_input(2)) {
    const ir::Value* v = node.input(2);
    if (!v->is_constant() || v->constant().numel() != 1 || v->constant().dtype() != x->type.dtype) return nullptr;
    std::memcpy(fill.data(), v->constant().raw(), elem);
  }
  return std::make_unique<PadKernel>(xd, yd, std::vector<int64_t>(pads->begin(), pads->begin() + r), elem,
                                     std::move(fill), threads);
}

}  // namespace

void add_pad_kernels(std::vector<KernelFactory>& table) { table.push_back({"", "Pad", make_pad}); }

}  // namespace kiln::backends::cpu
