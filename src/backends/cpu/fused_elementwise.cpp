// Kernels on the elementwise evaluator (elementwise_program.h): kiln.FusedElementwise, a
// fusion group collapsed into one node whose `body` attribute holds the group, and each single
// elementwise op (a one-node program), replacing the reference kernels' per-element broadcast
// walk with vector loops over contiguous runs.
#include "backends/cpu/elementwise_program.h"
#include "backends/cpu/kernels.h"

namespace kiln::backends::cpu {

namespace {

class ProgramKernel : public Kernel {
 public:
  bool runs_in_team() const override { return true; }
  ProgramKernel(std::unique_ptr<ElementwiseProgram> p, std::vector<int> input_index, int threads)
      : program_(std::move(p)), input_index_(std::move(input_index)), threads_(threads) {}
  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    std::vector<const Tensor*> ins;
    ins.reserve(input_index_.size());
    for (int i : input_index_) ins.push_back(inputs[i]);
    program_->run(ins, outputs, threads_);
  }

 private:
  std::unique_ptr<ElementwiseProgram> program_;
  std::vector<int> input_index_;  // run()'s input for each program input
  int threads_;
};

std::unique_ptr<Kernel> make_single(const ir::Node& node, int threads) {
  if (!elementwise_supported(node)) return nullptr;
  std::vector<const ir::Value*> ins;
  std::vector<int> index;
  for (int i = 0; i < node.num_inputs(); ++i) {
    const ir::Value* v = node.input(i);
    // Constants (weights, Clip bounds, Pow exponents) are read at compile time.
    if (!v || v->is_constant()) continue;
    ins.push_back(v);
    index.push_back(i);
  }
  auto p = ElementwiseProgram::compile({&node}, ins, {node.output(0)});
  if (!p) return nullptr;
  return std::make_unique<ProgramKernel>(std::move(p), index, threads);
}

std::unique_ptr<Kernel> make_fused(const ir::Node& node, int threads) {
  auto it = node.attrs.find("body");
  if (it == node.attrs.end() || !it->second.g) return nullptr;
  const ir::Graph& body = *it->second.g;
  if (static_cast<int>(body.inputs().size()) != node.num_inputs()) return nullptr;
  std::vector<const ir::Node*> nodes;
  for (const ir::Node* n : body.nodes()) nodes.push_back(n);
  std::vector<const ir::Value*> ins(body.inputs().begin(), body.inputs().end());
  std::vector<const ir::Value*> outs(body.outputs().begin(), body.outputs().end());
  auto p = ElementwiseProgram::compile(nodes, ins, outs);
  if (!p) return nullptr;
  std::vector<int> index;
  for (int i = 0; i < node.num_inputs(); ++i) index.push_back(i);
  return std::make_unique<ProgramKernel>(std::move(p), index, threads);
}

}  // namespace

void add_elementwise_kernels(std::vector<KernelFactory>& table) {
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "Exp", "Neg", "Abs", "Sqrt", "Reciprocal", "Erf", "HardSwish",
                         "Add", "Sub", "Mul", "Div", "PRelu", "Max", "Min", "Sum", "LeakyRelu", "HardSigmoid",
                         "Clip", "Pow"})
    table.push_back({"", op, make_single});
  table.push_back({"kiln", "SiLU", make_single});
  table.push_back({"kiln", "FusedElementwise", make_fused});
}

}  // namespace kiln::backends::cpu
