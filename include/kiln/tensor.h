// A dense tensor: dtype, dims and a shared, 64-byte aligned buffer. Copies share the buffer
// (a handle, like a shared_ptr); clone() makes a deep copy. String tensors keep their
// elements in a std::string array.
//
// The same handle also carries ONNX's non-tensor values, so every stage passes one type:
// a Sequence (a list of tensors, dtype = element type) and None (an empty Optional). An
// Optional that holds a value is just that value.
#pragma once
#include <kiln/dtype.h>

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace kiln {

enum class ValueKind : uint8_t { Tensor, Sequence, None };

class Tensor {
 public:
  Tensor() = default;
  // Allocates a zero-filled tensor. Throws kiln::Error on negative dims, a size that overflows
  // int64, or one over the calling thread's memory cap (kiln/limits.h).
  Tensor(DType dtype, std::vector<int64_t> dims);

  // A tensor over data the caller owns (no copy); the caller keeps it alive.
  static Tensor wrap(DType dtype, std::vector<int64_t> dims, void* data);
  // A tensor over data that `owner` keeps alive (no copy), e.g. a weight inside a file's bytes.
  // `data` must be 64-byte aligned, like every buffer kiln allocates; not for String tensors.
  static Tensor view(DType dtype, std::vector<int64_t> dims, std::shared_ptr<void> owner, void* data);

  template <typename T>
  static Tensor from_vector(std::vector<int64_t> dims, const std::vector<T>& values);
  template <typename T>
  static Tensor scalar(T value) { return from_vector<T>({}, {value}); }

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t dim(int i) const { return dims_[i]; }
  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }
  bool defined() const { return dtype_ != DType::Undefined || kind_ != ValueKind::Tensor; }

  // Sequences and empty optionals. `elem` is the element dtype (Undefined when unknown);
  // `inner` says what an empty optional would have held.
  static Tensor sequence(DType elem, std::vector<Tensor> items);
  static Tensor none(DType elem, ValueKind inner = ValueKind::Tensor);
  ValueKind kind() const { return kind_; }
  bool is_sequence() const { return kind_ == ValueKind::Sequence; }
  bool is_none() const { return kind_ == ValueKind::None; }
  ValueKind none_inner() const { return inner_; }
  // Items of a sequence (throws kiln::Error for other kinds).
  const std::vector<Tensor>& items() const;

  void* raw() { return data_; }
  const void* raw() const { return data_; }
  // Typed access; throws kiln::Error when T does not match the dtype. The narrow types
  // (dtype_is_narrow) are read and written as their stored bytes, uint8_t.
  template <typename T>
  T* data();
  template <typename T>
  const T* data() const;

  // Same buffer seen with other dims (numel must match).
  Tensor reshaped(std::vector<int64_t> dims) const;
  Tensor clone() const;
  // Element i converted to double / int64 (any numeric dtype); for tests and small shape math.
  double as_double(int64_t i) const;
  int64_t as_int64(int64_t i) const;
  // All elements as int64 (integer tensors), e.g. a shape or axes input.
  std::vector<int64_t> to_int64_vector() const;

  std::string describe() const;  // "float[1,3,224,224]"

 private:
  DType dtype_ = DType::Undefined;
  std::vector<int64_t> dims_;
  int64_t numel_ = 0;
  ValueKind kind_ = ValueKind::Tensor;
  ValueKind inner_ = ValueKind::Tensor;
  std::shared_ptr<std::vector<Tensor>> items_;
  std::shared_ptr<void> owner_;
  void* data_ = nullptr;
};

// The C++ type of a dtype, and back.
template <typename T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::Float; };
template <> struct dtype_of<double> { static constexpr DType value = DType::Double; };
template <> struct dtype_of<int8_t> { static constexpr DType value = DType::Int8; };
template <> struct dtype_of<int16_t> { static constexpr DType value = DType::Int16; };
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::Int32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::Int64; };
template <> struct dtype_of<uint8_t> { static constexpr DType value = DType::UInt8; };
template <> struct dtype_of<uint16_t> { static constexpr DType value = DType::UInt16; };
template <> struct dtype_of<uint32_t> { static constexpr DType value = DType::UInt32; };
template <> struct dtype_of<uint64_t> { static constexpr DType value = DType::UInt64; };
template <> struct dtype_of<bool> { static constexpr DType value = DType::Bool; };
template <> struct dtype_of<Float16> { static constexpr DType value = DType::Float16; };
template <> struct dtype_of<BFloat16> { static constexpr DType value = DType::BFloat16; };
template <> struct dtype_of<std::string> { static constexpr DType value = DType::String; };

void throw_dtype_mismatch(DType have, DType want);

template <typename T>
T* Tensor::data() {
  if (dtype_of<T>::value != dtype_ && !(std::is_same_v<T, uint8_t> && dtype_is_narrow(dtype_)))
    throw_dtype_mismatch(dtype_, dtype_of<T>::value);
  return static_cast<T*>(data_);
}
template <typename T>
const T* Tensor::data() const {
  if (dtype_of<T>::value != dtype_ && !(std::is_same_v<T, uint8_t> && dtype_is_narrow(dtype_)))
    throw_dtype_mismatch(dtype_, dtype_of<T>::value);
  return static_cast<const T*>(data_);
}
template <typename T>
Tensor Tensor::from_vector(std::vector<int64_t> dims, const std::vector<T>& values) {
  Tensor t(dtype_of<T>::value, std::move(dims));
  T* p = t.data<T>();
  for (int64_t i = 0; i < t.numel() && i < static_cast<int64_t>(values.size()); ++i) p[i] = values[i];
  return t;
}

}  // namespace kiln
