#include "backends/cpu/onednn_common.h"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <memory>

#include "backends/cpu/activation_apply.h"
#include "backends/packed_weights.h"
#include "ir/zeroed_memory.h"
#include "ops/core/activation.h"

namespace kiln::backends::cpu::dnnl_util {

dnnl::engine& engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

bool append_activation(const ir::Node& node, dnnl::post_ops& po) {
  using A = dnnl::algorithm;
  using K = ops::Activation;
  const std::optional<ops::Activation> epilogue = epilogue_of(node);
  if (!epilogue) return false;
  const ops::Activation& act = *epilogue;
  switch (act.kind) {
    case K::None: return true;
    case K::Relu: po.append_eltwise(1.f, A::eltwise_relu, 0.f, 0.f); return true;
    case K::LeakyRelu: po.append_eltwise(1.f, A::eltwise_relu, act.a, 0.f); return true;
    case K::Clip: po.append_eltwise(1.f, A::eltwise_clip_v2, act.a, act.b); return true;
    case K::Sigmoid: po.append_eltwise(1.f, A::eltwise_logistic, 0.f, 0.f); return true;
    case K::Tanh: po.append_eltwise(1.f, A::eltwise_tanh, 0.f, 0.f); return true;
    case K::SiLU: po.append_eltwise(1.f, A::eltwise_swish, 1.f, 0.f); return true;
    case K::Gelu: po.append_eltwise(1.f, A::eltwise_gelu_erf, 0.f, 0.f); return true;
    case K::GeluTanh: po.append_eltwise(1.f, A::eltwise_gelu_tanh, 0.f, 0.f); return true;
    case K::HardSwish: po.append_eltwise(1.f, A::eltwise_hardswish, 0.f, 0.f); return true;
    case K::HardSigmoid:
      // oneDNN 2.6 has no hardsigmoid: alpha*x+beta, then clip to [0, 1].
      po.append_eltwise(1.f, A::eltwise_linear, act.a, act.b);
      po.append_eltwise(1.f, A::eltwise_clip_v2, 0.f, 1.f);
      return true;
  }
  return false;
}

void* scratch(size_t bytes) {
  struct Buf {
    void* p = nullptr;
    size_t n = 0;
    ~Buf() { std::free(p); }
  };
  thread_local Buf buf;
  if (buf.n < bytes) {
    std::free(buf.p);
    buf.n = (bytes + 4095) / 4096 * 4096;
    buf.p = std::aligned_alloc(64, buf.n);
  }
  return buf.p;
}

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
