// kiln check MODEL_DIR: runs every test_data_set_* and compares with the reference outputs.
#include <kiln/session.h>

#include <cstdio>
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "model_options.h"
#include "testdata/model_dir.h"

namespace kiln::cli {

namespace fs = std::filesystem;

void add_check_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("check", "Run a model folder's test data sets and compare with their reference outputs");
  struct Args {
    LimitOptions limits;
    std::string dir;
    double rtol = 1e-3, atol = 1e-4;
    ModelOptions model_options;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("model_dir", args->dir, "Model folder (model.onnx + test_data_set_N/) or the model file in it")->required();
  cmd->add_option("--rtol", args->rtol, "Relative tolerance")->capture_default_str();
  cmd->add_option("--atol", args->atol, "Absolute tolerance")->capture_default_str();
  args->model_options.add_to(cmd, "");
  cmd->add_flag("--json", args->json, "Print one JSON object (every set and output compared) instead of text");
  args->limits.add_to(cmd);
  cmd->callback([args, &exit_code] {
    LimitsScope limits(args->limits.limits);
    fs::path dir(args->dir), model;
    if (fs::is_regular_file(dir)) {
      model = dir;
      dir = dir.parent_path();
    } else {
      model = dir / "model.onnx";
    }
    if (!fs::exists(model)) throw Error("no model file '" + model.string() + "'");
    SessionOptions opts = args->model_options.session();
    args->limits.apply(opts);
    auto session = Session::create(model.string(), opts);
    auto sets = testdata::find_data_sets(dir);
    if (sets.empty()) throw Error("no test_data_set_* folder in '" + dir.string() + "'");
    bool all_ok = true;
    nlohmann::json report = {{"model", model.string()}, {"rtol", args->rtol}, {"atol", args->atol}, {"sets", nlohmann::json::array()}};
    for (const fs::path& set : sets) {
      testdata::DataSet ds = testdata::load_data_set(set, session->inputs(), session->outputs());
      if (ds.inputs.size() != session->inputs().size())
        throw Error(set.filename().string() + ": has " + std::to_string(ds.inputs.size()) + " inputs, the model takes " +
                    std::to_string(session->inputs().size()));
      if (ds.outputs.empty())
        throw Error(set.filename().string() + ": has no output_N.pb to compare with (its inputs alone check nothing)");
      std::vector<Tensor> outs = session->run(ds.inputs);
      if (ds.outputs.size() > outs.size())
        throw Error(set.filename().string() + ": has " + std::to_string(ds.outputs.size()) +
                    " reference outputs, the model gives " + std::to_string(outs.size()));
      if (!args->json) std::cout << set.filename().string() << ":\n";
      nlohmann::json set_json = {{"set", set.filename().string()}, {"outputs", nlohmann::json::array()}};
      for (size_t k = 0; k < ds.outputs.size(); ++k) {
        auto c = testdata::compare(outs[k], ds.outputs[k], args->rtol, args->atol);
        all_ok = all_ok && c.ok;
        set_json["outputs"].push_back({{"name", session->outputs()[k].name}, {"type", outs[k].describe()},
                                       {"max_abs", c.max_abs}, {"max_rel", c.max_rel}, {"ok", c.ok},
                                       {"mismatches", c.mismatches}, {"problem", c.problem}});
        if (args->json) continue;
        char line[512];
        std::snprintf(line, sizeof line, "  %-24s %-20s max_abs %.3g  max_rel %.3g  %s", session->outputs()[k].name.c_str(),
                      outs[k].describe().c_str(), c.max_abs, c.max_rel, c.ok ? "ok" : "MISMATCH");
        std::cout << line;
        if (!c.ok) std::cout << " (" << c.mismatches << " elements; " << c.problem << ")";
        std::cout << "\n";
      }
      report["sets"].push_back(std::move(set_json));
    }
    report["passed"] = all_ok;
    if (args->json) std::cout << report.dump() << "\n";
    else std::cout << (all_ok ? "check passed" : "check FAILED") << " (rtol " << args->rtol << ", atol " << args->atol << ")\n";
    exit_code = all_ok ? 0 : 1;
  });
}

}  // namespace kiln::cli
