#include "plan_picture.h"

#include <kiln/error.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

namespace kiln::cli {

namespace {

std::string quote(const std::string& s) {
  std::string r = "\"";
  for (char c : s) r += c == '\n' ? std::string("\\n") : (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return r + "\"";
}

// A fill colour per op family, so that a picture's kinds of kernel stand apart.
const char* colour(const std::string& op) {
  if (op.find("Conv") != std::string::npos) return "#dbe9f6";
  if (op.find("MatMul") != std::string::npos || op.find("Gemm") != std::string::npos || op == "Attention")
    return "#e3f1dd";
  if (op.find("Elementwise") != std::string::npos) return "#fbeed5";
  if (op.find("Pool") != std::string::npos) return "#efe1f4";
  if (op.find("Norm") != std::string::npos || op.find("Softmax") != std::string::npos) return "#f8dede";
  return "#eeeeee";
}

}  // namespace

std::vector<Member> instruction_members(const ir::Graph& g, const plan::PlanInstruction& ins) {
  const std::vector<ir::Node*> nodes = g.nodes();
  std::vector<Member> out;
  if (ins.node_index >= 0 && ins.node_index < static_cast<int>(nodes.size())) {
    const ir::Node& n = *nodes[static_cast<size_t>(ins.node_index)];
    auto body = n.attrs.find("body");
    if (body != n.attrs.end() && body->second.g)
      for (const ir::Node* m : body->second.g->nodes()) out.push_back({m->op_type(), m->name()});
  }
  if (out.empty()) out.push_back({(ins.domain.empty() ? "" : ins.domain + ".") + ins.op, ins.node});
  return out;
}

bool is_view(const plan::ExecutablePlan& p, const plan::PlanInstruction& ins) {
  bool view = !ins.outputs.empty();
  for (int id : ins.outputs)
    view = view && id >= 0 && p.buffers.at(static_cast<size_t>(id)).alias_of >= 0 && !p.buffers[static_cast<size_t>(id)].in_place;
  return view;
}

std::string plan_dot(const ir::Graph& g, const plan::ExecutablePlan& p) {
  std::string s = "digraph plan {\n  rankdir=TB;\n  node [shape=box, fontsize=9, style=filled, fillcolor=white];\n"
                  "  edge [fontsize=8];\n";
  std::map<int, std::string> producer;  // buffer -> the node id writing it (following aliases to their root)
  auto root = [&](int b) {
    for (int hops = 0; b >= 0 && p.buffers.at(b).alias_of >= 0 && hops < static_cast<int>(p.buffers.size()); ++hops)
      b = p.buffers[b].alias_of;
    return b;
  };
  for (int id : p.graph_inputs) {
    const std::string n = "in" + std::to_string(id);
    s += "  " + n + " [shape=ellipse, label=" + quote(p.buffers[id].value) + "];\n";
    producer[id] = n;
  }
  for (size_t i = 0; i < p.instructions.size(); ++i) {
    const plan::PlanInstruction& ins = p.instructions[i];
    const std::string op = (ins.domain.empty() ? "" : ins.domain + ".") + ins.op;
    const std::string id = "i" + std::to_string(i);
    s += "  subgraph cluster_" + std::to_string(i) + " {\n    label=" + quote(std::to_string(i) + ": " + op + "\n" + ins.spec.str()) +
         "; fontsize=9; style=filled; color=" + quote(colour(ins.op)) + ";\n";
    // The nodes it stands for: a fused op's body, else itself.
    const std::vector<Member> ms = instruction_members(g, ins);
    std::string members = ms.size() == 1 ? ms[0].name : "";
    if (ms.size() > 1)
      for (const Member& m : ms) members += (members.empty() ? "" : "\n") + m.op + " " + m.name;
    s += "    " + id + " [label=" + quote(members) + "];\n  }\n";
    for (int in : ins.inputs) {
      if (in < 0) continue;
      const plan::PlanBuffer& b = p.buffers[in];
      if (b.kind == lower::BufferKind::Constant) continue;
      auto it = producer.find(root(in));
      if (it == producer.end()) it = producer.find(in);
      if (it == producer.end()) continue;
      std::string shape = dtype_name(b.dtype) + "[";
      for (size_t k = 0; k < b.dims.size(); ++k) shape += (k ? "," : "") + std::to_string(b.dims[k]);
      s += "  " + it->second + " -> " + id + " [label=" + quote(shape + "]") + "];\n";
    }
    for (int out : ins.outputs)
      if (out >= 0) producer[out] = producer[root(out)] = id;
  }
  for (int id : p.graph_outputs) {
    const std::string n = "out" + std::to_string(id);
    s += "  " + n + " [shape=ellipse, label=" + quote(p.buffers[id].value) + "];\n";
    auto it = producer.find(id);
    if (it != producer.end()) s += "  " + it->second + " -> " + n + ";\n";
  }
  return s + "}\n";
}

void render_dot(const std::string& dot, const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path tmp = fs::temp_directory_path() / ("kiln-plan-" + std::to_string(::getpid()) + ".dot");
  std::ofstream(tmp) << dot;
  std::string format = fs::path(path).extension().string();
  format = format.empty() ? "svg" : format.substr(1);
  const std::string cmd = "dot -T" + format + " -o '" + path + "' '" + tmp.string() + "' 2>&1";
  std::FILE* pipe = popen(cmd.c_str(), "r");
  std::string out;
  if (pipe) {
    char buf[512];
    while (std::fgets(buf, sizeof buf, pipe)) out += buf;
  }
  const int rc = pipe ? pclose(pipe) : -1;
  fs::remove(tmp);
  if (rc != 0) {
    if (out.find("not found") != std::string::npos || rc == 127 * 256)
      throw Error("drawing " + path + " needs Graphviz's dot (Debian: apt install graphviz)");
    throw Error("Graphviz's dot failed on " + path + ": " + out);
  }
}

}  // namespace kiln::cli
