// kiln check MODEL_DIR: runs every test_data_set_* and compares with the reference outputs.
#include <kiln/session.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "frontend/load_model.h"
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
      dir = dir.has_parent_path() ? dir.parent_path() : fs::path(".");  // "model.onnx": the current folder
    } else {
      model = dir / "model.onnx";
      for (const char* other : {"model.json", "model.pb"})  // a TF.js graph model, a frozen GraphDef
        if (!fs::exists(model) && fs::exists(dir / other)) model = dir / other;
    }
    if (!fs::exists(model)) throw Error("no model file '" + model.string() + "'");
    SessionOptions opts = args->model_options.session();
    args->limits.apply(opts);
    auto session = Session::create(model.string(), opts);
    auto sets = testdata::find_data_sets(dir);
    if (sets.empty()) throw Error("no test_data_set_* folder in '" + dir.string() + "'");
    // Reference outputs named after tensors the model computes but does not output (a frozen
    // TensorFlow graph outputs only what no node reads) are fetched by name, as `keep` values.
    std::vector<TensorInfo> fetched = session->outputs();
    const std::vector<std::string> extra =
        frontend::model_kind(model) != frontend::ModelKind::TensorFlow
            ? std::vector<std::string>{}
            : testdata::unmatched_names(testdata::load_data_set(sets[0], session->inputs(), fetched).output_names, fetched);
    if (!extra.empty()) {
      opts.keep = extra;
      session = Session::create(model.string(), opts);
      fetched = session->outputs();
      for (const std::string& name : extra) fetched.push_back(TensorInfo{.name = name});
    }
    auto run = [&](const std::vector<Tensor>& inputs) {
      if (extra.empty()) return session->run(inputs);
      std::map<std::string, Tensor> named;
      for (size_t i = 0; i < inputs.size(); ++i) named[session->inputs()[i].name] = inputs[i];
      std::map<std::string, Tensor> got = session->run(named);
      std::vector<Tensor> outs;
      for (const TensorInfo& t : fetched) outs.push_back(got.at(t.name));
      return outs;
    };
    bool all_ok = true;
    nlohmann::json report = {{"model", model.string()}, {"rtol", args->rtol}, {"atol", args->atol}, {"sets", nlohmann::json::array()}};
    for (const fs::path& set : sets) {
      testdata::DataSet ds = testdata::load_data_set(set, session->inputs(), session->outputs());
      if (ds.outputs.empty())
        throw Error(set.filename().string() + ": has no output_N.pb to compare with (its inputs alone check nothing)");
      std::vector<Tensor> outs = run(testdata::inputs_in_model_order(ds, session->inputs()));
      if (ds.outputs.size() > outs.size())
        throw Error(set.filename().string() + ": has " + std::to_string(ds.outputs.size()) +
                    " reference outputs, the model gives " + std::to_string(outs.size()));
      std::vector<std::string> out_names = ds.output_names;
      out_names.resize(ds.outputs.size());
      const std::vector<size_t> out_at = testdata::match_by_name(out_names, fetched);
      if (!args->json) std::cout << set.filename().string() << ":\n";
      nlohmann::json set_json = {{"set", set.filename().string()}, {"outputs", nlohmann::json::array()}};
      for (size_t k = 0; k < ds.outputs.size(); ++k) {
        const Tensor& out = outs[out_at[k]];
        const std::string& out_name = fetched[out_at[k]].name;
        auto c = testdata::compare(out, ds.outputs[k], args->rtol, args->atol);
        all_ok = all_ok && c.ok;
        set_json["outputs"].push_back({{"name", out_name}, {"type", out.describe()},
                                       {"max_abs", c.max_abs}, {"max_rel", c.max_rel}, {"ok", c.ok},
                                       {"mismatches", c.mismatches}, {"problem", c.problem}});
        if (args->json) continue;
        char line[512];
        std::snprintf(line, sizeof line, "  %-24s %-20s max_abs %.3g  max_rel %.3g  %s", out_name.c_str(),
                      out.describe().c_str(), c.max_abs, c.max_rel, c.ok ? "ok" : "MISMATCH");
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
