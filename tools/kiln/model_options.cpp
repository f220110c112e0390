#include "model_options.h"

#include <kiln/error.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <thread>

#include <unistd.h>

#include "commands.h"
#include "frontend/onnx/tensor_proto.h"
#include "input_ranges.h"
#include "npy.h"
#include "tensor_io.h"
#include "testdata/model_dir.h"

namespace kiln::cli {

void ModelOptions::add_to(CLI::App* cmd, const std::string& dims_help) {
  cmd->add_option("--threads", threads, "Intra-op threads")->check(CLI::Range(1, 1024))->capture_default_str();
  cmd->add_option("--level", level, "Graph optimization level (0-3)")->check(CLI::Range(0, 3))->capture_default_str();
  cmd->add_option("--fusion", fusion, "Operator fusion level (0 none, 1 elementwise, 2 + broadcast/injective/reduce, 3 all)")
      ->check(CLI::Range(0, 3))
      ->capture_default_str();
  cmd->add_option("--backend", backend, "cpu or reference")->check(CLI::IsMember({"cpu", "reference"}))->capture_default_str();
  cmd->add_flag("--tune", tune, "Time the candidate kernels of each node once and keep the fastest (cached)");
  cmd->add_option("--disable", disable, kDisableHelp);
  if (!dims_help.empty()) cmd->add_option("--dim", dims, dims_help);
}

void ModelOptions::add_profile_to(CLI::App* cmd) {
  cmd->add_option("--profile", profile,
                  "FILE.json: a Chrome trace of the timed runs, an event per instruction (Perfetto, chrome://tracing)");
  cmd->add_flag("--profile-table", profile_table, "Print the time per op and backend of the timed runs");
}

void ModelOptions::start_profile(Session& s) const { s.restart_profiling(); }

void ModelOptions::end_profile(Session& s) const {
  if (profile.empty() && !profile_table) return;
  if (profile_table) std::cout << s.profile_table();
  const std::string path = s.end_profiling();
  if (!profile.empty()) std::cout << "profile: " << path << "\n";
  else std::filesystem::remove(path);
}

SessionOptions ModelOptions::session() const {
  SessionOptions o;
  o.profile_file = profile;
  if (profile.empty() && profile_table)  // the table alone: a trace in a file removed at the end
    o.profile_file = (std::filesystem::temp_directory_path() / ("kiln-profile-" + std::to_string(::getpid()) + ".json")).string();
  o.threads = threads;
  o.opt_level = level;
  o.fusion_level = fusion;
  o.backend = backend;
  o.tune = tune;
  add_disabled(o, disable);
  const unsigned cores = std::thread::hardware_concurrency();
  if (cores > 0 && static_cast<unsigned>(threads) > cores)
    std::cerr << "kiln: warning: --threads " << threads << " on a machine with " << cores
              << " cores: the threads will share them (slower than --threads " << cores << ")\n";
  return o;
}

std::map<std::string, std::vector<int64_t>> parse_dims(const std::vector<std::string>& specs) {
  std::map<std::string, std::vector<int64_t>> dims;
  for (const std::string& d : specs) {
    const auto eq = d.find('=');
    if (eq == std::string::npos || eq == 0) throw Error("--dim expects SYMBOL=N[,M...], got '" + d + "'");
    std::vector<int64_t>& values = dims[d.substr(0, eq)];
    size_t at = eq + 1;
    while (at <= d.size()) {
      const size_t comma = std::min(d.find(',', at), d.size());
      const std::string n = d.substr(at, comma - at);
      char* end = nullptr;
      errno = 0;
      const long long v = std::strtoll(n.c_str(), &end, 10);
      if (n.empty() || *end != '\0' || v < 1 || errno == ERANGE)
        throw Error("--dim " + d + ": '" + n + "' is not a positive integer");
      values.push_back(v);
      at = comma + 1;
    }
  }
  return dims;
}

ModelPath resolve_model(const std::string& path) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(path)) return {path, ""};
  ModelPath p;
  for (const char* name : {"model.onnx", "model.kiln"})
    if (fs::exists(fs::path(path) / name)) p.model = (fs::path(path) / name).string();
  for (const char* name : {"model.json", "model.pb"})  // TensorFlow: a TF.js graph model, a frozen GraphDef
    if (p.model.empty() && fs::exists(fs::path(path) / name)) p.model = (fs::path(path) / name).string();
  // A TensorFlow SavedModel: the frontend says how to freeze it.
  if (p.model.empty() && fs::exists(fs::path(path) / "saved_model.pb")) p.model = path;
  if (p.model.empty()) throw Error("'" + path + "' is a folder without a model.onnx (or model.json, model.pb)");
  const auto sets = testdata::find_data_sets(path);
  if (!sets.empty()) p.data = sets.front().string();
  return p;
}

std::map<std::string, Tensor> model_inputs(const Session& s, const ModelPath& path, const std::vector<std::string>& given,
                                           const std::string& npz, const std::map<std::string, int64_t>& dims,
                                           uint32_t seed) {
  std::map<std::string, Tensor> from_file;
  if (!npz.empty()) from_file = load_npz(npz);
  for (const std::string& g : given) {
    const auto eq = g.find('=');
    if (eq == std::string::npos || eq == 0) throw Error("--input expects NAME=FILE (.pb or .npy), got '" + g + "'");
    const std::string file = g.substr(eq + 1);
    const bool npy = file.size() > 4 && file.substr(file.size() - 4) == ".npy";
    from_file[g.substr(0, eq)] = npy ? load_npy(file) : onnx_fe::load_tensor_file(file);
  }
  for (const auto& [name, t] : from_file) {
    bool known = false;
    for (const TensorInfo& in : s.inputs()) known = known || in.name == name;
    if (!known) throw Error("the model has no input named '" + name + "' (its inputs: " + names_of(s.inputs()) + ")");
  }
  std::vector<Tensor> data;
  if (!path.data.empty()) {
    testdata::DataSet ds = testdata::load_data_set(path.data, s.inputs(), s.outputs());
    data = ds.inputs.size() == s.inputs().size() ? testdata::inputs_in_model_order(ds, s.inputs()) : ds.inputs;
  }
  // Random integers where the model's use of them says (input_ranges.h), when any is needed.
  std::map<std::string, int64_t> bounds;
  for (size_t i = data.size(); i < s.inputs().size(); ++i)
    if (!from_file.count(s.inputs()[i].name) && !dtype_is_float(s.inputs()[i].dtype)) {
      bounds = integer_input_bounds(path.model);
      break;
    }
  std::map<std::string, Tensor> feeds;
  for (size_t i = 0; i < s.inputs().size(); ++i) {
    const TensorInfo& in = s.inputs()[i];
    auto it = from_file.find(in.name);
    if (it != from_file.end()) feeds[in.name] = it->second;
    else if (i < data.size()) feeds[in.name] = data[i];
    else feeds[in.name] = random_input(in, dims, seed++, bounds.count(in.name) ? bounds.at(in.name) : 100);
  }
  return feeds;
}

std::string names_of(const std::vector<TensorInfo>& infos) {
  std::string s;
  for (const TensorInfo& i : infos) s += (s.empty() ? "'" : ", '") + i.name + "'";
  return s.empty() ? "none" : s;
}

void check_dim_symbols(const std::map<std::string, std::vector<int64_t>>& dims, const std::vector<TensorInfo>& inputs) {
  for (const auto& [sym, values] : dims) {
    bool used = false;
    std::string symbols;
    for (const TensorInfo& in : inputs)
      for (const std::string& s : in.symbols) {
        used = used || s == sym;
        if (!s.empty() && s != "?" && symbols.find("'" + s + "'") == std::string::npos) symbols += (symbols.empty() ? "'" : ", '") + s + "'";
      }
    if (!used)
      throw Error("--dim " + sym + ": the model has no input dim named '" + sym + "' (its symbolic dims: " +
                  (symbols.empty() ? "none" : symbols) + ")");
  }
}

std::map<std::string, int64_t> single_dims(const std::vector<std::string>& specs, const std::vector<TensorInfo>& inputs) {
  const auto dims = parse_dims(specs);
  check_dim_symbols(dims, inputs);
  std::map<std::string, int64_t> one;
  for (const auto& [sym, values] : dims) {
    if (values.size() != 1) throw Error("--dim " + sym + ": give one extent here (several are for kiln compile)");
    one[sym] = values.back();
  }
  return one;
}

}  // namespace kiln::cli
