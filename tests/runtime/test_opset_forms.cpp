// bert_tiny_op13 as today's exporters write it, made by kiln's own ONNX writer: at opset 18
// (ReduceMean's axes an input) and at opset 23 with the Gelu and Attention ops. Each runs with
// bert_tiny_op13's kernel count and matches its reference outputs; ONNX Runtime
// (onnxruntime-node from ../shared/peers/setup.sh) loads each file and agrees. Without the
// shared models or the peer the test skips, and fails under CI=true.
#include <gtest/gtest.h>
#include <kiln/session.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "frontend/onnx/exporter.h"
#include "frontend/onnx/importer.h"
#include "ir/graph_util.h"
#include "ops/core/infer_graph.h"
#include "passes/pipelines.h"
#include "runtime/session_access.h"
#include "testdata/model_dir.h"

namespace kiln::testing {
namespace {

namespace fs = std::filesystem;

fs::path source_dir() {
  const char* src = std::getenv("KILN_SOURCE_DIR");
  return fs::path(src ? src : KILN_SOURCE_DIR);
}
fs::path bert_dir() { return source_dir() / ".." / "shared" / "models" / "bert_tiny_op13"; }
bool under_ci() {
  const char* ci = std::getenv("CI");
  return ci && std::string(ci) == "true";
}

// ReduceMean's axes attribute becomes its second input, as opset 18 writes it.
std::unique_ptr<ir::Graph> at_opset_18(const fs::path& model) {
  auto g = onnx_fe::load_model(model);
  const std::vector<ir::Node*> nodes = g->nodes();
  for (ir::Node* n : nodes) {
    if (n->op_type() != "ReduceMean" || !n->has_attr("axes")) continue;
    const std::vector<int64_t> axes = n->attr_ints("axes");
    ir::Value* a = g->add_constant(g->unique_name(n->name() + "_axes"),
                                   Tensor::from_vector<int64_t>({static_cast<int64_t>(axes.size())}, axes));
    ir::Attributes attrs = n->attrs;
    attrs.erase("axes");
    ir::Value* y = g->add_value(g->unique_name(n->output(0)->name()), n->output(0)->type);
    g->add_node("ReduceMean", {n->input(0), a}, {y}, std::move(attrs), g->unique_name(n->name()));
    g->replace_all_uses(n->output(0), y);
  }
  ir::remove_dead_nodes(*g);
  g->opsets[""] = 18;
  g->topological_sort();
  return g;
}

// kiln's optimizer finds LayerNormalization, Gelu and kiln.Attention; each kiln.Attention(Q,
// K_T, V, mask) is written back as the opset-23 Attention op (keys untransposed, the mask
// expanded to [B, 1, Sq, Skv] as ONNX Runtime requires).
std::unique_ptr<ir::Graph> with_gelu_and_attention(const fs::path& model) {
  auto g = onnx_fe::load_model(model);
  ops::ShapeInference().run(*g);
  passes::OptimizeOptions o;
  o.level = 2;
  passes::optimize(*g, o);
  const std::vector<ir::Node*> nodes = g->nodes();
  for (ir::Node* n : nodes) {
    if (n->domain() != "kiln" || n->op_type() != "Attention" || n->num_inputs() != 4) continue;
    ir::Value *q = n->input(0), *k_t = n->input(1), *v = n->input(2), *mask = n->input(3);
    const auto& kd = k_t->type.dims;
    ir::Value* k = g->add_value(g->unique_name(k_t->name() + "_k"),
                                ir::TensorType(DType::Float, {kd[0], kd[1], kd[3], kd[2]}));
    g->add_node("Transpose", {k_t}, {k}, {{"perm", ir::Attribute::of_ints({0, 1, 3, 2})}}, g->unique_name("k"));
    const std::vector<int64_t> full = {q->type.dims[0].value, 1, q->type.dims[2].value, kd[3].value};
    ir::Value* shape = g->add_constant(g->unique_name("mask_shape"), Tensor::from_vector<int64_t>({4}, full));
    ir::Value* m = g->add_value(g->unique_name("mask_full"), ir::TensorType::from_dims(DType::Float, full));
    g->add_node("Expand", {mask, shape}, {m}, {}, g->unique_name("mask_full"));
    ir::Value* y = g->add_value(g->unique_name(n->output(0)->name()), n->output(0)->type);
    g->add_node("Attention", {q, k, v, m}, {y}, {{"scale", n->attrs.at("scale")}}, g->unique_name(n->name()));
    g->replace_all_uses(n->output(0), y);
  }
  ir::remove_dead_nodes(*g);
  g->opsets.erase("kiln");
  g->opsets[""] = 23;
  g->topological_sort();
  return g;
}

int count_ops(const ir::Graph& g, const std::string& op, const std::string& domain = "") {
  int c = 0;
  for (const ir::Node* n : g.nodes()) c += n->op_type() == op && n->domain() == domain;
  return c;
}

size_t kernels_per_run(const Session& s) { return SessionAccess::plans(s).at(0)->program.instructions.size(); }

void expect_close(const std::vector<Tensor>& got, const std::vector<Tensor>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t k = 0; k < want.size(); ++k) {
    auto c = testdata::compare(got[k], want[k], 1e-3, 1e-4);
    EXPECT_TRUE(c.ok) << what << " output " << k << ": " << c.problem;
  }
}

// onnxruntime-node's outputs on the files (python/tests/ort_outputs.js); nullopt without the peer.
std::optional<std::vector<std::vector<float>>> ort_outputs(const fs::path& model, const fs::path& data_set,
                                                           const fs::path& out_dir, size_t n_outputs) {
  const fs::path peers = source_dir() / ".." / "shared" / "peers";
  const char* prefix = std::getenv("PEERS_NPM_PREFIX");
  const fs::path module = fs::path(prefix ? prefix : "/opt/peers") / "node_modules" / "onnxruntime-node";
  if (!fs::exists(module) || !fs::exists(peers / "tensorproto.js") || std::system("node --version >/dev/null 2>&1") != 0)
    return std::nullopt;
  fs::create_directories(out_dir);
  std::string cmd = "KILN_SHARED_PEERS='" + peers.string() + "' ORT_NODE_MODULE='" + module.string() + "' node '" +
                    (source_dir() / "python" / "tests" / "ort_outputs.js").string() + "' '" + model.string() + "' '" +
                    out_dir.string() + "'";
  for (int k = 0; fs::exists(data_set / ("input_" + std::to_string(k) + ".pb")); ++k)
    cmd += " '" + (data_set / ("input_" + std::to_string(k) + ".pb")).string() + "'";
  if (std::system((cmd + " >'" + (out_dir / "log.txt").string() + "' 2>&1").c_str()) != 0) {
    std::ifstream log(out_dir / "log.txt");
    ADD_FAILURE() << "ONNX Runtime failed on " << model << ": " << std::string(std::istreambuf_iterator<char>(log), {});
    return std::vector<std::vector<float>>{};
  }
  std::vector<std::vector<float>> outs;
  for (size_t k = 0; k < n_outputs; ++k) {
    std::ifstream f(out_dir / ("output_" + std::to_string(k) + ".bin"), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(f)), {});
    std::vector<float> v(bytes.size() / sizeof(float));
    std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
    outs.push_back(std::move(v));
  }
  return outs;
}

TEST(OpsetForms, BertAtOpset18AndWithGeluAndAttentionOpsRunsLikeOpset13) {
  if (!fs::exists(bert_dir() / "model.onnx")) {
    if (under_ci()) FAIL() << "shared models missing at " << bert_dir();
    GTEST_SKIP() << "no shared models";
  }
  const fs::path tmp = fs::temp_directory_path() / ("kiln_opset_forms_" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  const fs::path data = bert_dir() / "test_data_set_0";
  auto base = Session::create((bert_dir() / "model.onnx").string());
  testdata::DataSet ds = testdata::load_data_set(data, base->inputs(), base->outputs());
  expect_close(base->run(ds.inputs), ds.outputs, "bert_tiny_op13");
  const size_t want_kernels = kernels_per_run(*base);

  auto g18 = at_opset_18(bert_dir() / "model.onnx");
  EXPECT_EQ(count_ops(*g18, "ReduceMean"), 18);
  auto g23 = with_gelu_and_attention(bert_dir() / "model.onnx");
  EXPECT_EQ(count_ops(*g23, "Attention"), 4);
  EXPECT_EQ(count_ops(*g23, "Gelu"), 4);
  EXPECT_EQ(count_ops(*g23, "Attention", "kiln"), 0);
  const std::vector<std::pair<std::string, ir::Graph*>> variants = {{"bert_op18", g18.get()}, {"bert_op23", g23.get()}};
  bool ort_missing = false;
  for (const auto& [name, g] : variants) {
    SCOPED_TRACE(name);
    const fs::path file = tmp / (name + ".onnx");
    onnx_fe::save_model(*g, file);
    auto s = Session::create(file.string());
    expect_close(s->run(ds.inputs), ds.outputs, name);
    EXPECT_EQ(kernels_per_run(*s), want_kernels);
    // The reference kernels (no optimizer) agree too: the ops themselves, not only the rewrite.
    auto plain = Session::create(file.string(), SessionOptions{.backend = "reference", .opt_level = 0});
    expect_close(plain->run(ds.inputs), ds.outputs, name + " at level 0 on the reference kernels");
    auto ort = ort_outputs(file, data, tmp / (name + "_ort"), ds.outputs.size());
    if (!ort) {
      ort_missing = true;
      continue;
    }
    for (size_t k = 0; k < ort->size(); ++k) {
      ASSERT_EQ(static_cast<int64_t>((*ort)[k].size()), ds.outputs[k].numel());
      double worst = 0;
      for (size_t i = 0; i < (*ort)[k].size(); ++i)
        worst = std::max(worst, std::abs((*ort)[k][i] - ds.outputs[k].as_double(static_cast<int64_t>(i))));
      EXPECT_LT(worst, 1e-4) << "ONNX Runtime's output " << k;
    }
  }
  fs::remove_all(tmp);
  if (ort_missing) {
    if (under_ci()) FAIL() << "no ONNX Runtime peer (bash ../shared/peers/setup.sh)";
    GTEST_SKIP() << "kiln's part passed; no ONNX Runtime peer to compare with (bash ../shared/peers/setup.sh)";
  }
}

}  // namespace
}  // namespace kiln::testing
