// `kiln inspect --svg FILE`: the graph that runs, drawn by Graphviz: one cluster per instruction
// of the executable plan (after optimization, fusion and lowering), labelled with its op and
// kernel, holding the nodes it stands for (a fused group's members); edges carry the shapes.
#pragma once
#include <string>
#include <vector>

#include "plan/executable_plan.h"
#include "ir/graph.h"

namespace kiln::cli {

// The graph nodes an instruction stands for, as {op, name}: a fused op's body, else its node.
struct Member {
  std::string op, name;
};
std::vector<Member> instruction_members(const ir::Graph& g, const plan::PlanInstruction& ins);
// True when the instruction only renames storage (a Reshape whose outputs alias its input):
// no kernel runs for it.
bool is_view(const plan::ExecutablePlan& p, const plan::PlanInstruction& ins);

// The plan as Graphviz dot text.
std::string plan_dot(const ir::Graph& g, const plan::ExecutablePlan& p);
// Renders dot text with Graphviz's `dot` into `path` (.svg, .png, ... by its extension); a
// kiln::Error saying what is missing when Graphviz is not installed.
void render_dot(const std::string& dot, const std::string& path);

}  // namespace kiln::cli
