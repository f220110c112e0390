// Reads a float tensor stored as an ONNX TensorProto (the model zoo's test_data_set_N/*.pb):
// field 1 the dims, 2 the data type (1 = float), 9 the raw little-endian data. Just enough of
// the protobuf wire format for those files, so the example needs nothing but kiln.
#pragma once
#include <kiln/tensor.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

inline kiln::Tensor read_onnx_tensor(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error(path + ": cannot open");
  const std::string b((std::istreambuf_iterator<char>(f)), {});
  size_t p = 0;
  auto varint = [&] {
    uint64_t v = 0;
    for (int shift = 0; p < b.size(); shift += 7) {
      uint8_t c = b[p++];
      v |= uint64_t(c & 0x7f) << shift;
      if (!(c & 0x80)) return v;
    }
    throw std::runtime_error(path + ": truncated");
  };
  std::vector<int64_t> dims;
  std::string raw;
  uint64_t dtype = 0;
  while (p < b.size()) {
    const uint64_t key = varint(), field = key >> 3, wire = key & 7;
    if (wire == 0) {
      const uint64_t v = varint();
      if (field == 1) dims.push_back(int64_t(v));
      if (field == 2) dtype = v;
    } else if (wire == 2) {
      const size_t n = varint();
      if (field == 9) raw = b.substr(p, n);
      p += n;
    } else if (wire == 1 || wire == 5) {
      p += wire == 1 ? 8 : 4;
    } else {
      throw std::runtime_error(path + ": unexpected wire type");
    }
  }
  kiln::Tensor t(kiln::DType::Float, dims);
  if (dtype != 1 || raw.size() != t.nbytes()) throw std::runtime_error(path + ": not a raw float tensor");
  std::memcpy(t.raw(), raw.data(), raw.size());
  return t;
}
