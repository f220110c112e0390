// How a fused group reads its sources when it runs as one loop over its output.
//
// A group of elementwise/broadcast ops with injective "view" members (Reshape, Flatten,
// Squeeze, Unsqueeze, Transpose, Expand) never needs its intermediates in memory: a view only
// renames indices, so each source can be read straight from its buffer with the right strides,
// wherever the view sits (before, between or after the elementwise ops).
//
// plan_access() pulls the output's index space back through the body, node by node, and
// describes every value as a list of *atoms* (iteration dims) per dim:
//
//     out [B,H,S,D]   atoms: b h s d                      iteration space = b h s d
//     Transpose(0,2,1,3)  ─▶  t [B,S,H,D]   dims: (b)(s)(h)(d)
//     Reshape             ─▶  u [B,S,H*D]   dims: (b)(s)(h d)      merge: strides stay linear
//     Add(u, bias[H*D])   ─▶  bias          dims: (h d)            broadcast: b, s read stride 0
//
// A Reshape that splits a dim whose atoms do not line up splits the atom itself (an atom of
// size 768 read as [12,64] becomes two atoms 12 and 64, everywhere), so every access stays
// one stride per atom. When a value would need two different layouts (x + Transpose(x) on a
// computed x), or sizes do not divide, there is no plan and the caller runs the group another way.
#pragma once
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace kiln::fusion {

// Injective ops that only rename indices and that plan_access() can see through.
bool is_view_op(const ir::Node& n);

// Where element `i` (a multi-index over AccessPlan::dims) of a buffer lives:
// offset + sum_k i[k] * strides[k], in elements.
struct Access {
  int64_t offset = 0;
  std::vector<int64_t> strides;
  bool operator==(const Access& o) const { return offset == o.offset && strides == o.strides; }
};

struct AccessPlan {
  std::vector<int64_t> dims;  // the iteration space, row-major; outputs are written in this order
  std::vector<int> output_dim;  // per iteration dim: the dim of the outputs' shape it is part of
  struct Operand {
    const ir::Value* source;  // a value no body node produces (a group input or a constant)
    Access access;
  };
  std::vector<Operand> operands;                           // each distinct read of a source
  std::map<std::pair<const ir::Node*, int>, int> reads;  // (node, input) that reads a source -> operand
  std::vector<Access> outputs;                             // where each output's elements go
};

// `nodes` in topological order, all values static; view nodes read their input 0, every other
// node is taken as elementwise with all inputs broadcast to its output. `outputs` must share
// one shape. Returns nullopt when no single-loop plan exists.
std::optional<AccessPlan> plan_access(const std::vector<const ir::Node*>& nodes,
                                      const std::vector<const ir::Value*>& outputs);

}  // namespace kiln::fusion
