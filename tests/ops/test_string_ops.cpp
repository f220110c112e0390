#include <kiln/error.h>

#include "op_test_util.h"

namespace kiln::testing {

namespace {
using ir::Attribute;

Attribute strings(std::vector<std::string> v) {
  Attribute a;
  a.kind = Attribute::Kind::Strings;
  a.strings = std::move(v);
  return a;
}

Tensor str_tensor(std::vector<int64_t> dims, std::vector<std::string> v) { return Tensor::from_vector<std::string>(dims, v); }
}  // namespace

TEST(StringNormalizer, StopwordsAndCase) {
  Tensor x = str_tensor({4}, {"monday", "Tuesday", "MONDAY", "wednesday"});
  // Case-sensitive: only the exact "monday" is a stopword.
  auto out = run_op({.op = "StringNormalizer", .inputs = {x},
                     .attrs = {{"is_case_sensitive", Attribute::of_int(1)}, {"stopwords", strings({"monday"})},
                               {"case_change_action", Attribute::of_string("UPPER")}}});
  expect_near(out[0], str_tensor({3}, {"TUESDAY", "MONDAY", "WEDNESDAY"}));
  // Case-insensitive (default): both mondays go, even with a mixed-case stopword.
  out = run_op({.op = "StringNormalizer", .inputs = {x},
                .attrs = {{"stopwords", strings({"MonDay"})}, {"case_change_action", Attribute::of_string("LOWER")}}});
  expect_near(out[0], str_tensor({2}, {"tuesday", "wednesday"}));
  // No change, no stopwords: identity; non-ASCII bytes pass through untouched.
  Tensor u = str_tensor({2}, {"Caf\xC3\xA9", "na\xC3\xAFve"});
  expect_near(run_op({.op = "StringNormalizer", .inputs = {u}})[0], u);
  expect_near(run_op({.op = "StringNormalizer", .inputs = {u}, .attrs = {{"case_change_action", Attribute::of_string("UPPER")},
                                                                         {"locale", Attribute::of_string("en_US")}}})[0],
              str_tensor({2}, {"CAF\xC3\xA9", "NA\xC3\xAFVE"}));
}

TEST(StringNormalizer, TwoDimAndEmptyResult) {
  Tensor x = str_tensor({1, 3}, {"a", "B", "a"});
  auto out = run_op({.op = "StringNormalizer", .inputs = {x}, .attrs = {{"stopwords", strings({"b"})}}});
  expect_near(out[0], str_tensor({1, 2}, {"a", "a"}));
  out = run_op({.op = "StringNormalizer", .inputs = {x}, .attrs = {{"stopwords", strings({"a", "b"})}}});
  expect_near(out[0], str_tensor({1, 1}, {""}));
  out = run_op({.op = "StringNormalizer", .inputs = {str_tensor({2}, {"x", "X"})}, .attrs = {{"stopwords", strings({"x"})}}});
  expect_near(out[0], str_tensor({1}, {""}));
}

TEST(StringNormalizer, InferenceAndErrors) {
  auto t = infer_op("StringNormalizer", {T(DType::String, {S("n")})});
  EXPECT_EQ(t[0].rank(), 1);
  t = infer_op("StringNormalizer", {T(DType::String, {1, 5})});
  EXPECT_EQ(t[0].rank(), 2);
  EXPECT_EQ(t[0].dims[0].value, 1);
  EXPECT_THROW(infer_op("StringNormalizer", {T(DType::String, {2, 5})}), kiln::Error);
  EXPECT_THROW(infer_op("StringNormalizer", {T(DType::Int64, {5})}), kiln::Error);
  EXPECT_THROW(infer_op("StringNormalizer", {T(DType::String, {5})}, {{"case_change_action", Attribute::of_string("TITLE")}}),
               kiln::Error);
  EXPECT_THROW(infer_op("StringNormalizer", {T(DType::String, {5})}, {{"locale", Attribute::of_string("tr_TR")}}), kiln::Error);
  EXPECT_THROW(run_op({.op = "StringNormalizer", .inputs = {str_tensor({1, 1, 1}, {"a"})}}), kiln::Error);
}

namespace {
// The ONNX example pool: unigrams 2 3 5 4 (indexes 0..3), bigrams (5,6) (7,8) (6,7) (4..6).
ir::Attributes tfidf_attrs(int64_t min_n, int64_t max_n, int64_t skip, const std::string& mode = "TF") {
  return {{"min_gram_length", Attribute::of_int(min_n)},
          {"max_gram_length", Attribute::of_int(max_n)},
          {"max_skip_count", Attribute::of_int(skip)},
          {"mode", Attribute::of_string(mode)},
          {"ngram_counts", Attribute::of_ints({0, 4})},
          {"ngram_indexes", Attribute::of_ints({0, 1, 2, 3, 4, 5, 6})},
          {"pool_int64s", Attribute::of_ints({2, 3, 5, 4, 5, 6, 7, 8, 6, 7})}};
}
}  // namespace

TEST(TfIdfVectorizer, OnnxExamples) {
  Tensor x = Tensor::from_vector<int32_t>({12}, {1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8});
  expect_near(run_op({.op = "TfIdfVectorizer", .inputs = {x}, .attrs = tfidf_attrs(2, 2, 0), .opset = 9})[0],
              Tensor::from_vector<float>({7}, {0, 0, 0, 0, 1, 1, 1}));
  expect_near(run_op({.op = "TfIdfVectorizer", .inputs = {x}, .attrs = tfidf_attrs(1, 2, 5)})[0],
              Tensor::from_vector<float>({7}, {0, 3, 1, 0, 1, 3, 1}));
  Tensor b = Tensor::from_vector<int64_t>({2, 6}, {1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8});
  expect_near(run_op({.op = "TfIdfVectorizer", .inputs = {b}, .attrs = tfidf_attrs(1, 2, 5)})[0],
              Tensor::from_vector<float>({2, 7}, {0, 3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 1}));
}

TEST(TfIdfVectorizer, IdfTfidfWeightsAndStrings) {
  Tensor x = Tensor::from_vector<int64_t>({5}, {2, 2, 3, 5, 6});
  ir::Attributes a = tfidf_attrs(1, 2, 0, "IDF");
  a["weights"] = Attribute::of_floats({0.5f, 2, 3, 4, 5, 6, 7});
  // Counts: 2 -> 2, 3 -> 1, 5 -> 1, bigram (5,6) -> 1.
  expect_near(run_op({.op = "TfIdfVectorizer", .inputs = {x}, .attrs = a})[0],
              Tensor::from_vector<float>({7}, {0.5f, 2, 3, 0, 5, 0, 0}));
  a["mode"] = Attribute::of_string("TFIDF");
  expect_near(run_op({.op = "TfIdfVectorizer", .inputs = {x}, .attrs = a})[0],
              Tensor::from_vector<float>({7}, {1, 2, 3, 0, 5, 0, 0}));
  // String pool, output columns permuted by ngram_indexes.
  ir::Attributes s = {{"min_gram_length", Attribute::of_int(1)},
                      {"max_gram_length", Attribute::of_int(2)},
                      {"mode", Attribute::of_string("TF")},
                      {"ngram_counts", Attribute::of_ints({0, 2})},
                      {"ngram_indexes", Attribute::of_ints({2, 0, 1})},
                      {"pool_strings", strings({"a", "b", "a", "b"})}};
  Tensor xs = Tensor::from_vector<std::string>({5}, {"a", "b", "a", "b", "c"});
  expect_near(run_op({.op = "TfIdfVectorizer", .inputs = {xs}, .attrs = s})[0], Tensor::from_vector<float>({3}, {2, 2, 2}));
  Tensor xs2 = Tensor::from_vector<std::string>({3}, {"a", "a", "b"});
  expect_near(run_op({.op = "TfIdfVectorizer", .inputs = {xs2}, .attrs = s})[0], Tensor::from_vector<float>({3}, {1, 1, 2}));
}

TEST(TfIdfVectorizer, InferenceAndErrors) {
  auto t = infer_op("TfIdfVectorizer", {T(DType::Int32, {S("n"), 6})}, tfidf_attrs(2, 2, 0));
  EXPECT_EQ(t[0].str(), "float[n,7]");
  t = infer_op("TfIdfVectorizer", {T(DType::Int64, {S("c")})}, tfidf_attrs(2, 2, 0));
  EXPECT_EQ(t[0].str(), "float[7]");
  EXPECT_THROW(infer_op("TfIdfVectorizer", {T(DType::String, {6})}, tfidf_attrs(2, 2, 0)), kiln::Error);
  EXPECT_THROW(infer_op("TfIdfVectorizer", {T(DType::Int64, {1, 2, 6})}, tfidf_attrs(2, 2, 0)), kiln::Error);
  EXPECT_THROW(infer_op("TfIdfVectorizer", {T(DType::Int64, {6})}, tfidf_attrs(2, 1, 0)), kiln::Error);
  ir::Attributes bad = tfidf_attrs(1, 2, 0);
  bad["ngram_indexes"] = Attribute::of_ints({0, 1, 2});
  EXPECT_THROW(infer_op("TfIdfVectorizer", {T(DType::Int64, {6})}, bad), kiln::Error);
  bad = tfidf_attrs(1, 2, 0);
  bad["pool_int64s"] = Attribute::of_ints({2, 3, 5, 4, 5, 6, 7, 8, 6});  // 5 elements of bigrams
  EXPECT_THROW(infer_op("TfIdfVectorizer", {T(DType::Int64, {6})}, bad), kiln::Error);
  bad = tfidf_attrs(1, 2, 0, "BM25");
  EXPECT_THROW(infer_op("TfIdfVectorizer", {T(DType::Int64, {6})}, bad), kiln::Error);
}

}  // namespace kiln::testing

namespace kiln::testing {

namespace {
Tensor strings(std::vector<int64_t> dims, std::vector<std::string> v) {
  Tensor t(DType::String, std::move(dims));
  for (size_t i = 0; i < v.size(); ++i) t.data<std::string>()[i] = v[i];
  return t;
}
std::vector<std::string> values(const Tensor& t) {
  return std::vector<std::string>(t.data<std::string>(), t.data<std::string>() + t.numel());
}
}  // namespace

TEST(StringConcat, Broadcasting) {
  auto out = run_op({.op = "StringConcat", .inputs = {strings({2, 1}, {"a", "bc"}), strings({3}, {"x", "", "é"})}, .opset = 20});
  EXPECT_EQ(out[0].dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values(out[0]), (std::vector<std::string>{"ax", "a", "aé", "bcx", "bc", "bcé"}));
}

// Python's str.split: a delimiter keeps empty pieces; whitespace splitting drops them; maxsplit
// leaves the rest whole. The output pads every element's pieces to the most any has.
TEST(StringSplit, DelimiterWhitespaceAndMaxsplit) {
  Tensor x = strings({3}, {"a,,b", "", "c"});
  auto out = run_op({.op = "StringSplit", .inputs = {x}, .attrs = {{"delimiter", ir::Attribute::of_string(",")}},
                     .num_outputs = 2, .opset = 20});
  EXPECT_EQ(out[0].dims(), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(values(out[0]), (std::vector<std::string>{"a", "", "b", "", "", "", "c", "", ""}));
  expect_near(out[1], Tensor::from_vector<int64_t>({3}, {3, 1, 1}));
  out = run_op({.op = "StringSplit", .inputs = {strings({2}, {"  a b  c  ", " "})},
                .attrs = {{"maxsplit", ir::Attribute::of_int(1)}}, .num_outputs = 2, .opset = 20});
  EXPECT_EQ(values(out[0]), (std::vector<std::string>{"a", "b  c  ", "", ""}));
  expect_near(out[1], Tensor::from_vector<int64_t>({2}, {2, 0}));
}

}  // namespace kiln::testing

namespace kiln::testing {

namespace {
Tensor text(std::vector<int64_t> dims, std::vector<std::string> v) { return Tensor::from_vector<std::string>(dims, v); }
ir::Attributes pattern(const std::string& p) { return {{"pattern", ir::Attribute::of_string(p)}}; }
}  // namespace

// The whole string must match (RE2 syntax); '.' is one UTF-8 character, not one byte.
TEST(RegexFullMatch, WholeStringsUtf8AndShapes) {
  auto out = run_op({.op = "RegexFullMatch", .inputs = {text({2, 2}, {"www.bbc.com", "www.bbc.com.au", "xwww.a.com", "café"})},
                     .attrs = pattern(R"(www\.[\w.-]+\.com|caf.)"), .opset = 20});
  expect_near(out[0], Tensor::from_vector<bool>({2, 2}, {true, false, false, true}));
  out = run_op({.op = "RegexFullMatch", .inputs = {text({3}, {"", "a", "aa"})}, .attrs = pattern("a?"), .opset = 20});
  expect_near(out[0], Tensor::from_vector<bool>({3}, {true, true, false}));
  out = run_op({.op = "RegexFullMatch", .inputs = {text({2, 0}, {})}, .attrs = pattern("x"), .opset = 20});
  expect_near(out[0], Tensor::from_vector<bool>({2, 0}, {}));
}

TEST(RegexFullMatch, InferenceAndErrors) {
  auto t = infer_op("RegexFullMatch", {T(DType::String, {S("n"), 3})}, pattern("a+"), 1, 20);
  EXPECT_EQ(t[0].str(), "bool[n,3]");
  try {
    infer_op("RegexFullMatch", {T(DType::String, {3})}, pattern("(a"), 1, 20);
    ADD_FAILURE() << "an unbalanced pattern was accepted";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("invalid pattern '(a'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("RegexFullMatch"), std::string::npos) << e.what();
  }
  EXPECT_THROW(run_op({.op = "RegexFullMatch", .inputs = {text({1}, {"a"})}, .attrs = pattern("a{2,1}"), .opset = 20}),
               kiln::Error);
  EXPECT_THROW(infer_op("RegexFullMatch", {T(DType::String, {3})}, {}, 1, 20), kiln::Error);
  EXPECT_THROW(infer_op("RegexFullMatch", {T(DType::Int64, {3})}, pattern("a"), 1, 20), kiln::Error);
}

}  // namespace kiln::testing
