#include "backends/cpu/elementwise_program.h"

#include <kiln/error.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <unordered_map>

#include "backends/cpu/parallel.h"
#include "backends/cpu/simd.h"

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
    case Op::SiLU: for (int64_t i = 0; i < n; ++i) o[i] = a[i] * simd::sigmoid(a[i]); break;
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

std::optional<Decoded> decode(const ir::Node& n) {
  const std::string& t = n.op_type();
  if (n.num_outputs() != 1 || !is_float(n.output(0))) return std::nullopt;
  for (const auto& [k, a] : n.attrs)
    if (a.g || !a.graphs.empty()) return std::nullopt;
  if (n.domain() == "kiln") {
    if (t == "SiLU") return Decoded{Op::SiLU, 1};
    return std::nullopt;
  }
  if (!n.domain().empty()) return std::nullopt;
  static const std::map<std::string, Op> unary_ops = {
      {"Relu", Op::Relu}, {"Sigmoid", Op::Sigmoid}, {"Tanh", Op::Tanh}, {"Exp", Op::Exp}, {"Neg", Op::Neg},
      {"Abs", Op::Abs}, {"Sqrt", Op::Sqrt}, {"Reciprocal", Op::Reciprocal}, {"Erf", Op::Erf},
      {"HardSwish", Op::HardSwish}, {"Identity", Op::Identity}};
  static const std::map<std::string, Op> binary_ops = {{"Add", Op::Add}, {"Sub", Op::Sub}, {"Mul", Op::Mul},
                                                       {"Div", Op::Div}, {"PRelu", Op::PRelu}};
  // Old opsets' Add etc. carry broadcast/axis attributes with other semantics.
  if (n.has_attr("broadcast") || n.has_attr("axis") || n.has_attr("consumed_inputs")) return std::nullopt;
  if (auto it = unary_ops.find(t); it != unary_ops.end()) return n.num_inputs() == 1 ? std::optional(Decoded{it->second, 1}) : std::nullopt;
  if (auto it = binary_ops.find(t); it != binary_ops.end()) {
    if (n.num_inputs() != 2) return std::nullopt;
    return Decoded{it->second, 2, 0, 0, 2};
  }
  if (t == "Max" || t == "Min" || t == "Sum") {
    if (n.num_inputs() < 1) return std::nullopt;
    return Decoded{t == "Max" ? Op::Max : t == "Min" ? Op::Min : Op::Add, 2, 0, 0, n.num_inputs()};
  }
  if (t == "LeakyRelu") return Decoded{Op::LeakyRelu, 1, n.attr_float("alpha", 0.01f)};
  if (t == "HardSigmoid") return Decoded{Op::HardSigmoid, 1, n.attr_float("alpha", 0.2f), n.attr_float("beta", 0.5f)};
  if (t == "Clip") {
    float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
    if (n.owner() && n.owner()->opset() < 11) {
      lo = n.attr_float("min", lo);
      hi = n.attr_float("max", hi);
    } else {
      for (int i = 1; i <= 2; ++i) {
        if (!n.has_input(i)) continue;
        auto v = scalar_const(n.input(i));
        if (!v) return std::nullopt;
        (i == 1 ? lo : hi) = *v;
      }
    }
    return Decoded{Op::Clip, 1, lo, hi};
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
  auto d = decode(node);
  if (!d) return false;
  for (int i = 0; i < d->data_inputs; ++i)
    if (!is_float(node.input(i))) return false;
  return true;
}

struct ElementwiseProgram::Impl {
  // Sources: 0..n_inputs-1 are run()'s inputs, then constants.
  int n_inputs = 0;
  std::vector<const float*> const_data;
  std::vector<Step> steps;
  int n_slots = 0;  // slot i < n_sources holds source i
  int n_sources = 0;
  std::vector<int> output_slot;  // per run() output
  // Iteration space, collapsed: outer dims then the inner (contiguous) run of length `inner`.
  std::vector<int64_t> outer_dims;
  int64_t inner = 1;
  // Per source: stride of each outer dim (elements), and whether the inner run is contiguous
  // (stride 1) or one broadcast value (stride 0).
  std::vector<std::vector<int64_t>> outer_strides;
  std::vector<bool> inner_contiguous;
  int64_t total = 0;

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs, int threads) const;
};

ElementwiseProgram::~ElementwiseProgram() = default;

std::unique_ptr<ElementwiseProgram> ElementwiseProgram::compile(const std::vector<const ir::Node*>& nodes,
                                                                const std::vector<const ir::Value*>& inputs,
                                                                const std::vector<const ir::Value*>& outputs) {
  auto impl = std::make_unique<Impl>();
  if (outputs.empty() || !is_float(outputs[0])) return nullptr;
  const std::vector<int64_t> D = outputs[0]->type.static_dims();
  for (const ir::Value* o : outputs)
    if (!is_float(o) || o->type.static_dims() != D) return nullptr;
  const int r = static_cast<int>(D.size());

  std::unordered_map<const ir::Value*, int> slot;
  std::vector<const ir::Value*> sources;
  for (const ir::Value* v : inputs) {
    if (!is_float(v)) return nullptr;
    slot[v] = static_cast<int>(sources.size());
    sources.push_back(v);
  }
  impl->n_inputs = static_cast<int>(inputs.size());
  // Constants read as data become sources too.
  std::vector<std::optional<Decoded>> decoded;
  for (const ir::Node* n : nodes) {
    auto d = decode(*n);
    if (!d) return nullptr;
    for (int i = 0; i < d->data_inputs; ++i) {
      const ir::Value* v = n->input(i);
      if (!is_float(v)) return nullptr;
      if (slot.count(v)) continue;
      if (!v->is_constant()) continue;  // produced by an earlier node
      slot[v] = static_cast<int>(sources.size());
      sources.push_back(v);
      impl->const_data.push_back(v->constant().data<float>());
    }
    decoded.push_back(d);
  }
  impl->n_sources = static_cast<int>(sources.size());
  int next = impl->n_sources;
  for (size_t k = 0; k < nodes.size(); ++k) {
    const ir::Node* n = nodes[k];
    const Decoded& d = *decoded[k];
    auto src = [&](int i) -> int {
      auto it = slot.find(n->input(i));
      return it == slot.end() ? -1 : it->second;
    };
    int acc = src(0);
    if (acc < 0) return nullptr;
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
    if (next > kMaxSlots) return nullptr;
  }
  impl->n_slots = next;
  for (const ir::Value* o : outputs) {
    auto it = slot.find(o);
    if (it == slot.end()) return nullptr;
    impl->output_slot.push_back(it->second);
  }

  // Strides of each source in the iteration space (0 where it broadcasts).
  std::vector<std::vector<int64_t>> strides;
  for (const ir::Value* v : sources) {
    std::vector<int64_t> sd = v->type.static_dims();
    if (static_cast<int>(sd.size()) > r) return nullptr;
    sd.insert(sd.begin(), r - sd.size(), 1);
    std::vector<int64_t> st(r, 0);
    int64_t s = 1;
    for (int i = r - 1; i >= 0; --i) {
      if (sd[i] != 1 && sd[i] != D[i]) return nullptr;
      st[i] = sd[i] == 1 ? 0 : s;
      s *= sd[i];
    }
    strides.push_back(st);
  }
  // Merge neighbouring dims where every source either runs through both contiguously or
  // broadcasts over both; the last merged dim is the inner run.
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> cs(sources.size());
  for (int i = 0; i < r; ++i) {
    if (D[i] == 1) continue;
    bool merge = !dims.empty();
    for (size_t s = 0; s < sources.size() && merge; ++s) {
      const int64_t prev = cs[s].back(), cur = strides[s][i];
      merge = (prev == 0 && cur == 0) || (cur != 0 && prev == cur * D[i]);
    }
    if (merge) {
      dims.back() *= D[i];
      for (size_t s = 0; s < sources.size(); ++s) cs[s].back() = strides[s][i];
    } else {
      dims.push_back(D[i]);
      for (size_t s = 0; s < sources.size(); ++s) cs[s].push_back(strides[s][i]);
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
  for (size_t s = 0; s < sources.size(); ++s) {
    impl->inner_contiguous.push_back(cs[s].back() != 0);
    impl->outer_strides.push_back(std::vector<int64_t>(cs[s].begin(), cs[s].end() - 1));
  }
  auto p = std::unique_ptr<ElementwiseProgram>(new ElementwiseProgram());
  p->impl_ = std::move(impl);
  return p;
}

void ElementwiseProgram::run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
                             int threads) const {
  impl_->run(inputs, outputs, threads);
}

void ElementwiseProgram::Impl::run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
                                   int threads) const {
  std::vector<const float*> base(n_sources);
  for (int s = 0; s < n_sources; ++s) base[s] = s < n_inputs ? inputs[s]->data<float>() : const_data[s - n_inputs];
  std::vector<float*> out(outputs.size());
  for (size_t k = 0; k < outputs.size(); ++k) out[k] = outputs[k]->data<float>();
  int64_t rows = 1;
  for (int64_t d : outer_dims) rows *= d;
  const int nd = static_cast<int>(outer_dims.size());

  // Whole rows per task: a row's tiles share the broadcast values. Small tensors stay on one
  // thread: waking the team costs more than the work.
  parallel_for(rows, total >= (1 << 16) ? threads : 1, [&](int64_t row_begin, int64_t row_end) {
  for (int64_t row = row_begin; row < row_end; ++row) {
    alignas(64) float tiles[kMaxSlots][kTile];
    const float* ptr[kMaxSlots];
    // Source offsets of this row.
    int64_t off[kMaxSlots] = {};
    int64_t rem = row;
    for (int d = nd - 1; d >= 0; --d) {
      const int64_t idx = rem % outer_dims[d];
      rem /= outer_dims[d];
      for (int s = 0; s < n_sources; ++s) off[s] += idx * outer_strides[s][d];
    }
    for (int s = 0; s < n_sources; ++s)
      if (!inner_contiguous[s]) {
        std::fill(tiles[s], tiles[s] + std::min(inner, kTile), base[s][off[s]]);
        ptr[s] = tiles[s];
      }
    for (int64_t c = 0; c < inner; c += kTile) {
      const int64_t n = std::min(kTile, inner - c);
      for (int s = 0; s < n_sources; ++s)
        if (inner_contiguous[s]) ptr[s] = base[s] + off[s] + c;
      for (const Step& st : steps) {
        float* dst = tiles[st.dst];
        if (st.b < 0) unary(st.op, ptr[st.a], dst, n, st.p0, st.p1);
        else binary(st.op, ptr[st.a], ptr[st.b], dst, n);
        ptr[st.dst] = dst;
      }
      for (size_t k = 0; k < out.size(); ++k)
        std::memcpy(out[k] + row * inner + c, ptr[output_slot[k]], static_cast<size_t>(n) * sizeof(float));
    }
  }
  });
}

}  // namespace kiln::backends::cpu
