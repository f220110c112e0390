#include "frontend/load_model.h"
#include "input_ranges.h"

#include <kiln/error.h>

#include <algorithm>
#include <functional>
#include <set>

#include "frontend/onnx/importer.h"
#include "ir/graph.h"
#include "ops/core/infer_graph.h"
#include "runtime/kiln_file.h"

namespace kiln::cli {

namespace {

bool passes_values_through(const std::string& op) {
  static const std::set<std::string> ops = {"Unsqueeze", "Squeeze", "Reshape", "Flatten", "Identity", "Expand"};
  return ops.count(op) > 0;
}

struct Use {
  bool gather_index = false, only_as_float = true;
  int64_t bound = 0;  // the smallest gathered extent seen (0: none)
};

// Follows v's uses through value-preserving ops (and Cast) into what reads it.
void visit(const ir::Value* v, bool cast_to_float, Use& u, int depth) {
  if (depth > 16) return;
  for (const ir::Use& use : v->uses()) {
    const ir::Node& n = *use.node;
    const std::string& op = n.op_type();
    if ((op == "Gather" || op == "GatherElements") && n.domain().empty() && use.input_index == 1) {
      const ir::Value* data = n.input(0);
      const int64_t rank = data && data->type.rank_known ? data->type.rank() : -1;
      int64_t axis = n.attr_int("axis", 0);
      if (axis < 0) axis += rank;
      if (rank > 0 && axis >= 0 && axis < rank && data->type.dims[static_cast<size_t>(axis)].is_static()) {
        const int64_t d = data->type.dims[static_cast<size_t>(axis)].value;
        u.gather_index = true;
        u.bound = u.bound ? std::min(u.bound, d) : d;
      }
      u.only_as_float = false;
      continue;
    }
    if (op == "Cast" && n.num_outputs() == 1) {
      visit(n.output(0), dtype_is_float(n.output(0)->type.dtype), u, depth + 1);
      continue;
    }
    if (passes_values_through(op) && use.input_index == 0 && n.num_outputs() == 1) {
      visit(n.output(0), cast_to_float, u, depth + 1);
      continue;
    }
    if (!cast_to_float) u.only_as_float = false;
  }
}

}  // namespace

std::map<std::string, int64_t> integer_input_bounds(const std::string& path) {
  std::map<std::string, int64_t> bounds;
  if (runtime::is_kiln_file(path)) return bounds;
  std::unique_ptr<ir::Graph> g;
  try {
    g = frontend::load_model(path);
    ops::ShapeInference().run(*g);
  } catch (const Error&) {
    return bounds;  // the session reports what is wrong with the model
  }
  for (const ir::Value* in : g->inputs()) {
    if (!in->type.is_tensor() || dtype_is_float(in->type.dtype) || in->type.dtype == DType::Bool ||
        in->type.dtype == DType::String)
      continue;
    Use u;
    visit(in, false, u, 0);
    if (u.gather_index) bounds[in->name()] = std::max<int64_t>(1, u.bound);
    else if (u.only_as_float && !in->uses().empty()) bounds[in->name()] = 2;
  }
  return bounds;
}

}  // namespace kiln::cli
