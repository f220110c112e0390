// The CUDA target: an executable plan (one per input-shape signature), placed on the GPU and
// the CPU (place_for_cuda: devices, copies, streams, as plan data), as a standalone CMake
// project built with nvcc, that needs no kiln (docs/codegen.md).
//
//   DIR/model.h          the C API of the C++ target, plus _device variants taking device
//                        pointers, kiln_model_device_io (the model's own device buffers) and
//                        kiln_model_stream
//   DIR/model.cu         per instruction its generated __global__ kernels and a host function
//                        launching them (cuBLAS for products); the arena one cudaMalloc at the
//                        plan's offsets, the weights uploaded once, each signature's run
//                        captured as a CUDA graph
//   DIR/kernels/cuda/    device.cuh (shared kernels), blas.cuh, conv.cuh, pool.cuh (cuBLAS,
//                        cuDNN), host_shim.h and cudnn_shim.h (the CPU check)
//   DIR/model_cpu.*      the instructions placed on the CPU, as the C++ target writes them
//   DIR/weights.bin, DIR/main.cpp as the C++ target's
//   DIR/CMakeLists.txt   CUDA with find_package(CUDAToolkit); -DKILN_MODEL_ON_CPU=ON compiles the
//                        same model.cu as host C++ through host_shim.h (no GPU, no nvcc)
#pragma once
#include <string>
#include <vector>

#include "codegen/device_plan.h"
#include "codegen/plan_walk.h"
#include "plan/executable_plan.h"

namespace kiln::codegen {

struct CudaOptions {
  std::string source;      // what the project was made from (a comment)
  std::string test_data;   // a model folder whose test_data_set_* are copied ("" = none)
  bool check_on_cpu = false;  // the project's default build is the host C++ check
  int streams = 4;            // at most this many streams for independent branches (streams.h)
};

struct CudaProjectStats {
  int instructions = 0, views = 0, kernels = 0;  // host functions; of them views; __global__ kernels
  int64_t weights_bytes = 0, arena_bytes = 0, scratch_bytes = 0;
  int test_sets = 0;
  std::vector<plan::ExecutablePlan> placed;  // per signature, the plan as placed (place_for_cuda)
};

// The CPU lowering rewrites the CUDA target does not run: the C++ target's (cpp_disabled_passes)
// and every CPU-only layout or kernel choice.
const std::vector<std::string>& cuda_disabled_passes();

// The plans as the CUDA target runs them, per signature: each instruction's device, the copies
// and host mirrors where values cross devices (device_plan.h), the streams (stream_plan.h). An
// UnsupportedError naming the node the CUDA target cannot place. `kiln inspect --plan --target
// cuda` prints them.
std::vector<plan::ExecutablePlan> place_for_cuda(const std::vector<PlanSource>& plans, int streams = CudaOptions{}.streams);

// Writes the project into `dir` (created). A kiln::Error (UnsupportedError) naming the node for
// an instruction the CUDA target cannot write.
CudaProjectStats write_cuda_project(const std::vector<PlanSource>& plans, const CudaOptions& options,
                                    const std::string& dir);

}  // namespace kiln::codegen
