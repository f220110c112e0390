// kiln.NhwcDepthToSpace / NhwcSpaceToDepth (layout assignment's channels-last forms): moving
// blocks of channels to and from blocks of pixels is, in NHWC, a copy of contiguous channel
// runs: output pixel (h·b + i, w·b + j) of DepthToSpace takes, from input pixel (h, w), the C'
// channels of block (i, j) (DCR: channels (i·b + j)·C' ... + C'; CRD: channel c·b² + i·b + j,
// one element each). SpaceToDepth (DCR order, ONNX's only one) is the inverse copy.
#include <cstring>
#include <memory>

#include "backends/cpu/kernels.h"
#include "backends/cpu/parallel.h"

namespace kiln::backends::cpu {

namespace {

// dst[wide + k] = src[at + k·stride] for k < n, elements of type T.
template <typename T>
void gather(const char* src, char* dst, int64_t at, int64_t wide, int64_t n, int64_t stride) {
  const T* s = reinterpret_cast<const T*>(src) + at;
  T* d = reinterpret_cast<T*>(dst) + wide;
  for (int64_t k = 0; k < n; ++k) d[k] = s[k * stride];
}

class DepthSpaceKernel : public Kernel {
 public:
  // Dims of the deep side: [N, H, W, C], C = b·b·c.
  DepthSpaceKernel(bool to_space, bool crd, int64_t n, int64_t h, int64_t w, int64_t c, int64_t b, size_t elem, int threads)
      : to_space_(to_space), crd_(crd), n_(n), h_(h), w_(w), c_(c), b_(b), elem_(elem),
        threads_(n * h * w * c * b * b * static_cast<int64_t>(elem) >= (256 << 10) ? threads : 1) {}
  bool runs_in_team() const override { return true; }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    const char* src = static_cast<const char*>(inputs[0]->raw());
    char* dst = static_cast<char*>(outputs[0]->raw());
    const int64_t cb = c_ * b_ * b_;  // channels on the deep side
    const size_t run = static_cast<size_t>(c_) * elem_;
    parallel_for(n_ * h_, threads_, [&](int64_t begin, int64_t end) {
      for (int64_t nh = begin; nh < end; ++nh) {
        const int64_t n = nh / h_, h = nh % h_;
        for (int64_t i = 0; i < b_; ++i)
          for (int64_t w = 0; w < w_; ++w)
            for (int64_t j = 0; j < b_; ++j) {
              const int64_t deep = ((n * h_ + h) * w_ + w) * cb;                            // deep pixel
              const int64_t wide = ((n * h_ * b_ + h * b_ + i) * w_ * b_ + w * b_ + j) * c_;  // spatial pixel
              if (!crd_) {
                const int64_t at = deep + (i * b_ + j) * c_;
                if (to_space_) std::memcpy(dst + wide * elem_, src + at * elem_, run);
                else std::memcpy(dst + at * elem_, src + wide * elem_, run);
                continue;
              }
              const int64_t at = deep + i * b_ + j;  // channel k of the block at at + k·b²
              switch (elem_) {
                case 4: gather<uint32_t>(src, dst, at, wide, c_, b_ * b_); break;
                case 2: gather<uint16_t>(src, dst, at, wide, c_, b_ * b_); break;
                case 8: gather<uint64_t>(src, dst, at, wide, c_, b_ * b_); break;
                default: gather<uint8_t>(src, dst, at, wide, c_, b_ * b_); break;
              }
            }
      }
    });
  }

 private:
  bool to_space_, crd_;
  int64_t n_, h_, w_, c_, b_;
  size_t elem_;
  int threads_;
};

std::unique_ptr<Kernel> make_depth_space(const ir::Node& node, int threads) {
  const bool to_space = node.op_type() == "NhwcDepthToSpace";
  if (node.num_inputs() != 1 || node.num_outputs() != 1 || !node.input(0) || !node.output(0)) return nullptr;
  const ir::Value* x = node.input(0);
  const ir::Value* y = node.output(0);
  if (!x->type.is_tensor() || !x->type.is_static() || !y->type.is_static() || x->type.rank() != 4) return nullptr;
  const size_t elem = dtype_size(x->type.dtype);
  if (elem == 0 || x->type.dtype == DType::String || dtype_is_narrow(x->type.dtype)) return nullptr;
  const int64_t b = node.attr_int("blocksize", 0);
  const std::string mode = node.attr_string("mode", "DCR");
  if (b < 1 || (mode != "DCR" && mode != "CRD") || (!to_space && mode != "DCR")) return nullptr;
  const std::vector<int64_t> deep = (to_space ? x : y)->type.static_dims();
  if (deep[3] % (b * b)) return nullptr;
  return std::make_unique<DepthSpaceKernel>(to_space, mode == "CRD", deep[0], deep[1], deep[2], deep[3] / (b * b), b,
                                            elem, threads);
}

}  // namespace

void add_depth_space_kernels(std::vector<KernelFactory>& table) {
  table.push_back({"kiln", "NhwcDepthToSpace", make_depth_space});
  table.push_back({"kiln", "NhwcSpaceToDepth", make_depth_space});
}

}  // namespace kiln::backends::cpu
