// kiln optimize MODEL.onnx -o OUT.onnx [--level N] [--kiln-ops] [--stats]: runs the graph
// optimizer and writes the result as ONNX. By default a model other runtimes load: level 1,
// standard ops only; levels 2-3 write "kiln"-domain fused ops (docs/optimizer.md), which only
// kiln runs, so they need --kiln-ops.
#include <cstdio>
#include <iostream>
#include <map>

#include <kiln/error.h>

#include "frontend/load_model.h"
#include "commands.h"
#include "frontend/onnx/exporter.h"
#include "frontend/onnx/importer.h"
#include "ir/verifier.h"
#include "ops/core/infer_graph.h"
#include "passes/pipelines.h"

namespace kiln::cli {

namespace {
std::string histogram(const ir::Graph& g) {
  std::map<std::string, int> count;
  for (const ir::Node* n : g.nodes()) ++count[(n->domain().empty() ? "" : n->domain() + ".") + n->op_type()];
  std::string s;
  for (const auto& [op, c] : count) s += (s.empty() ? "" : ", ") + op + ":" + std::to_string(c);
  return s;
}
}  // namespace

void add_optimize_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("optimize", "Optimize a model's graph and write it as ONNX");
  struct Args {
    std::string model, out;
    int level = 1;
    bool stats = false, verify = false, ops = false, kiln_ops = false;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("model", args->model, "Model file (.onnx, a TensorFlow .pb or TF.js model.json)")->required();
  cmd->add_option("-o,--output", args->out, "Where to write the optimized model");
  auto* level = cmd->add_option("--level", args->level, "0 none, 1 basic (standard ops only), 2 extended, 3 all (2-3: with --kiln-ops)")
                    ->check(CLI::Range(0, 3))
                    ->capture_default_str();
  cmd->add_flag("--kiln-ops", args->kiln_ops,
                "Allow kiln-domain fused ops (levels 2-3; the default level then is 3): only kiln runs the result");
  cmd->add_flag("--stats", args->stats, "Print per-pass statistics");
  cmd->add_flag("--ops", args->ops, "Print the op histogram before and after");
  cmd->add_flag("--verify", args->verify, "Run the IR verifier after every pass");
  cmd->callback([args, level, &exit_code] {
    if (args->kiln_ops && level->count() == 0) args->level = 3;
    if (args->level > 1 && !args->kiln_ops)
      throw Error("--level " + std::to_string(args->level) +
                  " writes kiln-domain ops that other runtimes reject; add --kiln-ops for a model only kiln runs, "
                  "or use --level 1 (standard ops)");
    auto g = frontend::load_model(args->model);
    ir::verify(*g);
    ops::ShapeInference().run(*g);
    const size_t before = g->num_nodes();
    std::string hist_before = histogram(*g);
    passes::OptimizeOptions opts;
    opts.level = args->level;
    opts.verify = args->verify;
    std::vector<passes::PassStats> stats = passes::optimize(*g, opts);
    if (args->stats) {
      // nodes_in/out: graph size before the pass's first run and after its last one;
      // removed: what the pass itself took out over all its runs.
      std::printf("%-22s %5s %7s %8s %9s %7s %9s\n", "pass", "runs", "changed", "nodes_in", "nodes_out", "removed", "ms");
      for (const auto& s : stats)
        std::printf("%-22s %5d %7d %8lld %9lld %7lld %9.2f\n", s.pass.c_str(), s.runs, s.changed,
                    static_cast<long long>(s.nodes_before), static_cast<long long>(s.nodes_after),
                    static_cast<long long>(s.removed), s.ms);
    }
    std::printf("nodes: %zu -> %zu (level %d)\n", before, g->num_nodes(), args->level);
    if (args->ops) std::cout << "before: " << hist_before << "\nafter:  " << histogram(*g) << "\n";
    if (!args->out.empty()) {
      onnx_fe::save_model(*g, args->out);
      std::cout << "wrote " << args->out << "\n";
    } else {
      std::cout << "nothing written: give -o OUT.onnx to write the optimized model\n";
    }
    exit_code = 0;
  });
}

}  // namespace kiln::cli
