// The CUDA target's Emitter: per instruction, the kernels its op emitter generates (cuda_ops.h)
// and a host function named after the node that launches them on the run's stream; per
// signature, the run function calling those in order. An op without a CUDA emitter is placed on
// the CPU (placement.h): the C++ target's code for it goes to model_cpu.cpp, and its host
// function copies its operands to the host, runs it there (cudaLaunchHostFunc, so that it is
// part of the run's graph) and copies its results back. Instructions go to streams by
// streams.h's StreamScheduler: independent branches run concurrently, every other order kept
// by a stream's order or an event wait.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "codegen/cpp/cpp_emitter.h"
#include "codegen/cpp/weights_blob.h"
#include "codegen/placement.h"
#include "codegen/plan_walk.h"
#include "codegen/stream_memory.h"
#include "codegen/streams.h"

namespace kiln::codegen::cuda {

class CudaEmitter : public Emitter {
 public:
  // At most `max_streams` streams per run (1: every instruction in order on one).
  explicit CudaEmitter(int max_streams = 1) : max_streams_(max_streams), scheduler_(max_streams) {}
  void begin(int signature, const PlanSource& source, const std::vector<Operand>& inputs,
             const std::vector<Operand>& outputs) override;
  void step(const Step& s) override;
  void end() override {}

  std::vector<cpp::SignatureCode> signatures;
  // Per signature, per instruction (signatures[g].names): its stream (-1: launches nothing) and
  // the earlier instructions of the signature (positions in names) it waits for.
  std::vector<std::vector<StreamStep>> schedules;
  int streams = 1;  // the most any signature uses
  // Per signature, per instruction that launches something: its schedule and the arena buffers
  // (roots) it touches, for stream_memory.h.
  std::vector<std::vector<ScheduledAccess>> accesses;
  // Schedules on dataflow alone: an arena operand is its root buffer, not its bytes (what
  // place_for_streams needs, before the arena is placed for the schedule).
  bool by_buffer = false;
  // The streams of a schedule made before (per signature, per instruction: `schedules` of
  // another walk), kept; this walk derives their waits from the bytes the instructions touch.
  const std::vector<std::vector<StreamStep>>* given = nullptr;
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
  int max_streams_;
  StreamScheduler scheduler_;
  std::vector<int> plan_index_;  // per instruction of the signature, its index in the plan
  std::set<std::string> used_names_, headers_;
  Placer placer_;
};

}  // namespace kiln::codegen::cuda
