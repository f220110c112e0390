// The CUDA target's Emitter, over a placed plan (device_plan.h, streams in stream_plan.h): per
// instruction on the GPU, the kernels its op emitter generates (cuda_ops.h) and a host function
// named after the node that launches them on its stream; per instruction on the CPU, the C++
// target's code for it in model_cpu.cpp and a host function calling it on its stream
// (cudaLaunchHostFunc, so that it is part of the run's graph); per copy, a cudaMemcpyAsync
// between the device and the host mirror. Per signature, the run function calling those in
// order, each on its stream after the events of the instructions it waits for.
//
// cuda_devices decides the devices first: the GPU when the CUDA target has an emitter for the op
// and it accepts this form of it, else the CPU.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "codegen/cpp/cpp_emitter.h"
#include "codegen/cpp/weights_blob.h"
#include "codegen/device_plan.h"
#include "codegen/plan_walk.h"
#include "codegen/streams.h"

namespace kiln::codegen::cuda {

// Where each instruction of `source` runs on the CUDA target (for place_on_devices); an
// UnsupportedError naming the node when neither the CUDA nor the C++ target has code for it.
std::vector<Where> cuda_devices(const PlanSource& source);

class CudaEmitter : public Emitter {
 public:
  void begin(int signature, const PlanSource& source, const std::vector<Operand>& inputs,
             const std::vector<Operand>& outputs) override;
  void step(const Step& s) override;
  void end() override {}

  std::vector<cpp::SignatureCode> signatures;
  // Per signature, per instruction (signatures[g].names): its stream (-1: launches nothing) and
  // the earlier instructions of the signature it waits for.
  std::vector<std::vector<StreamStep>> schedules;
  int streams = 1;  // the most any signature uses
  WeightsBlob weights;
  int64_t scratch_bytes = 0;       // the largest scratch buffer an instruction needs
  std::vector<std::string> convs;  // the convolutions' shapes (ConvShape initializers), c.convs[i]
  std::vector<std::string> pools;  // the pools (PoolSpec initializers), c.pools[i]
  int kernels = 0;            // __global__ kernels generated
  int views = 0;
  std::vector<std::string> cpu_functions;  // model_cpu.cpp: the CPU instructions' functions
  std::vector<std::string> host_calls;     // their entry points, in order (kiln_cpu_run&)
  std::set<std::string> cpu_kernels;       // the C++ kernel headers they use

 private:
  int signature_ = 0;
  std::set<std::string> used_names_, headers_;
};

}  // namespace kiln::codegen::cuda
