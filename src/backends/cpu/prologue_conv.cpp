// kiln.PrologueConv (src/lower/fuse_conv_prologue.h): a FusedElementwise and the 1x1 conv that
// alone reads its output. The threads split the pixels into chunks whose computed input fits a
// share of the L2 (the elementwise evaluator writes a chunk's rows into a thread buffer, tile by
// tile, gathering a Concat's pieces where the group holds one), and kiln's 1x1 kernel multiplies
// each chunk while it is in cache: the conv's input is never written to memory nor read back.
#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>

#include "backends/cpu/cache_size.h"
#include "backends/cpu/elementwise_program.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/onednn_common.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/pointwise_conv.h"

namespace kiln::backends::cpu {

namespace {

// The body's two nodes, the FusedElementwise first, or nothing.
struct Parts {
  const ir::Node* prologue;
  const ir::Node* conv;
};

std::optional<Parts> parts_of(const ir::Node& node) {
  if (node.domain() != "kiln" || node.op_type() != "PrologueConv" || node.num_outputs() != 1) return std::nullopt;
  auto it = node.attrs.find("body");
  if (it == node.attrs.end() || !it->second.g) return std::nullopt;
  const ir::Graph& body = *it->second.g;
  const std::vector<ir::Node*> nodes = body.nodes();
  if (nodes.size() != 2 || static_cast<int>(body.inputs().size()) != node.num_inputs() || body.outputs().size() != 1)
    return std::nullopt;
  const ir::Node *f = nodes[0], *c = nodes[1];
  if (f->domain() != "kiln" || f->op_type() != "FusedElementwise" || f->num_outputs() != 1) return std::nullopt;
  if (c->num_inputs() < 1 || c->input(0) != f->output(0) || body.outputs()[0] != c->output(0)) return std::nullopt;
  for (int i = 1; i < c->num_inputs(); ++i)
    if (c->input(i) == f->output(0)) return std::nullopt;
  return Parts{f, c};
}

class PrologueConvKernel : public Kernel {
 public:
  bool runs_in_team() const override { return true; }
  PrologueConvKernel(std::unique_ptr<ElementwiseProgram> program, std::vector<int> program_inputs,
                     std::vector<const Tensor*> constants, int z_input, const PointwiseConvShape& s, const float* w,
                     const float* bias, int threads)
      : program_(std::move(program)), program_inputs_(std::move(program_inputs)), constants_(std::move(constants)),
        z_input_(z_input),
        pixels_(s.images * s.pixels), K_(s.K), N_(s.N), threads_(std::max(1, threads)),
        gemm_(s.K, s.N, w, bias, s.act, s.N, pointwise_rule(s.K, s.N, threads, kRowsSplitMinWeightBytes)) {
    // A chunk's input takes at most half the L2 (the weights' ranges and the outputs' lines
    // share the rest): smaller chunks read the weights more often. At least two chunks a thread
    // where the pixels allow, so that the threads' shares come out even.
    const int64_t budget = std::max<int64_t>(1, static_cast<int64_t>(l2_cache_bytes()) / 2 / (K_ * 4));
    const int64_t even = (pixels_ + 2 * threads_ - 1) / (2 * threads_);
    chunk_ = std::max<int64_t>(1, std::min(budget, even));
  }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    std::vector<const Tensor*> ins;
    ins.reserve(program_inputs_.size());
    for (size_t k = 0; k < program_inputs_.size(); ++k)
      ins.push_back(program_inputs_[k] >= 0 ? inputs[program_inputs_[k]] : constants_[k]);
    const float* z = z_input_ >= 0 ? inputs[z_input_]->data<float>() : nullptr;
    float* y = outputs[0]->data<float>();
    const int64_t chunks = (pixels_ + chunk_ - 1) / chunk_;
    const int team = product_team(pixels_ * N_, pixels_ * N_ * K_, threads_);
    parallel_for(chunks, team, [&](int64_t c0, int64_t c1) {
      float* buf = static_cast<float*>(dnnl_util::scratch(static_cast<size_t>(chunk_ * K_) * sizeof(float)));
      for (int64_t chunk = c0; chunk < c1; ++chunk) {
        const int64_t m0 = chunk * chunk_, m1 = std::min(pixels_, m0 + chunk_);
        program_->rows_into(ins, m0, m1, buf);  // a row of the program is a pixel
        gemm_.rows(buf, 0, m1 - m0, y + m0 * N_, z ? z + m0 * N_ : nullptr, nullptr);
      }
    });
  }

 private:
  std::unique_ptr<ElementwiseProgram> program_;
  std::vector<int> program_inputs_;       // run()'s input for each of the program's inputs, or -1:
  std::vector<const Tensor*> constants_;  // a constant of the body, held by the node
  int z_input_;                      // run()'s input that is the conv's residual, or -1
  int64_t pixels_, K_, N_;
  int threads_;
  PointwiseRows gemm_;
  int64_t chunk_ = 1;  // pixels per chunk
};

// The program of the FusedElementwise `f` with a row per pixel (rows cut at the last axis), or
// nullptr.
std::unique_ptr<ElementwiseProgram> prologue_program(const ir::Node& f) {
  auto it = f.attrs.find("body");
  if (it == f.attrs.end() || !it->second.g) return nullptr;
  const ir::Graph& body = *it->second.g;
  if (static_cast<int>(body.inputs().size()) != f.num_inputs() || body.outputs().size() != 1) return nullptr;
  const ir::Value* out = body.outputs()[0];
  if (!out->type.is_static() || out->type.rank() < 1) return nullptr;
  std::vector<bool> cut(static_cast<size_t>(out->type.rank()), false);
  cut.back() = true;
  const std::vector<ir::Node*> all = body.nodes();  // a copy: begin() and end() of one vector
  std::vector<const ir::Node*> nodes(all.begin(), all.end());
  std::vector<const ir::Value*> ins(body.inputs().begin(), body.inputs().end());
  return ElementwiseProgram::compile(nodes, ins, {out}, &cut);
}

std::unique_ptr<Kernel> make_prologue_conv(const ir::Node& node, int threads) {
  const std::optional<Parts> p = parts_of(node);
  if (!p || !prologue_conv_takes(*p->conv)) return nullptr;
  const std::optional<PointwiseConvShape> s = pointwise_conv_shape(*p->conv);
  std::unique_ptr<ElementwiseProgram> program = prologue_program(*p->prologue);
  if (!program || !program->rows_in_memory_order() || program->row_length() != s->K ||
      program->rows() != s->images * s->pixels)
    return nullptr;
  const ir::Graph& body = *node.attrs.at("body").g;
  auto input_of = [&](const ir::Value* v) {
    for (size_t i = 0; i < body.inputs().size(); ++i)
      if (body.inputs()[i] == v) return static_cast<int>(i);
    return -1;
  };
  std::vector<int> program_inputs;
  std::vector<const Tensor*> constants;
  for (const ir::Value* v : p->prologue->inputs()) {
    if (!v || (input_of(v) < 0 && !v->is_constant())) return nullptr;
    program_inputs.push_back(input_of(v));
    constants.push_back(v->is_constant() ? &v->constant() : nullptr);
  }
  const ir::Value* z = p->conv->num_inputs() > 3 ? p->conv->input(3) : nullptr;
  const int z_input = z ? input_of(z) : -1;
  if (z && z_input < 0) return nullptr;
  const ir::Value* b = p->conv->num_inputs() > 2 ? p->conv->input(2) : nullptr;
  return std::make_unique<PrologueConvKernel>(std::move(program), std::move(program_inputs), std::move(constants),
                                              z_input, *s,
                                              p->conv->input(1)->constant().data<float>(),
                                              b ? b->constant().data<float>() : nullptr, threads);
}

}  // namespace

bool prologue_conv_takes(const ir::Node& conv) {
  if (!kernel_enabled("kiln_pointwise")) return false;
  const std::optional<PointwiseConvShape> s = pointwise_conv_shape(conv);
  return s && !(conv.num_inputs() > 4 && conv.input(4));
}

void add_prologue_conv_kernels(std::vector<KernelFactory>& table) {
  table.push_back({"kiln", "PrologueConv", make_prologue_conv, "kiln_prologue_pointwise"});
}

}  // namespace kiln::backends::cpu
