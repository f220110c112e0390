#include "ir/printer.h"

#include <charconv>
#include <cstdio>
#include <string>

namespace kiln::ir {

namespace {

// Tensors up to this many elements print their values (shapes, axes, scalars); bigger ones
// only their type, which keeps dumps of real models readable.
constexpr int64_t kMaxPrintedElements = 8;

bool plain_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '/' || c == '-';
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// Shortest text that reads back as the same float, always marked as a float ("1.0", not "1").
std::string float_text(float f) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, f);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".eni") == std::string::npos) s += ".0";
  return s;
}

std::string double_text(double d) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".eni") == std::string::npos) s += ".0";
  return s;
}

std::string element_text(const kiln::Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::Float: case DType::Float16: case DType::BFloat16:
      return float_text(static_cast<float>(t.as_double(i)));
    case DType::Double: return double_text(t.as_double(i));
    case DType::Bool: return t.as_int64(i) ? "true" : "false";
    case DType::String: return quoted(t.data<std::string>()[i]);
    case DType::UInt64: return std::to_string(t.data<uint64_t>()[i]);
    default: return std::to_string(t.as_int64(i));
  }
}

bool printable_values(const kiln::Tensor& t) {
  return t.defined() && t.raw() && t.numel() <= kMaxPrintedElements && t.dtype() != DType::Complex64 &&
         t.dtype() != DType::Complex128;
}

// "3" for a scalar, "[1,-1]" otherwise (flattened).
std::string tensor_values(const kiln::Tensor& t) {
  if (t.rank() == 0) return element_text(t, 0);
  std::string s = "[";
  for (int64_t i = 0; i < t.numel(); ++i) s += (i ? "," : "") + element_text(t, i);
  return s + "]";
}

std::string tensor_text(const kiln::Tensor& t) {
  std::string s = "tensor " + t.describe();
  if (printable_values(t)) s += " " + tensor_values(t);
  return s;
}

std::string ref(const Value* v) { return v ? "%" + print_name(v->name()) : "_"; }

std::string typed_ref(const Value* v) {
  if (!v) return "_";
  const TensorType& t = v->type;
  if (t.dtype == DType::Undefined && !t.rank_known) return ref(v);
  return ref(v) + ": " + t.str();
}

bool is_graph_attr(const Attribute& a) {
  return a.kind == Attribute::Kind::Graph || a.kind == Attribute::Kind::Graphs;
}

void print_graph(const Graph& g, const std::string& indent, std::string& out);

void print_node(const Node& n, const std::string& indent, std::string& out) {
  out += indent;
  if (n.num_outputs() > 0) {
    for (int j = 0; j < n.num_outputs(); ++j) out += (j ? ", " : "") + typed_ref(n.output(j));
    out += " = ";
  }
  if (!n.domain().empty()) out += n.domain() + ".";
  out += n.op_type() + "(";
  for (int i = 0; i < n.num_inputs(); ++i) out += (i ? ", " : "") + ref(n.input(i));
  out += ")";
  bool first = true;
  for (const auto& [name, a] : n.attrs) {
    if (is_graph_attr(a)) continue;
    out += first ? " {" : ", ";
    first = false;
    out += print_name(name) + "=" + print_attribute(a);
  }
  if (!first) out += "}";
  if (!n.name().empty()) out += "  # " + print_name(n.name());
  out += "\n";
  for (const auto& [name, a] : n.attrs) {
    if (a.kind == Attribute::Kind::Graph) {
      out += indent + "  " + print_name(name) + ": ";
      if (a.g) print_graph(*a.g, indent + "  ", out);
      else out += "graph <null>\n";
    } else if (a.kind == Attribute::Kind::Graphs) {
      for (size_t k = 0; k < a.graphs.size(); ++k) {
        out += indent + "  " + print_name(name) + "[" + std::to_string(k) + "]: ";
        if (a.graphs[k]) print_graph(*a.graphs[k], indent + "  ", out);
        else out += "graph <null>\n";
      }
    }
  }
}

// Prints "graph name ...\n" and the body; the caller has already written the line's indent.
void print_graph(const Graph& g, const std::string& indent, std::string& out) {
  out += "graph " + print_name(g.name);
  if (!g.opsets.empty()) {
    out += " (opset";
    bool first = true;
    for (const auto& [domain, version] : g.opsets) {
      out += std::string(first ? " " : ", ") + (domain.empty() ? "ai.onnx" : domain) + " " +
             std::to_string(version);
      first = false;
    }
    out += ")";
  }
  out += "\n";
  const std::string in = indent + "  ";
  for (const Value* v : g.inputs()) {
    out += in + "input  " + typed_ref(v);
    if (v && v->is_constant() && printable_values(v->constant())) out += " = " + tensor_values(v->constant());
    out += "\n";
  }
  for (const Value* v : g.constants()) {
    if (v->is_graph_input()) continue;
    out += in + "const  " + typed_ref(v);
    if (printable_values(v->constant())) out += " = " + tensor_values(v->constant());
    out += "\n";
  }
  for (const Node* n : g.nodes()) print_node(*n, in, out);
  for (const Value* v : g.outputs()) out += in + "output " + ref(v) + "\n";
}

}  // namespace

std::string print_name(const std::string& name) {
  if (name.empty()) return quoted(name);
  for (char c : name)
    if (!plain_char(c)) return quoted(name);
  return name;
}

std::string print_attribute(const Attribute& a) {
  auto list = [](const auto& xs, auto fmt) {
    std::string s = "[";
    for (size_t i = 0; i < xs.size(); ++i) s += (i ? "," : "") + fmt(xs[i]);
    return s + "]";
  };
  switch (a.kind) {
    case Attribute::Kind::Float: return float_text(a.f);
    case Attribute::Kind::Int: return std::to_string(a.i);
    case Attribute::Kind::String: return quoted(a.s);
    case Attribute::Kind::Tensor: return tensor_text(a.t);
    case Attribute::Kind::Graph: return "graph " + (a.g ? print_name(a.g->name) : std::string("<null>"));
    case Attribute::Kind::Floats: return list(a.floats, float_text);
    case Attribute::Kind::Ints: return list(a.ints, [](int64_t v) { return std::to_string(v); });
    case Attribute::Kind::Strings: return list(a.strings, quoted);
    case Attribute::Kind::Tensors: return list(a.tensors, tensor_text);
    case Attribute::Kind::Graphs:
      return list(a.graphs, [](const std::shared_ptr<Graph>& g) {
        return "graph " + (g ? print_name(g->name) : std::string("<null>"));
      });
    case Attribute::Kind::Type: return "type " + a.type.str();
  }
  return "?";
}

std::string print(const Graph& g) {
  std::string out;
  print_graph(g, "", out);
  return out;
}

}  // namespace kiln::ir
