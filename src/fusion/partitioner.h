// Splits a graph into fusion groups (TVM's GraphPartitioner): each group becomes one kernel.
// See the note at the top of partitioner.cpp for the algorithm.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ops/core/op_def.h"

namespace kiln::fusion {

struct FusionOptions {
  // 0 none, 1 elementwise only, 2 + broadcast/injective/reduction/tuple, 3 + anchors
  // (Conv, MatMul, Gemm absorb their elementwise epilogues).
  int level = 3;
  // Most nodes in one group (TVM's max_fuse_depth).
  int max_group_size = 256;
};

struct Group {
  std::vector<ir::Node*> nodes;  // topological order
  // The most complex member: OutEWiseFusable with an anchor, else CommReduce, Injective
  // (a Tuple op fused with others counts as injective), Broadcast, ElemWise; a lone node keeps
  // its own kind (Opaque, Tuple...).
  ops::PatternKind pattern = ops::PatternKind::Opaque;
  ir::Node* anchor = nullptr;  // the OutEWiseFusable member, if any (at most one)
  // Bytes of values produced and consumed only inside the group (never graph outputs), which a
  // fused kernel need not write to memory; only values with static shapes count.
  int64_t bytes_saved = 0;
};

// Every node of g lands in exactly one group; groups come in a valid execution order (every
// value a group reads from another group is produced by an earlier one). Throws kiln::Error
// for a bad level or max_group_size.
std::vector<Group> partition(const ir::Graph& g, const FusionOptions& opts = {});

// "Conv+Add+Relu": the group's op types joined, for listings.
std::string group_ops(const Group& group);

}  // namespace kiln::fusion
