#include "backends/cpu/onednn_common.h"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <memory>

#include "backends/cpu/activation_apply.h"
#include "backends/cpu/avx512_activation.h"
#include "backends/packed_weights.h"
#include "ir/zeroed_memory.h"
#include "kernels/onednn_conv.h"
#include "ops/core/activation.h"

namespace kiln::backends::cpu::dnnl_util {

// One engine and one per-thread scratch buffer with the oneDNN convs emitted code runs
// (kernels/onednn_conv.h).
dnnl::engine& engine() { return kiln_kernels::onednn_detail::engine(); }

bool append_activation(const ir::Node& node, dnnl::post_ops& po) {
  const std::optional<ops::Activation> act = epilogue_of(node);
  return act && kiln_kernels::append_onednn_activation(po, kernel_act(act->kind), act->a, act->b);
}

void* scratch(size_t bytes) { return kiln_kernels::thread_scratch(bytes); }

namespace {
// The packed format a descriptor names: oneDNN's version and the descriptor's bytes (dims,
// blocking, padding), so that a stored buffer is reused only where oneDNN wants that layout.
std::string format_key(const dnnl::memory::desc& d) {
  const dnnl_version_t* v = dnnl_version();
  uint64_t h = 0xCBF29CE484222325ull;
  const auto* p = reinterpret_cast<const unsigned char*>(&d.data);
  for (size_t i = 0; i < sizeof d.data; ++i) h = (h ^ p[i]) * 0x100000001B3ull;
  return "onednn/" + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch) + "/" +
         std::to_string(h);
}
}  // namespace

PackedConstant pack_constant(const void* data, const dnnl::memory::desc& have, const dnnl::memory::desc& want) {
  PackedConstant out;
  out.storage = packed_buffer(want.get_size(), format_key(want), [&](void* p) {
    dnnl::memory dst(want, engine(), p);
    dnnl::memory src(have, engine(), const_cast<void*>(data));
    dnnl::stream s(engine());
    dnnl::reorder(src, dst).execute(s, src, dst);
    s.wait();
  });
  out.mem = dnnl::memory(want, engine(), out.storage.get());
  return out;
}

bool static_float(const ir::Value* v) {
  return v && v->type.is_tensor() && v->type.rank_known && v->type.dtype == DType::Float && v->type.is_static();
}

}  // namespace kiln::backends::cpu::dnnl_util
