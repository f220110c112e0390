// The CUDA target's Emitter: per instruction, the kernels its op emitter generates (cuda_ops.h)
// and a host function named after the node that launches them on the run's stream; per
// signature, the run function calling those in order. An op without a CUDA emitter is placed on
// the CPU (placement.h): the C++ target's code for it goes to model_cpu.cpp, and its host
// function copies its operands to the host, runs it there (cudaLaunchHostFunc, so that it is
// part of the run's graph) and copies its results back.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "codegen/cpp/cpp_emitter.h"
#include "codegen/cpp/weights_blob.h"
#include "codegen/placement.h"
#include "codegen/plan_walk.h"

namespace kiln::codegen::cuda {

class CudaEmitter : public Emitter {
 public:
  void begin(int signature, const PlanSource& source, const std::vector<Operand>& inputs,
             const std::vector<Operand>& outputs) override;
  void step(const Step& s) override;
  void end() override {}

  std::vector<cpp::SignatureCode> signatures;
  WeightsBlob weights;
  int64_t scratch_bytes = 0;       // the largest scratch buffer an instruction needs
  std::vector<std::string> convs;  // the convolutions' shapes (ConvShape initializers), c.convs[i]
  int kernels = 0;            // __global__ kernels generated
  int views = 0;
  std::vector<PlacedInstruction> placement;  // every instruction's device and copies
  std::vector<std::string> cpu_functions;  // model_cpu.cpp: the CPU instructions' functions
  std::vector<std::string> host_calls;     // their entry points, in order (kiln_cpu_run&)
  std::set<std::string> cpu_kernels;       // the C++ kernel headers they use

 private:
  int signature_ = 0;
  std::set<std::string> used_names_, headers_;
  Placer placer_;
};

}  // namespace kiln::codegen::cuda
