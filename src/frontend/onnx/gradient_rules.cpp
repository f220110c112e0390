// Each rule reads the forward node's inputs and output (their types are inferred) and dy, and
// emits the gradients of the inputs it is asked for. Operands NumPy broadcasting stretched get
// their gradient summed back to their own shape (GradientBuilder::sum_to).
#include "frontend/onnx/gradient_rules.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <string>

namespace kiln::onnx_fe {

namespace {

ir::Value* in(const GradientStep& s, int i) { return s.node.input(i); }
ir::Value* y(const GradientStep& s) { return s.node.output(0); }
const ir::TensorType& y_type(const GradientStep& s) { return s.node.output(0)->type; }
// A scalar constant of y's dtype.
ir::Value* k(const GradientStep& s, double v) { return s.b.scalar(v, y_type(s).dtype); }
ir::Value* op(const GradientStep& s, const std::string& type, std::vector<ir::Value*> ins) {
  return s.b.op(type, std::move(ins));
}

// ---------------------------------------------------------------- elementwise

void d_add(GradientStep& s) {
  for (int i = 0; i < 2; ++i)
    if (s.wanted[i]) s.dx[i] = s.b.sum_to(s.dy, y_type(s), in(s, i));
}

void d_sub(GradientStep& s) {
  if (s.wanted[0]) s.dx[0] = s.b.sum_to(s.dy, y_type(s), in(s, 0));
  if (s.wanted[1]) s.dx[1] = op(s, "Neg", {s.b.sum_to(s.dy, y_type(s), in(s, 1))});
}

void d_mul(GradientStep& s) {
  for (int i = 0; i < 2; ++i)
    if (s.wanted[i]) s.dx[i] = s.b.sum_to(op(s, "Mul", {s.dy, in(s, 1 - i)}), y_type(s), in(s, i));
}

// d(a/b)/da = 1/b, d(a/b)/db = -a/b^2 = -y/b.
void d_div(GradientStep& s) {
  if (s.wanted[0]) s.dx[0] = s.b.sum_to(op(s, "Div", {s.dy, in(s, 1)}), y_type(s), in(s, 0));
  if (s.wanted[1])
    s.dx[1] = s.b.sum_to(op(s, "Neg", {op(s, "Div", {op(s, "Mul", {s.dy, y(s)}), in(s, 1)})}), y_type(s), in(s, 1));
}

// d(a^b)/da = b a^(b-1), d(a^b)/db = a^b ln a. The exponent may have another dtype than the
// base (opset 12 on): it is cast to the base's for the arithmetic, and its gradient back.
void d_pow(GradientStep& s) {
  ir::Value* a = in(s, 0);
  ir::Value* b = in(s, 1);
  const DType dt = y_type(s).dtype;
  if (s.wanted[0]) {
    ir::Value* bf = b->type.dtype == dt ? b : s.b.cast(b, dt);
    ir::Value* slope = op(s, "Mul", {bf, op(s, "Pow", {a, op(s, "Sub", {bf, k(s, 1)})})});
    s.dx[0] = s.b.sum_to(op(s, "Mul", {s.dy, slope}), y_type(s), a);
  }
  if (s.wanted[1]) {
    ir::Value* db = s.b.sum_to(op(s, "Mul", {s.dy, op(s, "Mul", {y(s), op(s, "Log", {a})})}), y_type(s), b);
    s.dx[1] = b->type.dtype == dt ? db : s.b.cast(db, b->type.dtype);
  }
}

void d_neg(GradientStep& s) { s.dx[0] = op(s, "Neg", {s.dy}); }
void d_identity(GradientStep& s) { s.dx[0] = s.dy; }

// The gradient passes where x > 0 (at 0 Relu's subgradient 0 is taken, as frameworks do).
void d_relu(GradientStep& s) {
  ir::Value* positive = op(s, "Greater", {in(s, 0), k(s, 0)});
  s.dx[0] = op(s, "Where", {positive, s.dy, k(s, 0)});
}

void d_sigmoid(GradientStep& s) {
  s.dx[0] = op(s, "Mul", {s.dy, op(s, "Mul", {y(s), op(s, "Sub", {k(s, 1), y(s)})})});
}

void d_tanh(GradientStep& s) { s.dx[0] = op(s, "Mul", {s.dy, op(s, "Sub", {k(s, 1), op(s, "Mul", {y(s), y(s)})})}); }
void d_exp(GradientStep& s) { s.dx[0] = op(s, "Mul", {s.dy, y(s)}); }
void d_log(GradientStep& s) { s.dx[0] = op(s, "Div", {s.dy, in(s, 0)}); }
void d_sqrt(GradientStep& s) { s.dx[0] = op(s, "Div", {op(s, "Mul", {s.dy, k(s, 0.5)}), y(s)}); }

// A cast between float types: the gradient goes back to the input's dtype.
void d_cast(GradientStep& s) {
  const DType from = in(s, 0)->type.dtype;
  if (!dtype_is_float(from)) s.b.fail("its input is " + in(s, 0)->type.str() + ", not a floating-point tensor");
  s.dx[0] = from == y_type(s).dtype ? s.dy : s.b.cast(s.dy, from);
}

// ---------------------------------------------------------------- shapes

// Reshape, Flatten, Squeeze, Unsqueeze: the same elements in another shape.
void d_view(GradientStep& s) { s.dx[0] = s.b.reshape_like(s.dy, in(s, 0)); }

void d_expand(GradientStep& s) { s.dx[0] = s.b.sum_to(s.dy, y_type(s), in(s, 0)); }

void d_transpose(GradientStep& s) {
  if (!s.node.has_attr("perm")) {  // the reversal undoes itself
    s.dx[0] = op(s, "Transpose", {s.dy});
    return;
  }
  const std::vector<int64_t> perm = s.node.attr_ints("perm");
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] < 0 || perm[i] >= static_cast<int64_t>(perm.size())) s.b.fail("perm is not a permutation");
    inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  }
  s.dx[0] = s.b.op("Transpose", {s.dy}, {{"perm", ir::Attribute::of_ints(inverse)}});
}

// ---------------------------------------------------------------- MatMul

// Y = A·B over broadcast batch axes: dA = dy·Bᵀ and dB = Aᵀ·dy, each summed over the batch
// axes its operand was broadcast along. A 1-D operand is promoted as MatMul does ([K] is [1,K]
// on the left, [K,1] on the right) and dy gets back the axis the promotion dropped from Y.
void d_matmul(GradientStep& s) {
  ir::Value* a = in(s, 0);
  ir::Value* b = in(s, 1);
  const ir::TensorType& at = a->type;
  const ir::TensorType& bt = b->type;
  const ir::TensorType& yt = y_type(s);
  if (!at.rank_known || !bt.rank_known || !yt.rank_known || at.rank() == 0 || bt.rank() == 0)
    s.b.fail("the gradient needs the ranks of its inputs (" + at.str() + ", " + bt.str() + "), at least 1");
  const bool a1 = at.rank() == 1, b1 = bt.rank() == 1;
  const int64_t ry = yt.rank();
  std::vector<int64_t> dropped;
  if (a1 && b1) dropped = {0, 1};
  else if (a1) dropped = {ry - 1};
  else if (b1) dropped = {ry};
  ir::TensorType y2 = yt;
  for (int64_t axis : dropped) y2.dims.insert(y2.dims.begin() + axis, ir::Dim(1));
  ir::Value* g = dropped.empty() ? s.dy : s.b.unsqueeze(s.dy, dropped);
  ir::Value* a2 = a1 ? s.b.unsqueeze(a, {0}) : a;
  ir::Value* b2 = b1 ? s.b.unsqueeze(b, {1}) : b;
  const ir::TensorType a2t = a1 ? ir::TensorType(at.dtype, {1, at.dims[0]}) : at;
  const ir::TensorType b2t = b1 ? ir::TensorType(bt.dtype, {bt.dims[0], 1}) : bt;
  auto swap_last = [&](ir::Value* v, int rank) {
    std::vector<int64_t> perm(static_cast<size_t>(rank));
    std::iota(perm.begin(), perm.end(), 0);
    std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
    return s.b.op("Transpose", {v}, {{"perm", ir::Attribute::of_ints(perm)}});
  };
  if (s.wanted[0]) {
    ir::Value* da = op(s, "MatMul", {g, swap_last(b2, b2t.rank())});
    ir::TensorType dat = y2;  // [batch..., M, K]
    dat.dims.back() = a2t.dims.back();
    s.dx[0] = s.b.sum_to(da, dat, a);
  }
  if (s.wanted[1]) {
    ir::Value* db = op(s, "MatMul", {swap_last(a2, a2t.rank()), g});
    ir::TensorType dbt = y2;  // [batch..., K, N]
    dbt.dims[dbt.dims.size() - 2] = b2t.dims[b2t.dims.size() - 2];
    if (b1) {
      db = s.b.squeeze(db, {dbt.rank() - 1});
      dbt.dims.pop_back();
    }
    s.dx[1] = s.b.sum_to(db, dbt, b);
  }
}

// ---------------------------------------------------------------- reductions

// dy spread back over the reduced axes (Expand to x's shape; with keepdims = 0 the reduced
// axes are put back as 1s first), divided by the count of elements each output averaged for
// ReduceMean.
void d_reduce(GradientStep& s, bool mean) {
  const ir::Node& n = s.node;
  ir::Value* x = in(s, 0);
  const int64_t axes_input_since = n.op_type() == "ReduceSum" ? 13 : 18;
  std::optional<std::vector<int64_t>> axes;  // nullopt: all of them
  if (s.b.opset() >= axes_input_since) {
    if (n.has_input(1)) {
      const kiln::Tensor* t = s.values.known(n.input(1));
      if (!t) s.b.fail("its axes '" + n.input(1)->name() + "' are only known at run time");
      if (t->numel() > 0) axes = t->to_int64_vector();
    }
    if (!axes && n.attr_int("noop_with_empty_axes", 0) != 0) {
      s.dx[0] = s.dy;
      return;
    }
  } else if (n.has_attr("axes") && !n.attr_ints("axes").empty()) {
    axes = n.attr_ints("axes");
  }
  ir::Value* g = s.dy;
  if (axes && n.attr_int("keepdims", 1) == 0) {
    if (!x->type.rank_known) s.b.fail("the gradient needs the rank of its input, " + x->type.str());
    const int64_t rank = x->type.rank();
    std::vector<int64_t> put_back;
    for (int64_t a : *axes) {
      if (a < -rank || a >= rank) s.b.fail("axis " + std::to_string(a) + " is out of range for " + x->type.str());
      put_back.push_back(a < 0 ? a + rank : a);
    }
    std::sort(put_back.begin(), put_back.end());
    put_back.erase(std::unique(put_back.begin(), put_back.end()), put_back.end());
    g = s.b.unsqueeze(g, put_back);
  }
  ir::Value* dx = op(s, "Expand", {g, op(s, "Shape", {x})});
  if (mean) {
    const DType dt = y_type(s).dtype;
    const std::optional<int64_t> nx = x->type.rank_known ? x->type.static_numel() : std::nullopt;
    const std::optional<int64_t> ny = y_type(s).rank_known ? y_type(s).static_numel() : std::nullopt;
    ir::Value* count = nx && ny && *ny > 0 ? k(s, static_cast<double>(*nx / *ny))
                                           : op(s, "Div", {s.b.cast(op(s, "Size", {x}), dt), s.b.cast(op(s, "Size", {y(s)}), dt)});
    dx = op(s, "Div", {dx, count});
  }
  s.dx[0] = dx;
}

void d_reduce_sum(GradientStep& s) { d_reduce(s, false); }
void d_reduce_mean(GradientStep& s) { d_reduce(s, true); }

const std::map<std::string, GradientRule>& rules() {
  static const std::map<std::string, GradientRule> table = {
      {"Add", {{0, 1}, d_add}},
      {"Sub", {{0, 1}, d_sub}},
      {"Mul", {{0, 1}, d_mul}},
      {"Div", {{0, 1}, d_div}},
      {"Pow", {{0, 1}, d_pow}},
      {"Neg", {{0}, d_neg}},
      {"Identity", {{0}, d_identity}},
      {"Relu", {{0}, d_relu}},
      {"Sigmoid", {{0}, d_sigmoid}},
      {"Tanh", {{0}, d_tanh}},
      {"Exp", {{0}, d_exp}},
      {"Log", {{0}, d_log}},
      {"Sqrt", {{0}, d_sqrt}},
      {"Cast", {{0}, d_cast}},
      {"Reshape", {{0}, d_view}},
      {"Flatten", {{0}, d_view}},
      {"Squeeze", {{0}, d_view}},
      {"Unsqueeze", {{0}, d_view}},
      {"Expand", {{0}, d_expand}},
      {"Transpose", {{0}, d_transpose}},
      {"MatMul", {{0, 1}, d_matmul}},
      {"ReduceSum", {{0}, d_reduce_sum}},
      {"ReduceMean", {{0}, d_reduce_mean}},
  };
  return table;
}

}  // namespace

bool GradientRule::differentiable(int input) const {
  return std::find(inputs.begin(), inputs.end(), input) != inputs.end();
}

const GradientRule* find_gradient_rule(const ir::Node& n) {
  if (!n.domain().empty()) return nullptr;
  auto it = rules().find(n.op_type());
  return it == rules().end() ? nullptr : &it->second;
}

}  // namespace kiln::onnx_fe
