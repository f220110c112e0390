// Matrix products: MatMul (numpy matmul semantics), Gemm and MatMulInteger.
//
// All three reduce to one row-major kernel, C[M,N] += A[M,K] * B[K,N], run over broadcast batch
// dims. The kernel uses i-k-j order so the innermost loop walks contiguous rows of B and C
// (vectorizable), blocked over k and j so the slab of B in use stays in cache; BERT's and
// resnet's dense layers run through it.
#include <algorithm>
#include <type_traits>

#include "ops/core/dispatch.h"
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

namespace {

// out[M,N] += a[M,K] * b[K,N]; all row-major and contiguous.
template <typename C>
void gemm_acc(int64_t M, int64_t N, int64_t K, const C* __restrict a, const C* __restrict b, C* __restrict out) {
  constexpr int64_t kBlockK = 128, kBlockN = 512;  // a 128x512 float slab of B is 256 KiB
  for (int64_t j0 = 0; j0 < N; j0 += kBlockN) {
    const int64_t j1 = std::min(N, j0 + kBlockN);
    for (int64_t k0 = 0; k0 < K; k0 += kBlockK) {
      const int64_t k1 = std::min(K, k0 + kBlockK);
      for (int64_t i = 0; i < M; ++i) {
        C* __restrict crow = out + i * N;
        const C* arow = a + i * K;
        for (int64_t k = k0; k < k1; ++k) {
          const C av = arow[k];
          const C* __restrict brow = b + k * N;
          for (int64_t j = j0; j < j1; ++j) crow[j] += av * brow[j];
        }
      }
    }
  }
}

// Elements of t converted to the compute type C.
template <typename T, typename C>
std::vector<C> to_compute(const Tensor& t) {
  const T* p = t.data<T>();
  std::vector<C> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = static_cast<C>(p[i]);
  return v;
}

// numpy matmul geometry on concrete dims: 1-D operands are promoted (A to [1,K], B to [K,1])
// and the promoted axis dropped from the result; leading dims broadcast.
struct MatMulGeom {
  int64_t M = 0, K = 0, N = 0;
  std::vector<int64_t> a_batch, b_batch, batch, out_dims;
};

template <typename Ctx>
MatMulGeom matmul_geom(const Ctx& ctx, const std::vector<int64_t>& ad, const std::vector<int64_t>& bd) {
  if (ad.empty() || bd.empty()) ctx.fail("MatMul operands must have rank >= 1 (got a scalar)");
  MatMulGeom g;
  const size_t ar = ad.size(), br = bd.size();
  g.M = ar == 1 ? 1 : ad[ar - 2];
  g.K = ad[ar - 1];
  const int64_t kb = br == 1 ? bd[0] : bd[br - 2];
  g.N = br == 1 ? 1 : bd[br - 1];
  if (g.K != kb)
    ctx.fail("inner dimensions do not match: A has K=" + std::to_string(g.K) + ", B has K=" + std::to_string(kb));
  if (ar > 2) g.a_batch.assign(ad.begin(), ad.end() - 2);
  if (br > 2) g.b_batch.assign(bd.begin(), bd.end() - 2);
  g.batch = broadcast_dims({g.a_batch, g.b_batch}, ctx.node());
  g.out_dims = g.batch;
  if (ar > 1) g.out_dims.push_back(g.M);
  if (br > 1) g.out_dims.push_back(g.N);
  return g;
}

// out (zero-initialized, batch x M x N) = a (a_batch x M x K) @ b (b_batch x K x N).
template <typename C>
void matmul_batched(const MatMulGeom& g, const C* a, const C* b, C* out) {
  const int64_t mk = g.M * g.K, kn = g.K * g.N, mn = g.M * g.N;
  BroadcastWalker walk(g.batch, {g.a_batch, g.b_batch});
  walk.run([&](int64_t i, const int64_t* off) { gemm_acc<C>(g.M, g.N, g.K, a + off[0] * mk, b + off[1] * kn, out + i * mn); });
}

// Static-type version of matmul_geom; unknown extents become fresh dims.
void infer_matmul(InferContext& ctx, DType out_dtype, bool same_dtypes) {
  const ir::TensorType& a = ctx.input(0);
  const ir::TensorType& b = ctx.input(1);
  if (same_dtypes && a.dtype != b.dtype && a.dtype != DType::Undefined && b.dtype != DType::Undefined)
    ctx.fail("operand dtypes differ: " + a.str() + " vs " + b.str());
  if (!a.rank_known || !b.rank_known) return ctx.set_output(0, ir::TensorType::unranked(out_dtype));
  if (a.rank() == 0 || b.rank() == 0) ctx.fail("MatMul operands must have rank >= 1 (got a scalar)");
  const int ar = a.rank(), br = b.rank();
  const ir::Dim& ka = a.dims[ar - 1];
  const ir::Dim& kb = br == 1 ? b.dims[0] : b.dims[br - 2];
  if (ka.is_static() && kb.is_static() && ka.value != kb.value)
    ctx.fail("inner dimensions do not match: A " + a.str() + ", B " + b.str());
  std::vector<ir::Dim> abatch, bbatch;
  if (ar > 2) abatch.assign(a.dims.begin(), a.dims.end() - 2);
  if (br > 2) bbatch.assign(b.dims.begin(), b.dims.end() - 2);
  ir::TensorType out = broadcast_types(ctx, {ir::TensorType(out_dtype, abatch), ir::TensorType(out_dtype, bbatch)}, out_dtype);
  if (ar > 1) out.dims.push_back(a.dims[ar - 2]);
  if (br > 1) out.dims.push_back(b.dims[br - 1]);
  ctx.set_output(0, out);
}

void matmul_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.dtype() != b.dtype())
    ctx.fail("operand dtypes differ: " + dtype_name(a.dtype()) + " vs " + dtype_name(b.dtype()));
  const MatMulGeom g = matmul_geom(ctx, a.dims(), b.dims());
  dispatch_numeric(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    Tensor& y = ctx.make_output(0, a.dtype(), g.out_dims);
    if constexpr (std::is_same_v<T, C>) {
      matmul_batched<C>(g, a.data<T>(), b.data<T>(), y.data<T>());
    } else {
      std::vector<C> av = to_compute<T, C>(a), bv = to_compute<T, C>(b), yv(y.numel(), C{});
      matmul_batched<C>(g, av.data(), bv.data(), yv.data());
      T* yp = y.data<T>();
      for (int64_t i = 0; i < y.numel(); ++i) yp[i] = static_cast<T>(yv[i]);
    }
  });
}

// ---------------------------------------------------------------- Gemm

void infer_gemm(InferContext& ctx) {
  const ir::TensorType& a = ctx.input(0);
  const ir::TensorType& b = ctx.input(1);
  const bool ta = ctx.node().attr_int("transA", 0) != 0, tb = ctx.node().attr_int("transB", 0) != 0;
  if ((a.rank_known && a.rank() != 2) || (b.rank_known && b.rank() != 2))
    ctx.fail("Gemm operands must be 2-D, got A " + a.str() + " and B " + b.str());
  if (a.dtype != b.dtype && a.dtype != DType::Undefined && b.dtype != DType::Undefined)
    ctx.fail("operand dtypes differ: " + a.str() + " vs " + b.str());
  ir::Dim m = a.rank_known ? a.dims[ta ? 1 : 0] : ctx.fresh_dim();
  ir::Dim ka = a.rank_known ? a.dims[ta ? 0 : 1] : ir::Dim();
  ir::Dim kb = b.rank_known ? b.dims[tb ? 1 : 0] : ir::Dim();
  ir::Dim n = b.rank_known ? b.dims[tb ? 0 : 1] : ctx.fresh_dim();
  if (ka.is_static() && kb.is_static() && ka.value != kb.value)
    ctx.fail("inner dimensions do not match: A " + a.str() + (ta ? " (transposed)" : "") + ", B " + b.str() +
             (tb ? " (transposed)" : ""));
  if (ctx.has_input(2)) {
    const ir::TensorType& c = ctx.input(2);
    if (c.rank_known) {
      if (c.rank() > 2) ctx.fail("Gemm's C must have rank <= 2, got " + c.str());
      const ir::Dim* out[2] = {&m, &n};
      for (int i = 0; i < c.rank(); ++i) {
        const ir::Dim& d = c.dims[i];
        const ir::Dim& o = *out[2 - c.rank() + i];
        if (d.is_static() && d.value != 1 && o.is_static() && d.value != o.value)
          ctx.fail("C " + c.str() + " does not broadcast to the (M, N) result");
      }
    }
  }
  ctx.set_output(0, a.dtype, {m, n});
}

// Row-major copy of t (2-D) in compute type, transposed when asked.
template <typename T, typename C>
std::vector<C> matrix_compute(const Tensor& t, bool transpose) {
  const T* p = t.data<T>();
  const int64_t r = t.dim(0), c = t.dim(1);
  std::vector<C> v(static_cast<size_t>(r * c));
  if (!transpose) {
    for (int64_t i = 0; i < r * c; ++i) v[i] = static_cast<C>(p[i]);
  } else {
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j) v[j * r + i] = static_cast<C>(p[i * c + j]);
  }
  return v;
}

void gemm_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.rank() != 2 || b.rank() != 2)
    ctx.fail("Gemm operands must be 2-D, got A " + a.describe() + " and B " + b.describe());
  if (a.dtype() != b.dtype()) ctx.fail("operand dtypes differ: " + a.describe() + " vs " + b.describe());
  const bool ta = ctx.node().attr_int("transA", 0) != 0, tb = ctx.node().attr_int("transB", 0) != 0;
  const float alpha = ctx.node().attr_float("alpha", 1.f), beta = ctx.node().attr_float("beta", 1.f);
  const int64_t M = a.dim(ta ? 1 : 0), K = a.dim(ta ? 0 : 1), N = b.dim(tb ? 0 : 1);
  if (b.dim(tb ? 1 : 0) != K)
    ctx.fail("inner dimensions do not match: A " + a.describe() + ", B " + b.describe());
  const Tensor* c = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  std::vector<int64_t> cstr = {0, 0};
  if (c) {
    if (c->dtype() != a.dtype()) ctx.fail("C's dtype differs from A's: " + c->describe());
    if (c->rank() > 2 || broadcast_dims({c->dims(), {M, N}}, ctx.node()) != std::vector<int64_t>{M, N})
      ctx.fail("C " + c->describe() + " does not broadcast to the (M, N) = (" + std::to_string(M) + ", " +
               std::to_string(N) + ") result");
    cstr = broadcast_strides(c->dims(), {M, N});
  }
  dispatch_numeric(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    Tensor& y = ctx.make_output(0, a.dtype(), {M, N});
    std::vector<C> acc(static_cast<size_t>(M * N), C{});
    if (K > 0) {
      std::vector<C> av = matrix_compute<T, C>(a, ta), bv = matrix_compute<T, C>(b, tb);
      gemm_acc<C>(M, N, K, av.data(), bv.data(), acc.data());
    }
    const T* cp = c ? c->data<T>() : nullptr;
    T* yp = y.data<T>();
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        const int64_t o = i * N + j;
        if constexpr (is_float_v<T>) {
          C v = static_cast<C>(alpha) * acc[o];
          if (cp) v += static_cast<C>(beta) * static_cast<C>(cp[i * cstr[0] + j * cstr[1]]);
          yp[o] = static_cast<T>(v);
        } else if (alpha == 1.f && beta == 1.f) {
          // Exact integer arithmetic in the common case (float scaling would lose int64 bits).
          yp[o] = static_cast<T>(acc[o] + (cp ? cp[i * cstr[0] + j * cstr[1]] : T{}));
        } else {
          double v = static_cast<double>(alpha) * static_cast<double>(acc[o]);
          if (cp) v += static_cast<double>(beta) * static_cast<double>(cp[i * cstr[0] + j * cstr[1]]);
          yp[o] = static_cast<T>(v);
        }
      }
  });
}

// ---------------------------------------------------------------- MatMulInteger

bool is_int8_type(DType t) { return t == DType::UInt8 || t == DType::Int8; }

// x - zero_point as int32, zero_point broadcast over x. A per-row zero point of A is given as an
// [M] vector (or [..., M, 1]); a per-column one of B as [N] (or [..., 1, N]).
std::vector<int32_t> minus_zero_point(const KernelContext& ctx, const Tensor& x, const Tensor* zp, bool per_row) {
  std::vector<int32_t> v(static_cast<size_t>(x.numel()));
  auto read = [](const Tensor& t, int64_t i) { return static_cast<int32_t>(t.as_int64(i)); };
  for (int64_t i = 0; i < x.numel(); ++i) v[i] = read(x, i);
  if (!zp || zp->numel() == 0) return v;
  if (zp->dtype() != x.dtype()) ctx.fail("zero point dtype " + dtype_name(zp->dtype()) + " differs from its input's");
  if (zp->numel() == 1) {
    const int32_t z = read(*zp, 0);
    for (auto& e : v) e -= z;
    return v;
  }
  std::vector<int64_t> zd = zp->dims();
  if (zd.size() == 1 && per_row) zd.push_back(1);
  std::vector<int64_t> xd = x.dims();
  if (xd.size() == 1) xd.insert(xd.begin() + (per_row ? 0 : 1), 1);  // promoted 1-D operand
  if (zd.size() > xd.size() || broadcast_dims({xd, zd}, ctx.node()) != xd)
    ctx.fail("zero point " + zp->describe() + " does not match its input " + x.describe());
  BroadcastWalker walk(xd, {zd});
  walk.run([&](int64_t i, const int64_t* off) { v[i] -= read(*zp, off[0]); });
  return v;
}

void infer_matmul_integer(InferContext& ctx) {
  for (int i = 0; i < 2; ++i) {
    DType t = ctx.input(i).dtype;
    if (t != DType::Undefined && !is_int8_type(t))
      ctx.fail("MatMulInteger takes uint8/int8 operands, got " + ctx.input(i).str());
  }
  infer_matmul(ctx, DType::Int32, false);  // uint8 x int8 mixes are allowed
}

void matmul_integer_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (!is_int8_type(a.dtype()) || !is_int8_type(b.dtype()))
    ctx.fail("MatMulInteger takes uint8/int8 operands, got " + a.describe() + " and " + b.describe());
  const MatMulGeom g = matmul_geom(ctx, a.dims(), b.dims());
  std::vector<int32_t> av = minus_zero_point(ctx, a, ctx.has_input(2) ? &ctx.input(2) : nullptr, true);
  std::vector<int32_t> bv = minus_zero_point(ctx, b, ctx.has_input(3) ? &ctx.input(3) : nullptr, false);
  Tensor& y = ctx.make_output(0, DType::Int32, g.out_dims);
  matmul_batched<int32_t>(g, av.data(), bv.data(), y.data<int32_t>());
}

}  // namespace

KILN_REGISTER_OPS(matmul) {
  reg.add({.name = "MatMul", .min_inputs = 2, .max_inputs = 2, .pattern = PatternKind::OutEWiseFusable,
           .infer = [](InferContext& ctx) { infer_matmul(ctx, ctx.input(0).dtype, true); },
           .kernel = matmul_kernel});
  // Opsets 7-10 declare C required; we also accept it absent there (same result as C = 0).
  reg.add({.name = "Gemm", .min_inputs = 2, .max_inputs = 3, .pattern = PatternKind::OutEWiseFusable,
           .infer = infer_gemm, .kernel = gemm_kernel});
  reg.add({.name = "MatMulInteger", .since_version = 10, .min_inputs = 2, .max_inputs = 4,
           .pattern = PatternKind::OutEWiseFusable, .infer = infer_matmul_integer,
           .kernel = matmul_integer_kernel});
}

}  // namespace kiln::ops
