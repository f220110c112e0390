// kiln.Attention, float32: softmax(Q · K_T * scale + mask) · V (src/ops/kiln_fused.cpp), two
// ways. kiln_attention_rows (first, with AVX-512): the team splits the score rows of all heads;
// a thread takes a few rows of one head at a time through both products and the softmax
// between them, its scores never leaving L1, with kiln's own register-tiled loops; the kernel
// threads only through parallel_for, so it runs in the held team like the kernels around it
// (a transformer's run then starts no OpenMP region). "kiln" (the other): two batched oneDNN
// matmuls around one fused pass per score row (scale, mask, softmax, in place), all heads'
// scores in one per-thread buffer (BERT-base: 12 x 128 x 128 floats, 768 KiB) so each matmul
// is a single primitive call that oneDNN threads over batch and rows.
#include <immintrin.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <optional>

#include "backends/cpu/kernels.h"
#include "backends/cpu/onednn_common.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/simd.h"
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
  // Per score batch: the [sq, d] block of Q, [d, sk] of K_T, [sk, dv] of V it reads (broadcast).
  std::vector<int64_t> q_offset, k_offset, v_offset;
  int64_t d = 0, dv = 0;
  float scale = 1.f;
  bool mask = false;
};

// y[r][0, N) = x[r][0, K) . W[0, K)[0, N) for R rows (x rows `ldx` apart, W's `ldw`, y's `ldy`),
// 64 columns at a time in registers (the last block masked).
template <int R>
__attribute__((target("avx512f"))) void rows_times(const float* x, int64_t ldx, int64_t K, const float* W, int64_t ldw,
                                                   int64_t N, float* y, int64_t ldy) {
  for (int64_t n0 = 0; n0 < N; n0 += 64) {
    __mmask16 m[4];
    for (int j = 0; j < 4; ++j)
      m[j] = static_cast<__mmask16>((1u << std::clamp<int64_t>(N - n0 - 16 * j, 0, 16)) - 1);
    __m512 acc[R][4];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) acc[r][j] = _mm512_setzero_ps();
    const int nv = static_cast<int>(std::min<int64_t>(4, (N - n0 + 15) / 16));
    for (int64_t k = 0; k < K; ++k) {
      const float* w = W + k * ldw + n0;
      __m512 b[4];
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) b[j] = j < nv ? _mm512_maskz_loadu_ps(m[j], w + 16 * j) : _mm512_setzero_ps();
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m512 a = _mm512_set1_ps(x[r * ldx + k]);
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j)
          if (j < nv) acc[r][j] = _mm512_fmadd_ps(a, b[j], acc[r][j]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j)
        if (j < nv) _mm512_mask_storeu_ps(y + r * ldy + n0 + 16 * j, m[j], acc[r][j]);
  }
}

constexpr int kAttentionRows = 6;  // rows per register tile: 24 accumulators of 16 floats

void rows_times_any(int rows, const float* x, int64_t ldx, int64_t K, const float* W, int64_t ldw, int64_t N, float* y,
                    int64_t ldy) {
  switch (rows) {
    case 6: rows_times<6>(x, ldx, K, W, ldw, N, y, ldy); break;
    case 5: rows_times<5>(x, ldx, K, W, ldw, N, y, ldy); break;
    case 4: rows_times<4>(x, ldx, K, W, ldw, N, y, ldy); break;
    case 3: rows_times<3>(x, ldx, K, W, ldw, N, y, ldy); break;
    case 2: rows_times<2>(x, ldx, K, W, ldw, N, y, ldy); break;
    default: rows_times<1>(x, ldx, K, W, ldw, N, y, ldy); break;
  }
}

// The score row r's softmax, in place (its mask block from the geometry).
void softmax_score_row(const Geometry& g, const float* mask, int64_t r, float* row) {
  if (!mask) {
    softmax_row(row, row, g.sk, g.scale, nullptr, 0.f);
    return;
  }
  const float* m = mask + g.mask_offset[r / g.sq] * g.mq * g.mk + (g.mq == 1 ? 0 : r % g.sq * g.mk);
  if (g.mk == 1) softmax_row(row, row, g.sk, g.scale, nullptr, m[0]);
  else softmax_row(row, row, g.sk, g.scale, m, 0.f);
}

class AttentionRowsKernel : public Kernel {
 public:
  bool runs_in_team() const override { return true; }
  AttentionRowsKernel(Geometry g, int threads) : g_(std::move(g)), threads_(std::max(1, threads)) {}

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    const Geometry& g = g_;
    const float* q = inputs[0]->data<float>();
    const float* k = inputs[1]->data<float>();
    const float* v = inputs[2]->data<float>();
    const float* mask = g.mask && inputs.size() > 3 && inputs[3] ? inputs[3]->data<float>() : nullptr;
    float* out = outputs[0]->data<float>();
    // Units of kAttentionRows rows of one batch, in order: each thread a run of them.
    const int64_t per_batch = (g.sq + kAttentionRows - 1) / kAttentionRows, units = per_batch * (g.rows / g.sq);
    const int team = product_team(g.rows * g.dv, g.rows * g.sk * (g.d + g.dv), threads_);
    parallel_for(units, team, [&](int64_t u0, int64_t u1) {
      float* scores = static_cast<float*>(dnnl_util::scratch(static_cast<size_t>(kAttentionRows * g.sk) * sizeof(float)));
      for (int64_t u = u0; u < u1; ++u) {
        const int64_t b = u / per_batch, i0 = u % per_batch * kAttentionRows;
        const int rows = static_cast<int>(std::min<int64_t>(kAttentionRows, g.sq - i0));
        rows_times_any(rows, q + g.q_offset[b] * g.sq * g.d + i0 * g.d, g.d, g.d, k + g.k_offset[b] * g.d * g.sk, g.sk,
                       g.sk, scores, g.sk);
        for (int r = 0; r < rows; ++r) softmax_score_row(g, mask, b * g.sq + i0 + r, scores + r * g.sk);
        rows_times_any(rows, scores, g.sk, g.sk, v + g.v_offset[b] * g.sk * g.dv, g.dv, g.dv,
                       out + (b * g.sq + i0) * g.dv, g.dv);
      }
    });
  }

 private:
  Geometry g_;
  int threads_;
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
      for (int64_t r = b; r < e; ++r) softmax_score_row(g, mask, r, scores + r * g.sk);
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

// For each batch of `ob` (row-major), the matching block of an operand whose batch dims are
// `dims` (as many, 1 where it broadcasts), counted in blocks.
std::vector<int64_t> batch_offsets(const std::vector<int64_t>& dims, const std::vector<int64_t>& ob) {
  std::vector<int64_t> stride(ob.size(), 0);
  for (int64_t i = static_cast<int64_t>(ob.size()) - 1, s = 1; i >= 0; --i) {
    stride[i] = dims[i] == 1 ? 0 : s;
    s *= dims[i];
  }
  const int64_t batches = std::accumulate(ob.begin(), ob.end(), int64_t{1}, std::multiplies<>());
  std::vector<int64_t> offsets(static_cast<size_t>(batches));
  for (int64_t b = 0; b < batches; ++b) {
    int64_t rest = b, off = 0;
    for (int64_t i = static_cast<int64_t>(ob.size()) - 1; i >= 0; --i) {
      off += rest % ob[i] * stride[i];
      rest /= ob[i];
    }
    offsets[static_cast<size_t>(b)] = off;
  }
  return offsets;
}

std::optional<Geometry> attention_geometry(const ir::Node& node) {
  if (node.num_inputs() < 3 || node.num_outputs() != 1) return std::nullopt;
  for (int i = 0; i < 3; ++i)
    if (!dnnl_util::static_float(node.input(i))) return std::nullopt;
  const ir::Value* mask = node.num_inputs() > 3 ? node.input(3) : nullptr;
  if ((mask && !dnnl_util::static_float(mask)) || !dnnl_util::static_float(node.output(0))) return std::nullopt;
  const auto qd = node.input(0)->type.static_dims(), kd = node.input(1)->type.static_dims(),
             vd = node.input(2)->type.static_dims();
  if (qd.size() < 2 || kd.size() < 2 || vd.size() < 2) return std::nullopt;
  Geometry g;
  g.sq = qd[qd.size() - 2];
  const int64_t d = qd.back(), dv = vd.back();
  g.sk = kd.back();
  if (kd[kd.size() - 2] != d || vd[vd.size() - 2] != g.sk) return std::nullopt;
  if (g.sq * g.sk * d * dv == 0) return std::nullopt;
  // The scores' batch (Q's and K_T's broadcast) must already be the output's: a mask or V that
  // widens it would need the scores repeated.
  std::vector<int64_t> sb = batch_of(qd);
  if (!broadcast(sb, batch_of(kd))) return std::nullopt;
  std::vector<int64_t> ob = sb, mb;
  if (!broadcast(ob, batch_of(vd))) return std::nullopt;
  if (mask) {
    std::vector<int64_t> md = mask->type.static_dims();
    md.insert(md.begin(), std::max<int64_t>(0, 2 - static_cast<int64_t>(md.size())), 1);
    g.mq = md[md.size() - 2];
    g.mk = md.back();
    if ((g.mq != 1 && g.mq != g.sq) || (g.mk != 1 && g.mk != g.sk)) return std::nullopt;
    mb = batch_of(md);
    if (!broadcast(ob, mb)) return std::nullopt;
    g.mask = true;
  }
  if (ob.size() > sb.size()) sb.insert(sb.begin(), ob.size() - sb.size(), 1);
  if (ob != sb) return std::nullopt;
  std::vector<int64_t> out = ob;
  out.push_back(g.sq);
  out.push_back(dv);
  if (node.output(0)->type.static_dims() != out) return std::nullopt;
  if (ob.size() + 2 > DNNL_MAX_NDIMS) return std::nullopt;

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
    mb.insert(mb.begin(), ob.size() - mb.size(), 1);
    g.mask_offset = batch_offsets(mb, ob);
  }
  auto batch_dims = [&](const memory::dims& padded) { return std::vector<int64_t>(padded.begin(), padded.end() - 2); };
  g.q_offset = batch_offsets(batch_dims(g.q), ob);
  g.k_offset = batch_offsets(batch_dims(g.k), ob);
  g.v_offset = batch_offsets(batch_dims(g.v), ob);
  g.d = d;
  g.dv = dv;
  return g;
}

std::unique_ptr<Kernel> make_attention(const ir::Node& node, int threads) {
  std::optional<Geometry> geometry = attention_geometry(node);
  if (!geometry) return nullptr;
  Geometry& g = *geometry;
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

std::unique_ptr<Kernel> make_attention_rows(const ir::Node& node, int threads) {
  if (!has_avx512()) return nullptr;
  std::optional<Geometry> g = attention_geometry(node);
  return g ? std::make_unique<AttentionRowsKernel>(std::move(*g), threads) : nullptr;
}

void add_attention_kernels(std::vector<KernelFactory>& table) {
  table.push_back({"kiln", "Attention", make_attention_rows, "kiln_attention_rows"});
  table.push_back({"kiln", "Attention", make_attention});
}

}  // namespace kiln::backends::cpu
