// The C++ target: an executable plan (one per input-shape signature) as a standalone CMake
// project that builds and runs without kiln (docs/codegen.md).
//
//   DIR/model.h         the C API: kiln_model_create / _run / _run_dims / _destroy, the inputs'
//                       and outputs' names, element types and shapes per signature
//   DIR/model.cpp       one function per instruction, named after its node, its op and shapes
//                       in a comment; the arena as fixed offsets into one allocation
//   DIR/kernels/*.h     the kiln kernels the model calls (src/kernels/), copied
//   DIR/weights.bin     every constant, packed for its kernel (or linked in: embed_weights)
//   DIR/main.cpp        runs each test_data_set_* copied beside it, compares, times
//   DIR/CMakeLists.txt  checks the CPU has the instruction sets the kernels were built for
#pragma once
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/plan_walk.h"

namespace kiln::codegen {

struct CppOptions {
  bool embed_weights = false;     // weights.bin linked into the library (.incbin), no file to load
  std::vector<std::string> isa;   // the CPU features the kernels are compiled for ("avx512f", ...)
  std::string source;             // what the project was made from (a comment)
  std::string test_data;          // a model folder whose test_data_set_* are copied ("" = none)
  int threads = 1;                // threads the emitted model runs on (a team held by kiln_model)
  bool onednn = true;             // ops the plan runs on oneDNN call it (false: --no-onednn)
};

struct CppProjectStats {
  int instructions = 0, views = 0;        // instructions written; of them, views that copy nothing
  std::vector<std::string> kernels;       // the kernel files copied
  int64_t weights_bytes = 0, arena_bytes = 0;
  int test_sets = 0;
};

// The CPU lowering rewrites whose ops the C++ target does not write (conv concats, channel
// shuffles, folded channel scales), and those it writes only with oneDNN (blocked layouts) or
// only where its row kernels run (conv chains, on AVX-512): a plan compiled for the target skips
// them (SessionOptions::disabled_passes).
const std::vector<std::string>& cpp_disabled_passes(bool onednn, bool avx512);

// Writes the project into `dir` (created). A kiln::Error (UnsupportedError) naming the node for
// an instruction the C++ target cannot write.
CppProjectStats write_cpp_project(const std::vector<PlanSource>& plans, const CppOptions& options,
                                  const std::string& dir);

// Shared by the targets' project writers: copies the test_data_set_* folders of `model_dir` into
// `dir` (how many); writes a file (a kiln::Error when it cannot); the text of a kernel file
// under src/kernels/ (a kiln::Error when kiln was built without it).
int copy_test_sets(const std::string& model_dir, const std::string& dir);
void write_project_file(const std::string& path, std::string_view text);
std::string_view kernel_file(const std::string& name);
// `used` and every kernel file they include, transitively.
std::set<std::string> kernel_closure(const std::set<std::string>& used);

}  // namespace kiln::codegen
