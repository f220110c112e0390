// Elementwise math, comparisons, reductions, casts and the identity family.
#include <kiln/error.h>

#include "frontend/tf/converter.h"

namespace kiln::tf_fe {

namespace {

using A = ir::Attribute;
using Outs = std::vector<ir::Value*>;

ConvertFn unary(std::string onnx) {
  return [onnx](Converter& c) -> Outs {
    c.expect_inputs(1);
    return {c.op(onnx, {c.in(0)})};
  };
}

ConvertFn binary(std::string onnx) {
  return [onnx](Converter& c) -> Outs {
    c.expect_inputs(2);
    return {c.op(onnx, {c.in(0), c.in(1)})};
  };
}

ir::Value* scalar_like(Converter& c, ir::Value* x, double v) { return c.scalar(v, x->type.dtype); }

bool is_int(ir::Value* v) { return dtype_is_integer(v->type.dtype); }

// TF's floor division: floor(x / y) for floats; for integers rounded toward negative infinity,
// (x - floormod(x, y)) / y being exact.
ir::Value* floor_div(Converter& c, ir::Value* x, ir::Value* y) {
  if (!is_int(x)) return c.op("Floor", {c.op("Div", {x, y})});
  ir::Value* mod = c.op("Mod", {x, y}, {{"fmod", A::of_int(0)}});
  return c.op("Div", {c.op("Sub", {x, mod}), y});
}

ir::Value* floor_mod(Converter& c, ir::Value* x, ir::Value* y) {
  if (is_int(x)) return c.op("Mod", {x, y}, {{"fmod", A::of_int(0)}});
  return c.op("Sub", {x, c.op("Mul", {c.op("Floor", {c.op("Div", {x, y})}), y})});
}

// Reductions: axes as an input (any integer type), keep_dims; no axes reduce nothing.
ConvertFn reduce(std::string onnx, bool boolean = false) {
  return [onnx, boolean](Converter& c) -> Outs {
    c.expect_inputs(2);
    ir::Value* x = c.in(0);
    if (boolean) x = c.cast(x, DType::Int32);
    ir::Value* axes = c.op("Reshape", {c.as_int64(c.in(1)), c.ints({-1})});
    ir::Value* y = c.op(onnx, {x, axes},
                        {{"keepdims", A::of_int(c.attr_bool_or("keep_dims", false) ? 1 : 0)},
                         {"noop_with_empty_axes", A::of_int(1)}});
    return {boolean ? c.cast(y, DType::Bool) : y};
  };
}

ConvertFn arg_reduce(std::string onnx) {
  return [onnx](Converter& c) -> Outs {
    c.expect_inputs(2);
    const auto axis = c.known_ints(1, "the dimension");
    if (axis.size() != 1) c.fail("the dimension must be one value");
    ir::Value* y = c.op(onnx, {c.in(0)}, {{"axis", A::of_int(axis[0])}, {"keepdims", A::of_int(0)}});
    return {c.cast(y, c.attr_type_or("output_type", DType::Int64))};
  };
}

ir::Value* identity(Converter& c) {
  c.expect_inputs(1);
  return c.in(0);
}

}  // namespace

void add_math_converters(ConverterTable& t) {
  for (const char* op : {"Identity", "StopGradient", "Snapshot", "PreventGradient", "EnsureShape",
                         "PlaceholderWithDefault", "CheckNumerics"})
    t[op] = [](Converter& c) -> Outs { return {identity(c)}; };
  t["IdentityN"] = [](Converter& c) -> Outs {
    Outs o;
    for (int i = 0; i < c.num_inputs(); ++i) o.push_back(c.in(i));
    return o;
  };

  t["Add"] = t["AddV2"] = binary("Add");
  t["Sub"] = binary("Sub");
  t["Mul"] = binary("Mul");
  t["RealDiv"] = t["Div"] = t["TruncateDiv"] = binary("Div");
  t["Maximum"] = binary("Max");
  t["Minimum"] = binary("Min");
  t["Pow"] = binary("Pow");
  t["Equal"] = binary("Equal");
  t["Less"] = binary("Less");
  t["LessEqual"] = binary("LessOrEqual");
  t["Greater"] = binary("Greater");
  t["GreaterEqual"] = binary("GreaterOrEqual");
  t["LogicalAnd"] = binary("And");
  t["LogicalOr"] = binary("Or");
  t["NotEqual"] = [](Converter& c) -> Outs {
    c.expect_inputs(2);
    return {c.op("Not", {c.op("Equal", {c.in(0), c.in(1)})})};
  };
  t["FloorDiv"] = [](Converter& c) -> Outs {
    c.expect_inputs(2);
    return {floor_div(c, c.in(0), c.in(1))};
  };
  t["FloorMod"] = [](Converter& c) -> Outs {
    c.expect_inputs(2);
    return {floor_mod(c, c.in(0), c.in(1))};
  };
  t["TruncateMod"] = [](Converter& c) -> Outs {
    c.expect_inputs(2);
    return {c.op("Mod", {c.in(0), c.in(1)}, {{"fmod", A::of_int(1)}})};
  };
  t["SquaredDifference"] = [](Converter& c) -> Outs {
    c.expect_inputs(2);
    ir::Value* d = c.op("Sub", {c.in(0), c.in(1)});
    return {c.op("Mul", {d, d})};
  };
  t["DivNoNan"] = [](Converter& c) -> Outs {
    c.expect_inputs(2);
    ir::Value* zero = scalar_like(c, c.in(1), 0);
    ir::Value* is_zero = c.op("Equal", {c.in(1), zero});
    ir::Value* safe = c.op("Where", {is_zero, scalar_like(c, c.in(1), 1), c.in(1)});
    return {c.op("Where", {is_zero, zero, c.op("Div", {c.in(0), safe})})};
  };
  t["AddN"] = [](Converter& c) -> Outs {
    if (c.num_inputs() < 1) c.fail("has no inputs");
    if (c.num_inputs() == 1) return {c.in(0)};
    Outs ins;
    for (int i = 0; i < c.num_inputs(); ++i) ins.push_back(c.in(i));
    return {c.op("Sum", ins)};
  };

  for (const char* op : {"Abs", "Neg", "Exp", "Log", "Sqrt", "Reciprocal", "Floor", "Ceil", "Round", "Sign", "Sin",
                         "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Tanh",
                         "Sigmoid", "Erf", "Relu", "Elu", "Selu", "Softplus", "Softsign", "IsNaN"})
    t[op] = unary(op);
  t["IsNan"] = unary("IsNaN");
  t["Inv"] = unary("Reciprocal");
  t["LogicalNot"] = unary("Not");
  t["Rint"] = unary("Round");
  t["Rsqrt"] = [](Converter& c) -> Outs {
    c.expect_inputs(1);
    return {c.op("Reciprocal", {c.op("Sqrt", {c.in(0)})})};
  };
  t["Square"] = [](Converter& c) -> Outs {
    c.expect_inputs(1);
    return {c.op("Mul", {c.in(0), c.in(0)})};
  };
  t["Log1p"] = [](Converter& c) -> Outs {
    c.expect_inputs(1);
    return {c.op("Log", {c.op("Add", {c.in(0), scalar_like(c, c.in(0), 1)})})};
  };
  t["Expm1"] = [](Converter& c) -> Outs {
    c.expect_inputs(1);
    return {c.op("Sub", {c.op("Exp", {c.in(0)}), scalar_like(c, c.in(0), 1)})};
  };
  t["Relu6"] = [](Converter& c) -> Outs {
    c.expect_inputs(1);
    return {c.op("Clip", {c.in(0), scalar_like(c, c.in(0), 0), scalar_like(c, c.in(0), 6)})};
  };
  t["LeakyRelu"] = [](Converter& c) -> Outs {
    c.expect_inputs(1);
    return {c.op("LeakyRelu", {c.in(0)}, {{"alpha", A::of_float(c.attr_float_or("alpha", 0.2f))}})};
  };
  t["Prelu"] = binary("PRelu");  // TF.js's op: x, alpha broadcast along the last axes
  t["Softmax"] = [](Converter& c) -> Outs {
    c.expect_inputs(1);
    return {c.op("Softmax", {c.in(0)}, {{"axis", A::of_int(-1)}})};
  };
  t["LogSoftmax"] = [](Converter& c) -> Outs {
    c.expect_inputs(1);
    return {c.op("LogSoftmax", {c.in(0)}, {{"axis", A::of_int(-1)}})};
  };
  t["ClipByValue"] = [](Converter& c) -> Outs {
    c.expect_inputs(3);
    return {c.op("Max", {c.op("Min", {c.in(0), c.in(2)}), c.in(1)})};
  };
  t["Cast"] = [](Converter& c) -> Outs {
    c.expect_inputs(1);
    return {c.cast(c.in(0), c.attr_type("DstT"))};
  };
  t["Select"] = [](Converter& c) -> Outs {
    c.expect_inputs(3);
    ir::Value* cond = c.in(0);
    // Select's rank-1 condition picks whole rows of higher-rank operands.
    if (cond->type.rank_known && cond->type.rank() == 1 && c.in(1)->type.rank_known && c.in(1)->type.rank() > 1) {
      std::vector<int64_t> axes;
      for (int i = 1; i < c.in(1)->type.rank(); ++i) axes.push_back(i);
      cond = c.unsqueeze(cond, axes);
    }
    return {c.op("Where", {cond, c.in(1), c.in(2)})};
  };
  t["SelectV2"] = [](Converter& c) -> Outs {
    c.expect_inputs(3);
    return {c.op("Where", {c.in(0), c.in(1), c.in(2)})};
  };

  t["Sum"] = reduce("ReduceSum");
  t["Mean"] = reduce("ReduceMean");
  t["Max"] = reduce("ReduceMax");
  t["Min"] = reduce("ReduceMin");
  t["Prod"] = reduce("ReduceProd");
  t["All"] = reduce("ReduceMin", true);
  t["Any"] = reduce("ReduceMax", true);
  t["EuclideanNorm"] = reduce("ReduceL2");
  t["ArgMax"] = arg_reduce("ArgMax");
  t["ArgMin"] = arg_reduce("ArgMin");

  t["Cumsum"] = [](Converter& c) -> Outs {
    c.expect_inputs(2);
    return {c.op("CumSum", {c.in(0), c.as_int64(c.in(1))},
                 {{"exclusive", A::of_int(c.attr_bool_or("exclusive", false))},
                  {"reverse", A::of_int(c.attr_bool_or("reverse", false))}})};
  };
  t["Range"] = [](Converter& c) -> Outs {
    c.expect_inputs(3);
    return {c.op("Range", {c.in(0), c.in(1), c.in(2)})};
  };
  t["Einsum"] = [](Converter& c) -> Outs {
    Outs ins;
    for (int i = 0; i < c.num_inputs(); ++i) ins.push_back(c.in(i));
    return {c.op("Einsum", ins, {{"equation", A::of_string(c.attr_string_or("equation", ""))}})};
  };
}

}  // namespace kiln::tf_fe
