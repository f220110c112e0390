#include <kiln/error.h>
#include <kiln/limits.h>
#include <kiln/tensor.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <sstream>

#include "ir/zeroed_memory.h"
#include "ir/dispatch.h"
#include "ir/narrow_types.h"

namespace kiln {

int64_t default_memory_cap_bytes() {
  static const int64_t cap = [] {
    constexpr int64_t k16GiB = int64_t{16} << 30;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) return k16GiB;
    return std::min(k16GiB, static_cast<int64_t>(pages) * static_cast<int64_t>(page));
  }();
  return cap;
}

namespace {
thread_local const Limits* tls_limits = nullptr;
}  // namespace

const Limits& current_limits() {
  static const Limits defaults;
  return tls_limits ? *tls_limits : defaults;
}

LimitsScope::LimitsScope(const Limits& limits) : mine_(limits), saved_(tls_limits) { tls_limits = &mine_; }
LimitsScope::~LimitsScope() { tls_limits = saved_; }

void check_memory_cap(int64_t bytes, const std::string& what) {
  const int64_t cap = current_limits().memory_cap_bytes;
  if (bytes > cap)
    throw Error(what + " needs " + std::to_string(bytes) + " bytes, more than the memory cap of " +
                std::to_string(cap) + " bytes");
}

namespace {
int64_t checked_numel(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) throw Error("negative dimension " + std::to_string(d) + " in tensor shape");
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      throw Error("tensor shape overflows int64");
    n *= d;
  }
  return n;
}
}  // namespace

void throw_dtype_mismatch(DType have, DType want) {
  throw Error("tensor dtype is " + dtype_name(have) + ", accessed as " + dtype_name(want));
}

Tensor::Tensor(DType dtype, std::vector<int64_t> dims)
    : dtype_(dtype), dims_(std::move(dims)), numel_(checked_numel(dims_)) {
  if (dtype == DType::Undefined) throw Error("tensor of undefined dtype");
  const size_t esz = dtype_size(dtype);
  if (numel_ > std::numeric_limits<int64_t>::max() / static_cast<int64_t>(esz))
    throw Error("tensor " + describe() + " overflows int64 in bytes");
  // The description only for the error: a run allocates its outputs here every time.
  if (numel_ * static_cast<int64_t>(esz) > current_limits().memory_cap_bytes)
    check_memory_cap(numel_ * static_cast<int64_t>(esz), "tensor " + describe());
  if (dtype == DType::String) {
    auto* p = new std::string[static_cast<size_t>(numel_ ? numel_ : 1)];
    owner_ = std::shared_ptr<void>(p, [](void* q) { delete[] static_cast<std::string*>(q); });
    data_ = p;
    return;
  }
  owner_ = allocate_zeroed(static_cast<size_t>(numel_) * esz);
  data_ = owner_.get();
}

Tensor Tensor::wrap(DType dtype, std::vector<int64_t> dims, void* data) {
  Tensor t;
  t.dtype_ = dtype;
  t.dims_ = std::move(dims);
  t.numel_ = checked_numel(t.dims_);
  t.data_ = data;
  return t;
}

Tensor Tensor::view(DType dtype, std::vector<int64_t> dims, std::shared_ptr<void> owner, void* data) {
  if (dtype == DType::String || dtype == DType::Undefined) throw Error("a view needs a numeric dtype");
  if (reinterpret_cast<uintptr_t>(data) % 64 != 0) throw Error("a tensor view's data must be 64-byte aligned");
  Tensor t = wrap(dtype, std::move(dims), data);
  t.owner_ = std::move(owner);
  return t;
}

Tensor Tensor::sequence(DType elem, std::vector<Tensor> items) {
  Tensor t;
  t.kind_ = ValueKind::Sequence;
  t.dtype_ = elem;
  t.items_ = std::make_shared<std::vector<Tensor>>(std::move(items));
  return t;
}

Tensor Tensor::none(DType elem, ValueKind inner) {
  Tensor t;
  t.kind_ = ValueKind::None;
  t.dtype_ = elem;
  t.inner_ = inner;
  return t;
}

const std::vector<Tensor>& Tensor::items() const {
  if (kind_ != ValueKind::Sequence) throw Error("value " + describe() + " is not a sequence");
  return *items_;
}

Tensor Tensor::reshaped(std::vector<int64_t> dims) const {
  Tensor t = *this;
  int64_t n = checked_numel(dims);
  if (n != numel_) throw Error("cannot view " + describe() + " with " + std::to_string(n) + " elements");
  t.dims_ = std::move(dims);
  return t;
}

Tensor Tensor::clone() const {
  if (kind_ == ValueKind::None) return *this;
  if (kind_ == ValueKind::Sequence) {
    std::vector<Tensor> items;
    for (const Tensor& i : *items_) items.push_back(i.clone());
    return sequence(dtype_, std::move(items));
  }
  Tensor t(dtype_, dims_);
  if (dtype_ == DType::String) {
    for (int64_t i = 0; i < numel_; ++i) t.data<std::string>()[i] = data<std::string>()[i];
  } else if (numel_ > 0) {
    std::memcpy(t.data_, data_, nbytes());
  }
  return t;
}

double Tensor::as_double(int64_t i) const {
  if (dtype_ == DType::Bool) return static_cast<const bool*>(data_)[i] ? 1.0 : 0.0;
  if (dtype_is_narrow(dtype_)) return ir::narrow_to_double(dtype_, static_cast<const uint8_t*>(data_)[i]);
  return ir::dispatch_numeric(dtype_, [&](auto tag) -> double {
    using T = decltype(tag);
    return static_cast<double>(static_cast<ir::compute_t<T>>(static_cast<const T*>(data_)[i]));
  });
}

int64_t Tensor::as_int64(int64_t i) const {
  if (dtype_ == DType::Bool) return static_cast<const bool*>(data_)[i] ? 1 : 0;
  if (dtype_is_narrow(dtype_)) {
    const double v = ir::narrow_to_double(dtype_, static_cast<const uint8_t*>(data_)[i]);
    return std::isfinite(v) ? static_cast<int64_t>(v) : 0;
  }
  return ir::dispatch_numeric(dtype_, [&](auto tag) -> int64_t {
    using T = decltype(tag);
    return static_cast<int64_t>(static_cast<ir::compute_t<T>>(static_cast<const T*>(data_)[i]));
  });
}

std::vector<int64_t> Tensor::to_int64_vector() const {
  std::vector<int64_t> v(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) v[i] = as_int64(i);
  return v;
}

std::string Tensor::describe() const {
  std::ostringstream os;
  if (kind_ == ValueKind::None) return "optional<" + dtype_name(dtype_) + ">(none)";
  if (kind_ == ValueKind::Sequence) {
    os << "sequence<" << dtype_name(dtype_) << ">(" << items_->size() << " items)";
    return os.str();
  }
  os << dtype_name(dtype_) << "[";
  for (size_t i = 0; i < dims_.size(); ++i) os << (i ? "," : "") << dims_[i];
  os << "]";
  return os.str();
}

}  // namespace kiln
