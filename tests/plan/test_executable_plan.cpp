// The executable plan as data: every instruction of every shared model has a KernelSpec, the
// backend builds the same kernel from the spec alone, and each parameter the backend lists may
// be set to each of its valid values: the kernel then reports the edited spec and computes
// what the reference kernel computes. Shared models missing: skipped on a user's machine, a
// failure under CI=true.
#include <gtest/gtest.h>

#include <kiln/error.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>

#include "backends/backend.h"
#include "frontend/onnx/importer.h"
#include "ops/core/infer_graph.h"
#include "ops/core/registry.h"
#include "passes/pipelines.h"
#include "plan/kernel_spec.h"
#include "runtime/compiled_plan.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

fs::path models_dir() {
  const char* src = std::getenv("KILN_SOURCE_DIR");
  return fs::path(src ? src : KILN_SOURCE_DIR) / ".." / "shared" / "models";
}

bool under_ci() {
  const char* ci = std::getenv("CI");
  return ci && std::string(ci) == "true";
}

std::unique_ptr<ir::Graph> load_optimized(const fs::path& model) {
  auto g = onnx_fe::load_model(model);
  ops::ShapeInference().run(*g);
  passes::optimize(*g);
  return g;
}

std::vector<std::vector<int64_t>> declared_dims(const ir::Graph& g) {
  std::vector<std::vector<int64_t>> dims;
  for (const ir::Value* v : g.inputs()) {
    std::vector<int64_t> d;
    for (const ir::Dim& x : v->type.dims) d.push_back(x.is_static() ? x.value : 1);
    dims.push_back(d);
  }
  return dims;
}

// Runs kernel k (or, k == nullptr, the node's reference kernel) on `ins`.
std::vector<Tensor> run_node(const ir::Node& n, const backends::Kernel* k, const std::vector<const Tensor*>& ins) {
  if (!k) return ops::run_reference(n, ins);
  std::vector<Tensor> outs;
  std::vector<Tensor*> ptrs;
  outs.reserve(n.num_outputs());
  for (int i = 0; i < n.num_outputs(); ++i) {
    const ir::Value* o = n.output(i);
    outs.emplace_back(o ? o->type.dtype : DType::Float, o ? o->type.static_dims() : std::vector<int64_t>{0});
  }
  for (int i = 0; i < n.num_outputs(); ++i) ptrs.push_back(n.output(i) ? &outs[i] : nullptr);
  k->run(ins, ptrs);
  return outs;
}

// Random float inputs in the node's shapes (constants as they are); false when an input is not
// a float or int tensor kiln can make up.
bool make_inputs(const ir::Node& n, std::vector<Tensor>& store, std::vector<const Tensor*>& ins) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  store.reserve(n.num_inputs());
  for (int i = 0; i < n.num_inputs(); ++i) {
    const ir::Value* v = n.input(i);
    if (!v) { ins.push_back(nullptr); continue; }
    if (v->is_constant()) { ins.push_back(&v->constant()); continue; }
    if (v->type.dtype != DType::Float) return false;
    Tensor t(DType::Float, v->type.static_dims());
    for (int64_t e = 0; e < t.numel(); ++e) t.data<float>()[e] = u(rng);
    store.push_back(std::move(t));
    ins.push_back(&store.back());
  }
  return true;
}

void expect_close(const std::vector<Tensor>& got, const std::vector<Tensor>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t o = 0; o < got.size(); ++o) {
    if (!want[o].defined() || want[o].dtype() != DType::Float) continue;
    ASSERT_EQ(got[o].dims(), want[o].dims()) << what;
    // Relative to each value, with a floor relative to the output's scale: a kernel that sums in
    // another order (Winograd's transforms) errs by the size of the terms, not of an output
    // that cancels to near zero.
    double scale = 1;
    for (int64_t e = 0; e < want[o].numel(); ++e) scale = std::max(scale, double(std::abs(want[o].data<float>()[e])));
    double worst = 0;
    for (int64_t e = 0; e < want[o].numel(); ++e) {
      const double a = got[o].data<float>()[e], b = want[o].data<float>()[e];
      worst = std::max(worst, std::abs(a - b) / (3e-2 * scale + std::abs(b)));
    }
    EXPECT_LT(worst, 1e-3) << what << " output " << o;
  }
}

TEST(ExecutablePlan, SpecsRebuildTheirKernelsAndEveryListedValueRuns) {
  if (!fs::exists(models_dir())) {
    if (under_ci()) FAIL() << "shared models missing at " << models_dir();
    GTEST_SKIP() << "no shared models";
  }
  int models = 0, specs = 0, edits = 0;
  for (const auto& entry : fs::directory_iterator(models_dir())) {
    const fs::path model = entry.path() / "model.onnx";
    if (!fs::exists(model)) continue;
    ++models;
    const std::string name = entry.path().filename().string();
    auto g = load_optimized(model);
    for (int threads : {1, 2}) {
      auto backend = backends::make_cpu_backend(threads);
      auto cp = runtime::compile(*g, declared_dims(*g), {}, backend.get());
      ASSERT_EQ(cp->plan.instructions.size(), cp->program.instructions.size());
      for (size_t i = 0; i < cp->program.instructions.size(); ++i) {
        const lower::Instruction& ins = cp->program.instructions[i];
        const plan::KernelSpec& spec = cp->plan.instructions[i].spec;
        const std::string where = name + " threads " + std::to_string(threads) + " " + ins.node->describe();
        ASSERT_EQ(ins.kernel != nullptr, !spec.on_reference()) << where;
        if (!ins.kernel) continue;
        EXPECT_EQ(ins.kernel->spec(), spec) << where;
        EXPECT_EQ(spec.threads, threads) << where;
        ++specs;
        auto again = backend->instantiate(*ins.node, spec);
        ASSERT_TRUE(again) << where << ": " << spec.str() << " does not rebuild";
        EXPECT_EQ(again->spec(), spec) << where;
        for (const auto& [param, values] : backend->param_choices(*ins.node, spec)) {
          ASSERT_TRUE(spec.params.count(param)) << where << ": lists values of '" << param << "' it does not hold";
          std::vector<Tensor> store;
          std::vector<const Tensor*> in_ptrs;
          if (!make_inputs(*ins.node, store, in_ptrs)) continue;
          const std::vector<Tensor> want = run_node(*ins.node, nullptr, in_ptrs);
          for (const plan::ParamValue& v : values) {
            if (v == spec.params.at(param)) continue;
            plan::KernelSpec edited = spec;
            edited.params[param] = v;
            auto k = backend->instantiate(*ins.node, edited);
            ASSERT_TRUE(k) << where << ": " << edited.str() << " declined";
            EXPECT_EQ(k->spec(), edited) << where;
            expect_close(run_node(*ins.node, k.get(), in_ptrs), want, where + " " + edited.str());
            ++edits;
          }
        }
      }
    }
  }
  if (models == 0 && under_ci()) FAIL() << "no models in " << models_dir();
  EXPECT_GT(specs, 0);
  EXPECT_GT(edits, 0);
  std::cout << models << " models, " << specs << " kernel specs rebuilt, " << edits << " parameter edits run\n";
}

TEST(ExecutablePlan, SpecJsonRoundTripsAndRejectsMalformedSpecs) {
  plan::KernelSpec s{.backend = "cpu", .impl = "kiln_winograd", .threads = 2};
  s.params["tile"] = int64_t{4};
  s.params["splits"] = std::vector<int64_t>{1, 2, 3};
  s.params["layout"] = std::string("nhwc");
  EXPECT_EQ(s.str(), "cpu:kiln_winograd{layout=nhwc,splits=[1,2,3],tile=4}");
  EXPECT_EQ(plan::kernel_spec_from_json(nlohmann::json::parse(plan::to_json(s).dump())), s);
  EXPECT_EQ(s.get_int("tile"), 4);
  EXPECT_THROW(s.get_int("layout"), Error);
  EXPECT_THROW(s.get_string("missing"), Error);
  EXPECT_EQ(plan::kernel_spec_from_json(nlohmann::json::parse(R"({"backend":"reference"})")).str(), "reference");
  for (const char* bad : {R"([])", R"({"impl":"x"})", R"({"backend":"cpu"})", R"({"backend":"cpu","impl":"x","threads":0})",
                          R"({"backend":"cpu","impl":"x","params":{"a":1.5}})", R"({"backend":"cpu","impl":"x","params":{"a":[1,"b"]}})"})
    EXPECT_THROW(plan::kernel_spec_from_json(nlohmann::json::parse(bad)), Error) << bad;
}

}  // namespace
}  // namespace kiln
