#include "codegen/cpp/cpp_emitter.h"

#include <cctype>

#include "codegen/cpp/code_text.h"
#include "codegen/cpp/emit_context.h"
#include "codegen/cpp/op_emitters.h"
#include "codegen/cpp/weight_packing.h"

namespace kiln::codegen::cpp {

namespace {

std::string describe(const Operand& o) {
  if (o.buffer < 0) return "-";
  std::string where;
  switch (o.storage.kind) {
    case StorageKind::Input: where = "input " + std::to_string(o.storage.index); break;
    case StorageKind::Output: where = "output " + std::to_string(o.storage.index); break;
    case StorageKind::Constant: where = "weights"; break;
    case StorageKind::Arena: where = "arena+" + std::to_string(o.storage.offset); break;
  }
  return dtype_name(o.dtype) + dims_str(o.dims) + " (" + (o.storage.host ? "host " : "") + where + ")";
}

// Comments must not end a line in a backslash or hold "*/"; node names come from model files.
std::string comment_safe(std::string s) {
  for (char& ch : s)
    if (ch == '\\' || ch == '\n' || ch == '\r' || static_cast<unsigned char>(ch) < 32) ch = '_';
  return s;
}

}  // namespace

std::string identifier(const std::string& s) {
  std::string r;
  for (char ch : s) {
    const bool ok = std::isalnum(static_cast<unsigned char>(ch)) != 0;
    if (ok) r += ch;
    else if (!r.empty() && r.back() != '_') r += '_';
  }
  while (!r.empty() && r.back() == '_') r.pop_back();
  if (r.size() > 40) r = r.substr(r.size() - 40);
  while (!r.empty() && r.front() == '_') r.erase(r.begin());
  return r;
}

CppEmitter::CppEmitter(const std::vector<std::string>& isa, bool onednn)
    : panel_(panel_for(isa)), avx512_(has_avx512(isa)), onednn_(onednn) {}

void CppEmitter::begin(int signature, const PlanSource& source, const std::vector<Operand>& inputs,
                       const std::vector<Operand>& outputs) {
  signature_ = signature;
  SignatureCode sc;
  for (const Operand& o : inputs) sc.inputs.push_back({o.value->name(), o.dtype, o.dims});
  for (const Operand& o : outputs) sc.outputs.push_back({o.value->name(), o.dtype, o.dims});
  for (const auto& a : source.plan->arenas) sc.arena_bytes = std::max(sc.arena_bytes, a.bytes);
  for (const Operand& o : outputs) ctype(o.dtype);  // an unsupported output type fails here
  signatures.push_back(std::move(sc));
}

std::string instruction_comment(const Step& s) {
  const plan::PlanInstruction& i = *s.instruction;
  std::string f = "// " + comment_safe(i.domain.empty() ? i.op : i.domain + "." + i.op) + " '" + comment_safe(i.node) +
                  "'  [" + comment_safe(i.spec.str()) + "]\n";
  for (size_t i = 0; i < s.inputs.size(); ++i) f += "//   in " + std::to_string(i) + "   " + describe(s.inputs[i]) + "\n";
  for (size_t i = 0; i < s.outputs.size(); ++i) f += "//   out " + std::to_string(i) + "  " + describe(s.outputs[i]) + "\n";
  return f;
}

std::string function_name(int signature, const Step& s, std::set<std::string>& used) {
  std::string base = "s" + std::to_string(signature) + "_" + std::to_string(s.index);
  // A copy has no node: named after what it does and the value it moves.
  const std::string id = identifier(s.node ? s.node->name() : s.instruction->spec.impl + "_" + s.instruction->node);
  if (!id.empty()) base += "_" + id;
  std::string name = base;
  for (int k = 2; !used.insert(name).second; ++k) name = base + "_" + std::to_string(k);
  return name;
}

void CppEmitter::step(const Step& s) {
  if (!s.node || !s.instruction->device.empty())
    throw Error("code generation: instruction " + std::to_string(s.index) +
                " is placed on a device; the C++ target takes a plan that is not placed");
  EmitContext ctx(s, weights, kernels, panel_, avx512_);
  OpEmitFn fn = find_op_emitter(*s.node);
  if (!fn) throw ctx.unsupported("the C++ target has no emitter for this op");
  const std::string name = function_name(signature_, s, used_names_);
  ctx.function = name;
  ctx.onednn = onednn_;
  ctx.states = &states;
  fn(ctx);
  if (ctx.lines.size() == 1 && ctx.lines[0].rfind("//", 0) == 0) ++views;

  std::string f = instruction_comment(s);
  f += "[[gnu::noinline]] bool " + name + "([[maybe_unused]] Run& c) {\n";
  for (const std::string& l : ctx.lines) f += "  " + l + "\n";
  f += "  return true;\n}\n";
  signatures.back().functions.push_back(std::move(f));
  signatures.back().names.push_back(name);
}

}  // namespace kiln::codegen::cpp
