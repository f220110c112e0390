// The optimizer inside Session: every level gives the same outputs, with symbolic batch dims,
// and `keep` (debug values) turns it off so the kept values still exist.
#include <kiln/session.h>

#include "frontend/onnx/exporter.h"
#include "frontend/onnx/importer.h"
#include "pass_test_util.h"

namespace kiln::passes::testing {

namespace {
std::string model_bytes() {
  Builder b;
  ir::Value* x = b.g->add_input("x", ir::TensorType(DType::Float, {ir::Dim::sym("batch"), 6}));
  ir::Value* h = b.op("Identity", {x});
  ir::Value* mean = b.op("ReduceMean", {h}, {{"axes", Is({-1})}});
  ir::Value* dev = b.op("Sub", {h, mean});
  ir::Value* var = b.op("ReduceMean", {b.op("Mul", {dev, dev})}, {{"axes", Is({-1})}});
  ir::Value* ln = b.op("Div", {dev, b.op("Sqrt", {b.op("Add", {var, b.scalar(1e-5f)})})});
  ir::Value* y = b.op("Add", {b.op("MatMul", {ln, b.rand({6, 4})}), b.rand({4})});
  ir::Value* named = b.g->add_value("hidden");
  b.g->add_node("Relu", {y}, {named});
  b.out(named);
  return onnx_fe::export_model_bytes(*b.g);
}
}  // namespace

TEST(SessionLevels, SameOutputsAtEveryLevel) {
  std::string bytes = model_bytes();
  Tensor x = random_tensor(DType::Float, {5, 6}, 11);
  std::vector<Tensor> want = Session::create_from_bytes(bytes, SessionOptions{.opt_level = 0})->run({x});
  for (int level = 1; level <= 3; ++level) {
    auto s = Session::create_from_bytes(bytes, SessionOptions{.opt_level = level});
    EXPECT_EQ(s->outputs()[0].name, "hidden");
    EXPECT_EQ(s->outputs()[0].symbols[0], "batch");
    expect_close(s->run({x})[0], want[0], 1e-5);
  }
}

TEST(SessionLevels, KeepTurnsTheOptimizerOff) {
  SessionOptions o;
  o.keep = {"Identity_out__0"};
  auto s = Session::create_from_bytes(model_bytes(), o);
  auto out = s->run(std::map<std::string, Tensor>{{"x", random_tensor(DType::Float, {2, 6}, 3)}});
  EXPECT_EQ(out.count("Identity_out__0"), 1u);
}

}  // namespace kiln::passes::testing

namespace kiln::passes::testing {

TEST(SessionLevels, PlainLayerNormWithSquareIsFound) {
  auto s = Session::create_from_bytes(model_bytes(), SessionOptions{.opt_level = 2});
  (void)s;  // the structure is checked on the graph directly below
  auto g = onnx_fe::load_model_bytes(model_bytes(), ".");
  OptimizeOptions o;
  o.level = 3;
  optimize(*g, o);
  EXPECT_EQ(count(*g, "LayerNormalization"), 1);
  EXPECT_EQ(count(*g, "Identity"), 0);
}

}  // namespace kiln::passes::testing
