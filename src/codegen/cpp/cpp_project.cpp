#include "codegen/cpp/cpp_project.h"

#include <kiln/error.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "codegen/cpp/cpp_emitter.h"
#include "codegen/cpp/project_files.h"
#include "codegen/kernel_sources.h"

namespace kiln::codegen {

namespace {

namespace fs = std::filesystem;

void write_file(const fs::path& p, std::string_view text) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (!f) throw Error("cannot write " + p.string());
}

std::string_view kernel_text(const std::string& name) {
  if (const std::string_view text = kernel_source(name); !text.empty()) return text;
  throw Error("code generation: kiln was built without the kernel source '" + name + "'");
}

// `used` and every kernel file they include ("#include \"tile.h\""), transitively.
std::set<std::string> with_includes(std::set<std::string> used) {
  std::vector<std::string> todo(used.begin(), used.end());
  while (!todo.empty()) {
    const std::string name = todo.back();
    todo.pop_back();
    const std::string_view text = kernel_text(name);
    for (size_t at = text.find("#include \""); at != std::string_view::npos; at = text.find("#include \"", at + 1)) {
      const size_t begin = at + 10, end = text.find('"', begin);
      if (end == std::string_view::npos) break;
      const std::string inc(text.substr(begin, end - begin));
      if (used.insert(inc).second) todo.push_back(inc);
    }
  }
  return used;
}

}  // namespace

const std::vector<std::string>& cpp_disabled_passes(bool onednn, bool avx512) {
  // Activations blocked between Winograd convs are written (emit_onednn.cpp) where those convs
  // run on oneDNN; conv chains where their row kernels run (AVX-512: emit_conv_chain.cpp), by
  // rows only (emitted code has no channel-split chain).
  static const std::vector<std::string> always = {"channel_shuffle", "channel_scale", "conv_concat",
                                                  "concat_elementwise", "conv_prologue", "conv_chain_channels",
                                                  "gemv_chain"};
  static const std::vector<std::vector<std::string>> lists = [] {
    std::vector<std::vector<std::string>> v;
    for (int k = 0; k < 4; ++k) {
      std::vector<std::string> names = always;
      if (!(k & 1)) names.push_back("blocked_layout");
      if (!(k & 2)) names.insert(names.end(), {"conv_chain", "conv_chain_input"});
      v.push_back(names);
    }
    return v;
  }();
  return lists[(onednn ? 1 : 0) | (avx512 ? 2 : 0)];
}

CppProjectStats write_cpp_project(const std::vector<PlanSource>& plans, const CppOptions& o, const std::string& dir) {
  if (plans.empty()) throw Error("code generation: no compiled plan to emit");
  cpp::CppEmitter e(o.isa, o.onednn);
  for (size_t g = 0; g < plans.size(); ++g) walk_plan(static_cast<int>(g), plans[g], e);
  e.kernels.insert("common.h");
  const std::set<std::string> files = with_includes(e.kernels);

  cpp::ProjectText t;
  t.source = o.source.empty() ? "a model" : o.source;
  t.sigs = &e.signatures;
  t.embed_weights = o.embed_weights;
  t.isa = o.isa;
  t.kernels.assign(e.kernels.begin(), e.kernels.end());
  t.weights_bytes = static_cast<int64_t>(e.weights.payload().size());
  t.weights_checksum = weights_checksum(e.weights.payload());
  t.threads = o.threads;
  t.states = &e.states;
  t.onednn = files.count("onednn_conv.h") > 0;

  std::error_code ec;
  fs::create_directories(fs::path(dir) / "kernels", ec);
  if (ec) throw Error("cannot create " + dir + ": " + ec.message());
  const fs::path d(dir);
  write_file(d / "model.h", cpp::model_h(t));
  write_file(d / "model.cpp", cpp::model_cpp(t));
  write_file(d / "main.cpp", cpp::main_cpp());
  write_file(d / "CMakeLists.txt", cpp::cmake_lists(t));
  write_file(d / "weights.bin", e.weights.file());
  if (o.embed_weights) write_file(d / "weights_blob.cpp", cpp::weights_blob_cpp());
  else fs::remove(d / "weights_blob.cpp", ec);
  for (const std::string& k : files) write_file(d / "kernels" / k, kernel_text(k));

  CppProjectStats st;
  for (const auto& s : e.signatures) {
    st.instructions += static_cast<int>(s.functions.size());
    st.arena_bytes = std::max(st.arena_bytes, s.arena_bytes);
  }
  st.views = e.views;
  st.kernels.assign(files.begin(), files.end());
  st.weights_bytes = t.weights_bytes;
  st.test_sets = copy_test_sets(o.test_data, dir);
  return st;
}

int copy_test_sets(const std::string& model_dir, const std::string& dir) {
  int n = 0;
  std::error_code ec;
  if (model_dir.empty() || !fs::is_directory(model_dir)) return 0;
  for (const auto& entry : fs::directory_iterator(model_dir)) {
    if (!entry.is_directory() || entry.path().filename().string().rfind("test_data_set_", 0) != 0) continue;
    const fs::path to = fs::path(dir) / entry.path().filename();
    fs::remove_all(to, ec);
    fs::copy(entry.path(), to, fs::copy_options::recursive, ec);
    if (ec) throw Error("cannot copy " + entry.path().string() + " to " + to.string() + ": " + ec.message());
    ++n;
  }
  return n;
}

void write_project_file(const std::string& path, std::string_view text) { write_file(path, text); }

std::set<std::string> kernel_closure(const std::set<std::string>& used) { return with_includes(used); }

std::string_view kernel_file(const std::string& name) { return kernel_text(name); }

}  // namespace kiln::codegen
