#include "ir/dispatch.h"

namespace kiln::ir {

void throw_unsupported_dtype(DType t, const char* what) {
  throw UnsupportedError("dtype " + dtype_name(t) + " is not supported here (expected " + what + ")");
}

}  // namespace kiln::ir
