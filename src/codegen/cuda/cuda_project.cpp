#include "codegen/cuda/cuda_project.h"

#include <kiln/error.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <utility>

#include "codegen/cpp/code_text.h"
#include "codegen/cpp/cpp_project.h"
#include "codegen/cpp/emit_context.h"
#include "codegen/cpp/project_files.h"
#include "codegen/cuda/cuda_emitter.h"
#include "codegen/stream_plan.h"

namespace kiln::codegen {

namespace {

namespace fs = std::filesystem;

const char* const kKernelFiles[] = {"cuda/device.cuh", "cuda/blas.cuh",      "cuda/conv.cuh",
                                    "cuda/pool.cuh",   "cuda/host_shim.h", "cuda/cudnn_shim.h"};

int64_t tensor_bytes(const cpp::TensorDecl& t) {
  int64_t n = static_cast<int64_t>(dtype_size(t.dtype));
  for (int64_t d : t.dims) n *= d;
  return n;
}

// model.h: the C++ target's API and the device one.
std::string cuda_model_h(const cpp::ProjectText& t) {
  std::string s = cpp::model_h(t);
  const std::string from = "(kiln compile --target cpp)";
  if (auto at = s.find(from); at != std::string::npos) s.replace(at, from.size(), "(kiln compile --target cuda)");
  const std::string device = R"H(// The CUDA target. kiln_model_run copies the inputs from host memory, runs and copies the outputs
// back. The _device variants take device pointers and leave the results on the device; both
// return once the run has finished. kiln_model_device_io gives the model's own device buffers
// for signature `signature` (inputs then outputs): a run on exactly those replays the run's
// CUDA graph, other pointers launch the kernels one by one. kiln_model_stream: the model's
// cudaStream_t.
int kiln_model_run_device(kiln_model* model, const void* const* inputs, void* const* outputs);
int kiln_model_run_dims_device(kiln_model* model, const int64_t* const* input_dims, const void* const* inputs,
                               void* const* outputs);
int kiln_model_device_io(kiln_model* model, int signature, const void* const** inputs, void* const** outputs);
void* kiln_model_stream(kiln_model* model);

)H";
  const std::string end = "#ifdef __cplusplus\n}\n#endif\n";
  const size_t at = s.rfind(end);
  if (at == std::string::npos) throw Error("code generation: model.h has no closing extern \"C\"");
  s.insert(at, device);
  return s;
}

std::string int_array(const std::string& decl, const std::vector<int64_t>& v) {
  std::string s = decl + " = {";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]) + "ll";
  return s + "};\n";
}

// Which instructions of a signature another stream waits for: each one's event (-1: none), and
// how many.
std::pair<std::vector<int>, int> waited_on(const std::vector<StreamStep>& plan) {
  std::vector<int> event(plan.size(), -1);
  for (const StreamStep& st : plan)
    for (int w : st.waits) event[static_cast<size_t>(w)] = 0;
  int n = 0;
  for (int& e : event)
    if (e == 0) e = n++;
  return {event, n};
}

// run_sN's body: each instruction on its stream after its waits, an event recorded after each
// one another stream waits for; the streams forked from stream 0 first and joined at the end.
std::string run_calls(const std::vector<std::string>& names, const std::vector<StreamStep>& plan, int& at) {
  const std::vector<int> event = waited_on(plan).first;
  int streams = 1;
  for (const StreamStep& st : plan) streams = std::max(streams, st.stream + 1);
  std::string s;
  if (streams > 1) s += "  if (!c.fork(" + std::to_string(streams) + ")) return false;\n";
  int current = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    const StreamStep& st = plan[i];
    if (st.stream >= 0 && st.stream != current) {
      s += "  c.on(" + std::to_string(st.stream) + ");\n";
      current = st.stream;
    }
    for (int w : st.waits) s += "  if (!c.wait(" + std::to_string(event[static_cast<size_t>(w)]) + ")) return false;\n";
    s += "  KILN_CALL(" + std::to_string(at++) + ", " + names[i] + ");\n";
    if (event[i] >= 0) s += "  if (!c.record(" + std::to_string(event[i]) + ")) return false;\n";
  }
  s += streams > 1 ? "  return c.join(" + std::to_string(streams) + ");\n" : "  return true;\n";
  return s;
}

std::string model_cu(const cpp::ProjectText& t, const cuda::CudaEmitter& e) {
  const auto& sigs = *t.sigs;
  std::string s = "// model.cu: " + t.source +
                  " compiled by kiln (kiln compile --target cuda). Each instruction of the\n"
                  "// executable plan is a host function below, named after its node, launching the kernels\n"
                  "// generated for it (above it) or cuBLAS; run_sN calls those of input signature N in order.\n"
                  "// Tensors live in one device arena at fixed offsets, weights in weights.bin, uploaded once.\n"
                  "// nvcc compiles it for the GPU; with KILN_CUDA_ON_CPU the same file is host C++\n"
                  "// (kernels/cuda/host_shim.h) that checks its index arithmetic without a GPU.\n";
  s += R"CU(#include "model.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cuda/device.cuh"
#include "kernels/cuda/pool.cuh"
#include "model_cpu.h"

namespace {

// An instruction placed on the CPU: its function in model_cpu.cpp, called on the stream.
struct HostCall {
  bool (*fn)(kiln_cpu_run&);
  kiln_cpu_run* run;
  bool* failed;  // set when fn fails; the run then fails with run->error
};

)CU";
  if (!e.host_calls.empty())
    s += R"CU(
void host_call(void* p) {
  HostCall* h = static_cast<HostCall*>(p);
  if (!*h->failed && !h->fn(*h->run)) *h->failed = true;
}
)CU";
  int events = 0;
  for (const auto& plan : e.schedules) events = std::max(events, waited_on(plan).second);
  s += "\n// Streams of the run (independent branches run concurrently on them) and the events that\n"
       "// order them: one per instruction another stream waits for, then a fork and joins.\n";
  s += "constexpr int kStreams = " + std::to_string(e.streams) + ";\n";
  s += "constexpr int kEvents = " + std::to_string(events) + ";\n";
  s += R"CU(
// One run: where the arena, the weights and the tensors are on the device.
struct Run {
  unsigned char* arena;
  const unsigned char* w;
  const void* const* in;
  void* const* out;
  cudaStream_t stream;
  const kiln_cuda::Blas* blas;
  const kiln_cuda::Dnn* dnn;
  const kiln_cuda::Conv* convs;  // the model's convolutions, set up at kiln_model_create
  const kiln_cuda::Pool* pools;  // and pools
  void* workspace;               // im2col rows or cuDNN's workspace
  int* status;                   // set by a kernel that meets bad data (an index out of range)
  kiln_cpu_run* host;            // the host mirror the CPU instructions run on
  HostCall* host_calls;
  const char* error;
  // Every stream's own handles and workspace; on(s) makes stream s the one launches go to.
  cudaStream_t* streams;
  const kiln_cuda::Blas* blases;
  const kiln_cuda::Dnn* dnns;
  void* const* workspaces;
  cudaEvent_t* events;  // kEvents, then the fork and a join per stream
  bool fail(const char* e) {
    error = e;
    return false;
  }
)CU";
  if (e.streams > 1)
    s += R"CU(  void on(int s) {
    stream = streams[s];
    blas = &blases[s];
    dnn = &dnns[s];
    workspace = workspaces[s];
  }
)CU";
  if (events > 0)  // nvcc warns of (and -Werror fails on) members never called
    s += R"CU(  bool record(int e) { return cudaEventRecord(events[e], stream) == cudaSuccess || fail("recording an event"); }
  bool wait(int e) { return cudaStreamWaitEvent(stream, events[e], 0) == cudaSuccess || fail("waiting for an event"); }
)CU";
  if (e.streams > 1)
    s += R"CU(  // Streams 1..n-1 start after what stream 0 holds (in a capture, this brings them into it);
  // join: stream 0 waits for each of them, so the run ends when all have.
  bool fork(int n) {
    on(0);
    if (cudaEventRecord(events[kEvents], stream) != cudaSuccess) return fail("starting the streams");
    for (int k = 1; k < n; ++k)
      if (cudaStreamWaitEvent(streams[k], events[kEvents], 0) != cudaSuccess) return fail("starting a stream");
    return true;
  }
  bool join(int n) {
    for (int k = 1; k < n; ++k)
      if (cudaEventRecord(events[kEvents + k], streams[k]) != cudaSuccess ||
          cudaStreamWaitEvent(streams[0], events[kEvents + k], 0) != cudaSuccess)
        return fail("joining the streams");
    on(0);
    return true;
  }
)CU";
  if (!e.host_calls.empty())
    s += R"CU(  // Copies around a CPU instruction, and its call, in stream order.
  bool to_host(const void* d, void* h, int64_t bytes) {
    return cudaMemcpyAsync(h, d, static_cast<size_t>(bytes), cudaMemcpyDeviceToHost, stream) == cudaSuccess ||
           fail("copying to the host");
  }
  bool to_device(const void* h, void* d, int64_t bytes) {
    return cudaMemcpyAsync(d, h, static_cast<size_t>(bytes), cudaMemcpyHostToDevice, stream) == cudaSuccess ||
           fail("copying to the device");
  }
  bool on_host(int call) {
    return cudaLaunchHostFunc(stream, host_call, &host_calls[call]) == cudaSuccess || fail("calling a CPU instruction");
  }
)CU";
  s += R"CU(};

// With KILN_MODEL_PROFILE defined (cmake -DKILN_MODEL_PROFILE=ON), runs launch instruction by
// instruction (no CUDA graph), every instruction timed on the GPU with events; the totals are
// printed to stderr at exit, slowest first.
#if defined(KILN_MODEL_PROFILE) && !defined(KILN_CUDA_ON_CPU)
struct Profile {
  struct Entry {
    const char* name;
    double ms;
    long calls;
  };
  Entry entries[4096];
  int n = 0;
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  ~Profile() {
    std::sort(entries, entries + n, [](const Entry& a, const Entry& b) { return a.ms > b.ms; });
    double total = 0;
    for (int i = 0; i < n; ++i) total += entries[i].ms;
    std::fprintf(stderr, "%-56s %10s %7s %6s\n", "instruction", "total ms", "calls", "%");
    for (int i = 0; i < n; ++i)
      std::fprintf(stderr, "%-56s %10.3f %7ld %6.1f\n", entries[i].name, entries[i].ms, entries[i].calls,
                   100.0 * entries[i].ms / total);
  }
  bool call(int at, const char* name, bool (*f)(Run&), Run& c) {
    if (!e0) cudaEventCreate(&e0), cudaEventCreate(&e1);
    cudaEventRecord(e0, c.stream);
    const bool ok = f(c);
    cudaEventRecord(e1, c.stream);
    cudaEventSynchronize(e1);
    float ms = 0.f;
    cudaEventElapsedTime(&ms, e0, e1);
    if (at < 4096) {
      n = std::max(n, at + 1);
      entries[at].name = name;
      entries[at].ms += ms;
      ++entries[at].calls;
    }
    return ok;
  }
} profile;
#define KILN_CALL(at, f) \
  if (!profile.call(at, #f, f, c)) return false
#else
#define KILN_CALL(at, f) \
  if (!f(c)) return false
#endif

)CU";
  int at = 0;
  for (size_t g = 0; g < sigs.size(); ++g) {
    for (const std::string& f : sigs[g].functions) s += f + "\n";
    s += "bool run_s" + std::to_string(g) + "(Run& c) {\n" + run_calls(sigs[g].names, e.schedules[g], at) + "}\n\n";
  }
  s += "// The convolutions' shapes, set up as kiln_cuda::Conv at kiln_model_create (c.convs[i]).\n";
  s += "constexpr int kConvs = " + std::to_string(e.convs.size()) + ";\n";
  s += "constexpr kiln_kernels::ConvShape kConvShapes[kConvs > 0 ? kConvs : 1] = {";
  for (size_t k = 0; k < e.convs.size(); ++k) s += std::string(k ? ",\n    " : "\n    ") + e.convs[k];
  s += e.convs.empty() ? "{}};\n" : "};\n";
  s += "// The pools, set up as kiln_cuda::Pool at kiln_model_create (c.pools[i]).\n";
  s += "constexpr int kPools = " + std::to_string(e.pools.size()) + ";\n";
  s += "constexpr kiln_cuda::PoolSpec kPoolSpecs[kPools > 0 ? kPools : 1] = {";
  for (size_t k = 0; k < e.pools.size(); ++k) s += std::string(k ? ",\n    " : "\n    ") + e.pools[k];
  s += e.pools.empty() ? "{}};\n" : "};\n";
  s += "// The instructions placed on the CPU (model_cpu.cpp), c.on_host(i).\n";
  s += "constexpr int kHostCalls = " + std::to_string(e.host_calls.size()) + ";\n";
  s += "bool (*const kHostFns[kHostCalls > 0 ? kHostCalls : 1])(kiln_cpu_run&) = {";
  for (size_t k = 0; k < e.host_calls.size(); ++k) s += (k ? ", " : "") + e.host_calls[k];
  s += e.host_calls.empty() ? "nullptr};\n" : "};\n";
  std::vector<int64_t> arena, in_bytes, out_bytes, in_max(sigs[0].inputs.size()), out_max(sigs[0].outputs.size());
  for (const auto& sig : sigs) {
    arena.push_back(sig.arena_bytes);
    for (size_t i = 0; i < sig.inputs.size(); ++i) {
      in_bytes.push_back(tensor_bytes(sig.inputs[i]));
      in_max[i] = std::max(in_max[i], in_bytes.back());
    }
    for (size_t i = 0; i < sig.outputs.size(); ++i) {
      out_bytes.push_back(tensor_bytes(sig.outputs[i]));
      out_max[i] = std::max(out_max[i], out_bytes.back());
    }
  }
  s += int_array("constexpr int64_t kArenaBytes[KILN_MODEL_SIGNATURES]", arena);
  s += int_array("constexpr int64_t kInputBytes[KILN_MODEL_SIGNATURES * KILN_MODEL_INPUTS]", in_bytes);
  s += int_array("constexpr int64_t kOutputBytes[KILN_MODEL_SIGNATURES * KILN_MODEL_OUTPUTS]", out_bytes);
  s += int_array("constexpr int64_t kInputMax[KILN_MODEL_INPUTS]", in_max);
  s += int_array("constexpr int64_t kOutputMax[KILN_MODEL_OUTPUTS]", out_max);
  s += "constexpr int64_t kScratchBytes = " + std::to_string(e.scratch_bytes) + "ll;\n";
  s += "bool (*const kRun[KILN_MODEL_SIGNATURES])(Run&) = {";
  for (size_t g = 0; g < sigs.size(); ++g) s += (g ? ", " : "") + std::string("run_s") + std::to_string(g);
  s += "};\nconstexpr uint64_t kWeightsBytes = " + std::to_string(t.weights_bytes) + "ull;\n";
  s += "constexpr uint64_t kWeightsChecksum = " + std::to_string(t.weights_checksum) + "ull;\n\n";
  s += cpp::weights_check_text();
  s += "}  // namespace\n\nextern \"C\" {\n\n" + cpp::tensor_tables(sigs, true) + cpp::tensor_tables(sigs, false) +
       "\n}  // extern \"C\"\n\nnamespace {\n" + cpp::find_signature_text() + "\n}  // namespace\n";
  s += R"CU(
struct kiln_model {
  unsigned char* arena = nullptr;
  unsigned char* w = nullptr;
  int* status = nullptr;
  void* in[KILN_MODEL_INPUTS > 0 ? KILN_MODEL_INPUTS : 1] = {};    // the model's device buffers
  void* out[KILN_MODEL_OUTPUTS > 0 ? KILN_MODEL_OUTPUTS : 1] = {};
  cudaStream_t streams[kStreams] = {};  // streams[0]: the model's (kiln_model_stream)
  kiln_cuda::Blas blas[kStreams];
  kiln_cuda::Dnn dnn[kStreams];
  void* workspaces[kStreams] = {};  // im2col rows or cuDNN's workspace, per stream
  cudaEvent_t events[kEvents + kStreams] = {};
  kiln_cuda::Conv convs[kConvs > 0 ? kConvs : 1];
  kiln_cuda::Pool pools[kPools > 0 ? kPools : 1];
  int blas_made = 0, dnn_made = 0;
  // The host mirror for the CPU instructions (kHostCalls > 0): the arena at the same offsets,
  // the weights, the inputs and outputs.
  unsigned char* host_arena = nullptr;
  unsigned char* host_weights = nullptr;
  void* host_in[KILN_MODEL_INPUTS > 0 ? KILN_MODEL_INPUTS : 1] = {};
  void* host_out[KILN_MODEL_OUTPUTS > 0 ? KILN_MODEL_OUTPUTS : 1] = {};
  kiln_cpu_run cpu_run{};
  HostCall host_calls[kHostCalls > 0 ? kHostCalls : 1] = {};
  bool cpu_failed = false;
#if !defined(KILN_CUDA_ON_CPU)
  cudaGraphExec_t graph[KILN_MODEL_SIGNATURES] = {};  // run_sN on in/out, captured at its first run
#endif
};

namespace {

bool cuda_ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  fail(std::string(what) + ": " + cudaGetErrorString(e));
  return false;
}

bool device_alloc(void** p, int64_t bytes, const char* what) {
  return cuda_ok(cudaMalloc(p, static_cast<size_t>(std::max<int64_t>(bytes, 256))), what);
}

// Runs signature sig on device pointers and waits for it; -1 with the error set on failure. A run
// on the model's own buffers replays its CUDA graph (not when profiling: the events time
// instructions launched one by one).
int run_on_device(kiln_model* m, int sig, const void* const* inputs, void* const* outputs) {
  Run c{m->arena, m->w, inputs, outputs, m->streams[0], &m->blas[0], &m->dnn[0], m->convs, m->pools, m->workspaces[0], m->status,
        &m->cpu_run, m->host_calls, nullptr, m->streams, m->blas, m->dnn, m->workspaces, m->events};
#if !defined(KILN_CUDA_ON_CPU) && !defined(KILN_MODEL_PROFILE)
  bool own = true;
  for (int i = 0; i < KILN_MODEL_INPUTS; ++i) own = own && inputs[i] == m->in[i];
  for (int i = 0; i < KILN_MODEL_OUTPUTS; ++i) own = own && outputs[i] == m->out[i];
  if (own && !m->graph[sig]) {
    cudaGraph_t g = nullptr;
    if (!cuda_ok(cudaStreamBeginCapture(m->streams[0], cudaStreamCaptureModeThreadLocal), "capturing the run")) return -1;
    const bool ok = kRun[sig](c);
    const cudaError_t end = cudaStreamEndCapture(m->streams[0], &g);
    if (!ok) return fail(c.error ? c.error : "the run failed");
    if (!cuda_ok(end, "capturing the run")) return -1;
    const cudaError_t made = cudaGraphInstantiate(&m->graph[sig], g, 0);
    cudaGraphDestroy(g);
    if (!cuda_ok(made, "instantiating the run's graph")) return -1;
  }
  if (own) {
    if (!cuda_ok(cudaGraphLaunch(m->graph[sig], m->streams[0]), "launching the run's graph")) return -1;
  } else if (!kRun[sig](c)) {
    return fail(c.error ? c.error : "the run failed");
  }
#else
  if (!kRun[sig](c)) return fail(c.error ? c.error : "the run failed");
#endif
  int status = 0;
  if (!cuda_ok(cudaGetLastError(), "a kernel launch")) return -1;
  if (!cuda_ok(cudaMemcpyAsync(&status, m->status, sizeof(int), cudaMemcpyDeviceToHost, m->streams[0]), "reading the status"))
    return -1;
  if (!cuda_ok(cudaStreamSynchronize(m->streams[0]), "the run")) return -1;
  if (m->cpu_failed) {
    m->cpu_failed = false;
    return fail(m->cpu_run.error ? m->cpu_run.error : "an instruction on the CPU failed");
  }
  if (status != 0) {
    cudaMemsetAsync(m->status, 0, sizeof(int), m->streams[0]);
    cudaStreamSynchronize(m->streams[0]);
    return fail("an index out of range (Gather)");
  }
  return 0;
}

// 64-byte aligned host memory, as the C++ target's kernels expect.
void* host_alloc(int64_t bytes) {
  return std::aligned_alloc(64, static_cast<size_t>((std::max<int64_t>(bytes, 64) + 63) / 64 * 64));
}

bool check_pointers(const void* const* inputs, void* const* outputs) {
  if (!inputs || !outputs) return fail("kiln_model_run: null inputs or outputs"), false;
  for (int i = 0; i < KILN_MODEL_INPUTS; ++i)
    if (!inputs[i]) return fail(std::string("input '") + kiln_model_input_names[i] + "' is null"), false;
  for (int i = 0; i < KILN_MODEL_OUTPUTS; ++i)
    if (!outputs[i]) return fail(std::string("output '") + kiln_model_output_names[i] + "' is null"), false;
  return true;
}

}  // namespace

kiln_model* kiln_model_create(const char* weights_path) {
  kiln_model* m = new kiln_model;
  int64_t arena = 0;
  for (int64_t a : kArenaBytes) arena = std::max(arena, a);
  for (int k = 0; k < kStreams; ++k) {
    if (!cuda_ok(cudaStreamCreate(&m->streams[k]), "creating a stream")) return kiln_model_destroy(m), nullptr;
    if (!m->blas[k].create(m->streams[k])) return fail("cuBLAS could not be initialized"), kiln_model_destroy(m), nullptr;
    m->blas_made = k + 1;
    if (!m->dnn[k].create(m->streams[k])) return fail("cuDNN could not be initialized"), kiln_model_destroy(m), nullptr;
    m->dnn_made = k + 1;
  }
  for (cudaEvent_t& e : m->events)
    if (!cuda_ok(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "creating an event"))
      return kiln_model_destroy(m), nullptr;
  int64_t workspace = kScratchBytes;
  for (int k = 0; k < kConvs; ++k) {
    int64_t bytes = 0;
    if (const char* e = m->convs[k].init(kConvShapes[k], m->dnn[0], &bytes)) return fail(e), kiln_model_destroy(m), nullptr;
    workspace = std::max(workspace, bytes);
  }
  for (int k = 0; k < kPools; ++k)
    if (const char* e = m->pools[k].init(kPoolSpecs[k], m->dnn[0])) return fail(e), kiln_model_destroy(m), nullptr;
  for (void*& w : m->workspaces)
    if (!device_alloc(&w, workspace, "allocating a workspace")) return kiln_model_destroy(m), nullptr;
  if (!device_alloc(reinterpret_cast<void**>(&m->arena), arena, "allocating the arena") ||
      !device_alloc(reinterpret_cast<void**>(&m->status), sizeof(int), "allocating the status word") ||
      !device_alloc(reinterpret_cast<void**>(&m->w), static_cast<int64_t>(kWeightsBytes), "allocating the weights"))
    return kiln_model_destroy(m), nullptr;
  for (int i = 0; i < KILN_MODEL_INPUTS; ++i)
    if (!device_alloc(&m->in[i], kInputMax[i], "allocating an input buffer")) return kiln_model_destroy(m), nullptr;
  for (int i = 0; i < KILN_MODEL_OUTPUTS; ++i)
    if (!device_alloc(&m->out[i], kOutputMax[i], "allocating an output buffer")) return kiln_model_destroy(m), nullptr;
  if (!cuda_ok(cudaMemsetAsync(m->status, 0, sizeof(int), m->streams[0]), "clearing the status word"))
    return kiln_model_destroy(m), nullptr;
  if (!weights_path) return fail("no weights file given"), kiln_model_destroy(m), nullptr;
  std::FILE* f = std::fopen(weights_path, "rb");
  if (!f) return fail(std::string("cannot open ") + weights_path), kiln_model_destroy(m), nullptr;
  std::fseek(f, 0, SEEK_END);
  const long size = std::ftell(f);
  std::fseek(f, 0, SEEK_SET);
  std::vector<unsigned char> file(size > 0 ? static_cast<size_t>(size) : 0);
  const bool read = size > 0 && std::fread(file.data(), 1, file.size(), f) == file.size();
  std::fclose(f);
  if (!read) return fail(std::string("cannot read ") + weights_path), kiln_model_destroy(m), nullptr;
  if (!check_weights(file.data(), file.size(), weights_path)) return kiln_model_destroy(m), nullptr;
  if (!cuda_ok(cudaMemcpy(m->w, file.data() + 64, kWeightsBytes, cudaMemcpyHostToDevice), "uploading the weights"))
    return kiln_model_destroy(m), nullptr;
  if (kHostCalls > 0) {
    m->host_arena = static_cast<unsigned char*>(host_alloc(arena));
    m->host_weights = static_cast<unsigned char*>(host_alloc(static_cast<int64_t>(kWeightsBytes)));
    bool ok = m->host_arena && m->host_weights;
    for (int i = 0; i < KILN_MODEL_INPUTS; ++i) ok = ok && (m->host_in[i] = host_alloc(kInputMax[i]));
    for (int i = 0; i < KILN_MODEL_OUTPUTS; ++i) ok = ok && (m->host_out[i] = host_alloc(kOutputMax[i]));
    if (!ok) return fail("out of host memory for the CPU instructions' mirror"), kiln_model_destroy(m), nullptr;
    std::memcpy(m->host_weights, file.data() + 64, kWeightsBytes);
    m->cpu_run = {m->host_arena, m->host_weights, m->host_in, m->host_out, nullptr};
    for (int k = 0; k < kHostCalls; ++k) m->host_calls[k] = {kHostFns[k], &m->cpu_run, &m->cpu_failed};
  }
  return m;
}

void kiln_model_destroy(kiln_model* m) {
  if (!m) return;
#ifndef KILN_CUDA_ON_CPU
  for (cudaGraphExec_t g : m->graph)
    if (g) cudaGraphExecDestroy(g);
#endif
  for (void* p : m->in) cudaFree(p);
  for (void* p : m->out) cudaFree(p);
  std::free(m->host_arena);
  std::free(m->host_weights);
  for (void* p : m->host_in) std::free(p);
  for (void* p : m->host_out) std::free(p);
  cudaFree(m->arena);
  cudaFree(m->w);
  for (void* w : m->workspaces) cudaFree(w);
  cudaFree(m->status);
  for (kiln_cuda::Conv& conv : m->convs) conv.destroy();
  for (kiln_cuda::Pool& pool : m->pools) pool.destroy();
  for (int k = 0; k < m->dnn_made; ++k) m->dnn[k].destroy();
  for (int k = 0; k < m->blas_made; ++k) m->blas[k].destroy();
  for (cudaEvent_t e : m->events)
    if (e) cudaEventDestroy(e);
  for (cudaStream_t st : m->streams)
    if (st) cudaStreamDestroy(st);
  delete m;
}

const char* kiln_model_last_error(void) { return last_error.c_str(); }

int kiln_model_run_dims(kiln_model* m, const int64_t* const* input_dims, const void* const* inputs,
                        void* const* outputs) {
  if (!m) return fail("kiln_model_run: a null model");
  if (!check_pointers(inputs, outputs)) return -1;
  const int sig = find_signature(input_dims);
  if (sig < 0) return -1;
  for (int i = 0; i < KILN_MODEL_INPUTS; ++i)
    if (!cuda_ok(cudaMemcpyAsync(m->in[i], inputs[i], static_cast<size_t>(kInputBytes[sig * KILN_MODEL_INPUTS + i]),
                                 cudaMemcpyHostToDevice, m->streams[0]), "copying an input to the device"))
      return -1;
  if (run_on_device(m, sig, m->in, m->out) != 0) return -1;
  for (int i = 0; i < KILN_MODEL_OUTPUTS; ++i)
    if (!cuda_ok(cudaMemcpyAsync(outputs[i], m->out[i], static_cast<size_t>(kOutputBytes[sig * KILN_MODEL_OUTPUTS + i]),
                                 cudaMemcpyDeviceToHost, m->streams[0]), "copying an output from the device"))
      return -1;
  return cuda_ok(cudaStreamSynchronize(m->streams[0]), "copying the outputs") ? 0 : -1;
}

int kiln_model_run(kiln_model* m, const void* const* inputs, void* const* outputs) {
  return kiln_model_run_dims(m, kiln_model_input_dims[0], inputs, outputs);
}

int kiln_model_run_dims_device(kiln_model* m, const int64_t* const* input_dims, const void* const* inputs,
                               void* const* outputs) {
  if (!m) return fail("kiln_model_run: a null model");
  if (!check_pointers(inputs, outputs)) return -1;
  const int sig = find_signature(input_dims);
  return sig < 0 ? -1 : run_on_device(m, sig, inputs, outputs);
}

int kiln_model_run_device(kiln_model* m, const void* const* inputs, void* const* outputs) {
  return kiln_model_run_dims_device(m, kiln_model_input_dims[0], inputs, outputs);
}

int kiln_model_device_io(kiln_model* m, int signature, const void* const** inputs, void* const** outputs) {
  if (!m || signature < 0 || signature >= KILN_MODEL_SIGNATURES) return fail("kiln_model_device_io: no such signature");
  *inputs = m->in;
  *outputs = m->out;
  return 0;
}

void* kiln_model_stream(kiln_model* m) { return m ? static_cast<void*>(m->streams[0]) : nullptr; }
)CU";
  return s;
}

// model_cpu.h: what model.cu and model_cpu.cpp share of the instructions placed on the CPU.
std::string model_cpu_h(const cuda::CudaEmitter& e) {
  std::string s = R"H(// model_cpu.h: the instructions of this model placed on the CPU (no CUDA kernel for their op),
// in model_cpu.cpp; model.cu copies their operands to the host mirror below and calls them.
#pragma once

struct kiln_cpu_run {
  unsigned char* arena;     // the host mirror of the device arena, at the same offsets
  const unsigned char* w;   // the weights
  void* const* in;          // host mirrors of the model's inputs
  void* const* out;         // and outputs
  const char* error;        // set by a call that fails
};

)H";
  for (const std::string& f : e.host_calls) s += "bool " + f + "(kiln_cpu_run& r);\n";
  return s;
}

// model_cpu.cpp: the C++ target's functions for the CPU instructions, on its kernels/.
std::string model_cpu_cpp(const cpp::ProjectText& t, const cuda::CudaEmitter& e, const std::set<std::string>& kernels) {
  std::string s = "// model_cpu.cpp: the instructions of " + t.source +
                  " that run on the CPU (the CUDA target has no kernel\n"
                  "// for their op), written as the C++ target writes them (kiln compile --target cpp).\n";
  s += R"CPP(#include "model_cpu.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

)CPP";
  for (const std::string& k : kernels) s += "#include \"kernels/" + k + "\"\n";
  s += R"CPP(
namespace {

struct Run {
  unsigned char* arena;
  const unsigned char* w;
  const void* const* in;
  void* const* out;
  kiln_kernels::Team* team;  // one thread
  const char* error;
  bool fail(const char* e) {
    error = e;
    return false;
  }
};

}  // namespace

)CPP";
  for (const std::string& f : e.cpu_functions) s += f + "\n";
  return s;
}

std::string cuda_cmake_lists(const cpp::ProjectText& t, bool on_cpu, bool cpu_part) {
  std::string s = "# " + t.source + " compiled by kiln (kiln compile --target cuda): builds with nvcc and cuBLAS.\n";
  s += R"CM(#   cmake -S . -B build && cmake --build build && build/kiln_model_main
# kiln_model (a static library: model.h) and kiln_model_main (runs the test data beside it).
# -DKILN_MODEL_ON_CPU=ON compiles the same model.cu as host C++ (kernels/cuda/host_shim.h): no
# GPU or CUDA needed, slow, for checking the generated kernels' arithmetic.
cmake_minimum_required(VERSION 3.18)
)CM";
  s += std::string("option(KILN_MODEL_ON_CPU \"Compile model.cu as host C++ through kernels/cuda/host_shim.h\" ") +
       (on_cpu ? "ON" : "OFF") + ")\n";
  s += std::string("# The instructions placed on the CPU: C++ (model_cpu.cpp), none when empty.\nset(KILN_MODEL_CPU_PART") +
       (cpu_part ? " model_cpu.cpp" : "") + ")\n";
  s += R"CM(if(KILN_MODEL_ON_CPU)
  project(kiln_model LANGUAGES CXX)
else()
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES native)
  endif()
  project(kiln_model LANGUAGES CXX CUDA)
  find_package(CUDAToolkit REQUIRED)
endif()
if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE Release)
endif()
set(CMAKE_CXX_STANDARD 17)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CUDA_STANDARD 17)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)

add_library(kiln_model STATIC model.cu ${KILN_MODEL_CPU_PART})
target_include_directories(kiln_model PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
# -DKILN_MODEL_CUDNN=ON: cuDNN runs the convolutions and pools it can express
# (kernels/cuda/conv.cuh, pool.cuh); by default im2col and cuBLAS run the convolutions and a
# kernel the pools. -DCUDNN_ROOT=DIR: where cuDNN's include/ and lib/ are, if not beside CUDA's.
# With KILN_MODEL_ON_CPU, cuDNN's calls run as loops (kernels/cuda/cudnn_shim.h).
option(KILN_MODEL_CUDNN "Run convolutions and pools on cuDNN" OFF)
if(KILN_MODEL_ON_CPU)
  set_source_files_properties(model.cu PROPERTIES LANGUAGE CXX)
  set_source_files_properties(model.cu PROPERTIES COMPILE_OPTIONS "-x;c++")
  target_compile_definitions(kiln_model PRIVATE KILN_CUDA_ON_CPU)
  if(KILN_MODEL_CUDNN)
    target_compile_definitions(kiln_model PRIVATE KILN_CUDA_CUDNN)
  endif()
else()
  target_compile_options(kiln_model PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr -Xcompiler=-Wall,-Wextra>)
  target_link_libraries(kiln_model PUBLIC CUDA::cudart CUDA::cublas)
  if(KILN_MODEL_CUDNN)
    find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDNN_ROOT}/include ${CUDAToolkit_INCLUDE_DIRS})
    find_library(CUDNN_LIBRARY NAMES cudnn libcudnn.so.9
                 HINTS ${CUDNN_ROOT}/lib ${CUDNN_ROOT}/lib64 ${CUDAToolkit_LIBRARY_DIR})
    if(NOT CUDNN_INCLUDE_DIR OR NOT CUDNN_LIBRARY)
      message(FATAL_ERROR "cuDNN not found: give -DCUDNN_ROOT=DIR, or -DKILN_MODEL_CUDNN=OFF to run every "
                          "convolution on im2col and cuBLAS")
    endif()
    target_include_directories(kiln_model PRIVATE ${CUDNN_INCLUDE_DIR})
    target_link_libraries(kiln_model PUBLIC ${CUDNN_LIBRARY})
    target_compile_definitions(kiln_model PRIVATE KILN_CUDA_CUDNN)
  endif()
endif()
option(KILN_MODEL_PROFILE "Time every instruction on the GPU; print the totals at exit" OFF)
if(KILN_MODEL_PROFILE)
  target_compile_definitions(kiln_model PRIVATE KILN_MODEL_PROFILE)
endif()

if(KILN_MODEL_CPU_PART)
  # Portable: no instruction-set flags (the GPU machine's CPU may not be the compiling one's),
  # so GCC spells the kernels' 16-float vectors with narrower ones (-Wno-psabi: only inline
  # functions of this one file pass them).
  set_source_files_properties(model_cpu.cpp PROPERTIES COMPILE_OPTIONS "-fno-math-errno;-fno-trapping-math;-Wno-psabi")
  find_package(Threads REQUIRED)
  target_link_libraries(kiln_model PUBLIC Threads::Threads)
endif()

add_executable(kiln_model_main main.cpp)
target_link_libraries(kiln_model_main PRIVATE kiln_model)
target_compile_definitions(kiln_model_main PRIVATE KILN_MODEL_DIR="${CMAKE_CURRENT_SOURCE_DIR}" KILN_MODEL_DEVICE_API)
)CM";
  return s;
}

}  // namespace

const std::vector<std::string>& cuda_disabled_passes() {
  // The CUDA attention kernel (emit_attention, cuda_rows.cpp) reads dense heads: the head
  // transposes stay instructions of their own there.
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v = cpp_disabled_passes(false, false);
    v.push_back("attention_layout");
    return v;
  }();
  return names;
}

std::vector<plan::ExecutablePlan> place_for_cuda(const std::vector<PlanSource>& plans, int streams) {
  std::vector<plan::ExecutablePlan> placed;
  for (const PlanSource& source : plans)
    placed.push_back(place_on_devices(*source.plan, cuda::cuda_devices(source), "cuda"));
  assign_streams(placed, plans, streams);
  return placed;
}

CudaProjectStats write_cuda_project(const std::vector<PlanSource>& plans, const CudaOptions& o, const std::string& dir) {
  if (plans.empty()) throw Error("code generation: no compiled plan to emit");
  CudaProjectStats st;
  st.placed = place_for_cuda(plans, o.streams);
  cuda::CudaEmitter e;
  for (size_t g = 0; g < plans.size(); ++g) {
    PlanSource source = plans[g];
    source.plan = &st.placed[g];
    walk_plan(static_cast<int>(g), source, e);
  }

  cpp::ProjectText t;
  t.source = o.source.empty() ? "a model" : o.source;
  t.sigs = &e.signatures;
  t.weights_bytes = static_cast<int64_t>(e.weights.payload().size());
  t.weights_checksum = weights_checksum(e.weights.payload());

  std::error_code ec;
  fs::create_directories(fs::path(dir) / "kernels" / "cuda", ec);
  if (ec) throw Error("cannot create " + dir + ": " + ec.message());
  const fs::path d(dir);
  write_project_file((d / "model.h").string(), cuda_model_h(t));
  write_project_file((d / "model.cu").string(), model_cu(t, e));
  write_project_file((d / "main.cpp").string(), cpp::main_cpp());
  write_project_file((d / "CMakeLists.txt").string(), cuda_cmake_lists(t, o.check_on_cpu, !e.host_calls.empty()));
  write_project_file((d / "model_cpu.h").string(), model_cpu_h(e));
  if (!e.host_calls.empty()) {
    std::set<std::string> used = e.cpu_kernels;
    used.insert("common.h");
    const std::set<std::string> files = kernel_closure(used);
    fs::create_directories(d / "kernels", ec);
    write_project_file((d / "model_cpu.cpp").string(), model_cpu_cpp(t, e, used));
    for (const std::string& k : files) write_project_file((d / "kernels" / k).string(), kernel_file(k));
  } else {
    fs::remove(d / "model_cpu.cpp", ec);
  }
  write_project_file((d / "weights.bin").string(), e.weights.file());
  for (const char* k : kKernelFiles) write_project_file((d / "kernels" / k).string(), kernel_file(k));

  for (const auto& s : e.signatures) {
    st.instructions += static_cast<int>(s.functions.size());
    st.arena_bytes = std::max(st.arena_bytes, s.arena_bytes);
  }
  st.views = e.views;
  st.kernels = e.kernels;
  st.weights_bytes = t.weights_bytes;
  st.scratch_bytes = e.scratch_bytes;
  st.test_sets = copy_test_sets(o.test_data, dir);
  return st;
}

}  // namespace kiln::codegen
