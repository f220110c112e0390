// Seeds for fuzz_load. `make_seeds OUT_DIR MODEL.onnx...` writes each model with its large
// initializers turned into graph inputs of the same type: the graph, its shapes and its small
// constants (shape arithmetic, axes) stay, the weights go, so a 45 MB model becomes a seed of
// a few KB that mutations can afford. `make_seeds --dict` prints a libFuzzer dictionary of the
// registered op names and common attribute names.
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include <kiln/error.h>
#include <kiln/session.h>

#include "ops/core/registry.h"

namespace fs = std::filesystem;

namespace {
constexpr int64_t kKeepElements = 64;  // initializers up to this size stay constants

int64_t elements(const onnx::TensorProto& t) {
  int64_t n = 1;
  for (int64_t d : t.dims()) {
    if (d < 0 || (d > 0 && n > (int64_t{1} << 40) / d)) return -1;
    n *= d;
  }
  return n;
}

void strip(onnx::GraphProto& g) {
  std::set<std::string> inputs;
  for (const auto& in : g.input()) inputs.insert(in.name());
  auto* inits = g.mutable_initializer();
  for (int i = inits->size() - 1; i >= 0; --i) {
    const onnx::TensorProto& t = inits->Get(i);
    int64_t n = elements(t);
    if (n >= 0 && n <= kKeepElements && t.data_location() != onnx::TensorProto::EXTERNAL) continue;
    if (!inputs.count(t.name())) {
      auto* vi = g.add_input();
      vi->set_name(t.name());
      auto* tt = vi->mutable_type()->mutable_tensor_type();
      tt->set_elem_type(t.data_type());
      for (int64_t d : t.dims()) tt->mutable_shape()->add_dim()->set_dim_value(d);
    }
    inits->DeleteSubrange(i, 1);
  }
  for (auto& n : *g.mutable_node())
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_g()) strip(*a.mutable_g());
      for (auto& sg : *a.mutable_graphs()) strip(sg);
    }
}
}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--dict") {
    std::set<std::string> words;
    for (const auto* def : kiln::ops::Registry::instance().all()) words.insert(def->name);
    for (const char* a : {"axis", "axes", "perm", "pads", "strides", "kernel_shape", "dilations", "group", "to",
                          "then_branch", "else_branch", "body", "value", "keepdims", "auto_pad", "SAME_UPPER",
                          "com.microsoft", "kiln", "ai.onnx", "location", "offset", "length"})
      words.insert(a);
    for (const std::string& w : words) std::cout << '"' << w << "\"\n";
    return 0;
  }
  // --kiln: each stripped model that compiles is written as a .kiln file instead (fuzz_kiln).
  const bool kiln_files = argc > 1 && std::string(argv[1]) == "--kiln";
  if (kiln_files) {
    --argc;
    ++argv;
  }
  if (argc < 3) {
    std::cerr << "usage: make_seeds [--kiln] OUT_DIR MODEL.onnx... | make_seeds --dict\n";
    return 2;
  }
  fs::path out(argv[1]);
  fs::create_directories(out);
  int written = 0;
  for (int i = 2; i < argc; ++i) {
    fs::path in(argv[i]);
    std::ifstream f(in, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    onnx::ModelProto m;
    if (!m.ParseFromString(ss.str())) {
      std::cerr << "skipped (cannot parse): " << in << "\n";
      continue;
    }
    strip(*m.mutable_graph());
    if (kiln_files) {
      try {
        kiln::SessionOptions opts;
        opts.memory_cap_bytes = int64_t{256} << 20;
        auto s = kiln::Session::create_from_bytes(m.SerializeAsString(), opts, "/nonexistent");
        s->save((out / (in.parent_path().filename().string() + ".kiln")).string());
        ++written;
      } catch (const kiln::Error& e) {
        std::cerr << "skipped (" << e.what() << "): " << in << "\n";
      }
      continue;
    }
    std::string name = in.parent_path().filename().string() + ".onnx";
    std::ofstream o(out / name, std::ios::binary);
    m.SerializeToOstream(&o);
    ++written;
  }
  std::cerr << written << " seeds in " << out << "\n";
  return 0;
}
