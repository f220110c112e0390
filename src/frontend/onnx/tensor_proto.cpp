#include "frontend/onnx/tensor_proto.h"

#include <kiln/error.h>
#include <onnx/onnx_pb.h>

#include "ir/narrow_types.h"

#include <cstring>
#include <fstream>
#include <sstream>

namespace kiln::onnx_fe {

namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& path, const std::string& what) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(what + ": cannot open '" + path.string() + "'");
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Resolves an external-data location against the model folder and refuses anything that
// ends up outside it (after following symlinks).
fs::path resolve_external(const fs::path& base_dir, const std::string& location, const std::string& what) {
  fs::path loc(location);
  if (location.empty() || loc.is_absolute())
    throw Error(what + ": external data location '" + location + "' must be a relative path inside the model folder");
  std::error_code ec;
  fs::path base = fs::weakly_canonical(base_dir.empty() ? fs::path(".") : base_dir, ec);
  fs::path full = fs::weakly_canonical(base / loc, ec);
  if (ec) throw Error(what + ": cannot resolve external data location '" + location + "'");
  auto [b, f] = std::mismatch(base.begin(), base.end(), full.begin(), full.end());
  if (b != base.end())
    throw Error(what + ": external data location '" + location + "' points outside the model folder");
  return full;
}

struct ExternalRef {
  std::string location;
  int64_t offset = 0, length = -1;
};

ExternalRef external_ref(const onnx::TensorProto& p, const std::string& what) {
  ExternalRef r;
  auto parse = [&](const std::string& key, const std::string& v) -> int64_t {
    try {
      size_t used = 0;
      int64_t x = std::stoll(v, &used);
      if (used == v.size()) return x;
    } catch (const std::exception&) {
    }
    throw Error(what + ": external data " + key + " '" + v + "' is not an integer");
  };
  for (const auto& kv : p.external_data()) {
    if (kv.key() == "location") r.location = kv.value();
    else if (kv.key() == "offset") r.offset = parse("offset", kv.value());
    else if (kv.key() == "length") r.length = parse("length", kv.value());
  }
  return r;
}

std::string external_bytes(const ExternalRef& ref, const fs::path& base_dir, const std::string& what,
                           size_t expected) {
  const std::string& location = ref.location;
  int64_t offset = ref.offset, length = ref.length;
  fs::path full = resolve_external(base_dir, location, what);
  std::ifstream f(full, std::ios::binary);
  if (!f) throw Error(what + ": cannot open external data file '" + location + "'");
  f.seekg(0, std::ios::end);
  int64_t size = f.tellg();
  if (length < 0) length = static_cast<int64_t>(expected);
  if (offset < 0 || offset > size || length > size - offset)
    throw Error(what + ": external data range [" + std::to_string(offset) + ", +" + std::to_string(length) +
                ") lies outside '" + location + "' (" + std::to_string(size) + " bytes)");
  std::string buf(static_cast<size_t>(length), '\0');
  f.seekg(offset);
  f.read(buf.data(), length);
  return buf;
}

void check_count(int64_t have, int64_t want, const std::string& what) {
  if (have != want)
    throw Error(what + ": data has " + std::to_string(have) + " elements but its dims say " + std::to_string(want));
}

template <typename T, typename Field>
void copy_field(Tensor& t, const Field& field, const std::string& what) {
  check_count(field.size(), t.numel(), what);
  T* out = static_cast<T*>(t.raw());
  for (int64_t i = 0; i < t.numel(); ++i) out[i] = static_cast<T>(field.Get(static_cast<int>(i)));
}

// Sub-byte types, packed in files and unpacked in memory.
bool is_packed(DType t) { return dtype_bits(t) > 0 && dtype_bits(t) < 8; }
int64_t stored_bytes(const Tensor& t) {
  return is_packed(t.dtype()) ? ir::packed_bytes(t.dtype(), t.numel()) : static_cast<int64_t>(t.nbytes());
}

}  // namespace

Tensor tensor_from_proto(const onnx::TensorProto& p, const fs::path& base_dir, const std::string& what,
                         std::optional<std::string_view> raw_split, const ExternalSection* section) {
  if (p.has_segment()) throw UnsupportedError(what + ": segmented tensors are not supported");
  DType dt;
  try {
    dt = dtype_from_onnx(p.data_type());
  } catch (const Error& e) {
    throw Error(what + ": " + e.what());
  }
  if (dt == DType::Undefined) throw Error(what + ": tensor has no data type");
  if (dt == DType::Complex64 || dt == DType::Complex128)
    throw UnsupportedError(what + ": complex tensors are not supported");
  std::vector<int64_t> dims(p.dims().begin(), p.dims().end());
  for (int64_t d : dims)
    if (d < 0) throw Error(what + ": negative dimension " + std::to_string(d));
  const bool external = p.data_location() == onnx::TensorProto::EXTERNAL;
  ExternalRef ref;
  if (external) ref = external_ref(p, what);
  std::optional<std::string_view> in_section;
  if (external && ref.location == kSectionLocation) {
    if (!section) throw Error(what + ": its data lies in a section of a .kiln file, and none was given");
    if (dt == DType::String) throw Error(what + ": string tensors cannot be external data");
    const int64_t size = static_cast<int64_t>(section->bytes.size());
    if (ref.offset < 0 || ref.length < 0 || ref.offset > size || ref.length > size - ref.offset)
      throw Error(what + ": external data range [" + std::to_string(ref.offset) + ", +" + std::to_string(ref.length) +
                  ") lies outside its section (" + std::to_string(size) + " bytes)");
    in_section = section->bytes.substr(static_cast<size_t>(ref.offset), static_cast<size_t>(ref.length));
    const char* at = in_section->data();
    if (section->owner && reinterpret_cast<uintptr_t>(at) % 64 == 0 && dtype_bits(dt) == 8 * static_cast<int>(dtype_size(dt))) {
      Tensor t;
      try {
        t = Tensor::wrap(dt, dims, nullptr);
      } catch (const Error& e) {
        throw Error(what + ": " + e.what());
      }
      if (static_cast<uint64_t>(t.numel()) > in_section->size() / dtype_size(dt) || in_section->size() != t.nbytes())
        throw Error(what + ": external data has " + std::to_string(in_section->size()) + " bytes but " + t.describe() +
                    " needs " + std::to_string(t.nbytes()));
      return Tensor::view(dt, std::move(dims), section->owner, const_cast<char*>(at));
    }
  }
  Tensor t;
  try {
    t = Tensor(dt, dims);
  } catch (const Error& e) {
    throw Error(what + ": " + e.what());
  }

  if (dt == DType::String) {
    check_count(p.string_data_size(), t.numel(), what);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<std::string>()[i] = p.string_data(static_cast<int>(i));
    return t;
  }
  if (raw_split || external || p.has_raw_data()) {
    std::string ext;
    const std::string_view raw = raw_split     ? *raw_split
                                 : in_section ? *in_section
                                 : external   ? std::string_view(ext = external_bytes(ref, base_dir, what, t.nbytes()))
                                              : std::string_view(p.raw_data());
    const size_t want = static_cast<size_t>(stored_bytes(t));
    if (raw.size() != want)
      throw Error(what + ": raw data has " + std::to_string(raw.size()) + " bytes but " + t.describe() + " needs " +
                  std::to_string(want));
    if (raw.empty()) return t;
    if (is_packed(dt)) ir::unpack_narrow(dt, reinterpret_cast<const uint8_t*>(raw.data()), t.numel(), t.data<uint8_t>());
    else std::memcpy(t.raw(), raw.data(), raw.size());
    return t;
  }
  switch (dt) {
    case DType::Float: copy_field<float>(t, p.float_data(), what); break;
    case DType::Double: copy_field<double>(t, p.double_data(), what); break;
    case DType::Int64: copy_field<int64_t>(t, p.int64_data(), what); break;
    case DType::UInt64: copy_field<uint64_t>(t, p.uint64_data(), what); break;
    case DType::UInt32: copy_field<uint32_t>(t, p.uint64_data(), what); break;
    case DType::Int32: copy_field<int32_t>(t, p.int32_data(), what); break;
    case DType::Int16: copy_field<int16_t>(t, p.int32_data(), what); break;
    case DType::Int8: copy_field<int8_t>(t, p.int32_data(), what); break;
    case DType::UInt16: copy_field<uint16_t>(t, p.int32_data(), what); break;
    case DType::UInt8: copy_field<uint8_t>(t, p.int32_data(), what); break;
    case DType::Bool: copy_field<bool>(t, p.int32_data(), what); break;
    // 16-bit floats and float8 keep their bit patterns in int32_data.
    case DType::Float16: case DType::BFloat16: copy_field<uint16_t>(t, p.int32_data(), what); break;
    case DType::Float8E4M3FN: case DType::Float8E4M3FNUZ: case DType::Float8E5M2: case DType::Float8E5M2FNUZ:
    case DType::Float8E8M0: copy_field<uint8_t>(t, p.int32_data(), what); break;
    // Sub-byte types: one packed byte per int32_data element.
    case DType::Int4: case DType::UInt4: case DType::Float4E2M1: case DType::Int2: case DType::UInt2: {
      check_count(p.int32_data_size(), ir::packed_bytes(dt, t.numel()), what + " (packed bytes)");
      std::vector<uint8_t> packed(p.int32_data().begin(), p.int32_data().end());
      ir::unpack_narrow(dt, packed.data(), t.numel(), t.data<uint8_t>());
      break;
    }
    default: throw UnsupportedError(what + ": dtype " + dtype_name(dt) + " is not supported");
  }
  return t;
}

void tensor_to_proto(const Tensor& t, const std::string& name, onnx::TensorProto* p) {
  p->Clear();
  p->set_name(name);
  p->set_data_type(static_cast<int32_t>(t.dtype()));
  for (int64_t d : t.dims()) p->add_dims(d);
  if (t.dtype() == DType::String) {
    for (int64_t i = 0; i < t.numel(); ++i) p->add_string_data(t.data<std::string>()[i]);
  } else if (is_packed(t.dtype())) {
    std::string packed(static_cast<size_t>(stored_bytes(t)), '\0');
    ir::pack_narrow(t.dtype(), t.data<uint8_t>(), t.numel(), reinterpret_cast<uint8_t*>(packed.data()));
    p->set_raw_data(std::move(packed));
  } else {
    p->set_raw_data(std::string(static_cast<const char*>(t.raw()), t.nbytes()));
  }
}

void tensor_to_proto(const Tensor& t, const std::string& name, ExternalSectionWriter& section, onnx::TensorProto* p) {
  if (!section.takes(t)) return tensor_to_proto(t, name, p);
  p->Clear();
  p->set_name(name);
  p->set_data_type(static_cast<int32_t>(t.dtype()));
  for (int64_t d : t.dims()) p->add_dims(d);
  p->set_data_location(onnx::TensorProto::EXTERNAL);
  auto entry = [p](const std::string& k, const std::string& v) {
    auto* e = p->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  entry("location", kSectionLocation);
  entry("offset", std::to_string(section.add(t)));
  entry("length", std::to_string(stored_bytes(t)));
}

Tensor load_tensor_file(const fs::path& path, std::string* name) {
  std::string bytes = read_file(path, "tensor file");
  onnx::TensorProto p;
  if (!p.ParseFromString(bytes)) throw Error("'" + path.string() + "' is not a TensorProto file");
  if (name) *name = p.name();
  return tensor_from_proto(p, path.parent_path(), "tensor file '" + path.string() + "'");
}

void save_tensor_file(const Tensor& t, const std::string& name, const fs::path& path) {
  onnx::TensorProto p;
  tensor_to_proto(t, name, &p);
  std::ofstream f(path, std::ios::binary);
  if (!f || !p.SerializeToOstream(&f)) throw Error("cannot write '" + path.string() + "'");
}

}  // namespace kiln::onnx_fe
