// Small pieces of generated text and geometry the C++ target's emitters share.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::codegen::cpp {

inline std::string i64(int64_t v) { return std::to_string(v); }

// "{1, 2, 3}": an initializer list.
inline std::string int_list(const std::vector<int64_t>& v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + i64(v[i]);
  return s + "}";
}

// "[1,2,3]": a shape in a comment.
inline std::string dims_str(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + i64(d[i]);
  return s + "]";
}

// Per matrix of the broadcast batch dims `ob`, the index of the matrix an operand with batch dims
// `b` holds for it (right-aligned, dims of 1 broadcast): batched matmuls and attention.
std::vector<int64_t> batch_offsets(const std::vector<int64_t>& ob, std::vector<int64_t> b);

}  // namespace kiln::codegen::cpp
