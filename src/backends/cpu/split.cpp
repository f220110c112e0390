// Split on any axis and any plain element type: the input is a [outer, sum row_k] block of bytes
// and output k a [outer, row_k] one, so `outer` memcpys per output, a RowBlocksKernel scatter
// (row_blocks.h). Split sizes come from the attribute (opset < 13), a constant `split` input
// (13+), or an even split (uneven from 18 on, as the reference kernel does); a runtime `split`
// input is declined.
#include <algorithm>
#include <memory>

#include "backends/cpu/kernels.h"
#include "backends/cpu/node_args.h"
#include "backends/cpu/row_blocks.h"

namespace kiln::backends::cpu {

namespace {

// The split sizes the reference kernel would use, or empty to decline.
std::vector<int64_t> split_sizes(const ir::Node& node, int64_t extent, int64_t n) {
  const int64_t opset = node.owner() ? node.owner()->opset("") : 0;
  std::vector<int64_t> sizes;
  if (opset < 13) {
    if (node.has_input(1)) return {};
    sizes = node.attr_ints("split");
  } else if (node.has_input(1)) {
    auto s = constant_ints(node, 1);
    if (!s) return {};
    sizes = *s;
  }
  if (sizes.empty()) {
    if (n < 1) return {};
    if (extent % n == 0) {
      sizes.assign(n, extent / n);
    } else if (opset >= 18) {
      const int64_t c = (extent + n - 1) / n;
      for (int64_t i = 0; i < n; ++i) sizes.push_back(std::max<int64_t>(0, std::min(c, extent - i * c)));
    } else {
      return {};
    }
  }
  int64_t sum = 0;
  for (int64_t s : sizes) {
    if (s < 0) return {};
    sum += s;
  }
  if (static_cast<int64_t>(sizes.size()) != n || sum != extent) return {};
  return sizes;
}

std::unique_ptr<Kernel> make_split(const ir::Node& node, int threads) {
  if (node.num_inputs() < 1 || node.num_outputs() < 1 || !node.owner()) return nullptr;
  const ir::Value* x = node.input(0);
  const size_t es = plain_elem_size(x);
  if (es == 0) return nullptr;
  const std::vector<int64_t> xd = x->type.static_dims();
  const int64_t rank = static_cast<int64_t>(xd.size());
  auto axis = axis_in(node.attr_int("axis", 0), rank);
  if (rank == 0 || !axis) return nullptr;
  const std::vector<int64_t> sizes = split_sizes(node, xd[*axis], node.num_outputs());
  if (sizes.empty()) return nullptr;
  const int64_t outer = dims_product(xd, 0, *axis), inner = dims_product(xd, *axis + 1, xd.size());
  std::vector<int64_t> row_bytes;
  for (int k = 0; k < node.num_outputs(); ++k) {
    row_bytes.push_back(sizes[k] * inner * static_cast<int64_t>(es));
    const ir::Value* y = node.output(k);
    if (!y) continue;
    std::vector<int64_t> want = xd;
    want[*axis] = sizes[k];
    if (plain_elem_size(y) != es || y->type.dtype != x->type.dtype || y->type.static_dims() != want) return nullptr;
  }
  return std::make_unique<RowBlocksKernel>(RowBlocksKernel::Direction::Scatter, outer, std::move(row_bytes), threads);
}

}  // namespace

void add_split_kernels(std::vector<KernelFactory>& table) { table.push_back({"", "Split", make_split}); }

}  // namespace kiln::backends::cpu
