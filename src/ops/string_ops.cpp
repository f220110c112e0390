// Text ops: StringNormalizer (opset 10), TfIdfVectorizer (opset 9), StringConcat, StringSplit
// and RegexFullMatch (opset 20).
//
// Casing is ASCII-only (the C locale): bytes outside A-Z/a-z, including every byte of a
// multi-byte UTF-8 sequence, pass through unchanged, so UTF-8 text stays valid. Only locales
// whose ASCII casing is the C locale's are accepted.
#include <re2/re2.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <type_traits>

#include "ops/core/dispatch.h"
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

namespace {

// ---------------------------------------------------------------- StringNormalizer

std::string ascii_lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

std::string ascii_upper(std::string s) {
  for (char& c : s)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  return s;
}

enum class CaseChange { None, Lower, Upper };

CaseChange case_change_of(const ir::Node& node) {
  const std::string a = node.attr_string("case_change_action", "NONE");
  if (a == "NONE") return CaseChange::None;
  if (a == "LOWER") return CaseChange::Lower;
  if (a == "UPPER") return CaseChange::Upper;
  throw Error(node.describe() + ": case_change_action must be NONE, LOWER or UPPER, got '" + a + "'");
}

void check_locale(const ir::Node& node) {
  const std::string loc = node.attr_string("locale", "");
  // Turkish/Azeri dotted i is the classic case where ASCII casing differs from the C locale.
  const bool ok = loc.empty() || loc == "C" || loc == "POSIX" || loc.rfind("C.", 0) == 0 || loc.rfind("en", 0) == 0;
  if (!ok) throw UnsupportedError(node.describe() + ": locale '" + loc + "' is not supported (only C/en_* casing)");
}

void infer_string_normalizer(InferContext& ctx) {
  case_change_of(ctx.node());
  check_locale(ctx.node());
  const ir::TensorType& x = ctx.input(0);
  if (x.dtype != DType::String) ctx.fail("input must be a string tensor, got " + x.str());
  if (!x.rank_known) return ctx.set_output(0, ir::TensorType::unranked(DType::String));
  if (x.rank() == 1) return ctx.set_output(0, DType::String, {ctx.fresh_dim()});
  if (x.rank() == 2 && !(x.dims[0].is_static() && x.dims[0].value != 1))
    return ctx.set_output(0, DType::String, {ir::Dim(1), ctx.fresh_dim()});
  ctx.fail("input must be [C] or [1, C], got " + x.str());
}

void string_normalizer_kernel(KernelContext& ctx) {
  const ir::Node& node = ctx.node();
  const CaseChange change = case_change_of(node);
  check_locale(node);
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DType::String) ctx.fail("input must be a string tensor, got " + x.describe());
  if (!(x.rank() == 1 || (x.rank() == 2 && x.dim(0) == 1))) ctx.fail("input must be [C] or [1, C], got " + x.describe());
  const bool case_sensitive = node.attr_int("is_case_sensitive", 0) != 0;
  std::vector<std::string> stop = node.attr_strings("stopwords");
  if (!case_sensitive)
    for (std::string& s : stop) s = ascii_lower(s);
  std::sort(stop.begin(), stop.end());
  const std::string* px = x.data<std::string>();
  std::vector<std::string> kept;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const std::string key = case_sensitive ? px[i] : ascii_lower(px[i]);
    if (std::binary_search(stop.begin(), stop.end(), key)) continue;
    kept.push_back(change == CaseChange::Lower ? ascii_lower(px[i]) : change == CaseChange::Upper ? ascii_upper(px[i]) : px[i]);
  }
  // Everything filtered out: the spec's output is a single empty string.
  if (kept.empty()) kept.emplace_back();
  const int64_t n = static_cast<int64_t>(kept.size());
  Tensor& y = ctx.make_output(0, DType::String, x.rank() == 1 ? std::vector<int64_t>{n} : std::vector<int64_t>{1, n});
  std::copy(kept.begin(), kept.end(), y.data<std::string>());
}

// ---------------------------------------------------------------- TfIdfVectorizer

enum class Weighting { TF, IDF, TFIDF };

// The validated attributes: pool n-grams in ordinal order (grouped by length) and where each
// one lands in the output.
struct TfIdfSpec {
  int64_t min_n = 1, max_n = 1, max_skip = 0, out_size = 0;
  Weighting mode = Weighting::TF;
  std::vector<int64_t> indexes;  // n-gram ordinal -> output column
  std::vector<float> out_weight;  // per output column
  bool strings = false;
  std::vector<int64_t> lengths;  // n-gram ordinal -> its length
  std::vector<int64_t> starts;   // n-gram ordinal -> first pool element
};

TfIdfSpec tfidf_spec(const ir::Node& node) {
  auto fail = [&](const std::string& m) -> void { throw Error(node.describe() + ": " + m); };
  TfIdfSpec s;
  s.min_n = node.attr_int("min_gram_length", 1);
  s.max_n = node.attr_int("max_gram_length", 1);
  s.max_skip = node.attr_int("max_skip_count", 0);
  if (s.min_n < 1 || s.max_n < s.min_n) fail("need 1 <= min_gram_length <= max_gram_length");
  if (s.max_skip < 0) fail("max_skip_count must be >= 0");
  const std::string mode = node.attr_string("mode", "TF");
  if (mode == "TF") s.mode = Weighting::TF;
  else if (mode == "IDF") s.mode = Weighting::IDF;
  else if (mode == "TFIDF") s.mode = Weighting::TFIDF;
  else fail("mode must be TF, IDF or TFIDF, got '" + mode + "'");
  const bool has_ints = node.has_attr("pool_int64s"), has_strings = node.has_attr("pool_strings");
  if (has_ints == has_strings) fail("exactly one of pool_int64s and pool_strings must be given");
  s.strings = has_strings;
  const int64_t pool = static_cast<int64_t>(has_strings ? node.attr_strings("pool_strings").size()
                                                        : node.attr_ints("pool_int64s").size());
  const std::vector<int64_t> counts = node.attr_ints("ngram_counts");
  s.indexes = node.attr_ints("ngram_indexes");
  // ngram_counts[i] is where the (i+1)-grams start in the pool; they run to the next start.
  for (size_t i = 0; i < counts.size(); ++i) {
    const int64_t b = counts[i], e = i + 1 < counts.size() ? counts[i + 1] : pool;
    const int64_t n = static_cast<int64_t>(i) + 1;
    if (b < 0 || e < b || e > pool) fail("ngram_counts must be non-decreasing offsets into the pool");
    if ((e - b) % n != 0) fail("the pool's " + std::to_string(n) + "-grams do not fill whole n-grams");
    for (int64_t p = b; p < e; p += n) {
      s.lengths.push_back(n);
      s.starts.push_back(p);
    }
  }
  if (s.lengths.size() != s.indexes.size())
    fail("ngram_indexes has " + std::to_string(s.indexes.size()) + " entries but the pool holds " +
         std::to_string(s.lengths.size()) + " n-grams");
  for (int64_t i : s.indexes) {
    if (i < 0) fail("ngram_indexes must be >= 0");
    s.out_size = std::max(s.out_size, i + 1);
  }
  // weights[j] belongs to n-gram j, so it lands where that n-gram's count does.
  const std::vector<float> w = node.attr_floats("weights");
  if (!w.empty() && w.size() != s.indexes.size())
    fail("weights must have one value per n-gram (" + std::to_string(s.indexes.size()) + ")");
  s.out_weight.assign(static_cast<size_t>(s.out_size), 1.f);
  for (size_t j = 0; j < w.size(); ++j) s.out_weight[s.indexes[j]] = w[j];
  return s;
}

void infer_tfidf(InferContext& ctx) {
  const TfIdfSpec s = tfidf_spec(ctx.node());
  const ir::TensorType& x = ctx.input(0);
  if (s.strings ? x.dtype != DType::String : (x.dtype != DType::Int32 && x.dtype != DType::Int64))
    ctx.fail(std::string("input must be ") + (s.strings ? "string (pool_strings)" : "int32/int64 (pool_int64s)") +
             ", got " + x.str());
  if (!x.rank_known) return ctx.set_output(0, ir::TensorType::unranked(DType::Float));
  if (x.rank() == 1) return ctx.set_output(0, DType::Float, {ir::Dim(s.out_size)});
  if (x.rank() == 2) return ctx.set_output(0, DType::Float, {x.dims[0], ir::Dim(s.out_size)});
  ctx.fail("input must be [C] or [N, C], got " + x.str());
}

template <typename K>
void tfidf_count(const TfIdfSpec& s, const std::vector<K>& pool, const K* x, int64_t rows, int64_t cols, float* y) {
  std::map<std::vector<K>, int64_t> column;  // n-gram -> output column
  for (size_t j = 0; j < s.lengths.size(); ++j)
    column[std::vector<K>(pool.begin() + s.starts[j], pool.begin() + s.starts[j] + s.lengths[j])] = s.indexes[j];
  std::vector<int64_t> counts(static_cast<size_t>(s.out_size));
  std::vector<K> key;
  for (int64_t r = 0; r < rows; ++r) {
    const K* row = x + r * cols;
    std::fill(counts.begin(), counts.end(), 0);
    auto hit = [&]() {
      auto it = column.find(key);
      if (it != column.end()) ++counts[it->second];
    };
    for (int64_t start = 0; start < cols; ++start) {
      // Unigrams do not depend on the skip distance, so each position counts once.
      if (s.min_n == 1) {
        key.assign(1, row[start]);
        hit();
      }
      for (int64_t dist = 1; dist <= s.max_skip + 1; ++dist)
        for (int64_t n = std::max<int64_t>(2, s.min_n); n <= s.max_n; ++n) {
          if (start + (n - 1) * dist >= cols) break;
          key.clear();
          for (int64_t k = 0; k < n; ++k) key.push_back(row[start + k * dist]);
          hit();
        }
    }
    float* out = y + r * s.out_size;
    for (int64_t c = 0; c < s.out_size; ++c) {
      const float f = static_cast<float>(counts[c]);
      out[c] = s.mode == Weighting::TF ? f : s.mode == Weighting::IDF ? (counts[c] > 0 ? s.out_weight[c] : 0.f) : f * s.out_weight[c];
    }
  }
}

void tfidf_kernel(KernelContext& ctx) {
  const TfIdfSpec s = tfidf_spec(ctx.node());
  const Tensor& x = ctx.input(0);
  if (x.rank() != 1 && x.rank() != 2) ctx.fail("input must be [C] or [N, C], got " + x.describe());
  const int64_t rows = x.rank() == 2 ? x.dim(0) : 1, cols = x.dims().back();
  Tensor& y = ctx.make_output(0, DType::Float, x.rank() == 2 ? std::vector<int64_t>{rows, s.out_size} : std::vector<int64_t>{s.out_size});
  if (s.strings) {
    if (x.dtype() != DType::String) ctx.fail("pool_strings needs a string input, got " + x.describe());
    tfidf_count<std::string>(s, ctx.node().attr_strings("pool_strings"), x.data<std::string>(), rows, cols, y.data<float>());
    return;
  }
  if (x.dtype() != DType::Int32 && x.dtype() != DType::Int64)
    ctx.fail("pool_int64s needs an int32/int64 input, got " + x.describe());
  const std::vector<int64_t> xv = x.to_int64_vector();
  tfidf_count<int64_t>(s, ctx.node().attr_ints("pool_int64s"), xv.data(), rows, cols, y.data<float>());
}

// ---------------------------------------------------------------- StringConcat / StringSplit

void infer_string_concat(InferContext& ctx) {
  for (int i : {0, 1})
    if (ctx.input(i).dtype != DType::String) ctx.fail("inputs must be strings, got " + ctx.input(i).str());
  ctx.set_output(0, broadcast_types(ctx, {ctx.input(0), ctx.input(1)}, DType::String));
}

void string_concat_kernel(KernelContext& ctx) {
  const Tensor &a = ctx.input(0), &b = ctx.input(1);
  if (a.dtype() != DType::String || b.dtype() != DType::String) ctx.fail("inputs must be strings");
  const std::vector<int64_t> out = broadcast_dims({a.dims(), b.dims()}, ctx.node());
  Tensor& y = ctx.make_output(0, DType::String, out);
  std::string* py = y.data<std::string>();
  const std::string *pa = a.data<std::string>(), *pb = b.data<std::string>();
  BroadcastWalker(out, {a.dims(), b.dims()}).run([&](int64_t i, const int64_t* off) { py[i] = pa[off[0]] + pb[off[1]]; });
}

// Python's str.split: on `delim` (empty strings between adjacent delimiters kept), or with no
// delimiter on runs of ASCII whitespace (none kept); at most `maxsplit` splits when >= 0.
std::vector<std::string> split_string(const std::string& s, const std::string& delim, int64_t maxsplit) {
  std::vector<std::string> parts;
  if (!delim.empty()) {
    size_t at = 0;
    while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
      const size_t hit = s.find(delim, at);
      if (hit == std::string::npos) break;
      parts.push_back(s.substr(at, hit - at));
      at = hit + delim.size();
    }
    parts.push_back(s.substr(at));
    return parts;
  }
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
  size_t i = 0;
  while (true) {
    while (i < s.size() && space(s[i])) ++i;
    if (i == s.size()) break;
    if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {  // the rest, as it is
      parts.push_back(s.substr(i));
      break;
    }
    const size_t start = i;
    while (i < s.size() && !space(s[i])) ++i;
    parts.push_back(s.substr(start, i - start));
  }
  return parts;
}

void infer_string_split(InferContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  if (x.dtype != DType::String) ctx.fail("input must be strings, got " + x.str());
  if (!x.rank_known) {
    ctx.set_output(0, ir::TensorType::unranked(DType::String));
    if (ctx.has_output(1)) ctx.set_output(1, ir::TensorType::unranked(DType::Int64));
    return;
  }
  std::vector<ir::Dim> dims = x.dims;
  if (ctx.has_output(1)) ctx.set_output(1, DType::Int64, dims);
  dims.push_back(ctx.fresh_dim());  // the most substrings of any element
  ctx.set_output(0, DType::String, dims);
}

void string_split_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DType::String) ctx.fail("input must be strings, got " + x.describe());
  const std::string delim = ctx.node().attr_string("delimiter", "");
  const int64_t maxsplit = ctx.node().attrs.count("maxsplit") ? ctx.node().attr_int("maxsplit", -1) : -1;
  std::vector<std::vector<std::string>> parts(static_cast<size_t>(x.numel()));
  int64_t most = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    parts[i] = split_string(x.data<std::string>()[i], delim, maxsplit);
    most = std::max<int64_t>(most, static_cast<int64_t>(parts[i].size()));
  }
  std::vector<int64_t> dims = x.dims();
  if (ctx.has_output(1)) {
    Tensor& z = ctx.make_output(1, DType::Int64, dims);
    for (int64_t i = 0; i < x.numel(); ++i) z.data<int64_t>()[i] = static_cast<int64_t>(parts[i].size());
  }
  dims.push_back(most);
  Tensor& y = ctx.make_output(0, DType::String, dims);
  for (int64_t i = 0; i < x.numel(); ++i)
    for (size_t j = 0; j < parts[i].size(); ++j) y.data<std::string>()[i * most + static_cast<int64_t>(j)] = parts[i][j];
}

// ---------------------------------------------------------------- RegexFullMatch

// RE2 syntax, as the spec names it (the reference runs Google's re2 too), on UTF-8 text. RE2
// reports a bad pattern through ok() and error(); its own logging to stderr is turned off.
std::unique_ptr<RE2> compile_pattern(const ir::Node& node) {
  if (!node.has_attr("pattern")) throw Error(node.describe() + ": the pattern attribute is required");
  RE2::Options options;
  options.set_log_errors(false);
  auto re = std::make_unique<RE2>(node.attr_string("pattern", ""), options);
  if (!re->ok()) throw Error(node.describe() + ": invalid pattern '" + re->pattern() + "': " + re->error());
  return re;
}

void infer_regex_full_match(InferContext& ctx) {
  compile_pattern(ctx.node());
  const ir::TensorType& x = ctx.input(0);
  if (x.dtype != DType::String) ctx.fail("input must be strings, got " + x.str());
  ctx.set_output(0, x.rank_known ? ir::TensorType(DType::Bool, x.dims) : ir::TensorType::unranked(DType::Bool));
}

void regex_full_match_kernel(KernelContext& ctx) {
  const std::unique_ptr<RE2> re = compile_pattern(ctx.node());
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DType::String) ctx.fail("input must be strings, got " + x.describe());
  Tensor& y = ctx.make_output(0, DType::Bool, x.dims());
  for (int64_t i = 0; i < x.numel(); ++i) y.data<bool>()[i] = RE2::FullMatch(x.data<std::string>()[i], *re);
}

}  // namespace

KILN_REGISTER_OPS(string_ops) {
  reg.add({.name = "StringNormalizer", .since_version = 10, .min_inputs = 1, .max_inputs = 1,
           .pattern = PatternKind::Opaque, .infer = infer_string_normalizer, .kernel = string_normalizer_kernel});
  reg.add({.name = "StringConcat", .since_version = 20, .min_inputs = 2, .max_inputs = 2,
           .pattern = PatternKind::Opaque, .infer = infer_string_concat, .kernel = string_concat_kernel});
  reg.add({.name = "StringSplit", .since_version = 20, .min_inputs = 1, .max_inputs = 1, .min_outputs = 1,
           .max_outputs = 2, .pattern = PatternKind::Opaque, .infer = infer_string_split, .kernel = string_split_kernel});
  reg.add({.name = "TfIdfVectorizer", .since_version = 9, .min_inputs = 1, .max_inputs = 1,
           .pattern = PatternKind::Opaque, .infer = infer_tfidf, .kernel = tfidf_kernel});
  reg.add({.name = "RegexFullMatch", .since_version = 20, .min_inputs = 1, .max_inputs = 1,
           .pattern = PatternKind::Opaque, .infer = infer_regex_full_match, .kernel = regex_full_match_kernel});
}

}  // namespace kiln::ops
