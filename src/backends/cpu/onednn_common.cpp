#include "backends/cpu/onednn_common.h"

#include <cstdlib>
#include <memory>

#include "backends/cpu/activation_apply.h"
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

PackedConstant pack_constant(const void* data, const dnnl::memory::desc& have, const dnnl::memory::desc& want) {
  PackedConstant out;
  out.storage = allocate_zeroed(want.get_size());
  out.mem = dnnl::memory(want, engine(), out.storage.get());
  dnnl::memory src(have, engine(), const_cast<void*>(data));
  dnnl::stream s(engine());
  dnnl::reorder(src, out.mem).execute(s, src, out.mem);
  s.wait();
  return out;
}

bool static_float(const ir::Value* v) {
  return v && v->type.is_tensor() && v->type.rank_known && v->type.dtype == DType::Float && v->type.is_static();
}

}  // namespace kiln::backends::cpu::dnnl_util
