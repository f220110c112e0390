#include <kiln/error.h>

#include "op_test_util.h"
#include "ops/core/infer_graph.h"

namespace kiln::testing {

namespace {

// Runs one op whose inputs may be sequences (run_op types inputs as plain tensors); checks
// the inferred kind against the result. Returns the outputs and, via `types`, the inferred types.
std::vector<Tensor> run_seq(const std::string& op, const std::vector<Tensor>& inputs, ir::Attributes attrs = {},
                            std::vector<ir::TensorType>* types = nullptr, int num_outputs = 1) {
  ir::Graph g;
  g.opsets[""] = 17;
  std::vector<ir::Value*> ins;
  std::vector<const Tensor*> ptrs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined()) { ins.push_back(nullptr); ptrs.push_back(nullptr); continue; }
    ir::TensorType ty;
    if (t.is_sequence()) {
      ty = t.items().empty() ? ir::TensorType::unranked(t.dtype()) : ir::TensorType::from_dims(t.dtype(), t.items()[0].dims());
      ty.is_sequence = true;
    } else {
      ty = ir::TensorType::from_dims(t.dtype(), t.dims());
    }
    ins.push_back(g.add_input("in" + std::to_string(i), ty));
    ptrs.push_back(&inputs[i]);
  }
  std::vector<ir::Value*> outs;
  for (int i = 0; i < num_outputs; ++i) outs.push_back(g.add_value("out" + std::to_string(i)));
  ir::Node* n = g.add_node(op, ins, outs, std::move(attrs), "test_" + op);
  ops::ShapeInference si(0);
  si.infer_node(*n);
  std::vector<Tensor> res = ops::run_reference(*n, ptrs);
  for (int i = 0; i < num_outputs; ++i) {
    EXPECT_EQ(n->output(i)->type.is_sequence, res[i].is_sequence()) << op << " output " << i;
    if (types) types->push_back(n->output(i)->type);
  }
  return res;
}

Tensor i64(std::vector<int64_t> dims, std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(dims, v); }
Tensor f32(std::vector<int64_t> dims, std::vector<float> v) { return Tensor::from_vector<float>(dims, v); }

}  // namespace

TEST(Sequence, ConstructInsertEraseAtLength) {
  Tensor a = f32({2}, {1, 2}), b = f32({3}, {3, 4, 5}), c = f32({1}, {6});
  std::vector<ir::TensorType> types;
  Tensor s = run_seq("SequenceConstruct", {a, b}, {}, &types)[0];
  ASSERT_EQ(s.items().size(), 2u);
  EXPECT_EQ(types[0].str().substr(0, 10), "seq<float[") << "elements differ in length: a symbolic dim";
  s = run_seq("SequenceInsert", {s, c, Tensor::scalar<int64_t>(-1)})[0];  // before the last
  ASSERT_EQ(s.items().size(), 3u);
  expect_near(s.items()[1], c);
  s = run_seq("SequenceInsert", {s, c})[0];  // at the back
  expect_near(s.items()[3], c);
  s = run_seq("SequenceErase", {s, Tensor::scalar<int32_t>(0)})[0];
  expect_near(s.items()[0], c);
  s = run_seq("SequenceErase", {s})[0];  // the last
  ASSERT_EQ(s.items().size(), 2u);
  expect_near(run_seq("SequenceAt", {s, Tensor::scalar<int64_t>(-1)})[0], b);
  Tensor len = run_seq("SequenceLength", {s})[0];
  EXPECT_EQ(len.as_int64(0), 2);
  EXPECT_EQ(len.rank(), 0);
}

TEST(Sequence, EmptyAndBadPositions) {
  Tensor e = run_seq("SequenceEmpty", {}, {{"dtype", ir::Attribute::of_int(static_cast<int64_t>(DType::Int64))}})[0];
  EXPECT_EQ(e.items().size(), 0u);
  EXPECT_EQ(e.dtype(), DType::Int64);
  EXPECT_THROW(run_seq("SequenceErase", {e}), Error);
  EXPECT_THROW(run_seq("SequenceAt", {e, Tensor::scalar<int64_t>(0)}), Error);
  Tensor s = run_seq("SequenceInsert", {e, i64({2}, {1, 2})})[0];
  EXPECT_THROW(run_seq("SequenceAt", {s, Tensor::scalar<int64_t>(1)}), Error);
  EXPECT_THROW(run_seq("SequenceInsert", {s, i64({1}, {1}), Tensor::scalar<int64_t>(3)}), Error);
  EXPECT_THROW(run_seq("SequenceInsert", {s, f32({1}, {1})}), Error) << "dtype mismatch";
}

// SplitToSequence then ConcatFromSequence gives the input back, in every split form.
TEST(Sequence, SplitConcatRoundTrip) {
  Tensor x = random_float({3, 5, 7});
  auto axis = [](int64_t a) { return ir::Attribute::of_int(a); };
  // split lengths along axis 1
  Tensor s = run_seq("SplitToSequence", {x, i64({3}, {1, 3, 1})}, {{"axis", axis(-2)}})[0];
  ASSERT_EQ(s.items().size(), 3u);
  EXPECT_EQ(s.items()[1].dims(), (std::vector<int64_t>{3, 3, 7}));
  expect_near(run_seq("ConcatFromSequence", {s}, {{"axis", axis(1)}})[0], x);
  // a scalar split: pieces of 2, the last one shorter
  s = run_seq("SplitToSequence", {x, Tensor::scalar<int64_t>(2)}, {{"axis", axis(2)}})[0];
  ASSERT_EQ(s.items().size(), 4u);
  EXPECT_EQ(s.items()[3].dims(), (std::vector<int64_t>{3, 5, 1}));
  expect_near(run_seq("ConcatFromSequence", {s}, {{"axis", axis(-1)}})[0], x);
  // no split, keepdims 0: squeezed slices, stacked back with new_axis
  std::vector<ir::TensorType> types;
  s = run_seq("SplitToSequence", {x}, {{"axis", axis(0)}, {"keepdims", axis(0)}}, &types)[0];
  ASSERT_EQ(s.items().size(), 3u);
  EXPECT_EQ(types[0].str(), "seq<float[5,7]>");
  expect_near(run_seq("ConcatFromSequence", {s}, {{"axis", axis(0)}, {"new_axis", axis(1)}})[0], x);
  // stacking along the last new axis
  Tensor st = run_seq("ConcatFromSequence", {s}, {{"axis", axis(-1)}, {"new_axis", axis(1)}})[0];
  EXPECT_EQ(st.dims(), (std::vector<int64_t>{5, 7, 3}));
  EXPECT_EQ(st.as_double(1), x.as_double(35));
  EXPECT_THROW(run_seq("SplitToSequence", {x, i64({2}, {1, 1})}, {{"axis", axis(0)}}), Error) << "sum != extent";
  EXPECT_THROW(run_seq("SplitToSequence", {x}, {{"axis", axis(3)}}), Error);
}

TEST(Sequence, StringsAndMismatchedConcat) {
  Tensor s1(DType::String, {2}), s2(DType::String, {1});
  s1.data<std::string>()[0] = "a";
  s1.data<std::string>()[1] = "b";
  s2.data<std::string>()[0] = "c";
  Tensor seq = run_seq("SequenceConstruct", {s1, s2})[0];
  Tensor cat = run_seq("ConcatFromSequence", {seq}, {{"axis", ir::Attribute::of_int(0)}})[0];
  ASSERT_EQ(cat.numel(), 3);
  EXPECT_EQ(cat.data<std::string>()[2], "c");
  Tensor bad = Tensor::sequence(DType::Float, {f32({2, 2}, {1, 2, 3, 4}), f32({2, 3}, {1, 2, 3, 4, 5, 6})});
  EXPECT_THROW(run_seq("ConcatFromSequence", {bad}, {{"axis", ir::Attribute::of_int(0)}}), Error);
  EXPECT_NO_THROW(run_seq("ConcatFromSequence", {bad}, {{"axis", ir::Attribute::of_int(1)}}));
  EXPECT_THROW(run_seq("SequenceConstruct", {s1, f32({1}, {1})}), Error);
}

}  // namespace kiln::testing
