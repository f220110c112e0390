// Sum and max of a float row for KILN_SIMD kernels (src/kernels/row_reduce.h, shared with
// emitted code): include them only from KILN_SIMD functions' files so they inline into each ISA
// clone.
#pragma once
#include "kernels/row_reduce.h"

namespace kiln::backends::cpu::simd {

using kiln_kernels::reduce::dot;
using kiln_kernels::reduce::extreme;
using kiln_kernels::reduce::max;
using kiln_kernels::reduce::pick;
using kiln_kernels::reduce::sum;
using kiln_kernels::reduce::sum_sq_dev;

}  // namespace kiln::backends::cpu::simd
