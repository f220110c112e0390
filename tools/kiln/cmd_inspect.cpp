// kiln inspect MODEL.onnx: prints the imported IR after shape inference (symbolic dims shown),
// so a user can see what kiln made of the model. With --groups / --json / --dot it prints the
// fusion groups instead: which nodes run as one kernel, and what that saves.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>

#include "codegen/cuda/cuda_project.h"
#include "commands.h"
#include "frontend/onnx/importer.h"
#include "fusion/partitioner.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "ops/core/infer_graph.h"
#include "passes/pipelines.h"
#include "plan/kernel_spec.h"
#include "plan_picture.h"
#include "plan_report.h"
#include "runtime/kiln_file.h"
#include "runtime/session_access.h"

namespace kiln::cli {

namespace {

std::string dot_quote(const std::string& s) {
  std::string r = "\"";
  for (char c : s) r += c == '\n' ? std::string("\\n") : (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return r + "\"";
}

// One cluster per group; graph inputs as ellipses, constants left out.
void write_dot(const ir::Graph& g, const std::vector<fusion::Group>& groups, const std::string& path) {
  std::ofstream os(path);
  if (!os) throw Error("cannot write " + path);
  std::map<const ir::Node*, std::string> id;
  os << "digraph " << dot_quote(g.name.empty() ? "model" : g.name) << " {\n  node [shape=box, fontsize=10];\n";
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const fusion::Group& grp = groups[gi];
    std::string label = std::to_string(gi) + ": " + ops::pattern_kind_name(grp.pattern);
    if (grp.anchor) label += " (anchor " + grp.anchor->name() + ")";
    os << "  subgraph cluster_" << gi << " {\n    label=" << dot_quote(label) << "; style=filled; color=\"#e8e8f0\";\n";
    for (const ir::Node* n : grp.nodes) {
      id[n] = "n" + std::to_string(id.size());
      os << "    " << id[n] << " [label=" << dot_quote(n->name() + "\n" + n->op_type()) << "];\n";
    }
    os << "  }\n";
  }
  for (const ir::Value* v : g.inputs()) os << "  " << dot_quote("in:" + v->name()) << " [shape=ellipse, label=" << dot_quote(v->name()) << "];\n";
  for (const ir::Node* n : g.nodes())
    for (const ir::Value* v : n->inputs()) {
      if (!v || v->is_constant()) continue;
      if (v->producer() && id.count(v->producer())) os << "  " << id[v->producer()] << " -> " << id[n] << ";\n";
      else if (v->is_graph_input()) os << "  " << dot_quote("in:" + v->name()) << " -> " << id[n] << ";\n";
    }
  os << "}\n";
}

nlohmann::ordered_json groups_json(const std::vector<fusion::Group>& groups) {
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (const fusion::Group& grp : groups) {
    nlohmann::ordered_json names = nlohmann::ordered_json::array(), ops = nlohmann::ordered_json::array();
    for (const ir::Node* n : grp.nodes) {
      names.push_back(n->name());
      ops.push_back(n->op_type());
    }
    arr.push_back({{"nodes", names},
                   {"ops", ops},
                   {"pattern", ops::pattern_kind_name(grp.pattern)},
                   {"anchor", grp.anchor ? nlohmann::ordered_json(grp.anchor->name()) : nlohmann::ordered_json(nullptr)},
                   {"bytes_saved", grp.bytes_saved}});
  }
  return {{"groups", arr}, {"kernels", groups.size()}};
}

void print_groups(const ir::Graph& g, const std::vector<fusion::Group>& groups, int level) {
  int64_t saved = 0;
  std::printf("group pattern          saved bytes  ops\n");
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const fusion::Group& grp = groups[gi];
    saved += grp.bytes_saved;
    std::printf("%4zu  %-15s %10lld B  %-28s %s\n", gi, ops::pattern_kind_name(grp.pattern),
                static_cast<long long>(grp.bytes_saved), fusion::group_ops(grp).c_str(),
                grp.anchor ? ("anchor " + grp.anchor->name()).c_str() : "");
  }
  std::printf("kernels: %zu for %zu nodes (fusion level %d), intermediates not written: %lld bytes\n", groups.size(),
              g.num_nodes(), level, static_cast<long long>(saved));
}

}  // namespace

void add_inspect_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("inspect", "Print the model as kiln's IR, with inferred types, or its fusion groups");
  struct Args {
    std::string model, dot, target, svg;
    bool no_infer = false, groups = false, json = false, plan = false;
    int level = 3, threads = 1;
    fusion::FusionOptions fusion;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("model", args->model, "Model file (.onnx)")->required();
  cmd->add_flag("--no-infer", args->no_infer, "Print the types as declared in the file, without kiln's shape inference");
  cmd->add_flag("--groups", args->groups, "List the fusion groups (one kernel each): ops, pattern, anchor, bytes saved");
  cmd->add_flag("--json", args->json, "Print the fusion groups (or with --plan, the memory plan) as JSON");
  cmd->add_flag("--plan", args->plan,
                "Print the executable plan: kernels, lowering passes, arena bytes, lower bound, naive sum, checker verdict, per-buffer table");
  cmd->add_option("--target", args->target,
                  "With --plan: cuda prints each instruction's device (GPU, or the CPU with copies around it) "
                  "as kiln compile --target cuda places them")
      ->check(CLI::IsMember({"cuda"}));
  cmd->add_option("--level", args->level, "Graph optimization level applied before --plan (0-3)")
      ->check(CLI::Range(0, 3))->capture_default_str();
  cmd->add_option("--threads", args->threads, "Intra-op threads the --plan is made for")
      ->check(CLI::Range(1, 1024))->capture_default_str();
  cmd->add_option("--dot", args->dot, "Write the graph as Graphviz, one cluster per fusion group");
  cmd->add_option("--svg", args->svg,
                  "Draw the graph that runs (the executable plan: a cluster per instruction with its kernel, shapes on "
                  "edges) with Graphviz into FILE (.svg, .png, ...)");
  cmd->add_option("--fusion", args->fusion.level, "Fusion level: 0 none, 1 elementwise, 2 + broadcast/injective/reduce, 3 + anchors")
      ->check(CLI::Range(0, 3))->capture_default_str();
  cmd->add_option("--max-group-size", args->fusion.max_group_size, "Most nodes in one fusion group")
      ->check(CLI::PositiveNumber)->capture_default_str();
  cmd->callback([args, cmd, &exit_code] {
    if (runtime::is_kiln_file(args->model)) {
      // A compiled model: its manifest, every plan with its kernel specs (the plans it holds,
      // as they will run; --json for all of it).
      const runtime::KilnFile f = runtime::read_kiln_file(args->model);
      if (args->json) {
        std::cout << f.manifest.dump(1) << "\n";
      } else {
        std::cout << "options: " << f.manifest.value("options", nlohmann::json::object()).dump() << "\n"
                  << "constants: " << f.constants.size() << " bytes\n"
                  << "graph for other shapes: " << (f.graph.empty() ? "none (static inputs)" : "yes") << "\n";
        for (const auto& p : f.manifest.value("plans", nlohmann::json::array())) {
          std::cout << "plan for " << p.value("dims", nlohmann::json::array()).dump() << ":\n";
          const nlohmann::json& e = p.value("plan", nlohmann::json::object());
          std::cout << "  threads " << e.value("threads", 0) << ", isa " << e.value("isa", nlohmann::json::array()).dump()
                    << ", arena " << e.value("arenas", nlohmann::json::array()).dump() << "\n";
          int i = 0;
          for (const auto& ins : e.value("instructions", nlohmann::json::array()))
            std::cout << "  " << i++ << "  " << ins.value("op", std::string("?")) << " '"
                      << ins.value("node", std::string("?")) << "' on "
                      << plan::kernel_spec_from_json(ins.value("kernel", nlohmann::json::object())).str() << "\n";
        }
      }
      exit_code = 0;
      return;
    }
    // The plans of the model's fixed input shapes, as a session compiles them.
    auto compiled = [&](const std::vector<std::string>& skip) {
      SessionOptions o;
      o.threads = args->threads;
      o.opt_level = args->level;
      o.fusion_level = args->fusion.level;
      o.disabled_passes = skip;
      std::shared_ptr<Session> s = Session::create(args->model, o);
      std::vector<std::vector<int64_t>> dims;
      for (const TensorInfo& in : s->inputs()) {
        if (in.is_sequence || !in.rank_known) throw Error("input '" + in.name + "' (" + in.str() + ") has no fixed shape");
        for (int64_t d : in.dims)
          if (d < 0) throw Error("input '" + in.name + "' (" + in.str() + ") has a symbolic dim: compile it with --dim");
        dims.push_back(in.dims);
      }
      s->prepare(dims);
      std::vector<codegen::PlanSource> plans;
      for (const auto& cp : SessionAccess::plans(*s))
        if (cp->input_dims == dims) plans.push_back({cp->graph.get(), &cp->plan, cp->input_dims});
      return std::make_pair(s, plans);
    };
    if (!args->svg.empty()) {
      if (args->plan || args->groups || !args->dot.empty() || args->json)
        throw Error("--svg draws the graph that runs; give it alone (with --level, --fusion, --threads)");
      auto [session, plans] = compiled({});
      render_dot(plan_dot(*plans.front().graph, *plans.front().plan), args->svg);
      std::cout << "wrote " << args->svg << " (" << plans.front().plan->instructions.size() << " instructions)\n";
      exit_code = 0;
      return;
    }
    if (!args->target.empty()) {
      if (!args->plan) throw Error("--target goes with --plan");
      // The plans kiln compile --target cuda walks, placed as it places them.
      auto [session, plans] = compiled(codegen::cuda_disabled_passes());
      std::cout << codegen::placement_report(codegen::cuda_placement(plans), true);
      exit_code = 0;
      return;
    }
    if (args->plan && (args->groups || !args->dot.empty()))
      throw Error("--plan describes the executable plan; --groups and --dot describe fusion groups: give one or the other");
    auto g = onnx_fe::load_model(args->model);
    ir::verify(*g);
    if (args->plan) {
      ops::ShapeInference().run(*g);
      passes::OptimizeOptions o;
      o.level = args->level;
      if (o.level > 0) passes::optimize(*g, o);
      exit_code = print_plan(*g, args->json, args->fusion.level, args->threads) ? 0 : 1;
      return;
    }
    const bool fuse = args->groups || args->json || !args->dot.empty();
    const bool level_given = cmd->get_option("--level")->count() > 0;
    if (args->no_infer && (fuse || level_given)) throw Error("--no-infer prints the file as declared: no --level, --groups, --json or --dot");
    if (!args->no_infer || fuse) ops::ShapeInference().run(*g);
    // Fusion groups are those of the graph that runs: after the optimizer (--level); the plain
    // IR is the file's unless a --level is given.
    if ((fuse || level_given) && args->level > 0) {
      passes::OptimizeOptions o;
      o.level = args->level;
      passes::optimize(*g, o);
    }
    if (!fuse) {
      std::cout << ir::print(*g);
      exit_code = 0;
      return;
    }
    std::vector<fusion::Group> groups = fusion::partition(*g, args->fusion);
    if (!args->dot.empty()) write_dot(*g, groups, args->dot);
    if (args->json) std::cout << groups_json(groups).dump(1) << "\n";  // JSON alone: the table is --groups without --json
    else if (args->groups) print_groups(*g, groups, args->fusion.level);
    exit_code = 0;
  });
}

}  // namespace kiln::cli
