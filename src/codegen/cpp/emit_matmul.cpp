// Gemm, MatMul and their fused forms as calls of kernels/gemm.h: constant B packed here (alpha
// and transB applied), the bias or Gemm's C folded into the epilogue.
#include <string>
#include <vector>

#include "codegen/cpp/epilogue.h"
#include "codegen/cpp/code_text.h"
#include "codegen/cpp/op_emitters.h"
#include "codegen/cpp/emit_pointwise.h"
#include "codegen/cpp/weight_packing.h"
#include "kernels/gemv.h"

namespace kiln::codegen::cpp {

namespace {

void call_gemm(EmitContext& ctx, int64_t M, int64_t K, int64_t N, const std::string& a, const std::string& bp,
               const std::string& bias, const std::string& z, int64_t ldz) {
  const Epilogue e = epilogue_of(ctx.node);
  ctx.use_kernel("gemm.h");
  ctx.line("kiln_kernels::gemm_packed<" + e.act + ", " + std::to_string(ctx.panel) + ">(" + i64(M) + ", " + i64(K) + ", " + i64(N) + ", " + a + ", " + i64(K) +
           ", " + bp + ", " + bias + ", " + z + ", " + i64(ldz) + ", " + ctx.out(0) + ", " + i64(N) + ", " + e.a + ", " +
           e.b + ", c.team);");
}

// The product by constant weights w ([N][K], k_major: [K][N]) times alpha with bias (N floats,
// or nullptr) and residual z: on the pointwise rows kiln's CPU backend runs linear layers on
// (kernels/pointwise_rows.h) with AVX-512, else on gemm_packed.
void call_product(EmitContext& ctx, int64_t M, int64_t K, int64_t N, const float* w, bool k_major, float alpha,
                  const float* bias, const std::string& z, const std::string& key) {
  // One row, where the plan runs it on kiln's gemv (kernels/gemv.h): the weights read once, in
  // column blocks.
  if (M == 1 && z == "nullptr" && ctx.step.instruction->spec.impl == "gemv") {
    const Epilogue e = epilogue_of(ctx.node);
    const kiln_kernels::GemvLayout L{N, K};
    std::vector<float> packed(static_cast<size_t>(L.packed_size()));
    L.pack(w, k_major, alpha, packed.data());
    ctx.use_kernel("gemv.h");
    const std::string k = "gemv:" + key + (k_major ? "" : ":t") + ":" + literal_float(alpha);
    const std::string b = bias ? ctx.weights(k + ":bias", std::vector<float>(bias, bias + N)) : "nullptr";
    ctx.line("kiln_kernels::gemv_act<" + e.act + ">(kiln_kernels::GemvLayout{" + i64(N) + ", " + i64(K) + "}, " +
             ctx.weights(k, packed) + ", " + ctx.in(0) + ", " + b + ", " + ctx.out(0) + ", " + e.a + ", " + e.b + ", c.team);");
    return;
  }
  if (ctx.avx512) {
    const Epilogue e = epilogue_of(ctx.node);
    const PointwiseCall p = pointwise_call(ctx, ctx.node, K, N, w, k_major, alpha, bias, key);
    ctx.line("kiln_kernels::pointwise_nhwc<" + e.act + ">(" + p.layout + ", " + i64(M) + ", " + ctx.in(0) + ", " + p.weights +
             ", " + p.bias + ", " + z + ", " + ctx.out(0) + ", " + e.a + ", " + e.b + ", " +
             (p.split_outputs ? "true" : "false") + ", c.team);");
    return;
  }
  const std::string bp = ctx.weights("gemm:" + key + (k_major ? "" : ":t") + ":" + std::to_string(alpha) + ":" +
                                         std::to_string(ctx.panel),
                                     pack_gemm_b(w, K, N, !k_major, alpha, ctx.panel));
  const std::string b = bias ? ctx.weights("gemm-bias:" + key, std::vector<float>(bias, bias + N)) : "nullptr";
  call_gemm(ctx, M, K, N, ctx.in(0), bp, b, z, N);
}

}  // namespace

void emit_gemm(EmitContext& ctx) {
  const ir::Node& n = ctx.node;
  const Operand& a = ctx.step.inputs.at(0);
  const Operand& y = ctx.step.outputs.at(0);
  if (a.dtype != DType::Float) throw ctx.unsupported("only float Gemm is emitted");
  if (n.attr_int("transA", 0)) throw ctx.unsupported("transA is not emitted");
  if (!ctx.is_constant(1)) throw ctx.unsupported("a B computed at run time is not emitted");
  const Tensor& b = ctx.constant(1);
  const bool tb = n.attr_int("transB", 0) != 0;
  const int64_t M = y.dims[0], N = y.dims[1], K = a.dims[1];
  const float alpha = n.attr_float("alpha", 1.f), beta = n.attr_float("beta", 1.f);
  std::vector<float> bias;
  std::string z = "nullptr";
  if (ctx.has_input(2) && beta != 0.f) {
    const Operand& c = ctx.step.inputs[2];
    if (ctx.is_constant(2) && (c.numel() == N || c.numel() == 1)) {
      const float* cd = ctx.constant(2).data<float>();
      bias.resize(N);
      for (int64_t j = 0; j < N; ++j) bias[j] = beta * cd[c.numel() == 1 ? 0 : j];
    } else if (c.numel() == M * N && beta == 1.f) {
      z = ctx.in(2);
    } else {
      throw ctx.unsupported("this form of C is not emitted");
    }
  }
  const std::string key = n.input(1)->name() + (bias.empty() ? "" : ":" + n.input(2)->name() + ":" + std::to_string(beta));
  call_product(ctx, M, K, N, b.data<float>(), !tb, alpha, bias.empty() ? nullptr : bias.data(), z, key);
}

void emit_gemv_conv(EmitContext& ctx) {
  const Operand& x = ctx.step.inputs.at(0);
  const Operand& y = ctx.step.outputs.at(0);
  const Tensor& w = ctx.constant(1);
  const int64_t C = x.dims.back(), O = y.dims.back();
  if (x.numel() != C || y.numel() != O || w.rank() != 4 || w.dim(0) != O || w.dim(1) != C || w.dim(2) != 1 ||
      w.dim(3) != 1 || ctx.has_input(3))
    throw ctx.unsupported("the plan's gemv runs a 1x1 conv of one pixel, without a residual");
  const float* bias = ctx.has_input(2) ? ctx.constant(2).data<float>() : nullptr;
  call_product(ctx, 1, C, O, w.data<float>(), false, 1.f, bias, "nullptr",
               ctx.node.input(1)->name() + (bias ? ":" + ctx.node.input(2)->name() : ""));
}

void emit_matmul(EmitContext& ctx) {
  const Operand& a = ctx.step.inputs.at(0);
  if (a.dtype != DType::Float) throw ctx.unsupported("only float MatMul is emitted");
  if (!ctx.is_constant(1)) return emit_matmul_runtime(ctx);
  if (ctx.step.inputs[1].dims.size() != 2 || a.dims.size() < 2)
    throw ctx.unsupported("only a MatMul by a constant 2-D B or of two computed operands is emitted");
  const Tensor& b = ctx.constant(1);
  const int64_t K = b.dim(0), N = b.dim(1), M = a.numel() / K;
  const float* bias = nullptr;
  if (ctx.has_input(2)) {
    if (!ctx.is_constant(2) || ctx.step.inputs[2].numel() != N) throw ctx.unsupported("the bias must be a constant [N]");
    bias = ctx.constant(2).data<float>();
  }
  call_product(ctx, M, K, N, b.data<float>(), true, 1.f, bias,
               "nullptr", ctx.node.input(1)->name() + (bias ? ":" + ctx.node.input(2)->name() : ""));
}

}  // namespace kiln::codegen::cpp
