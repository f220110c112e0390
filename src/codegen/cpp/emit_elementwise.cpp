// Elementwise groups and single elementwise or view nodes: loop nests (loop_nest.h).
#include "codegen/cpp/loop_nest.h"
#include "codegen/cpp/op_emitters.h"
#include "fusion/access_plan.h"

namespace kiln::codegen::cpp {

void emit_fused_elementwise(EmitContext& ctx) {
  auto it = ctx.node.attrs.find("body");
  if (it == ctx.node.attrs.end() || !it->second.g) throw ctx.unsupported("has no body graph");
  const ir::Graph& body = *it->second.g;
  std::vector<const ir::Node*> nodes;
  for (const ir::Node* n : body.nodes()) nodes.push_back(n);
  std::vector<const ir::Value*> sources(body.inputs().begin(), body.inputs().end());
  std::vector<const ir::Value*> outputs(body.outputs().begin(), body.outputs().end());
  emit_loop_nest(ctx, nodes, sources, outputs);
}

void emit_elementwise_node(EmitContext& ctx) {
  const ir::Node& n = ctx.node;
  if (fusion::is_view_op(n) && n.op_type() != "Transpose" && n.op_type() != "Expand" &&
      ctx.step.outputs.at(0).storage == ctx.step.inputs.at(0).storage) {
    ctx.line("// a view: its output shares its input's bytes");
    return;
  }
  std::vector<const ir::Value*> sources;
  for (int i = 0; i < n.num_inputs(); ++i) sources.push_back(n.has_input(i) ? n.input(i) : nullptr);
  emit_loop_nest(ctx, {&n}, sources, {n.output(0)});
}

}  // namespace kiln::codegen::cpp
