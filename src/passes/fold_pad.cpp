// \file Pad folding: a constant-mode Pad with zero fill of the spatial dims only, whose one reader
// is a Conv (directly, or through one Transpose that only moves the dims), becomes the Conv's
// own padding, so no padded copy of the activation is made:
//
//   Conv(Pad(x, p))                   ->  Conv(x),               conv pads += p
//   Conv(Transpose(Pad(x, p), perm))  ->  Conv(Transpose(x, perm)), conv pads += p permuted
//
// The second form is a channels-last Pad in front of a channels-first Conv (TensorFlow's
// ZeroPadding2D before a VALID conv, imported with a layout Transpose). Convs with SAME auto_pad
// keep their Pad (the padding they derive would change with the input).
//
// An AveragePool reading a zero Pad averages the padded zeros with the rest, which is the pool's
// own padding counted in the divisor:
//
//   AveragePool(Pad(x, p))            ->  AveragePool(x),        pads += p, count_include_pad = 1
//
// (PyTorch exports avg_pool2d's count_include_pad padding that way: inception_v3's branch pools.)
// Only where the pool counts its own padding already or has none, and without ceil_mode, whose
// last window may run past the padded input.
#include <algorithm>

#include "passes/graph_util.h"
#include "passes/pass.h"

namespace kiln::passes {

namespace {

// The Pad's per-dim (before, after) amounts for a rank-r input, or nullopt when it is not a
// zero-fill constant pad with constant, non-negative amounts.
std::optional<std::vector<int64_t>> zero_pads(const ir::Node& pad, int r) {
  if (pad.attr_string("mode", "constant") != "constant") return std::nullopt;
  std::vector<int64_t> p;
  if (pad.owner()->opset() < 11) {
    p = pad.attr_ints("pads");
    if (pad.attr_float("value", 0.0f) != 0.0f) return std::nullopt;
  } else {
    const Tensor* t = const_of(pad.input(1));
    if (!t || !dtype_is_integer(t->dtype())) return std::nullopt;
    p = t->to_int64_vector();
    if (pad.has_input(2)) {
      const Tensor* v = const_of(pad.input(2));
      if (!v || v->numel() != 1 || v->as_double(0) != 0) return std::nullopt;
    }
    if (pad.has_input(3)) {  // axes (opset 18): amounts for those dims only
      const Tensor* a = const_of(pad.input(3));
      if (!a) return std::nullopt;
      const std::vector<int64_t> axes = a->to_int64_vector();
      if (p.size() != 2 * axes.size()) return std::nullopt;
      std::vector<int64_t> full(2 * r, 0);
      for (size_t i = 0; i < axes.size(); ++i) {
        const int64_t ax = axes[i] < 0 ? axes[i] + r : axes[i];
        if (ax < 0 || ax >= r) return std::nullopt;
        full[ax] = p[i];
        full[ax + r] = p[i + axes.size()];
      }
      p = full;
    }
  }
  if (static_cast<int>(p.size()) != 2 * r) return std::nullopt;
  if (std::any_of(p.begin(), p.end(), [](int64_t v) { return v < 0; })) return std::nullopt;
  return p;
}

// The node's spatial pads (explicit, or none under VALID) grown by the Pad's `p`, whose dim
// perm[j] is the node's input dim j; nullopt where the Pad touches the batch or channel dims or
// the node's pads are malformed.
std::optional<std::vector<int64_t>> grown_pads(const ir::Node& n, const std::vector<int64_t>& p,
                                               const std::vector<int64_t>& perm) {
  const int r = static_cast<int>(perm.size()), nsp = r - 2;
  std::vector<int64_t> pads = n.attr_ints("pads", std::vector<int64_t>(2 * nsp, 0));
  if (n.attr_string("auto_pad", "NOTSET") == "VALID") pads.assign(2 * nsp, 0);
  if (static_cast<int>(pads.size()) != 2 * nsp) return std::nullopt;
  for (int j = 0; j < 2; ++j)
    if (p[perm[j]] != 0 || p[perm[j] + r] != 0) return std::nullopt;
  for (int i = 0; i < nsp; ++i) {
    pads[i] += p[perm[2 + i]];
    pads[i + nsp] += p[perm[2 + i] + r];
  }
  return pads;
}

std::vector<int64_t> identity_perm(int r) {
  std::vector<int64_t> perm(r);
  for (int i = 0; i < r; ++i) perm[i] = i;
  return perm;
}

class FoldPad : public Pass {
 public:
  std::string name() const override { return "fold_pad"; }
  bool run(ir::Graph& g) override {
    bool changed = false;
    for (ir::Node* n : g.nodes()) changed = (fold(g, n) || fold_into_average_pool(g, n)) || changed;
    return changed;
  }

 private:
  static bool fold_into_average_pool(ir::Graph& g, ir::Node* pool) {
    if (!pool->domain().empty() || pool->op_type() != "AveragePool" || pool->owner()->opset() < 7) return false;
    const std::string ap = pool->attr_string("auto_pad", "NOTSET");
    if ((ap != "NOTSET" && ap != "VALID") || pool->attr_int("ceil_mode", 0) != 0) return false;
    ir::Value* in = pool->input(0);
    if (!in || !in->type.rank_known || in->type.rank() < 3 || !single_use(g, in)) return false;
    ir::Node* pad = in->producer();
    if (!pad || !pad->domain().empty() || pad->op_type() != "Pad" || !pad->input(0)) return false;
    const int r = in->type.rank();
    const auto p = zero_pads(*pad, r);
    if (!p) return false;
    const std::vector<int64_t> own = pool->attr_ints("pads", {});
    const bool own_padding = ap == "NOTSET" && std::any_of(own.begin(), own.end(), [](int64_t v) { return v != 0; });
    if (own_padding && pool->attr_int("count_include_pad", 0) == 0) return false;
    const auto pads = grown_pads(*pool, *p, identity_perm(r));
    if (!pads) return false;
    pool->attrs["pads"] = ir::Attribute::of_ints(*pads);
    pool->attrs["count_include_pad"] = ir::Attribute::of_int(1);
    pool->attrs.erase("auto_pad");
    pool->set_input(0, pad->input(0));
    return true;
  }

  static bool fold(ir::Graph& g, ir::Node* conv) {
    if (!conv->domain().empty() || conv->op_type() != "Conv") return false;
    const std::string ap = conv->attr_string("auto_pad", "NOTSET");
    if (ap != "NOTSET" && ap != "VALID") return false;
    ir::Value* in = conv->input(0);
    if (!in || !in->type.rank_known || in->type.rank() < 3 || !single_use(g, in)) return false;
    const int r = in->type.rank();
    ir::Node* t = in->producer();
    std::vector<int64_t> perm = identity_perm(r);
    ir::Node* pad = t;
    if (t && t->domain().empty() && t->op_type() == "Transpose") {
      perm = t->attr_ints("perm");
      if (static_cast<int>(perm.size()) != r) return false;
      if (!t->input(0) || !single_use(g, t->input(0))) return false;
      pad = t->input(0)->producer();
    } else {
      t = nullptr;
    }
    if (!pad || !pad->domain().empty() || pad->op_type() != "Pad" || !pad->input(0)) return false;
    const auto p = zero_pads(*pad, r);
    if (!p) return false;
    // Conv input dim j is the Pad's dim perm[j].
    const auto pads = grown_pads(*conv, *p, perm);
    if (!pads) return false;
    ir::Value* x = pad->input(0);
    if (t) {
      ir::Value* moved = g.add_value(g.unique_name(x->name() + "_unpadded"));
      g.add_node("Transpose", {x}, {moved}, {{"perm", ir::Attribute::of_ints(perm)}}, g.unique_name(t->name()));
      x = moved;
    }
    conv->attrs["pads"] = ir::Attribute::of_ints(*pads);
    conv->attrs.erase("auto_pad");
    conv->set_input(0, x);
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> make_fold_pad() { return std::make_unique<FoldPad>(); }

}  // namespace kiln::passes
