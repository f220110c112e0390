// kiln.Attention (formed by pattern substitution, src/passes/pattern_substitution.cpp):
//   Attention(Q, K_T, V, mask?) = softmax(Q · K_T * scale + mask) · V, softmax over the last
//       axis; Q [..., Sq, D], K_T [..., D, Sk] (keys already transposed, as in the MatMul it
//       replaces), V [..., Sk, Dv], additive mask broadcast to [..., Sq, Sk]; batch dims
//       broadcast like MatMul's. Float32.
//   q_perm, k_perm, v_perm (ints, optional): the operand is Transpose(input, perm); q_index,
//       k_index, v_index (int, optional): then its first axis taken at that index (Q, K or V
//       out of one packed tensor); out_perm: the output is Transpose(result, out_perm). The CPU
//       lowering folds the head transposes and gathers around a transformer's attention into
//       them (src/lower/fold_attention_layout.cpp).
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/core/attention_view.h"
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

namespace {

// Batch dims of a [..., a, b] type.
ir::TensorType batch_of(const ir::TensorType& t) {
  return ir::TensorType(t.dtype, std::vector<ir::Dim>(t.dims.begin(), t.dims.end() - 2));
}

// t's dims in the order `perm` (empty: as they are) picks them.
ir::TensorType permuted(const ir::TensorType& t, const std::vector<int64_t>& perm) {
  if (perm.empty()) return t;
  std::vector<ir::Dim> d;
  for (int64_t p : perm) d.push_back(t.dims[static_cast<size_t>(p)]);
  return ir::TensorType(t.dtype, std::move(d));
}

const char* const kInputPerms[3] = {"q_perm", "k_perm", "v_perm"};
const char* const kInputIndices[3] = {"q_index", "k_index", "v_index"};

// Input i's type as the operand the node reads (ops/core/attention_view.h's attention_operand).
ir::TensorType operand_type(InferContext& ctx, int i) {
  const ir::TensorType& t = ctx.input(i);
  ir::TensorType op = permuted(t, attention_perm(ctx.node(), kInputPerms[i], t.dims.size()));
  if (!ctx.node().has_attr(kInputIndices[i])) return op;
  const int64_t index = ctx.node().attr_int(kInputIndices[i], 0);
  if (op.rank() < 3 || index < 0 || (op.dims[0].is_static() && index >= op.dims[0].value))
    ctx.fail(std::string(kInputIndices[i]) + " " + std::to_string(index) + " does not select a matrix batch");
  op.dims.erase(op.dims.begin());
  return op;
}

void infer_attention(InferContext& ctx) {
  for (int i = 0; i < 3; ++i)
    if (ctx.input(i).dtype != DType::Float && ctx.input(i).dtype != DType::Undefined)
      ctx.fail("Attention computes in float32 only");
  if (!ctx.input(0).rank_known || !ctx.input(1).rank_known || !ctx.input(2).rank_known) {
    ctx.set_output(0, ir::TensorType::unranked(DType::Float));
    return;
  }
  ir::TensorType ops[3];
  for (int i = 0; i < 3; ++i) {
    if (ctx.input(i).rank() < 2) ctx.fail("Q, K_T and V must have rank >= 2");
    ops[i] = operand_type(ctx, i);
  }
  const ir::TensorType &q = ops[0], &k = ops[1], &v = ops[2];
  auto clash = [](const ir::Dim& a, const ir::Dim& b) { return a.is_static() && b.is_static() && a.value != b.value; };
  if (clash(q.dims[q.rank() - 1], k.dims[k.rank() - 2])) ctx.fail("Q's last dim must equal K_T's second-to-last");
  if (clash(k.dims[k.rank() - 1], v.dims[v.rank() - 2])) ctx.fail("K_T's last dim must equal V's second-to-last");
  ir::TensorType out = broadcast_types(ctx, {batch_of(q), batch_of(k), batch_of(v)}, DType::Float);
  if (out.rank_known) {
    out.dims.push_back(q.dims[q.rank() - 2]);
    out.dims.push_back(v.dims[v.rank() - 1]);
    out = permuted(out, attention_perm(ctx.node(), "out_perm", out.dims.size()));
  } else if (ctx.node().has_attr("out_perm")) {
    ctx.fail("out_perm needs the result's rank");
  }
  ctx.set_output(0, out);
}

void attention_kernel(KernelContext& ctx) {
  StridedView ops[3];
  for (int i = 0; i < 3; ++i) {
    const Tensor& t = ctx.input(i);
    if (t.dtype() != DType::Float || t.rank() < 2) ctx.fail("Attention takes float32 tensors of rank >= 2");
    ops[i] = attention_operand(ctx.node(), i, t.dims());
  }
  const StridedView &q = ops[0], &k = ops[1], &v = ops[2];
  const size_t rq = q.dims.size(), rk = k.dims.size(), rv = v.dims.size();
  const int64_t sq = q.dims[rq - 2], d = q.dims[rq - 1], sk = k.dims[rk - 1], dv = v.dims[rv - 1];
  if (k.dims[rk - 2] != d || v.dims[rv - 2] != sk) ctx.fail("Q, K_T, V inner dims do not match");
  auto batch = [](const StridedView& t) { return std::vector<int64_t>(t.dims.begin(), t.dims.end() - 2); };
  std::vector<int64_t> ob = broadcast_dims({batch(q), batch(k), batch(v)}, ctx.node());
  int64_t mq = 1, mk = 1;
  const Tensor* mask = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  StridedView m;
  if (mask) {
    if (mask->dtype() != DType::Float) ctx.fail("the mask must be float32");
    std::vector<int64_t> mdims = mask->dims();
    while (mdims.size() < ob.size() + 2) mdims.insert(mdims.begin(), 1);
    if (mdims.size() > ob.size() + 2) ctx.fail("the mask has a higher rank than the scores");
    mq = mdims[mdims.size() - 2];
    mk = mdims[mdims.size() - 1];
    if ((mq != 1 && mq != sq) || (mk != 1 && mk != sk)) ctx.fail("the mask does not broadcast to the scores");
    m = transposed_view(mdims, {});
    ob = broadcast_dims({ob, batch(m)}, ctx.node());
  }
  std::vector<int64_t> result = ob;
  result.push_back(sq);
  result.push_back(dv);
  const std::vector<int64_t> out_perm = attention_perm(ctx.node(), "out_perm", result.size());
  std::vector<int64_t> odims = result;
  for (size_t i = 0; i < out_perm.size(); ++i) odims[i] = result[static_cast<size_t>(out_perm[i])];
  Tensor& out = ctx.make_output(0, DType::Float, odims);
  const StridedView o = untransposed_view(odims, out_perm);
  const float scale = ctx.node().attr_float("scale", 1.f);
  const std::vector<int64_t> qo = batch_element_offsets(ob, q), ko = batch_element_offsets(ob, k),
                             vo = batch_element_offsets(ob, v), oo = batch_element_offsets(ob, o),
                             mo = mask ? batch_element_offsets(ob, m) : std::vector<int64_t>(qo.size(), 0);
  const float *Q = ctx.input(0).data<float>(), *K = ctx.input(1).data<float>(), *V = ctx.input(2).data<float>();
  const float* M = mask ? mask->data<float>() : nullptr;
  float* O = out.data<float>();
  const int64_t qr = q.strides[rq - 2], qc = q.strides[rq - 1], kr = k.strides[rk - 2], kc = k.strides[rk - 1],
                vr = v.strides[rv - 2], vc = v.strides[rv - 1], orow = o.strides[o.dims.size() - 2],
                ocol = o.strides[o.dims.size() - 1];
  std::vector<float> s(static_cast<size_t>(sk)), acc(static_cast<size_t>(dv));
  for (size_t b = 0; b < qo.size(); ++b) {
    const float *qm = Q + qo[b], *km = K + ko[b], *vm = V + vo[b];
    for (int64_t i = 0; i < sq; ++i) {
      std::fill(s.begin(), s.end(), 0.f);
      for (int64_t e = 0; e < d; ++e) {
        const float a = qm[i * qr + e * qc];
        const float* kre = km + e * kr;
        for (int64_t j = 0; j < sk; ++j) s[j] += a * kre[j * kc];
      }
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < sk; ++j) {
        s[j] *= scale;
        if (M) s[j] += M[mo[b] + (mq == 1 ? 0 : i * mk) + (mk == 1 ? 0 : j)];
        mx = std::max(mx, s[j]);
      }
      float sum = 0;
      for (int64_t j = 0; j < sk; ++j) sum += (s[j] = std::exp(s[j] - mx));
      std::fill(acc.begin(), acc.end(), 0.f);
      for (int64_t j = 0; j < sk; ++j) {
        const float p = s[j] / sum;
        const float* vrj = vm + j * vr;
        for (int64_t e = 0; e < dv; ++e) acc[e] += p * vrj[e * vc];
      }
      float* od = O + oo[b] + i * orow;
      for (int64_t e = 0; e < dv; ++e) od[e * ocol] = acc[e];
    }
  }
}

}  // namespace

KILN_REGISTER_OPS(kiln_attention) {
  reg.add({.name = "Attention", .domain = "kiln", .min_inputs = 3, .max_inputs = 4, .pattern = PatternKind::Opaque,
           .infer = infer_attention, .kernel = attention_kernel});
}

}  // namespace kiln::ops
