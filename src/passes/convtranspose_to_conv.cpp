// \file A transposed convolution whose kernel equals its stride (UNet's 2x2 stride-2 up-convs)
// writes every output pixel from exactly one input pixel: it is a 1x1 Conv to OC·k·k channels
// followed by DepthToSpace in CRD order, which moves channel (oc·k + i)·k + j of input pixel
// (h, w) to channel oc of output pixel (h·k + i, w·k + j):
//
//   ConvTranspose(x, W[C, OC, k, k], B, strides k)  ->  DepthToSpace(Conv(x, W', B'), k, CRD)
//   W'[(oc·k + i)·k + j, c, 0, 0] = W[c, oc, i, j],   B'[(oc·k + i)·k + j] = B[oc]
//
// The 1x1 conv is a plain matrix product the backends run at full speed, where a generic
// deconvolution is not; both ops are standard ONNX.
#include "passes/graph_util.h"
#include "passes/pass.h"

namespace kiln::passes {

namespace {

bool all_equal(const std::vector<int64_t>& v, int64_t x) {
  for (int64_t e : v)
    if (e != x) return false;
  return true;
}

class ConvTransposeToConv : public Pass {
 public:
  std::string name() const override { return "convtranspose_to_conv"; }
  bool run(ir::Graph& g) override {
    if (g.opset() < 11) return false;  // DepthToSpace's CRD mode
    bool changed = false;
    for (ir::Node* n : g.nodes()) changed = rewrite(g, n) || changed;
    return changed;
  }

 private:
  static bool rewrite(ir::Graph& g, ir::Node* n) {
    if (!n->domain().empty() || n->op_type() != "ConvTranspose" || n->num_outputs() != 1) return false;
    const ir::Value* x = n->input(0);
    const Tensor* w = const_of(n->input(1));
    ir::Value* y = n->output(0);
    if (!x || !w || w->dtype() != DType::Float || w->rank() != 4 || !y || !y->type.rank_known || y->type.rank() != 4)
      return false;
    if (n->attr_int("group", 1) != 1 || n->has_attr("output_shape")) return false;
    const std::string ap = n->attr_string("auto_pad", "NOTSET");
    if (ap != "NOTSET" && ap != "VALID") return false;
    const int64_t C = w->dim(0), OC = w->dim(1), k = w->dim(2);
    if (w->dim(3) != k || k < 2) return false;
    if (n->attr_ints("strides", {1, 1}) != std::vector<int64_t>{k, k}) return false;
    if (!all_equal(n->attr_ints("dilations", {1, 1}), 1) || !all_equal(n->attr_ints("pads", {0, 0, 0, 0}), 0) ||
        !all_equal(n->attr_ints("output_padding", {0, 0}), 0))
      return false;
    const auto ks = n->attr_ints("kernel_shape", {k, k});
    if (ks != std::vector<int64_t>{k, k}) return false;
    const Tensor* b = n->has_input(2) ? const_of(n->input(2)) : nullptr;
    if (n->has_input(2) && (!b || b->dtype() != DType::Float || b->numel() != OC)) return false;

    const int64_t kk = k * k;
    Tensor w2(DType::Float, {OC * kk, C, 1, 1});
    const float* src = w->data<float>();
    float* dst = w2.data<float>();
    for (int64_t c = 0; c < C; ++c)
      for (int64_t oc = 0; oc < OC; ++oc)
        for (int64_t ij = 0; ij < kk; ++ij) dst[(oc * kk + ij) * C + c] = src[(c * OC + oc) * kk + ij];
    std::vector<ir::Value*> ins{n->input(0), add_const(g, n->name() + "_w1x1", std::move(w2))};
    if (b) {
      Tensor b2(DType::Float, {OC * kk});
      for (int64_t oc = 0; oc < OC; ++oc)
        for (int64_t ij = 0; ij < kk; ++ij) b2.data<float>()[oc * kk + ij] = b->data<float>()[oc];
      ins.push_back(add_const(g, n->name() + "_b1x1", std::move(b2)));
    }
    ir::Value* deep = g.add_value(g.unique_name(y->name() + "_deep"));
    g.add_node("Conv", ins, {deep}, {{"kernel_shape", ir::Attribute::of_ints({1, 1})}}, g.unique_name(n->name() + "_1x1"));
    ir::Value* out = g.add_value(g.unique_name(y->name() + "_d2s"), y->type);
    g.add_node("DepthToSpace", {deep}, {out},
               {{"blocksize", ir::Attribute::of_int(k)}, {"mode", ir::Attribute::of_string("CRD")}},
               g.unique_name(n->name() + "_d2s"));
    g.replace_all_uses(y, out);
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> make_convtranspose_to_conv() { return std::make_unique<ConvTransposeToConv>(); }

}  // namespace kiln::passes
