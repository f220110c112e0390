#include "frontend/tf/model_files.h"

#include <google/protobuf/util/json_util.h>
#include <kiln/error.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "frontend/tf/converter.h"
#include "frontend/tf/tensor_value.h"

namespace kiln::tf_fe {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

std::string read_all(const fs::path& p, const std::string& what) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw Error(what + ": cannot read '" + p.string() + "'");
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

[[noreturn]] void saved_model_error(const fs::path& p) {
  throw UnsupportedError("'" + p.string() +
                         "' is a TensorFlow SavedModel; kiln reads frozen graphs: freeze it first (TensorFlow's "
                         "convert_variables_to_constants_v2, or tensorflowjs_converter to a TF.js graph model) and "
                         "pass the frozen .pb or the model.json");
}

// The values of one weightsManifest entry, decoded to float32, int32 or bool bytes.
struct Decoded {
  DType dtype;
  std::vector<int64_t> dims;
  std::vector<char> bytes;
};

Decoded decode_entry(const json& e, const char* data, size_t avail, size_t& used, const std::string& what) {
  Decoded d;
  const std::string name = e.value("name", "");
  const std::string w = what + ": weight '" + name + "'";
  for (const auto& x : e.at("shape")) {
    const int64_t v = x.get<int64_t>();
    if (v < 0) throw Error(w + ": negative dimension in its shape");
    d.dims.push_back(v);
  }
  int64_t n = 1;
  for (int64_t v : d.dims) {
    if (v > 0 && n > (int64_t{1} << 40) / v) throw Error(w + ": its shape is absurdly large");
    n *= v;
  }
  const std::string dtype = e.value("dtype", "float32");
  if (dtype == "float32") d.dtype = DType::Float;
  else if (dtype == "int32") d.dtype = DType::Int32;
  else if (dtype == "bool") d.dtype = DType::Bool;
  else throw UnsupportedError(w + ": weights of dtype '" + dtype + "' are not supported");
  d.bytes.resize(static_cast<size_t>(n) * dtype_size(d.dtype));
  const json* q = e.contains("quantization") ? &e.at("quantization") : nullptr;
  const std::string qtype = q ? q->value("dtype", "") : "";
  const size_t elem = !q ? dtype_size(d.dtype) : qtype == "uint8" ? 1 : (qtype == "uint16" || qtype == "float16") ? 2 : 0;
  if (elem == 0) throw UnsupportedError(w + ": quantization dtype '" + qtype + "' is not supported");
  const size_t need = static_cast<size_t>(n) * elem;
  if (need > avail - used)
    throw Error(w + ": needs " + std::to_string(need) + " bytes at offset " + std::to_string(used) +
                ", but the group's weight files hold " + std::to_string(avail) + " bytes in all");
  const unsigned char* src = reinterpret_cast<const unsigned char*>(data + used);
  used += need;
  if (!q) {
    std::memcpy(d.bytes.data(), src, need);
    return d;
  }
  if (d.dtype == DType::Bool) throw UnsupportedError(w + ": quantized bool weights are not supported");
  auto store = [&](int64_t i, double v) {
    if (d.dtype == DType::Float) reinterpret_cast<float*>(d.bytes.data())[i] = static_cast<float>(v);
    else reinterpret_cast<int32_t*>(d.bytes.data())[i] = static_cast<int32_t>(std::lround(v));
  };
  if (qtype == "float16") {
    for (int64_t i = 0; i < n; ++i) {
      Float16 h;
      std::memcpy(&h.bits, src + 2 * i, 2);
      store(i, static_cast<float>(h));
    }
    return d;
  }
  // value = q * scale + min, in double and rounded once (as TF.js does).
  const double scale = q->at("scale").get<double>(), min = q->at("min").get<double>();
  for (int64_t i = 0; i < n; ++i) {
    uint32_t v = src[elem * i];
    if (elem == 2) {
      uint16_t h;
      std::memcpy(&h, src + 2 * i, 2);
      v = h;
    }
    store(i, v * scale + min);
  }
  return d;
}

// The Const node's value from decoded weights, in the Const's dtype.
void set_const_value(tfpb::NodeDef& node, const Decoded& d, const std::string& what) {
  auto& attrs = *node.mutable_attr();
  const int tf_type = attrs.count("dtype") ? attrs.at("dtype").type() : tfpb::DT_FLOAT;
  const DType to = dtype_from_tf(tf_type, what + ": Const '" + node.name() + "'");
  int64_t n = 1;
  for (int64_t v : d.dims) n *= v;
  kiln::Tensor t(to, d.dims);
  const char* src = d.bytes.data();
  auto get = [&](int64_t i) -> double {
    if (d.dtype == DType::Float) return reinterpret_cast<const float*>(src)[i];
    if (d.dtype == DType::Int32) return reinterpret_cast<const int32_t*>(src)[i];
    return reinterpret_cast<const bool*>(src)[i] ? 1 : 0;
  };
  if (to == d.dtype) {
    std::memcpy(t.raw(), src, d.bytes.size());
  } else if (to == DType::Int64 && d.dtype == DType::Int32) {
    for (int64_t i = 0; i < n; ++i) t.data<int64_t>()[i] = reinterpret_cast<const int32_t*>(src)[i];
  } else if (to == DType::Float16) {
    for (int64_t i = 0; i < n; ++i) t.data<Float16>()[i] = Float16(static_cast<float>(get(i)));
  } else if (to == DType::Double) {
    for (int64_t i = 0; i < n; ++i) t.data<double>()[i] = get(i);
  } else if (to == DType::Float) {
    for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = static_cast<float>(get(i));
  } else {
    throw UnsupportedError(what + ": Const '" + node.name() + "' of type " + dtype_name(to) +
                           " cannot take weights stored as " + dtype_name(d.dtype));
  }
  tfpb::TensorProto& p = *attrs["value"].mutable_tensor();
  p.set_dtype(static_cast<tfpb::DataType>(tf_type % 100));
  p.mutable_tensor_shape()->Clear();
  for (int64_t v : d.dims) p.mutable_tensor_shape()->add_dim()->set_size(v);
  set_tensor_content(p, t);
}

std::vector<std::string> signature_names(const json& sig, const char* key) {
  std::vector<std::string> out;
  if (!sig.is_object() || !sig.contains(key) || !sig.at(key).is_object()) return out;
  for (const auto& [alias, entry] : sig.at(key).items()) {
    if (entry.is_object() && entry.contains("name") && entry.at("name").is_string()) out.push_back(entry.at("name"));
  }
  return out;
}

}  // namespace

bool is_tf_model_path(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return fs::exists(path / "saved_model.pb", ec);
  const std::string ext = path.extension().string();
  if (ext == ".json") return true;
  if (ext != ".pb") return false;
  // A binary ONNX ModelProto starts with ir_version (field 1, varint: 0x08); a GraphDef with
  // node (field 1, length-delimited: 0x0a), library (0x12) or versions (0x22).
  std::ifstream f(path, std::ios::binary);
  char c = 0;
  return f.get(c) && c != 0x08;
}

TfModel read_frozen_graph(const fs::path& pb) {
  std::error_code ec;
  if (fs::is_directory(pb, ec) || pb.filename() == "saved_model.pb") saved_model_error(pb);
  const std::string bytes = read_all(pb, "TensorFlow graph");
  TfModel m;
  if (!m.graph.ParseFromString(bytes))
    throw Error("'" + pb.string() + "' is not a TensorFlow GraphDef (the protobuf does not parse)");
  return m;
}

TfModel read_tfjs_model_text(const std::string& text, const fs::path& dir, const std::string& what) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const std::exception& e) {
    throw Error(what + ": not valid JSON (" + e.what() + ")");
  }
  if (!doc.is_object() || !doc.contains("modelTopology"))
    throw Error(what + ": not a TF.js graph model (no modelTopology)");
  if (doc.value("format", "graph-model") == "layers-model")
    throw UnsupportedError(what + ": a TF.js layers model; kiln reads graph models (tensorflowjs_converter "
                                  "--output_format tfjs_graph_model)");
  TfModel m;
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  const auto status = google::protobuf::util::JsonStringToMessage(doc.at("modelTopology").dump(), &m.graph, opts);
  if (!status.ok()) throw Error(what + ": modelTopology is not a GraphDef: " + std::string(status.message()));
  json sig = doc.contains("signature") ? doc.at("signature") : json();
  if (sig.is_null() && doc.contains("userDefinedMetadata") && doc.at("userDefinedMetadata").contains("signature"))
    sig = doc.at("userDefinedMetadata").at("signature");
  m.inputs = signature_names(sig, "inputs");
  m.outputs = signature_names(sig, "outputs");

  // A weight is the value of every Const of its name, those in library functions' bodies too
  // (TF.js keeps one map of weights by name for the graph and its functions).
  std::multimap<std::string, tfpb::NodeDef*> consts;
  for (auto& n : *m.graph.mutable_node())
    if (n.op() == "Const") consts.emplace(n.name(), &n);
  for (auto& f : *m.graph.mutable_library()->mutable_function())
    for (auto& n : *f.mutable_node_def())
      if (n.op() == "Const") consts.emplace(n.name(), &n);
  if (!doc.contains("weightsManifest")) return m;
  int group_index = 0;
  for (const auto& group : doc.at("weightsManifest")) {
    const std::string gw = what + ": weights group " + std::to_string(group_index++);
    std::string buffer;
    for (const auto& p : group.at("paths")) {
      const fs::path file = dir / p.get<std::string>();
      if (!fs::exists(file)) throw Error(gw + ": weight file '" + file.string() + "' is missing");
      buffer += read_all(file, gw);
    }
    size_t used = 0;
    for (const auto& e : group.at("weights")) {
      Decoded d = decode_entry(e, buffer.data(), buffer.size(), used, gw);
      const std::string name = e.value("name", "");
      auto [first, last] = consts.equal_range(name);
      if (first == last) throw Error(gw + ": weight '" + name + "' names no Const node of the graph");
      for (auto it = first; it != last; ++it) set_const_value(*it->second, d, gw);
    }
    if (used != buffer.size())
      throw Error(gw + ": the weight files hold " + std::to_string(buffer.size()) + " bytes, the manifest's entries " +
                  std::to_string(used));
  }
  return m;
}

TfModel read_tfjs_model(const fs::path& model_json) {
  return read_tfjs_model_text(read_all(model_json, "TF.js model"), model_json.parent_path(), model_json.string());
}

TfModel read_tf_model(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) saved_model_error(path);
  if (path.extension() == ".json") return read_tfjs_model(path);
  return read_frozen_graph(path);
}

void write_frozen_graph(const TfModel& m, const fs::path& pb) {
  tfpb::GraphDef g = m.graph;
  for (auto& n : *g.mutable_node()) {
    if (n.op() != "Const" || !n.attr().count("value")) continue;
    tfpb::TensorProto& p = *(*n.mutable_attr())["value"].mutable_tensor();
    if (p.tensor_content().empty()) continue;
    const kiln::Tensor t = tensor_from_proto(p, "Const '" + n.name() + "'");
    if (t.numel() != 1) continue;
    p.clear_tensor_content();
    switch (t.dtype()) {  // a scalar the way TensorFlow writes one: in the typed field
      case DType::Float: p.add_float_val(*t.data<float>()); break;
      case DType::Double: p.add_double_val(*t.data<double>()); break;
      case DType::Int32: p.add_int_val(*t.data<int32_t>()); break;
      case DType::Int64: p.add_int64_val(*t.data<int64_t>()); break;
      case DType::Bool: p.add_bool_val(*t.data<bool>()); break;
      case DType::Float16: p.add_half_val(t.data<Float16>()->bits); break;
      default: set_tensor_content(p, t); break;
    }
  }
  std::ofstream f(pb, std::ios::binary);
  if (!f || !g.SerializeToOstream(&f)) throw Error("cannot write '" + pb.string() + "'");
}

}  // namespace kiln::tf_fe
