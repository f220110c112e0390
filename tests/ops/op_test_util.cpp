#include "op_test_util.h"

#include <kiln/error.h>

#include <cmath>
#include <random>

#include "ops/core/infer_graph.h"

namespace kiln::testing {

namespace {
struct Built {
  ir::Graph g;
  ir::Node* node = nullptr;
};

void build(Built& b, const std::string& op, const std::string& domain, int opset, int domain_opset, int num_outputs,
           const ir::Attributes& attrs, const std::vector<ir::Value*>& ins) {
  b.g.opsets[""] = opset;
  if (!domain.empty()) b.g.opsets[domain] = domain_opset;
  std::vector<ir::Value*> outs;
  for (int i = 0; i < num_outputs; ++i) outs.push_back(b.g.add_value("out" + std::to_string(i)));
  b.node = b.g.add_node(op, ins, outs, attrs, "test_" + op, domain);
  for (ir::Value* o : outs) b.g.add_output(o);
}
}  // namespace

std::vector<kiln::Tensor> run_op(const OpCall& call) {
  Built b;
  std::vector<ir::Value*> ins;
  std::vector<const kiln::Tensor*> ptrs;
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    const kiln::Tensor& t = call.inputs[i];
    if (!t.defined()) { ins.push_back(nullptr); ptrs.push_back(nullptr); continue; }
    bool c = i < call.constant.size() && call.constant[i];
    std::string name = "in" + std::to_string(i);
    ins.push_back(c ? b.g.add_constant(name, t) : b.g.add_input(name, ir::TensorType::from_dims(t.dtype(), t.dims())));
    ptrs.push_back(&call.inputs[i]);
  }
  build(b, call.op, call.domain, call.opset, call.domain_opset, call.num_outputs, call.attrs, ins);
  ops::ShapeInference si(/*max_fold_elements=*/0);
  si.infer_node(*b.node);
  std::vector<kiln::Tensor> outs = ops::run_reference(*b.node, ptrs);
  for (int i = 0; i < call.num_outputs; ++i) {
    const ir::TensorType& t = b.node->output(i)->type;
    if (t.dtype != DType::Undefined) {
      EXPECT_EQ(dtype_name(t.dtype), dtype_name(outs[i].dtype())) << call.op << " output " << i << " dtype: inferred vs kernel";
    }
    if (t.is_static()) {
      EXPECT_EQ(t.static_dims(), outs[i].dims()) << call.op << " output " << i << " shape: inferred " << t.str()
                                                 << " vs kernel " << outs[i].describe();
    }
  }
  return outs;
}

std::vector<ir::TensorType> infer_op(const std::string& op, const std::vector<ir::TensorType>& inputs,
                                     const ir::Attributes& attrs, int num_outputs, int opset,
                                     const std::vector<kiln::Tensor>& values, const std::string& domain,
                                     int domain_opset) {
  Built b;
  std::vector<ir::Value*> ins;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string name = "in" + std::to_string(i);
    if (i < values.size() && values[i].defined()) {
      ins.push_back(b.g.add_constant(name, values[i]));
    } else if (inputs[i].dtype == DType::Undefined && !inputs[i].rank_known) {
      ins.push_back(nullptr);
    } else {
      ins.push_back(b.g.add_input(name, inputs[i]));
    }
  }
  build(b, op, domain, opset, domain_opset, num_outputs, attrs, ins);
  ops::ShapeInference si(/*max_fold_elements=*/0);
  si.infer_node(*b.node);
  std::vector<ir::TensorType> out;
  for (int i = 0; i < num_outputs; ++i) out.push_back(b.node->output(i)->type);
  return out;
}

void expect_near(const kiln::Tensor& actual, const kiln::Tensor& expected, double atol, double rtol) {
  ASSERT_EQ(dtype_name(actual.dtype()), dtype_name(expected.dtype()));
  ASSERT_EQ(actual.dims(), expected.dims());
  if (actual.dtype() == DType::String) {
    for (int64_t i = 0; i < actual.numel(); ++i)
      EXPECT_EQ(actual.data<std::string>()[i], expected.data<std::string>()[i]) << "at " << i;
    return;
  }
  int bad = 0;
  for (int64_t i = 0; i < actual.numel() && bad < 10; ++i) {
    double a = actual.as_double(i), e = expected.as_double(i);
    if (std::isnan(e)) {
      if (!std::isnan(a)) { ADD_FAILURE() << "at " << i << ": got " << a << ", expected NaN"; ++bad; }
      continue;
    }
    if (std::isinf(e)) {
      if (a != e) { ADD_FAILURE() << "at " << i << ": got " << a << ", expected " << e; ++bad; }
      continue;
    }
    if (!(std::fabs(a - e) <= atol + rtol * std::fabs(e))) {
      ADD_FAILURE() << "at " << i << ": got " << a << ", expected " << e;
      ++bad;
    }
  }
}

void expect_error(const std::function<void()>& f, const std::string& what) {
  try {
    f();
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << "error '" << e.what() << "' lacks '" << what << "'";
    return;
  }
  ADD_FAILURE() << "no error; expected one saying '" << what << "'";
}

kiln::Tensor random_float(std::vector<int64_t> dims, float lo, float hi, uint32_t seed) {
  kiln::Tensor t(DType::Float, std::move(dims));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = u(rng);
  return t;
}

ir::TensorType T(DType dtype, std::vector<ir::Dim> dims) { return ir::TensorType(dtype, std::move(dims)); }
ir::Dim S(const char* symbol) { return ir::Dim::sym(symbol); }

}  // namespace kiln::testing
