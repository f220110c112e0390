// Imports an ONNX model. Names are resolved in two passes per graph (all node outputs first,
// then inputs), so files whose nodes are not in topological order still load; the graph is
// then sorted, which also detects cycles. Subgraphs (If/Loop/Scan bodies) are imported with
// their parent as the outer scope.
#include "frontend/onnx/importer.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>
#include <kiln/error.h>
#include <onnx/onnx_pb.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <string_view>
#include <vector>

#include "frontend/onnx/expand_gradient.h"
#include "frontend/onnx/raw_data_split.h"
#include "frontend/onnx/tensor_proto.h"
#include "ops/core/onnx_versions.h"
#include "ir/zeroed_memory.h"

namespace kiln::onnx_fe {

namespace fs = std::filesystem;

namespace {

ir::TensorType type_from_proto(const onnx::TypeProto& tp, const std::string& what) {
  if (tp.has_sequence_type()) {
    ir::TensorType t = type_from_proto(tp.sequence_type().elem_type(), what);
    if (!t.is_tensor()) throw UnsupportedError(what + ": sequences of non-tensors are not supported");
    t.is_sequence = true;
    return t;
  }
  if (tp.has_optional_type()) {
    ir::TensorType t = type_from_proto(tp.optional_type().elem_type(), what);
    if (t.is_optional) throw UnsupportedError(what + ": nested optionals are not supported");
    t.is_optional = true;
    return t;
  }
  if (!tp.has_tensor_type()) {
    if (tp.has_map_type()) throw UnsupportedError(what + ": map values are not supported");
    if (tp.has_sparse_tensor_type()) throw UnsupportedError(what + ": sparse tensors are not supported");
    return {};
  }
  const auto& tt = tp.tensor_type();
  ir::TensorType t;
  t.dtype = dtype_from_onnx(tt.elem_type());
  if (!tt.has_shape()) return t;
  t.rank_known = true;
  for (const auto& d : tt.shape().dim()) {
    if (d.has_dim_value()) {
      if (d.dim_value() < 0) throw Error(what + ": negative dimension " + std::to_string(d.dim_value()));
      t.dims.push_back(ir::Dim(d.dim_value()));
    } else if (d.has_dim_param() && !d.dim_param().empty()) {
      t.dims.push_back(ir::Dim::sym(d.dim_param()));
    } else {
      t.dims.push_back(ir::Dim::unknown());
    }
  }
  return t;
}

// How deeply a serialized ModelProto nests GraphProtos (the main graph is 1), read with an
// explicit stack instead of recursion; -1 when the bytes are not well-formed. Used only to
// explain a failed parse: protobuf refuses messages nested more than 100 deep with a generic
// error, which a model reaches at about 33 nested If/Loop bodies.
int graph_nesting(std::string_view bytes) {
  namespace pb = google::protobuf;
  using WFL = pb::internal::WireFormatLite;
  pb::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()), static_cast<int>(bytes.size()));
  const pb::Descriptor* graph = onnx::GraphProto::descriptor();
  struct Frame { const pb::Descriptor* desc; pb::io::CodedInputStream::Limit limit; };
  std::vector<Frame> stack{{onnx::ModelProto::descriptor(), {}}};
  int graphs = 0, deepest = 0;
  while (true) {
    while (stack.size() > 1 && in.BytesUntilLimit() == 0) {
      in.PopLimit(stack.back().limit);
      if (stack.back().desc == graph) --graphs;
      stack.pop_back();
    }
    uint32_t tag = in.ReadTag();
    if (tag == 0) return stack.size() == 1 && in.ConsumedEntireMessage() ? deepest : -1;
    const pb::FieldDescriptor* f = stack.back().desc->FindFieldByNumber(WFL::GetTagFieldNumber(tag));
    if (f && f->type() == pb::FieldDescriptor::TYPE_MESSAGE &&
        WFL::GetTagWireType(tag) == WFL::WIRETYPE_LENGTH_DELIMITED) {
      uint32_t len = 0;
      if (!in.ReadVarint32(&len) || len > static_cast<uint32_t>(std::numeric_limits<int>::max())) return -1;
      const int left = in.BytesUntilLimit();  // -1 at the top level: no limit but the data's end
      if (left >= 0 && static_cast<int>(len) > left) return -1;
      stack.push_back({f->message_type(), in.PushLimit(static_cast<int>(len))});
      if (f->message_type() == graph) deepest = std::max(deepest, ++graphs);
    } else if (!WFL::SkipField(&in, tag)) {
      return -1;
    }
  }
}

class Importer {
 public:
  // `main_raw`: the main graph's initializer data held outside its proto (raw_data_split.h).
  Importer(const fs::path& dir, const ImportOptions& opts,
           const std::vector<std::optional<std::string_view>>* main_raw = nullptr)
      : dir_(dir), opts_(opts), main_raw_(main_raw) {}

  void import_graph(const onnx::GraphProto& gp, ir::Graph& g, int depth) {
    if (depth > opts_.max_subgraph_depth)
      throw Error("graph '" + gp.name() + "': subgraphs nested deeper than " + std::to_string(opts_.max_subgraph_depth));
    g.name = gp.name();

    const bool split = depth == 0 && main_raw_ && main_raw_->size() == static_cast<size_t>(gp.initializer_size());
    for (int i = 0; i < gp.initializer_size(); ++i) {
      const onnx::TensorProto& init = gp.initializer(i);
      std::string what = "initializer '" + init.name() + "'";
      if (init.name().empty()) throw Error("an initializer has no name");
      if (g.find_value(init.name())) throw Error(what + ": duplicate name");
      g.add_constant(init.name(), tensor_from_proto(init, dir_, what, split ? (*main_raw_)[i] : std::nullopt, opts_.section));
    }
    if (gp.sparse_initializer_size() > 0) throw UnsupportedError("sparse initializers are not supported");

    // Graph inputs that also have an initializer are defaults; kiln treats them as constants.
    for (const auto& in : gp.input()) {
      if (in.name().empty()) throw Error("a graph input has no name");
      if (ir::Value* v = g.find_value(in.name())) {
        if (v->is_constant()) continue;
        throw Error("graph input '" + in.name() + "': duplicate name");
      }
      g.add_input(in.name(), type_from_proto(in.type(), "graph input '" + in.name() + "'"));
    }

    std::map<std::string, ir::TensorType> declared;
    for (const auto& vi : gp.value_info()) {
      try {
        declared[vi.name()] = type_from_proto(vi.type(), "value '" + vi.name() + "'");
      } catch (const UnsupportedError&) {
        // A sequence-typed intermediate is only a problem if an op cannot handle it.
      }
    }

    // Pass 1: create every node's outputs so inputs can refer to any of them.
    struct Pending { const onnx::NodeProto* np; std::vector<ir::Value*> outs; std::string name; };
    std::vector<Pending> pending;
    int index = 0;
    for (const auto& np : gp.node()) {
      Pending p{&np, {}, np.name().empty() ? np.op_type() + "_" + std::to_string(index) : np.name()};
      ++index;
      for (const auto& o : np.output()) {
        if (o.empty()) { p.outs.push_back(nullptr); continue; }
        if (g.find_value(o))
          throw Error("node '" + p.name + "' (" + np.op_type() + "): output '" + o + "' is already produced elsewhere");
        ir::Value* v = g.add_value(o);
        if (auto it = declared.find(o); it != declared.end()) v->type = it->second;
        p.outs.push_back(v);
      }
      pending.push_back(std::move(p));
    }

    // Pass 2: nodes with resolved inputs and attributes.
    for (auto& p : pending) {
      const auto& np = *p.np;
      std::string desc = "node '" + p.name + "' (" + np.op_type() + ")";
      if (np.op_type().empty()) throw Error(desc + ": node has no op type");
      std::vector<ir::Value*> ins;
      for (const auto& i : np.input()) {
        if (i.empty()) { ins.push_back(nullptr); continue; }
        ir::Value* v = resolve(g, i);
        if (!v) throw Error(desc + ": input '" + i + "' is not produced by any node, initializer or graph input");
        ins.push_back(v);
      }
      ir::Attributes attrs;
      for (const auto& ap : np.attribute()) {
        if (ap.name().empty()) throw Error(desc + ": attribute without a name");
        attrs[ap.name()] = attribute(ap, g, desc, depth);
      }
      g.add_node(np.op_type(), ins, p.outs, std::move(attrs), p.name, np.domain());
    }

    for (const auto& out : gp.output()) {
      ir::Value* v = resolve(g, out.name());
      if (!v) throw Error("graph output '" + out.name() + "' is not produced by any node, initializer or graph input");
      ir::TensorType t;
      try {
        t = type_from_proto(out.type(), "graph output '" + out.name() + "'");
      } catch (const UnsupportedError&) {
        if (depth == 0) throw;
      }
      if (!v->type.rank_known && v->type.dtype == DType::Undefined) v->type = t;
      else if (v->type.dtype == DType::Undefined) v->type.dtype = t.dtype;
      g.add_output(v);
    }
    g.topological_sort();
  }

 private:
  static ir::Value* resolve(const ir::Graph& g, const std::string& name) {
    for (const ir::Graph* s = &g; s; s = s->parent)
      if (ir::Value* v = s->find_value(name)) return v;
    return nullptr;
  }

  ir::Attribute attribute(const onnx::AttributeProto& ap, ir::Graph& g, const std::string& desc, int depth) {
    using K = ir::Attribute::Kind;
    ir::Attribute a;
    std::string what = desc + ": attribute '" + ap.name() + "'";
    auto type = ap.type();
    if (type == onnx::AttributeProto::UNDEFINED) {  // very old files: infer from the field set
      if (ap.has_f()) type = onnx::AttributeProto::FLOAT;
      else if (ap.has_i()) type = onnx::AttributeProto::INT;
      else if (ap.has_s()) type = onnx::AttributeProto::STRING;
      else if (ap.has_t()) type = onnx::AttributeProto::TENSOR;
      else if (ap.has_g()) type = onnx::AttributeProto::GRAPH;
      else if (ap.floats_size()) type = onnx::AttributeProto::FLOATS;
      else if (ap.ints_size()) type = onnx::AttributeProto::INTS;
      else if (ap.strings_size()) type = onnx::AttributeProto::STRINGS;
      else throw Error(what + ": has no type and no value");
    }
    if (!ap.ref_attr_name().empty()) throw UnsupportedError(what + ": attribute references (functions) are not supported");
    switch (type) {
      case onnx::AttributeProto::FLOAT: a.kind = K::Float; a.f = ap.f(); break;
      case onnx::AttributeProto::INT: a.kind = K::Int; a.i = ap.i(); break;
      case onnx::AttributeProto::STRING: a.kind = K::String; a.s = ap.s(); break;
      case onnx::AttributeProto::TENSOR: a.kind = K::Tensor; a.t = tensor_from_proto(ap.t(), dir_, what, std::nullopt, opts_.section); break;
      case onnx::AttributeProto::GRAPH: a.kind = K::Graph; a.g = subgraph(ap.g(), g, depth); break;
      case onnx::AttributeProto::FLOATS: a.kind = K::Floats; a.floats.assign(ap.floats().begin(), ap.floats().end()); break;
      case onnx::AttributeProto::INTS: a.kind = K::Ints; a.ints.assign(ap.ints().begin(), ap.ints().end()); break;
      case onnx::AttributeProto::STRINGS: a.kind = K::Strings; a.strings.assign(ap.strings().begin(), ap.strings().end()); break;
      case onnx::AttributeProto::TENSORS:
        a.kind = K::Tensors;
        for (const auto& t : ap.tensors()) a.tensors.push_back(tensor_from_proto(t, dir_, what, std::nullopt, opts_.section));
        break;
      case onnx::AttributeProto::GRAPHS:
        a.kind = K::Graphs;
        for (const auto& sg : ap.graphs()) a.graphs.push_back(subgraph(sg, g, depth));
        break;
      case onnx::AttributeProto::TYPE_PROTO: a.kind = K::Type; a.type = type_from_proto(ap.tp(), what); break;
      default: throw UnsupportedError(what + ": attribute type " + std::to_string(type) + " is not supported");
    }
    return a;
  }

  std::shared_ptr<ir::Graph> subgraph(const onnx::GraphProto& gp, ir::Graph& parent, int depth) {
    auto sg = std::make_shared<ir::Graph>();
    sg->parent = &parent;
    import_graph(gp, *sg, depth + 1);
    return sg;
  }

  fs::path dir_;
  ImportOptions opts_;
  const std::vector<std::optional<std::string_view>>* main_raw_;
};

}  // namespace

namespace {

std::unique_ptr<ir::Graph> load_model_view(std::string_view bytes, const fs::path& model_dir,
                                           const ImportOptions& opts) {
  if (bytes.empty()) throw Error("model file is empty");
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    throw Error("not a valid ONNX model: " + std::to_string(bytes.size()) + " bytes is over protobuf's 2 GiB limit");
  onnx::ModelProto model;
  // The weights stay where they lie in `bytes` (raw_data_split.h). The whole parse is the
  // fallback, and names what is wrong with a malformed file.
  std::optional<RawDataSplit> split = split_raw_data(bytes);
  bool parsed = split && model.ParseFromString(split->skeleton);
  if (!parsed) {
    split.reset();
    model.Clear();
    parsed = model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
  }
  if (!parsed) {
    // Deeper than the importer's own limit (which names the graph) but stopped by protobuf's.
    if (int depth = graph_nesting(bytes); depth - 1 > opts.max_subgraph_depth)
      throw Error("not a valid ONNX model: subgraphs nested deeper than " + std::to_string(opts.max_subgraph_depth) +
                  " (" + std::to_string(depth - 1) + " levels)");
    throw Error("not a valid ONNX model: the protobuf data cannot be parsed (corrupt or truncated file?)");
  }
  if (!model.has_graph()) throw Error("not a valid ONNX model: it has no graph");
  if (model.ir_version() <= 0 || model.ir_version() > 20)
    throw Error("not a valid ONNX model: ir_version " + std::to_string(model.ir_version()) + " is not supported");
  auto g = std::make_unique<ir::Graph>();
  for (const auto& os : model.opset_import()) {
    std::string dom = os.domain() == "ai.onnx" ? "" : os.domain();
    g->opsets[dom] = os.version();
  }
  if (!g->opsets.count("")) g->opsets[""] = 1;
  const int64_t opset = g->opsets[""];
  if (opset < 1 || opset > ops::kMaxOnnxOpset)
    throw UnsupportedError("model uses opset " + std::to_string(opset) + " of ai.onnx; kiln supports opsets 1 to " +
                           std::to_string(ops::kMaxOnnxOpset));
  Importer(model_dir, opts, split ? &split->raw : nullptr).import_graph(model.graph(), *g, 0);
  if (g->outputs().empty()) throw Error("not a valid ONNX model: the graph has no outputs");
  expand_gradients(*g);
  return g;
}

}  // namespace

// The model file's bytes, read into memory of our own (ir/zeroed_memory.h: huge pages from
// 2 MiB). Not mapped: where each 4 KiB page's first touch by the process costs a trip to the
// hypervisor (shadow paging), a mapping's page-cache pages are first-touched at 4 KiB too, and
// read() into 2 MiB pages is several times faster (bench/results/history-code-comments.md).
FileBytes read_model_file(const fs::path& path) {
  // Non-blocking: opening a FIFO with no writer would otherwise wait forever; it is refused below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw Error("cannot open model file '" + path.string() + "'");
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    throw Error("cannot read model file '" + path.string() + "': not a regular file");
  FileBytes out;
  const size_t want = static_cast<size_t>(st.st_size);
  out.buffer = allocate_zeroed(want);
  char* at = static_cast<char*>(out.buffer.get());
  while (out.size < want) {
    const ssize_t got = ::read(fd, at + out.size, want - out.size);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw Error("cannot read model file '" + path.string() + "': " + std::strerror(errno));
    if (got == 0) break;  // the file shrank: parse what was read, which then fails with a reason
    out.size += static_cast<size_t>(got);
  }
  return out;
}

std::unique_ptr<ir::Graph> load_model_bytes(std::string_view bytes, const fs::path& model_dir,
                                            const ImportOptions& opts) {
  return load_model_view(bytes, model_dir, opts);
}

std::unique_ptr<ir::Graph> load_model(const fs::path& path, const ImportOptions& opts) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw Error("'" + path.string() + "' is a folder, not a model file");
  fs::path dir = path.parent_path();
  if (dir.empty()) dir = ".";
  const FileBytes file = read_model_file(path);
  return load_model_view(file.view(), dir, opts);
}

}  // namespace kiln::onnx_fe
