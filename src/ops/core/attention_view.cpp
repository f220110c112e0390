#include "ops/core/attention_view.h"

#include <kiln/error.h>

#include "ops/core/shape_util.h"

namespace kiln::ops {

StridedView transposed_view(const std::vector<int64_t>& dims, const std::vector<int64_t>& perm) {
  const std::vector<int64_t> dense = strides_of(dims);
  if (perm.empty()) return {dims, dense};
  StridedView v;
  for (int64_t p : perm) {
    v.dims.push_back(dims[static_cast<size_t>(p)]);
    v.strides.push_back(dense[static_cast<size_t>(p)]);
  }
  return v;
}

StridedView untransposed_view(const std::vector<int64_t>& dims, const std::vector<int64_t>& perm) {
  const std::vector<int64_t> dense = strides_of(dims);
  if (perm.empty()) return {dims, dense};
  // Output dim i is the result's dim perm[i].
  StridedView v{std::vector<int64_t>(dims.size()), std::vector<int64_t>(dims.size())};
  for (size_t i = 0; i < perm.size(); ++i) {
    v.dims[static_cast<size_t>(perm[i])] = dims[i];
    v.strides[static_cast<size_t>(perm[i])] = dense[i];
  }
  return v;
}

StridedView selected(StridedView v, int64_t index) {
  v.offset += index * v.strides[0];
  v.dims.erase(v.dims.begin());
  v.strides.erase(v.strides.begin());
  return v;
}

StridedView attention_operand(const ir::Node& node, int i, const std::vector<int64_t>& dims) {
  static const char* const perms[3] = {"q_perm", "k_perm", "v_perm"};
  static const char* const indices[3] = {"q_index", "k_index", "v_index"};
  StridedView v = transposed_view(dims, attention_perm(node, perms[i], dims.size()));
  if (!node.has_attr(indices[i])) return v;
  const int64_t index = node.attr_int(indices[i], 0);
  if (v.dims.size() < 3 || index < 0 || index >= v.dims[0])
    throw Error("Attention '" + node.name() + "': " + indices[i] + " " + std::to_string(index) +
                " does not select a matrix batch of a " + std::to_string(v.dims.size()) + "-D operand of " +
                std::to_string(v.dims.empty() ? 0 : v.dims[0]));
  return selected(std::move(v), index);
}

bool reads_as_rows(const StridedView& v, bool keys) {
  const size_t r = v.strides.size();
  return r >= 2 && (v.strides[r - 1] == 1 || (keys && v.strides[r - 2] == 1));
}

std::vector<int64_t> attention_perm(const ir::Node& node, const char* name, size_t rank) {
  if (!node.has_attr(name)) return {};
  std::vector<int64_t> perm = node.attr_ints(name);
  std::vector<bool> seen(rank, false);
  bool identity = perm.size() == rank;
  for (size_t i = 0; i < perm.size(); ++i) {
    const int64_t p = perm[i];
    if (perm.size() != rank || p < 0 || p >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(p)])
      throw Error("Attention '" + node.name() + "': " + name + " " + ints_str(perm) + " is not a permutation of " +
                  std::to_string(rank) + " axes");
    seen[static_cast<size_t>(p)] = true;
    identity = identity && p == static_cast<int64_t>(i);
  }
  return identity ? std::vector<int64_t>{} : perm;
}

std::vector<int64_t> batch_element_offsets(const std::vector<int64_t>& batch, const StridedView& v) {
  const size_t own = v.dims.size() >= 2 ? v.dims.size() - 2 : 0;
  // The operand's stride for each batch dim (0 where it has none or broadcasts a 1).
  std::vector<int64_t> stride(batch.size(), 0);
  for (size_t i = 0; i < own && i < batch.size(); ++i) {
    const size_t a = own - 1 - i, b = batch.size() - 1 - i;
    stride[b] = v.dims[a] == 1 ? 0 : v.strides[a];
  }
  int64_t count = 1;
  for (int64_t d : batch) count *= d;
  std::vector<int64_t> offsets(static_cast<size_t>(count));
  for (int64_t n = 0; n < count; ++n) {
    int64_t rest = n, off = v.offset;
    for (size_t i = batch.size(); i-- > 0;) {
      off += rest % batch[i] * stride[i];
      rest /= batch[i];
    }
    offsets[static_cast<size_t>(n)] = off;
  }
  return offsets;
}

}  // namespace kiln::ops
