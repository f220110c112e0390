// A oneDNN primitive of one source and one destination (pooling, LRN) on the user's tensors,
// through the primitive's own layouts where they differ: channels-first activations run in
// oneDNN's blocked layout, reordered in and out inside run() (oneDNN's plain channels-first
// forms are scalar loops, several times slower than the two reorders and the blocked primitive
// together).
#pragma once
#include <unordered_map>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/onednn_common.h"

namespace kiln::backends::cpu {

template <typename Primitive>
class ReorderedKernel : public Kernel {
 public:
  using PrimitiveDesc = typename Primitive::primitive_desc;
  ReorderedKernel(PrimitiveDesc pd, dnnl::memory::desc src, dnnl::memory::desc dst)
      : pd_(pd), prim_(pd), src_(src), dst_(dst) {
    auto& eng = dnnl_util::engine();
    if (pd.src_desc() != src) src_reorder_ = dnnl::reorder(dnnl::reorder::primitive_desc(eng, src, eng, pd.src_desc()));
    if (pd.dst_desc() != dst) dst_reorder_ = dnnl::reorder(dnnl::reorder::primitive_desc(eng, pd.dst_desc(), eng, dst));
  }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    using dnnl::memory;
    auto& eng = dnnl_util::engine();
    dnnl::stream s(eng);
    memory src_user(src_, eng, const_cast<void*>(inputs[0]->raw()));
    memory dst_user(dst_, eng, outputs[0]->raw());
    const size_t src_b = src_reorder_ ? (pd_.src_desc().get_size() + 63) / 64 * 64 : 0;
    const size_t dst_b = dst_reorder_ ? (pd_.dst_desc().get_size() + 63) / 64 * 64 : 0;
    char* buf = static_cast<char*>(dnnl_util::scratch(src_b + dst_b + pd_.scratchpad_desc().get_size()));
    memory src = src_user, dst = dst_user;
    if (src_reorder_) {
      src = memory(pd_.src_desc(), eng, buf);
      src_reorder_.execute(s, src_user, src);
    }
    if (dst_reorder_) dst = memory(pd_.dst_desc(), eng, buf + src_b);
    memory scratchpad(pd_.scratchpad_desc(), eng, buf + src_b + dst_b);
    prim_.execute(s, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}, {DNNL_ARG_SCRATCHPAD, scratchpad}});
    if (dst_reorder_) dst_reorder_.execute(s, dst, dst_user);
    s.wait();
  }

 private:
  PrimitiveDesc pd_;
  Primitive prim_;
  dnnl::memory::desc src_, dst_;
  dnnl::reorder src_reorder_, dst_reorder_;
};

// The blocked layout (16 channels a block) of an activation with `spatial` 1-3 spatial dims.
inline dnnl::memory::format_tag blocked16(size_t spatial) {
  using tag = dnnl::memory::format_tag;
  return spatial == 1 ? tag::nCw16c : spatial == 2 ? tag::nChw16c : tag::nCdhw16c;
}

}  // namespace kiln::backends::cpu
