// ResNet-18 (the shared model) with its batch dim made symbolic by kiln's ONNX writer: one
// session runs batches of 1, 2 and 7, each item matching the static model's output for it, and
// a shape seen before reuses its plan.
#include <gtest/gtest.h>
#include <kiln/session.h>

#include <cmath>
#include <filesystem>

#include "frontend/onnx/exporter.h"
#include "frontend/onnx/importer.h"
#include "frontend/onnx/tensor_proto.h"

namespace kiln::testing {

namespace fs = std::filesystem;

namespace {
fs::path resnet18() { return fs::path(KILN_SOURCE_DIR) / ".." / "shared" / "models" / "resnet18"; }

std::string dynamic_batch_model() {
  auto g = onnx_fe::load_model(resnet18() / "model.onnx");
  g->inputs()[0]->type.dims[0] = ir::Dim::sym("batch");
  // Drop every inferred type: the batch-1 shapes recorded in the file would contradict.
  for (ir::Value* v : g->outputs()) v->type = ir::TensorType::unranked(v->type.dtype);
  for (ir::Node* n : g->nodes())
    for (ir::Value* o : n->outputs())
      if (o) o->type = ir::TensorType::unranked(o->type.dtype);
  return onnx_fe::export_model_bytes(*g);
}

// Item i: the reference input with a per-item gain and offset, so no two rows are alike.
Tensor item(const Tensor& base, int i) {
  Tensor t = base.clone();
  float* p = t.data<float>();
  for (int64_t k = 0; k < t.numel(); ++k) p[k] = p[k] * (1.0f - 0.08f * static_cast<float>(i)) + 0.05f * static_cast<float>(i);
  return t;
}

Tensor stack(const Tensor& base, int batch) {
  std::vector<int64_t> dims = base.dims();
  dims[0] = batch;
  Tensor out(DType::Float, dims);
  for (int i = 0; i < batch; ++i) {
    Tensor it = item(base, i);
    std::copy(it.data<float>(), it.data<float>() + it.numel(), out.data<float>() + i * it.numel());
  }
  return out;
}
}  // namespace

TEST(Resnet18DynamicBatch, EachItemMatchesStaticModelAndKnownShapesReusePlans) {
  if (!fs::exists(resnet18() / "model.onnx")) GTEST_SKIP() << "no shared resnet18 at " << resnet18();
  Tensor base = onnx_fe::load_tensor_file(resnet18() / "test_data_set_0" / "input_0.pb");
  ASSERT_EQ(base.dims(), (std::vector<int64_t>{1, 3, 224, 224}));
  auto fixed = Session::create((resnet18() / "model.onnx").string());
  auto dynamic = Session::create_from_bytes(dynamic_batch_model());
  EXPECT_EQ(dynamic->inputs()[0].str(), "float[batch,3,224,224]");

  std::vector<Tensor> singles;
  for (int i = 0; i < 7; ++i) singles.push_back(fixed->run(std::vector<Tensor>{item(base, i)})[0]);
  // The items really differ (else a batch that repeated row 0 would pass).
  EXPECT_GT(std::fabs(singles[0].data<float>()[0] - singles[6].data<float>()[0]), 1e-3f);

  int64_t plans = 0;
  for (int batch : {1, 2, 7}) {
    Tensor out = dynamic->run(std::vector<Tensor>{stack(base, batch)})[0];
    ASSERT_EQ(out.dims(), (std::vector<int64_t>{batch, 1000}));
    for (int i = 0; i < batch; ++i)
      for (int64_t k = 0; k < 1000; ++k) {
        float want = singles[i].data<float>()[k];
        ASSERT_NEAR(out.data<float>()[i * 1000 + k], want, 1e-3f + 1e-3f * std::fabs(want))
            << "batch " << batch << ", item " << i << ", logit " << k;
      }
    EXPECT_EQ(dynamic->plans_built(), ++plans) << "batch " << batch << " is a new shape: one plan";
  }
  // Shapes seen before: no plan is built.
  Tensor again = dynamic->run(std::vector<Tensor>{stack(base, 2)})[0];
  dynamic->run(std::vector<Tensor>{stack(base, 1)});
  EXPECT_EQ(dynamic->plans_built(), plans);
  for (int64_t k = 0; k < 1000; ++k)
    ASSERT_NEAR(again.data<float>()[1000 + k], singles[1].data<float>()[k], 1e-3f + 1e-3f * std::fabs(singles[1].data<float>()[k]));
}

}  // namespace kiln::testing
