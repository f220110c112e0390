#include "tensor_io.h"

#include <algorithm>
#include <random>
#include <sstream>
#include <vector>

#include "ops/core/dispatch.h"

namespace kiln::cli {

Tensor random_input(const TensorInfo& info, const std::map<std::string, int64_t>& dims, uint32_t seed,
                    int64_t int_bound) {
  if (info.is_sequence || info.is_optional)
    throw Error("input '" + info.name + "' is a " + info.str() + "; pass it with --input");
  if (!info.rank_known) throw Error("input '" + info.name + "' has unknown rank; pass it with --input");
  std::vector<int64_t> shape;
  for (size_t i = 0; i < info.dims.size(); ++i) {
    if (info.dims[i] >= 0) { shape.push_back(info.dims[i]); continue; }
    auto it = dims.find(info.symbols[i]);
    shape.push_back(it == dims.end() ? 1 : it->second);
  }
  Tensor t(info.dtype, shape);
  std::mt19937 rng(seed);
  if (info.dtype == DType::Bool) {
    for (int64_t i = 0; i < t.numel(); ++i) t.data<bool>()[i] = rng() & 1;
  } else if (info.dtype == DType::String) {
    for (int64_t i = 0; i < t.numel(); ++i) t.data<std::string>()[i] = "s" + std::to_string(rng() % 100);
  } else {
    ops::dispatch_numeric(info.dtype, [&](auto tag) {
      using T = decltype(tag);
      T* p = t.data<T>();
      for (int64_t i = 0; i < t.numel(); ++i) {
        if constexpr (ops::is_float_v<T>) {
          p[i] = T(std::uniform_real_distribution<float>(-1.f, 1.f)(rng));
        } else {
          p[i] = static_cast<T>(rng() % static_cast<uint64_t>(std::max<int64_t>(1, int_bound)));
        }
      }
    });
  }
  return t;
}

std::string preview(const Tensor& t, int count) {
  if (t.kind() != ValueKind::Tensor) return t.describe();
  std::ostringstream os;
  os << t.describe() << " = [";
  for (int64_t i = 0; i < t.numel() && i < count; ++i) {
    if (i) os << ", ";
    if (t.dtype() == DType::String) os << '"' << t.data<std::string>()[i] << '"';
    else if (dtype_is_float(t.dtype())) os << t.as_double(i);
    else os << t.as_int64(i);
  }
  if (t.numel() > count) os << ", ...";
  os << "]";
  return os.str();
}

std::string top_k(const Tensor& t, int k) {
  if (t.kind() != ValueKind::Tensor || t.dtype() == DType::String || t.numel() == 0) return "(not a numeric tensor)";
  const int64_t n = t.rank() > 0 ? t.dims().back() : 1;
  std::vector<std::pair<double, int64_t>> v;
  for (int64_t i = 0; i < n; ++i) v.push_back({dtype_is_float(t.dtype()) ? t.as_double(i) : static_cast<double>(t.as_int64(i)), i});
  const size_t m = std::min<size_t>(v.size(), static_cast<size_t>(k));
  std::partial_sort(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(m), v.end(),
                    [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < m; ++i) os << (i ? ", " : "") << v[i].second << ": " << v[i].first;
  os << "]";
  return os.str();
}

}  // namespace kiln::cli
