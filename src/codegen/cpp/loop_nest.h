// Elementwise groups as plain C++ loop nests: a kiln.FusedElementwise body, or one elementwise,
// broadcast or view node (Transpose, Reshape, Expand, ...), becomes one loop over the output's
// index space (fusion::plan_access pulls it back through the views), reading every source
// through its strides and computing each member as a scalar expression, innermost dim unit
// stride where the output is: no intermediate is stored and the compiler vectorizes the loop.
//
//   for (int64_t i0 = 0; i0 < 196; ++i0)
//     for (int64_t i1 = 0; i1 < 64; ++i1) {
//       const float s0 = p0[i0 * 64 + i1];
//       const float s1 = p1[i1];
//       const float v2 = s0 + s1;
//       const float v3 = v2 > 0.f ? v2 : 0.f;
//       o0[i0 * 64 + i1] = v3;
//     }
#pragma once
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/cpp/emit_context.h"

namespace kiln::codegen::cpp {

// Writes the loop for `nodes` (topological order) into ctx: `sources` are the values that stand
// for the instruction's inputs (source k is read through ctx.step.inputs[k]), constants the
// nodes read are literals or weights, `outputs` the values written to ctx.step.outputs in order.
// An UnsupportedError naming the node for an op or type it cannot write, or when no single loop
// reads every source (a value needed in two layouts).
// `locals` maps values that live in buffers of the instruction's own (a kiln.FusedReduce's reduction
// input and result) to pointer expressions: such a source is read there, such an output written
// there instead of to ctx.step.outputs (its position among `outputs` then skips none of them).
void emit_loop_nest(EmitContext& ctx, const std::vector<const ir::Node*>& nodes,
                    const std::vector<const ir::Value*>& sources, const std::vector<const ir::Value*>& outputs,
                    const std::unordered_map<const ir::Value*, std::string>& locals = {});

// A strided copy as a loop nest: dst[dst_offset + sum_k i_k * dst_strides[k]] = src[src_offset +
// sum_k i_k * src_strides[k]] over the index space `dims`, elements of type t (Concat, Slice,
// Split). Neighbouring dims both sides step through as one are merged.
void emit_strided_copy(EmitContext& ctx, DType t, const std::string& src, int64_t src_offset,
                       const std::vector<int64_t>& src_strides, const std::string& dst, int64_t dst_offset,
                       const std::vector<int64_t>& dst_strides, const std::vector<int64_t>& dims);

// A pointer a loop body reads or writes through: `type` with its const, `expr` where it points.
struct LoopPointer {
  std::string type, name, expr;
  bool restrict_ok = false;  // no other pointer of the loop reaches its bytes
};

// The loops over `dims` (indices i0, i1, ...) around `body`, the pointers declared before them
// (the C++ target; the outermost loop split across the team when long), or, for the CUDA target,
// a kernel with a thread per point whose parameters are the pointers, launched on c.stream.
void write_loops(EmitContext& ctx, const std::vector<LoopPointer>& ptrs, const std::vector<int64_t>& dims,
                 const std::vector<std::string>& body, const std::string& indent = "");

// Row-major strides of dims.
std::vector<int64_t> dense_strides(const std::vector<int64_t>& dims);

// Whether emit_loop_nest can write `n` as a member (its op is in the expression table or a view).
bool loop_nest_supports(const ir::Node& n);

}  // namespace kiln::codegen::cpp
