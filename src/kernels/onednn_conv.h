// A float convolution on oneDNN (its 2.x C++ API), set up once and run many times: what an
// emitted project (kiln compile --target cpp, without --no-onednn) runs where kiln's plan put a
// convolution on oneDNN. The primitive, its algorithm (direct, or Winograd for 3x3 stride-1
// convs) and the weights reordered into the primitive's layout are made at construction, on the
// CPU that runs the model, so oneDNN picks that CPU's kernels; run() reorders the activations
// only where the primitive wants another layout than the plan's (NHWC, or nChw16c where the plan
// keeps activations blocked between convs).
#pragma once
#include <dnnl.hpp>
#include <dnnl_version.h>
#ifdef __linux__
#include <sys/mman.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#define KILN_OMP_FOR _Pragma("omp parallel for schedule(static)")
#else
#define KILN_OMP_FOR
#endif

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <unordered_map>

#include "activation.h"
#include "blocked_layout.h"
#include "parallel.h"
#include "thread_scratch.h"

static_assert(DNNL_VERSION_MAJOR == 2,
              "kernels/onednn_conv.h calls oneDNN 2.x's API: build against oneDNN 2, or compile the model with "
              "kiln compile --no-onednn");

namespace kiln_kernels {

// A convolution's geometry, NHWC order: input N x H x W x C, output N x OH x OW x M, M filters of
// KH x KW over C / G channels, strides, pads (top, left, bottom, right) and dilations.
struct OnednnConvShape {
  int64_t N, H, W, C, OH, OW, M, KH, KW, sh, sw, pt, pl, pb, pr, dh, dw, G;
};

// What else the convolution does: its algorithm, its inputs, its activations' layouts.
enum OnednnConvFlag : unsigned {
  kOnednnWinograd = 1,   // oneDNN's Winograd algorithm (3x3, stride 1, no dilation, one group)
  kOnednnResidual = 2,   // y = act(conv(x) + bias + z): z added by oneDNN's sum post-op
  kOnednnXBlocked = 4,   // x is nChw16c (C a multiple of 16), not NHWC
  kOnednnYBlocked = 8,   // y is nChw16c (M a multiple of 16)
  kOnednnZBlocked = 16,  // z is nChw16c
};

// The activation `act` as eltwise post-ops of `po`; false for one oneDNN 2.x has no form of.
inline bool append_onednn_activation(dnnl::post_ops& po, Act act, float a, float b) {
  using A = dnnl::algorithm;
  switch (act) {
    case Act::None: return true;
    case Act::Relu: po.append_eltwise(1.f, A::eltwise_relu, 0.f, 0.f); return true;
    case Act::LeakyRelu: po.append_eltwise(1.f, A::eltwise_relu, a, 0.f); return true;
    case Act::Clip: po.append_eltwise(1.f, A::eltwise_clip_v2, a, b); return true;
    case Act::Sigmoid: po.append_eltwise(1.f, A::eltwise_logistic, 0.f, 0.f); return true;
    case Act::Tanh: po.append_eltwise(1.f, A::eltwise_tanh, 0.f, 0.f); return true;
    case Act::SiLU: po.append_eltwise(1.f, A::eltwise_swish, 1.f, 0.f); return true;
    case Act::Gelu: po.append_eltwise(1.f, A::eltwise_gelu_erf, 0.f, 0.f); return true;
    case Act::GeluTanh: po.append_eltwise(1.f, A::eltwise_gelu_tanh, 0.f, 0.f); return true;
    case Act::HardSwish: po.append_eltwise(1.f, A::eltwise_hardswish, 0.f, 0.f); return true;
    case Act::HardSigmoid:  // no hardsigmoid in 2.x: a*x+b, then clip to [0, 1]
      po.append_eltwise(1.f, A::eltwise_linear, a, b);
      po.append_eltwise(1.f, A::eltwise_clip_v2, 0.f, 1.f);
      return true;
  }
  return false;
}

namespace onednn_detail {

inline dnnl::engine& engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

// NHWC <-> nChw16c (blocked_layout.h) with the image rows split over OpenMP's threads where
// the project runs them: oneDNN 2.x runs these reorders on one thread, a serial step in every
// conv that needs one.
inline void split_rows(int64_t rows, bool to_blocked, const float* x, float* y, int64_t C, int64_t H, int64_t W) {
KILN_OMP_FOR
  for (int64_t r = 0; r < rows; ++r) {
    if (to_blocked) nhwc_to_blocked16_rows(x, y, C, H, W, C, r, r + 1);
    else blocked16_to_nhwc_rows(x, y, C, H, W, C, r, r + 1);
  }
}

// Which of the two a reorder from `from` to `to` is: +1 NHWC -> nChw16c, -1 back, 0 neither.
inline int blocked_direction(const dnnl::memory::desc& from, const dnnl::memory::desc& to) {
  using tag = dnnl::memory::format_tag;
  const dnnl::memory::dims d = from.dims();
  if (d.size() != 4 || d[1] % 16 || from.data_type() != dnnl::memory::data_type::f32) return 0;
  const dnnl::memory::desc nhwc(d, from.data_type(), tag::nhwc), blocked(d, from.data_type(), tag::nChw16c);
  if (from == nhwc && to == blocked) return 1;
  if (from == blocked && to == nhwc) return -1;
  return 0;
}

// Runs reorder `r` (from `from` to its destination), on kiln's split copy where `direction` says
// it is one and OpenMP gives more than one thread.
inline void reorder(const dnnl::reorder& r, int direction, dnnl::stream& strm, dnnl::memory& from, dnnl::memory& to) {
#ifdef _OPENMP
  if (direction != 0 && omp_get_max_threads() > 1) {
    const dnnl::memory::dims d = from.get_desc().dims();
    strm.wait();  // what the stream queued before reads or writes these buffers
    const float* x = static_cast<const float*>(from.get_data_handle());
    float* y = static_cast<float*>(to.get_data_handle());
    split_rows(d[0] * d[2], direction > 0, x, y, d[1], d[2], d[3]);
    return;
  }
#endif
  (void)direction;
  r.execute(strm, from, to);
}

}  // namespace onednn_detail

// A convolution on channels-first activations of one, two or three spatial dims ([N][C][L],
// [N][C][H][W], [N][C][D][H][W]): the plan's 1-D and 3-D convs, which its layout assignment
// leaves channels-first. Per spatial dim, first to last (`rank` of them): input and output
// extents, kernel, stride, dilation, pads at the start and at the end.
struct OnednnConvNdShape {
  int64_t N, C, M, G, rank;
  int64_t in[3], out[3], k[3], s[3], d[3], p0[3], p1[3];
};

class OnednnConv {
 public:
  // `weights`: M x (C/G) x KH x KW floats (ONNX's layout); `bias`: M floats or null. Both are
  // read here only. SiLU runs after the primitive (oneDNN 2.x's swish post-op is slower than a
  // second pass). Throws dnnl::error where oneDNN has no implementation.
  OnednnConv(const OnednnConvShape& s, unsigned flags, Act act, float a, float b, const float* weights,
             const float* bias)
      : act_(act), a_(a), b_(b), residual_((flags & kOnednnResidual) != 0) {
    using memory = dnnl::memory;
    using tag = memory::format_tag;
    const auto f32 = memory::data_type::f32;
    const memory::dims x_dims{s.N, s.C, s.H, s.W}, y_dims{s.N, s.M, s.OH, s.OW};
    const memory::dims w_dims = s.G == 1 ? memory::dims{s.M, s.C, s.KH, s.KW}
                                         : memory::dims{s.G, s.M / s.G, s.C / s.G, s.KH, s.KW};
    setup(memory::desc(x_dims, f32, (flags & kOnednnXBlocked) ? tag::nChw16c : tag::nhwc),
          memory::desc(y_dims, f32, (flags & kOnednnYBlocked) ? tag::nChw16c : tag::nhwc),
          memory::desc(y_dims, f32, (flags & kOnednnZBlocked) ? tag::nChw16c : tag::nhwc),
          memory::desc(w_dims, f32, s.G == 1 ? tag::oihw : tag::goihw), {s.sh, s.sw}, {s.dh - 1, s.dw - 1},
          {s.pt, s.pl}, {s.pb, s.pr}, flags, (flags & kOnednnXBlocked) != (flags & kOnednnYBlocked), weights, bias);
  }
  // The channels-first form: activations (and the residual) in the plain channels-first layout.
  OnednnConv(const OnednnConvNdShape& s, unsigned flags, Act act, float a, float b, const float* weights,
             const float* bias)
      : act_(act), a_(a), b_(b), residual_((flags & kOnednnResidual) != 0) {
    using memory = dnnl::memory;
    using tag = memory::format_tag;
    const auto f32 = memory::data_type::f32;
    if (s.rank < 1 || s.rank > 3) throw dnnl::error(dnnl_invalid_arguments, "spatial rank");
    memory::dims x_dims{s.N, s.C}, y_dims{s.N, s.M}, w_dims{s.M, s.C / s.G}, st, dl, pl, pr;
    if (s.G > 1) w_dims = {s.G, s.M / s.G, s.C / s.G};
    for (int64_t i = 0; i < s.rank; ++i) {
      x_dims.push_back(s.in[i]);
      y_dims.push_back(s.out[i]);
      w_dims.push_back(s.k[i]);
      st.push_back(s.s[i]);
      dl.push_back(s.d[i] - 1);
      pl.push_back(s.p0[i]);
      pr.push_back(s.p1[i]);
    }
    static const tag plain[] = {tag::ncw, tag::nchw, tag::ncdhw}, filters[] = {tag::oiw, tag::oihw, tag::oidhw},
                     grouped[] = {tag::goiw, tag::goihw, tag::goidhw};
    const tag act_tag = plain[s.rank - 1];
    setup(memory::desc(x_dims, f32, act_tag), memory::desc(y_dims, f32, act_tag), memory::desc(y_dims, f32, act_tag),
          memory::desc(w_dims, f32, s.G == 1 ? filters[s.rank - 1] : grouped[s.rank - 1]), st, dl, pl, pr, flags & ~kOnednnWinograd,
          true, weights, bias);
  }
  OnednnConv(const OnednnConv&) = delete;
  OnednnConv& operator=(const OnednnConv&) = delete;

  // y = act(conv(x) + bias [+ z]); z may be y itself (the residual in place). The team splits
  // the late activation; oneDNN's own threads (OpenMP) run the primitive.
  void run(const float* x, const float* z, float* y, Team* team) const {
    using memory = dnnl::memory;
    auto& eng = onednn_detail::engine();
    dnnl::stream strm(eng);
    const size_t xb = x_reorder_ ? (pd_.src_desc().get_size() + 63) / 64 * 64 : 0;
    const size_t yb = y_reorder_ ? (pd_.dst_desc().get_size() + 63) / 64 * 64 : 0;
    // z in y's memory but in another layout is reordered from a copy.
    const bool z_copy = residual_ && z_reorder_ && !y_reorder_ && z == y;
    const size_t zb = z_copy ? (z_md_.get_size() + 63) / 64 * 64 : 0;
    char* buf = static_cast<char*>(thread_scratch(xb + yb + zb));
    memory x_user(x_md_, eng, const_cast<float*>(x)), y_user(y_md_, eng, y);
    memory src = x_user, dst = y_user;
    if (x_reorder_) {
      src = memory(pd_.src_desc(), eng, buf);
      onednn_detail::reorder(x_reorder_, x_dir_, strm, x_user, src);
    }
    if (y_reorder_) dst = memory(pd_.dst_desc(), eng, buf + xb);
    if (residual_) {  // the sum post-op adds the destination's contents: put z there
      if (z_copy) {
        std::memcpy(buf + xb + yb, z, z_md_.get_size());
        z = reinterpret_cast<const float*>(buf + xb + yb);
      }
      memory z_user(z_md_, eng, const_cast<float*>(z));
      if (z_reorder_) onednn_detail::reorder(z_reorder_, z_dir_, strm, z_user, dst);
      else if (z != dst.get_data_handle()) std::memcpy(dst.get_data_handle(), z, z_md_.get_size());
    }
    std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights_}, {DNNL_ARG_DST, dst}};
    if (bias_) args[DNNL_ARG_BIAS] = bias_;
    prim_.execute(strm, args);
    if (y_reorder_) onednn_detail::reorder(y_reorder_, y_dir_, strm, dst, y_user);
    strm.wait();
    if (late_) {
      const float a = a_, b = b_;
      parallel_for(team, (y_elems_ + 4095) / 4096, [&](int64_t lo, int64_t hi) {
        const int64_t end = std::min(hi * 4096, y_elems_);
        activate_all<Act::SiLU>(y + lo * 4096, end - lo * 4096, a, b);
      });
    }
  }

 private:
  // The primitive for activations x_md -> y_md (the residual z_md) and weights w_plain as ONNX
  // stores them; `own`: the direct conv picks its own activation layouts (reordered around it).
  void setup(const dnnl::memory::desc& x_md, const dnnl::memory::desc& y_md, const dnnl::memory::desc& z_md,
             const dnnl::memory::desc& w_plain, const dnnl::memory::dims& st, const dnnl::memory::dims& dl,
             const dnnl::memory::dims& pl, const dnnl::memory::dims& pr, unsigned flags, bool own_direct,
             const float* weights, const float* bias) {
    using memory = dnnl::memory;
    using tag = memory::format_tag;
    const auto f32 = memory::data_type::f32;
    auto& eng = onednn_detail::engine();
    dnnl::post_ops po;
    if (residual_) po.append_sum(1.f);
    late_ = act_ == Act::SiLU;
    if (!late_ && !append_onednn_activation(po, act_, a_, b_)) throw dnnl::error(dnnl_unimplemented, "activation");
    dnnl::primitive_attr attr;
    attr.set_post_ops(po);
    const bool winograd = (flags & kOnednnWinograd) != 0;
    x_md_ = x_md;
    y_md_ = y_md;
    z_md_ = z_md;
    const memory::dims x_dims = x_md.dims(), y_dims = y_md.dims(), w_dims = w_plain.dims();
    const memory::desc b_md({y_dims[1]}, f32, tag::x);
    // Winograd, and a direct conv with one end blocked, pick their own activation layouts; a
    // direct conv otherwise runs on the plan's (oneDNN's NHWC kernels are its brgconv).
    const memory::desc x_any(x_dims, f32, tag::any), y_any(y_dims, f32, tag::any), w_any(w_dims, f32, tag::any);
    auto make = [&](bool winograd, bool own) {
      const auto algo = winograd ? dnnl::algorithm::convolution_winograd : dnnl::algorithm::convolution_direct;
      const auto prop = dnnl::prop_kind::forward_inference;
      const memory::desc& xd = own ? x_any : x_md_;
      const memory::desc& yd = own ? y_any : y_md_;
      auto desc = bias ? dnnl::convolution_forward::desc(prop, algo, xd, w_any, b_md, yd, st, dl, pl, pr)
                       : dnnl::convolution_forward::desc(prop, algo, xd, w_any, yd, st, dl, pl, pr);
      return dnnl::convolution_forward::primitive_desc(desc, attr, eng);
    };
    try {
      pd_ = make(winograd, winograd || own_direct);
    } catch (const dnnl::error&) {
      // The CPU running the model has no Winograd implementation (oneDNN 2.x's needs AVX-512,
      // which the compiling machine may have had): the direct algorithm, in its own layouts.
      if (!winograd) throw;
      pd_ = make(false, true);
    }
    prim_ = dnnl::convolution_forward(pd_);
    weights_ = pack(weights, w_plain, pd_.weights_desc(), weights_buf_);
    if (bias) bias_ = pack(bias, b_md, pd_.bias_desc(), bias_buf_);
    if (pd_.src_desc() != x_md_) x_reorder_ = dnnl::reorder(dnnl::reorder::primitive_desc(eng, x_md_, eng, pd_.src_desc()));
    if (pd_.dst_desc() != y_md_) y_reorder_ = dnnl::reorder(dnnl::reorder::primitive_desc(eng, pd_.dst_desc(), eng, y_md_));
    // z goes where the primitive writes: its own buffer, or y.
    const memory::desc& z_to = y_reorder_ ? pd_.dst_desc() : y_md_;
    if (residual_ && z_md_ != z_to) z_reorder_ = dnnl::reorder(dnnl::reorder::primitive_desc(eng, z_md_, eng, z_to));
    x_dir_ = onednn_detail::blocked_direction(x_md_, pd_.src_desc());
    y_dir_ = onednn_detail::blocked_direction(pd_.dst_desc(), y_md_);
    z_dir_ = onednn_detail::blocked_direction(z_md_, z_to);
    y_elems_ = 1;
    for (int64_t d : y_dims) y_elems_ *= d;
  }

  // Packed weights: on Linux in a mapping advised into transparent huge pages (a Winograd conv
  // reads megabytes of them per run, a TLB miss per 4 KiB page otherwise), else 64-byte aligned.
  struct Buffer {
    void* p = nullptr;
    size_t bytes = 0;
    Buffer() = default;
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    ~Buffer() { reset(0); }
    explicit operator bool() const { return p != nullptr; }
    void* get() const { return p; }
    void reset(size_t n) {
#ifdef __linux__
      if (p) ::munmap(p, bytes);
#else
      std::free(p);
#endif
      p = nullptr;
      bytes = (n + 4095) / 4096 * 4096;
      if (!n) return;
#ifdef __linux__
      void* m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (m == MAP_FAILED) return;
      ::madvise(m, bytes, MADV_HUGEPAGE);  // advice: 4 KiB pages serve where THP is off
      p = m;
#else
      p = std::aligned_alloc(64, bytes);
#endif
    }
  };

  // `data` in layout `have` reordered into `want`, in a buffer `keep` owns.
  static dnnl::memory pack(const float* data, const dnnl::memory::desc& have, const dnnl::memory::desc& want,
                           Buffer& keep) {
    auto& eng = onednn_detail::engine();
    keep.reset(want.get_size());
    if (!keep) throw dnnl::error(dnnl_out_of_memory, "weights");
    dnnl::memory src(have, eng, const_cast<float*>(data)), dst(want, eng, keep.get());
    dnnl::stream strm(eng);
    dnnl::reorder(src, dst).execute(strm, src, dst);
    strm.wait();
    return dst;
  }

  Act act_;
  float a_, b_;
  bool residual_, late_ = false;
  int64_t y_elems_ = 0;
  dnnl::memory::desc x_md_, y_md_, z_md_;
  dnnl::convolution_forward::primitive_desc pd_;
  dnnl::convolution_forward prim_;
  Buffer weights_buf_, bias_buf_;
  dnnl::memory weights_, bias_;
  dnnl::reorder x_reorder_, y_reorder_, z_reorder_;
  int x_dir_ = 0, y_dir_ = 0, z_dir_ = 0;  // onednn_detail::blocked_direction of each reorder
};

}  // namespace kiln_kernels
