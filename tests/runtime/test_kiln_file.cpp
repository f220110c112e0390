// .kiln files: every shared model compiled, saved and loaded runs bit-identical to the session
// that compiled it, loading compiles nothing, an edited plan's kernels report the spec they were
// given, a plan needing a CPU feature this machine lacks is refused by name, and damaged files
// are refused with a clear error. Shared models missing: skipped, a failure under CI=true.
#include <gtest/gtest.h>
#include <kiln/error.h>
#include <kiln/session.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "frontend/onnx/exporter.h"
#include "frontend/onnx/importer.h"
#include "runtime/kiln_file.h"
#include "runtime/session_access.h"
#include "testdata/model_dir.h"

namespace kiln::testing {
namespace {

namespace fs = std::filesystem;

fs::path models_dir() { return fs::path(KILN_SOURCE_DIR) / ".." / "shared" / "models"; }
bool under_ci() {
  const char* ci = std::getenv("CI");
  return ci && std::string(ci) == "true";
}

fs::path temp_dir() {
  fs::path d = fs::temp_directory_path() / ("kiln_file_test_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

bool bit_identical(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].dtype() != b[i].dtype() || a[i].dims() != b[i].dims() || a[i].nbytes() != b[i].nbytes() ||
        std::memcmp(a[i].raw(), b[i].raw(), a[i].nbytes()) != 0)
      return false;
  return true;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void write_all(const fs::path& p, const std::string& s) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(s.data(), static_cast<std::streamsize>(s.size()));
}

std::vector<fs::path> shared_models() {
  std::vector<fs::path> r;
  if (fs::exists(models_dir()))
    for (const auto& e : fs::directory_iterator(models_dir()))
      if (fs::exists(e.path() / "model.onnx")) r.push_back(e.path());
  std::sort(r.begin(), r.end());
  return r;
}

TEST(KilnFile, EverySharedModelRunsBitIdenticalFromItsKilnFileAndLoadingCompilesNothing) {
  const auto models = shared_models();
  if (models.empty()) {
    if (under_ci()) FAIL() << "shared models missing at " << models_dir();
    GTEST_SKIP() << "no shared models";
  }
  const fs::path tmp = temp_dir();
  for (const fs::path& dir : models) {
    for (int threads : {1, 2}) {
      SCOPED_TRACE(dir.filename().string() + " threads " + std::to_string(threads));
      SessionOptions o;
      o.threads = threads;
      auto direct = Session::create((dir / "model.onnx").string(), o);
      const fs::path kiln = tmp / (dir.filename().string() + ".kiln");
      direct->save(kiln.string());
      auto loaded = Session::create(kiln.string(), o);
      // Both with their final kernels (a conv may serve its first runs on a direct form while
      // its Winograd weights are transformed in the background).
      direct->wait_ready();
      loaded->wait_ready();
      const SessionStats st = loaded->stats();
      EXPECT_EQ(st.plans_loaded, 1);
      EXPECT_EQ(st.plans_built, 0);
      EXPECT_EQ(st.optimizer_passes, 0);
      EXPECT_EQ(st.lowering_passes, 0);
      EXPECT_EQ(st.kernel_choices, 0);
      EXPECT_GT(direct->stats().kernel_choices, 0);
      // Every model has convolutions or linear layers, whose packed weights load as stored.
      EXPECT_GT(st.packed_buffers_loaded, 0);
      EXPECT_EQ(st.kernels_repacked, 0);
      ASSERT_EQ(loaded->inputs().size(), direct->inputs().size());
      for (const fs::path& set : testdata::find_data_sets(dir)) {
        testdata::DataSet ds = testdata::load_data_set(set, direct->inputs(), direct->outputs());
        EXPECT_TRUE(bit_identical(loaded->run(ds.inputs), direct->run(ds.inputs))) << set;
      }
      EXPECT_EQ(loaded->stats().plans_built, 0);
      // The loaded plan is the saved one, spec for spec.
      auto a = SessionAccess::plans(*direct), b = SessionAccess::plans(*loaded);
      ASSERT_EQ(a.size(), 1u);
      ASSERT_EQ(b.size(), 1u);
      ASSERT_EQ(a[0]->plan.instructions.size(), b[0]->plan.instructions.size());
      for (size_t i = 0; i < a[0]->plan.instructions.size(); ++i) {
        EXPECT_EQ(a[0]->plan.instructions[i].spec, b[0]->plan.instructions[i].spec) << i;
        const auto& k = b[0]->program.instructions[i].kernel;
        if (k) {
          EXPECT_EQ(k->spec(), b[0]->plan.instructions[i].spec) << i;
        }
      }
      EXPECT_EQ(a[0]->memory.offset_of, b[0]->memory.offset_of);
    }
  }
  fs::remove_all(tmp);
}

// Every parameter a kernel lists, set to each of its other valid values in the saved plan (in
// every instruction that lists it at once, one load per parameter value): the loaded kernels
// report the edited specs, and the model's outputs stay within tolerance.
TEST(KilnFile, EditedSpecsAreTheKernelsSpecs) {
  const auto models = shared_models();
  if (models.empty()) {
    if (under_ci()) FAIL() << "shared models missing at " << models_dir();
    GTEST_SKIP() << "no shared models";
  }
  const fs::path tmp = temp_dir();
  int edits = 0, loads = 0;
  int64_t repacked = 0;
  for (const fs::path& dir : models) {
    auto direct = Session::create((dir / "model.onnx").string());
    const fs::path kiln = tmp / "m.kiln";
    direct->save(kiln.string());
    const auto cp = SessionAccess::plans(*direct).at(0);
    auto backend = backends::make_cpu_backend(1);
    const std::vector<fs::path> sets = testdata::find_data_sets(dir);
    ASSERT_FALSE(sets.empty());
    testdata::DataSet ds = testdata::load_data_set(sets[0], direct->inputs(), direct->outputs());
    // (parameter, value) -> the instructions that list the value and hold another.
    std::map<std::pair<std::string, std::string>, std::vector<std::pair<size_t, plan::ParamValue>>> edits_of;
    for (size_t i = 0; i < cp->plan.instructions.size(); ++i) {
      const plan::KernelSpec& spec = cp->plan.instructions[i].spec;
      if (spec.on_reference()) continue;
      for (const auto& [param, values] : backend->param_choices(*cp->program.instructions[i].node, spec))
        for (const plan::ParamValue& v : values)
          if (v != spec.params.at(param)) edits_of[{param, plan::param_str(v)}].push_back({i, v});
    }
    for (const auto& [what, where] : edits_of) {
      runtime::KilnFile f = runtime::read_kiln_file(kiln.string());
      std::map<size_t, plan::KernelSpec> edited;
      for (const auto& [i, v] : where) {
        plan::KernelSpec e = cp->plan.instructions[i].spec;
        e.params[what.first] = v;
        f.manifest["plans"][0]["plan"]["instructions"][i]["kernel"] = plan::to_json(e);
        edited[i] = e;
      }
      const fs::path out = tmp / "edited.kiln";
      runtime::write_kiln_file(out.string(), f);
      auto s = Session::create(out.string());
      ++loads;
      // A kernel whose spec was edited packs its weights for that spec, not the stored ones.
      EXPECT_LE(s->stats().kernels_repacked, static_cast<int64_t>(edited.size()));
      repacked += s->stats().kernels_repacked;
      const auto loaded = SessionAccess::plans(*s).at(0);
      for (const auto& [i, e] : edited) {
        ASSERT_TRUE(loaded->program.instructions[i].kernel) << e.str();
        EXPECT_EQ(loaded->program.instructions[i].kernel->spec(), e);
        ++edits;
      }
      const std::vector<Tensor> outs = s->run(ds.inputs);
      for (size_t o = 0; o < outs.size(); ++o) {
        auto c = testdata::compare(outs[o], ds.outputs[o], 1e-3, 1e-4);
        EXPECT_TRUE(c.ok) << dir.filename() << " " << what.first << "=" << what.second << ": " << c.problem;
      }
    }
  }
  EXPECT_GT(edits, 0) << "no kernel of the shared models lists a parameter";
  EXPECT_GT(repacked, 0) << "no edited kernel packed its own weights";
  std::cout << edits << " kernel parameters edited over " << loads << " loads\n";
  fs::remove_all(tmp);
}

// A plan made for one thread, loaded into a two-thread session: only the work splits are
// derived again (counted), and the outputs still match the reference.
TEST(KilnFile, AnotherThreadCountRederivesOnlyTheSplits) {
  const fs::path dir = fs::path(KILN_SOURCE_DIR) / "models" / "squeezenet1_1";
  const fs::path tmp = temp_dir();
  Session::create((dir / "model.onnx").string())->save((tmp / "one.kiln").string());
  SessionOptions two;
  two.threads = 2;
  auto s = Session::create((tmp / "one.kiln").string(), two);
  const SessionStats st = s->stats();
  EXPECT_EQ(st.plan_threads, 1);
  EXPECT_GT(st.splits_rederived, 0);
  EXPECT_EQ(st.kernel_choices, 0);
  EXPECT_EQ(st.lowering_passes, 0);
  for (const auto& cp : SessionAccess::plans(*s))
    for (const lower::Instruction& ins : cp->program.instructions)
      if (ins.kernel) {
        EXPECT_EQ(ins.kernel->spec().threads, 2) << ins.node->describe();
      }
  for (const fs::path& set : testdata::find_data_sets(dir)) {
    testdata::DataSet ds = testdata::load_data_set(set, s->inputs(), s->outputs());
    const std::vector<Tensor> outs = s->run(ds.inputs);
    for (size_t o = 0; o < outs.size(); ++o) {
      auto c = testdata::compare(outs[o], ds.outputs[o], 1e-3, 1e-4);
      EXPECT_TRUE(c.ok) << set << ": " << c.problem;
    }
  }
  fs::remove_all(tmp);
}

// Two inputs' worth of a small static model, for the refusal tests.
fs::path small_kiln(const fs::path& tmp) {
  const fs::path model = fs::path(KILN_SOURCE_DIR) / "models" / "squeezenet1_1" / "model.onnx";
  auto s = Session::create(model.string());
  const fs::path out = tmp / "small.kiln";
  s->save(out.string());
  return out;
}

TEST(KilnFile, APlanNeedingAMissingCpuFeatureIsRefusedByName) {
  const fs::path tmp = temp_dir();
  const fs::path good = small_kiln(tmp);
  runtime::KilnFile f = runtime::read_kiln_file(good.string());
  f.manifest["plans"][0]["plan"]["isa"] = {"avx2"};
  runtime::write_kiln_file((tmp / "isa.kiln").string(), f);
  ::setenv("KILN_HIDE_CPU_FEATURES", "avx2", 1);
  try {
    Session::create((tmp / "isa.kiln").string());
    ADD_FAILURE() << "loaded a plan needing a hidden CPU feature";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'avx2'"), std::string::npos) << e.what();
  }
  ::unsetenv("KILN_HIDE_CPU_FEATURES");
  f.manifest["plans"][0]["plan"]["isa"] = {"quantum-fma"};
  runtime::write_kiln_file((tmp / "isa.kiln").string(), f);
  EXPECT_THROW(Session::create((tmp / "isa.kiln").string()), Error);
  fs::remove_all(tmp);
}

TEST(KilnFile, DamagedFilesAreRefusedWithAClearError) {
  const fs::path tmp = temp_dir();
  const std::string good = read_all(small_kiln(tmp));
  auto refused = [&](std::string bytes, const std::string& says) {
    write_all(tmp / "bad.kiln", bytes);
    try {
      Session::create((tmp / "bad.kiln").string());
      ADD_FAILURE() << "accepted a file that should say '" << says << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  std::string flipped = good;
  flipped[flipped.size() / 2] ^= 0x10;
  refused(flipped, "checksum");
  refused(good.substr(0, good.size() / 3), "");
  refused(good.substr(0, 12), "");
  std::string format = good;
  format[8] = 9;
  refused(format, "format 9");
  // Sealed again after the edit, so the manifest's own checks answer.
  auto edited = [&](const std::function<void(nlohmann::json&)>& edit, const std::string& says) {
    runtime::KilnFile f = runtime::parse_kiln_file(good);
    edit(f.manifest);
    refused(runtime::serialize_kiln_file(f), says);
  };
  edited([](nlohmann::json& m) { m["plans"][0]["plan"]["version"] = 99; }, "version 99");
  edited(
      [](nlohmann::json& m) {
        for (auto& b : m["plans"][0]["plan"]["buffers"])
          if (b.contains("arena")) {
            b["offset"] = m["plans"][0]["plan"]["arenas"][0]["bytes"].get<int64_t>() + 64;
            break;
          }
      },
      "offset");
  edited(
      [](nlohmann::json& m) {
        for (auto& b : m["plans"][0]["plan"]["buffers"])
          if (b.contains("arena")) b["offset"] = 0;  // every buffer on top of the others
      },
      "memory plan is invalid");
  edited([](nlohmann::json& m) { m["plans"][0]["plan"]["instructions"][0]["node_index"] = 100000; }, "instruction 0");
  edited([](nlohmann::json& m) { m["plans"][0]["plan"]["instructions"][1]["inputs"][0] = 0; }, "instruction 1");
  // A plan placed on devices (a code generation target's, codegen/device_plan.h) is not run.
  edited([](nlohmann::json& m) { m["plans"][0]["plan"]["instructions"][0]["node_index"] = -1; }, "copies between devices");
  edited(
      [](nlohmann::json& m) {
        auto& i = m["plans"][0]["plan"]["instructions"][0];
        i["device"] = "cuda";
        i["stream"] = 0;
        i["after"] = nlohmann::json::array();
      },
      "placed on devices");
  edited([](nlohmann::json& m) { m["plans"][0]["plan"]["instructions"][2]["kernel"]["impl"] = "no_such_kernel"; },
         "cannot build");
  edited([](nlohmann::json& m) { m["plans"][0]["dims"] = {{1, 3, 5, 5}}; }, "input");
  edited([](nlohmann::json& m) { m.erase("plans"); }, "plans");
  fs::remove_all(tmp);
}

// A symbolic batch: the shapes given at compile time load ready; another compiles on first use
// from the stored graph, once.
TEST(KilnFile, PrecompiledShapesLoadAndOthersCompileOnce) {
  const fs::path resnet = models_dir() / "resnet18" / "model.onnx";
  if (!fs::exists(resnet)) {
    if (under_ci()) FAIL() << "missing " << resnet;
    GTEST_SKIP() << "no shared models";
  }
  auto g = onnx_fe::load_model(resnet);
  g->inputs()[0]->type.dims[0] = ir::Dim::sym("batch");
  for (ir::Value* v : g->outputs()) v->type = ir::TensorType::unranked(v->type.dtype);
  for (ir::Node* n : g->nodes())
    for (ir::Value* o : n->outputs())
      if (o) o->type = ir::TensorType::unranked(o->type.dtype);
  const fs::path tmp = temp_dir();
  onnx_fe::save_model(*g, tmp / "dyn.onnx");
  auto s = Session::create((tmp / "dyn.onnx").string());
  s->prepare({{1, 3, 224, 224}});
  s->prepare({{4, 3, 224, 224}});
  s->save((tmp / "dyn.kiln").string());
  auto loaded = Session::create((tmp / "dyn.kiln").string());
  EXPECT_EQ(loaded->stats().plans_loaded, 2);
  s->wait_ready();
  loaded->wait_ready();
  for (int64_t batch : {1, 4, 3, 3}) {
    Tensor x(DType::Float, {batch, 3, 224, 224});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>((i * 7919) % 1000) / 1000.f;
    for (Session* each : {s.get(), loaded.get()}) {
      each->prepare({{batch, 3, 224, 224}});
      each->wait_ready();
    }
    const auto want = s->run(std::vector<Tensor>{x});
    EXPECT_TRUE(bit_identical(loaded->run(std::vector<Tensor>{x}), want)) << "batch " << batch;
  }
  const SessionStats st = loaded->stats();
  EXPECT_EQ(st.plans_built, 1);  // batch 3, once
  EXPECT_EQ(st.optimizer_passes, 0);
  fs::remove_all(tmp);
}

}  // namespace
}  // namespace kiln::testing
