// Plans per input-shape signature (dynamic batch) and concurrent runs on one session.
#include <gtest/gtest.h>
#include <kiln/session.h>

#include <cmath>
#include <filesystem>
#include <thread>

#include "frontend/onnx/exporter.h"
#include "frontend/onnx/importer.h"
#include "frontend/onnx/tensor_proto.h"

namespace kiln::testing {

namespace fs = std::filesystem;

namespace {
fs::path squeezenet() { return fs::path(KILN_SOURCE_DIR) / "models" / "squeezenet1_1"; }

// SqueezeNet with its batch dim rewritten to the symbol "batch" by kiln's ONNX writer.
std::string dynamic_batch_model() {
  auto g = onnx_fe::load_model(squeezenet() / "model.onnx");
  g->inputs()[0]->type.dims[0] = ir::Dim::sym("batch");
  for (ir::Value* v : g->outputs()) v->type = ir::TensorType::unranked(v->type.dtype);
  for (ir::Node* n : g->nodes())
    for (ir::Value* o : n->outputs())
      if (o) o->type = ir::TensorType::unranked(o->type.dtype);
  return onnx_fe::export_model_bytes(*g);
}

// Item i of a batch: the reference input scaled by (1 + i / 10).
Tensor item(const Tensor& base, int i) {
  Tensor t = base.clone();
  for (int64_t k = 0; k < t.numel(); ++k) t.data<float>()[k] *= 1.0f + 0.1f * static_cast<float>(i);
  return t;
}

Tensor stack(const std::vector<Tensor>& items) {
  std::vector<int64_t> dims = items[0].dims();
  dims[0] = static_cast<int64_t>(items.size());
  Tensor out(DType::Float, dims);
  for (size_t i = 0; i < items.size(); ++i)
    std::copy(items[i].data<float>(), items[i].data<float>() + items[i].numel(), out.data<float>() + i * items[i].numel());
  return out;
}

void expect_row_near(const Tensor& batch, int row, const Tensor& single) {
  const int64_t n = single.numel();
  for (int64_t k = 0; k < n; ++k)
    ASSERT_NEAR(batch.data<float>()[row * n + k], single.data<float>()[k], 1e-4f + 1e-4f * std::fabs(single.data<float>()[k]))
        << "row " << row << " element " << k;
}
}  // namespace

TEST(SessionPlans, DynamicBatchMatchesStaticModelPerItem) {
  Tensor base = onnx_fe::load_tensor_file(squeezenet() / "test_data_set_0" / "input_0.pb");
  auto fixed = Session::create((squeezenet() / "model.onnx").string());
  auto dynamic = Session::create_from_bytes(dynamic_batch_model());
  EXPECT_EQ(dynamic->inputs()[0].str(), "float[batch,3,224,224]");
  std::vector<Tensor> singles;
  for (int i = 0; i < 7; ++i) singles.push_back(fixed->run(std::vector<Tensor>{item(base, i)})[0]);
  int64_t plans = 0;
  for (int batch : {1, 2, 7}) {
    std::vector<Tensor> items(singles.begin(), singles.begin() + batch);
    std::vector<Tensor> ins;
    for (int i = 0; i < batch; ++i) ins.push_back(item(base, i));
    Tensor out = dynamic->run(std::vector<Tensor>{stack(ins)})[0];
    ASSERT_EQ(out.dims(), (std::vector<int64_t>{batch, 1000}));
    for (int i = 0; i < batch; ++i) expect_row_near(out, i, singles[i]);
    EXPECT_EQ(dynamic->plans_built(), ++plans) << "a new shape builds one plan";
  }
  // Known shapes again, each after another: no re-planning, and each run gets its own shape's
  // plan (the session finds the last run's plan without its signature).
  for (int batch : {2, 2, 7, 1, 7}) {
    std::vector<Tensor> ins;
    for (int i = 0; i < batch; ++i) ins.push_back(item(base, i));
    Tensor out = dynamic->run(std::vector<Tensor>{stack(ins)})[0];
    ASSERT_EQ(out.dims(), (std::vector<int64_t>{batch, 1000}));
    expect_row_near(out, batch - 1, singles[batch - 1]);
  }
  EXPECT_EQ(dynamic->plans_built(), plans);
}

TEST(SessionPlans, FourThreadsOneSession) {
  Tensor base = onnx_fe::load_tensor_file(squeezenet() / "test_data_set_0" / "input_0.pb");
  auto s = Session::create((squeezenet() / "model.onnx").string());
  std::vector<Tensor> expected;
  for (int i = 0; i < 4; ++i) expected.push_back(s->run(std::vector<Tensor>{item(base, i)})[0]);
  std::vector<int> bad(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < 3; ++r) {
        Tensor out = s->run(std::vector<Tensor>{item(base, t)})[0];
        for (int64_t k = 0; k < out.numel(); ++k)
          if (out.data<float>()[k] != expected[t].data<float>()[k]) { ++bad[t]; break; }
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(bad[t], 0) << "thread " << t << " got a wrong result";
  EXPECT_EQ(s->plans_built(), 1);
}

}  // namespace kiln::testing
