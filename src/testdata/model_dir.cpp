#include "testdata/model_dir.h"

#include <kiln/error.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "frontend/onnx/tensor_proto.h"
#include "frontend/onnx/value_proto.h"

namespace kiln::testdata {

namespace fs = std::filesystem;

namespace {
// Files named <prefix><K>.pb, ordered by K.
std::vector<fs::path> numbered(const fs::path& dir, const std::string& prefix) {
  std::map<long, fs::path> found;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string n = e.path().filename().string();
    if (n.rfind(prefix, 0) != 0 || e.path().extension() != ".pb") continue;
    std::string k = n.substr(prefix.size(), n.size() - prefix.size() - 3);
    if (k.empty() || !std::all_of(k.begin(), k.end(), ::isdigit) || k.size() > 6) continue;
    found[std::stol(k)] = e.path();
  }
  std::vector<fs::path> out;
  for (auto& [k, p] : found) out.push_back(p);
  return out;
}
}  // namespace

std::vector<fs::path> find_data_sets(const fs::path& model_dir) {
  std::map<long, fs::path> found;
  const std::string prefix = "test_data_set_";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(model_dir, ec)) {
    std::string n = e.path().filename().string();
    if (!e.is_directory() || n.rfind(prefix, 0) != 0) continue;
    std::string k = n.substr(prefix.size());
    if (k.empty() || k.size() > 6 || !std::all_of(k.begin(), k.end(), ::isdigit)) continue;
    found[std::stol(k)] = e.path();
  }
  if (ec) throw Error("cannot list '" + model_dir.string() + "': " + ec.message());
  std::vector<fs::path> out;
  for (auto& [k, p] : found) out.push_back(p);
  return out;
}

namespace {
ir::TensorType kind_of(const std::vector<TensorInfo>& infos, size_t k) {
  ir::TensorType t;
  if (k < infos.size()) {
    t.dtype = infos[k].dtype;
    t.is_sequence = infos[k].is_sequence;
    t.is_optional = infos[k].is_optional;
  }
  return t;
}
}  // namespace

DataSet load_data_set(const fs::path& dir, const std::vector<TensorInfo>& inputs, const std::vector<TensorInfo>& outputs) {
  DataSet ds;
  ds.dir = dir;
  auto files = numbered(dir, "input_");
  for (size_t k = 0; k < files.size(); ++k) {
    std::string name;
    ds.inputs.push_back(onnx_fe::load_value_file(files[k], kind_of(inputs, k), &name));
    ds.input_names.push_back(name);
  }
  files = numbered(dir, "output_");
  for (size_t k = 0; k < files.size(); ++k) {
    std::string name;
    ds.outputs.push_back(onnx_fe::load_value_file(files[k], kind_of(outputs, k), &name));
    ds.output_names.push_back(name);
  }
  return ds;
}

Comparison compare(const Tensor& actual, const Tensor& expected, double rtol, double atol) {
  Comparison c;
  if (actual.kind() != expected.kind()) {
    c.ok = false;
    c.problem = actual.describe() + ", expected " + expected.describe();
    return c;
  }
  if (actual.is_none()) return c;
  if (actual.is_sequence()) {
    if (actual.items().size() != expected.items().size()) {
      c.ok = false;
      c.problem = actual.describe() + ", expected " + expected.describe();
      return c;
    }
    for (size_t i = 0; i < actual.items().size(); ++i) {
      Comparison e = compare(actual.items()[i], expected.items()[i], rtol, atol);
      c.max_abs = std::max(c.max_abs, e.max_abs);
      c.max_rel = std::max(c.max_rel, e.max_rel);
      c.mismatches += e.mismatches;
      if (!e.ok && c.ok) c.problem = "item " + std::to_string(i) + ": " + e.problem;
      c.ok = c.ok && e.ok;
    }
    return c;
  }
  if (actual.dtype() != expected.dtype()) {
    c.ok = false;
    c.problem = "dtype " + dtype_name(actual.dtype()) + ", expected " + dtype_name(expected.dtype());
    return c;
  }
  if (actual.dims() != expected.dims()) {
    c.ok = false;
    c.problem = "shape " + actual.describe() + ", expected " + expected.describe();
    return c;
  }
  if (actual.dtype() == DType::String) {
    for (int64_t i = 0; i < actual.numel(); ++i)
      if (actual.data<std::string>()[i] != expected.data<std::string>()[i]) {
        if (c.ok) c.problem = "element " + std::to_string(i) + ": '" + actual.data<std::string>()[i] + "', expected '" +
                              expected.data<std::string>()[i] + "'";
        c.ok = false;
        ++c.mismatches;
      }
    return c;
  }
  for (int64_t i = 0; i < actual.numel(); ++i) {
    double a = actual.as_double(i), e = expected.as_double(i);
    bool good;
    double abs_err = 0;
    if (std::isnan(e) || std::isnan(a)) {
      good = std::isnan(e) && std::isnan(a);
    } else if (std::isinf(e) || std::isinf(a)) {
      good = a == e;
    } else {
      abs_err = std::fabs(a - e);
      good = abs_err <= atol + rtol * std::fabs(e);
      c.max_abs = std::max(c.max_abs, abs_err);
      if (e != 0) c.max_rel = std::max(c.max_rel, abs_err / std::fabs(e));
    }
    if (!good) {
      if (c.ok) c.problem = "element " + std::to_string(i) + ": " + std::to_string(a) + ", expected " + std::to_string(e);
      c.ok = false;
      ++c.mismatches;
    }
  }
  return c;
}

namespace {

bool same_tensor(const std::string& a, const std::string& b) {
  return a == b || a + ":0" == b || a == b + ":0";
}

}  // namespace

std::vector<size_t> match_by_name(const std::vector<std::string>& file_names, const std::vector<TensorInfo>& model) {
  std::vector<size_t> by_position(file_names.size());
  for (size_t k = 0; k < by_position.size(); ++k) by_position[k] = k;
  std::vector<size_t> by_name;
  std::vector<bool> taken(model.size(), false);
  for (const std::string& f : file_names) {
    size_t found = model.size();
    for (size_t i = 0; i < model.size() && !f.empty(); ++i)
      if (!taken[i] && same_tensor(f, model[i].name)) {
        found = i;
        break;
      }
    if (found == model.size()) return by_position;
    taken[found] = true;
    by_name.push_back(found);
  }
  return by_name;
}

std::vector<std::string> unmatched_names(const std::vector<std::string>& file_names, const std::vector<TensorInfo>& model) {
  std::vector<std::string> out;
  for (const std::string& f : file_names) {
    if (f.empty()) continue;
    bool found = false;
    for (const TensorInfo& t : model) found = found || same_tensor(f, t.name);
    if (!found) out.push_back(f);
  }
  return out;
}

std::vector<Tensor> inputs_in_model_order(const DataSet& ds, const std::vector<TensorInfo>& model) {
  if (ds.inputs.size() != model.size())
    throw Error(ds.dir.filename().string() + ": has " + std::to_string(ds.inputs.size()) + " inputs, the model takes " +
                std::to_string(model.size()));
  std::vector<std::string> names = ds.input_names;
  names.resize(ds.inputs.size());
  const std::vector<size_t> at = match_by_name(names, model);
  std::vector<Tensor> out(model.size());
  for (size_t k = 0; k < at.size(); ++k) out[at[k]] = ds.inputs[k];
  return out;
}

}  // namespace kiln::testdata
