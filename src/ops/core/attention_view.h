// kiln.Attention's operands as strided views. Each input may name a permutation (q_perm,
// k_perm, v_perm: the operand is Transpose(input, perm)) and an index (q_index, k_index,
// v_index: the operand is Transpose(input, perm)[index], its first axis taken there: one of Q,
// K, V packed in one tensor), and the output a permutation (out_perm: the node's output is
// Transpose(result, out_perm)), so that the transposes and gathers a transformer's export puts
// around its heads ([B, S, H, D] <-> [B, H, S, D]; [B, S, 3, H, D] -> three [B, H, S, D]) are
// read and written in place (src/lower/fold_attention_layout.cpp) instead of copied. The
// reference kernel, the CPU backend's kernels and emitted C++ all see an operand through these
// views.
#pragma once
#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace kiln::ops {

// An operand: its dims and, per dim, the distance in elements between neighbours in the tensor
// that holds it.
struct StridedView {
  std::vector<int64_t> dims, strides;
  int64_t offset = 0;  // of the first element
};

// Transpose(x, perm) for a dense row-major x of `dims`, as x's elements; an empty perm is the
// identity.
StridedView transposed_view(const std::vector<int64_t>& dims, const std::vector<int64_t>& perm);

// The r for which Transpose(r, perm) is the dense row-major tensor of `dims`, as that tensor's
// elements; an empty perm is the identity.
StridedView untransposed_view(const std::vector<int64_t>& dims, const std::vector<int64_t>& perm);

// v's first axis taken at `index` (0 <= index < v.dims[0]).
StridedView selected(StridedView v, int64_t index);

// Input i (0: Q, 1: K_T, 2: V) of an Attention node, given as a dense tensor of `dims`, as the
// operand the node reads (its perm and index applied); throws kiln::Error naming the node when
// they do not fit the input.
StridedView attention_operand(const ir::Node& node, int i, const std::vector<int64_t>& dims);

// Whether a matrix operand is rows of contiguous columns, the layout every kernel of the node
// reads; keys (K_T) may also be K's rows (contiguous down K_T's columns).
bool reads_as_rows(const StridedView& v, bool keys);

// The Attention node's permutation attribute `name` for an operand of `rank`: empty when it is
// absent or the identity; throws kiln::Error naming the node when it is not a permutation of
// 0 .. rank - 1.
std::vector<int64_t> attention_perm(const ir::Node& node, const char* name, size_t rank);

// For each matrix of a batch of `batch` dims (row-major), the element offset of the matching
// matrix of `v` (its last two dims the matrix; its batch dims right-aligned to `batch`, a dim
// of 1 broadcast), v's own offset included.
std::vector<int64_t> batch_element_offsets(const std::vector<int64_t>& batch, const StridedView& v);

}  // namespace kiln::ops
