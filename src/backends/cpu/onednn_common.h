// oneDNN glue shared by the CPU backend's kernels: the one global CPU engine, per-thread
// scratchpad, and kiln activation epilogues as oneDNN eltwise post-ops. oneDNN's API stays
// behind this file and the onednn_*.cpp kernels (its 3.x API differs from the 2.6 used here).
#pragma once
#include <dnnl.hpp>

#include <kiln/tensor.h>

#include <memory>

#include "ir/graph.h"

namespace kiln::backends::cpu::dnnl_util {

dnnl::engine& engine();

// Appends a FusedConv/FusedGemm `activation` (with its activation_params) to `po`.
// Returns false when oneDNN 2.6 has no matching eltwise, so the caller declines.
bool append_activation(const ir::Node& node, dnnl::post_ops& po);

// True for the activations kiln applies itself after a conv primitive instead of as a oneDNN
// post-op, because oneDNN 2.6's form is slower (SiLU; see onednn_conv.cpp).
bool late_activation(const ir::Node& node);

// A per-thread buffer of at least `bytes` for the primitive's user-mode scratchpad; primitives
// run with scratchpad_mode::user so concurrent run() calls never share one.
void* scratch(size_t bytes);

// A constant reordered once into a primitive's layout, and the buffer under it, which kiln
// allocates (ir/zeroed_memory.h: large weights in huge pages). Empty when there is none.
struct PackedConstant {
  dnnl::memory mem;
  std::shared_ptr<void> storage;
  explicit operator bool() const { return static_cast<bool>(mem); }
};

// `data`, laid out as `have`, reordered into `want`.
PackedConstant pack_constant(const void* data, const dnnl::memory::desc& have, const dnnl::memory::desc& want);

// True when every dim of the value's type is static and its dtype is float32.
bool static_float(const ir::Value* v);

}  // namespace kiln::backends::cpu::dnnl_util
