#include "cli_util.h"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace kiln::testing {

namespace fs = std::filesystem;

namespace {
std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}
}  // namespace

CliResult run_kiln(const std::vector<std::string>& args) {
  // A hang in kiln must fail the test, not stall the suite: SIGTERM after the limit, SIGKILL
  // 10 s later. KILN_TEST_TIMEOUT (seconds) raises it for slow builds (sanitizers, valgrind).
  const char* limit = std::getenv("KILN_TEST_TIMEOUT");
  std::string cmd = "timeout -k 10 " + quote(limit && *limit ? limit : "120") + " " + quote(KILN_BINARY);
  for (const std::string& a : args) cmd += " " + quote(a);
  cmd += " 2>&1";
  CliResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (r.exit_code == 124 || r.exit_code == 128 + 9) r.output += "\n[run_kiln: kiln timed out and was killed]\n";
  return r;
}

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("kiln_test_" + std::to_string(getpid()) + "_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

onnx::ModelProto tiny_model(const std::vector<int64_t>& dims,
                            const std::vector<std::tuple<std::string, std::vector<std::string>, std::vector<std::string>>>& nodes,
                            int opset) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* os = m.add_opset_import();
  os->set_domain("");
  os->set_version(opset);
  auto* g = m.mutable_graph();
  g->set_name("tiny");
  auto add_vi = [&](onnx::ValueInfoProto* vi, const std::string& name, bool shaped) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    if (shaped)
      for (int64_t d : dims) {
        if (d >= 0) tt->mutable_shape()->add_dim()->set_dim_value(d);
        else tt->mutable_shape()->add_dim()->set_dim_param("N");
      }
  };
  add_vi(g->add_input(), "x", true);
  add_vi(g->add_output(), "y", false);
  int i = 0;
  for (const auto& [op, ins, outs] : nodes) {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name("n" + std::to_string(i++));
    for (const auto& s : ins) n->add_input(s);
    for (const auto& s : outs) n->add_output(s);
  }
  return m;
}

void save_model(const onnx::ModelProto& m, const fs::path& path) {
  std::ofstream f(path, std::ios::binary);
  m.SerializeToOstream(&f);
}

fs::path source_dir() { return fs::path(KILN_SOURCE_DIR); }

}  // namespace kiln::testing
