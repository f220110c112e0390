// Builds small TensorFlow GraphDefs for the TF frontend's tests, written as a frozen .pb and
// run through a kiln Session.
#pragma once
#include <gtest/gtest.h>
#include <kiln/session.h>
#include <kiln/tensor.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "frontend/tf/graph_def.pb.h"

namespace kiln::testing {

class TfGraph {
 public:
  tfpb::GraphDef g;

  tfpb::NodeDef* node(const std::string& op, const std::string& name, const std::vector<std::string>& inputs = {}) {
    auto* n = g.add_node();
    n->set_op(op);
    n->set_name(name);
    for (const auto& s : inputs) n->add_input(s);
    return n;
  }
  // dims: -1 unknown
  void placeholder(const std::string& name, tfpb::DataType t, const std::vector<int64_t>& dims) {
    auto* n = node("Placeholder", name);
    (*n->mutable_attr())["dtype"].set_type(t);
    auto* s = (*n->mutable_attr())["shape"].mutable_shape();
    for (int64_t d : dims) s->add_dim()->set_size(d);
  }
  tfpb::TensorProto* constant(const std::string& name, tfpb::DataType t, const std::vector<int64_t>& dims) {
    auto* n = node("Const", name);
    (*n->mutable_attr())["dtype"].set_type(t);
    auto* p = (*n->mutable_attr())["value"].mutable_tensor();
    p->set_dtype(t);
    for (int64_t d : dims) p->mutable_tensor_shape()->add_dim()->set_size(d);
    return p;
  }
  void floats(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v) {
    auto* p = constant(name, tfpb::DT_FLOAT, dims);
    for (float x : v) p->add_float_val(x);
  }
  void ints(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int32_t>& v) {
    auto* p = constant(name, tfpb::DT_INT32, dims);
    for (int32_t x : v) p->add_int_val(x);
  }
  static void set_int(tfpb::NodeDef* n, const std::string& a, int64_t v) { (*n->mutable_attr())[a].set_i(v); }
  static void set_str(tfpb::NodeDef* n, const std::string& a, const std::string& v) { (*n->mutable_attr())[a].set_s(v); }
  static void set_bool(tfpb::NodeDef* n, const std::string& a, bool v) { (*n->mutable_attr())[a].set_b(v); }
  static void set_type(tfpb::NodeDef* n, const std::string& a, tfpb::DataType v) { (*n->mutable_attr())[a].set_type(v); }
  static void set_ints(tfpb::NodeDef* n, const std::string& a, const std::vector<int64_t>& v) {
    auto* l = (*n->mutable_attr())[a].mutable_list();
    for (int64_t x : v) l->add_i(x);
  }
  static void set_strs(tfpb::NodeDef* n, const std::string& a, const std::vector<std::string>& v) {
    auto* l = (*n->mutable_attr())[a].mutable_list();
    for (const auto& x : v) l->add_s(x);
  }

  std::filesystem::path write(const std::string& stem) const {
    const auto dir = std::filesystem::temp_directory_path() / ("kiln_tf_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const auto path = dir / (stem + ".pb");
    std::ofstream f(path, std::ios::binary);
    g.SerializeToOstream(&f);
    return path;
  }
  std::unique_ptr<Session> session(const std::string& stem) const { return Session::create(write(stem).string()); }
};

inline std::vector<float> values(const Tensor& t) {
  std::vector<float> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(static_cast<float>(t.as_double(i)));
  return v;
}

inline Tensor ramp(std::vector<int64_t> dims) {
  Tensor t(DType::Float, dims);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}

}  // namespace kiln::testing
