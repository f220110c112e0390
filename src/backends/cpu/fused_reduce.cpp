// kiln.FusedReduce: a ReduceSum/Mean/Max/Min with its elementwise and view prologue and its
// elementwise epilogue (made by src/fusion/collapse_groups.cpp) as one kernel. The prologue
// runs on the elementwise evaluator, with rows cut so that none spans reduced and kept axes,
// and each tile goes straight into the accumulators: the reduction's input never reaches
// memory. The epilogue (ops of the reduced shape) runs on the same evaluator over the reduced
// values before the node's output is written.
//
//   [outer, n, inner], n reduced:  inner == 1  a row (or part of one) adds into one output
//                                  inner > 1   a row adds element by element into an output row
#include <algorithm>
#include <limits>
#include <optional>

#include "backends/cpu/elementwise_program.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/reduce_spec.h"
#include "backends/cpu/simd.h"
#include "backends/cpu/simd_reduce.h"

namespace kiln::backends::cpu {

namespace {

KILN_SIMD float fold_row(ReduceKind kind, float acc, const float* v, int64_t n) {
  if (kind == ReduceKind::Max || kind == ReduceKind::Min) {
    const bool is_max = kind == ReduceKind::Max;
    return simd::pick(acc, simd::extreme(v, n, is_max), is_max);
  }
  return acc + simd::sum(v, n);
}

KILN_SIMD void fold_columns(ReduceKind kind, float* __restrict y, const float* __restrict v, int64_t n) {
  if (kind == ReduceKind::Max || kind == ReduceKind::Min) {
    const bool is_max = kind == ReduceKind::Max;
    for (int64_t j = 0; j < n; ++j) y[j] = simd::pick(y[j], v[j], is_max);
    return;
  }
  for (int64_t j = 0; j < n; ++j) y[j] += v[j];
}

class FusedReduceKernel : public Kernel {
 public:
  bool runs_in_team() const override { return true; }
  FusedReduceKernel(std::unique_ptr<ElementwiseProgram> p, ReduceSpec spec, std::unique_ptr<ElementwiseProgram> epi,
                    int64_t reduced_numel, std::vector<int64_t> reduced_dims, int threads)
      : program_(std::move(p)), spec_(std::move(spec)), epilogue_(std::move(epi)), reduced_numel_(reduced_numel),
        reduced_dims_(std::move(reduced_dims)), threads_(threads) {}

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    std::vector<float> scratch;
    float* y = outputs[0]->data<float>();
    if (epilogue_) {
      scratch.resize(static_cast<size_t>(reduced_numel_));
      y = scratch.data();
    }
    reduce(inputs, y);
    if (!epilogue_) return;
    Tensor reduced = Tensor::wrap(DType::Float, reduced_dims_, y);
    std::vector<const Tensor*> ins{&reduced};
    ins.insert(ins.end(), inputs.begin(), inputs.end());
    epilogue_->run(ins, outputs, threads_);
  }

 private:
  void reduce(const std::vector<const Tensor*>& inputs, float* y) const {
    const int64_t I = spec_.inner, N = spec_.n, L = program_->row_length();
    const int64_t rows_per_outer = N * I / L;
    const ReduceKind kind = spec_.kind;
    const float init = kind == ReduceKind::Max   ? -std::numeric_limits<float>::infinity()
                       : kind == ReduceKind::Min ? std::numeric_limits<float>::infinity()
                                                 : 0.f;
    const float scale = kind == ReduceKind::Mean ? 1.f / static_cast<float>(N) : 1.f;
    const int threads = spec_.outer * N * I >= kParallelMinElements ? threads_ : 1;
    // Outer slices own disjoint outputs, so threads split them.
    parallel_for(spec_.outer, threads, [&](int64_t b, int64_t e) {
      std::fill(y + b * I, y + e * I, init);
      program_->for_tiles(inputs, b * rows_per_outer, e * rows_per_outer,
                          [&](int64_t row, int64_t c, int64_t n, const float* const* vals) {
                            const int64_t flat = row * L + c;
                            if (I == 1) {
                              float& acc = y[flat / N];
                              acc = fold_row(kind, acc, vals[0], n);
                            } else {
                              fold_columns(kind, y + flat / (N * I) * I + flat % I, vals[0], n);
                            }
                          });
      if (scale != 1.f)
        for (int64_t i = b * I; i < e * I; ++i) y[i] *= scale;
    });
  }

  std::unique_ptr<ElementwiseProgram> program_;
  ReduceSpec spec_;
  std::unique_ptr<ElementwiseProgram> epilogue_;  // null when the reduction is the output
  int64_t reduced_numel_;
  std::vector<int64_t> reduced_dims_;
  int threads_;
};

// body = prologue (elementwise/views) -> one reduction -> epilogue (elementwise, reduced shape).
std::unique_ptr<Kernel> make_fused_reduce(const ir::Node& node, int threads) {
  auto it = node.attrs.find("body");
  if (it == node.attrs.end() || !it->second.g) return nullptr;
  const ir::Graph& body = *it->second.g;
  const std::vector<ir::Node*> nodes = body.nodes();
  if (static_cast<int>(body.inputs().size()) != node.num_inputs() || body.outputs().size() != 1 || nodes.empty())
    return nullptr;
  size_t at = 0;
  std::optional<ReduceSpec> spec;
  for (; at < nodes.size() && !spec; ++at) spec = reduce_spec(*nodes[at]);
  if (!spec || spec->n == 0) return nullptr;
  const ir::Node* reduce = nodes[at - 1];
  std::vector<const ir::Node*> prologue(nodes.begin(), nodes.begin() + static_cast<std::ptrdiff_t>(at - 1));
  std::vector<const ir::Node*> epilogue(nodes.begin() + static_cast<std::ptrdiff_t>(at), nodes.end());
  std::vector<const ir::Value*> ins(body.inputs().begin(), body.inputs().end());
  auto p = ElementwiseProgram::compile(prologue, ins, {reduce->input(0)}, &spec->reduced);
  if (!p) return nullptr;
  const ir::Value* r = reduce->output(0);
  std::unique_ptr<ElementwiseProgram> epi;
  if (epilogue.empty()) {
    if (r != body.outputs()[0]) return nullptr;
  } else {
    std::vector<const ir::Value*> epi_ins{r};
    epi_ins.insert(epi_ins.end(), ins.begin(), ins.end());
    epi = ElementwiseProgram::compile(epilogue, epi_ins, {body.outputs()[0]});
    if (!epi) return nullptr;
  }
  const std::vector<int64_t> rd = r->type.static_dims();
  int64_t numel = 1;
  for (int64_t d : rd) numel *= d;
  return std::make_unique<FusedReduceKernel>(std::move(p), std::move(*spec), std::move(epi), numel, rd, threads);
}

}  // namespace

void add_fused_reduce_kernels(std::vector<KernelFactory>& table) {
  table.push_back({"kiln", "FusedReduce", make_fused_reduce});
}

}  // namespace kiln::backends::cpu
