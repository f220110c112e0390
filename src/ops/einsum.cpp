// Einsum (opset 12): Einstein summation over numpy-style equations, "ij,jk->ik".
//
// Every subscript letter becomes a label; an ellipsis stands for the dims not named by letters
// and is broadcast across inputs (right-aligned, numpy rules), its dims getting labels of their
// own. A label repeated within one term reads that term's diagonal (its axes' strides add up).
// Without "->" the output is the ellipsis dims followed by the letters used exactly once, in
// alphabetical order. Labels absent from the output are summed over.
#include <algorithm>
#include <array>
#include <type_traits>

#include "ops/core/dispatch.h"
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

namespace {

constexpr int kLetters = 52;  // a-z, A-Z; ellipsis dims get labels from kLetters up

int letter_label(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  return -1;
}

// One term of the equation: its letters' labels, with -1 where the ellipsis goes.
struct Term {
  std::vector<int> labels;
  bool has_ellipsis = false;
  int num_letters() const { return static_cast<int>(labels.size()) - (has_ellipsis ? 1 : 0); }
};

template <typename Ctx>
Term parse_term(const Ctx& ctx, const std::string& s) {
  Term t;
  for (size_t i = 0; i < s.size();) {
    if (s.compare(i, 3, "...") == 0) {
      if (t.has_ellipsis) ctx.fail("a term of the equation has more than one ellipsis: '" + s + "'");
      t.has_ellipsis = true;
      t.labels.push_back(-1);
      i += 3;
      continue;
    }
    const int l = letter_label(s[i]);
    if (l < 0) ctx.fail(std::string("unexpected character '") + s[i] + "' in einsum term '" + s + "'");
    t.labels.push_back(l);
    ++i;
  }
  return t;
}

// The equation resolved against the inputs' ranks: per input, the label of each axis; the
// output's labels; how many ellipsis dims there are. rank -1 = unknown.
struct Plan {
  std::vector<std::vector<int>> in_labels;  // empty + unknown_rank[i] when the rank is unknown
  std::vector<bool> unknown_rank;
  std::vector<int> out_labels;
  int ellipsis_rank = 0;
  bool ellipsis_rank_known = true;
  int num_labels = kLetters;
};

template <typename Ctx>
Plan make_plan(const Ctx& ctx, const std::vector<int>& ranks) {
  std::string eq;
  for (char c : ctx.node().attr_string("equation", ""))
    if (c != ' ' && c != '\t' && c != '\n') eq += c;
  if (eq.empty() && !ctx.node().has_attr("equation")) ctx.fail("equation attribute is required");
  std::string lhs = eq, rhs;
  const size_t arrow = eq.find("->");
  const bool explicit_out = arrow != std::string::npos;
  if (explicit_out) {
    lhs = eq.substr(0, arrow);
    rhs = eq.substr(arrow + 2);
  }
  std::vector<Term> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(parse_term(ctx, lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != ranks.size())
    ctx.fail("equation '" + eq + "' has " + std::to_string(terms.size()) + " input terms but the node has " +
             std::to_string(ranks.size()) + " inputs");

  Plan p;
  p.in_labels.resize(terms.size());
  p.unknown_rank.assign(terms.size(), false);
  for (size_t i = 0; i < terms.size(); ++i) {
    const Term& t = terms[i];
    if (ranks[i] < 0) {
      p.unknown_rank[i] = true;
      if (t.has_ellipsis) p.ellipsis_rank_known = false;
      continue;
    }
    const int e = ranks[i] - t.num_letters();
    if (e < 0 || (!t.has_ellipsis && e != 0))
      ctx.fail("input " + std::to_string(i) + " has rank " + std::to_string(ranks[i]) + " but its term names " +
               std::to_string(t.num_letters()) + " axes" + (t.has_ellipsis ? " plus an ellipsis" : ""));
    if (t.has_ellipsis) p.ellipsis_rank = std::max(p.ellipsis_rank, e);
  }
  // Ellipsis dims are right-aligned: an input with e of them takes the last e ellipsis labels.
  for (size_t i = 0; i < terms.size(); ++i) {
    if (p.unknown_rank[i]) continue;
    const int e = ranks[i] - terms[i].num_letters();
    for (int l : terms[i].labels) {
      if (l >= 0) p.in_labels[i].push_back(l);
      else
        for (int k = 0; k < e; ++k) p.in_labels[i].push_back(kLetters + p.ellipsis_rank - e + k);
    }
  }
  p.num_labels = kLetters + p.ellipsis_rank;

  std::array<int, kLetters> count{};
  for (const Term& t : terms)
    for (int l : t.labels)
      if (l >= 0) ++count[l];
  auto push_ellipsis = [&] {
    for (int k = 0; k < p.ellipsis_rank; ++k) p.out_labels.push_back(kLetters + k);
  };
  if (explicit_out) {
    const Term out = parse_term(ctx, rhs);
    std::array<bool, kLetters> seen{};
    for (int l : out.labels) {
      if (l < 0) {
        push_ellipsis();
        continue;
      }
      if (count[l] == 0) ctx.fail("output label '" + rhs + "' names a letter no input uses");
      if (seen[l]) ctx.fail("output term '" + rhs + "' repeats a letter");
      seen[l] = true;
      p.out_labels.push_back(l);
    }
    if (!out.has_ellipsis && !p.ellipsis_rank_known) p.ellipsis_rank_known = true;  // summed away
  } else {
    push_ellipsis();
    // Label order a..z then A..Z differs from ASCII order; the implicit output sorts by ASCII.
    for (int l = 26; l < kLetters; ++l)
      if (count[l] == 1) p.out_labels.push_back(l);
    for (int l = 0; l < 26; ++l)
      if (count[l] == 1) p.out_labels.push_back(l);
  }
  return p;
}

void infer_einsum(InferContext& ctx) {
  const int n = ctx.num_inputs();
  if (n < 1) ctx.fail("Einsum needs at least one input");
  std::vector<int> ranks(n);
  DType dtype = DType::Undefined;
  for (int i = 0; i < n; ++i) {
    const ir::TensorType& t = ctx.input(i);
    ranks[i] = t.rank_known ? t.rank() : -1;
    if (t.dtype == DType::Undefined) continue;
    if (!dtype_is_float(t.dtype) && !dtype_is_integer(t.dtype)) ctx.fail("inputs must be numeric, got " + t.str());
    if (dtype != DType::Undefined && t.dtype != dtype) ctx.fail("inputs must share one dtype, got " + t.str());
    dtype = t.dtype;
  }
  const Plan p = make_plan(ctx, ranks);
  const bool out_has_ellipsis = std::any_of(p.out_labels.begin(), p.out_labels.end(), [](int l) { return l >= kLetters; });
  if (!p.ellipsis_rank_known && (out_has_ellipsis || p.ellipsis_rank == 0)) {
    // An input of unknown rank may widen the ellipsis, so the output rank is unknown.
    ctx.set_output(0, ir::TensorType::unranked(dtype));
    return;
  }
  // Letter extents: a static extent > 1 wins over 1 and over symbols; two different static
  // extents > 1 are an error.
  std::vector<ir::Dim> label_dim(p.num_labels, ir::Dim::unknown());
  std::vector<ir::TensorType> ell_types;
  for (int i = 0; i < n; ++i) {
    if (p.unknown_rank[i]) continue;
    const ir::TensorType& t = ctx.input(i);
    std::vector<ir::Dim> ell;
    for (size_t a = 0; a < p.in_labels[i].size(); ++a) {
      const int l = p.in_labels[i][a];
      const ir::Dim& d = t.dims[a];
      if (l >= kLetters) {
        ell.push_back(d);
        continue;
      }
      ir::Dim& cur = label_dim[l];
      if (d.is_static() && cur.is_static() && d.value != cur.value && d.value != 1 && cur.value != 1)
        ctx.fail("label '" + std::string(1, static_cast<char>(l < 26 ? 'a' + l : 'A' + l - 26)) + "' has extents " +
                 cur.str() + " and " + d.str());
      const bool cur_unset = !cur.is_static() && !cur.is_symbolic();
      if (cur_unset || (d.is_static() && d.value != 1) || (cur.is_static() && cur.value == 1 && d.is_symbolic()))
        cur = d;
    }
    ell_types.push_back(ir::TensorType(dtype, ell));
  }
  if (p.ellipsis_rank > 0) {
    const ir::TensorType b = broadcast_types(ctx, ell_types, dtype);
    for (int k = 0; k < p.ellipsis_rank; ++k)
      label_dim[kLetters + k] = b.rank_known ? b.dims[k] : ctx.fresh_dim();
  }
  std::vector<ir::Dim> out;
  for (int l : p.out_labels) {
    const ir::Dim& d = label_dim[l];
    out.push_back(d.is_static() || d.is_symbolic() ? d : ctx.fresh_dim());
  }
  ctx.set_output(0, dtype, out);
}

// Advances a mixed-radix counter over `ext`, moving `off` (one offset per input) by each
// label's strides; returns false after the last position.
bool step(std::vector<int64_t>& idx, const std::vector<int64_t>& ext, const std::vector<std::vector<int64_t>>& strides,
          std::vector<int64_t>& off) {
  for (size_t d = idx.size(); d-- > 0;) {
    ++idx[d];
    for (size_t j = 0; j < off.size(); ++j) off[j] += strides[j][d];
    if (idx[d] < ext[d]) return true;
    for (size_t j = 0; j < off.size(); ++j) off[j] -= strides[j][d] * ext[d];
    idx[d] = 0;
  }
  return false;
}

void einsum_kernel(KernelContext& ctx) {
  const int n = ctx.num_inputs();
  std::vector<int> ranks(n);
  for (int i = 0; i < n; ++i) {
    ranks[i] = ctx.input(i).rank();
    if (ctx.input(i).dtype() != ctx.input(0).dtype())
      ctx.fail("inputs must share one dtype, got " + ctx.input(0).describe() + " and " + ctx.input(i).describe());
  }
  const Plan p = make_plan(ctx, ranks);
  std::vector<int64_t> extent(p.num_labels, -1);
  for (int i = 0; i < n; ++i) {
    const Tensor& t = ctx.input(i);
    for (size_t a = 0; a < p.in_labels[i].size(); ++a) {
      int64_t& e = extent[p.in_labels[i][a]];
      const int64_t d = t.dim(static_cast<int>(a));
      if (e < 0 || e == 1) e = d;
      else if (d != 1 && d != e)
        ctx.fail("einsum label extents disagree: " + std::to_string(e) + " vs " + std::to_string(d) + " (input " +
                 t.describe() + ")");
    }
  }
  // Output labels first, then the summed ones.
  std::vector<bool> in_out(p.num_labels, false);
  for (int l : p.out_labels) in_out[l] = true;
  std::vector<int> sum_labels;
  for (int l = 0; l < p.num_labels; ++l)
    if (extent[l] >= 0 && !in_out[l]) sum_labels.push_back(l);
  std::vector<int64_t> out_dims, sum_ext;
  for (int l : p.out_labels) out_dims.push_back(extent[l]);
  for (int l : sum_labels) sum_ext.push_back(extent[l]);

  // Per input, per label: the sum of the strides of the axes carrying it (0 on broadcast axes).
  std::vector<std::vector<int64_t>> out_strides(n), sum_strides(n);
  for (int i = 0; i < n; ++i) {
    const Tensor& t = ctx.input(i);
    const std::vector<int64_t> st = strides_of(t.dims());
    std::vector<int64_t> per_label(p.num_labels, 0);
    for (size_t a = 0; a < p.in_labels[i].size(); ++a)
      if (t.dim(static_cast<int>(a)) != 1) per_label[p.in_labels[i][a]] += st[a];
    for (int l : p.out_labels) out_strides[i].push_back(per_label[l]);
    for (int l : sum_labels) sum_strides[i].push_back(per_label[l]);
  }

  const DType dtype = ctx.input(0).dtype();
  dispatch_numeric(dtype, [&](auto tag) {
    using T = decltype(tag);
    // Floats accumulate in double: long contractions cancel badly in float.
    using C = std::conditional_t<is_float_v<T>, double, T>;
    std::vector<const T*> in(n);
    for (int i = 0; i < n; ++i) in[i] = ctx.input(i).template data<T>();
    T* yp = ctx.make_output(0, dtype, out_dims).template data<T>();
    const int64_t out_n = product(out_dims), sum_n = product(sum_ext);
    if (out_n == 0) return;
    std::vector<int64_t> oidx(out_dims.size(), 0), ooff(n, 0), sidx(sum_ext.size(), 0), soff(n, 0);
    for (int64_t o = 0; o < out_n; ++o) {
      C acc = C(0);
      if (sum_n > 0) {
        std::fill(sidx.begin(), sidx.end(), 0);
        std::fill(soff.begin(), soff.end(), 0);
        do {
          C prod = C(1);
          for (int i = 0; i < n; ++i) prod = static_cast<C>(prod * static_cast<C>(static_cast<compute_t<T>>(in[i][ooff[i] + soff[i]])));
          acc = static_cast<C>(acc + prod);
        } while (step(sidx, sum_ext, sum_strides, soff));
      }
      yp[o] = static_cast<T>(static_cast<compute_t<T>>(acc));
      step(oidx, out_dims, out_strides, ooff);
    }
  });
}

}  // namespace

KILN_REGISTER_OPS(einsum) {
  reg.add({.name = "Einsum", .since_version = 12, .min_inputs = 1, .max_inputs = -1,
           .pattern = PatternKind::OutEWiseFusable, .infer = infer_einsum, .kernel = einsum_kernel});
}

}  // namespace kiln::ops
