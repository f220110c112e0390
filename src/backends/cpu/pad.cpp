// Pad with amounts known at creation (non-negative: no cropping) on any plain element type. In
// constant mode the output is filled with the pad value, then each innermost row of the input is
// copied to its place; in the other modes (reflect, edge, wrap) each output row is copied from
// the input row its outer coordinates map to (ops::pad_source, the reference kernel's mapping),
// its middle in one piece and its padded ends element by element. Rows split over the team for
// large tensors.
#include <cstring>
#include <memory>
#include <string>

#include "backends/cpu/kernels.h"
#include "backends/cpu/node_args.h"
#include "backends/cpu/parallel.h"
#include "ops/core/pad_args.h"

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

// Reflect, edge and wrap: every output cell copies the input cell its coordinates map to.
class MappedPadKernel : public Kernel {
 public:
  MappedPadKernel(const std::vector<int64_t>& in_dims, const std::vector<int64_t>& out_dims,
                  const std::vector<int64_t>& before, const std::string& mode, size_t elem, int threads)
      : out_(out_dims), elem_(elem) {
    const size_t r = in_dims.size();
    src_.resize(r);
    for (size_t d = 0; d < r; ++d)
      for (int64_t o = 0; o < out_dims[d]; ++o) src_[d].push_back(ops::pad_source(o, before[d], in_dims[d], mode));
    stride_.assign(r, 1);
    for (size_t d = r - 1; d-- > 0;) stride_[d] = stride_[d + 1] * in_dims[d + 1];
    inner_begin_ = before[r - 1];
    inner_len_ = in_dims[r - 1];
    int64_t bytes = static_cast<int64_t>(elem_);
    for (int64_t d : out_) bytes *= d;
    threads_ = bytes >= (256 << 10) ? threads : 1;
  }
  bool runs_in_team() const override { return true; }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    const char* src = static_cast<const char*>(inputs[0]->raw());
    char* dst = static_cast<char*>(outputs[0]->raw());
    const int r = static_cast<int>(out_.size());
    const int64_t inner = out_[r - 1];
    int64_t rows = 1;
    for (int d = 0; d + 1 < r; ++d) rows *= out_[d];
    const std::vector<int64_t>& last = src_[r - 1];
    parallel_for(rows, threads_, [&](int64_t begin, int64_t end) {
      for (int64_t q = begin; q < end; ++q) {
        int64_t rest = q, at = 0;
        for (int d = r - 2; d >= 0; --d) {
          at += src_[d][rest % out_[d]] * stride_[d];
          rest /= out_[d];
        }
        const char* s = src + at * static_cast<int64_t>(elem_);
        char* o = dst + q * inner * static_cast<int64_t>(elem_);
        for (int64_t j = 0; j < inner_begin_; ++j) std::memcpy(o + j * elem_, s + last[j] * elem_, elem_);
        std::memcpy(o + inner_begin_ * elem_, s, static_cast<size_t>(inner_len_) * elem_);
        for (int64_t j = inner_begin_ + inner_len_; j < inner; ++j) std::memcpy(o + j * elem_, s + last[j] * elem_, elem_);
      }
    });
  }

 private:
  std::vector<int64_t> out_, stride_;
  std::vector<std::vector<int64_t>> src_;  // per axis, the input coordinate of each output one
  int64_t inner_begin_ = 0, inner_len_ = 0;
  size_t elem_;
  int threads_ = 1;
};

std::unique_ptr<Kernel> make_pad(const ir::Node& node, int threads) {
  if (node.owner()->opset() < 11 || node.num_inputs() < 2 || node.num_outputs() != 1 || node.has_input(3)) return nullptr;
  const std::string mode = node.attr_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && !(mode == "wrap" && node.owner()->opset() >= 19))
    return nullptr;
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
  if (mode != "constant") {
    for (size_t d = 0; d < r; ++d)
      if (xd[d] == 0 && yd[d] > 0) return nullptr;  // nothing to reflect or repeat
    return std::make_unique<MappedPadKernel>(xd, yd, std::vector<int64_t>(pads->begin(), pads->begin() + r), mode, elem,
                                             threads);
  }
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
