// The ops layer's spelling of the dtype dispatch (ir/dispatch.h): op code in kiln::ops (and the
// backends' kernels that include this header) calls these names unqualified.
#pragma once
#include "ir/dispatch.h"

namespace kiln::ops {

using ir::compute_t;
using ir::dispatch_all;
using ir::dispatch_float;
using ir::dispatch_int;
using ir::dispatch_numeric;
using ir::dispatch_numeric_bool;
using ir::is_float_v;
using ir::throw_unsupported_dtype;

}  // namespace kiln::ops
