// Transpose with any perm and any plain element type, as a StridedCopy of the input seen through
// the permuted strides: axes that stay adjacent merge, so NCHW <-> NHWC becomes one 2-D
// transpose per image (blocked), and shufflenet's channel shuffle ([1,2,58,28,28] perm
// [0,2,1,3,4]) a memcpy per 28x28 plane.
#include <memory>

#include "backends/cpu/kernels.h"
#include "backends/cpu/node_args.h"
#include "backends/cpu/strided_copy.h"
#include "ops/core/shape_util.h"

namespace kiln::backends::cpu {

namespace {

std::unique_ptr<Kernel> make_transpose(const ir::Node& node, int threads) {
  if (node.num_inputs() != 1 || node.num_outputs() != 1 || !node.output(0)) return nullptr;
  const ir::Value* x = node.input(0);
  const ir::Value* y = node.output(0);
  const size_t es = plain_elem_size(x);
  if (!StridedCopy::supports(es) || plain_elem_size(y) != es || x->type.dtype != y->type.dtype) return nullptr;
  const std::vector<int64_t> d = x->type.static_dims();
  const int64_t r = static_cast<int64_t>(d.size());
  std::vector<int64_t> perm;
  if (node.has_attr("perm")) {
    perm = node.attr_ints("perm");
    if (static_cast<int64_t>(perm.size()) != r) return nullptr;
  } else {
    for (int64_t i = r; i-- > 0;) perm.push_back(i);
  }
  std::vector<bool> seen(r, false);
  for (int64_t& p : perm) {
    auto a = axis_in(p, r);
    if (!a || seen[*a]) return nullptr;
    p = *a;
    seen[p] = true;
  }
  const std::vector<int64_t> own = ops::strides_of(d);
  std::vector<int64_t> dims, strides;
  for (int64_t p : perm) {
    dims.push_back(d[p]);
    strides.push_back(own[p]);
  }
  if (y->type.static_dims() != dims) return nullptr;
  return std::make_unique<StridedCopyKernel>(StridedCopy(dims, strides, 0, es, threads));
}

}  // namespace

void add_transpose_kernels(std::vector<KernelFactory>& table) { table.push_back({"", "Transpose", make_transpose}); }

}  // namespace kiln::backends::cpu
