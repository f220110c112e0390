// One vocabulary of options across the subcommands that compile or run a model: --threads,
// --level, --fusion, --backend, --tune, --disable and --dim, with the same ranges and messages
// everywhere, and the --dim parser that checks its symbols against the model's inputs.
#pragma once
#include <kiln/session.h>

#include <CLI/CLI.hpp>
#include <map>
#include <string>
#include <vector>

namespace kiln::cli {

struct ModelOptions {
  int threads = 1, level = 3, fusion = 3;
  std::string backend = "cpu";
  bool tune = false;
  std::vector<std::string> disable, dims;
  std::string profile;         // --profile FILE.json: a Chrome trace of the timed runs
  bool profile_table = false;  // --profile-table: time per op and backend of the timed runs

  // Adds the options to `cmd`; `dims_help` says what --dim does for this subcommand ("" = no --dim).
  void add_to(CLI::App* cmd, const std::string& dims_help);
  // Adds --profile and --profile-table (run, bench).
  void add_profile_to(CLI::App* cmd);
  // After the warm-up: the profile starts here. At the end: writes the trace, prints the table.
  void start_profile(Session& s) const;
  void end_profile(Session& s) const;
  // The session options they ask for (warns on stderr when --threads exceeds the cores).
  SessionOptions session() const;
};

// "batch=1,4" -> {"batch": {1, 4}}; a kiln::Error for a malformed spec or a value that is not a
// positive integer.
std::map<std::string, std::vector<int64_t>> parse_dims(const std::vector<std::string>& specs);
// A kiln::Error when a --dim names a symbol none of `inputs` has (listing those it has).
void check_dim_symbols(const std::map<std::string, std::vector<int64_t>>& dims, const std::vector<TensorInfo>& inputs);
// One extent per symbol (run, bench): the last given.
std::map<std::string, int64_t> single_dims(const std::vector<std::string>& specs, const std::vector<TensorInfo>& inputs);

// A model path as run and bench take it: a model file (.onnx, .kiln), or a model-zoo folder
// (model.onnx and test_data_set_N/), whose test_data_set_0 inputs are then used.
struct ModelPath {
  std::string model;  // the file
  std::string data;   // test_data_set_0 of a folder, "" for a file
};
ModelPath resolve_model(const std::string& path);

// The inputs a run feeds: --input NAME=FILE (.pb: an ONNX TensorProto, .npy: numpy) and --inputs
// FILE.npz (arrays by input name) first, then the folder's test data, then random (symbolic
// dims from --dim, else 1). A kiln::Error naming an input given that the model lacks, listing
// those it has.
std::map<std::string, Tensor> model_inputs(const Session& s, const ModelPath& path, const std::vector<std::string>& given,
                                           const std::string& npz, const std::map<std::string, int64_t>& dims,
                                           uint32_t seed);

// "'input_ids', 'attention_mask'": the names of `infos`, for messages.
std::string names_of(const std::vector<TensorInfo>& infos);

}  // namespace kiln::cli
