#include "testdata/model_test.h"

#include <kiln/error.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "frontend/onnx/tensor_proto.h"

namespace kiln::testdata {

namespace fs = std::filesystem;

namespace {
constexpr std::string_view kLightPrefix = "onnx/backend/test/data/light/";
}

std::optional<ModelTest> read_model_test(const fs::path& dir) {
  const fs::path file = dir / "data.json";
  if (!fs::exists(file)) return std::nullopt;
  std::ifstream in(file);
  if (!in) throw Error("cannot read '" + file.string() + "'");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw Error("'" + file.string() + "' is not JSON: " + e.what());
  }
  if (!j.is_object() || !j.contains("url") || !j["url"].is_string())
    throw Error("'" + file.string() + "' has no \"url\" string");
  ModelTest t;
  t.url = j["url"].get<std::string>();
  t.model_name = j.value("model_name", dir.filename().string());
  if (j.contains("rtol") && j["rtol"].is_number()) t.rtol = j["rtol"].get<double>();
  if (j.contains("atol") && j["atol"].is_number()) t.atol = j["atol"].get<double>();
  if (t.url.rfind(kLightPrefix, 0) == 0) {
    // real/ and light/ are siblings in the data folder.
    const std::string file_name = t.url.substr(kLightPrefix.size());
    if (file_name.empty() || file_name.find('/') != std::string::npos || file_name.find("..") != std::string::npos)
      throw Error("'" + file.string() + "': light model url '" + t.url + "' does not name a file");
    t.light_model = dir.parent_path().parent_path() / "light" / file_name;
  }
  return t;
}

std::vector<Tensor> load_light_outputs(const fs::path& model) {
  std::vector<Tensor> out;
  const std::string stem = (model.parent_path() / model.stem()).string();
  for (int k = 0;; ++k) {
    fs::path p = stem + "_output_" + std::to_string(k) + ".pb";
    if (!fs::exists(p)) break;
    out.push_back(onnx_fe::load_tensor_file(p));
  }
  if (out.empty()) throw Error("no expected outputs beside '" + model.string() + "' (" + stem + "_output_0.pb)");
  return out;
}

std::vector<Tensor> ramp_inputs(const std::vector<TensorInfo>& inputs) {
  std::vector<Tensor> out;
  for (const TensorInfo& info : inputs) {
    if (info.dtype != DType::Float || info.is_sequence || info.is_optional || !info.rank_known)
      throw UnsupportedError("input '" + info.name + "' is not a float tensor of known rank (" +
                             dtype_name(info.dtype) + (info.is_sequence ? ", a sequence" : "") +
                             (info.is_optional ? ", optional" : "") +
                             "); ONNX's runner feeds light models such tensors only");
    std::vector<int64_t> dims;
    for (int64_t d : info.dims) dims.push_back(d < 0 ? 1 : d);
    Tensor t(DType::Float, dims);
    const int64_t n = t.numel();
    float* p = t.data<float>();
    // Computed in double and rounded once, as NumPy's arange(n) / n then astype(float32).
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(static_cast<double>(i) / static_cast<double>(n));
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace kiln::testdata
