// The text of an emitted C++ project's fixed files: model.h, main.cpp, CMakeLists.txt and the
// weights loader part of model.cpp. cpp_project.cpp fills in what the model decides.
#pragma once
#include <string>
#include <vector>

#include "codegen/cpp/cpp_emitter.h"

namespace kiln::codegen::cpp {

struct ProjectText {
  std::string source;                // what the project was made from
  std::vector<SignatureCode>* sigs;  // the compiled signatures
  bool embed_weights = false;
  std::vector<std::string> isa;      // CPU features the kernels are compiled for
  std::vector<std::string> kernels;  // kernel headers model.cpp includes
  int64_t weights_bytes = 0;         // weights.bin's payload
  uint64_t weights_checksum = 0;
  int threads = 1;                   // the team the model runs on
  const std::vector<StateDecl>* states = nullptr;  // what the model keeps across runs
  bool onednn = false;               // the model calls oneDNN (a kernel includes dnnl.hpp)
};

std::string model_h(const ProjectText& p);
// Pieces of model.cpp other targets' model sources share: the tables of the inputs' or outputs'
// names, element types, ranks and per-signature dims (the C API's arrays); last_error, fail()
// and the weights file's check (check_weights); find_signature(input_dims), after the tables.
std::string tensor_tables(const std::vector<SignatureCode>& sigs, bool inputs);
std::string weights_check_text();
std::string find_signature_text();
std::string model_cpp(const ProjectText& p);
std::string main_cpp();
std::string cmake_lists(const ProjectText& p);
// The .incbin source that links weights.bin into the library (embed_weights).
std::string weights_blob_cpp();

}  // namespace kiln::codegen::cpp
