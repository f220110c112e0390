// TensorFlow 2 control flow: While/StatelessWhile as ONNX Loop, If/StatelessIf as ONNX If, their
// bodies library functions converted into subgraphs (ImportContext::call_function).
#include "frontend/tf/control_flow.h"

#include <kiln/error.h>

#include <set>

#include "ops/core/shape_util.h"

namespace kiln::tf_fe {

namespace {

using Outs = std::vector<ir::Value*>;

// The type covering both a and b (ops::unify_types), fresh dims from the import's inference.
ir::TensorType widen(ImportContext& ctx, const ir::TensorType& a, const ir::TensorType& b) {
  return ops::unify_types(a, b, [&] { return ctx.inference().fresh(); });
}

// A condition as ONNX wants it: bool (TensorFlow tests other scalars against zero).
ir::Value* as_flag(ImportContext& ctx, ir::Graph& g, ir::Value* v, const std::string& name) {
  const DType dt = v->type.dtype;
  if (dt == DType::Bool || dt == DType::Undefined) return v;
  if (v->type.is_sequence || dt == DType::String)
    throw UnsupportedError(name + ": a condition of type " + v->type.str() + " is not supported");
  return add_op(ctx, g, "Cast", {v}, name, {{"to", ir::Attribute::of_int(static_cast<int64_t>(DType::Bool))}});
}

// The subgraph's outputs: its own values, each once.
void set_outputs(ImportContext& ctx, ir::Graph& g, const Outs& values, const std::string& name) {
  std::set<ir::Value*> used;
  for (size_t k = 0; k < values.size(); ++k) {
    ir::Value* v = own_value(ctx, g, values[k], name + ":" + std::to_string(k));
    if (!used.insert(v).second) v = add_op(ctx, g, "Identity", {v}, name + ":" + std::to_string(k));
    g.add_output(v);
  }
}

std::string function_attr(Converter& c, const std::string& a) {
  const tfpb::AttrValue& v = c.attr(a);
  if (v.value_case() != tfpb::AttrValue::kFunc || v.func().name().empty())
    c.fail("attribute '" + a + "' does not name a function");
  return v.func().name();
}

Outs convert_while(Converter& c) {
  const std::string cond = function_attr(c, "cond"), body = function_attr(c, "body");
  ImportContext& ctx = c.context();
  Outs init;
  for (int i = 0; i < c.num_inputs(); ++i) init.push_back(c.in(i));
  const std::string base = c.prefix() + c.name();
  LoopParts parts;
  parts.cond = [&](ir::Graph& g, const Outs& vars, bool in_body) {
    Outs r = ctx.call_function(cond, g, vars, base + (in_body ? "/body/cond/" : "/cond/"), c.describe());
    if (r.size() != 1) c.fail("its cond function '" + cond + "' gives " + std::to_string(r.size()) + " outputs, not 1");
    return r[0];
  };
  parts.body = [&](ir::Graph& g, const Outs& vars) { return ctx.call_function(body, g, vars, base + "/body/", c.describe()); };
  return emit_loop(ctx, c.graph(), base, init, parts, c.describe());
}

Outs convert_if(Converter& c) {
  if (c.num_inputs() < 1) c.fail("has no condition input");
  const std::string then_fn = function_attr(c, "then_branch"), else_fn = function_attr(c, "else_branch");
  ImportContext& ctx = c.context();
  Outs args;
  for (int i = 1; i < c.num_inputs(); ++i) args.push_back(c.in(i));
  const std::string base = c.prefix() + c.name();
  auto branch = [&](const std::string& fn, const std::string& which) {
    auto g = std::make_shared<ir::Graph>();
    g->name = base + "/" + which;
    g->parent = &c.graph();
    set_outputs(ctx, *g, ctx.call_function(fn, *g, args, base + "/" + which + "/", c.describe()), base + "/" + which);
    return g;
  };
  std::shared_ptr<ir::Graph> then_g = branch(then_fn, "then"), else_g = branch(else_fn, "else");
  const size_t n = then_g->outputs().size();
  if (else_g->outputs().size() != n)
    c.fail("its branches give " + std::to_string(n) + " and " + std::to_string(else_g->outputs().size()) + " outputs");
  if (n == 0) return {};
  ir::Value* cond = as_flag(ctx, c.graph(), c.in(0), c.graph().unique_name(base + "/cond"));
  return c.op_n("If", {cond}, static_cast<int>(n),
                {{"then_branch", ir::Attribute::of_graph(then_g)}, {"else_branch", ir::Attribute::of_graph(else_g)}});
}

}  // namespace

ir::Value* add_op(ImportContext& ctx, ir::Graph& g, const std::string& type, std::vector<ir::Value*> inputs,
                  const std::string& name, ir::Attributes attrs) {
  const std::string unique = g.find_value(name) ? g.unique_name(name) : name;
  ir::Value* out = g.add_value(unique);
  ir::Node* n = g.add_node(type, std::move(inputs), {out}, std::move(attrs), unique);
  ctx.inference().infer_node(*n);
  return out;
}

ir::Value* own_value(ImportContext& ctx, ir::Graph& g, ir::Value* v, const std::string& name) {
  if (v->owner() == &g && v->producer()) return v;
  return add_op(ctx, g, "Identity", {v}, name);
}

std::vector<ir::Value*> emit_loop(ImportContext& ctx, ir::Graph& g, const std::string& name, const Outs& init,
                                  const LoopParts& parts, const std::string& what) {
  ir::Value* first = as_flag(ctx, g, parts.cond(g, init, false), name + "/first_cond");
  std::vector<ir::TensorType> types;
  for (ir::Value* v : init) types.push_back(v->type);
  std::shared_ptr<ir::Graph> body;
  for (int attempt = 0;; ++attempt) {
    body = std::make_shared<ir::Graph>();
    body->name = name + "/body";
    body->parent = &g;
    body->add_input(name + "/iteration", ir::TensorType(DType::Int64, {}));
    body->add_input(name + "/cond_in", ir::TensorType(DType::Bool, {}));
    Outs vars;
    for (size_t k = 0; k < init.size(); ++k) vars.push_back(body->add_input(name + "/var_" + std::to_string(k), types[k]));
    Outs next = parts.body(*body, vars);
    if (next.size() != init.size())
      throw Error(what + ": its body gives " + std::to_string(next.size()) + " values for " + std::to_string(init.size()) +
                  " loop variables");
    ir::Value* again = parts.cond(*body, next, true);
    bool changed = false;
    std::vector<ir::TensorType> wider;
    for (size_t k = 0; k < init.size(); ++k) {
      if (next[k]->type.dtype != DType::Undefined && types[k].dtype != DType::Undefined &&
          next[k]->type.dtype != types[k].dtype)
        throw Error(what + ": loop variable " + std::to_string(k) + " starts as " + types[k].str() +
                    " and the body makes it " + next[k]->type.str());
      wider.push_back(widen(ctx, types[k], next[k]->type));
      changed = changed || !ops::same_type(wider.back(), types[k]);
    }
    if (changed && attempt == 0) {
      ctx.drop(body);
      types = std::move(wider);
      continue;
    }
    Outs outs = {as_flag(ctx, *body, again, name + "/next_cond")};
    outs.insert(outs.end(), next.begin(), next.end());
    set_outputs(ctx, *body, outs, name + "/body_out");
    break;
  }
  Outs results;
  for (size_t k = 0; k < init.size(); ++k) results.push_back(g.add_value(g.unique_name(name + "/loop:" + std::to_string(k))));
  std::vector<ir::Value*> inputs = {nullptr, first};
  inputs.insert(inputs.end(), init.begin(), init.end());
  ir::Node* loop = g.add_node("Loop", std::move(inputs), results, {{"body", ir::Attribute::of_graph(body)}},
                              g.unique_name(name));
  ctx.inference().infer_node(*loop);
  return results;
}

void add_control_flow_converters(ConverterTable& t) {
  t["While"] = t["StatelessWhile"] = convert_while;
  t["If"] = t["StatelessIf"] = convert_if;
}

}  // namespace kiln::tf_fe
