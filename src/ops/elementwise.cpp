// Element-wise math: numpy-broadcasting binary ops (arithmetic, comparison, logic, bit ops),
// variadic Sum/Mean/Min/Max, Where, and the unary math functions.
#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>

#include "ops/core/dispatch.h"
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

namespace {

// Which element types an op accepts.
enum class Types { Float, Int, UInt, Signed, Numeric, Bool, NumericBool, All };

// Dispatches on the dtypes TS allows; a template parameter so an op's lambda is only
// instantiated for types it supports.
template <Types TS, typename F>
decltype(auto) dispatch_types(DType t, F&& f) {
  if constexpr (TS == Types::Float) {
    return dispatch_float(t, std::forward<F>(f));
  } else if constexpr (TS == Types::Int) {
    return dispatch_int(t, std::forward<F>(f));
  } else if constexpr (TS == Types::UInt) {
    switch (t) {
      case DType::UInt8: return f(uint8_t{});
      case DType::UInt16: return f(uint16_t{});
      case DType::UInt32: return f(uint32_t{});
      case DType::UInt64: return f(uint64_t{});
      default: throw_unsupported_dtype(t, "unsigned integer");
    }
  } else if constexpr (TS == Types::Signed) {
    switch (t) {
      case DType::Float: return f(float{});
      case DType::Double: return f(double{});
      case DType::Float16: return f(Float16{});
      case DType::BFloat16: return f(BFloat16{});
      case DType::Int8: return f(int8_t{});
      case DType::Int16: return f(int16_t{});
      case DType::Int32: return f(int32_t{});
      case DType::Int64: return f(int64_t{});
      default: throw_unsupported_dtype(t, "signed numeric");
    }
  } else if constexpr (TS == Types::Numeric) {
    return dispatch_numeric(t, std::forward<F>(f));
  } else if constexpr (TS == Types::Bool) {
    if (t != DType::Bool) throw_unsupported_dtype(t, "bool");
    return f(bool{});
  } else if constexpr (TS == Types::NumericBool) {
    return dispatch_numeric_bool(t, std::forward<F>(f));
  } else {
    return dispatch_all(t, std::forward<F>(f));
  }
}

// Signed integer arithmetic wraps (two's complement) instead of being undefined on overflow.
template <typename C>
constexpr bool is_signed_int_v = std::is_integral_v<C> && std::is_signed_v<C> && !std::is_same_v<C, bool>;

template <typename C>
C wrap_add(C a, C b) {
  if constexpr (is_signed_int_v<C>) {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return static_cast<C>(a + b);
  }
}
template <typename C>
C wrap_sub(C a, C b) {
  if constexpr (is_signed_int_v<C>) {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
  } else {
    return static_cast<C>(a - b);
  }
}
template <typename C>
C wrap_mul(C a, C b) {
  if constexpr (is_signed_int_v<C>) {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else if constexpr (std::is_integral_v<C> && sizeof(C) < sizeof(int)) {
    // uint8/uint16 promote to (signed) int, whose product may overflow.
    return static_cast<C>(static_cast<unsigned>(a) * static_cast<unsigned>(b));
  } else {
    return static_cast<C>(a * b);
  }
}
template <typename C>
C wrap_neg(C a) {
  if constexpr (std::is_integral_v<C>) return wrap_sub<C>(C(0), a);
  else return -a;
}

// Float to integer without undefined behaviour: NaN gives 0, out-of-range values saturate.
template <typename I>
I float_to_int(double v) {
  if (std::isnan(v)) return 0;
  if (v <= static_cast<double>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (v >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}

// Calls fn(out_offset, in_offsets, in_inner_strides, n) for runs of n output elements whose
// inputs advance by a fixed stride (0 or 1) each: one run when no input really broadcasts,
// else one run per innermost row.
template <typename F>
void for_each_run(const std::vector<int64_t>& out, const std::vector<const std::vector<int64_t>*>& ins, F&& fn) {
  const int64_t total = product(out);
  if (total == 0) return;
  const size_t k = ins.size();
  std::vector<int64_t> offs(k, 0), st(k, 1);
  bool flat = true;
  for (size_t j = 0; j < k; ++j) {
    int64_t n = product(*ins[j]);
    if (n == 1) st[j] = 0;
    else if (n != total) flat = false;
  }
  if (flat) {
    fn(int64_t{0}, offs.data(), st.data(), total);
    return;
  }
  const size_t r = out.size();
  const int64_t inner = out[r - 1];
  std::vector<int64_t> outer(out.begin(), out.end() - 1);
  std::vector<std::vector<int64_t>> ins_outer(k);
  std::vector<int64_t> row_len(k);
  for (size_t j = 0; j < k; ++j) {
    std::vector<int64_t> padded(r - ins[j]->size(), 1);
    padded.insert(padded.end(), ins[j]->begin(), ins[j]->end());
    row_len[j] = padded[r - 1];
    st[j] = row_len[j] == 1 ? 0 : 1;
    ins_outer[j].assign(padded.begin(), padded.end() - 1);
  }
  BroadcastWalker walker(outer, ins_outer);
  walker.run([&](int64_t i, const int64_t* off) {
    for (size_t j = 0; j < k; ++j) offs[j] = off[j] * row_len[j];
    fn(i * inner, offs.data(), st.data(), inner);
  });
}

// out = f(a, b) over broadcast a and b; o is already allocated with the broadcast dims.
template <typename TA, typename TB, typename TO, typename F>
void binary_loop(const Tensor& a, const Tensor& b, Tensor& o, F&& f) {
  const TA* pa = a.data<TA>();
  const TB* pb = b.data<TB>();
  TO* po = o.data<TO>();
  for_each_run(o.dims(), {&a.dims(), &b.dims()},
               [&](int64_t oo, const int64_t* off, const int64_t* st, int64_t n) {
                 const TA* x = pa + off[0];
                 const TB* y = pb + off[1];
                 TO* z = po + oo;
                 if (st[0] && st[1]) {
                   for (int64_t i = 0; i < n; ++i) z[i] = f(x[i], y[i]);
                 } else if (st[0]) {
                   const TB yv = y[0];
                   for (int64_t i = 0; i < n; ++i) z[i] = f(x[i], yv);
                 } else if (st[1]) {
                   const TA xv = x[0];
                   for (int64_t i = 0; i < n; ++i) z[i] = f(xv, y[i]);
                 } else {
                   const TO v = f(x[0], y[0]);
                   for (int64_t i = 0; i < n; ++i) z[i] = v;
                 }
               });
}

void check_same_dtype(const KernelContext& ctx, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype())
    ctx.fail("inputs must have the same element type, got " + dtype_name(a.dtype()) + " and " +
             dtype_name(b.dtype()));
}

// Legacy broadcasting (opset < 7, broadcast = 1 with an `axis`): B's dims line up with A's from
// `axis` on rather than at the end. The dims B takes under numpy's rule for that (ones around
// it), or nullopt when the node does not use it.
template <typename D>
std::optional<std::vector<D>> legacy_aligned(const ir::Node& n, int64_t opset, int64_t a_rank, const std::vector<D>& b) {
  if (opset >= 7 || !n.has_attr("axis") || n.attr_int("broadcast", 0) == 0) return std::nullopt;
  const int64_t b_rank = static_cast<int64_t>(b.size());
  const int64_t axis = n.attr_int("axis", 0) < 0 ? n.attr_int("axis", 0) + a_rank : n.attr_int("axis", 0);
  if (axis < 0 || axis + b_rank > a_rank)
    throw Error(n.describe() + ": B of rank " + std::to_string(b_rank) + " does not fit A of rank " + std::to_string(a_rank) +
                " from axis " + std::to_string(n.attr_int("axis", 0)));
  std::vector<D> out(static_cast<size_t>(axis), D(1));
  out.insert(out.end(), b.begin(), b.end());
  out.resize(static_cast<size_t>(a_rank), D(1));
  return out;
}

// Applies a same-type binary op (on compute_t values) to a and b with broadcasting. The result
// has a's dtype, or bool when BoolOut.
template <Types TS, bool BoolOut, typename Op>
Tensor binary_tensor(const KernelContext& ctx, const Tensor& a, const Tensor& b_in, Op&& op) {
  check_same_dtype(ctx, a, b_in);
  const auto legacy = legacy_aligned(ctx.node(), ctx.opset(), a.rank(), b_in.dims());
  const Tensor b = legacy ? b_in.reshaped(*legacy) : b_in;
  Tensor o(BoolOut ? DType::Bool : a.dtype(), broadcast_dims({a.dims(), b.dims()}, ctx.node()));
  dispatch_types<TS>(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    if constexpr (BoolOut) {
      binary_loop<T, T, bool>(a, b, o, [&](const T& x, const T& y) { return static_cast<bool>(op(C(x), C(y))); });
    } else {
      binary_loop<T, T, T>(a, b, o, [&](const T& x, const T& y) { return T(op(C(x), C(y))); });
    }
  });
  return o;
}

template <Types TS, bool BoolOut, typename Op>
KernelFn binary_kernel(Op op) {
  return [op](KernelContext& ctx) {
    ctx.set_output(0, binary_tensor<TS, BoolOut>(ctx, ctx.input(0), ctx.input(1), op));
  };
}

// The dtype shared by inputs [first, last) (Undefined when none is known); fails on a mismatch.
DType common_dtype(InferContext& ctx, int first, int last) {
  DType t = DType::Undefined;
  for (int i = first; i < last && i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    DType d = ctx.input(i).dtype;
    if (d == DType::Undefined) continue;
    if (t != DType::Undefined && d != t)
      ctx.fail("inputs must have the same element type, got " + dtype_name(t) + " and " + dtype_name(d));
    t = d;
  }
  return t;
}

std::vector<ir::TensorType> present_types(InferContext& ctx, int first, int last) {
  std::vector<ir::TensorType> ts;
  for (int i = first; i < last && i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i)) ts.push_back(ctx.input(i));
  return ts;
}

// Broadcasting ops whose inputs share one dtype; the output takes it (or bool).
InferFn infer_broadcast(bool bool_out) {
  return [bool_out](InferContext& ctx) {
    DType t = common_dtype(ctx, 0, ctx.num_inputs());
    ctx.set_output(0, broadcast_types(ctx, present_types(ctx, 0, ctx.num_inputs()), bool_out ? DType::Bool : t));
  };
}

// Input types with B's dims aligned for legacy axis broadcasting (legacy_aligned); B of unknown
// rank stays as it is (the result's rank is unknown then anyway).
std::vector<ir::TensorType> aligned_types(InferContext& ctx, std::vector<ir::TensorType> ts) {
  if (ts.size() == 2 && ts[0].rank_known && ts[1].rank_known)
    if (auto d = legacy_aligned(ctx.node(), ctx.opset(), ts[0].rank(), ts[1].dims)) ts[1].dims = *d;
  return ts;
}

InferFn infer_arith(bool bool_out) {
  return [bool_out](InferContext& ctx) {
    const DType t = common_dtype(ctx, 0, ctx.num_inputs());
    ctx.set_output(0, broadcast_types(ctx, aligned_types(ctx, present_types(ctx, 0, ctx.num_inputs())),
                                      bool_out ? DType::Bool : t));
  };
}

// Unary op keeping the dtype: out[i] = op(in[i]) on compute_t values.
template <Types TS, typename Op>
KernelFn unary_kernel(Op op) {
  return [op](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    Tensor& o = ctx.make_output(0, x.dtype(), x.dims());
    dispatch_types<TS>(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      using C = compute_t<T>;
      const T* pi = x.data<T>();
      T* po = o.data<T>();
      for (int64_t i = 0, n = x.numel(); i < n; ++i) po[i] = T(op(C(pi[i])));
    });
  };
}

// Unary predicate: bool out.
template <Types TS, typename Op>
KernelFn unary_bool_kernel(Op op) {
  return [op](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    Tensor& o = ctx.make_output(0, DType::Bool, x.dims());
    dispatch_types<TS>(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      using C = compute_t<T>;
      const T* pi = x.data<T>();
      bool* po = o.data<bool>();
      for (int64_t i = 0, n = x.numel(); i < n; ++i) po[i] = op(C(pi[i]));
    });
  };
}

// Numeric inputs of an op that may not be bool/string (infer-time check, so bad models fail
// before running).
void require_types(InferContext& ctx, int i, Types ts) {
  if (!ctx.has_input(i)) return;
  DType d = ctx.input(i).dtype;
  if (d == DType::Undefined) return;
  bool ok = true;
  switch (ts) {
    case Types::Float: ok = dtype_is_float(d); break;
    case Types::Int: ok = dtype_is_integer(d); break;
    case Types::UInt: ok = dtype_is_integer(d) && !dtype_is_signed(d); break;
    case Types::Signed: ok = dtype_is_float(d) || (dtype_is_integer(d) && dtype_is_signed(d)); break;
    case Types::Numeric: ok = dtype_is_float(d) || dtype_is_integer(d); break;
    case Types::Bool: ok = d == DType::Bool; break;
    case Types::NumericBool: ok = d != DType::String; break;
    case Types::All: break;
  }
  if (!ok) ctx.fail("input " + std::to_string(i) + " has unsupported element type " + dtype_name(d));
}

InferFn infer_unary(Types ts, bool bool_out) {
  return [ts, bool_out](InferContext& ctx) {
    require_types(ctx, 0, ts);
    if (bool_out) infer_same_shape(ctx, DType::Bool);
    else infer_same_as_input(ctx);
  };
}

template <typename C>
C int_pow(C base, C exp) {
  if constexpr (std::is_signed_v<C>) {
    if (exp < 0) {
      // Integer results of 1/base^|e|: only |base| == 1 is not truncated to 0.
      if (base == 1) return 1;
      if (base == -1) return (exp % 2 == 0) ? 1 : -1;
      return 0;
    }
  }
  C r = 1;
  while (exp > 0) {
    if (exp & 1) r = wrap_mul<C>(r, base);
    base = wrap_mul<C>(base, base);
    exp = static_cast<C>(exp >> 1);
  }
  return r;
}

void pow_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const auto legacy = legacy_aligned(ctx.node(), ctx.opset(), a.rank(), ctx.input(1).dims());
  const Tensor b = legacy ? ctx.input(1).reshaped(*legacy) : ctx.input(1);
  Tensor& o = ctx.make_output(0, a.dtype(), broadcast_dims({a.dims(), b.dims()}, ctx.node()));
  dispatch_numeric(a.dtype(), [&](auto ta) {
    using TA = decltype(ta);
    using CA = compute_t<TA>;
    dispatch_numeric(b.dtype(), [&](auto tb) {
      using TB = decltype(tb);
      using CB = compute_t<TB>;
      binary_loop<TA, TB, TA>(a, b, o, [](const TA& x, const TB& y) -> TA {
        if constexpr (std::is_integral_v<CA> && std::is_integral_v<CB>) {
          // Exponents beyond the base's range only matter for |base| <= 1 anyway.
          CB e = CB(y);
          if constexpr (std::is_signed_v<CB>) {
            if (e < 0) return TA(static_cast<CA>(int_pow<int64_t>(static_cast<int64_t>(CA(x)), static_cast<int64_t>(e))));
          }
          uint64_t ue = static_cast<uint64_t>(e);
          CA r = 1, base = CA(x);
          while (ue > 0) {
            if (ue & 1) r = wrap_mul<CA>(r, base);
            base = wrap_mul<CA>(base, base);
            ue >>= 1;
          }
          return TA(r);  // TA(): clang 14 checks this discarded branch for float types too
        } else if constexpr (std::is_integral_v<CA>) {
          return float_to_int<CA>(std::pow(static_cast<double>(CA(x)), static_cast<double>(CB(y))));
        }
        // Outside the if-constexpr chain: GCC 12 otherwise warns of a missing return.
        return TA(static_cast<CA>(std::pow(static_cast<double>(CA(x)), static_cast<double>(CB(y)))));
      });
    });
  });
}

void mod_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const bool fmod = ctx.node().attr_int("fmod", 0) != 0;
  bool div0 = false;
  Tensor o = binary_tensor<Types::Numeric, false>(ctx, a, b, [fmod, &div0](auto x, auto y) -> decltype(x) {
    using C = decltype(x);
    if constexpr (std::is_floating_point_v<C>) {
      C r = std::fmod(x, y);
      // Python/numpy semantics: the remainder takes the divisor's sign.
      if (!fmod && r != 0 && ((r < 0) != (y < 0))) r += y;
      return r;
    } else {
      if (y == 0) { div0 = true; return 0; }
      if constexpr (std::is_signed_v<C>) {
        if (y == -1) return 0;  // avoids INT_MIN % -1 trapping
        C r = static_cast<C>(x % y);
        if (!fmod && r != 0 && ((r < 0) != (y < 0))) r = static_cast<C>(r + y);
        return r;
      } else {
        return static_cast<C>(x % y);
      }
    }
  });
  if (div0) ctx.fail("integer modulo by zero");
  ctx.set_output(0, o);
}

void div_kernel(KernelContext& ctx) {
  bool div0 = false;
  Tensor o = binary_tensor<Types::Numeric, false>(ctx, ctx.input(0), ctx.input(1), [&div0](auto x, auto y) -> decltype(x) {
    using C = decltype(x);
    if constexpr (std::is_integral_v<C>) {
      if (y == 0) { div0 = true; return 0; }
      if constexpr (std::is_signed_v<C>) {
        if (y == -1) return wrap_neg(x);
      }
      return static_cast<C>(x / y);  // truncates toward zero, like C
    } else {
      return x / y;
    }
  });
  if (div0) ctx.fail("integer division by zero");
  ctx.set_output(0, o);
}

// Min/Max propagate NaN like numpy's minimum/maximum.
template <typename C>
C min_op(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<C>::quiet_NaN();
  }
  return b < a ? b : a;
}
template <typename C>
C max_op(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<C>::quiet_NaN();
  }
  return a < b ? b : a;
}

// Sum/Mean/Min/Max over any number of broadcast inputs: a left fold of the binary op.
template <typename Op>
KernelFn variadic_kernel(Op op, bool mean) {
  return [op, mean](KernelContext& ctx) {
    if (ctx.num_inputs() < 1) ctx.fail("needs at least one input");
    Tensor acc = ctx.input(0);
    for (int i = 1; i < ctx.num_inputs(); ++i)
      acc = binary_tensor<Types::Numeric, false>(ctx, acc, ctx.input(i), op);
    if (ctx.num_inputs() == 1) acc = acc.clone();
    if (mean && ctx.num_inputs() > 1) {
      const int64_t n = ctx.num_inputs();
      dispatch_numeric(acc.dtype(), [&](auto tag) {
        using T = decltype(tag);
        using C = compute_t<T>;
        T* p = acc.data<T>();
        for (int64_t i = 0; i < acc.numel(); ++i) p[i] = T(static_cast<C>(C(p[i]) / static_cast<C>(n)));
      });
    }
    ctx.set_output(0, acc);
  };
}

void where_kernel(KernelContext& ctx) {
  const Tensor& c = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& y = ctx.input(2);
  if (c.dtype() != DType::Bool) ctx.fail("condition must be bool, got " + dtype_name(c.dtype()));
  check_same_dtype(ctx, x, y);
  Tensor& o = ctx.make_output(0, x.dtype(), broadcast_dims({c.dims(), x.dims(), y.dims()}, ctx.node()));
  dispatch_all(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const bool* pc = c.data<bool>();
    const T* px = x.data<T>();
    const T* py = y.data<T>();
    T* po = o.data<T>();
    for_each_run(o.dims(), {&c.dims(), &x.dims(), &y.dims()},
                 [&](int64_t oo, const int64_t* off, const int64_t* st, int64_t n) {
                   const bool* cc = pc + off[0];
                   const T* xx = px + off[1];
                   const T* yy = py + off[2];
                   for (int64_t i = 0; i < n; ++i) po[oo + i] = cc[i * st[0]] ? xx[i * st[1]] : yy[i * st[2]];
                 });
  });
}

void infer_where(InferContext& ctx) {
  DType c = ctx.input(0).dtype;
  if (c != DType::Undefined && c != DType::Bool) ctx.fail("condition must be bool, got " + dtype_name(c));
  DType t = common_dtype(ctx, 1, 3);
  ctx.set_output(0, broadcast_types(ctx, {ctx.input(0), ctx.input(1), ctx.input(2)}, t));
}

void infer_pow(InferContext& ctx) {
  require_types(ctx, 0, Types::Numeric);
  require_types(ctx, 1, Types::Numeric);
  ctx.set_output(0, broadcast_types(ctx, aligned_types(ctx, {ctx.input(0), ctx.input(1)}), ctx.input(0).dtype));
}

InferFn infer_typed_broadcast(Types ts, bool bool_out) {
  InferFn base = infer_arith(bool_out);
  return [ts, base](InferContext& ctx) {
    for (int i = 0; i < ctx.num_inputs(); ++i) require_types(ctx, i, ts);
    base(ctx);
  };
}

void add_binary(Registry& reg, const char* name, int since, Types ts, bool bool_out, KernelFn kernel) {
  reg.add({.name = name, .since_version = since, .min_inputs = 2, .max_inputs = 2,
           .pattern = PatternKind::Broadcast, .infer = infer_typed_broadcast(ts, bool_out), .kernel = std::move(kernel)});
}

void add_unary(Registry& reg, const char* name, int since, Types ts, bool bool_out, KernelFn kernel) {
  reg.add({.name = name, .since_version = since, .min_inputs = 1, .max_inputs = 1,
           .pattern = PatternKind::ElemWise, .infer = infer_unary(ts, bool_out), .kernel = std::move(kernel)});
}

template <typename C>
C sign_op(C x) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(x)) return x;
  }
  if constexpr (std::is_unsigned_v<C>) return x > 0 ? C(1) : C(0);
  else return x > 0 ? C(1) : (x < 0 ? C(-1) : C(0));
}

}  // namespace

KILN_REGISTER_OPS(elementwise) {
  // Arithmetic.
  add_binary(reg, "Add", 1, Types::Numeric, false,
             binary_kernel<Types::Numeric, false>([](auto a, auto b) { return wrap_add(a, b); }));
  add_binary(reg, "Sub", 1, Types::Numeric, false,
             binary_kernel<Types::Numeric, false>([](auto a, auto b) { return wrap_sub(a, b); }));
  add_binary(reg, "Mul", 1, Types::Numeric, false,
             binary_kernel<Types::Numeric, false>([](auto a, auto b) { return wrap_mul(a, b); }));
  add_binary(reg, "Div", 1, Types::Numeric, false, div_kernel);
  add_binary(reg, "Mod", 10, Types::Numeric, false, mod_kernel);
  reg.add({.name = "Pow", .since_version = 1, .min_inputs = 2, .max_inputs = 2, .pattern = PatternKind::Broadcast,
           .infer = infer_pow, .kernel = pow_kernel});

  // Variadic.
  auto add_variadic = [&reg](const char* name, KernelFn k) {
    reg.add({.name = name, .since_version = 1, .min_inputs = 1, .max_inputs = -1, .pattern = PatternKind::Broadcast,
             .infer = [](InferContext& ctx) {
               for (int i = 0; i < ctx.num_inputs(); ++i) require_types(ctx, i, Types::Numeric);
               infer_broadcast(false)(ctx);
             },
             .kernel = std::move(k)});
  };
  add_variadic("Sum", variadic_kernel([](auto a, auto b) { return wrap_add(a, b); }, false));
  add_variadic("Mean", variadic_kernel([](auto a, auto b) { return wrap_add(a, b); }, true));
  add_variadic("Min", variadic_kernel([](auto a, auto b) { return min_op(a, b); }, false));
  add_variadic("Max", variadic_kernel([](auto a, auto b) { return max_op(a, b); }, false));

  // Comparison.
  add_binary(reg, "Equal", 1, Types::All, true,
             binary_kernel<Types::All, true>([](const auto& a, const auto& b) { return a == b; }));
  add_binary(reg, "Less", 1, Types::Numeric, true,
             binary_kernel<Types::Numeric, true>([](auto a, auto b) { return a < b; }));
  add_binary(reg, "Greater", 1, Types::Numeric, true,
             binary_kernel<Types::Numeric, true>([](auto a, auto b) { return a > b; }));
  add_binary(reg, "LessOrEqual", 12, Types::Numeric, true,
             binary_kernel<Types::Numeric, true>([](auto a, auto b) { return a <= b; }));
  add_binary(reg, "GreaterOrEqual", 12, Types::Numeric, true,
             binary_kernel<Types::Numeric, true>([](auto a, auto b) { return a >= b; }));

  // Logic and bits.
  add_binary(reg, "And", 1, Types::Bool, true, binary_kernel<Types::Bool, true>([](bool a, bool b) { return a && b; }));
  add_binary(reg, "Or", 1, Types::Bool, true, binary_kernel<Types::Bool, true>([](bool a, bool b) { return a || b; }));
  add_binary(reg, "Xor", 1, Types::Bool, true, binary_kernel<Types::Bool, true>([](bool a, bool b) { return a != b; }));
  add_unary(reg, "Not", 1, Types::Bool, false, unary_kernel<Types::Bool>([](bool a) { return !a; }));
  add_binary(reg, "BitwiseAnd", 18, Types::Int, false,
             binary_kernel<Types::Int, false>([](auto a, auto b) -> decltype(a) { return a & b; }));
  add_binary(reg, "BitwiseOr", 18, Types::Int, false,
             binary_kernel<Types::Int, false>([](auto a, auto b) -> decltype(a) { return a | b; }));
  add_binary(reg, "BitwiseXor", 18, Types::Int, false,
             binary_kernel<Types::Int, false>([](auto a, auto b) -> decltype(a) { return a ^ b; }));
  add_unary(reg, "BitwiseNot", 18, Types::Int, false, unary_kernel<Types::Int>([](auto a) -> decltype(a) { return ~a; }));
  reg.add({.name = "BitShift", .since_version = 11, .min_inputs = 2, .max_inputs = 2, .pattern = PatternKind::Broadcast,
           .infer = [](InferContext& ctx) {
             std::string dir = ctx.node().attr_string("direction", "");
             if (dir != "LEFT" && dir != "RIGHT") ctx.fail("direction must be LEFT or RIGHT, got '" + dir + "'");
             infer_typed_broadcast(Types::UInt, false)(ctx);
           },
           .kernel = [](KernelContext& ctx) {
             std::string dir = ctx.node().attr_string("direction", "");
             if (dir != "LEFT" && dir != "RIGHT") ctx.fail("direction must be LEFT or RIGHT, got '" + dir + "'");
             const bool left = dir == "LEFT";
             ctx.set_output(0, binary_tensor<Types::UInt, false>(ctx, ctx.input(0), ctx.input(1),
                                                    [left](auto a, auto b) -> decltype(a) {
                                                      using C = decltype(a);
                                                      // Shifting by the width or more is undefined in C++; numpy gives 0.
                                                      if (b >= sizeof(C) * 8) return 0;
                                                      return static_cast<C>(left ? a << b : a >> b);
                                                    }));
           }});

  reg.add({.name = "Where", .since_version = 9, .min_inputs = 3, .max_inputs = 3, .pattern = PatternKind::Broadcast,
           .infer = infer_where, .kernel = where_kernel});

  // Unary math.
  add_unary(reg, "Abs", 1, Types::Numeric, false, unary_kernel<Types::Numeric>([](auto x) -> decltype(x) {
              using C = decltype(x);
              if constexpr (std::is_unsigned_v<C>) return x;
              else return x < 0 ? wrap_neg(x) : x;
            }));
  add_unary(reg, "Neg", 1, Types::Signed, false, unary_kernel<Types::Signed>([](auto x) { return wrap_neg(x); }));
  add_unary(reg, "Sign", 9, Types::Numeric, false, unary_kernel<Types::Numeric>([](auto x) { return sign_op(x); }));
#define KILN_FLOAT_UNARY(NAME, SINCE, EXPR) \
  add_unary(reg, NAME, SINCE, Types::Float, false, unary_kernel<Types::Float>([](auto x) -> decltype(x) { return EXPR; }))
  KILN_FLOAT_UNARY("Exp", 1, std::exp(x));
  KILN_FLOAT_UNARY("Log", 1, std::log(x));
  KILN_FLOAT_UNARY("Sqrt", 1, std::sqrt(x));
  KILN_FLOAT_UNARY("Reciprocal", 1, decltype(x)(1) / x);
  KILN_FLOAT_UNARY("Floor", 1, std::floor(x));
  KILN_FLOAT_UNARY("Ceil", 1, std::ceil(x));
  // nearbyint in the default rounding mode rounds halves to even, as ONNX asks.
  KILN_FLOAT_UNARY("Round", 11, std::nearbyint(x));
  KILN_FLOAT_UNARY("Sin", 7, std::sin(x));
  KILN_FLOAT_UNARY("Cos", 7, std::cos(x));
  KILN_FLOAT_UNARY("Tan", 7, std::tan(x));
  KILN_FLOAT_UNARY("Asin", 7, std::asin(x));
  KILN_FLOAT_UNARY("Acos", 7, std::acos(x));
  KILN_FLOAT_UNARY("Atan", 7, std::atan(x));
  KILN_FLOAT_UNARY("Sinh", 9, std::sinh(x));
  KILN_FLOAT_UNARY("Cosh", 9, std::cosh(x));
  KILN_FLOAT_UNARY("Asinh", 9, std::asinh(x));
  KILN_FLOAT_UNARY("Acosh", 9, std::acosh(x));
  KILN_FLOAT_UNARY("Atanh", 9, std::atanh(x));
  KILN_FLOAT_UNARY("Erf", 9, std::erf(x));
#undef KILN_FLOAT_UNARY
  add_unary(reg, "IsNaN", 9, Types::Float, true, unary_bool_kernel<Types::Float>([](auto x) { return std::isnan(x); }));
  reg.add({.name = "IsInf", .since_version = 10, .min_inputs = 1, .max_inputs = 1, .pattern = PatternKind::ElemWise,
           .infer = infer_unary(Types::Float, true),
           .kernel = [](KernelContext& ctx) {
             const bool neg = ctx.node().attr_int("detect_negative", 1) != 0;
             const bool pos = ctx.node().attr_int("detect_positive", 1) != 0;
             unary_bool_kernel<Types::Float>([neg, pos](auto x) {
               return std::isinf(x) && ((x < 0 && neg) || (x > 0 && pos));
             })(ctx);
           }});
}

}  // namespace kiln::ops
