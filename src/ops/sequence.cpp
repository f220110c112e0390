// Sequence ops (opsets 11..17): SequenceEmpty, SequenceConstruct, SequenceAt, SequenceInsert,
// SequenceErase, SequenceLength, SplitToSequence, ConcatFromSequence, SequenceMap.
//
// A sequence value is a kiln::Tensor of kind Sequence; its IR type has is_sequence set and its
// dtype/dims describe every element (dims that differ between elements are symbolic, or the
// rank is unknown). Items are shared, never copied: tensors are immutable once produced.
#include <algorithm>
#include <cstring>

#include "ops/core/infer_graph.h"
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

namespace {

ir::TensorType seq_of(ir::TensorType elem) {
  elem.is_sequence = true;
  elem.is_optional = false;
  return elem;
}

ir::TensorType elem_of(ir::TensorType seq) {
  seq.is_sequence = false;
  seq.is_optional = false;
  return seq;
}

// The most specific type covering both a and b (element types): equal dims stay, different
// ones become fresh symbols, different ranks give unknown rank.
ir::TensorType unify(InferContext& ctx, const ir::TensorType& a, const ir::TensorType& b) {
  ir::TensorType t = ir::TensorType::unranked(a.dtype != DType::Undefined ? a.dtype : b.dtype);
  if (a.rank_known && b.rank_known && a.rank() == b.rank()) {
    t.rank_known = true;
    for (int i = 0; i < a.rank(); ++i)
      t.dims.push_back(a.dims[i].same_as(b.dims[i]) ? a.dims[i] : ctx.fresh_dim());
  }
  return t;
}

const ir::TensorType& sequence_input(InferContext& ctx, int i) {
  const ir::TensorType& t = ctx.input(i);
  if (!t.is_sequence && (t.dtype != DType::Undefined || t.rank_known))
    ctx.fail("input " + std::to_string(i) + " must be a sequence, got " + t.str());
  return t;
}

const Tensor& sequence_arg(KernelContext& ctx, int i) {
  const Tensor& t = ctx.input(i);
  if (!t.is_sequence()) ctx.fail("input " + std::to_string(i) + " must be a sequence, got " + t.describe());
  return t;
}

// A position input: a scalar (or one-element) int32/int64 in [-n, n + extra); returns it in
// [0, n + extra).
int64_t position_arg(KernelContext& ctx, int i, int64_t n, int64_t extra) {
  const Tensor& p = ctx.input(i);
  if (p.dtype() != DType::Int64 && p.dtype() != DType::Int32) ctx.fail("position must be int32 or int64");
  if (p.numel() != 1) ctx.fail("position must be a scalar, got " + p.describe());
  int64_t pos = p.as_int64(0);
  if (pos < -n || pos >= n + extra)
    ctx.fail("position " + std::to_string(pos) + " is out of range for a sequence of " + std::to_string(n) +
             " tensors");
  return pos < 0 ? pos + n : pos;
}

void check_elem_dtype(KernelContext& ctx, const Tensor& seq, const Tensor& t) {
  if (seq.dtype() != DType::Undefined && t.dtype() != seq.dtype())
    ctx.fail("tensor of dtype " + dtype_name(t.dtype()) + " does not match the sequence's " + dtype_name(seq.dtype()));
}

// Copies n elements between two tensors of the same dtype (element offsets).
void copy_elems(const Tensor& src, int64_t src_off, Tensor& dst, int64_t dst_off, int64_t n) {
  if (n <= 0) return;
  if (src.dtype() == DType::String) {
    const std::string* s = src.data<std::string>() + src_off;
    std::string* d = dst.data<std::string>() + dst_off;
    for (int64_t i = 0; i < n; ++i) d[i] = s[i];
    return;
  }
  const size_t es = dtype_size(src.dtype());
  std::memcpy(static_cast<char*>(dst.raw()) + dst_off * es, static_cast<const char*>(src.raw()) + src_off * es, n * es);
}

// Elements [begin, begin + len) of x along axis.
Tensor slice_axis(const Tensor& x, int axis, int64_t begin, int64_t len) {
  std::vector<int64_t> dims = x.dims();
  const int64_t outer = product(dims, 0, axis), extent = dims[axis], inner = product(dims, axis + 1);
  dims[axis] = len;
  Tensor out(x.dtype(), dims);
  for (int64_t o = 0; o < outer; ++o)
    copy_elems(x, (o * extent + begin) * inner, out, o * len * inner, len * inner);
  return out;
}

}  // namespace

KILN_REGISTER_OPS(sequence) {
  reg.add({.name = "SequenceEmpty", .since_version = 11, .min_inputs = 0, .max_inputs = 0,
           .infer = [](InferContext& ctx) {
             ctx.set_output(0, seq_of(ir::TensorType::unranked(
                                   static_cast<DType>(ctx.node().attr_int("dtype", static_cast<int64_t>(DType::Float))))));
           },
           .kernel = [](KernelContext& ctx) {
             auto dt = static_cast<DType>(ctx.node().attr_int("dtype", static_cast<int64_t>(DType::Float)));
             ctx.set_output(0, Tensor::sequence(dt, {}));
           }});

  reg.add({.name = "SequenceConstruct", .since_version = 11, .min_inputs = 1, .max_inputs = -1,
           .infer = [](InferContext& ctx) {
             ir::TensorType t = ctx.input(0);
             if (!t.is_tensor()) ctx.fail("inputs must be tensors, got " + t.str());
             for (int i = 1; i < ctx.num_inputs(); ++i) {
               const ir::TensorType& u = ctx.input(i);
               if (t.dtype != DType::Undefined && u.dtype != DType::Undefined && u.dtype != t.dtype)
                 ctx.fail("all inputs must have one dtype: " + t.str() + " vs " + u.str());
               t = unify(ctx, t, u);
             }
             ctx.set_output(0, seq_of(t));
           },
           .kernel = [](KernelContext& ctx) {
             std::vector<Tensor> items;
             for (int i = 0; i < ctx.num_inputs(); ++i) {
               const Tensor& t = ctx.input(i);
               if (t.kind() != ValueKind::Tensor) ctx.fail("inputs must be tensors, got " + t.describe());
               if (t.dtype() != ctx.input(0).dtype()) ctx.fail("all inputs must have one dtype");
               items.push_back(t);
             }
             ctx.set_output(0, Tensor::sequence(ctx.input(0).dtype(), std::move(items)));
           }});

  reg.add({.name = "SequenceAt", .since_version = 11, .min_inputs = 2, .max_inputs = 2,
           .infer = [](InferContext& ctx) { ctx.set_output(0, elem_of(sequence_input(ctx, 0))); },
           .kernel = [](KernelContext& ctx) {
             const Tensor& s = sequence_arg(ctx, 0);
             const int64_t n = static_cast<int64_t>(s.items().size());
             ctx.set_output(0, s.items()[position_arg(ctx, 1, n, 0)]);
           }});

  reg.add({.name = "SequenceInsert", .since_version = 11, .min_inputs = 2, .max_inputs = 3,
           .infer = [](InferContext& ctx) {
             const ir::TensorType& s = sequence_input(ctx, 0);
             const ir::TensorType& t = ctx.input(1);
             if (s.dtype != DType::Undefined && t.dtype != DType::Undefined && s.dtype != t.dtype)
               ctx.fail("tensor " + t.str() + " does not match the sequence's element dtype " + dtype_name(s.dtype));
             // An empty sequence's element type says nothing about shapes: take the tensor's.
             ir::TensorType elem = s.rank_known ? unify(ctx, elem_of(s), t) : ir::TensorType::unranked(t.dtype);
             ctx.set_output(0, seq_of(elem));
           },
           .kernel = [](KernelContext& ctx) {
             const Tensor& s = sequence_arg(ctx, 0);
             const Tensor& t = ctx.input(1);
             if (t.kind() != ValueKind::Tensor) ctx.fail("the inserted value must be a tensor");
             check_elem_dtype(ctx, s, t);
             std::vector<Tensor> items = s.items();
             const int64_t n = static_cast<int64_t>(items.size());
             int64_t pos = ctx.has_input(2) ? position_arg(ctx, 2, n, 1) : n;
             items.insert(items.begin() + pos, t);
             ctx.set_output(0, Tensor::sequence(t.dtype(), std::move(items)));
           }});

  reg.add({.name = "SequenceErase", .since_version = 11, .min_inputs = 1, .max_inputs = 2,
           .infer = [](InferContext& ctx) { ctx.set_output(0, sequence_input(ctx, 0)); },
           .kernel = [](KernelContext& ctx) {
             const Tensor& s = sequence_arg(ctx, 0);
             std::vector<Tensor> items = s.items();
             const int64_t n = static_cast<int64_t>(items.size());
             if (n == 0) ctx.fail("cannot erase from an empty sequence");
             int64_t pos = ctx.has_input(1) ? position_arg(ctx, 1, n, 0) : n - 1;
             items.erase(items.begin() + pos);
             ctx.set_output(0, Tensor::sequence(s.dtype(), std::move(items)));
           }});

  reg.add({.name = "SequenceLength", .since_version = 11, .min_inputs = 1, .max_inputs = 1,
           .infer = [](InferContext& ctx) {
             sequence_input(ctx, 0);
             ctx.set_output(0, DType::Int64, {});
           },
           .kernel = [](KernelContext& ctx) {
             ctx.set_output(0, Tensor::scalar<int64_t>(static_cast<int64_t>(sequence_arg(ctx, 0).items().size())));
           }});

  // split absent: pieces of 1 (squeezed unless keepdims); a scalar: equal pieces, the last
  // one shorter; a 1-D tensor: the piece lengths.
  reg.add({.name = "SplitToSequence", .since_version = 11, .min_inputs = 1, .max_inputs = 2,
           .infer = [](InferContext& ctx) {
             const ir::TensorType& x = ctx.input(0);
             if (!x.rank_known) { ctx.set_output(0, seq_of(ir::TensorType::unranked(x.dtype))); return; }
             if (x.rank() == 0) ctx.fail("input must have rank >= 1");
             const int axis = static_cast<int>(normalize_axis(ctx.node().attr_int("axis", 0), x.rank(), ctx.node()));
             ir::TensorType elem = x;
             if (!ctx.has_input(1)) {
               if (ctx.node().attr_int("keepdims", 1)) elem.dims[axis] = 1;
               else elem.dims.erase(elem.dims.begin() + axis);
             } else if (const Tensor* sp = ctx.value(1)) {
               std::vector<int64_t> v = sp->to_int64_vector();
               const ir::Dim& d = x.dims[axis];
               bool same = !v.empty() && std::all_of(v.begin(), v.end(), [&](int64_t k) { return k == v[0]; });
               if (sp->rank() == 0) same = d.is_static() && v[0] > 0 && d.value % v[0] == 0;
               elem.dims[axis] = same ? ir::Dim(v[0]) : ctx.fresh_dim();
             } else {
               elem.dims[axis] = ctx.fresh_dim();
             }
             ctx.set_output(0, seq_of(elem));
           },
           .kernel = [](KernelContext& ctx) {
             const Tensor& x = ctx.input(0);
             if (x.kind() != ValueKind::Tensor || x.rank() == 0) ctx.fail("input must be a tensor of rank >= 1");
             const int axis = static_cast<int>(normalize_axis(ctx.node().attr_int("axis", 0), x.rank(), ctx.node()));
             const int64_t extent = x.dim(axis);
             std::vector<int64_t> lengths;
             bool squeeze = false;
             if (!ctx.has_input(1)) {
               lengths.assign(extent, 1);
               squeeze = ctx.node().attr_int("keepdims", 1) == 0;
             } else {
               const Tensor& sp = ctx.input(1);
               if (sp.dtype() != DType::Int64 && sp.dtype() != DType::Int32) ctx.fail("split must be int32 or int64");
               std::vector<int64_t> v = sp.to_int64_vector();
               if (sp.rank() == 0) {
                 if (v[0] <= 0) ctx.fail("split must be positive, got " + std::to_string(v[0]));
                 for (int64_t b = 0; b < extent; b += v[0]) lengths.push_back(std::min(v[0], extent - b));
               } else if (sp.rank() == 1) {
                 int64_t sum = 0;
                 for (int64_t k : v) {
                   if (k < 0) ctx.fail("split lengths must be >= 0");
                   sum += k;
                 }
                 if (sum != extent)
                   ctx.fail("split lengths sum to " + std::to_string(sum) + ", the axis has " + std::to_string(extent));
                 lengths = v;
               } else {
                 ctx.fail("split must be a scalar or 1-D");
               }
             }
             std::vector<Tensor> items;
             int64_t begin = 0;
             for (int64_t len : lengths) {
               Tensor piece = slice_axis(x, axis, begin, len);
               if (squeeze) {
                 std::vector<int64_t> d = piece.dims();
                 d.erase(d.begin() + axis);
                 piece = piece.reshaped(d);
               }
               items.push_back(piece);
               begin += len;
             }
             ctx.set_output(0, Tensor::sequence(x.dtype(), std::move(items)));
           }});

  // new_axis = 1 stacks the tensors along a new axis (np.stack); 0 concatenates them.
  reg.add({.name = "ConcatFromSequence", .since_version = 11, .min_inputs = 1, .max_inputs = 1,
           .infer = [](InferContext& ctx) {
             ir::TensorType t = elem_of(sequence_input(ctx, 0));
             const bool new_axis = ctx.node().attr_int("new_axis", 0) != 0;
             const int64_t axis = ctx.node().attr_int_required("axis");
             if (!t.rank_known) { ctx.set_output(0, t); return; }
             const int64_t a = normalize_axis(axis, t.rank() + (new_axis ? 1 : 0), ctx.node());
             if (new_axis) t.dims.insert(t.dims.begin() + a, ctx.fresh_dim());
             else t.dims[a] = ctx.fresh_dim();
             ctx.set_output(0, t);
           },
           .kernel = [](KernelContext& ctx) {
             const Tensor& s = sequence_arg(ctx, 0);
             const std::vector<Tensor>& items = s.items();
             if (items.empty()) ctx.fail("cannot concatenate an empty sequence");
             const bool new_axis = ctx.node().attr_int("new_axis", 0) != 0;
             const int r = items[0].rank();
             const int a = static_cast<int>(normalize_axis(ctx.node().attr_int_required("axis"), r + (new_axis ? 1 : 0), ctx.node()));
             // View every item with the concatenation axis made explicit.
             std::vector<Tensor> parts;
             for (const Tensor& t : items) {
               if (t.rank() != r || t.dtype() != items[0].dtype()) ctx.fail("sequence items differ in rank or dtype");
               for (int k = 0; k < r; ++k)
                 if ((new_axis || k != a) && t.dim(k) != items[0].dim(k))
                   ctx.fail("sequence items differ in dims other than the axis: " + items[0].describe() + " vs " + t.describe());
               std::vector<int64_t> d = t.dims();
               if (new_axis) d.insert(d.begin() + a, 1);
               parts.push_back(t.reshaped(d));
             }
             std::vector<int64_t> od = parts[0].dims();
             od[a] = 0;
             for (const Tensor& p : parts) od[a] += p.dim(a);
             Tensor& out = ctx.make_output(0, items[0].dtype(), od);
             const int64_t outer = product(od, 0, a), inner = product(od, a + 1);
             int64_t off = 0;
             for (const Tensor& p : parts) {
               const int64_t len = p.dim(a) * inner;
               for (int64_t o = 0; o < outer; ++o) copy_elems(p, o * len, out, o * od[a] * inner + off, len);
               off += len;
             }
           }});

  // The body runs once per item of the first input; further sequence inputs are read at the
  // same position, tensor inputs are passed whole. Every output is a sequence.
  reg.add({.name = "SequenceMap", .since_version = 17, .min_inputs = 1, .max_inputs = -1, .min_outputs = 1,
           .max_outputs = -1,
           .infer = [](InferContext& ctx) {
             std::shared_ptr<ir::Graph> body = ctx.node().attr_graph("body");
             if (!body) ctx.fail("missing 'body' attribute");
             if (static_cast<int>(body->inputs().size()) != ctx.num_inputs())
               ctx.fail("body takes " + std::to_string(body->inputs().size()) + " inputs, node has " +
                        std::to_string(ctx.num_inputs()));
             if (static_cast<int>(body->outputs().size()) != ctx.num_outputs())
               ctx.fail("body gives " + std::to_string(body->outputs().size()) + " outputs, node has " +
                        std::to_string(ctx.num_outputs()));
             sequence_input(ctx, 0);
             std::vector<ir::TensorType> ins;
             for (int i = 0; i < ctx.num_inputs(); ++i) ins.push_back(elem_of(ctx.input(i)));
             std::vector<ir::TensorType> outs = infer_subgraph(ctx, *body, ins);
             for (int i = 0; i < ctx.num_outputs(); ++i) ctx.set_output(i, seq_of(outs[i]));
           },
           .kernel = [](KernelContext& ctx) {
             std::shared_ptr<ir::Graph> body = ctx.node().attr_graph("body");
             if (!body || !ctx.subgraphs) ctx.fail("needs a body and a subgraph runner");
             const int64_t n = static_cast<int64_t>(sequence_arg(ctx, 0).items().size());
             for (int i = 1; i < ctx.num_inputs(); ++i)
               if (ctx.input(i).is_sequence() && static_cast<int64_t>(ctx.input(i).items().size()) != n)
                 ctx.fail("sequence inputs differ in length");
             std::vector<std::vector<Tensor>> results(ctx.num_outputs());
             for (int64_t k = 0; k < n; ++k) {
               std::vector<Tensor> args;
               for (int i = 0; i < ctx.num_inputs(); ++i)
                 args.push_back(ctx.input(i).is_sequence() ? ctx.input(i).items()[k] : ctx.input(i));
               std::vector<Tensor> outs = (*ctx.subgraphs)(*body, args);
               if (static_cast<int>(outs.size()) != ctx.num_outputs()) ctx.fail("body gave the wrong number of outputs");
               for (int i = 0; i < ctx.num_outputs(); ++i) results[i].push_back(outs[i]);
             }
             for (int i = 0; i < ctx.num_outputs(); ++i) {
               DType dt = body->outputs()[i]->type.dtype;
               if (!results[i].empty()) dt = results[i][0].dtype();
               ctx.set_output(i, Tensor::sequence(dt, std::move(results[i])));
             }
           }});
}

}  // namespace kiln::ops
