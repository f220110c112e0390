// kiln.Attention, float32: softmax(Q · K_T * scale + mask) · V (src/ops/kiln_fused.cpp), two
// ways. kiln_attention_rows (first, with AVX-512): the team splits the score rows of all heads;
// a thread takes a few rows of one head at a time through both products and the softmax
// between them, its scores never leaving L1, with kiln's own register-tiled loops; the kernel
// threads only through parallel_for, so it runs in the held team like the kernels around it
// (a transformer's run then starts no OpenMP region). "kiln" (the other): two batched oneDNN
// matmuls around one fused pass per score row (scale, mask, softmax, in place), all heads'
// scores in one per-thread buffer (BERT-base: 12 x 128 x 128 floats, 768 KiB) so each matmul
// is a single primitive call that oneDNN threads over batch and rows.
//
// Both read their operands through the node's permutations (ops/core/attention_view.h): Q, V
// and the output in rows of any stride (a head of a [B, S, H, D] tensor), the keys as K_T or
// as K itself ([Sk, D] rows, which kiln_attention_rows copies into K_T once per head and thread).
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
#include "backends/cpu/strided_copy.h"
#include "ops/core/attention_view.h"

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
  // Q, K_T, V, the output: all of one rank (batch dims padded with 1s), strides in elements.
  ops::StridedView q, k, v, out;
  memory::dims scores;                // the scores' dims (dense)
  int64_t rows = 0, sk = 0;           // score rows (all batches) and their length
  int64_t sq = 0, mq = 1, mk = 1;     // Sq and the mask's last two extents
  // Per score batch: the element offsets of its mask block, of the Q, K_T and V matrices it
  // reads (broadcast) and of the output matrix it writes.
  std::vector<int64_t> mask_offset, q_offset, k_offset, v_offset, out_offset;
  int64_t d = 0, dv = 0;
  // Row strides of Q, V and the output (their columns are contiguous for kiln_attention_rows);
  // K_T's strides over D and over Sk.
  int64_t ldq = 0, ldv = 0, ldo = 0, kd = 0, ks = 0;
  float scale = 1.f;
  bool mask = false;
  // Whether the matrices are as kiln_attention_rows reads them: rows of contiguous columns, the
  // keys' either way.
  bool rows_layout() const {
    return ops::reads_as_rows(q, false) && ops::reads_as_rows(k, true) && ops::reads_as_rows(v, false) &&
           ops::reads_as_rows(out, false);
  }
};

memory::desc strided(const ops::StridedView& v) {
  return memory::desc(memory::dims(v.dims.begin(), v.dims.end()), dt::f32,
                      memory::dims(v.strides.begin(), v.strides.end()));
}

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
  const float* m = mask + g.mask_offset[r / g.sq] + (g.mq == 1 ? 0 : r % g.sq * g.mk);
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
    // Keys given as K ([Sk, D] rows, ks > 1): a thread copies each batch's K_T into its buffer
    // before its first unit of that batch.
    const bool copy_keys = g.ks != 1;
    parallel_for(units, team, [&](int64_t u0, int64_t u1) {
      const size_t score_floats = static_cast<size_t>(kAttentionRows * g.sk + 15) / 16 * 16;
      float* scores = static_cast<float*>(
          dnnl_util::scratch((score_floats + (copy_keys ? static_cast<size_t>(g.d * g.sk) : 0)) * sizeof(float)));
      float* keys = scores + score_floats;
      int64_t keys_of = -1;
      for (int64_t u = u0; u < u1; ++u) {
        const int64_t b = u / per_batch, i0 = u % per_batch * kAttentionRows;
        const int rows = static_cast<int>(std::min<int64_t>(kAttentionRows, g.sq - i0));
        const float* kt = k + g.k_offset[b];
        if (copy_keys) {
          if (keys_of != g.k_offset[b]) {
            transpose_floats(kt, keys, g.sk, g.d, g.ks, g.sk);
            keys_of = g.k_offset[b];
          }
          kt = keys;
        }
        rows_times_any(rows, q + g.q_offset[b] + i0 * g.ldq, g.ldq, g.d, kt, copy_keys ? g.sk : g.kd, g.sk, scores,
                       g.sk);
        for (int r = 0; r < rows; ++r) softmax_score_row(g, mask, b * g.sq + i0 + r, scores + r * g.sk);
        rows_times_any(rows, scores, g.sk, g.sk, v + g.v_offset[b], g.ldv, g.dv, out + g.out_offset[b] + i0 * g.ldo,
                       g.ldo);
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
    auto in = [&](int i, const ops::StridedView& v) {
      return memory(strided(v), eng, const_cast<float*>(inputs[i]->data<float>()) + v.offset);
    };
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
                    {DNNL_ARG_DST, memory(strided(g_.out), eng, outputs[0]->raw())},
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

// v with batch dims of 1 in front, to `rank` dims.
ops::StridedView padded(ops::StridedView v, size_t rank) {
  const size_t extra = rank - v.dims.size();
  const int64_t outer = v.dims.empty() ? 1 : v.dims[0] * v.strides[0];
  v.dims.insert(v.dims.begin(), extra, 1);
  v.strides.insert(v.strides.begin(), extra, outer);
  return v;
}

std::optional<Geometry> attention_geometry(const ir::Node& node) {
  if (node.num_inputs() < 3 || node.num_outputs() != 1) return std::nullopt;
  for (int i = 0; i < 3; ++i)
    if (!dnnl_util::static_float(node.input(i))) return std::nullopt;
  const ir::Value* mask = node.num_inputs() > 3 ? node.input(3) : nullptr;
  if ((mask && !dnnl_util::static_float(mask)) || !dnnl_util::static_float(node.output(0))) return std::nullopt;
  ops::StridedView in[3];
  for (int i = 0; i < 3; ++i) {
    const std::vector<int64_t> dims = node.input(i)->type.static_dims();
    if (dims.size() < 2) return std::nullopt;
    in[i] = ops::attention_operand(node, i, dims);
    if (in[i].dims.size() < 2) return std::nullopt;
  }
  const std::vector<int64_t> &qd = in[0].dims, &kd = in[1].dims, &vd = in[2].dims;
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
  std::vector<int64_t> ob = sb, mb, md;
  if (!broadcast(ob, batch_of(vd))) return std::nullopt;
  if (mask) {
    md = mask->type.static_dims();
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
  std::vector<int64_t> result = ob;
  result.push_back(g.sq);
  result.push_back(dv);
  const std::vector<int64_t> out_perm = ops::attention_perm(node, "out_perm", result.size());
  const std::vector<int64_t> od = node.output(0)->type.static_dims();
  const ops::StridedView out = ops::untransposed_view(od, out_perm);
  if (out.dims != result) return std::nullopt;
  if (ob.size() + 2 > DNNL_MAX_NDIMS) return std::nullopt;

  g.q = padded(in[0], ob.size() + 2);
  g.k = padded(in[1], ob.size() + 2);
  g.v = padded(in[2], ob.size() + 2);
  g.out = out;
  g.scores = ob;
  g.scores.push_back(g.sq);
  g.scores.push_back(g.sk);
  const int64_t batches = std::accumulate(ob.begin(), ob.end(), int64_t{1}, std::multiplies<>());
  g.rows = batches * g.sq;
  g.scale = node.attr_float("scale", 1.f);
  if (g.mask) g.mask_offset = ops::batch_element_offsets(ob, ops::transposed_view(md, {}));
  g.q_offset = ops::batch_element_offsets(ob, g.q);
  g.k_offset = ops::batch_element_offsets(ob, g.k);
  g.v_offset = ops::batch_element_offsets(ob, g.v);
  g.out_offset = ops::batch_element_offsets(ob, g.out);
  const size_t r = ob.size() + 2;
  g.ldq = g.q.strides[r - 2];
  g.kd = g.k.strides[r - 2];
  g.ks = g.k.strides[r - 1];
  g.ldv = g.v.strides[r - 2];
  g.ldo = g.out.strides[r - 2];
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
    dnnl::matmul::primitive_desc qk(dnnl::matmul::desc(strided(g.q), strided(g.k), plain(g.scores)), attr,
                                    dnnl_util::engine());
    dnnl::matmul::primitive_desc pv(dnnl::matmul::desc(plain(g.scores), strided(g.v), strided(g.out)), attr,
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
  return g && g->rows_layout() ? std::make_unique<AttentionRowsKernel>(std::move(*g), threads) : nullptr;
}

void add_attention_kernels(std::vector<KernelFactory>& table) {
  table.push_back({"kiln", "Attention", make_attention_rows, "kiln_attention_rows"});
  table.push_back({"kiln", "Attention", make_attention});
}

}  // namespace kiln::backends::cpu
