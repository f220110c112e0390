#include "plan_report.h"

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "backends/backend.h"
#include "runtime/compiled_plan.h"

namespace kiln::cli {

bool print_plan(const ir::Graph& g, bool json, int fusion_level, int threads) {
  std::vector<std::vector<int64_t>> dims;
  for (const ir::Value* v : g.inputs()) {
    std::vector<int64_t> d;
    for (const ir::Dim& x : v->type.dims) d.push_back(x.is_static() ? x.value : 1);
    dims.push_back(d);
  }
  auto backend = backends::make_cpu_backend(threads);
  auto cp = runtime::compile(g, dims, {}, backend.get(), fusion_level);
  const lower::Program& p = cp->program;
  const plan::MemoryPlan& m = cp->memory;
  std::string problem = plan::check_plan(p, m);
  // Kernels one run launches: instructions other than views, which only rename storage.
  int kernels = 0;
  for (const lower::Instruction& ins : p.instructions) {
    bool view = !ins.outputs.empty();
    for (int id : ins.outputs) view = view && id >= 0 && p.buffers[id].alias_of >= 0 && !p.buffers[id].in_place;
    kernels += !view;
  }

  if (json) {
    nlohmann::json j;
    j["arena_bytes"] = m.arena_bytes;
    j["lower_bound_bytes"] = m.lower_bound_bytes;
    j["naive_bytes"] = m.naive_bytes;
    j["strategy"] = m.strategy;
    j["checker"] = problem.empty() ? "ok" : "failed";
    if (!problem.empty()) j["checker_problem"] = problem;
    j["buffers"] = nlohmann::json::array();
    for (const lower::Buffer& b : p.buffers) {
      nlohmann::json e;
      e["id"] = b.id;
      e["value"] = b.value->name();
      e["kind"] = lower::buffer_kind_name(b.kind);
      e["bytes"] = b.bytes;
      e["offset"] = m.offset_of[b.id];
      e["alias_of"] = b.alias_of;
      e["in_place"] = b.in_place;
      j["buffers"].push_back(e);
    }
    j["kernels"] = kernels;
    j["fusion"] = {{"level", fusion_level}, {"fused_nodes", cp->fusion.fused_nodes}, {"nodes_folded", cp->fusion.nodes_folded}};
    j["layout"] = {{"channels_last_ops", cp->layout.channels_last_ops}, {"reorders", cp->layout.transposes},
                   {"blocked_values", cp->layout.blocked_values}, {"conv_concats", cp->layout.conv_concats},
                   {"concat_readers", cp->layout.concat_readers},
                   {"conv_chains", cp->layout.conv_chains}, {"conv_prologues", cp->layout.conv_prologues},
                   {"channel_scales", cp->layout.channel_scales}, {"gemv_chains", cp->layout.gemv_chains},
                   {"attention_transposes", cp->layout.attention_transposes}};
    j["lowering"] = nlohmann::json::array();
    for (const passes::PassStats& ps : cp->lowering)
      j["lowering"].push_back({{"pass", ps.pass}, {"changed", ps.changed > 0}, {"nodes_before", ps.nodes_before},
                               {"nodes_after", ps.nodes_after}, {"ms", ps.ms}});
    j["instructions"] = nlohmann::json::array();
    for (const lower::Instruction& ins : p.instructions)
      j["instructions"].push_back({{"node", ins.node->name()}, {"op", ins.node->op_type()}, {"backend", ins.backend}});
    j["plan"] = plan::to_json(cp->plan);
    std::cout << j.dump(2) << "\n";
    return problem.empty();
  }

  std::cout << "arena:       " << m.arena_bytes << " bytes (" << m.strategy << ")\n"
            << "lower bound: " << m.lower_bound_bytes << " bytes (most bytes live at one step)\n"
            << "naive:       " << m.naive_bytes << " bytes (every buffer on its own)\n"
            << "checker:     " << (problem.empty() ? "ok" : "FAILED: " + problem) << "\n"
            << "kernels:     " << kernels << " per run (fusion level " << fusion_level << ": "
            << cp->fusion.fused_nodes << " fused groups replace " << cp->fusion.nodes_folded << " nodes)\n"
            << "layout:      " << cp->layout.channels_last_ops << " ops channels-last, " << cp->layout.transposes
            << " reorders (transposes) left, " << cp->layout.blocked_values
            << " activations nChw16c between Winograd convs, " << cp->layout.conv_concats
            << " Concats written in place by their convs, " << cp->layout.concat_readers
            << " Concats gathered by their elementwise readers, " << cp->layout.conv_chains
            << " conv chains run in bands of rows, " << cp->layout.conv_prologues
            << " 1x1 convs computing their elementwise input, " << cp->layout.channel_scales
            << " channel scales folded into conv weights, " << cp->layout.gemv_chains
            << " one-row products run in pairs, " << cp->layout.attention_transposes
            << " attention operands read in place (no head transposes or gathers)\n";
  std::cout << "lowering:   ";
  for (const passes::PassStats& ps : cp->lowering)
    std::cout << " " << ps.pass << (ps.changed ? "" : " (no change)") << " " << ps.nodes_before << "->" << ps.nodes_after
              << ",";
  std::cout << "\n\n";
  std::cout << "instructions:\n";
  for (size_t i = 0; i < p.instructions.size(); ++i) {
    const lower::Instruction& ins = p.instructions[i];
    std::cout << "  " << i << "  " << ins.node->op_type() << " '" << ins.node->name() << "' on " << ins.backend << "\n";
  }
  std::cout << "\nbuffers:\n";
  char line[512];
  std::snprintf(line, sizeof line, "  %-5s %-9s %12s %12s  %-10s %s\n", "id", "kind", "bytes", "offset", "alias", "value");
  std::cout << line;
  for (const lower::Buffer& b : p.buffers) {
    if (b.kind == lower::BufferKind::Constant) continue;
    std::string alias = b.alias_of < 0 ? "" : (b.in_place ? "inplace:" : "view:") + std::to_string(b.alias_of);
    std::snprintf(line, sizeof line, "  %-5d %-9s %12lld %12lld  %-10s %s\n", b.id, lower::buffer_kind_name(b.kind),
                  static_cast<long long>(b.bytes), static_cast<long long>(m.offset_of[b.id]), alias.c_str(),
                  b.value->name().c_str());
    std::cout << line;
  }
  return problem.empty();
}

}  // namespace kiln::cli
