// A model with a symbolic batch dim emitted for two batch sizes (kiln compile --target cpp --dim
// batch=1,2): the project picks the compiled signature by the input's shape and matches the
// static model at both; a batch it was not compiled for is a clear error. The model is the
// shared resnet18 with its batch dim made symbolic by kiln's ONNX writer.
#include <gtest/gtest.h>
#include <kiln/session.h>

#include <cstdlib>

#include "frontend/onnx/exporter.h"
#include "frontend/onnx/importer.h"
#include "frontend/onnx/tensor_proto.h"
#include "project_build.h"

namespace kiln::codegen {
namespace {

fs::path resnet18() { return fs::path(KILN_SOURCE_DIR) / ".." / "shared" / "models" / "resnet18"; }

// Item i of a batch: the reference input with a per-item gain and offset.
Tensor item(const Tensor& base, int i) {
  Tensor t = base.clone();
  for (int64_t k = 0; k < t.numel(); ++k)
    t.data<float>()[k] = t.data<float>()[k] * (1.0f - 0.08f * static_cast<float>(i)) + 0.05f * static_cast<float>(i);
  return t;
}

Tensor stack(const Tensor& base, int batch) {
  std::vector<int64_t> dims = base.dims();
  dims[0] = batch;
  Tensor out(DType::Float, dims);
  for (int i = 0; i < batch; ++i) {
    const Tensor it = item(base, i);
    std::copy(it.data<float>(), it.data<float>() + it.numel(), out.data<float>() + i * it.numel());
  }
  return out;
}

TEST(CodegenDynamicBatch, TwoCompiledBatchSizesMatchAndAThirdIsRefused) {
  if (!fs::exists(resnet18() / "model.onnx")) {
    if (const char* ci = std::getenv("CI"); ci && std::string(ci) == "true") FAIL() << "no shared resnet18 at " << resnet18();
    GTEST_SKIP() << "no shared resnet18 at " << resnet18();
  }
  const fs::path dir = scratch("dynbatch");
  auto g = onnx_fe::load_model(resnet18() / "model.onnx");
  g->inputs()[0]->type.dims[0] = ir::Dim::sym("batch");
  for (ir::Value* v : g->outputs()) v->type = ir::TensorType::unranked(v->type.dtype);
  for (ir::Node* n : g->nodes())
    for (ir::Value* o : n->outputs())
      if (o) o->type = ir::TensorType::unranked(o->type.dtype);
  onnx_fe::save_model(*g, dir / "model.onnx");

  // Test sets at batch 1 and 2, each item's expected output from the static model.
  const Tensor base = onnx_fe::load_tensor_file(resnet18() / "test_data_set_0" / "input_0.pb");
  auto fixed = Session::create((resnet18() / "model.onnx").string());
  for (int batch : {1, 2}) {
    const Tensor x = stack(base, batch);
    Tensor y(DType::Float, {batch, 1000});
    for (int i = 0; i < batch; ++i) {
      const Tensor one = fixed->run(std::vector<Tensor>{item(base, i)})[0];
      std::copy(one.data<float>(), one.data<float>() + 1000, y.data<float>() + i * 1000);
    }
    const fs::path set = dir / ("test_data_set_" + std::to_string(batch - 1));
    fs::create_directories(set);
    onnx_fe::save_tensor_file(x, "input", set / "input_0.pb");
    onnx_fe::save_tensor_file(y, "output", set / "output_0.pb");
  }
  Result r = emit_and_build(dir, "--dim batch=1,2");
  ASSERT_EQ(r.status, 0) << r.out;
  r = sh((dir / "project" / "build" / "kiln_model_main").string() + " --runs 1 --warmup 0");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("test_data_set_0: output 0 'output': matches"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("test_data_set_1: output 0 'output': matches"), std::string::npos) << r.out;

  // Batch 3 was not compiled.
  const fs::path three = dir / "three" / "test_data_set_0";
  fs::create_directories(three);
  onnx_fe::save_tensor_file(stack(base, 3), "input", three / "input_0.pb");
  r = sh((dir / "project" / "build" / "kiln_model_main").string() + " --runs 1 --warmup 0 --data " +
         (dir / "three").string());
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("no compiled signature has these input shapes: input[3,3,224,224]"), std::string::npos) << r.out;
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace kiln::codegen
