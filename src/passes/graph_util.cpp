#include "passes/graph_util.h"

#include <kiln/error.h>

#include <algorithm>

namespace kiln::passes {

std::vector<float> to_floats(const Tensor& t) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) out[i] = static_cast<float>(t.as_double(i));
  return out;
}

Tensor floats_like(const Tensor& like, const std::vector<float>& v, std::vector<int64_t> dims) {
  Tensor t(like.dtype(), std::move(dims));
  switch (like.dtype()) {
    case DType::Float: std::copy(v.begin(), v.end(), t.data<float>()); break;
    case DType::Double: std::copy(v.begin(), v.end(), t.data<double>()); break;
    case DType::Float16:
      for (size_t i = 0; i < v.size(); ++i) t.data<Float16>()[i] = Float16(v[i]);
      break;
    case DType::BFloat16:
      for (size_t i = 0; i < v.size(); ++i) t.data<BFloat16>()[i] = BFloat16(v[i]);
      break;
    default: throw Error("floats_like: not a float dtype: " + dtype_name(like.dtype()));
  }
  return t;
}

}  // namespace kiln::passes
