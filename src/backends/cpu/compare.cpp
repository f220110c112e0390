// Comparisons of float tensors (Equal, Less, LessOrEqual, Greater, GreaterOrEqual) into bool,
// for operands of the output's shape or scalars (a peak test against a max-pooled copy, a
// threshold): one typed loop, split over the team for large tensors. Other broadcasts stay with
// the reference kernel.
#include <memory>

#include "backends/cpu/kernels.h"
#include "backends/cpu/parallel.h"

namespace kiln::backends::cpu {

namespace {

enum class Cmp { Eq, Lt, Le, Gt, Ge };

template <Cmp C>
inline bool cmp(float a, float b) {
  if constexpr (C == Cmp::Eq) return a == b;
  if constexpr (C == Cmp::Lt) return a < b;
  if constexpr (C == Cmp::Le) return a <= b;
  if constexpr (C == Cmp::Gt) return a > b;
  return a >= b;
}

template <Cmp C>
void compare(const float* a, int64_t sa, const float* b, int64_t sb, bool* o, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) o[i] = cmp<C>(a[i * sa], b[i * sb]);
}

using CompareFn = void (*)(const float*, int64_t, const float*, int64_t, bool*, int64_t, int64_t);

class CompareKernel : public Kernel {
 public:
  CompareKernel(CompareFn fn, bool a_scalar, bool b_scalar, int64_t n, int threads)
      : fn_(fn), sa_(a_scalar ? 0 : 1), sb_(b_scalar ? 0 : 1), n_(n), threads_(n >= (1 << 16) ? threads : 1) {}
  bool runs_in_team() const override { return true; }
  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    const float* a = inputs[0]->data<float>();
    const float* b = inputs[1]->data<float>();
    bool* o = outputs[0]->data<bool>();
    parallel_for(n_, threads_, [&](int64_t begin, int64_t end) { fn_(a, sa_, b, sb_, o, begin, end); });
  }

 private:
  CompareFn fn_;
  int64_t sa_, sb_, n_;
  int threads_;
};

std::unique_ptr<Kernel> make_compare(const ir::Node& node, int threads) {
  if (node.num_inputs() != 2 || node.num_outputs() != 1) return nullptr;
  const ir::Value* a = node.input(0);
  const ir::Value* b = node.input(1);
  const ir::Value* y = node.output(0);
  if (!a || !b || !y || a->type.dtype != DType::Float || b->type.dtype != DType::Float) return nullptr;
  if (!a->type.is_static() || !b->type.is_static() || !y->type.is_static()) return nullptr;
  const int64_t n = *y->type.static_numel();
  const bool a_scalar = *a->type.static_numel() == 1, b_scalar = *b->type.static_numel() == 1;
  if ((!a_scalar && a->type.static_dims() != y->type.static_dims()) ||
      (!b_scalar && b->type.static_dims() != y->type.static_dims()))
    return nullptr;
  const std::string& op = node.op_type();
  CompareFn fn = op == "Equal" ? compare<Cmp::Eq> : op == "Less" ? compare<Cmp::Lt> : op == "LessOrEqual" ? compare<Cmp::Le>
                 : op == "Greater" ? compare<Cmp::Gt> : compare<Cmp::Ge>;
  return std::make_unique<CompareKernel>(fn, a_scalar, b_scalar, n, threads);
}

}  // namespace

void add_compare_kernels(std::vector<KernelFactory>& table) {
  for (const char* op : {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"}) table.push_back({"", op, make_compare});
}

}  // namespace kiln::backends::cpu
