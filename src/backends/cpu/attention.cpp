// kiln.Attention, float32: softmax(Q · K_T * scale + mask) · V (src/ops/kiln_fused.cpp) as
// two batched oneDNN matmuls around one fused pass per score row (scale, mask, softmax, in
// place). All heads' scores live in one per-thread buffer (BERT-base: 12 x 128 x 128 floats,
// 768 KiB) so each matmul is a single primitive call that oneDNN threads over batch and rows.
#include <memory>
#include <numeric>

#include "backends/cpu/kernels.h"
#include "backends/cpu/onednn_common.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/softmax_row.h"

namespace kiln::backends::cpu {

namespace {

using dnnl::memory;
using dt = memory::data_type;

memory::desc plain(const memory::dims& d) {
  memory::dims s(d.size(), 1);
  for (int i = static_cast<int>(d.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * d[i + 1];
  return memory::desc(d, dt::f32, s);
}

struct Geometry {
  memory::dims q, k, v, scores, out;  // all of one rank, batch dims padded with 1s
  int64_t rows = 0, sk = 0;           // score rows (all batches) and their length
  int64_t sq = 0, mq = 1, mk = 1;     // Sq and the mask's last two extents
  std::vector<int64_t> mask_offset;   // per score batch: the mask's [mq, mk] block
  float scale = 1.f;
  bool mask = false;
};

class AttentionKernel : public Kernel {
 public:
  AttentionKernel(Geometry g, dnnl::matmul::primitive_desc qk, dnnl::matmul::primitive_desc pv, int threads)
      : g_(std::move(g)), qk_pd_(qk), pv_pd_(pv), qk_(qk), pv_(pv), threads_(threads) {}

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    auto& eng = dnnl_util::engine();
    dnnl::stream s(eng);
    const size_t scores_b = (g_.rows * g_.sk * sizeof(float) + 63) / 64 * 64;
    const size_t pad_b = std::max(qk_pd_.scratchpad_desc().get_size(), pv_pd_.scratchpad_desc().get_size());
    char* buf = static_cast<char*>(dnnl_util::scratch(scores_b + pad_b));
    float* scores = reinterpret_cast<float*>(buf);
    auto in = [&](int i, const memory::dims& d) { return memory(plain(d), eng, const_cast<void*>(inputs[i]->raw())); };
    memory sc(plain(g_.scores), eng, scores);
    qk_.execute(s, {{DNNL_ARG_SRC, in(0, g_.q)},
                    {DNNL_ARG_WEIGHTS, in(1, g_.k)},
                    {DNNL_ARG_DST, sc},
                    {DNNL_ARG_SCRATCHPAD, memory(qk_pd_.scratchpad_desc(), eng, buf + scores_b)}});
    s.wait();
    const float* mask = g_.mask && inputs.size() > 3 && inputs[3] ? inputs[3]->data<float>() : nullptr;
    const Geometry& g = g_;
    parallel_for(g.rows, threads_, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        float* row = scores + r * g.sk;
        if (!mask) {
          softmax_row(row, row, g.sk, g.scale, nullptr, 0.f);
          continue;
        }
        const float* m = mask + g.mask_offset[r / g.sq] * g.mq * g.mk + (g.mq == 1 ? 0 : r % g.sq * g.mk);
        if (g.mk == 1) softmax_row(row, row, g.sk, g.scale, nullptr, m[0]);
        else softmax_row(row, row, g.sk, g.scale, m, 0.f);
      }
    });
    pv_.execute(s, {{DNNL_ARG_SRC, sc},
                    {DNNL_ARG_WEIGHTS, in(2, g_.v)},
                    {DNNL_ARG_DST, memory(plain(g_.out), eng, outputs[0]->raw())},
                    {DNNL_ARG_SCRATCHPAD, memory(pv_pd_.scratchpad_desc(), eng, buf + scores_b)}});
    s.wait();
  }

 private:
  Geometry g_;
  dnnl::matmul::primitive_desc qk_pd_, pv_pd_;
  dnnl::matmul qk_, pv_;
  int threads_;
};

// Right-aligned broadcast of batch dims; false when they clash.
bool broadcast(std::vector<int64_t>& into, std::vector<int64_t> d) {
  if (d.size() > into.size()) into.insert(into.begin(), d.size() - into.size(), 1);
  d.insert(d.begin(), into.size() - d.size(), 1);
  for (size_t i = 0; i < d.size(); ++i) {
    if (d[i] != into[i] && d[i] != 1 && into[i] != 1) return false;
    into[i] = std::max(into[i], d[i]);
  }
  return true;
}

std::vector<int64_t> batch_of(const std::vector<int64_t>& d) { return {d.begin(), d.end() - 2}; }

std::unique_ptr<Kernel> make_attention(const ir::Node& node, int threads) {
  if (node.num_inputs() < 3 || node.num_outputs() != 1) return nullptr;
  for (int i = 0; i < 3; ++i)
    if (!dnnl_util::static_float(node.input(i))) return nullptr;
  const ir::Value* mask = node.num_inputs() > 3 ? node.input(3) : nullptr;
  if ((mask && !dnnl_util::static_float(mask)) || !dnnl_util::static_float(node.output(0))) return nullptr;
  const auto qd = node.input(0)->type.static_dims(), kd = node.input(1)->type.static_dims(),
             vd = node.input(2)->type.static_dims();
  if (qd.size() < 2 || kd.size() < 2 || vd.size() < 2) return nullptr;
  Geometry g;
  g.sq = qd[qd.size() - 2];
  const int64_t d = qd.back(), dv = vd.back();
  g.sk = kd.back();
  if (kd[kd.size() - 2] != d || vd[vd.size() - 2] != g.sk) return nullptr;
  if (g.sq * g.sk * d * dv == 0) return nullptr;
  // The scores' batch (Q's and K_T's broadcast) must already be the output's: a mask or V that
  // widens it would need the scores repeated.
  std::vector<int64_t> sb = batch_of(qd);
  if (!broadcast(sb, batch_of(kd))) return nullptr;
  std::vector<int64_t> ob = sb, mb;
  if (!broadcast(ob, batch_of(vd))) return nullptr;
  if (mask) {
    std::vector<int64_t> md = mask->type.static_dims();
    md.insert(md.begin(), std::max<int64_t>(0, 2 - static_cast<int64_t>(md.size())), 1);
    g.mq = md[md.size() - 2];
    g.mk = md.back();
    if ((g.mq != 1 && g.mq != g.sq) || (g.mk != 1 && g.mk != g.sk)) return nullptr;
    mb = batch_of(md);
    if (!broadcast(ob, mb)) return nullptr;
    g.mask = true;
  }
  if (ob.size() > sb.size()) sb.insert(sb.begin(), ob.size() - sb.size(), 1);
  if (ob != sb) return nullptr;
  std::vector<int64_t> out = ob;
  out.push_back(g.sq);
  out.push_back(dv);
  if (node.output(0)->type.static_dims() != out) return nullptr;
  if (ob.size() + 2 > DNNL_MAX_NDIMS) return nullptr;

  auto padded = [&](const std::vector<int64_t>& full) {
    memory::dims r(full.begin(), full.end());
    r.insert(r.begin(), ob.size() + 2 - r.size(), 1);
    return r;
  };
  g.q = padded(qd);
  g.k = padded(kd);
  g.v = padded(vd);
  g.scores = ob;
  g.scores.push_back(g.sq);
  g.scores.push_back(g.sk);
  g.out = out;
  const int64_t batches = std::accumulate(ob.begin(), ob.end(), int64_t{1}, std::multiplies<>());
  g.rows = batches * g.sq;
  g.scale = node.attr_float("scale", 1.f);
  if (g.mask) {
    // Row-major strides of the mask's batch dims, 0 where it broadcasts.
    mb.insert(mb.begin(), ob.size() - mb.size(), 1);
    std::vector<int64_t> stride(ob.size(), 0);
    for (int64_t i = static_cast<int64_t>(ob.size()) - 1, s = 1; i >= 0; --i) {
      stride[i] = mb[i] == 1 ? 0 : s;
      s *= mb[i];
    }
    g.mask_offset.resize(batches);
    for (int64_t b = 0; b < batches; ++b) {
      int64_t rest = b, off = 0;
      for (int64_t i = static_cast<int64_t>(ob.size()) - 1; i >= 0; --i) {
        off += rest % ob[i] * stride[i];
        rest /= ob[i];
      }
      g.mask_offset[b] = off;
    }
  }
  try {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::matmul::primitive_desc qk(dnnl::matmul::desc(plain(g.q), plain(g.k), plain(g.scores)), attr,
                                    dnnl_util::engine());
    dnnl::matmul::primitive_desc pv(dnnl::matmul::desc(plain(g.scores), plain(g.v), plain(g.out)), attr,
                                    dnnl_util::engine());
    return std::make_unique<AttentionKernel>(std::move(g), qk, pv, threads);
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

}  // namespace

void add_attention_kernels(std::vector<KernelFactory>& table) {
  table.push_back({"kiln", "Attention", make_attention});
}

}  // namespace kiln::backends::cpu
