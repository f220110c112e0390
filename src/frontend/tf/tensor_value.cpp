#include "frontend/tf/tensor_value.h"

#include <kiln/error.h>
#include <kiln/limits.h>

#include <cstring>

#include "frontend/tf/converter.h"

namespace kiln::tf_fe {

std::vector<int64_t> static_dims(const tfpb::TensorShapeProto& s, const std::string& what) {
  if (s.unknown_rank()) throw Error(what + ": the shape has unknown rank");
  std::vector<int64_t> dims;
  for (const auto& d : s.dim()) {
    if (d.size() < 0) throw Error(what + ": the shape has an unknown dimension");
    dims.push_back(d.size());
  }
  return dims;
}

namespace {

// Copies `n` values of a repeated field into t, repeating the last one to fill t.
template <typename T, typename Field>
void fill_from(kiln::Tensor& t, const Field& f, const std::string& what) {
  const int64_t n = f.size();
  if (n > t.numel()) throw Error(what + ": " + std::to_string(n) + " values for " + std::to_string(t.numel()) + " elements");
  T* p = t.data<T>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (n == 0) p[i] = T{};
    else p[i] = static_cast<T>(f.Get(static_cast<int>(i < n ? i : n - 1)));
  }
}

}  // namespace

kiln::Tensor tensor_from_proto(const tfpb::TensorProto& p, const std::string& what) {
  const DType dtype = dtype_from_tf(p.dtype(), what);
  std::vector<int64_t> dims = static_dims(p.tensor_shape(), what);
  int64_t bytes = static_cast<int64_t>(dtype_size(dtype));
  for (int64_t d : dims) {
    if (d > 0 && bytes > (int64_t{1} << 62) / d) throw Error(what + ": the tensor's shape is absurdly large");
    bytes *= d;
  }
  check_memory_cap(bytes, what);
  kiln::Tensor t(dtype, dims);
  if (!p.tensor_content().empty()) {
    if (dtype == DType::String) throw UnsupportedError(what + ": string tensor_content is not supported");
    if (p.tensor_content().size() != t.nbytes())
      throw Error(what + ": tensor_content has " + std::to_string(p.tensor_content().size()) + " bytes, the " +
                  t.describe() + " needs " + std::to_string(t.nbytes()));
    std::memcpy(t.raw(), p.tensor_content().data(), t.nbytes());
    return t;
  }
  switch (dtype) {
    case DType::Float: fill_from<float>(t, p.float_val(), what); break;
    case DType::Double: fill_from<double>(t, p.double_val(), what); break;
    case DType::Int32: fill_from<int32_t>(t, p.int_val(), what); break;
    case DType::Int16: fill_from<int16_t>(t, p.int_val(), what); break;
    case DType::Int8: fill_from<int8_t>(t, p.int_val(), what); break;
    case DType::UInt8: fill_from<uint8_t>(t, p.int_val(), what); break;
    case DType::UInt16: fill_from<uint16_t>(t, p.int_val(), what); break;
    case DType::Int64: fill_from<int64_t>(t, p.int64_val(), what); break;
    case DType::UInt32: fill_from<uint32_t>(t, p.uint32_val(), what); break;
    case DType::UInt64: fill_from<uint64_t>(t, p.uint64_val(), what); break;
    case DType::Bool: fill_from<bool>(t, p.bool_val(), what); break;
    case DType::Float16:
    case DType::BFloat16: {  // half_val holds the 16 bits
      const auto& f = p.half_val();
      if (f.size() > t.numel()) throw Error(what + ": too many half_val values");
      uint16_t* q = static_cast<uint16_t*>(t.raw());
      for (int64_t i = 0; i < t.numel(); ++i)
        q[i] = f.empty() ? 0 : static_cast<uint16_t>(f.Get(static_cast<int>(i < f.size() ? i : f.size() - 1)));
      break;
    }
    case DType::String: {
      const auto& f = p.string_val();
      if (f.size() > t.numel()) throw Error(what + ": too many string_val values");
      std::string* q = t.data<std::string>();
      for (int64_t i = 0; i < t.numel(); ++i)
        q[i] = f.empty() ? std::string() : f.Get(static_cast<int>(i < f.size() ? i : f.size() - 1));
      break;
    }
    default: throw UnsupportedError(what + ": values of type " + std::string(dtype_name(dtype)) + " are not supported");
  }
  return t;
}

void set_tensor_content(tfpb::TensorProto& p, const kiln::Tensor& t) {
  p.set_tensor_content(std::string(static_cast<const char*>(t.raw()), t.nbytes()));
}

}  // namespace kiln::tf_fe
