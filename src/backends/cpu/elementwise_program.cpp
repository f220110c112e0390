#include "backends/cpu/elementwise_program.h"

#include <kiln/error.h>

#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <map>
#include <unordered_map>

#include "backends/cpu/parallel.h"
#include "backends/cpu/simd.h"
#include "fusion/access_plan.h"
#include "ops/core/activation.h"

namespace kiln::backends::cpu {

namespace {

// Tile length in floats: 16 tiles of 1 KiB stay in L1 with room for the inputs.
constexpr int64_t kTile = 256;
constexpr int kMaxSlots = 48;

enum class Op {
  // unary, params p0/p1
  Relu, Sigmoid, Tanh, Exp, Neg, Abs, Sqrt, Reciprocal, Erf, SiLU, Clip, LeakyRelu, HardSigmoid, HardSwish,
  Square, Cube, Identity,
  // binary
  Add, Sub, Mul, Div, Max, Min, PRelu,
};

struct Step {
  Op op;
  int dst, a, b = -1;
  float p0 = 0, p1 = 0;
};

KILN_SIMD void unary(Op op, const float* __restrict a, float* __restrict o, int64_t n, float p0, float p1) {
  switch (op) {
    case Op::Relu: for (int64_t i = 0; i < n; ++i) o[i] = std::max(a[i], 0.f); break;
    case Op::Sigmoid: for (int64_t i = 0; i < n; ++i) o[i] = simd::sigmoid(a[i]); break;
    case Op::Tanh: for (int64_t i = 0; i < n; ++i) o[i] = simd::tanh(a[i]); break;
    case Op::Exp: for (int64_t i = 0; i < n; ++i) o[i] = simd::exp(a[i]); break;
    case Op::Neg: for (int64_t i = 0; i < n; ++i) o[i] = -a[i]; break;
    case Op::Abs: for (int64_t i = 0; i < n; ++i) o[i] = std::fabs(a[i]); break;
    case Op::Sqrt: for (int64_t i = 0; i < n; ++i) o[i] = std::sqrt(a[i]); break;
    case Op::Reciprocal: for (int64_t i = 0; i < n; ++i) o[i] = 1.f / a[i]; break;
    case Op::Erf: for (int64_t i = 0; i < n; ++i) o[i] = simd::erf(a[i]); break;
    case Op::SiLU: for (int64_t i = 0; i < n; ++i) o[i] = simd::silu(a[i]); break;
    case Op::Clip: for (int64_t i = 0; i < n; ++i) o[i] = std::min(std::max(a[i], p0), p1); break;
    case Op::LeakyRelu:
      for (int64_t i = 0; i < n; ++i) o[i] = std::max(a[i], 0.f) + p0 * std::min(a[i], 0.f);
      break;
    case Op::HardSigmoid:
      for (int64_t i = 0; i < n; ++i) o[i] = std::max(0.f, std::min(1.f, p0 * a[i] + p1));
      break;
    case Op::HardSwish:
      for (int64_t i = 0; i < n; ++i) o[i] = a[i] * std::max(0.f, std::min(1.f, a[i] * (1.f / 6.f) + 0.5f));
      break;
    case Op::Square: for (int64_t i = 0; i < n; ++i) o[i] = a[i] * a[i]; break;
    case Op::Cube: for (int64_t i = 0; i < n; ++i) o[i] = a[i] * a[i] * a[i]; break;
    case Op::Identity: for (int64_t i = 0; i < n; ++i) o[i] = a[i]; break;
    default: break;
  }
}

KILN_SIMD void binary(Op op, const float* a, const float* b, float* o, int64_t n) {
  switch (op) {
    case Op::Add: for (int64_t i = 0; i < n; ++i) o[i] = a[i] + b[i]; break;
    case Op::Sub: for (int64_t i = 0; i < n; ++i) o[i] = a[i] - b[i]; break;
    case Op::Mul: for (int64_t i = 0; i < n; ++i) o[i] = a[i] * b[i]; break;
    case Op::Div: for (int64_t i = 0; i < n; ++i) o[i] = a[i] / b[i]; break;
    case Op::Max: for (int64_t i = 0; i < n; ++i) o[i] = std::max(a[i], b[i]); break;
    case Op::Min: for (int64_t i = 0; i < n; ++i) o[i] = std::min(a[i], b[i]); break;
    case Op::PRelu: for (int64_t i = 0; i < n; ++i) o[i] = std::max(a[i], 0.f) + b[i] * std::min(a[i], 0.f); break;
    default: break;
  }
}

// One step over n floats in AVX-512 registers, for the ops whose arithmetic is plain (the
// transcendental ones and the rarer ones keep the KILN_SIMD loops above), as one call per tile
// and step without the clones' dispatch: the same results as those loops, where std::max(x, y)
// is _mm512_max_ps(y, x) (the second operand when unordered or equal) and std::min likewise.
// step_avx512 returns false for an op it does not do. (GCC 12 warns of the undefined
// pass-through operand inside its own _mm512_min_ps/_mm512_max_ps.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
template <typename F>
__attribute__((target("avx512f"), always_inline)) inline void lanes(const float* a, const float* b, float* o, int64_t n,
                                                                   const F& f) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(o + i, f(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i)));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(o + i, m, f(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i)));
  }
}

// The lane function of one op: x the step's first operand, y its second (x again for a unary op).
#define KILN_LANES(expr) \
  lanes(a, b, o, n, [&](__m512 x, __m512 y) __attribute__((target("avx512f"))) { (void)y; return expr; })

__attribute__((target("avx512f"))) bool step_avx512(const Step& st, const float* a, const float* b, float* o, int64_t n) {
  const __m512 zero = _mm512_setzero_ps(), one = _mm512_set1_ps(1.f), p0 = _mm512_set1_ps(st.p0),
               p1 = _mm512_set1_ps(st.p1), sign = _mm512_castsi512_ps(_mm512_set1_epi32(INT32_MIN)),
               sixth = _mm512_set1_ps(1.f / 6.f), half = _mm512_set1_ps(.5f);
  if (!b) b = a;
  switch (st.op) {
    case Op::Relu: KILN_LANES(_mm512_max_ps(zero, x)); return true;
    case Op::Clip: KILN_LANES(_mm512_min_ps(p1, _mm512_max_ps(p0, x))); return true;
    // The sign flipped (-0 of +0, as -a), through the integer lanes: AVX-512F has no float xor.
    case Op::Neg:
      KILN_LANES(_mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(x), _mm512_castps_si512(sign))));
      return true;
    case Op::Abs: KILN_LANES(_mm512_abs_ps(x)); return true;
    case Op::Identity: KILN_LANES(x); return true;
    case Op::Square: KILN_LANES(_mm512_mul_ps(x, x)); return true;
    case Op::HardSwish:
      KILN_LANES(_mm512_mul_ps(x, _mm512_max_ps(zero, _mm512_min_ps(_mm512_fmadd_ps(x, sixth, half), one))));
      return true;
    case Op::Add: KILN_LANES(_mm512_add_ps(x, y)); return true;
    case Op::Sub: KILN_LANES(_mm512_sub_ps(x, y)); return true;
    case Op::Mul: KILN_LANES(_mm512_mul_ps(x, y)); return true;
    case Op::Div: KILN_LANES(_mm512_div_ps(x, y)); return true;
    case Op::Max: KILN_LANES(_mm512_max_ps(y, x)); return true;
    case Op::Min: KILN_LANES(_mm512_min_ps(y, x)); return true;
    default: return false;
  }
}
#undef KILN_LANES
#pragma GCC diagnostic pop

// Columns [c, c + n) of row r of a Concat's pieces into `dst`: piece k holds columns
// [begin[k], begin[k] + width[k]) of each row, its rows width[k] apart from data[k]. One call per
// tile with the copies inline: DenseNet's rows are dozens of 32-channel pieces, where a memcpy
// call per piece cost more than the copying.
__attribute__((target("avx512f"))) void gather_pieces_avx512(float* dst, const float* const* data, const int64_t* begin,
                                                             const int64_t* width, int pieces, int64_t r, int64_t c,
                                                             int64_t n) {
  const int64_t e = c + n;
  for (int k = 0; k < pieces; ++k) {
    const int64_t lo = std::max(c, begin[k]), hi = std::min(e, begin[k] + width[k]);
    if (lo >= hi) continue;
    const float* src = data[k] + r * width[k] + (lo - begin[k]);
    float* out = dst + (lo - c);
    const int64_t len = hi - lo;
    int64_t j = 0;
    for (; j + 16 <= len; j += 16) _mm512_storeu_ps(out + j, _mm512_loadu_ps(src + j));
    if (j < len) {
      const __mmask16 m = static_cast<__mmask16>((1u << (len - j)) - 1);
      _mm512_mask_storeu_ps(out + j, m, _mm512_maskz_loadu_ps(m, src + j));
    }
  }
}

bool is_float(const ir::Value* v) { return v && v->type.is_tensor() && v->type.dtype == DType::Float && v->type.is_static(); }

const Tensor* constant(const ir::Value* v) { return v && v->is_constant() ? &v->constant() : nullptr; }

// A constant scalar input's value.
std::optional<float> scalar_const(const ir::Value* v) {
  const Tensor* t = constant(v);
  if (!t || t->numel() != 1 || t->kind() != ValueKind::Tensor) return std::nullopt;
  return static_cast<float>(t->as_double(0));
}

struct Decoded {
  Op op;
  int arity;  // 1 or 2; variadic ops chain binary steps
  float p0 = 0, p1 = 0;
  int data_inputs = 1;  // inputs that are tensors to compute on (the rest are parameters)
};

// The step of an activation (src/ops/core/activation.h); Gelu has none here.
std::optional<Decoded> decode_activation(const ops::Activation& a) {
  using A = ops::Activation;
  switch (a.kind) {
    case A::Relu: return Decoded{Op::Relu, 1};
    case A::Sigmoid: return Decoded{Op::Sigmoid, 1};
    case A::Tanh: return Decoded{Op::Tanh, 1};
    case A::SiLU: return Decoded{Op::SiLU, 1};
    case A::HardSwish: return Decoded{Op::HardSwish, 1};
    case A::Clip: return Decoded{Op::Clip, 1, a.a, a.b};
    case A::LeakyRelu: return Decoded{Op::LeakyRelu, 1, a.a};
    case A::HardSigmoid: return Decoded{Op::HardSigmoid, 1, a.a, a.b};
    case A::None: case A::Gelu: case A::GeluTanh: return std::nullopt;
  }
  return std::nullopt;
}

std::optional<Decoded> decode(const ir::Node& n) {
  const std::string& t = n.op_type();
  if (n.num_outputs() != 1 || !is_float(n.output(0))) return std::nullopt;
  for (const auto& [k, a] : n.attrs)
    if (a.g || !a.graphs.empty()) return std::nullopt;
  // Old opsets' Add etc. carry broadcast/axis attributes with other semantics.
  if (n.domain().empty() && (n.has_attr("broadcast") || n.has_attr("axis") || n.has_attr("consumed_inputs")))
    return std::nullopt;
  if (const std::optional<ops::Activation> act = ops::activation_op(n)) return decode_activation(*act);
  if (!n.domain().empty()) return std::nullopt;
  static const std::map<std::string, Op> unary_ops = {
      {"Exp", Op::Exp}, {"Neg", Op::Neg}, {"Abs", Op::Abs}, {"Sqrt", Op::Sqrt}, {"Reciprocal", Op::Reciprocal},
      {"Erf", Op::Erf}, {"Identity", Op::Identity}};
  static const std::map<std::string, Op> binary_ops = {{"Add", Op::Add}, {"Sub", Op::Sub}, {"Mul", Op::Mul},
                                                       {"Div", Op::Div}, {"PRelu", Op::PRelu}};
  if (auto it = unary_ops.find(t); it != unary_ops.end()) return n.num_inputs() == 1 ? std::optional(Decoded{it->second, 1}) : std::nullopt;
  if (auto it = binary_ops.find(t); it != binary_ops.end()) {
    if (n.num_inputs() != 2) return std::nullopt;
    return Decoded{it->second, 2, 0, 0, 2};
  }
  if (t == "Max" || t == "Min" || t == "Sum") {
    if (n.num_inputs() < 1) return std::nullopt;
    return Decoded{t == "Max" ? Op::Max : t == "Min" ? Op::Min : Op::Add, 2, 0, 0, n.num_inputs()};
  }
  if (t == "Pow") {
    auto e = scalar_const(n.input(1));
    if (!e) return std::nullopt;
    if (*e == 1.f) return Decoded{Op::Identity, 1};
    if (*e == 2.f) return Decoded{Op::Square, 1};
    if (*e == 3.f) return Decoded{Op::Cube, 1};
    if (*e == 0.5f) return Decoded{Op::Sqrt, 1};
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

bool elementwise_supported(const ir::Node& node) {
  if (fusion::is_view_op(node)) return is_float(node.input(0)) && is_float(node.output(0));
  auto d = decode(node);
  if (!d) return false;
  for (int i = 0; i < d->data_inputs; ++i)
    if (!is_float(node.input(i))) return false;
  return true;
}

struct ElementwiseProgram::Impl {
  // Slots 0..n_sources-1 hold the operands (a run() input or a constant, read through a view).
  struct Operand {
    int input = -1;                   // run()'s input, or -1 for a constant
    const float* constant = nullptr;
    int64_t offset = 0;
    std::vector<int64_t> outer_strides;  // per outer dim of the iteration space
    int64_t inner_stride = 1;            // 1: read in place, 0: one value per row, else gathered
    int64_t period = 0;                  // with inner_stride 0: the row repeats these many values
    // A Concat along the last axis (the row), gathered from its pieces tile by tile: piece k is
    // run() input `input` holding columns [begin, begin + width) of each row, `width` apart.
    struct Piece {
      int input;
      int64_t begin, width;
    };
    std::vector<Piece> pieces;
  };
  std::vector<Operand> operands;
  std::vector<Step> steps;
  int n_slots = 0;
  int n_sources = 0;
  std::vector<int> output_slot;  // per run() output
  std::vector<std::vector<int64_t>> out_outer_strides;
  std::vector<int64_t> out_inner_stride;
  // Iteration space, collapsed: outer dims then the inner run of length `inner`.
  std::vector<int64_t> outer_dims;
  int64_t inner = 1;
  int64_t total = 0;

  bool contiguous_outputs = true;  // every output written row after row (the usual case)

  // Short rows cost more in per-row work than in arithmetic (a [112*112, 32] * [32] channel
  // scale is 12544 rows of 32). Where the only thing that kept the last outer dim from merging
  // is an operand repeating along it (stride 0 outer, 1 inner), merge m rows into one and
  // read that operand as a pattern repeated m times.
  void widen_short_rows() {
    if (outer_dims.empty() || inner * 2 > kTile) return;
    const int64_t last = outer_dims.back();
    int64_t m = std::min(kTile / inner, last);
    while (m > 1 && last % m != 0) --m;
    if (m < 2) return;
    bool periodic = false;
    for (const Operand& o : operands) {
      const int64_t so = o.outer_strides.back(), si = o.inner_stride;
      if (si == 1 && so == 0) periodic = true;
      else if (!((si == 1 && so == inner) || (si == 0 && so == 0))) return;
    }
    for (size_t k = 0; k < out_inner_stride.size(); ++k)
      if (out_inner_stride[k] != 1 || out_outer_strides[k].back() != inner) return;
    if (!periodic) return;
    for (Operand& o : operands) {
      if (o.inner_stride == 1 && o.outer_strides.back() == 0) {
        o.inner_stride = 0;
        o.period = inner;
      }
      o.outer_strides.back() *= m;
    }
    for (auto& st : out_outer_strides) st.back() *= m;
    outer_dims.back() /= m;
    inner *= m;
  }

  // Calls emit(row, c, n, values) per tile; a template so run()'s copy-out inlines.
  // `direct`: the contiguous single output, written by the last step in place of emit(); row r
  // at direct + (r - direct_row0) * inner.
  template <typename Emit>
  void tiles(const std::vector<const Tensor*>& inputs, int64_t row_begin, int64_t row_end, const Emit& emit,
             float* direct = nullptr, int64_t direct_row0 = 0) const;
  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs, int threads) const;
};

ElementwiseProgram::~ElementwiseProgram() = default;

namespace {
// compile() after it has taken the Concats out of `nodes` (concats: their outputs, or nullptr).
std::unique_ptr<ElementwiseProgram::Impl> build(const std::vector<const ir::Node*>& nodes,
                                                const std::vector<const ir::Value*>& inputs,
                                                const std::vector<const ir::Value*>& outputs,
                                                const std::vector<bool>* cut,
                                                const std::unordered_map<const ir::Value*, const ir::Node*>* concats);
}  // namespace

std::unique_ptr<ElementwiseProgram> ElementwiseProgram::compile(const std::vector<const ir::Node*>& nodes,
                                                                const std::vector<const ir::Value*>& inputs,
                                                                const std::vector<const ir::Value*>& outputs,
                                                                const std::vector<bool>* cut) {
  if (outputs.empty()) return nullptr;
  for (const ir::Value* o : outputs)
    if (!is_float(o)) return nullptr;
  // Concats along the last axis whose output the other nodes read element for element in the
  // iteration shape (fuse_concat_elementwise.h): sources gathered from their pieces, not nodes.
  std::unordered_map<const ir::Value*, const ir::Node*> concat_of;
  std::vector<const ir::Node*> body;
  for (const ir::Node* n : nodes) {
    if (n->domain().empty() && n->op_type() == "Concat") {
      const ir::Value* y = n->output(0);
      if (!is_float(y) || !y->type.is_static() || y->type.rank() < 1) return nullptr;
      if (y->type.static_dims() != outputs[0]->type.static_dims()) return nullptr;
      int64_t axis = n->attr_int("axis", 0);
      if (axis < 0) axis += y->type.rank();
      if (axis != y->type.rank() - 1) return nullptr;
      for (const ir::Node* m : nodes)
        if (fusion::is_view_op(*m)) return nullptr;
      concat_of[y] = n;
      continue;
    }
    body.push_back(n);
  }
  if (!concat_of.empty()) {
    for (const ir::Value* o : outputs)
      if (concat_of.count(o) || !o->type.is_static() || o->type.static_dims() != outputs[0]->type.static_dims())
        return nullptr;
  }
  auto impl = build(concat_of.empty() ? nodes : body, inputs, outputs, cut, concat_of.empty() ? nullptr : &concat_of);
  if (!impl) return nullptr;
  auto p = std::unique_ptr<ElementwiseProgram>(new ElementwiseProgram());
  p->impl_ = std::move(impl);
  return p;
}

namespace {

std::unique_ptr<ElementwiseProgram::Impl> build(const std::vector<const ir::Node*>& nodes,
                                                const std::vector<const ir::Value*>& inputs,
                                                const std::vector<const ir::Value*>& outputs,
                                                const std::vector<bool>* cut,
                                                const std::unordered_map<const ir::Value*, const ir::Node*>* concats) {
  using Impl = ElementwiseProgram::Impl;
  auto impl = std::make_unique<Impl>();
  std::vector<std::optional<Decoded>> decoded;
  for (const ir::Node* n : nodes) {
    if (fusion::is_view_op(*n)) {
      if (!is_float(n->input(0)) || !is_float(n->output(0))) return nullptr;
      decoded.push_back(std::nullopt);
      continue;
    }
    auto d = decode(*n);
    if (!d) return nullptr;
    for (int i = 0; i < d->data_inputs; ++i)
      if (!is_float(n->input(i))) return nullptr;
    decoded.push_back(d);
  }
  const auto plan = fusion::plan_access(nodes, outputs);
  if (!plan) return nullptr;

  // Operands: the plan's reads of group inputs and constants that are data (not Clip bounds
  // or Pow exponents, which decode() already took).
  std::unordered_map<const ir::Value*, int> input_index;
  for (size_t i = 0; i < inputs.size(); ++i) input_index[inputs[i]] = static_cast<int>(i);
  std::vector<int> operand_slot(plan->operands.size(), -1);
  std::vector<const fusion::Access*> access;
  for (size_t k = 0; k < nodes.size(); ++k) {
    const int data_inputs = decoded[k] ? decoded[k]->data_inputs : 1;
    for (int i = 0; i < data_inputs; ++i) {
      auto r = plan->reads.find({nodes[k], i});
      if (r == plan->reads.end() || operand_slot[r->second] >= 0) continue;
      const auto& op = plan->operands[r->second];
      Impl::Operand o;
      if (auto it = input_index.find(op.source); it != input_index.end()) {
        o.input = it->second;
      } else if (concats && concats->count(op.source)) {
        int64_t begin = 0;
        for (const ir::Value* v : concats->at(op.source)->inputs()) {
          auto in = input_index.find(v);
          if (!v || in == input_index.end() || !is_float(v) || !v->type.is_static()) return nullptr;
          const int64_t width = v->type.static_dims().back();
          o.pieces.push_back({in->second, begin, width});
          begin += width;
        }
      } else if (op.source->is_constant() && is_float(op.source)) o.constant = op.source->constant().data<float>();
      else return nullptr;
      o.offset = op.access.offset;
      operand_slot[r->second] = static_cast<int>(impl->operands.size());
      impl->operands.push_back(o);
      access.push_back(&op.access);
      if (impl->operands.size() >= kMaxSlots) return nullptr;
    }
  }
  impl->n_sources = static_cast<int>(impl->operands.size());

  std::unordered_map<const ir::Value*, int> slot;  // computed values (and views of them)
  int next = impl->n_sources;
  for (size_t k = 0; k < nodes.size(); ++k) {
    const ir::Node* n = nodes[k];
    auto src = [&](int i) -> int {
      if (auto r = plan->reads.find({n, i}); r != plan->reads.end()) return operand_slot[r->second];
      auto it = slot.find(n->input(i));
      return it == slot.end() ? -1 : it->second;
    };
    if (!decoded[k]) {  // a view: same tile, other indices
      const int s = src(0);
      if (s < 0) continue;  // nothing reads it
      slot[n->output(0)] = s;
      continue;
    }
    const Decoded& d = *decoded[k];
    int acc = src(0);
    if (acc < 0) continue;
    if (d.arity == 1) {
      impl->steps.push_back({d.op, next, acc, -1, d.p0, d.p1});
      acc = next++;
    } else if (d.data_inputs == 1) {  // Sum/Max/Min of one input
      impl->steps.push_back({Op::Identity, next, acc});
      acc = next++;
    } else {
      for (int i = 1; i < d.data_inputs; ++i) {
        int b = src(i);
        if (b < 0) return nullptr;
        impl->steps.push_back({d.op, next, acc, b});
        acc = next++;
      }
    }
    slot[n->output(0)] = acc;
  }
  for (const ir::Value* o : outputs) {
    auto it = slot.find(o);
    if (it == slot.end()) return nullptr;
    impl->output_slot.push_back(it->second);
  }
  // The steps above name a fresh slot per value; a tile is reused once its value is dead
  // (linear scan), so a long group needs as many tiles as values live at once. A step's
  // destination is never one of its own sources (the loops read them through __restrict).
  {
    std::vector<size_t> last(next, 0);
    std::vector<bool> kept(next, false);
    for (size_t k = 0; k < impl->steps.size(); ++k) {
      last[impl->steps[k].a] = k;
      if (impl->steps[k].b >= 0) last[impl->steps[k].b] = k;
    }
    for (int o : impl->output_slot) kept[o] = true;
    std::vector<int> phys(next, -1), free_slots;
    for (int v = 0; v < impl->n_sources; ++v) phys[v] = v;
    int top = impl->n_sources;
    for (size_t k = 0; k < impl->steps.size(); ++k) {
      Step& st = impl->steps[k];
      const int a = st.a, b = st.b, d = st.dst;
      st.a = phys[a];
      if (b >= 0) st.b = phys[b];
      if (free_slots.empty()) {
        phys[d] = top++;
      } else {
        phys[d] = free_slots.back();
        free_slots.pop_back();
      }
      st.dst = phys[d];
      for (int v : {a, b == a ? -1 : b})
        if (v >= impl->n_sources && !kept[v] && last[v] == k) free_slots.push_back(phys[v]);
      if (!kept[d] && last[d] <= k) free_slots.push_back(phys[d]);  // never read
    }
    for (int& o : impl->output_slot) o = phys[o];
    if (top > kMaxSlots) return nullptr;
    impl->n_slots = top;
  }
  for (const auto& a : plan->outputs) access.push_back(&a);

  // Merge neighbouring dims wherever every operand and output steps through both as one.
  const std::vector<int64_t>& D = plan->dims;
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> cs(access.size());
  for (size_t i = 0; i < D.size(); ++i) {
    bool merge = !dims.empty();
    if (merge && cut) merge = (*cut)[plan->output_dim[i]] == (*cut)[plan->output_dim[i - 1]];
    if (merge && concats && i + 1 == D.size()) merge = false;  // a row is one row of the pieces
    for (size_t s = 0; s < access.size() && merge; ++s) merge = cs[s].back() == access[s]->strides[i] * D[i];
    if (merge) {
      dims.back() *= D[i];
      for (size_t s = 0; s < access.size(); ++s) cs[s].back() = access[s]->strides[i];
    } else {
      dims.push_back(D[i]);
      for (size_t s = 0; s < access.size(); ++s) cs[s].push_back(access[s]->strides[i]);
    }
  }
  if (dims.empty()) {  // a single element
    dims.push_back(1);
    for (auto& c : cs) c.push_back(1);
  }
  impl->inner = dims.back();
  impl->outer_dims.assign(dims.begin(), dims.end() - 1);
  impl->total = 1;
  for (int64_t d : D) impl->total *= d;
  for (size_t s = 0; s < access.size(); ++s) {
    std::vector<int64_t> outer(cs[s].begin(), cs[s].end() - 1);
    if (s < impl->operands.size()) {
      impl->operands[s].outer_strides = std::move(outer);
      impl->operands[s].inner_stride = cs[s].back();
    } else {
      impl->out_outer_strides.push_back(std::move(outer));
      impl->out_inner_stride.push_back(cs[s].back());
    }
  }
  if (concats) {
    // Gathered operands read row `r` of their pieces at r * width: the operand must step
    // through the iteration space contiguously, a row being the whole concatenated axis.
    for (const Impl::Operand& o : impl->operands) {
      if (o.pieces.empty()) continue;
      if (o.inner_stride != 1 || o.offset != 0 || o.pieces.back().begin + o.pieces.back().width != impl->inner)
        return nullptr;
      int64_t expect = impl->inner;
      for (size_t d = impl->outer_dims.size(); d-- > 0;) {
        if (o.outer_strides[d] != expect) return nullptr;
        expect *= impl->outer_dims[d];
      }
    }
  } else if (!cut) {
    impl->widen_short_rows();
  }
  for (size_t k = 0; k < impl->out_inner_stride.size(); ++k) {
    int64_t expect = impl->inner;
    bool ok = impl->out_inner_stride[k] == 1;
    for (size_t d = impl->outer_dims.size(); ok && d-- > 0;) {
      ok = impl->out_outer_strides[k][d] == expect;
      expect *= impl->outer_dims[d];
    }
    impl->contiguous_outputs = impl->contiguous_outputs && ok;
  }
  return impl;
}

}  // namespace

void ElementwiseProgram::run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
                             int threads) const {
  impl_->run(inputs, outputs, threads);
}

int64_t ElementwiseProgram::rows() const {
  int64_t r = 1;
  for (int64_t d : impl_->outer_dims) r *= d;
  return r;
}

int64_t ElementwiseProgram::row_length() const { return impl_->inner; }

void ElementwiseProgram::for_tiles(const std::vector<const Tensor*>& inputs, int64_t row_begin, int64_t row_end,
                                   const TileFn& fn) const {
  impl_->tiles(inputs, row_begin, row_end, fn);
}

bool ElementwiseProgram::rows_in_memory_order() const { return impl_->contiguous_outputs; }

void ElementwiseProgram::rows_into(const std::vector<const Tensor*>& inputs, int64_t row_begin, int64_t row_end,
                                   float* out) const {
  const Impl& p = *impl_;
  if (p.output_slot.size() == 1 && !p.steps.empty() && p.output_slot[0] == p.steps.back().dst) {
    p.tiles(inputs, row_begin, row_end, [](int64_t, int64_t, int64_t, const float* const*) {}, out, row_begin);
    return;
  }
  p.tiles(inputs, row_begin, row_end, [&](int64_t row, int64_t c, int64_t n, const float* const* values) {
    std::memcpy(out + (row - row_begin) * p.inner + c, values[0], static_cast<size_t>(n) * sizeof(float));
  });
}

template <typename Emit>
void ElementwiseProgram::Impl::tiles(const std::vector<const Tensor*>& inputs, int64_t row_begin, int64_t row_end,
                                     const Emit& emit, float* direct, int64_t direct_row0) const {
  const float* base[kMaxSlots];
  for (int s = 0; s < n_sources; ++s)
    base[s] = operands[s].pieces.empty()
                  ? (operands[s].input >= 0 ? inputs[operands[s].input]->data<float>() : operands[s].constant) +
                        operands[s].offset
                  : nullptr;
  // The gathered operands' pieces (data, first column, width), looked up once per call.
  std::vector<const float*> piece_data;
  std::vector<int64_t> piece_begin, piece_width;
  int piece_first[kMaxSlots] = {};
  const bool avx512 = has_avx512();
  for (int s = 0; s < n_sources; ++s) {
    piece_first[s] = static_cast<int>(piece_data.size());
    for (const Operand::Piece& p : operands[s].pieces) {
      piece_data.push_back(inputs[p.input]->data<float>());
      piece_begin.push_back(p.begin);
      piece_width.push_back(p.width);
    }
  }
  const int nd = static_cast<int>(outer_dims.size());
  alignas(64) float tiles[kMaxSlots][kTile];
  const float* ptr[kMaxSlots];
  const float* result[kMaxSlots];
  // A broadcast source's tile depends only on its offset, which repeats from row to row (an SE
  // scale is the same [C] vector for every pixel): refill it only when the offset changes.
  int64_t filled[kMaxSlots];
  std::fill(filled, filled + kMaxSlots, int64_t{-1});
  const Step* last_step = steps.empty() ? nullptr : &steps.back();
  for (int64_t row = row_begin; row < row_end; ++row) {
    int64_t off[kMaxSlots] = {};
    int64_t rem = row;
    for (int d = nd - 1; d >= 0; --d) {
      const int64_t idx = rem % outer_dims[d];
      rem /= outer_dims[d];
      for (int s = 0; s < n_sources; ++s) off[s] += idx * operands[s].outer_strides[d];
    }
    for (int s = 0; s < n_sources; ++s)
      if (operands[s].inner_stride == 0) {
        ptr[s] = tiles[s];
        if (filled[s] == off[s]) continue;
        filled[s] = off[s];
        if (const int64_t p = operands[s].period) {  // inner <= kTile here
          for (int64_t j = 0; j < inner; j += p) std::memcpy(tiles[s] + j, base[s] + off[s], p * sizeof(float));
        } else {
          std::fill(tiles[s], tiles[s] + std::min(inner, kTile), base[s][off[s]]);
        }
      }
    for (int64_t c = 0; c < inner; c += kTile) {
      const int64_t n = std::min(kTile, inner - c);
      for (int s = 0; s < n_sources; ++s) {
        const int64_t st = operands[s].inner_stride;
        if (!operands[s].pieces.empty()) {  // a Concat: row off / inner of each piece
          const int64_t r = off[s] / inner, e = c + n;
          const int first = piece_first[s], count = static_cast<int>(operands[s].pieces.size());
          if (avx512) {
            gather_pieces_avx512(tiles[s], piece_data.data() + first, piece_begin.data() + first,
                                 piece_width.data() + first, count, r, c, n);
          } else {
            for (int k = first; k < first + count; ++k) {
              const int64_t lo = std::max(c, piece_begin[k]), hi = std::min(e, piece_begin[k] + piece_width[k]);
              if (lo < hi)
                std::memcpy(tiles[s] + (lo - c), piece_data[k] + r * piece_width[k] + (lo - piece_begin[k]),
                            static_cast<size_t>(hi - lo) * sizeof(float));
            }
          }
          ptr[s] = tiles[s];
        } else if (st == 1) {
          ptr[s] = base[s] + off[s] + c;
        } else if (st != 0) {  // a transposed read
          const float* b = base[s] + off[s] + c * st;
          for (int64_t j = 0; j < n; ++j) tiles[s][j] = b[j * st];
          ptr[s] = tiles[s];
        }
      }
      for (const Step& st : steps) {
        // With `direct`, the last step writes the (single, contiguous) output in place.
        float* dst = direct && &st == last_step ? direct + (row - direct_row0) * inner + c : tiles[st.dst];
        if (avx512 && step_avx512(st, ptr[st.a], st.b < 0 ? nullptr : ptr[st.b], dst, n)) {
        } else if (st.b < 0) {
          unary(st.op, ptr[st.a], dst, n, st.p0, st.p1);
        } else {
          binary(st.op, ptr[st.a], ptr[st.b], dst, n);
        }
        ptr[st.dst] = dst;
      }
      if (direct) continue;
      for (size_t k = 0; k < output_slot.size(); ++k) result[k] = ptr[output_slot[k]];
      emit(row, c, n, result);
    }
  }
}

void ElementwiseProgram::Impl::run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
                                   int threads) const {
  std::vector<float*> out(outputs.size());
  for (size_t k = 0; k < outputs.size(); ++k) out[k] = outputs[k]->data<float>();
  int64_t rows = 1;
  for (int64_t d : outer_dims) rows *= d;
  const int nd = static_cast<int>(outer_dims.size());
  // The last step may write the output directly unless an input shares its memory (an in-place
  // plan): steps read their sources through __restrict pointers.
  bool direct_ok = contiguous_outputs && out.size() == 1 && !steps.empty() && output_slot[0] == steps.back().dst;
  if (direct_ok) {
    const char* o = static_cast<const char*>(outputs[0]->raw());
    const size_t on = outputs[0]->nbytes();
    for (const Tensor* t : inputs) {
      if (!t) continue;
      const char* i = static_cast<const char*>(t->raw());
      if (i < o + on && o < i + t->nbytes()) direct_ok = false;
    }
  }
  // Whole rows per task: a row's tiles share the broadcast values. Tiny tensors stay on one
  // thread (see kParallelMinElements).
  parallel_for(rows, total >= kParallelMinElements ? threads : 1, [&](int64_t row_begin, int64_t row_end) {
    if (direct_ok) {
      tiles(inputs, row_begin, row_end, [](int64_t, int64_t, int64_t, const float* const*) {}, out[0]);
      return;
    }
    if (contiguous_outputs) {
      tiles(inputs, row_begin, row_end, [&](int64_t row, int64_t c, int64_t n, const float* const* vals) {
        for (size_t k = 0; k < out.size(); ++k)
          std::memcpy(out[k] + row * inner + c, vals[k], static_cast<size_t>(n) * sizeof(float));
      });
      return;
    }
    int64_t cached_row = -1;
    std::vector<int64_t> off(out.size());
    tiles(inputs, row_begin, row_end, [&](int64_t row, int64_t c, int64_t n, const float* const* vals) {
      if (row != cached_row) {
        cached_row = row;
        std::fill(off.begin(), off.end(), 0);
        int64_t rem = row;
        for (int d = nd - 1; d >= 0; --d) {
          const int64_t idx = rem % outer_dims[d];
          rem /= outer_dims[d];
          for (size_t k = 0; k < out.size(); ++k) off[k] += idx * out_outer_strides[k][d];
        }
      }
      for (size_t k = 0; k < out.size(); ++k) {
        const int64_t st = out_inner_stride[k];
        float* o = out[k] + off[k] + c * st;
        if (st == 1) std::memcpy(o, vals[k], static_cast<size_t>(n) * sizeof(float));
        else for (int64_t j = 0; j < n; ++j) o[j * st] = vals[k][j];
      }
    });
  });
}

}  // namespace kiln::backends::cpu
