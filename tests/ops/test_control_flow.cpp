// If/Loop/Scan on graphs built with kiln's IR, run by the reference executor. This binary
// links only the control-flow family, so bodies compute with a test-only op (kiln.test.AddF:
// float addition of equal shapes).
#include <kiln/error.h>

#include "op_test_util.h"
#include "ops/core/infer_graph.h"
#include "ops/core/registry.h"
#include "runtime/reference_executor.h"

namespace kiln::testing {

namespace {

const bool registered = [] {
  ops::Registry::instance().add(
      {.name = "AddF", .domain = "kiln.test", .min_inputs = 2, .max_inputs = 2,
       .infer = [](ops::InferContext& ctx) { ctx.set_output(0, ctx.input(0)); },
       .kernel = [](ops::KernelContext& ctx) {
         const Tensor &a = ctx.input(0), &b = ctx.input(1);
         if (a.dims() != b.dims()) ctx.fail("shapes differ");
         Tensor& o = ctx.make_output(0, DType::Float, a.dims());
         for (int64_t i = 0; i < a.numel(); ++i) o.data<float>()[i] = a.data<float>()[i] + b.data<float>()[i];
       }});
  ops::Registry::instance().add(
      {.name = "CastF", .domain = "kiln.test", .min_inputs = 1, .max_inputs = 1,
       .infer = [](ops::InferContext& ctx) { ctx.set_output(0, DType::Float, {1}); },
       .kernel = [](ops::KernelContext& ctx) {
         ctx.set_output(0, Tensor::from_vector<float>({1}, {static_cast<float>(ctx.input(0).as_double(0))}));
       }});
  // Doubles a 1-D tensor's length (x concatenated with itself).
  ops::Registry::instance().add(
      {.name = "DupF", .domain = "kiln.test", .min_inputs = 1, .max_inputs = 1,
       .infer = [](ops::InferContext& ctx) {
         const ir::TensorType& t = ctx.input(0);
         ctx.set_output(0, DType::Float, {t.rank_known && t.dims[0].is_static() ? ir::Dim(2 * t.dims[0].value) : ctx.fresh_dim()});
       },
       .kernel = [](ops::KernelContext& ctx) {
         const Tensor& a = ctx.input(0);
         Tensor& o = ctx.make_output(0, DType::Float, {2 * a.numel()});
         for (int64_t i = 0; i < 2 * a.numel(); ++i) o.data<float>()[i] = a.data<float>()[i % a.numel()];
       }});
  return true;
}();

Tensor f32(std::vector<int64_t> dims, std::vector<float> v) { return Tensor::from_vector<float>(dims, v); }

std::unique_ptr<ir::Graph> top(int opset = 16) {
  auto g = std::make_unique<ir::Graph>();
  g->opsets[""] = opset;
  g->opsets["kiln.test"] = 1;
  return g;
}

std::shared_ptr<ir::Graph> sub(ir::Graph& parent, const char* name) {
  auto b = std::make_shared<ir::Graph>();
  b->parent = &parent;
  b->name = name;
  return b;
}

std::vector<Tensor> run(ir::Graph& g, const std::vector<Tensor>& in) {
  ops::ShapeInference().run(g);
  return runtime::ReferenceExecutor(g).run(in);
}

}  // namespace

// then: x + x; else: x + c, with c an outer constant; the branch types agree.
TEST(If, BothBranchesAndOuterScope) {
  ASSERT_TRUE(registered);
  auto g = top();
  ir::Value* cond = g->add_input("cond", ir::TensorType(DType::Bool, {}));
  ir::Value* x = g->add_input("x", T(DType::Float, {S("n")}));
  ir::Value* c = g->add_constant("c", f32({3}, {10, 20, 30}));
  auto then_g = sub(*g, "then"), else_g = sub(*g, "else");
  ir::Value* t = then_g->add_value("t");
  then_g->add_node("AddF", {x, x}, {t}, {}, "", "kiln.test");
  then_g->add_output(t);
  ir::Value* e = else_g->add_value("e");
  else_g->add_node("AddF", {x, c}, {e}, {}, "", "kiln.test");
  else_g->add_output(e);
  ir::Value* y = g->add_value("y");
  g->add_node("If", {cond}, {y}, {{"then_branch", ir::Attribute::of_graph(then_g)}, {"else_branch", ir::Attribute::of_graph(else_g)}});
  g->add_output(y);
  Tensor xv = f32({3}, {1, 2, 3});
  expect_near(run(*g, {Tensor::scalar<bool>(true), xv})[0], f32({3}, {2, 4, 6}));
  expect_near(run(*g, {Tensor::scalar<bool>(false), xv})[0], f32({3}, {11, 22, 33}));
  EXPECT_EQ(y->type.str(), "float[n]");
  EXPECT_THROW(run(*g, {f32({2}, {1, 0}), xv}), Error) << "cond must be one value";
}

// Branches of different ranks: the output's rank is unknown; of different extents: a fresh
// symbol. A known cond picks its branch's type.
TEST(If, InferenceMergesBranches) {
  auto g = top();
  ir::Value* cond = g->add_input("cond", ir::TensorType(DType::Bool, {}));
  ir::Value* a = g->add_input("a", T(DType::Float, {2, 3}));
  ir::Value* b = g->add_input("b", T(DType::Float, {2, 4}));
  ir::Value* r1 = g->add_input("r1", T(DType::Float, {2}));
  auto branch = [&](ir::Value* v1, ir::Value* v2, const char* name) {
    auto s = sub(*g, name);
    s->add_output(v1);
    s->add_output(v2);
    return ir::Attribute::of_graph(s);
  };
  ir::Value* y1 = g->add_value("y1");
  ir::Value* y2 = g->add_value("y2");
  g->add_node("If", {cond}, {y1, y2}, {{"then_branch", branch(a, a, "t")}, {"else_branch", branch(b, r1, "e")}});
  ops::ShapeInference().run(*g);
  EXPECT_EQ(y1->type.dims[0].value, 2);
  EXPECT_TRUE(y1->type.dims[1].is_symbolic());
  EXPECT_FALSE(y2->type.rank_known);
  auto g2 = top();
  ir::Value* k = g2->add_constant("k", Tensor::scalar<bool>(false));
  ir::Value* a2 = g2->add_input("a", T(DType::Float, {2, 3}));
  ir::Value* b2 = g2->add_input("b", T(DType::Float, {5}));
  auto t2 = sub(*g2, "t"), e2 = sub(*g2, "e");
  t2->add_output(a2);
  e2->add_output(b2);
  ir::Value* y = g2->add_value("y");
  g2->add_node("If", {k}, {y}, {{"then_branch", ir::Attribute::of_graph(t2)}, {"else_branch", ir::Attribute::of_graph(e2)}});
  ops::ShapeInference().run(*g2);
  EXPECT_EQ(y->type.str(), "float[5]");
}

// acc += float(i) for M iterations; scan output: acc after each.
TEST(Loop, TripCountsAndScanOutputs) {
  auto g = top(13);
  ir::Value* m = g->add_input("M", ir::TensorType(DType::Int64, {}));
  ir::Value* acc0 = g->add_constant("acc0", f32({1}, {0.5f}));
  auto body = sub(*g, "body");
  ir::Value* i = body->add_input("i", ir::TensorType(DType::Int64, {}));
  ir::Value* c = body->add_input("c", ir::TensorType(DType::Bool, {}));
  ir::Value* a = body->add_input("a", {});
  ir::Value* fi = body->add_value("fi");
  ir::Value* a2 = body->add_value("a2");
  body->add_node("CastF", {i}, {fi}, {}, "", "kiln.test");
  body->add_node("AddF", {a, fi}, {a2}, {}, "", "kiln.test");
  body->add_output(c);
  body->add_output(a2);
  body->add_output(a2);
  ir::Value* out = g->add_value("out");
  ir::Value* scan = g->add_value("scan");
  g->add_node("Loop", {m, nullptr, acc0}, {out, scan}, {{"body", ir::Attribute::of_graph(body)}});
  g->add_output(out);
  g->add_output(scan);
  for (int64_t trips : {0, 1, 5}) {
    auto r = run(*g, {Tensor::scalar<int64_t>(trips)});
    float acc = 0.5f;
    std::vector<float> partial;
    for (int64_t k = 0; k < trips; ++k) partial.push_back(acc += static_cast<float>(k));
    expect_near(r[0], f32({1}, {acc}));
    expect_near(r[1], f32({trips, 1}, partial));
  }
  EXPECT_EQ(out->type.str(), "float[1]");
  EXPECT_EQ(scan->type.rank(), 2);
  EXPECT_THROW(run(*g, {f32({1}, {2})}), Error) << "M must be int64";
}

// A carried value that grows each iteration gets a symbolic dim, not the initial one.
TEST(Loop, GrowingCarriedValueIsSymbolic) {
  auto g = top(13);
  ir::Value* m = g->add_input("M", ir::TensorType(DType::Int64, {}));
  ir::Value* x0 = g->add_input("x0", T(DType::Float, {2}));
  auto body = sub(*g, "body");
  body->add_input("i", ir::TensorType(DType::Int64, {}));
  ir::Value* c = body->add_input("c", ir::TensorType(DType::Bool, {}));
  ir::Value* x = body->add_input("x", {});
  ir::Value* x2 = body->add_value("x2");
  body->add_node("DupF", {x}, {x2}, {}, "", "kiln.test");
  body->add_output(c);
  body->add_output(x2);
  ir::Value* out = g->add_value("out");
  g->add_node("Loop", {m, nullptr, x0}, {out}, {{"body", ir::Attribute::of_graph(body)}});
  g->add_output(out);
  auto r = run(*g, {Tensor::scalar<int64_t>(3), f32({2}, {1, 2})});
  EXPECT_EQ(r[0].dims(), (std::vector<int64_t>{16}));
  EXPECT_TRUE(out->type.dims[0].is_symbolic()) << out->type.str();
}

// Scan 9+: two scan inputs (one reversed, axis 1), one state; scan output on axis 1.
TEST(Scan, AxesAndDirections) {
  auto g = top(16);
  ir::Value* s0 = g->add_input("s0", T(DType::Float, {2}));
  ir::Value* x = g->add_input("x", T(DType::Float, {3, 2}));
  ir::Value* z = g->add_input("z", T(DType::Float, {2, 3}));
  auto body = sub(*g, "body");
  ir::Value* s = body->add_input("s", {});
  ir::Value* xt = body->add_input("xt", {});
  ir::Value* zt = body->add_input("zt", {});
  ir::Value* a = body->add_value("a");
  ir::Value* s2 = body->add_value("s2");
  body->add_node("AddF", {s, xt}, {a}, {}, "", "kiln.test");
  body->add_node("AddF", {a, zt}, {s2}, {}, "", "kiln.test");
  body->add_output(s2);
  body->add_output(s2);
  ir::Value* sf = g->add_value("sf");
  ir::Value* ys = g->add_value("ys");
  g->add_node("Scan", {s0, x, z}, {sf, ys},
              {{"body", ir::Attribute::of_graph(body)}, {"num_scan_inputs", ir::Attribute::of_int(2)},
               {"scan_input_axes", ir::Attribute::of_ints({0, -1})}, {"scan_input_directions", ir::Attribute::of_ints({0, 1})},
               {"scan_output_axes", ir::Attribute::of_ints({1})}});
  g->add_output(sf);
  g->add_output(ys);
  auto r = run(*g, {f32({2}, {0, 0}), f32({3, 2}, {1, 2, 3, 4, 5, 6}), f32({2, 3}, {10, 20, 30, 40, 50, 60})});
  // step t reads x[t] and z[:, 2 - t]
  // t0: (1+30, 2+60) = (31, 62); t1: (31+3+20, 62+4+50) = (54, 116); t2: (54+5+10, 116+6+40) = (69, 162)
  expect_near(r[0], f32({2}, {69, 162}));
  expect_near(r[1], f32({2, 3}, {31, 54, 69, 62, 116, 162}));
  EXPECT_EQ(ys->type.str(), "float[2,3]");
  auto bad = run;
  EXPECT_THROW(bad(*g, {f32({2}, {0, 0}), f32({3, 2}, {1, 2, 3, 4, 5, 6}), f32({2, 2}, {1, 2, 3, 4})}), Error)
      << "scan inputs of different lengths";
}

// Scan 8: batch axis 0, sequence axis 1, sequence_lens absent.
TEST(Scan, Opset8Batched) {
  auto g = top(8);
  ir::Value* s0 = g->add_input("s0", T(DType::Float, {2, 1}));
  ir::Value* x = g->add_input("x", T(DType::Float, {2, 3, 1}));
  auto body = sub(*g, "body");
  ir::Value* s = body->add_input("s", {});
  ir::Value* xt = body->add_input("xt", {});
  ir::Value* s2 = body->add_value("s2");
  body->add_node("AddF", {s, xt}, {s2}, {}, "", "kiln.test");
  body->add_output(s2);
  body->add_output(s2);
  ir::Value* sf = g->add_value("sf");
  ir::Value* ys = g->add_value("ys");
  g->add_node("Scan", {nullptr, s0, x}, {sf, ys},
              {{"body", ir::Attribute::of_graph(body)}, {"num_scan_inputs", ir::Attribute::of_int(1)},
               {"directions", ir::Attribute::of_ints({1})}});
  g->add_output(sf);
  g->add_output(ys);
  auto r = run(*g, {f32({2, 1}, {0, 100}), f32({2, 3, 1}, {1, 2, 3, 4, 5, 6})});
  expect_near(r[0], f32({2, 1}, {6, 115}));
  expect_near(r[1], f32({2, 3, 1}, {3, 5, 6, 106, 111, 115}));
  EXPECT_EQ(ys->type.str(), "float[2,3,1]");
}

TEST(Scan, BadAttributes) {
  auto g = top(16);
  ir::Value* x = g->add_input("x", T(DType::Float, {3, 2}));
  auto body = sub(*g, "body");
  body->add_output(body->add_input("xt", {}));
  ir::Value* ys = g->add_value("ys");
  g->add_node("Scan", {x}, {ys}, {{"body", ir::Attribute::of_graph(body)}, {"num_scan_inputs", ir::Attribute::of_int(2)}});
  EXPECT_THROW(ops::ShapeInference().run(*g), Error);
}

}  // namespace kiln::testing
