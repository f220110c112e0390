// The cpu backend's kernel for the ONNX Attention op against the reference kernel, in every form
// it takes: grouped KV heads, a KV cache with present outputs, causal masking (with a cache
// and with nonpad_kv_seqlen), boolean and additive masks (broadcast, shorter than the keys),
// softcap, 3-D inputs, two threads; and the forms it leaves to the reference kernel.
#include <gtest/gtest.h>
#include <kiln/tensor.h>

#include <cmath>
#include <random>

#include "backends/backend.h"
#include "ops/core/infer_graph.h"

namespace kiln {
namespace {

struct In {
  std::vector<int64_t> dims;  // empty with absent = true: an optional input left out
  DType dtype = DType::Float;
  bool absent = false;
};

struct AttnCase {
  std::vector<In> ins;
  int outputs = 1;
  ir::Attributes attrs = {};
  int64_t opset = 23;
  int threads = 1;
  std::vector<int64_t> nonpad = {};  // values of input 6
};

// Runs the node on the reference kernel and on the backend; false when the backend declined.
bool check(const AttnCase& c, bool expect_kernel = true) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  ir::Graph g;
  g.opsets[""] = c.opset;
  std::vector<ir::Value*> ins;
  std::vector<Tensor> data;
  for (size_t i = 0; i < c.ins.size(); ++i) {
    const In& in = c.ins[i];
    Tensor t(in.dtype, in.dims);
    for (int64_t k = 0; k < t.numel(); ++k) {
      if (in.dtype == DType::Float) t.data<float>()[k] = u(rng);
      else if (in.dtype == DType::Bool) t.data<bool>()[k] = (rng() % 4) != 0 || k % 7 == 0;
      else t.data<int64_t>()[k] = c.nonpad.at(static_cast<size_t>(k));
    }
    data.push_back(t);
    ins.push_back(in.absent ? nullptr : g.add_input("in" + std::to_string(i), ir::TensorType::from_dims(in.dtype, in.dims)));
  }
  std::vector<ir::Value*> outs;
  for (int i = 0; i < c.outputs; ++i) outs.push_back(g.add_value("y" + std::to_string(i)));
  ir::Node* n = g.add_node("Attention", ins, outs, c.attrs, "attn");
  for (ir::Value* o : outs) g.add_output(o);
  ops::ShapeInference().run(g);
  std::vector<const Tensor*> ptrs;
  for (size_t i = 0; i < data.size(); ++i) ptrs.push_back(c.ins[i].absent ? nullptr : &data[i]);
  const std::vector<Tensor> expected = ops::run_reference(*n, ptrs);
  auto kernel = backends::make_cpu_backend(c.threads)->create(*n);
  EXPECT_EQ(kernel != nullptr, expect_kernel);
  if (!kernel) return false;
  std::vector<Tensor> actual;
  std::vector<Tensor*> out_ptrs;
  for (int i = 0; i < c.outputs; ++i) actual.emplace_back(DType::Float, outs[static_cast<size_t>(i)]->type.static_dims());
  for (Tensor& t : actual) out_ptrs.push_back(&t);
  for (int round = 0; round < 2; ++round) {
    kernel->run(ptrs, out_ptrs);
    for (int k = 0; k < c.outputs; ++k) {
      EXPECT_EQ(actual[k].dims(), expected[k].dims());
      for (int64_t i = 0; i < expected[k].numel(); ++i) {
        const float e = expected[k].data<float>()[i], a = actual[k].data<float>()[i];
        if (std::isnan(e)) {
          EXPECT_TRUE(std::isnan(a)) << "output " << k << " at " << i;
          continue;
        }
        EXPECT_NEAR(a, e, 1e-4f * std::max(1.f, std::fabs(e))) << "output " << k << " at " << i;
        if (std::fabs(a - e) > 1e-4f * std::max(1.f, std::fabs(e))) return true;  // one report is enough
      }
    }
  }
  return true;
}

ir::Attributes with(std::initializer_list<std::pair<const std::string, ir::Attribute>> a) { return a; }

TEST(CpuOnnxAttention, PlainGroupedAndThreeD) {
  check({{{{2, 3, 5, 8}}, {{2, 3, 7, 8}}, {{2, 3, 7, 6}}}});
  check({{{{1, 6, 4, 8}}, {{1, 2, 9, 8}}, {{1, 2, 9, 5}}}, 1, with({{"scale", ir::Attribute::of_float(0.2f)}})});
  check({{{{2, 5, 12}}, {{2, 7, 6}}, {{2, 7, 10}}},
         1,
         with({{"q_num_heads", ir::Attribute::of_int(4)}, {"kv_num_heads", ir::Attribute::of_int(2)}})});
}

TEST(CpuOnnxAttention, KvCacheCausalAndPresentOutputs) {
  // A decoding step: one new query row over 6 cached keys, causal, present outputs written.
  AttnCase step{{{{1, 4, 1, 8}}, {{1, 2, 1, 8}}, {{1, 2, 1, 8}}, {{}, DType::Float, true}, {{1, 2, 6, 8}}, {{1, 2, 6, 8}}},
                3,
                with({{"is_causal", ir::Attribute::of_int(1)}})};
  check(step);
  // A prefill over a cache of 3, causal, two threads.
  AttnCase prefill{{{{2, 2, 5, 4}}, {{2, 2, 5, 4}}, {{2, 2, 5, 3}}, {{}, DType::Float, true}, {{2, 2, 3, 4}}, {{2, 2, 3, 3}}},
                   3,
                   with({{"is_causal", ir::Attribute::of_int(1)}})};
  prefill.threads = 2;
  check(prefill);
}

TEST(CpuOnnxAttention, Masks) {
  check({{{{2, 2, 3, 4}}, {{2, 2, 5, 4}}, {{2, 2, 5, 4}}, {{2, 1, 3, 5}}}});               // additive, per batch
  check({{{{2, 2, 3, 4}}, {{2, 2, 5, 4}}, {{2, 2, 5, 4}}, {{3, 5}, DType::Bool}}});       // boolean, broadcast
  check({{{{1, 2, 3, 4}}, {{1, 2, 6, 4}}, {{1, 2, 6, 4}}, {{1, 2, 3, 4}, DType::Float}}});  // shorter: keys 4, 5 masked
  // Every key of some rows masked: NaN rows, as the reference gives.
  AttnCase none{{{{1, 1, 4, 4}}, {{1, 1, 4, 4}}, {{1, 1, 4, 4}}, {{4, 4}, DType::Bool}}};
  check(none);
}

TEST(CpuOnnxAttention, NonpadKvSeqlenAndSoftcap) {
  AttnCase padded{{{{2, 2, 3, 4}}, {{2, 2, 6, 4}}, {{2, 2, 6, 4}}, {{}, DType::Float, true}, {{}, DType::Float, true},
                   {{}, DType::Float, true}, {{2}, DType::Int64}},
                  1,
                  with({{"is_causal", ir::Attribute::of_int(1)}}),
                  24};
  padded.nonpad = {6, 4};
  check(padded);
  check({{{{1, 2, 3, 4}}, {{1, 2, 5, 4}}, {{1, 2, 5, 4}}}, 1, with({{"softcap", ir::Attribute::of_float(1.5f)}})});
}

TEST(CpuOnnxAttention, DeclinesWhatItDoesNotCompute) {
  // The QK output, and softcap together with masking (ONNX caps the masked scores too).
  check({{{{1, 2, 3, 4}}, {{1, 2, 5, 4}}, {{1, 2, 5, 4}}}, 4}, false);
  check({{{{1, 2, 3, 4}}, {{1, 2, 5, 4}}, {{1, 2, 5, 4}}},
         1,
         with({{"softcap", ir::Attribute::of_float(1.5f)}, {"is_causal", ir::Attribute::of_int(1)}})},
        false);
}

}  // namespace
}  // namespace kiln
