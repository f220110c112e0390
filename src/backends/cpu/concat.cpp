// Concat on any axis and any plain element type. Every input is a [outer, row_i] block of bytes
// and the output a [outer, sum row_i] one, so the copy is `outer` memcpys per input, a
// RowBlocksKernel gather (row_blocks.h).
#include <memory>

#include "backends/cpu/kernels.h"
#include "backends/cpu/node_args.h"
#include "backends/cpu/row_blocks.h"

namespace kiln::backends::cpu {

namespace {

std::unique_ptr<Kernel> make_concat(const ir::Node& node, int threads) {
  if (node.num_inputs() < 1 || node.num_outputs() != 1 || !node.output(0) || !node.has_attr("axis")) return nullptr;
  const ir::Value* y = node.output(0);
  const size_t es = plain_elem_size(y);
  if (es == 0) return nullptr;
  const std::vector<int64_t> yd = y->type.static_dims();
  const int64_t rank = static_cast<int64_t>(yd.size());
  auto axis = axis_in(node.attr_int("axis", 0), rank);
  if (rank == 0 || !axis) return nullptr;
  const int64_t outer = dims_product(yd, 0, *axis), inner = dims_product(yd, *axis + 1, yd.size());
  std::vector<int64_t> row_bytes;
  int64_t extent = 0;
  for (const ir::Value* x : node.inputs()) {
    if (!x) {
      row_bytes.push_back(0);
      continue;
    }
    if (plain_elem_size(x) != es || x->type.dtype != y->type.dtype) return nullptr;
    const std::vector<int64_t> xd = x->type.static_dims();
    if (static_cast<int64_t>(xd.size()) != rank) return nullptr;
    for (int64_t d = 0; d < rank; ++d)
      if (d != *axis && xd[d] != yd[d]) return nullptr;
    extent += xd[*axis];
    row_bytes.push_back(xd[*axis] * inner * static_cast<int64_t>(es));
  }
  if (extent != yd[*axis]) return nullptr;
  return std::make_unique<RowBlocksKernel>(RowBlocksKernel::Direction::Gather, outer, std::move(row_bytes), threads);
}

}  // namespace

void add_concat_kernels(std::vector<KernelFactory>& table) { table.push_back({"", "Concat", make_concat}); }

}  // namespace kiln::backends::cpu
