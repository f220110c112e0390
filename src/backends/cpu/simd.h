// Vector code for the CPU backend's own kernels without intrinsics: hot loops are plain C++
// that GCC auto-vectorizes, compiled three times by KILN_SIMD (AVX-512, AVX2+FMA, baseline) and
// picked at load time by the CPU's features (an ifunc). AVX-512 doubles the vector width of
// AVX2, and Zen 5 runs it at full width (../shared/peers/KERNELS.md); the same binary still runs
// on older CPUs. Files using this are compiled with -fno-trapping-math (CMakeLists.txt), without
// which GCC refuses to vectorize loops containing min/max or division.
//
// Keep KILN_SIMD loops branch-free: use std::min/std::max and the helpers below, never calls to
// libm (expf, tanhf, erff are not vectorized and would make the loop scalar).
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/vector_math.h"

// Sanitizer builds get one plain version: an ifunc resolver runs while the dynamic loader
// relocates the program, before the sanitizer runtime is up, and its instrumented code crashes.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define KILN_SIMD
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define KILN_SIMD
#endif
#endif
#ifndef KILN_SIMD
#define KILN_SIMD __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif

namespace kiln::backends::cpu {

namespace detail {
inline const bool kAvx512f = __builtin_cpu_supports("avx512f");
}  // namespace detail

// Whether this CPU runs AVX-512F: the one test before a kernel written in AVX-512 intrinsics
// (functions marked target("avx512f"): the pointwise, depthwise, stem and Winograd convs, the
// NHWC pool, SiLU) is chosen or called. Read once at load time; a plain load per call, so hot
// loops may ask it. KILN_SIMD clones are chosen apart from this, by the loader (x86-64-v4 needs
// AVX-512 F, BW, CD, DQ and VL).
inline bool has_avx512() { return detail::kAvx512f; }

}  // namespace kiln::backends::cpu

namespace kiln::backends::cpu::simd {

// The vectorizable math (src/kernels/vector_math.h).
using kiln_kernels::math::erf;
using kiln_kernels::math::exp;
using kiln_kernels::math::exp2_in_range;
using kiln_kernels::math::sigmoid;
using kiln_kernels::math::silu;
using kiln_kernels::math::tanh;

}  // namespace kiln::backends::cpu::simd
