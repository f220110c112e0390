// ONNX's model tests (the data's real/ folder): a folder holding data.json, which names the
// model by a url and gives the tolerances. The light models (url under
// onnx/backend/test/data/light/) ship in the data's light/ folder with their expected outputs
// only; ONNX's backend runner feeds them a fixed ramp, which `ramp_inputs` rebuilds.
#pragma once
#include <kiln/session.h>
#include <kiln/tensor.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kiln::testdata {

struct ModelTest {
  std::string model_name;
  std::string url;
  double rtol = 1e-3, atol = 1e-7;
  // Set for a light model: the .onnx file beside its expected outputs (<stem>_output_K.pb).
  std::optional<std::filesystem::path> light_model;
};

// Reads DIR/data.json; nullopt when DIR holds none. A data.json that is not such an object
// is an error naming the file.
std::optional<ModelTest> read_model_test(const std::filesystem::path& dir);

// The light model's expected outputs, ordered by K.
std::vector<Tensor> load_light_outputs(const std::filesystem::path& model);

// What ONNX's runner feeds a light model: each float input of N elements holds
// arange(N) / N, an extent that is not a number counted as 1. Other element types are refused.
std::vector<Tensor> ramp_inputs(const std::vector<TensorInfo>& inputs);

}  // namespace kiln::testdata
