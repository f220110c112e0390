// The emitted project's main.cpp: a driver that runs the model on the test data beside it and
// times it. It reads ONNX TensorProto files itself (the wire format, the fields test data uses),
// so the project needs no protobuf.
#include "codegen/cpp/project_files.h"

namespace kiln::codegen::cpp {

std::string main_cpp() {
  return R"CPP(// main.cpp: runs the model compiled beside it on every test_data_set_* (input_N.pb, output_N.pb:
// ONNX TensorProto files) and compares its outputs, then times it.
//   kiln_model_main [--data DIR] [--weights FILE] [--runs N] [--warmup N]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "model.h"

namespace {

struct TensorFile {
  std::vector<int64_t> dims;
  int type = 0;       // TensorProto.DataType
  std::string bytes;  // the elements, little-endian
};

size_t element_size(int type) {
  switch (type) {
    case 1: case 6: case 12: return 4;  // float, int32, uint32
    case 2: case 3: case 9: return 1;   // uint8, int8, bool
    case 4: case 5: case 10: case 16: return 2;
    case 7: case 11: case 13: return 8;  // int64, double, uint64
    default: return 0;
  }
}

int type_of(const char* name) {
  const char* names[] = {"", "float", "uint8", "int8", "uint16", "int16", "int32", "int64", "string", "bool",
                         "float16", "double", "uint32", "uint64"};
  for (int t = 1; t < 14; ++t)
    if (std::strcmp(names[t], name) == 0) return t;
  return 0;
}

bool varint(const unsigned char*& p, const unsigned char* e, uint64_t& v) {
  v = 0;
  for (int shift = 0; p < e && shift < 64; shift += 7) {
    const unsigned char b = *p++;
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

// Appends an integer element of `type` (from int32_data / int64_data / uint64_data).
void append_int(TensorFile& t, uint64_t v) {
  const size_t n = element_size(t.type);
  unsigned char b[8];
  std::memcpy(b, &v, 8);
  t.bytes.append(reinterpret_cast<const char*>(b), n);
}

bool parse_tensor(const std::string& buf, TensorFile& t, std::string& err) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(buf.data());
  const unsigned char* e = p + buf.size();
  std::string raw, packed;
  std::vector<uint64_t> ints;
  bool has_raw = false;
  while (p < e) {
    uint64_t key, v;
    if (!varint(p, e, key)) return err = "bad field key", false;
    const int field = static_cast<int>(key >> 3), wire = static_cast<int>(key & 7);
    if (wire == 0) {
      if (!varint(p, e, v)) return err = "bad varint", false;
      if (field == 1) t.dims.push_back(static_cast<int64_t>(v));
      else if (field == 2) t.type = static_cast<int>(v);
      else if (field == 5 || field == 7 || field == 11) ints.push_back(v);
    } else if (wire == 2) {
      if (!varint(p, e, v) || v > static_cast<uint64_t>(e - p)) return err = "bad length", false;
      const unsigned char* q = p;
      const unsigned char* qe = p + v;
      p = qe;
      if (field == 1 || field == 5 || field == 7 || field == 11) {
        while (q < qe) {
          uint64_t x;
          if (!varint(q, qe, x)) return err = "bad packed varint", false;
          (field == 1 ? static_cast<void>(t.dims.push_back(static_cast<int64_t>(x))) : ints.push_back(x));
        }
      } else if (field == 9) {
        raw.assign(reinterpret_cast<const char*>(q), v);
        has_raw = true;
      } else if (field == 4 || field == 10) {
        packed.append(reinterpret_cast<const char*>(q), v);
      } else if (field == 8 || field == 12 || field == 13 || field == 14 || field == 6 || field == 3) {
        // name, doc_string, external_data, data_location, string_data, segment: not data here
        if (field == 6) return err = "string tensors are not supported", false;
        if (field == 13) return err = "external data is not supported", false;
      }
    } else if (wire == 5) {
      if (e - p < 4) return err = "truncated", false;
      if (field == 4) packed.append(reinterpret_cast<const char*>(p), 4);
      p += 4;
    } else if (wire == 1) {
      if (e - p < 8) return err = "truncated", false;
      if (field == 10) packed.append(reinterpret_cast<const char*>(p), 8);
      p += 8;
    } else {
      return err = "unknown wire type", false;
    }
  }
  if (has_raw) t.bytes = raw;
  else if (!packed.empty()) t.bytes = packed;
  else for (uint64_t x : ints) append_int(t, x);
  int64_t n = 1;
  for (int64_t d : t.dims) n *= d;
  if (element_size(t.type) == 0) return err = "element type " + std::to_string(t.type) + " is not supported", false;
  if (t.bytes.size() != static_cast<size_t>(n) * element_size(t.type))
    return err = "holds " + std::to_string(t.bytes.size()) + " bytes for " + std::to_string(n) + " elements", false;
  return true;
}

bool read_tensor(const std::filesystem::path& path, TensorFile& t) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::stringstream ss;
  ss << f.rdbuf();
  std::string err;
  if (!parse_tensor(ss.str(), t, err)) {
    std::fprintf(stderr, "%s: %s\n", path.string().c_str(), err.c_str());
    std::exit(2);
  }
  return true;
}

double element(const TensorFile& t, const void* data, int64_t i) {
  const char* p = static_cast<const char*>(data);
  switch (t.type) {
    case 1: { float v; std::memcpy(&v, p + i * 4, 4); return v; }
    case 11: { double v; std::memcpy(&v, p + i * 8, 8); return v; }
    case 7: { int64_t v; std::memcpy(&v, p + i * 8, 8); return static_cast<double>(v); }
    case 6: { int32_t v; std::memcpy(&v, p + i * 4, 4); return v; }
    case 2: case 9: return static_cast<unsigned char>(p[i]);
    case 3: return static_cast<signed char>(p[i]);
    default: return 0;
  }
}

int64_t numel(const int64_t* dims, int rank) {
  int64_t n = 1;
  for (int k = 0; k < rank; ++k) n *= dims[k];
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  std::string data = KILN_MODEL_DIR;
  std::string weights = std::string(KILN_MODEL_DIR) + "/weights.bin";
  int runs = 20, warmup = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--data" && i + 1 < argc) data = argv[++i];
    else if (a == "--weights" && i + 1 < argc) weights = argv[++i];
    else if (a == "--runs" && i + 1 < argc) runs = std::max(1, std::atoi(argv[++i]));
    else if (a == "--warmup" && i + 1 < argc) warmup = std::max(0, std::atoi(argv[++i]));
    else {
      std::fprintf(stderr, "usage: %s [--data DIR] [--weights FILE] [--runs N] [--warmup N]\n", argv[0]);
      return 2;
    }
  }
  kiln_model* m = kiln_model_create(KILN_MODEL_EMBEDDED_WEIGHTS ? nullptr : weights.c_str());
  if (!m) {
    std::fprintf(stderr, "kiln_model_create: %s\n", kiln_model_last_error());
    return 1;
  }
  std::vector<std::filesystem::path> sets;
  if (std::filesystem::is_directory(data))
    for (const auto& e : std::filesystem::directory_iterator(data))
      if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());

  bool ok = true;
  std::vector<TensorFile> first_inputs;
  for (const auto& set : sets) {
    std::vector<TensorFile> in(KILN_MODEL_INPUTS);
    std::vector<const void*> in_ptr;
    std::vector<const int64_t*> in_dims;
    for (int i = 0; i < KILN_MODEL_INPUTS; ++i) {
      if (!read_tensor(set / ("input_" + std::to_string(i) + ".pb"), in[i])) {
        std::fprintf(stderr, "%s: no input_%d.pb\n", set.string().c_str(), i);
        return 2;
      }
      if (in[i].type != type_of(kiln_model_input_types[i]) || static_cast<int>(in[i].dims.size()) != kiln_model_input_ranks[i]) {
        std::fprintf(stderr, "%s: input_%d.pb is not a %s tensor of rank %d\n", set.string().c_str(), i,
                     kiln_model_input_types[i], kiln_model_input_ranks[i]);
        return 2;
      }
      in_ptr.push_back(in[i].bytes.data());
      in_dims.push_back(in[i].dims.data());
    }
    int sig = -1;
    for (int g = 0; g < KILN_MODEL_SIGNATURES && sig < 0; ++g) {
      bool same = true;
      for (int i = 0; i < KILN_MODEL_INPUTS; ++i)
        for (int k = 0; k < kiln_model_input_ranks[i]; ++k) same = same && in_dims[i][k] == kiln_model_input_dims[g][i][k];
      if (same) sig = g;
    }
    std::vector<std::string> out(KILN_MODEL_OUTPUTS);
    std::vector<void*> out_ptr;
    for (int i = 0; i < KILN_MODEL_OUTPUTS; ++i) {
      const int64_t n = sig < 0 ? 0 : numel(kiln_model_output_dims[sig][i], kiln_model_output_ranks[i]);
      out[i].assign(static_cast<size_t>(n) * element_size(type_of(kiln_model_output_types[i])) + 1, '\0');
      out_ptr.push_back(out[i].data());
    }
    if (kiln_model_run_dims(m, in_dims.data(), in_ptr.data(), out_ptr.data()) != 0) {
      std::printf("%s: FAILED: %s\n", set.filename().string().c_str(), kiln_model_last_error());
      ok = false;
      continue;
    }
    if (first_inputs.empty()) first_inputs = in;
    for (int i = 0; i < KILN_MODEL_OUTPUTS; ++i) {
      TensorFile expect;
      if (!read_tensor(set / ("output_" + std::to_string(i) + ".pb"), expect)) {
        std::printf("%s: output %d '%s': no output_%d.pb to compare with\n", set.filename().string().c_str(), i,
                    kiln_model_output_names[i], i);
        ok = false;
        continue;
      }
      const int64_t n = numel(kiln_model_output_dims[sig][i], kiln_model_output_ranks[i]);
      int64_t expect_n = 1;
      for (int64_t d : expect.dims) expect_n *= d;
      if (expect_n != n || expect.type != type_of(kiln_model_output_types[i])) {
        std::printf("%s: output %d '%s': expected %lld elements of type %d, the model gives %lld of %s\n",
                    set.filename().string().c_str(), i, kiln_model_output_names[i], static_cast<long long>(expect_n),
                    expect.type, static_cast<long long>(n), kiln_model_output_types[i]);
        ok = false;
        continue;
      }
      double worst = 0;
      int64_t bad = 0;
      const bool floating = expect.type == 1 || expect.type == 11;
      for (int64_t k = 0; k < n; ++k) {
        const double a = element(expect, out[i].data(), k), b = element(expect, expect.bytes.data(), k);
        const double d = std::fabs(a - b);
        const bool same = (std::isnan(a) && std::isnan(b)) || a == b || (floating && d <= 1e-4 + 1e-3 * std::fabs(b));
        if (!same) ++bad;
        if (!std::isnan(d)) worst = std::max(worst, d);
      }
      std::printf("%s: output %d '%s': %s (max abs diff %.3g)\n", set.filename().string().c_str(), i,
                  kiln_model_output_names[i], bad ? "MISMATCH" : "matches", worst);
      if (bad) {
        std::printf("  %lld of %lld elements differ beyond rtol 1e-3, atol 1e-4\n", static_cast<long long>(bad),
                    static_cast<long long>(n));
        ok = false;
      }
    }
  }
  if (sets.empty()) std::printf("no test_data_set_* in %s: timing on zeros\n", data.c_str());

  // Timing: the first test set's inputs (zeros without test data), the first signature.
  std::vector<std::string> zin(KILN_MODEL_INPUTS), zout(KILN_MODEL_OUTPUTS);
  std::vector<const void*> tin;
  std::vector<const int64_t*> tdims;
  for (int i = 0; i < KILN_MODEL_INPUTS; ++i) {
    if (!first_inputs.empty()) {
      tin.push_back(first_inputs[i].bytes.data());
      tdims.push_back(first_inputs[i].dims.data());
    } else {
      zin[i].assign(static_cast<size_t>(numel(kiln_model_input_dims[0][i], kiln_model_input_ranks[i])) *
                        element_size(type_of(kiln_model_input_types[i])) + 1, '\0');
      tin.push_back(zin[i].data());
      tdims.push_back(kiln_model_input_dims[0][i]);
    }
  }
  int sig = 0;
  for (int g = 0; g < KILN_MODEL_SIGNATURES; ++g) {
    bool same = true;
    for (int i = 0; i < KILN_MODEL_INPUTS; ++i)
      for (int k = 0; k < kiln_model_input_ranks[i]; ++k) same = same && tdims[i][k] == kiln_model_input_dims[g][i][k];
    if (same) {
      sig = g;
      break;
    }
  }
  std::vector<void*> tout;
  for (int i = 0; i < KILN_MODEL_OUTPUTS; ++i) {
    zout[i].assign(static_cast<size_t>(numel(kiln_model_output_dims[sig][i], kiln_model_output_ranks[i])) *
                       element_size(type_of(kiln_model_output_types[i])) + 1, '\0');
    tout.push_back(zout[i].data());
  }
  std::vector<double> ms;
  for (int r = 0; r < warmup + runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    if (kiln_model_run_dims(m, tdims.data(), tin.data(), tout.data()) != 0) {
      std::printf("timing run: %s\n", kiln_model_last_error());
      kiln_model_destroy(m);
      return 1;
    }
    const double t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (r >= warmup) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  std::printf("latency: median %.3f ms, min %.3f ms, max %.3f ms (%d runs, %d warmup)\n", ms[ms.size() / 2], ms.front(),
              ms.back(), runs, warmup);
#ifdef KILN_MODEL_DEVICE_API
  // The CUDA target: the same runs on the model's own device buffers, no host copies.
  const void* const* din = nullptr;
  void* const* dout = nullptr;
  if (kiln_model_device_io(m, sig, &din, &dout) != 0) {
    std::printf("device buffers: %s\n", kiln_model_last_error());
    kiln_model_destroy(m);
    return 1;
  }
  ms.clear();
  for (int r = 0; r < warmup + runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    if (kiln_model_run_dims_device(m, tdims.data(), din, dout) != 0) {
      std::printf("timing run on device buffers: %s\n", kiln_model_last_error());
      kiln_model_destroy(m);
      return 1;
    }
    const double t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (r >= warmup) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  std::printf("device latency: median %.3f ms, min %.3f ms, max %.3f ms (%d runs, %d warmup)\n", ms[ms.size() / 2],
              ms.front(), ms.back(), runs, warmup);
#endif
  kiln_model_destroy(m);
  std::printf("%s\n", ok ? "check passed" : "check FAILED");
  return ok ? 0 : 1;
}
)CPP";
}

}  // namespace kiln::codegen::cpp
