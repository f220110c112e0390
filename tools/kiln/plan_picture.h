// `kiln inspect --svg FILE`: the graph that runs, drawn by Graphviz: one cluster per instruction
// of the executable plan (after optimization, fusion and lowering), labelled with its op and
// kernel, holding the nodes it stands for (a fused group's members); edges carry the shapes.
#pragma once
#include <string>

#include "plan/executable_plan.h"
#include "ir/graph.h"

namespace kiln::cli {

// The plan as Graphviz dot text.
std::string plan_dot(const ir::Graph& g, const plan::ExecutablePlan& p);
// Renders dot text with Graphviz's `dot` into `path` (.svg, .png, ... by its extension); a
// kiln::Error saying what is missing when Graphviz is not installed.
void render_dot(const std::string& dot, const std::string& path);

}  // namespace kiln::cli
