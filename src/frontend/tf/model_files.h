// TensorFlow model files: a frozen binary GraphDef (.pb) or a TF.js graph model (model.json with
// its weight shards), read into one GraphDef whose Const nodes hold their values; and the frozen
// .pb written back.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "frontend/tf/graph_def.pb.h"

namespace kiln::tf_fe {

struct TfModel {
  tfpb::GraphDef graph;
  // Tensor names ("input_1:0", "Identity:0") from a TF.js signature, in its order; empty when
  // the file has none (the Placeholders and the unconsumed outputs are taken, in node order).
  std::vector<std::string> inputs, outputs;
};

// True for the files this frontend reads: *.pb that is not an ONNX model, model.json-style
// *.json, a SavedModel folder or saved_model.pb (which the readers refuse with a message).
bool is_tf_model_path(const std::filesystem::path& path);

// Reads either kind by its extension (.json: TF.js, else binary GraphDef).
TfModel read_tf_model(const std::filesystem::path& path);
TfModel read_frozen_graph(const std::filesystem::path& pb);
// model.json: modelTopology (a GraphDef in proto3 JSON) plus weightsManifest, whose entries
// (float32/int32/bool; float16-, uint8- and uint16-quantized) become the values of the Const
// nodes they are named after, in the Const's own dtype (int64 Consts stored as int32 widen).
TfModel read_tfjs_model(const std::filesystem::path& model_json);
// TF.js from bytes already read; shards are read from `dir`.
TfModel read_tfjs_model_text(const std::string& json, const std::filesystem::path& dir, const std::string& what);

// Writes m.graph as a binary GraphDef: every value inside its Const node (one-element tensors
// in the typed value fields, as TensorFlow writes scalars; the rest as tensor_content).
void write_frozen_graph(const TfModel& m, const std::filesystem::path& pb);

}  // namespace kiln::tf_fe
