#include "codegen/cpp/loop_nest.h"

#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <unordered_map>

#include "fusion/access_plan.h"

namespace kiln::codegen::cpp {

namespace {

// Element 0 of a constant, as a double.
double scalar_of(const Tensor& t) {
  switch (t.dtype()) {
    case DType::Float: return t.data<float>()[0];
    case DType::Double: return t.data<double>()[0];
    case DType::Int64: return static_cast<double>(t.data<int64_t>()[0]);
    case DType::Int32: return t.data<int32_t>()[0];
    case DType::Int8: return t.data<int8_t>()[0];
    case DType::UInt8: return t.data<uint8_t>()[0];
    case DType::Int16: return t.data<int16_t>()[0];
    case DType::UInt16: return t.data<uint16_t>()[0];
    case DType::UInt32: return t.data<uint32_t>()[0];
    case DType::UInt64: return static_cast<double>(t.data<uint64_t>()[0]);
    case DType::Bool: return t.data<bool>()[0] ? 1 : 0;
    default: throw UnsupportedError("a scalar constant of type " + dtype_name(t.dtype()));
  }
}

using Args = std::vector<std::string>;  // the members' input expressions ("" = absent)

struct ExprCtx {
  const ir::Node& n;
  DType in0, out;  // element types of input 0 and of the output
  const Args& a;
  std::string T() const { return ctype(out); }
  std::string F(double v) const { return literal(in0, v); }  // a literal of input 0's type
  bool flt() const { return dtype_is_float(in0); }
};

using ExprFn = std::function<std::string(const ExprCtx&)>;

std::string fold(const ExprCtx& c, const std::string& fn) {
  std::string acc;
  for (const std::string& x : c.a) {
    if (x.empty()) continue;
    acc = acc.empty() ? x : fn + "(" + acc + ", " + x + ")";
  }
  return acc;
}

std::string fold_op(const ExprCtx& c, const std::string& op) {
  std::string acc;
  for (const std::string& x : c.a) {
    if (x.empty()) continue;
    acc = acc.empty() ? x : "(" + acc + " " + op + " " + x + ")";
  }
  return acc;
}

const std::map<std::string, ExprFn>& table() {
  static const std::map<std::string, ExprFn> t = {
      {"Identity", [](const ExprCtx& c) { return c.a[0]; }},
      {"Add", [](const ExprCtx& c) { return c.T() + "(" + c.a[0] + " + " + c.a[1] + ")"; }},
      {"Sub", [](const ExprCtx& c) { return c.T() + "(" + c.a[0] + " - " + c.a[1] + ")"; }},
      {"Mul", [](const ExprCtx& c) { return c.T() + "(" + c.a[0] + " * " + c.a[1] + ")"; }},
      {"Div", [](const ExprCtx& c) { return c.T() + "(" + c.a[0] + " / " + c.a[1] + ")"; }},
      {"Sum", [](const ExprCtx& c) { return c.T() + "(" + fold_op(c, "+") + ")"; }},
      {"Max", [](const ExprCtx& c) { return fold(c, "std::max<" + c.T() + ">"); }},
      {"Min", [](const ExprCtx& c) { return fold(c, "std::min<" + c.T() + ">"); }},
      {"Mean",
       [](const ExprCtx& c) {
         int k = 0;
         for (const auto& x : c.a) k += x.empty() ? 0 : 1;
         return c.T() + "(" + fold_op(c, "+") + " / " + c.F(k) + ")";
       }},
      {"Neg", [](const ExprCtx& c) { return c.T() + "(-" + c.a[0] + ")"; }},
      {"Abs", [](const ExprCtx& c) { return c.flt() ? "std::fabs(" + c.a[0] + ")" : c.T() + "(" + c.a[0] + " < 0 ? -" + c.a[0] + " : " + c.a[0] + ")"; }},
      {"Sqrt", [](const ExprCtx& c) { return "std::sqrt(" + c.a[0] + ")"; }},
      {"Exp", [](const ExprCtx& c) { return "std::exp(" + c.a[0] + ")"; }},
      {"Log", [](const ExprCtx& c) { return "std::log(" + c.a[0] + ")"; }},
      {"Tanh", [](const ExprCtx& c) { return c.out == DType::Float ? "kiln_kernels::math::tanh(" + c.a[0] + ")" : "std::tanh(" + c.a[0] + ")"; }},
      {"Sin", [](const ExprCtx& c) { return "std::sin(" + c.a[0] + ")"; }},
      {"Cos", [](const ExprCtx& c) { return "std::cos(" + c.a[0] + ")"; }},
      {"Erf", [](const ExprCtx& c) { return c.out == DType::Float ? "kiln_kernels::math::erf(" + c.a[0] + ")" : "std::erf(" + c.a[0] + ")"; }},
      {"Floor", [](const ExprCtx& c) { return "std::floor(" + c.a[0] + ")"; }},
      {"Ceil", [](const ExprCtx& c) { return "std::ceil(" + c.a[0] + ")"; }},
      {"Round", [](const ExprCtx& c) { return "std::nearbyint(" + c.a[0] + ")"; }},
      {"Reciprocal", [](const ExprCtx& c) { return c.T() + "(" + c.F(1) + " / " + c.a[0] + ")"; }},
      {"Sigmoid",
       [](const ExprCtx& c) {
         return c.out == DType::Float ? "kiln_kernels::math::sigmoid(" + c.a[0] + ")"
                                      : c.F(1) + " / (" + c.F(1) + " + std::exp(-" + c.a[0] + "))";
       }},
      {"SiLU", [](const ExprCtx& c) { return "kiln_kernels::math::silu(" + c.a[0] + ")"; }},
      {"Relu", [](const ExprCtx& c) { return c.a[0] + " > " + c.F(0) + " ? " + c.a[0] + " : " + c.F(0); }},
      {"Softplus",
       [](const ExprCtx& c) {
         // log(1 + e^x) as x + log(1 + e^-x) for x > 0, where e^x would overflow.
         const std::string& x = c.a[0];
         return "(" + x + " > " + c.F(0) + " ? " + x + " + std::log1p(std::exp(-" + x + ")) : std::log1p(std::exp(" + x + ")))";
       }},
      {"Softsign", [](const ExprCtx& c) { return c.a[0] + " / (" + c.F(1) + " + std::fabs(" + c.a[0] + "))"; }},
      {"Sign", [](const ExprCtx& c) { return c.T() + "((" + c.a[0] + " > 0) - (" + c.a[0] + " < 0))"; }},
      {"Not", [](const ExprCtx& c) { return "!" + c.a[0]; }},
      {"IsNaN", [](const ExprCtx& c) { return "std::isnan(" + c.a[0] + ")"; }},
      {"Equal", [](const ExprCtx& c) { return "(" + c.a[0] + " == " + c.a[1] + ")"; }},
      {"Less", [](const ExprCtx& c) { return "(" + c.a[0] + " < " + c.a[1] + ")"; }},
      {"Greater", [](const ExprCtx& c) { return "(" + c.a[0] + " > " + c.a[1] + ")"; }},
      {"LessOrEqual", [](const ExprCtx& c) { return "(" + c.a[0] + " <= " + c.a[1] + ")"; }},
      {"GreaterOrEqual", [](const ExprCtx& c) { return "(" + c.a[0] + " >= " + c.a[1] + ")"; }},
      {"And", [](const ExprCtx& c) { return "(" + c.a[0] + " && " + c.a[1] + ")"; }},
      {"Or", [](const ExprCtx& c) { return "(" + c.a[0] + " || " + c.a[1] + ")"; }},
      {"Xor", [](const ExprCtx& c) { return "(" + c.a[0] + " != " + c.a[1] + ")"; }},
      {"Where", [](const ExprCtx& c) { return "(" + c.a[0] + " ? " + c.a[1] + " : " + c.a[2] + ")"; }},
      {"PRelu", [](const ExprCtx& c) { return "(" + c.a[0] + " < " + c.F(0) + " ? " + c.a[0] + " * " + c.a[1] + " : " + c.a[0] + ")"; }},
      {"Pow",
       [](const ExprCtx& c) {
         return c.flt() ? "std::pow(" + c.a[0] + ", " + c.a[1] + ")"
                        : c.T() + "(std::pow(double(" + c.a[0] + "), double(" + c.a[1] + ")))";
       }},
      {"Mod",
       [](const ExprCtx& c) {
         if (c.n.attr_int("fmod", 0) || c.flt()) return "std::fmod(" + c.a[0] + ", " + c.a[1] + ")";
         // Python's remainder: the sign of the divisor.
         return c.T() + "(((" + c.a[0] + " % " + c.a[1] + ") + " + c.a[1] + ") % " + c.a[1] + ")";
       }},
      {"LeakyRelu",
       [](const ExprCtx& c) {
         return c.a[0] + " >= " + c.F(0) + " ? " + c.a[0] + " : " + c.F(c.n.attr_float("alpha", 0.01f)) + " * " + c.a[0];
       }},
      {"Elu",
       [](const ExprCtx& c) {
         return c.a[0] + " >= " + c.F(0) + " ? " + c.a[0] + " : " + c.F(c.n.attr_float("alpha", 1.f)) + " * (std::exp(" +
                c.a[0] + ") - " + c.F(1) + ")";
       }},
      {"HardSigmoid",
       [](const ExprCtx& c) {
         return "std::max(" + c.F(0) + ", std::min(" + c.F(1) + ", " + c.F(c.n.attr_float("alpha", 0.2f)) + " * " + c.a[0] +
                " + " + c.F(c.n.attr_float("beta", 0.5f)) + "))";
       }},
      {"HardSwish",
       [](const ExprCtx& c) {
         return c.a[0] + " * std::max(" + c.F(0) + ", std::min(" + c.F(1) + ", " + c.a[0] + " / " + c.F(6) + " + " + c.F(0.5) +
                "))";
       }},
      {"Gelu",
       [](const ExprCtx& c) {
         if (c.n.attr_string("approximate", "none") == "tanh")
           return c.F(0.5) + " * " + c.a[0] + " * (" + c.F(1) + " + std::tanh(" + c.F(0.7978845608028654) + " * (" + c.a[0] +
                  " + " + c.F(0.044715) + " * " + c.a[0] + " * " + c.a[0] + " * " + c.a[0] + ")))";
         return c.F(0.5) + " * " + c.a[0] + " * (" + c.F(1) + " + " + (c.out == DType::Float ? "kiln_kernels::math::erf(" : "std::erf(") +
                c.a[0] + " * " + c.F(0.70710678118654752) + "))";
       }},
      {"Clip",
       [](const ExprCtx& c) {
         std::string lo = c.a.size() > 1 ? c.a[1] : "", hi = c.a.size() > 2 ? c.a[2] : "";
         if (c.n.attrs.count("min")) lo = c.F(c.n.attr_float("min", 0));
         if (c.n.attrs.count("max")) hi = c.F(c.n.attr_float("max", 0));
         std::string e = c.a[0];
         if (!lo.empty()) e = "std::max<" + c.T() + ">(" + e + ", " + lo + ")";
         if (!hi.empty()) e = "std::min<" + c.T() + ">(" + e + ", " + hi + ")";
         return e;
       }},
      {"Cast",
       [](const ExprCtx& c) {
         if (c.out == DType::Bool) return "(" + c.a[0] + " != 0)";
         return "static_cast<" + c.T() + ">(" + c.a[0] + ")";
       }},
      {"CastLike",
       [](const ExprCtx& c) {
         if (c.out == DType::Bool) return "(" + c.a[0] + " != 0)";
         return "static_cast<" + c.T() + ">(" + c.a[0] + ")";
       }},
  };
  return t;
}

const ExprFn* expr_of(const ir::Node& n) {
  if (n.num_outputs() != 1) return nullptr;
  if (!n.domain().empty() && !(n.domain() == "kiln" && n.op_type() == "SiLU")) return nullptr;
  auto it = table().find(n.op_type());
  return it == table().end() ? nullptr : &it->second;
}

std::string index_expr(const fusion::Access& a) {
  std::string e;
  for (size_t k = 0; k < a.strides.size(); ++k) {
    if (a.strides[k] == 0) continue;
    const std::string term = a.strides[k] == 1 ? "i" + std::to_string(k) : "i" + std::to_string(k) + " * " + std::to_string(a.strides[k]);
    e += e.empty() ? term : " + " + term;
  }
  if (a.offset) e += e.empty() ? std::to_string(a.offset) : " + " + std::to_string(a.offset);
  return e.empty() ? "0" : e;
}

// Merges neighbouring dims of `dims` wherever every access steps through both as one.
std::vector<int64_t> merge_dims(const std::vector<int64_t>& D, const std::vector<const fusion::Access*>& access,
                                std::vector<fusion::Access>& merged) {
  std::vector<int64_t> dims;
  merged.assign(access.size(), {});
  for (size_t s = 0; s < access.size(); ++s) merged[s].offset = access[s]->offset;
  for (size_t i = 0; i < D.size(); ++i) {
    if (D[i] == 1) continue;
    bool merge = !dims.empty();
    for (size_t s = 0; s < access.size() && merge; ++s)
      merge = merged[s].strides.back() == access[s]->strides[i] * D[i];
    if (merge) {
      dims.back() *= D[i];
      for (size_t s = 0; s < access.size(); ++s) merged[s].strides.back() = access[s]->strides[i];
    } else {
      dims.push_back(D[i]);
      for (size_t s = 0; s < access.size(); ++s) merged[s].strides.push_back(access[s]->strides[i]);
    }
  }
  return dims;
}

// A team call costs a few microseconds (waking the workers, joining them): a loop of fewer
// elements, at about one per nanosecond, is done sooner by the calling thread alone.
constexpr int64_t kParallelMinElements = int64_t{1} << 15;

// Opens the loops over dims (the innermost with a brace); returns the body's indent. Loops of
// at least kParallelMinElements split their outermost dim across the team (close_loops ends it).
std::string open_loops(EmitContext& ctx, const std::vector<int64_t>& dims, bool& parallel, std::string indent = "") {
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  parallel = !dims.empty() && dims[0] >= 2 && total >= kParallelMinElements;
  if (parallel) {
    ctx.line(indent + "kiln_kernels::parallel_for(c.team, " + std::to_string(dims[0]) +
             ", [&](int64_t begin, int64_t end) {");
  }
  for (size_t k = 0; k < dims.size(); ++k) {
    const std::string i = "i" + std::to_string(k);
    const std::string from = parallel && k == 0 ? "begin" : "0", to = parallel && k == 0 ? "end" : std::to_string(dims[k]);
    ctx.line(indent + "for (int64_t " + i + " = " + from + "; " + i + " < " + to + "; ++" + i + ")" +
             (k + 1 == dims.size() ? " {" : ""));
    indent += "  ";
  }
  if (dims.empty()) {
    ctx.line(indent + "{");
    indent += "  ";
  }
  return indent;
}

void close_loops(EmitContext& ctx, bool parallel, const std::string& indent = "") {
  ctx.line(indent + "}");
  if (parallel) ctx.line(indent + "});");
}

}  // namespace

// The CUDA form of a loop nest: a kernel with a thread per point of `dims` (the flat index split
// into i0, i1, ... with 32-bit divisions when it fits), the pointers its parameters, launched
// from the instruction's function.
static void write_kernel(EmitContext& ctx, const std::vector<LoopPointer>& ptrs, const std::vector<int64_t>& dims,
                  const std::vector<std::string>& body) {
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  if (total == 0) return;
  const bool narrow = total < (int64_t{1} << 31);
  const std::string I = narrow ? "unsigned" : "int64_t", suffix = narrow ? "u" : "ll";
  const std::string name = ctx.kernel_name();
  std::string params, args;
  for (const LoopPointer& p : ptrs) {
    params += (params.empty() ? "" : ", ") + p.type + "* " + (p.restrict_ok ? "__restrict__ " : "") + p.name;
    args += (args.empty() ? "" : ", ") + p.expr;
  }
  std::vector<std::string>& k = ctx.device;
  k.push_back("__global__ void " + name + "(" + params + ") {");
  k.push_back("  const " + I + " t = static_cast<" + I + ">(blockIdx.x) * blockDim.x + threadIdx.x;");
  k.push_back("  if (t >= " + std::to_string(total) + suffix + ") return;");
  if (dims.size() > 1) k.push_back("  " + I + " r = t;");
  for (size_t j = dims.size(); j-- > 0;) {
    const std::string i = "i" + std::to_string(j);
    if (dims.size() == 1) k.push_back("  const int64_t " + i + " = t;");
    else if (j == 0) k.push_back("  const int64_t " + i + " = r;");
    else {
      k.push_back("  const int64_t " + i + " = r % " + std::to_string(dims[j]) + suffix + ";");
      k.push_back("  r /= " + std::to_string(dims[j]) + suffix + ";");
    }
  }
  for (const std::string& b : body) k.push_back("  " + b);
  k.push_back("}");
  ctx.line("KILN_LAUNCH(" + name + ", kiln_kernels::blocks_for(" + std::to_string(total) + "), kiln_kernels::kThreads, c.stream)(" +
           args + ");");
}

// The loops over dims around body (the C++ target), or a kernel (CUDA).
void write_loops(EmitContext& ctx, const std::vector<LoopPointer>& ptrs, const std::vector<int64_t>& dims,
                 const std::vector<std::string>& body, const std::string& indent0) {
  if (ctx.cuda) return write_kernel(ctx, ptrs, dims, body);
  for (const LoopPointer& p : ptrs)
    ctx.line(indent0 + p.type + "* " + (p.restrict_ok ? "KILN_RESTRICT " : "") + p.name + " = " + p.expr + ";");
  bool parallel = false;
  const std::string indent = open_loops(ctx, dims, parallel, indent0);
  for (const std::string& b : body) ctx.line(indent + b);
  close_loops(ctx, parallel, indent0);
}

std::vector<int64_t> dense_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t k = dims.size(); k-- > 1;) s[k - 1] = s[k] * dims[k];
  return s;
}

void emit_strided_copy(EmitContext& ctx, DType t, const std::string& src, int64_t src_offset,
                       const std::vector<int64_t>& src_strides, const std::string& dst, int64_t dst_offset,
                       const std::vector<int64_t>& dst_strides, const std::vector<int64_t>& dims) {
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  if (total == 0) return;
  const fusion::Access s{src_offset, src_strides}, d{dst_offset, dst_strides};
  std::vector<fusion::Access> m;
  const std::vector<int64_t> md = merge_dims(dims, {&s, &d}, m);
  const std::string T = ctype(t);
  const std::vector<LoopPointer> ptrs = {{"const " + T, "src", src, true}, {T, "dst", dst, true}};
  const std::vector<std::string> body = {"dst[" + index_expr(m[1]) + "] = src[" + index_expr(m[0]) + "];"};
  if (ctx.cuda) return write_kernel(ctx, ptrs, md, body);
  ctx.line("{");
  write_loops(ctx, ptrs, md, body, "  ");
  ctx.line("}");
}

bool loop_nest_supports(const ir::Node& n) { return fusion::is_view_op(n) || expr_of(n) != nullptr; }

void emit_loop_nest(EmitContext& ctx, const std::vector<const ir::Node*>& nodes,
                    const std::vector<const ir::Value*>& sources, const std::vector<const ir::Value*>& outputs,
                    const std::unordered_map<const ir::Value*, std::string>& locals) {
  for (const ir::Node* n : nodes)
    if (!loop_nest_supports(*n)) throw ctx.unsupported("member " + n->describe() + " has no C++ expression yet");
  auto plan = fusion::plan_access(nodes, outputs);
  if (!plan) throw ctx.unsupported("no single loop reads every source of the group (a value needed in two layouts)");

  std::vector<const fusion::Access*> access;
  for (const auto& o : plan->operands) access.push_back(&o.access);
  for (const auto& a : plan->outputs) access.push_back(&a);
  std::vector<fusion::Access> merged;
  const std::vector<int64_t> dims = merge_dims(plan->dims, access, merged);
  const size_t n_ops = plan->operands.size();

  // Sources: the instruction's inputs (pointers) and constants (literals when scalar).
  std::unordered_map<const ir::Value*, int> source_index;
  for (size_t k = 0; k < sources.size(); ++k) source_index[sources[k]] = static_cast<int>(k);
  std::vector<std::string> operand_expr(n_ops);
  std::vector<LoopPointer> ptrs;
  std::vector<std::string> reads;
  for (size_t k = 0; k < n_ops; ++k) {
    const ir::Value* v = plan->operands[k].source;
    const std::string T = ctype(v->type.dtype);
    auto it = source_index.find(v);
    std::string p;
    const auto local = locals.find(v);
    if (local != locals.end()) {
      p = local->second;
    } else if (it != source_index.end()) {
      const Operand& o = ctx.step.inputs.at(it->second);
      if (o.storage.kind == StorageKind::Constant && o.numel() == 1) {
        operand_expr[k] = literal(v->type.dtype, scalar_of(o.value->constant()));
        continue;
      }
      p = ctx.ptr(o);
    } else if (v->is_constant()) {
      const Tensor& t = v->constant();
      if (t.numel() == 1) {
        operand_expr[k] = literal(v->type.dtype, scalar_of(t));
        continue;
      }
      p = ctx.weights("const:" + v->name(), std::string_view(static_cast<const char*>(t.raw()), t.nbytes()), t.dtype());
    } else {
      throw ctx.unsupported("'" + v->name() + "' is read by the group but is neither an input nor a constant");
    }
    bool aliased = false;
    if (local == locals.end() && it != source_index.end())
      for (const Operand& o : ctx.step.outputs) aliased = aliased || (o.buffer >= 0 && o.storage == ctx.step.inputs.at(it->second).storage);
    ptrs.push_back({"const " + T, "p" + std::to_string(k), p, ctx.cuda && !aliased});
    reads.push_back("const " + T + " s" + std::to_string(k) + " = p" + std::to_string(k) + "[" +
                    index_expr(merged[k]) + "];");
    operand_expr[k] = "s" + std::to_string(k);
  }

  // Members, in order, as scalar expressions.
  std::unordered_map<const ir::Value*, std::string> var;
  std::vector<std::string> body;
  int next = 0;
  for (const ir::Node* n : nodes) {
    auto src = [&](int i) -> std::string {
      if (!n->has_input(i)) return "";
      if (auto r = plan->reads.find({n, i}); r != plan->reads.end()) return operand_expr[r->second];
      auto it = var.find(n->input(i));
      return it == var.end() ? std::string() : it->second;
    };
    if (fusion::is_view_op(*n)) {
      const std::string s = src(0);
      if (!s.empty()) var[n->output(0)] = s;
      continue;
    }
    Args a;
    bool any = false;
    for (int i = 0; i < n->num_inputs(); ++i) {
      a.push_back(src(i));
      any = any || !a.back().empty();
    }
    if (!any || a.empty() || a[0].empty()) continue;  // nothing it needs is computed here: unused
    const DType in0 = n->input(0)->type.dtype, out = n->output(0)->type.dtype;
    const std::string e = (*expr_of(*n))(ExprCtx{*n, in0, out, a});
    const std::string name = "v" + std::to_string(next++);
    body.push_back("const " + ctype(out) + " " + name + " = " + e + ";");
    var[n->output(0)] = name;
  }

  // Outputs: a writable pointer each (restrict unless it shares storage with a source).
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (const auto local = locals.find(outputs[k]); local != locals.end()) {
      ptrs.push_back({ctype(outputs[k]->type.dtype), "o" + std::to_string(k), local->second, true});
    } else {
      const Operand& o = ctx.step.outputs.at(k);
      bool shared = false;
      for (const Operand& i : ctx.step.inputs) shared = shared || (i.buffer >= 0 && i.storage == o.storage);
      ptrs.push_back({ctype(o.dtype), "o" + std::to_string(k), ctx.ptr(o, true), !shared});
    }
    auto it = var.find(outputs[k]);
    if (it == var.end()) throw ctx.unsupported("output '" + outputs[k]->name() + "' is not computed by the group");
    body.push_back("o" + std::to_string(k) + "[" + index_expr(merged[n_ops + k]) + "] = " + it->second + ";");
  }

  std::vector<std::string> lines = reads;
  lines.insert(lines.end(), body.begin(), body.end());
  write_loops(ctx, ptrs, dims, lines, "");
}

}  // namespace kiln::codegen::cpp
