#include "codegen/cpp/code_text.h"

#include "ops/core/shape_util.h"

namespace kiln::codegen::cpp {

std::vector<int64_t> batch_offsets(const std::vector<int64_t>& ob, std::vector<int64_t> b) {
  while (b.size() < ob.size()) b.insert(b.begin(), 1);
  int64_t total = 1;
  for (int64_t d : ob) total *= d;
  std::vector<int64_t> out, idx(ob.size(), 0);
  for (int64_t m = 0; m < total; ++m) {
    int64_t off = 0;
    for (size_t k = 0; k < ob.size(); ++k) off = off * b[k] + (b[k] == 1 ? 0 : idx[k]);
    out.push_back(off);
    ops::next_index(idx, ob);
  }
  return out;
}

}  // namespace kiln::codegen::cpp
