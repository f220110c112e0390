// \file The ONNX Attention op (opsets 23, 24) in the forms kiln.Attention computes, so a model
// written with the op runs the same fused kernel as one whose exporter spelled attention out
// in MatMul/Softmax (pattern_substitution):
//
//   4-D  Attention(Q, K, V, mask?)  -> kiln.Attention(Q, Transpose(K, [0,1,3,2]), V, mask?)
//   3-D  (q_num_heads = kv_num_heads = H): each of Q, K, V reshaped to [B, S, H, D] and
//        transposed to heads-first (K straight to [B, H, D, S]); the result transposed back
//        and reshaped to [B, S, H * Dv]
//
// Only the forms whose meaning is the same: no KV cache (past_key/value, present outputs),
// not causal, no softcap, no qk_matmul_output, a float32 additive mask (not boolean) whose
// last dim is the key count, and as many KV heads as Q heads (or one, which broadcasts). Other
// forms keep the ONNX op and its reference kernel. The Transposes it adds meet the exporter's
// own in transpose_folding.
#include <cmath>

#include "passes/graph_util.h"
#include "passes/pass.h"

namespace kiln::passes {

namespace {

bool float_of_rank(const ir::Value* v, int rank) {
  return v && v->type.is_tensor() && v->type.dtype == DType::Float && v->type.rank_known && v->type.rank() == rank;
}

ir::Value* transpose(ir::Graph& g, ir::Value* x, const std::vector<int64_t>& perm, const std::string& hint) {
  std::vector<ir::Dim> dims;
  for (int64_t p : perm) dims.push_back(x->type.dims[static_cast<size_t>(p)]);
  ir::Value* y = g.add_value(g.unique_name(hint), ir::TensorType(x->type.dtype, dims));
  g.add_node("Transpose", {x}, {y}, {{"perm", ir::Attribute::of_ints(perm)}}, g.unique_name(hint));
  return y;
}

// Reshape with ONNX's 0 (copy the input's dim) and -1 (the rest), so symbolic batch and
// sequence dims need no Shape ops.
ir::Value* reshape(ir::Graph& g, ir::Value* x, const std::vector<int64_t>& shape, std::vector<ir::Dim> dims,
                   const std::string& hint) {
  ir::Value* s = add_const(g, hint + "_shape", Tensor::from_vector<int64_t>({static_cast<int64_t>(shape.size())}, shape));
  ir::Value* y = g.add_value(g.unique_name(hint), ir::TensorType(x->type.dtype, std::move(dims)));
  g.add_node("Reshape", {x, s}, {y}, {}, g.unique_name(hint));
  return y;
}

ir::Dim times(const ir::Dim& a, const ir::Dim& b) {
  return a.is_static() && b.is_static() ? ir::Dim(a.value * b.value) : ir::Dim::unknown();
}

// The ONNX Attention node in a form kiln.Attention computes: nullptr when it is not.
class OnnxAttention : public Pass {
 public:
  std::string name() const override { return "onnx_attention"; }

  bool run(ir::Graph& g) override {
    bool changed = false;
    for (ir::Node* n : g.nodes()) {
      if (!n->domain().empty() || n->op_type() != "Attention" || !convertible(g, *n)) continue;
      ir::Value* y = n->output(0);
      ir::Value* out = n->input(0)->type.rank() == 4 ? rewrite_4d(g, *n) : rewrite_3d(g, *n);
      if (!out) continue;
      g.replace_all_uses(y, out);
      changed = true;
    }
    return changed;
  }

 private:
  static bool convertible(const ir::Graph& g, const ir::Node& n) {
    if (n.num_inputs() < 3 || n.num_inputs() > 7 || n.num_outputs() < 1 || !n.output(0)) return false;
    for (int i = 4; i < n.num_inputs(); ++i)
      if (n.input(i)) return false;  // past_key, past_value, nonpad_kv_seqlen
    for (int i = 1; i < n.num_outputs(); ++i)
      if (n.output(i) && (!n.output(i)->uses().empty() || is_graph_output(g, n.output(i)))) return false;
    if (n.attr_int("is_causal", 0) != 0 || n.attr_float("softcap", 0.f) != 0.f) return false;
    const int rank = n.input(0)->type.rank_known ? n.input(0)->type.rank() : 0;
    if (rank != 3 && rank != 4) return false;
    for (int i = 0; i < 3; ++i)
      if (!float_of_rank(n.input(i), rank)) return false;
    if (!float_of_rank(n.output(0), rank)) return false;
    const ir::Value* mask = n.num_inputs() > 3 ? n.input(3) : nullptr;
    if (mask) {
      if (!mask->type.is_tensor() || mask->type.dtype != DType::Float || !mask->type.rank_known ||
          mask->type.rank() < 1 || mask->type.rank() > 4)
        return false;
      const ir::Dim& last = mask->type.dims.back();
      const ir::Dim& keys = n.input(1)->type.dims[rank == 4 ? 2 : 1];
      if (!last.same_as(keys)) return false;  // a shorter mask pads with masked keys
    }
    return true;
  }

  // 1 / sqrt(head size) unless the scale attribute says otherwise; nullopt when the head size
  // is not known.
  static std::optional<float> scale(const ir::Node& n, const ir::Dim& head) {
    if (n.has_attr("scale")) return n.attr_float("scale", 1.f);
    if (!head.is_static() || head.value <= 0) return std::nullopt;
    return static_cast<float>(1.0 / std::sqrt(static_cast<double>(head.value)));
  }

  static ir::Value* attention(ir::Graph& g, const ir::Node& n, ir::Value* q, ir::Value* k_t, ir::Value* v,
                              ir::Value* mask, float s, std::vector<ir::Dim> out_dims) {
    std::vector<ir::Value*> ins{q, k_t, v};
    if (mask) ins.push_back(mask);
    ir::Value* y = g.add_value(g.unique_name(n.name() + "_kiln"), ir::TensorType(DType::Float, std::move(out_dims)));
    use_kiln_domain(g);
    g.add_node("Attention", ins, {y}, {{"scale", ir::Attribute::of_float(s)}}, g.unique_name(n.name() + "_kiln"),
               "kiln");
    return y;
  }

  static ir::Value* mask_of(const ir::Node& n) { return n.num_inputs() > 3 ? n.input(3) : nullptr; }

  static ir::Value* rewrite_4d(ir::Graph& g, const ir::Node& n) {
    ir::Value *q = n.input(0), *k = n.input(1), *v = n.input(2);
    const ir::Dim &hq = q->type.dims[1], &hkv = k->type.dims[1];
    if (!hq.same_as(hkv) && !(hkv.is_static() && hkv.value == 1)) return nullptr;
    if (!v->type.dims[1].same_as(hkv)) return nullptr;
    auto s = scale(n, q->type.dims[3]);
    if (!s) return nullptr;
    ir::Value* k_t = transpose(g, k, {0, 1, 3, 2}, n.name() + "_k_t");
    return attention(g, n, q, k_t, v, mask_of(n), *s, n.output(0)->type.dims);
  }

  static ir::Value* rewrite_3d(ir::Graph& g, const ir::Node& n) {
    const int64_t h = n.attr_int("q_num_heads", 0);
    if (h <= 0 || n.attr_int("kv_num_heads", 0) != h) return nullptr;
    ir::Value *q = n.input(0), *k = n.input(1), *v = n.input(2);
    auto head = [&](const ir::Value* x) -> std::optional<int64_t> {
      const ir::Dim& hidden = x->type.dims[2];
      if (!hidden.is_static() || hidden.value % h) return std::nullopt;
      return hidden.value / h;
    };
    auto dq = head(q), dk = head(k), dv = head(v);
    if (!dq || !dk || !dv || *dq != *dk) return nullptr;
    auto s = scale(n, ir::Dim(*dq));
    if (!s) return nullptr;
    // [B, S, H * D] -> [B, S, H, D] -> heads first.
    auto split_heads = [&](ir::Value* x, int64_t d, const std::vector<int64_t>& perm, const std::string& tag) {
      const auto& xd = x->type.dims;
      ir::Value* r = reshape(g, x, {0, 0, h, d}, {xd[0], xd[1], ir::Dim(h), ir::Dim(d)}, n.name() + "_" + tag + "_heads");
      return transpose(g, r, perm, n.name() + "_" + tag + "_t");
    };
    ir::Value* qh = split_heads(q, *dq, {0, 2, 1, 3}, "q");
    ir::Value* kt = split_heads(k, *dk, {0, 2, 3, 1}, "k");
    ir::Value* vh = split_heads(v, *dv, {0, 2, 1, 3}, "v");
    const auto& qd = q->type.dims;
    ir::Value* a = attention(g, n, qh, kt, vh, mask_of(n), *s, {qd[0], ir::Dim(h), qd[1], ir::Dim(*dv)});
    ir::Value* back = transpose(g, a, {0, 2, 1, 3}, n.name() + "_y_t");
    return reshape(g, back, {0, 0, h * *dv}, {qd[0], qd[1], times(ir::Dim(h), ir::Dim(*dv))}, n.name() + "_y");
  }
};

}  // namespace

std::unique_ptr<Pass> make_onnx_attention() { return std::make_unique<OnnxAttention>(); }

}  // namespace kiln::passes
