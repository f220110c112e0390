// Gemm, MatMul and their fused forms as cuBLAS products (kernels/cuda/blas.cuh): a constant B
// stays as the model stores it (transB is cuBLAS's), alpha goes to cuBLAS, and a bias, Gemm's C
// or an activation to the bias_act kernel after it. A MatMul of two computed operands is one
// strided batched product when its batch broadcast is a stride, else one product per matrix.
#include <string>
#include <vector>

#include "codegen/cpp/code_text.h"
#include "codegen/cpp/epilogue.h"
#include "codegen/cuda/cuda_ops.h"

namespace kiln::codegen::cuda {

using cpp::i64;

namespace {

struct Product {
  bool ta = false, tb = false;
  int64_t M = 0, N = 0, K = 0;
  float alpha = 1.f, beta = 0.f;
  std::string a, b;
  int64_t lda = 0, ldb = 0, sa = 0, sb = 0, sc = 0, batch = 1;
  std::string c_offset;  // added to the output pointer ("": none)
};

void call(EmitContext& ctx, const Product& p) {
  const std::string y = p.c_offset.empty() ? ctx.out(0) : ctx.out(0) + " + " + p.c_offset;
  ctx.line("if (const char* e = c.blas->gemm(" + std::string(p.ta ? "true" : "false") + ", " + (p.tb ? "true" : "false") +
           ", " + i64(p.M) + ", " + i64(p.N) + ", " + i64(p.K) + ", " + cpp::literal_float(p.alpha) + ", " + p.a + ", " +
           i64(p.lda) + ", " + i64(p.sa) + ", " + p.b + ", " + i64(p.ldb) + ", " + i64(p.sb) + ", " +
           cpp::literal_float(p.beta) + ", " + y + ", " + i64(p.N) + ", " + i64(p.sc) + ", " + i64(p.batch) +
           ")) return c.fail(e);");
}

// bias_act over the output [rows][N] when there is an epilogue.
void epilogue(EmitContext& ctx, int64_t total, int64_t N, const std::string& bias, const std::string& z) {
  const cpp::Epilogue e = cpp::epilogue_of(ctx.node);
  if (bias == "nullptr" && z == "nullptr" && e.act == "kiln_kernels::Act::None") return;
  ctx.line("KILN_LAUNCH(kiln_kernels::bias_act<" + e.act + ">, kiln_kernels::blocks_for(" + i64(total) +
           "), kiln_kernels::kThreads, c.stream)(" + i64(total) + ", " + i64(N) + ", " + ctx.out(0) + ", " + bias + ", " +
           z + ", " + e.a + ", " + e.b + ");");
}

void matmul_runtime(EmitContext& ctx) {
  const Operand &a = ctx.step.inputs.at(0), &b = ctx.step.inputs.at(1);
  const Operand& y = ctx.step.outputs.at(0);
  if (b.dtype != DType::Float) throw ctx.unsupported("only float MatMul is emitted");
  if (a.dims.size() < 2 || b.dims.size() < 2) throw ctx.unsupported("a MatMul of a vector is not emitted");
  if (ctx.node.domain() == "kiln" && (ctx.has_input(2) || ctx.node.attrs.count("activation")))
    throw ctx.unsupported("a fused MatMul of two computed operands is not emitted");
  if (a.storage == y.storage || b.storage == y.storage) throw ctx.unsupported("a product in place is not emitted");
  Product p;
  p.M = a.dims[a.dims.size() - 2];
  p.K = a.dims.back();
  p.N = b.dims.back();
  p.lda = p.K;
  p.ldb = p.N;
  const std::vector<int64_t> ob(y.dims.begin(), y.dims.end() - 2);
  auto batch = [](const Operand& t) { return std::vector<int64_t>(t.dims.begin(), t.dims.end() - 2); };
  const std::vector<int64_t> ao = cpp::batch_offsets(ob, batch(a)), bo = cpp::batch_offsets(ob, batch(b));
  const int64_t nb = static_cast<int64_t>(ao.size());
  // One strided call when matrix i of each operand is at i times a stride (0: broadcast).
  auto stride_of = [&](const std::vector<int64_t>& o) -> int64_t {
    const int64_t s = nb > 1 ? o[1] - o[0] : 0;
    for (int64_t i = 0; i < nb; ++i)
      if (o[i] != o[0] + i * s) return -1;
    return o[0] == 0 ? s : -1;
  };
  const int64_t as = stride_of(ao), bs = stride_of(bo);
  if (as >= 0 && bs >= 0) {
    p.a = ctx.in(0);
    p.b = ctx.in(1);
    p.sa = as * p.M * p.K;
    p.sb = bs * p.K * p.N;
    p.sc = p.M * p.N;
    p.batch = nb;
    return call(ctx, p);
  }
  for (int64_t i = 0; i < nb; ++i) {
    p.a = ctx.in(0) + " + " + i64(ao[i] * p.M * p.K);
    p.b = ctx.in(1) + " + " + i64(bo[i] * p.K * p.N);
    p.c_offset = i64(i * p.M * p.N);
    call(ctx, p);
  }
}

}  // namespace

void emit_gemm(EmitContext& ctx) {
  const ir::Node& n = ctx.node;
  const Operand& a = ctx.step.inputs.at(0);
  const Operand& y = ctx.step.outputs.at(0);
  if (a.dtype != DType::Float) throw ctx.unsupported("only float Gemm is emitted");
  if (!ctx.is_constant(1)) throw ctx.unsupported("a B computed at run time is not emitted");
  const Tensor& bt = ctx.constant(1);
  Product p;
  p.ta = n.attr_int("transA", 0) != 0;
  p.tb = n.attr_int("transB", 0) != 0;
  p.M = y.dims[0];
  p.N = y.dims[1];
  p.K = p.ta ? a.dims[0] : a.dims[1];
  p.alpha = n.attr_float("alpha", 1.f);
  p.a = ctx.in(0);
  p.lda = p.ta ? p.M : p.K;
  p.b = ctx.weights("gemm-b:" + n.input(1)->name(),
                    std::vector<float>(bt.data<float>(), bt.data<float>() + bt.numel()));
  p.ldb = p.tb ? p.K : p.N;
  const float beta = n.attr_float("beta", 1.f);
  std::string bias = "nullptr", z = "nullptr";
  if (ctx.has_input(2) && beta != 0.f) {
    const Operand& c = ctx.step.inputs[2];
    if (ctx.is_constant(2) && (c.numel() == p.N || c.numel() == 1)) {
      const float* cd = ctx.constant(2).data<float>();
      std::vector<float> v(static_cast<size_t>(p.N));
      for (int64_t j = 0; j < p.N; ++j) v[static_cast<size_t>(j)] = beta * cd[c.numel() == 1 ? 0 : j];
      bias = ctx.weights("gemm-bias:" + n.input(2)->name() + ":" + std::to_string(beta), v);
    } else if (c.numel() == p.M * p.N && c.storage == y.storage) {
      p.beta = beta;  // C is already where the product goes
    } else if (c.numel() == p.M * p.N && beta == 1.f) {
      z = ctx.in(2);
    } else {
      throw ctx.unsupported("this form of C is not emitted");
    }
  }
  if (a.storage == y.storage) throw ctx.unsupported("a product in place is not emitted");
  call(ctx, p);
  epilogue(ctx, y.numel(), p.N, bias, z);
}

void emit_matmul(EmitContext& ctx) {
  const Operand& a = ctx.step.inputs.at(0);
  const Operand& y = ctx.step.outputs.at(0);
  if (a.dtype != DType::Float) throw ctx.unsupported("only float MatMul is emitted");
  if (!ctx.is_constant(1)) return matmul_runtime(ctx);
  if (ctx.step.inputs[1].dims.size() != 2 || a.dims.size() < 2)
    throw ctx.unsupported("only a MatMul by a constant 2-D B or of two computed operands is emitted");
  if (a.storage == y.storage) throw ctx.unsupported("a product in place is not emitted");
  const Tensor& b = ctx.constant(1);
  Product p;
  p.K = b.dim(0);
  p.N = b.dim(1);
  p.M = a.numel() / p.K;
  p.a = ctx.in(0);
  p.lda = p.K;
  p.b = ctx.weights("matmul-b:" + ctx.node.input(1)->name(),
                    std::vector<float>(b.data<float>(), b.data<float>() + b.numel()));
  p.ldb = p.N;
  std::string bias = "nullptr";
  if (ctx.has_input(2)) {
    if (!ctx.is_constant(2) || ctx.step.inputs[2].numel() != p.N) throw ctx.unsupported("the bias must be a constant [N]");
    const float* bd = ctx.constant(2).data<float>();
    bias = ctx.weights("matmul-bias:" + ctx.node.input(2)->name(), std::vector<float>(bd, bd + p.N));
  }
  call(ctx, p);
  epilogue(ctx, y.numel(), p.N, bias, "nullptr");
}

}  // namespace kiln::codegen::cuda
