// kiln.Attention's operands as strided views. Each input may name a permutation (q_perm,
// k_perm, v_perm: the operand is Transpose(input, perm)) and the output one (out_perm: the
// node's output is Transpose(result, out_perm)), so that the transposes a transformer's export
// puts around its heads ([B, S, H, D] <-> [B, H, S, D]) are read and written in place
// (src/lower/fold_attention_layout.cpp) instead of copied. The reference kernel, the CPU
// backend's kernels and emitted C++ all see an operand through these views.
#pragma once
#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace kiln::ops {

// An operand: its dims and, per dim, the distance in elements between neighbours in the tensor
// that holds it.
struct StridedView {
  std::vector<int64_t> dims, strides;
};

// Transpose(x, perm) for a dense row-major x of `dims`, as x's elements; an empty perm is the
// identity.
StridedView transposed_view(const std::vector<int64_t>& dims, const std::vector<int64_t>& perm);

// The r for which Transpose(r, perm) is the dense row-major tensor of `dims`, as that tensor's
// elements; an empty perm is the identity.
StridedView untransposed_view(const std::vector<int64_t>& dims, const std::vector<int64_t>& perm);

// The Attention node's permutation attribute `name` for an operand of `rank`: empty when it is
// absent or the identity; throws kiln::Error naming the node when it is not a permutation of
// 0 .. rank - 1.
std::vector<int64_t> attention_perm(const ir::Node& node, const char* name, size_t rank);

// For each matrix of a batch of `batch` dims (row-major), the element offset of the matching
// matrix of `v` (its last two dims the matrix; its batch dims right-aligned to `batch`, a dim
// of 1 broadcast).
std::vector<int64_t> batch_element_offsets(const std::vector<int64_t>& batch, const StridedView& v);

}  // namespace kiln::ops
