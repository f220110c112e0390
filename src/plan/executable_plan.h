// The executable plan: what a compiled model is, as plain data. Instructions in execution
// order, each with the KernelSpec that runs it and the buffers it reads and writes; every
// buffer's type, kind and place (an offset in its device's arena, or its own allocation); the
// arenas; the constants; and what the plan assumes of the machine (the ISA features its kernels
// were chosen for, the team size their work splits were made for).
//
//   instruction 3  FusedConv 'conv1'   cpu:kiln_winograd{tile=4}   in [0, 1, 2]  out [5]
//   buffer 5       Intermediate float[1,56,56,64]  arena 0 + 802816
//
// The runtime builds one per input-shape signature (runtime/compiled_plan.cpp); `kiln inspect
// --plan --json` prints it. The op each instruction runs is its node in the plan's graph.
//
// A plan placed on devices (the CUDA target's, codegen/device_plan.h) says besides where each
// instruction runs and in what order the accelerator's streams run them; its values cross
// devices through Copy instructions into host mirror buffers, which live in a second arena:
//
//   instruction 7  kiln.Copy 'h'   copy:to_host    in [12]  out [40]   cuda stream 1 after 5
//   instruction 8  Pad 'pad0'      reference       in [40]  out [41]   cpu stream 1
//   buffer 40      Intermediate float[1,8,8]  arena 1 + 4096  mirror of 12
//
// The runtime runs only unplaced plans (program_of refuses placed ones).
#pragma once
#include <kiln/dtype.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lower/program.h"
#include "plan/kernel_spec.h"
#include "plan/memory_plan.h"

namespace kiln::plan {

struct PlanBuffer {
  int id = -1;
  std::string value;  // the graph value it holds
  lower::BufferKind kind = lower::BufferKind::Intermediate;
  DType dtype = DType::Undefined;
  std::vector<int64_t> dims;  // empty with rank 0; unknown dims as -1
  int64_t bytes = 0;          // -1 when only known at run time
  int alias_of = -1;          // storage shared with this buffer (a view, an in-place result)
  bool in_place = false;
  int arena = -1;             // the arena it lives in (its root's), -1 = own allocation
  int64_t offset = -1;        // its byte offset there
  int mirror_of = -1;         // placed plans: the buffer whose host copy it holds (same value,
                              // offset and size, in the host's arena; a caller's input or output
                              // mirrored in host memory of its own)
};

struct PlanInstruction {
  int node_index = -1;           // the node of the plan's graph it runs: its place in the node list,
  std::string node, domain, op;  // its name, domain and op
  KernelSpec spec;
  std::vector<int> inputs, outputs;  // buffer ids, -1 = absent
  // Placed plans only (device empty in others): the device that runs it ("cuda", "cpu"); its
  // stream on the accelerator (-1: it launches nothing, a view); the earlier instructions on
  // other streams it waits for.
  std::string device;
  int stream = -1;
  std::vector<int> after;
  // A copy between devices: no node (node_index -1), domain kiln, op Copy, spec copy:to_host or
  // copy:to_device; its input the buffer copied, its output the copy; `node` names the value
  // whose reader or writer needed it.
  bool is_copy() const { return node_index < 0 && domain == "kiln" && op == "Copy"; }
};

struct PlanArena {
  std::string device;  // "cpu"; a placed plan: one per device ("cuda", then "cpu")
  int64_t bytes = 0;
};

struct ExecutablePlan {
  static constexpr int kVersion = 1;
  std::string target;              // the backend that runs it ("cpu"), "reference" for none
  int threads = 1;                 // the team size its work splits were made for
  std::vector<std::string> isa;    // CPU features its kernels need ("avx512f")
  std::vector<PlanInstruction> instructions;
  std::vector<PlanBuffer> buffers;
  std::vector<PlanArena> arenas;
  std::vector<int> graph_inputs, graph_outputs, constants;  // buffer ids
  int64_t lower_bound_bytes = 0;   // most bytes live at one step (the memory plan's bound)
  std::string memory_strategy;
  bool placed() const;  // whether it is placed on devices (devices, copies, mirrors or arenas)
};

// The plan of a lowered program, its memory plan and one spec per instruction.
ExecutablePlan make_executable_plan(const lower::Program& p, const MemoryPlan& m, const std::vector<KernelSpec>& specs,
                                    const std::string& target, int threads, std::vector<std::string> isa);

nlohmann::ordered_json to_json(const ExecutablePlan& plan);
// The inverse of to_json, checking every field's kind and every buffer id's range: a kiln::Error
// saying what is malformed (a damaged or hand-edited file).
ExecutablePlan executable_plan_from_json(const nlohmann::json& j);

// The program and memory plan `e` describes over `g`, the graph it was made from (nodes found by
// index and checked by name and op, values by name); kernels are not part of it. A kiln::Error
// when e does not fit g, or is placed on devices (a code generation target's plan).
lower::Program program_of(const ExecutablePlan& e, const ir::Graph& g);
MemoryPlan memory_plan_of(const ExecutablePlan& e, const lower::Program& p);

}  // namespace kiln::plan
