#include "codegen/cpp/project_files.h"

#include <algorithm>

#include "codegen/cpp/code_text.h"
#include "codegen/cpp/emit_context.h"
#include "codegen/cpp/weights_blob.h"

namespace kiln::codegen::cpp {

namespace {

std::string ll_list(const std::vector<int64_t>& d) {
  if (d.empty()) return "{0}";
  std::string s = "{";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]) + "ll";
  return s + "}";
}

}  // namespace

std::string tensor_tables(const std::vector<SignatureCode>& sigs, bool inputs) {
  const std::string io = inputs ? "input" : "output";
  const std::string N = inputs ? "KILN_MODEL_INPUTS" : "KILN_MODEL_OUTPUTS";
  const auto& first = inputs ? sigs[0].inputs : sigs[0].outputs;
  std::string s;
  s += "const char* const kiln_model_" + io + "_names[" + N + "] = {";
  for (size_t i = 0; i < first.size(); ++i) s += (i ? ", " : "") + c_string(first[i].name);
  s += "};\nconst char* const kiln_model_" + io + "_types[" + N + "] = {";
  for (size_t i = 0; i < first.size(); ++i) s += (i ? ", " : "") + c_string(dtype_name(first[i].dtype));
  s += "};\nconst int kiln_model_" + io + "_ranks[" + N + "] = {";
  for (size_t i = 0; i < first.size(); ++i) s += (i ? ", " : "") + std::to_string(first[i].dims.size());
  s += "};\n";
  for (size_t g = 0; g < sigs.size(); ++g) {
    const auto& t = inputs ? sigs[g].inputs : sigs[g].outputs;
    for (size_t i = 0; i < t.size(); ++i)
      s += "static const int64_t " + io + "_dims_" + std::to_string(g) + "_" + std::to_string(i) + "[] = " +
           ll_list(t[i].dims) + ";\n";
  }
  s += "const int64_t* const kiln_model_" + io + "_dims[KILN_MODEL_SIGNATURES][" + N + "] = {\n";
  for (size_t g = 0; g < sigs.size(); ++g) {
    const auto& t = inputs ? sigs[g].inputs : sigs[g].outputs;
    s += "    {";
    for (size_t i = 0; i < t.size(); ++i) s += (i ? ", " : "") + io + "_dims_" + std::to_string(g) + "_" + std::to_string(i);
    s += "},\n";
  }
  return s + "};\n";
}

namespace {

struct IsaCheck {
  std::string flags, features;  // compiler flags; the __builtin_cpu_supports names, space-separated
};

IsaCheck isa_check(const std::vector<std::string>& isa) {
  const bool avx512 = std::find(isa.begin(), isa.end(), "avx512f") != isa.end();
  const bool avx2 = avx512 || std::find(isa.begin(), isa.end(), "avx2") != isa.end();
  if (avx512) return {"-mavx512f -mavx2 -mfma", "avx512f avx2 fma"};
  if (avx2) return {"-mavx2 -mfma", "avx2 fma"};
  return {"", ""};
}

}  // namespace

std::string weights_check_text() {
  return R"CPP(thread_local std::string last_error;

int fail(const std::string& e) {
  last_error = e;
  return -1;
}

// weights_checksum in kiln (src/codegen/cpp/weights_blob.cpp): FNV-1a over 64-bit words.
uint64_t checksum(const unsigned char* p, uint64_t n) {
  uint64_t h = 1469598103934665603ull;
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ w) * 1099511628211ull;
  }
  for (; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

bool check_weights(const unsigned char* f, uint64_t bytes, const char* where) {
  uint64_t n = 0, sum = 0;
  if (bytes >= 64) {
    std::memcpy(&n, f + 8, 8);
    std::memcpy(&sum, f + 16, 8);
  }
  if (bytes < 64 || std::memcmp(f, "KILNWTS1", 8) != 0) return fail(std::string(where) + ": not a kiln weights file"), false;
  if (n != kWeightsBytes || bytes - 64 < n)
    return fail(std::string(where) + ": holds " + std::to_string(n) + " bytes of weights, this model needs " +
                std::to_string(kWeightsBytes) + " (weights of another compile?)"), false;
  if (sum != kWeightsChecksum || checksum(f + 64, n) != sum)
    return fail(std::string(where) + ": the weights' checksum does not match (damaged, or of another compile)"), false;
  return true;
}

)CPP";
}

std::string find_signature_text() {
  return R"CPP(
// The signature compiled for these input shapes, or -1 (the error set) when none was.
int find_signature(const int64_t* const* input_dims) {
  int sig = -1;
  for (int g = 0; g < KILN_MODEL_SIGNATURES && sig < 0; ++g) {
    bool same = true;
    for (int i = 0; i < KILN_MODEL_INPUTS && same; ++i)
      for (int k = 0; k < kiln_model_input_ranks[i] && same; ++k)
        same = input_dims[i][k] == kiln_model_input_dims[g][i][k];
    if (same) sig = g;
  }
  if (sig < 0) {
    std::string e = "no compiled signature has these input shapes:";
    for (int i = 0; i < KILN_MODEL_INPUTS; ++i) {
      e += std::string(" ") + kiln_model_input_names[i] + "[";
      for (int k = 0; k < kiln_model_input_ranks[i]; ++k) e += (k ? "," : "") + std::to_string(input_dims[i][k]);
      e += "]";
    }
    e += "; compiled:";
    for (int g = 0; g < KILN_MODEL_SIGNATURES; ++g) {
      e += g ? " |" : "";
      for (int i = 0; i < KILN_MODEL_INPUTS; ++i) {
        e += " [";
        for (int k = 0; k < kiln_model_input_ranks[i]; ++k) e += (k ? "," : "") + std::to_string(kiln_model_input_dims[g][i][k]);
        e += "]";
      }
    }
    return fail(e + " (kiln compile --dim adds shapes)");
  }
  return sig;
}
)CPP";
}

std::string model_h(const ProjectText& p) {
  const auto& sigs = *p.sigs;
  std::string s = R"H(// model.h: the C API of a model compiled by kiln (kiln compile --target cpp).
//
//   kiln_model* m = kiln_model_create("weights.bin");   // NULL: see kiln_model_last_error()
//   const void* in[KILN_MODEL_INPUTS] = {...};          // each input's elements, row-major
//   void* out[KILN_MODEL_OUTPUTS] = {...};              // room for each output's elements
//   if (kiln_model_run(m, in, out) != 0) puts(kiln_model_last_error());
//   kiln_model_destroy(m);
//
// A model runs one call at a time: give each thread its own kiln_model (the weights are read
// once per model). Models compiled for several input shapes (kiln compile --dim) take the
// shapes with kiln_model_run_dims; kiln_model_run runs the first.
#pragma once
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

)H";
  s += "#define KILN_MODEL_INPUTS " + std::to_string(sigs[0].inputs.size()) + "\n";
  s += "#define KILN_MODEL_OUTPUTS " + std::to_string(sigs[0].outputs.size()) + "\n";
  s += "#define KILN_MODEL_SIGNATURES " + std::to_string(sigs.size()) + "\n";
  s += std::string("#define KILN_MODEL_EMBEDDED_WEIGHTS ") + (p.embed_weights ? "1" : "0") + "\n\n";
  for (size_t g = 0; g < sigs.size(); ++g) {
    s += "// Signature " + std::to_string(g) + ":\n";
    for (size_t i = 0; i < sigs[g].inputs.size(); ++i)
      s += "//   input " + std::to_string(i) + "  '" + sigs[g].inputs[i].name + "'  " + dtype_name(sigs[g].inputs[i].dtype) +
           dims_str(sigs[g].inputs[i].dims) + "\n";
    for (size_t i = 0; i < sigs[g].outputs.size(); ++i)
      s += "//   output " + std::to_string(i) + " '" + sigs[g].outputs[i].name + "'  " +
           dtype_name(sigs[g].outputs[i].dtype) + dims_str(sigs[g].outputs[i].dims) + "\n";
  }
  s += R"H(
typedef struct kiln_model kiln_model;

// Reads the weights (the file kiln wrote beside this header) and allocates the arena. With
// KILN_MODEL_EMBEDDED_WEIGHTS, NULL takes the weights linked into the program.
kiln_model* kiln_model_create(const char* weights_path);
// Runs the model on the first signature's shapes: 0, or -1 with kiln_model_last_error() set.
int kiln_model_run(kiln_model* model, const void* const* inputs, void* const* outputs);
// Runs the signature whose input shapes are input_dims[i] (kiln_model_input_ranks[i] each).
int kiln_model_run_dims(kiln_model* model, const int64_t* const* input_dims, const void* const* inputs,
                        void* const* outputs);
void kiln_model_destroy(kiln_model* model);
// The calling thread's last error message.
const char* kiln_model_last_error(void);

extern const char* const kiln_model_input_names[KILN_MODEL_INPUTS];
extern const char* const kiln_model_input_types[KILN_MODEL_INPUTS];  // "float", "int64", ...
extern const int kiln_model_input_ranks[KILN_MODEL_INPUTS];
extern const int64_t* const kiln_model_input_dims[KILN_MODEL_SIGNATURES][KILN_MODEL_INPUTS];
extern const char* const kiln_model_output_names[KILN_MODEL_OUTPUTS];
extern const char* const kiln_model_output_types[KILN_MODEL_OUTPUTS];
extern const int kiln_model_output_ranks[KILN_MODEL_OUTPUTS];
extern const int64_t* const kiln_model_output_dims[KILN_MODEL_SIGNATURES][KILN_MODEL_OUTPUTS];

#ifdef __cplusplus
}
#endif
)H";
  return s;
}

namespace {

// The model's State: per instruction that keeps something across runs (a oneDNN primitive and
// its weights in the primitive's layout), a member made at kiln_model_create from the weights.
std::string state_text(const ProjectText& p) {
  std::string s = "// The weights' payload, as the state's constructor reads it.\nstruct Weights {\n  const unsigned char* w;\n};\n\n";
  s += "// What the model keeps from kiln_model_create to kiln_model_destroy";
  if (!p.states || p.states->empty()) return s + ": nothing.\nstruct State {\n  explicit State(const Weights&) {}\n};\n\n";
  s += ": per instruction named in a\n// member, its kernel set up once (primitive, weights in the kernel's layout).\nstruct State {\n";
  s += "  explicit State([[maybe_unused]] const Weights& c)\n";
  for (size_t i = 0; i < p.states->size(); ++i) {
    const StateDecl& d = (*p.states)[i];
    s += std::string(i ? "," : "") + "      " + (i ? "" : ": ") + d.name + "(" + d.args + ")\n";
  }
  s += "  {}\n";
  for (const StateDecl& d : *p.states) s += "  " + d.type + " " + d.name + ";\n";
  return s + "};\n\n";
}

}  // namespace

std::string model_cpp(const ProjectText& p) {
  const auto& sigs = *p.sigs;
  std::string s = "// model.cpp: " + p.source +
                  " compiled by kiln (kiln compile --target cpp). Each instruction of the\n"
                  "// executable plan is one function below, named after its node; run_sN calls those of input\n"
                  "// signature N in order. Tensors live in the arena at fixed offsets, weights in weights.bin.\n";
  s += R"CPP(#include "model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>
#ifdef __linux__
#include <sys/mman.h>
#endif

)CPP";
  if (p.onednn) s += "#include <omp.h>\n\n";
  s += "#include \"kernels/common.h\"\n";
  for (const std::string& k : p.kernels)
    if (k != "common.h") s += "#include \"kernels/" + k + "\"\n";
  s += R"CPP(
namespace {

struct State;

// One run: where the arena, the weights and the caller's tensors are.
struct Run {
  unsigned char* arena;
  const unsigned char* w;
  const void* const* in;
  void* const* out;
  kiln_kernels::Team* team;  // null: one thread
  State* state;
  const char* error;
  bool fail(const char* e) {
    error = e;
    return false;
  }
};

)CPP";
  s += R"CPP(// With KILN_MODEL_PROFILE defined (cmake -DKILN_MODEL_PROFILE=ON), every call is timed and the
// totals printed to stderr at exit, slowest first.
#ifdef KILN_MODEL_PROFILE
struct Profile {
  struct Entry {
    const char* name;
    double ms;
    long calls;
  };
  Entry entries[4096];
  int n = 0;
  ~Profile() {
    std::sort(entries, entries + n, [](const Entry& a, const Entry& b) { return a.ms > b.ms; });
    double total = 0;
    for (int i = 0; i < n; ++i) total += entries[i].ms;
    std::fprintf(stderr, "%-56s %10s %7s %6s\n", "instruction", "total ms", "calls", "%");
    for (int i = 0; i < n; ++i)
      std::fprintf(stderr, "%-56s %10.3f %7ld %6.1f\n", entries[i].name, entries[i].ms, entries[i].calls,
                   100.0 * entries[i].ms / total);
  }
  void add(int at, const char* name, double ms) {
    if (at >= 4096) return;
    n = std::max(n, at + 1);
    entries[at].name = name;
    entries[at].ms += ms;
    ++entries[at].calls;
  }
} profile;
#define KILN_CALL(at, f)                                                                                   \
  do {                                                                                                     \
    const auto t0 = std::chrono::steady_clock::now();                                                      \
    const bool ok = f(c);                                                                                  \
    profile.add(at, #f, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count()); \
    if (!ok) return false;                                                                                 \
  } while (0)
#else
#define KILN_CALL(at, f) \
  if (!f(c)) return false
#endif

)CPP";
  s += state_text(p);
  int at = 0;
  for (size_t g = 0; g < sigs.size(); ++g) {
    for (const std::string& f : sigs[g].functions) s += f + "\n";
    s += "bool run_s" + std::to_string(g) + "(Run& c) {\n";
    for (const std::string& n : sigs[g].names) s += "  KILN_CALL(" + std::to_string(at++) + ", " + n + ");\n";
    s += "  return true;\n}\n\n";
  }
  s += "constexpr int64_t kArenaBytes[KILN_MODEL_SIGNATURES] = {";
  for (size_t g = 0; g < sigs.size(); ++g) s += (g ? ", " : "") + std::to_string(sigs[g].arena_bytes) + "ll";
  s += "};\nbool (*const kRun[KILN_MODEL_SIGNATURES])(Run&) = {";
  for (size_t g = 0; g < sigs.size(); ++g) s += (g ? ", " : "") + std::string("run_s") + std::to_string(g);
  s += "};\nconstexpr uint64_t kWeightsBytes = " + std::to_string(p.weights_bytes) + "ull;\n";
  s += "constexpr uint64_t kWeightsChecksum = " + std::to_string(p.weights_checksum) + "ull;\n";
  s += "constexpr int kThreads = " + std::to_string(p.threads) + ";  // kiln compile --threads\n";
  s += R"CPP(
)CPP";
  s += weights_check_text();
  s += R"CPP(// The weights and the arena: on Linux in 2 MiB-aligned mappings advised into transparent huge
// pages (a product reading megabytes of weights per run misses the TLB on every 4 KiB page
// otherwise), elsewhere 64-byte aligned.
struct Buffer {
  unsigned char* p = nullptr;
  uint64_t bytes = 0;
};

Buffer alloc_large(uint64_t bytes) {
  bytes = std::max<uint64_t>(64, (bytes + 4095) / 4096 * 4096);
#ifdef __linux__
  constexpr uint64_t kHuge = uint64_t{2} << 20;
  void* m = ::mmap(nullptr, bytes + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return {};
  const uintptr_t base = reinterpret_cast<uintptr_t>(m), at = (base + kHuge - 1) & ~(uintptr_t{kHuge} - 1);
  if (at > base) ::munmap(m, at - base);
  if (const uint64_t tail = base + bytes + kHuge - (at + bytes)) ::munmap(reinterpret_cast<void*>(at + bytes), tail);
  ::madvise(reinterpret_cast<void*>(at), bytes, MADV_HUGEPAGE);  // advice: 4 KiB pages serve where THP is off
  return {reinterpret_cast<unsigned char*>(at), bytes};
#else
  return {static_cast<unsigned char*>(std::aligned_alloc(64, bytes)), bytes};
#endif
}

void free_large(const Buffer& b) {
  if (!b.p) return;
#ifdef __linux__
  ::munmap(b.p, b.bytes);
#else
  std::free(b.p);
#endif
}

}  // namespace

)CPP";
  if (p.embed_weights)
    s += "extern \"C\" const unsigned char kiln_model_weights_blob[];\nextern \"C\" const unsigned char "
         "kiln_model_weights_end[];\n\n";
  s += "extern \"C\" {\n\n" + tensor_tables(sigs, true) + tensor_tables(sigs, false) + "\n}  // extern \"C\"\n";
  s += "\nnamespace {\n" + find_signature_text() + "\n}  // namespace\n";
  s += R"CPP(
struct kiln_model {
  Buffer file;  // weights.bin as read (header, then the payload)
  const unsigned char* w = nullptr;
  Buffer arena_buffer;
  unsigned char* arena = nullptr;
  kiln_kernels::Team* team = nullptr;
  State* state = nullptr;
};

namespace {

// The model's state, made from its weights; false (the error set) when it cannot be.
bool make_state(kiln_model* m) {
  try {
    m->state = new State(Weights{m->w});
    return true;
  } catch (const std::exception& e) {
    return fail(std::string("cannot set up the model: ") + e.what()), false;
  }
}

}  // namespace

kiln_model* kiln_model_create(const char* weights_path) {
  kiln_model* m = new kiln_model;
  if (kThreads > 1) m->team = new kiln_kernels::Team(kThreads);
  int64_t arena = 0;
  for (int64_t a : kArenaBytes) arena = std::max(arena, a);
  m->arena_buffer = alloc_large(static_cast<uint64_t>(arena));
  m->arena = m->arena_buffer.p;
  if (!m->arena) return fail("out of memory for the arena"), kiln_model_destroy(m), nullptr;
)CPP";
  if (p.embed_weights)
    s += R"CPP(  if (!weights_path) {
    const uint64_t bytes = static_cast<uint64_t>(kiln_model_weights_end - kiln_model_weights_blob);
    if (!check_weights(kiln_model_weights_blob, bytes, "the embedded weights")) return kiln_model_destroy(m), nullptr;
    m->w = kiln_model_weights_blob + 64;
    return make_state(m) ? m : (kiln_model_destroy(m), nullptr);
  }
)CPP";
  s += R"CPP(  if (!weights_path) return fail("no weights file given"), kiln_model_destroy(m), nullptr;
  std::FILE* f = std::fopen(weights_path, "rb");
  if (!f) return fail(std::string("cannot open ") + weights_path), kiln_model_destroy(m), nullptr;
  std::fseek(f, 0, SEEK_END);
  const long size = std::ftell(f);
  std::fseek(f, 0, SEEK_SET);
  if (size > 0) m->file = alloc_large(static_cast<uint64_t>(size));
  const bool read = m->file.p && std::fread(m->file.p, 1, static_cast<size_t>(size), f) == static_cast<size_t>(size);
  std::fclose(f);
  if (!read) return fail(std::string("cannot read ") + weights_path), kiln_model_destroy(m), nullptr;
  if (!check_weights(m->file.p, static_cast<uint64_t>(size), weights_path)) return kiln_model_destroy(m), nullptr;
  m->w = m->file.p + 64;
  return make_state(m) ? m : (kiln_model_destroy(m), nullptr);
}

void kiln_model_destroy(kiln_model* m) {
  if (!m) return;
  delete m->state;
  free_large(m->file);
  free_large(m->arena_buffer);
  delete m->team;
  delete m;
}

const char* kiln_model_last_error(void) { return last_error.c_str(); }

int kiln_model_run_dims(kiln_model* m, const int64_t* const* input_dims, const void* const* inputs,
                        void* const* outputs) {
  if (!m || !inputs || !outputs) return fail("kiln_model_run: a null model, inputs or outputs");
  const int sig = find_signature(input_dims);
  if (sig < 0) return -1;
  for (int i = 0; i < KILN_MODEL_INPUTS; ++i)
    if (!inputs[i]) return fail(std::string("input '") + kiln_model_input_names[i] + "' is null");
  for (int i = 0; i < KILN_MODEL_OUTPUTS; ++i)
    if (!outputs[i]) return fail(std::string("output '") + kiln_model_output_names[i] + "' is null");
  Run c{m->arena, m->w, inputs, outputs, m->team, m->state, nullptr};
)CPP";
  if (p.onednn)
    s += "  omp_set_num_threads(kThreads);  // oneDNN's threads for this thread's calls (OpenMP's are per thread)\n";
  s += R"CPP(
  if (!kRun[sig](c)) return fail(c.error ? c.error : "the run failed");
  return 0;
}

int kiln_model_run(kiln_model* m, const void* const* inputs, void* const* outputs) {
  return kiln_model_run_dims(m, kiln_model_input_dims[0], inputs, outputs);
}
)CPP";
  return s;
}

std::string weights_blob_cpp() {
  return R"CPP(// weights_blob.cpp: weights.bin linked into the program (kiln compile --embed-weights), 64-byte
// aligned in read-only data; CMakeLists.txt passes its path as KILN_MODEL_WEIGHTS_FILE.
__asm__(".section .rodata\n"
        ".balign 64\n"
        ".globl kiln_model_weights_blob\n"
        "kiln_model_weights_blob:\n"
        ".incbin \"" KILN_MODEL_WEIGHTS_FILE "\"\n"
        ".globl kiln_model_weights_end\n"
        "kiln_model_weights_end:\n"
        ".previous\n");
)CPP";
}

std::string cmake_lists(const ProjectText& p) {
  const IsaCheck isa = isa_check(p.isa);
  std::string s = "# " + p.source + " compiled by kiln (kiln compile --target cpp): builds with a C++17 compiler" +
                  (p.onednn ? " and oneDNN.\n" : " alone.\n");
  s += R"CM(#   cmake -S . -B build && cmake --build build && build/kiln_model_main
# kiln_model (a static library: model.h) and kiln_model_main (runs the test data beside it).
cmake_minimum_required(VERSION 3.16)
project(kiln_model LANGUAGES CXX)
if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE Release)
endif()
set(CMAKE_CXX_STANDARD 17)
set(CMAKE_CXX_STANDARD_REQUIRED ON)

)CM";
  s += "# The kernels are compiled for the CPU features kiln chose them for.\n";
  s += "set(KILN_MODEL_ISA_FLAGS " + isa.flags + ")\n";
  s += "set(KILN_MODEL_ISA " + isa.features + ")\n";
  s += R"CM(option(KILN_MODEL_SKIP_CPU_CHECK "Do not check that the building CPU has the model's CPU features (cross builds)" OFF)
if(KILN_MODEL_ISA AND NOT KILN_MODEL_SKIP_CPU_CHECK)
  set(checks "1")
  foreach(f ${KILN_MODEL_ISA})
    string(APPEND checks " && __builtin_cpu_supports(\"${f}\")")
  endforeach()
  include(CheckCXXSourceRuns)
  check_cxx_source_runs("int main() { return (${checks}) ? 0 : 1; }" KILN_MODEL_CPU_OK)
  if(NOT KILN_MODEL_CPU_OK)
    message(FATAL_ERROR "This model's kernels were compiled for CPUs with ${KILN_MODEL_ISA}; the CPU building it "
                        "lacks some of them. Compile the model again with kiln on this kind of machine, or pass "
                        "-DKILN_MODEL_SKIP_CPU_CHECK=ON to build for another machine.")
  endif()
endif()

)CM";
  s += "add_library(kiln_model STATIC model.cpp" + std::string(p.embed_weights ? " weights_blob.cpp" : "") + ")\n";
  s += R"CM(find_package(Threads REQUIRED)
target_link_libraries(kiln_model PUBLIC Threads::Threads)
target_include_directories(kiln_model PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_options(kiln_model PRIVATE ${KILN_MODEL_ISA_FLAGS} -fno-math-errno -fno-trapping-math)
# The kernels' vector helpers are inline and never cross an ABI boundary: GCC's note that a
# 64-byte vector argument would pass differently without AVX-512 does not apply.
target_compile_options(kiln_model PRIVATE $<$<CXX_COMPILER_ID:GNU>:-Wno-psabi>)
if(CMAKE_BUILD_TYPE STREQUAL "Release")
  target_compile_options(kiln_model PRIVATE -O3)
endif()
)CM";
  if (p.onednn)
    s += R"CM(# oneDNN (2.x) runs the convolutions kiln's plan put on it (kernels/onednn_conv.h): the one
# dependency (kiln compile --no-onednn: none). Its CMake config, else the library and header.
find_package(dnnl CONFIG QUIET)
if(TARGET DNNL::dnnl)
  target_link_libraries(kiln_model PUBLIC DNNL::dnnl)
else()
  find_path(KILN_MODEL_DNNL_INCLUDE dnnl.hpp)
  find_library(KILN_MODEL_DNNL_LIBRARY dnnl)
  if(NOT KILN_MODEL_DNNL_INCLUDE OR NOT KILN_MODEL_DNNL_LIBRARY)
    message(FATAL_ERROR "This model calls oneDNN 2.x and it was not found (Debian: apt-get install libdnnl-dev; "
                        "elsewhere -DCMAKE_PREFIX_PATH=its prefix). Or compile the model with kiln compile --no-onednn.")
  endif()
  target_include_directories(kiln_model PUBLIC ${KILN_MODEL_DNNL_INCLUDE})
  target_link_libraries(kiln_model PUBLIC ${KILN_MODEL_DNNL_LIBRARY})
endif()
# oneDNN's threads are OpenMP's: the model sets their number (kiln compile --threads).
find_package(OpenMP REQUIRED)
target_link_libraries(kiln_model PUBLIC OpenMP::OpenMP_CXX)
)CM";
  if (p.embed_weights)
    s += R"CM(set_source_files_properties(weights_blob.cpp PROPERTIES
  COMPILE_DEFINITIONS "KILN_MODEL_WEIGHTS_FILE=\"${CMAKE_CURRENT_SOURCE_DIR}/weights.bin\""
  OBJECT_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/weights.bin)
)CM";
  s += R"CM(
add_executable(kiln_model_main main.cpp)
target_link_libraries(kiln_model_main PRIVATE kiln_model)
target_compile_definitions(kiln_model_main PRIVATE KILN_MODEL_DIR="${CMAKE_CURRENT_SOURCE_DIR}")
option(KILN_MODEL_PROFILE "Time every instruction; print the totals at exit" OFF)
if(KILN_MODEL_PROFILE)
  target_compile_definitions(kiln_model PRIVATE KILN_MODEL_PROFILE)
endif()
)CM";
  return s;
}

}  // namespace kiln::codegen::cpp
