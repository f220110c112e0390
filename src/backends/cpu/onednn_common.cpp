#include "backends/cpu/onednn_common.h"

#include <cstdlib>
#include <memory>

#include "ir/zeroed_memory.h"

namespace kiln::backends::cpu::dnnl_util {

dnnl::engine& engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

bool append_activation(const ir::Node& node, dnnl::post_ops& po) {
  using A = dnnl::algorithm;
  const std::string act = node.attr_string("activation", "");
  const std::vector<float> p = node.attr_floats("activation_params");
  auto need = [&](size_t n) { return p.size() == n; };
  if (act.empty()) return true;
  if (act == "Relu" && need(0)) po.append_eltwise(1.f, A::eltwise_relu, 0.f, 0.f);
  else if (act == "LeakyRelu" && need(1)) po.append_eltwise(1.f, A::eltwise_relu, p[0], 0.f);
  else if (act == "Clip" && need(2)) po.append_eltwise(1.f, A::eltwise_clip_v2, p[0], p[1]);
  else if (act == "Sigmoid" && need(0)) po.append_eltwise(1.f, A::eltwise_logistic, 0.f, 0.f);
  else if (act == "Tanh" && need(0)) po.append_eltwise(1.f, A::eltwise_tanh, 0.f, 0.f);
  else if (act == "SiLU" && need(0)) po.append_eltwise(1.f, A::eltwise_swish, 1.f, 0.f);
  else if (act == "Gelu" && need(0)) po.append_eltwise(1.f, A::eltwise_gelu_erf, 0.f, 0.f);
  else if (act == "GeluTanh" && need(0)) po.append_eltwise(1.f, A::eltwise_gelu_tanh, 0.f, 0.f);
  else if (act == "HardSwish" && need(0)) po.append_eltwise(1.f, A::eltwise_hardswish, 0.f, 0.f);
  else if (act == "HardSigmoid" && need(2)) {
    // oneDNN 2.6 has no hardsigmoid: alpha*x+beta, then clip to [0, 1].
    po.append_eltwise(1.f, A::eltwise_linear, p[0], p[1]);
    po.append_eltwise(1.f, A::eltwise_clip_v2, 0.f, 1.f);
  } else {
    return false;
  }
  return true;
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
