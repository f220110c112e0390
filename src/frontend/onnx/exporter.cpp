#include "frontend/onnx/exporter.h"

#include <kiln/error.h>
#include <onnx/onnx_pb.h>

#include <fstream>
#include <functional>
#include <set>

#include "frontend/onnx/tensor_proto.h"

namespace kiln::onnx_fe {

namespace {

void type_to_proto(const ir::TensorType& t, onnx::TypeProto* tp) {
  if (t.is_optional) {
    ir::TensorType inner = t;
    inner.is_optional = false;
    type_to_proto(inner, tp->mutable_optional_type()->mutable_elem_type());
    return;
  }
  if (t.is_sequence) {
    ir::TensorType inner = t;
    inner.is_sequence = false;
    type_to_proto(inner, tp->mutable_sequence_type()->mutable_elem_type());
    return;
  }
  auto* tt = tp->mutable_tensor_type();
  tt->set_elem_type(static_cast<int32_t>(t.dtype));
  if (!t.rank_known) return;
  auto* shape = tt->mutable_shape();
  for (const ir::Dim& d : t.dims) {
    auto* dp = shape->add_dim();
    if (d.is_static()) dp->set_dim_value(d.value);
    else if (!d.symbol.empty()) dp->set_dim_param(d.symbol);
  }
}

void value_info(const ir::Value* v, onnx::ValueInfoProto* vi) {
  vi->set_name(v->name());
  if (v->type.dtype != DType::Undefined) type_to_proto(v->type, vi->mutable_type());
}

class Exporter {
 public:
  explicit Exporter(const ExportOptions& o) : opts_(o) {}
  std::set<std::string> domains;

  void graph(const ir::Graph& g, onnx::GraphProto* gp) {
    gp->set_name(g.name.empty() ? "kiln" : g.name);
    // Constants this graph reads (its own; outer ones are read by name from the parent).
    std::set<const ir::Value*> written;
    auto constant = [&](const ir::Value* v) {
      if (!v || !v->is_constant() || v->owner() != &g || !written.insert(v).second) return;
      if (opts_.section) tensor_to_proto(v->constant(), v->name(), *opts_.section, gp->add_initializer());
      else tensor_to_proto(v->constant(), v->name(), gp->add_initializer());
    };
    // Including those only its nodes' subgraphs read (an If branch, a fused node's body).
    std::function<void(const ir::Node&)> reads = [&](const ir::Node& n) {
      for (const ir::Value* v : n.inputs()) constant(v);
      for (const auto& [k, a] : n.attrs) {
        std::vector<const ir::Graph*> subs;
        if (a.g) subs.push_back(a.g.get());
        for (const auto& sg : a.graphs) subs.push_back(sg.get());
        for (const ir::Graph* sg : subs) {
          for (const ir::Node* sn : sg->nodes()) reads(*sn);
          for (const ir::Value* v : sg->outputs()) constant(v);
        }
      }
    };
    for (const ir::Value* v : g.inputs()) value_info(v, gp->add_input());
    for (const ir::Node* n : g.nodes()) {
      reads(*n);
      node(*n, gp->add_node());
    }
    for (const ir::Value* v : g.outputs()) {
      constant(v);
      value_info(v, gp->add_output());
    }
    if (!opts_.value_info) return;
    std::set<const ir::Value*> io(g.inputs().begin(), g.inputs().end());
    io.insert(g.outputs().begin(), g.outputs().end());
    for (const ir::Node* n : g.nodes())
      for (const ir::Value* o : n->outputs())
        if (o && !io.count(o) && o->type.dtype != DType::Undefined) value_info(o, gp->add_value_info());
  }

 private:
  void node(const ir::Node& n, onnx::NodeProto* np) {
    np->set_op_type(n.op_type());
    np->set_name(n.name());
    if (!n.domain().empty()) np->set_domain(n.domain());
    domains.insert(n.domain());
    for (const ir::Value* v : n.inputs()) np->add_input(v ? v->name() : "");
    for (const ir::Value* v : n.outputs()) np->add_output(v ? v->name() : "");
    for (const auto& [name, a] : n.attrs) attribute(name, a, np->add_attribute());
  }

  void attribute(const std::string& name, const ir::Attribute& a, onnx::AttributeProto* ap) {
    using K = ir::Attribute::Kind;
    ap->set_name(name);
    switch (a.kind) {
      case K::Float: ap->set_type(onnx::AttributeProto::FLOAT); ap->set_f(a.f); break;
      case K::Int: ap->set_type(onnx::AttributeProto::INT); ap->set_i(a.i); break;
      case K::String: ap->set_type(onnx::AttributeProto::STRING); ap->set_s(a.s); break;
      case K::Tensor: ap->set_type(onnx::AttributeProto::TENSOR); tensor_to_proto(a.t, "", ap->mutable_t()); break;
      case K::Graph: ap->set_type(onnx::AttributeProto::GRAPH); graph(*a.g, ap->mutable_g()); break;
      case K::Floats:
        ap->set_type(onnx::AttributeProto::FLOATS);
        for (float f : a.floats) ap->add_floats(f);
        break;
      case K::Ints:
        ap->set_type(onnx::AttributeProto::INTS);
        for (int64_t i : a.ints) ap->add_ints(i);
        break;
      case K::Strings:
        ap->set_type(onnx::AttributeProto::STRINGS);
        for (const auto& s : a.strings) ap->add_strings(s);
        break;
      case K::Tensors:
        ap->set_type(onnx::AttributeProto::TENSORS);
        for (const auto& t : a.tensors) tensor_to_proto(t, "", ap->add_tensors());
        break;
      case K::Graphs:
        ap->set_type(onnx::AttributeProto::GRAPHS);
        for (const auto& sg : a.graphs) graph(*sg, ap->add_graphs());
        break;
      case K::Type: ap->set_type(onnx::AttributeProto::TYPE_PROTO); type_to_proto(a.type, ap->mutable_tp()); break;
    }
  }

  ExportOptions opts_;
};

}  // namespace

std::string export_model_bytes(const ir::Graph& g, const ExportOptions& opts) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name(opts.producer_name);
  Exporter ex(opts);
  ex.graph(g, model.mutable_graph());
  std::map<std::string, int64_t> opsets = g.opsets;
  if (!opsets.count("")) opsets[""] = g.opset("");
  for (const std::string& d : ex.domains)
    if (!opsets.count(d)) opsets[d] = 1;
  for (const auto& [domain, version] : opsets) {
    if (!ex.domains.count(domain) && !domain.empty()) continue;  // declared but unused
    auto* os = model.add_opset_import();
    os->set_domain(domain);
    os->set_version(version);
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes)) throw Error("cannot serialize the model (larger than 2 GiB?)");
  return bytes;
}

void save_model(const ir::Graph& g, const std::filesystem::path& path, const ExportOptions& opts) {
  std::string bytes = export_model_bytes(g, opts);
  std::ofstream f(path, std::ios::binary);
  if (!f) throw Error("cannot write '" + path.string() + "'");
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw Error("error writing '" + path.string() + "'");
}

}  // namespace kiln::onnx_fe
