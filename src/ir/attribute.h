// Node attributes, mirroring ONNX AttributeProto.
#pragma once
#include <kiln/tensor.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/type.h"

namespace kiln::ir {

class Graph;

struct Attribute {
  enum class Kind { Float, Int, String, Tensor, Graph, Floats, Ints, Strings, Tensors, Graphs, Type };
  Kind kind = Kind::Int;
  float f = 0;
  int64_t i = 0;
  std::string s;
  kiln::Tensor t;
  std::shared_ptr<Graph> g;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<kiln::Tensor> tensors;
  std::vector<std::shared_ptr<Graph>> graphs;
  TensorType type;  // Kind::Type (ONNX TYPE_PROTO, e.g. Optional's `type`)

  static Attribute of_int(int64_t v) { Attribute a; a.kind = Kind::Int; a.i = v; return a; }
  static Attribute of_float(float v) { Attribute a; a.kind = Kind::Float; a.f = v; return a; }
  static Attribute of_string(std::string v) { Attribute a; a.kind = Kind::String; a.s = std::move(v); return a; }
  static Attribute of_ints(std::vector<int64_t> v) { Attribute a; a.kind = Kind::Ints; a.ints = std::move(v); return a; }
  static Attribute of_floats(std::vector<float> v) { Attribute a; a.kind = Kind::Floats; a.floats = std::move(v); return a; }
  static Attribute of_tensor(kiln::Tensor v) { Attribute a; a.kind = Kind::Tensor; a.t = std::move(v); return a; }
  static Attribute of_graph(std::shared_ptr<Graph> v) { Attribute a; a.kind = Kind::Graph; a.g = std::move(v); return a; }
};

const char* attribute_kind_name(Attribute::Kind k);

using Attributes = std::map<std::string, Attribute>;

}  // namespace kiln::ir
