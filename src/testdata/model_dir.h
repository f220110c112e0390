// The ONNX model-zoo folder layout: model.onnx + test_data_set_N/{input,output}_K.pb, and the
// tolerance comparison `kiln check` and the conformance runner use.
#pragma once
#include <kiln/session.h>
#include <kiln/tensor.h>

#include <filesystem>
#include <string>
#include <vector>

namespace kiln::testdata {

struct DataSet {
  std::filesystem::path dir;
  std::vector<Tensor> inputs, outputs;  // ordered by K
  std::vector<std::string> input_names, output_names;  // names stored in the files (may be "")
};

// test_data_set_* folders of a model folder, in numeric order.
std::vector<std::filesystem::path> find_data_sets(const std::filesystem::path& model_dir);
// Reads input_K.pb / output_K.pb; the model's input/output infos say which files hold
// sequences or optionals (files beyond the lists are read as tensors).
DataSet load_data_set(const std::filesystem::path& dir, const std::vector<TensorInfo>& inputs = {},
                      const std::vector<TensorInfo>& outputs = {});

// Which model input (output) each file of a set is for: by the names stored in the files where
// every one names a distinct model tensor ("x" and TensorFlow's "x:0" are the same tensor),
// else by position. Entry k is the model's index for file K.
std::vector<size_t> match_by_name(const std::vector<std::string>& file_names, const std::vector<TensorInfo>& model);
// The names among file_names (non-empty) that name none of the model's tensors.
std::vector<std::string> unmatched_names(const std::vector<std::string>& file_names, const std::vector<TensorInfo>& model);
// The set's inputs in the model's order (match_by_name); throws naming the set when a model
// input has no file.
std::vector<Tensor> inputs_in_model_order(const DataSet& ds, const std::vector<TensorInfo>& model);

struct Comparison {
  bool ok = true;
  double max_abs = 0, max_rel = 0;
  int64_t mismatches = 0;
  std::string problem;  // dtype/shape mismatch, or the first bad element
};

// |a - e| <= atol + rtol * |e| element-wise; NaN matches NaN, inf matches the same inf.
// Sequences compare item by item; an empty optional matches only another.
Comparison compare(const Tensor& actual, const Tensor& expected, double rtol, double atol);

}  // namespace kiln::testdata
