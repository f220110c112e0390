// Cast between the plain numeric types where every value converts exactly or by rounding to
// nearest (integers and bool to float32, float32 to bool, integer widening and narrowing of
// int32/int64): a typed loop per pair, split over the team for large tensors. Float to integer
// (out-of-range values have no defined result in C++), the 16-bit and narrow float types and
// strings stay with the reference kernel.
#include <cstdint>
#include <memory>

#include "backends/cpu/kernels.h"
#include "backends/cpu/parallel.h"

namespace kiln::backends::cpu {

namespace {

constexpr int64_t kParallelElements = 1 << 16;

template <typename From, typename To>
void convert(const void* src, void* dst, int64_t begin, int64_t end) {
  const From* a = static_cast<const From*>(src);
  To* o = static_cast<To*>(dst);
  if constexpr (std::is_same_v<To, bool>) {
    for (int64_t i = begin; i < end; ++i) o[i] = a[i] != From(0);
  } else {
    for (int64_t i = begin; i < end; ++i) o[i] = static_cast<To>(a[i]);
  }
}

using ConvertFn = void (*)(const void*, void*, int64_t, int64_t);

ConvertFn pick(DType from, DType to) {
  if (to == DType::Float) {
    switch (from) {
      case DType::Int32: return convert<int32_t, float>;
      case DType::Int64: return convert<int64_t, float>;
      case DType::UInt8: return convert<uint8_t, float>;
      case DType::Int8: return convert<int8_t, float>;
      case DType::Bool: return convert<bool, float>;
      default: return nullptr;
    }
  }
  if (from == DType::Float && to == DType::Bool) return convert<float, bool>;
  if (from == DType::Int32 && to == DType::Int64) return convert<int32_t, int64_t>;
  if (from == DType::Int64 && to == DType::Int32) return convert<int64_t, int32_t>;
  if (from == DType::UInt8 && to == DType::Int32) return convert<uint8_t, int32_t>;
  if (from == DType::Bool && to == DType::Int32) return convert<bool, int32_t>;
  if (from == DType::Bool && to == DType::Int64) return convert<bool, int64_t>;
  return nullptr;
}

class CastKernel : public Kernel {
 public:
  CastKernel(ConvertFn fn, int64_t n, int threads) : fn_(fn), n_(n), threads_(n >= kParallelElements ? threads : 1) {}
  bool runs_in_team() const override { return true; }
  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    const void* src = inputs[0]->raw();
    void* dst = outputs[0]->raw();
    parallel_for(n_, threads_, [&](int64_t begin, int64_t end) { fn_(src, dst, begin, end); });
  }

 private:
  ConvertFn fn_;
  int64_t n_;
  int threads_;
};

std::unique_ptr<Kernel> make_cast(const ir::Node& node, int threads) {
  if (node.num_inputs() != 1 || node.num_outputs() != 1 || !node.input(0) || !node.output(0)) return nullptr;
  const ir::Value* x = node.input(0);
  const ir::Value* y = node.output(0);
  if (!x->type.is_tensor() || !x->type.is_static() || !y->type.is_static()) return nullptr;
  const ConvertFn fn = pick(x->type.dtype, y->type.dtype);
  if (!fn) return nullptr;
  return std::make_unique<CastKernel>(fn, *x->type.static_numel(), threads);
}

}  // namespace

void add_cast_kernels(std::vector<KernelFactory>& table) { table.push_back({"", "Cast", make_cast}); }

}  // namespace kiln::backends::cpu
