// kiln inspect MODEL.onnx: prints the imported IR after shape inference (symbolic dims shown),
// so a user can see what kiln made of the model. --groups, --json, --dot, --svg and --plan all
// describe the graph that runs: the executable plan's instructions (after optimization, fusion
// and lowering), each with the graph nodes it stands for.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>

#include "frontend/load_model.h"
#include "codegen/cuda/cuda_project.h"
#include "commands.h"
#include "frontend/onnx/importer.h"
#include "model_options.h"
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

// The instructions of the executable plan, each with the graph nodes it stands for: the kernels
// a run launches, the same graph --plan and --svg describe.
nlohmann::ordered_json groups_json(const ir::Graph& g, const plan::ExecutablePlan& p, int fusion_level) {
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  int64_t nodes = 0, kernels = 0;
  for (const plan::PlanInstruction& ins : p.instructions) {
    const bool view = is_view(p, ins);
    kernels += !view;
    nlohmann::ordered_json names = nlohmann::ordered_json::array(), ops = nlohmann::ordered_json::array();
    for (const Member& m : instruction_members(g, ins)) {
      names.push_back(m.name);
      ops.push_back(m.op);
      ++nodes;
    }
    arr.push_back({{"op", (ins.domain.empty() ? "" : ins.domain + ".") + ins.op},
                   {"kernel", ins.spec.str()},
                   {"view", view},
                   {"nodes", names},
                   {"ops", ops}});
  }
  return {{"groups", arr}, {"kernels", kernels}, {"nodes", nodes}, {"fusion_level", fusion_level}};
}

void print_groups(const ir::Graph& g, const plan::ExecutablePlan& p, int fusion_level) {
  std::printf("instr  op                    implementation                      nodes\n");
  int64_t nodes = 0, kernels = 0;
  for (size_t i = 0; i < p.instructions.size(); ++i) {
    const plan::PlanInstruction& ins = p.instructions[i];
    const std::vector<Member> ms = instruction_members(g, ins);
    nodes += static_cast<int64_t>(ms.size());
    const bool view = is_view(p, ins);
    kernels += !view;
    std::string list;
    for (const Member& m : ms) list += (list.empty() ? "" : ", ") + (ms.size() > 1 ? m.op + " " : "") + m.name;
    std::printf("%5zu  %-21s %-35s %s\n", i, ((ins.domain.empty() ? "" : ins.domain + ".") + ins.op).c_str(),
                view ? "(a view: no kernel)" : ins.spec.str().c_str(), list.c_str());
  }
  std::printf("kernels: %lld per run for %lld graph nodes (fusion level %d)\n", static_cast<long long>(kernels),
              static_cast<long long>(nodes), fusion_level);
}

}  // namespace

void add_inspect_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("inspect", "Print the model as kiln's IR, with inferred types, or its fusion groups");
  struct Args {
    std::string model, dot, target, svg;
    bool no_infer = false, groups = false, json = false, plan = false;
    int level = 3, threads = 1, fusion = 3, streams = codegen::CudaOptions{}.streams;
    std::vector<std::string> dims;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("model", args->model, "Model file (.onnx)")->required();
  cmd->add_flag("--no-infer", args->no_infer, "Print the types as declared in the file, without kiln's shape inference");
  cmd->add_flag("--groups", args->groups,
                "List the kernels a run launches (the plan's instructions), each with its implementation and the graph nodes it stands for");
  cmd->add_flag("--json", args->json, "Print the --groups list (or with --plan, the whole plan) as JSON");
  cmd->add_flag("--plan", args->plan,
                "Print the executable plan: kernels, lowering passes, arena bytes, lower bound, naive sum, checker verdict, per-buffer table");
  cmd->add_option("--target", args->target,
                  "With --plan: cuda prints the plan as kiln compile --target cuda places it: each instruction's "
                  "device (GPU, or the CPU with copies around it) and stream (--json: the placed plan as data)")
      ->check(CLI::IsMember({"cuda"}));
  cmd->add_option("--streams", args->streams, "With --target cuda: at most this many CUDA streams, as kiln compile's")
      ->check(CLI::Range(1, 64))->capture_default_str();
  cmd->add_option("--level", args->level, "Graph optimization level applied before --plan (0-3)")
      ->check(CLI::Range(0, 3))->capture_default_str();
  cmd->add_option("--threads", args->threads, "Intra-op threads the --plan is made for")
      ->check(CLI::Range(1, 1024))->capture_default_str();
  cmd->add_option("--dot", args->dot, "Write the graph that runs as Graphviz text (what --svg draws): a cluster per instruction");
  cmd->add_option("--dim", args->dims, "SYMBOL=N: the extent of a symbolic input dim for the plan (repeatable)");
  cmd->add_option("--svg", args->svg,
                  "Draw the graph that runs (the executable plan: a cluster per instruction with its kernel, shapes on "
                  "edges) with Graphviz into FILE (.svg, .png, ...)");
  cmd->add_option("--fusion", args->fusion, "Fusion level: 0 none, 1 elementwise, 2 + broadcast/injective/reduce, 3 + anchors")
      ->check(CLI::Range(0, 3))->capture_default_str();
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
      o.fusion_level = args->fusion;
      o.disabled_passes = skip;
      std::shared_ptr<Session> s = Session::create(args->model, o);
      const std::map<std::string, int64_t> given = single_dims(args->dims, s->inputs());
      std::vector<std::vector<int64_t>> dims;
      for (const TensorInfo& in : s->inputs()) {
        if (in.is_sequence || !in.rank_known) throw Error("input '" + in.name + "' (" + in.str() + ") has no fixed shape");
        std::vector<int64_t> d = in.dims;
        for (size_t k = 0; k < d.size(); ++k) {
          if (d[k] >= 0) continue;
          auto it = given.find(in.symbols[k]);
          if (it == given.end())
            throw Error("input '" + in.name + "' (" + in.str() + ") has a symbolic dim: give its extent with --dim " +
                        (in.symbols[k] == "?" ? std::string("SYMBOL") : in.symbols[k]) + "=N");
          d[k] = it->second;
        }
        dims.push_back(d);
      }
      s->prepare(dims);
      std::vector<codegen::PlanSource> plans;
      for (const auto& cp : SessionAccess::plans(*s))
        if (cp->input_dims == dims) plans.push_back({cp->graph.get(), &cp->plan, cp->input_dims});
      return std::make_pair(s, plans);
    };
    if (!args->svg.empty()) {
      if (args->plan || args->groups || !args->dot.empty() || args->json)
        throw Error("--svg draws the graph that runs; give it alone (with --level, --fusion, --threads, --dim)");
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
      const std::vector<plan::ExecutablePlan> placed = codegen::place_for_cuda(plans, args->streams);
      if (args->json) {
        nlohmann::ordered_json all = nlohmann::ordered_json::array();
        for (const plan::ExecutablePlan& p : placed) all.push_back(plan::to_json(p));
        std::cout << all.dump(1) << "\n";
      } else {
        std::cout << codegen::placement_report(placed, true);
      }
      exit_code = 0;
      return;
    }
    if (args->plan && (args->groups || !args->dot.empty()))
      throw Error("--plan prints the whole plan; --groups and --dot its instructions: give one or the other");
    const bool describe_plan = args->groups || (args->json && !args->plan) || !args->dot.empty();
    if (describe_plan) {
      if (args->no_infer) throw Error("--no-infer prints the file as declared: no --groups, --json or --dot");
      auto [session, plans] = compiled({});
      const ir::Graph& g = *plans.front().graph;
      const plan::ExecutablePlan& p = *plans.front().plan;
      if (!args->dot.empty()) {
        std::ofstream(args->dot) << plan_dot(g, p);
        if (!args->groups && !args->json) std::cout << "wrote " << args->dot << " (" << p.instructions.size() << " instructions)\n";
      }
      if (args->json) std::cout << groups_json(g, p, args->fusion).dump(1) << "\n";  // JSON alone
      else if (args->groups) print_groups(g, p, args->fusion);
      exit_code = 0;
      return;
    }
    auto g = frontend::load_model(args->model);
    ir::verify(*g);
    if (args->plan) {
      ops::ShapeInference().run(*g);
      passes::OptimizeOptions o;
      o.level = args->level;
      if (o.level > 0) passes::optimize(*g, o);
      exit_code = print_plan(*g, args->json, args->fusion, args->threads) ? 0 : 1;
      return;
    }
    const bool level_given = cmd->get_option("--level")->count() > 0;
    if (args->no_infer && level_given) throw Error("--no-infer prints the file as declared: no --level");
    if (!args->no_infer) ops::ShapeInference().run(*g);
    // The plain IR is the file's unless a --level is given.
    if (level_given && args->level > 0) {
      passes::OptimizeOptions o;
      o.level = args->level;
      passes::optimize(*g, o);
    }
    std::cout << ir::print(*g);
    exit_code = 0;
  });
}

}  // namespace kiln::cli
