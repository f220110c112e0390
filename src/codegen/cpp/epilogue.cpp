#include "codegen/cpp/epilogue.h"

#include "codegen/cpp/emit_context.h"
#include "ops/core/activation.h"

namespace kiln::codegen::cpp {

Epilogue epilogue_of(const ir::Node& n) {
  const ops::Activation a = ops::activation_of(n);
  const char* name = ops::activation_name(a.kind);
  return {std::string("kiln_kernels::Act::") + (*name ? name : "None"), literal_float(a.a), literal_float(a.b)};
}

}  // namespace kiln::codegen::cpp
