#include "ops/core/infer_graph.h"

#include <kiln/error.h>

#include "ops/core/registry.h"

namespace kiln::ops {

namespace {

bool has_subgraphs(const ir::Node& n) {
  for (const auto& [k, a] : n.attrs)
    if (a.g || !a.graphs.empty()) return true;
  return false;
}

// Combines kiln's inferred type with the one the model declared (value_info, graph outputs):
// kiln's static facts win; a declared static or named dim fills a dim kiln could not resolve.
ir::TensorType merge(const ir::TensorType& inferred, const ir::TensorType& declared) {
  if (!inferred.rank_known) {
    ir::TensorType t = declared;
    if (inferred.dtype != DType::Undefined) t.dtype = inferred.dtype;
    if (inferred.is_sequence || inferred.is_optional) {  // e.g. an empty sequence: kind known, shape not
      t.is_sequence = inferred.is_sequence;
      t.is_optional = inferred.is_optional;
      if (!declared.is_sequence && !declared.is_optional) { t.rank_known = false; t.dims.clear(); }
    }
    return t;
  }
  ir::TensorType t = inferred;
  if (t.dtype == DType::Undefined) t.dtype = declared.dtype;
  if (declared.rank_known && declared.rank() == inferred.rank()) {
    for (int i = 0; i < t.rank(); ++i) {
      const ir::Dim& d = declared.dims[i];
      if (!t.dims[i].is_static() && (d.is_static() || d.is_symbolic())) t.dims[i] = d;
    }
  }
  return t;
}

std::string with_node(const ir::Node& n, const std::string& msg) {
  if (msg.rfind("node '", 0) == 0) return msg;
  return n.describe() + ": " + msg;
}

}  // namespace

ir::Dim ShapeInference::fresh() { return ir::Dim::sym("unk__" + std::to_string(next_symbol_++)); }

const kiln::Tensor* ShapeInference::known(const ir::Value* v) const {
  if (!v) return nullptr;
  if (v->is_constant()) return &v->constant();
  auto it = known_.find(v);
  return it == known_.end() ? nullptr : &it->second;
}

void ShapeInference::run(ir::Graph& g) {
  for (ir::Node* n : g.nodes()) infer_node(*n);
}

void ShapeInference::infer_node(ir::Node& n) {
  const OpDef& def = Registry::instance().lookup(n);
  const int nin = n.num_inputs();
  if (nin < def.min_inputs || (def.max_inputs >= 0 && nin > def.max_inputs))
    throw Error(n.describe() + ": has " + std::to_string(nin) + " inputs, op takes " +
                std::to_string(def.min_inputs) + ".." +
                (def.max_inputs < 0 ? std::string("any") : std::to_string(def.max_inputs)));
  for (int i = 0; i < def.min_inputs; ++i)
    if (!n.has_input(i)) throw Error(n.describe() + ": missing required input " + std::to_string(i));
  const int nout = n.num_outputs();
  if (nout < def.min_outputs || (def.max_outputs >= 0 && nout > def.max_outputs))
    throw Error(n.describe() + ": has " + std::to_string(nout) + " outputs, op gives " +
                std::to_string(def.min_outputs) + ".." +
                (def.max_outputs < 0 ? std::string("any") : std::to_string(def.max_outputs)));

  std::vector<ir::TensorType> types;
  std::vector<const kiln::Tensor*> values;
  bool all_known = true;
  int64_t known_elems = 0;
  for (ir::Value* v : n.inputs()) {
    types.push_back(v ? v->type : ir::TensorType());
    const kiln::Tensor* k = known(v);
    values.push_back(k);
    if (v && !k) all_known = false;
    if (k) known_elems += k->numel();
  }
  const int64_t opset = n.owner() ? n.owner()->opset(n.domain()) : 0;
  InferContext ctx(n, opset, types, values, *this);
  try {
    if (def.infer) def.infer(ctx);
  } catch (const UnsupportedError& e) {
    throw UnsupportedError(with_node(n, e.what()));
  } catch (const Error& e) {
    throw Error(with_node(n, e.what()));
  }

  // Evaluate small all-known nodes so shape arithmetic becomes constant.
  if (all_known && def.deterministic && def.kernel && known_elems <= max_fold_elements_ && !has_subgraphs(n)) {
    std::vector<kiln::Tensor> outs = run_reference(n, values);
    for (int i = 0; i < nout && i < static_cast<int>(outs.size()); ++i)
      if (n.output(i) && outs[i].defined()) ctx.set_output_value(i, outs[i]);
  }

  for (int i = 0; i < nout; ++i) {
    ir::Value* o = n.output(i);
    if (!o) continue;
    o->type = merge(ctx.outputs[i], o->type);
    if (ctx.output_values[i].defined()) known_[o] = ctx.output_values[i];
    // Later nodes multiply these dims out; a static type whose size overflows stops here.
    if (o->type.is_tensor() && o->type.is_static() && o->type.dtype != DType::Undefined) {
      int64_t bytes = static_cast<int64_t>(dtype_size(o->type.dtype));
      for (const ir::Dim& d : o->type.dims)
        if (__builtin_mul_overflow(bytes, d.value, &bytes))
          throw Error(n.describe() + ": output '" + o->name() + "': " + o->type.str() + " overflows int64 in bytes");
    }
  }
}

namespace {
class SubgraphInference : public ShapeInference {
 public:
  explicit SubgraphInference(InferContext& outer) : outer_(outer) {}
  ir::Dim fresh() override { return outer_.fresh_dim(); }

 private:
  InferContext& outer_;
};

void collect_values(const ir::Graph& g, std::vector<ir::Value*>& out) {
  for (ir::Value* v : g.values()) out.push_back(v);
  for (const ir::Node* n : g.nodes())
    for (const auto& [k, a] : n->attrs) {
      if (a.g) collect_values(*a.g, out);
      for (const auto& sg : a.graphs) collect_values(*sg, out);
    }
}
}  // namespace

std::vector<ir::TensorType> infer_subgraph(InferContext& ctx, ir::Graph& body,
                                           const std::vector<ir::TensorType>& inputs, bool keep) {
  std::vector<ir::Value*> values;
  std::vector<ir::TensorType> saved;
  if (!keep) {
    collect_values(body, values);
    for (ir::Value* v : values) saved.push_back(v->type);
  }
  for (size_t i = 0; i < inputs.size() && i < body.inputs().size(); ++i) {
    const ir::TensorType& t = inputs[i];
    if (t.dtype == DType::Undefined && !t.rank_known && !t.is_sequence && !t.is_optional) continue;
    ir::Value* in = body.inputs()[i];
    in->type = merge(t, in->type);
    in->type.is_sequence = t.is_sequence;
    in->type.is_optional = t.is_optional;
  }
  SubgraphInference si(ctx);
  si.run(body);
  std::vector<ir::TensorType> out;
  for (const ir::Value* v : body.outputs()) out.push_back(v->type);
  for (size_t i = 0; i < values.size(); ++i) values[i]->type = saved[i];
  return out;
}

std::vector<kiln::Tensor> run_reference(const ir::Node& node, const std::vector<const kiln::Tensor*>& inputs,
                                        const SubgraphRunner* subgraphs,
                                        const std::vector<KernelContext::OutputSlot>* slots) {
  const OpDef& def = Registry::instance().lookup(node);
  if (!def.kernel) throw UnsupportedError(node.describe() + ": op has no reference kernel");
  const int64_t opset = node.owner() ? node.owner()->opset(node.domain()) : 0;
  KernelContext ctx(node, opset, inputs);
  ctx.subgraphs = subgraphs;
  if (slots) ctx.slots = *slots;
  try {
    def.kernel(ctx);
  } catch (const UnsupportedError& e) {
    throw UnsupportedError(with_node(node, e.what()));
  } catch (const Error& e) {
    throw Error(with_node(node, e.what()));
  } catch (const std::bad_alloc&) {
    throw Error(node.describe() + ": out of memory");
  } catch (const std::exception& e) {
    throw Error(node.describe() + ": " + e.what());
  }
  for (int i = 0; i < node.num_outputs(); ++i)
    if (node.output(i) && !ctx.outputs[i].defined())
      throw Error(node.describe() + ": kernel did not produce output " + std::to_string(i));
  return std::move(ctx.outputs);
}

}  // namespace kiln::ops
