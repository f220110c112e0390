// Tile with constant repeats, any plain element type, as a StridedCopy: each axis of extent d
// repeated r times is read as two, [r, d] with strides [0, the input's], so a row of the input
// is one memcpy however often it repeats.
#include <memory>

#include "backends/cpu/kernels.h"
#include "backends/cpu/node_args.h"
#include "backends/cpu/strided_copy.h"
#include "ops/core/shape_util.h"

namespace kiln::backends::cpu {

namespace {

std::unique_ptr<Kernel> make_tile(const ir::Node& node, int threads) {
  if (node.num_inputs() != 2 || node.num_outputs() != 1 || !node.output(0)) return nullptr;
  const ir::Value* x = node.input(0);
  const ir::Value* y = node.output(0);
  const size_t es = plain_elem_size(x);
  if (!StridedCopy::supports(es) || plain_elem_size(y) != es || x->type.dtype != y->type.dtype) return nullptr;
  const std::optional<std::vector<int64_t>> repeats = constant_ints(node, 1);
  const std::vector<int64_t> d = x->type.static_dims();
  const size_t r = d.size();
  if (!repeats || repeats->size() != r || r == 0) return nullptr;
  const std::vector<int64_t> own = ops::strides_of(d);
  std::vector<int64_t> dims, strides, out;
  for (size_t k = 0; k < r; ++k) {
    const int64_t rep = (*repeats)[k];
    if (rep < 0) return nullptr;
    dims.insert(dims.end(), {rep, d[k]});
    strides.insert(strides.end(), {0, own[k]});
    out.push_back(rep * d[k]);
  }
  if (y->type.static_dims() != out) return nullptr;
  return std::make_unique<StridedCopyKernel>(StridedCopy(dims, strides, 0, es, threads));
}

}  // namespace

void add_tile_kernels(std::vector<KernelFactory>& table) { table.push_back({"", "Tile", make_tile}); }

}  // namespace kiln::backends::cpu
