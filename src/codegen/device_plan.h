// Placement of a plan on two devices, the accelerator and the host CPU, as plan data
// (PlanInstruction::device, PlanBuffer::mirror_of, kiln.Copy instructions): the CUDA target runs
// each instruction it has a kernel for on the GPU and the rest on the CPU (the C++ target's code
// for it), copying around them.
//
//   6   Sigmoid 'sig'            cuda  stream 0
//   7   kiln.Copy 'sig_out'      cuda  stream 0   to host: arena+4096 (1536 bytes)
//   8   Dropout 'dropout'        cpu   stream 0
//   9   kiln.Copy 'mask'         cuda  stream 0   to device: output 3 (384 bytes)
//   10  kiln.Copy 'kept'         cuda  stream 0   to device: arena+0 (1536 bytes)   (read next)
//   11  Relu 'relu'              cuda  stream 0
//
// Every value's home is the accelerator: arena 0 is the device's, arena 1 the host's mirror of
// it at the same offsets, and a caller's input or output has a host mirror of its own. A CPU
// instruction reads and writes mirror buffers; its inputs are copied to the host before it unless
// their mirror is still valid since a previous copy or CPU write; its results are copied back to
// the device before the first instruction there that reads them (a caller's output right after
// it), and not at all if none does. Copies move whole buffers (an alias's root), never parts.
// Weights are on both devices and never copied.
#pragma once
#include <string>
#include <vector>

#include "plan/executable_plan.h"

namespace kiln::codegen {

enum class Where {
  Accelerator,  // launches work on the accelerator
  Host,         // runs on the CPU
  Nothing,      // on the accelerator, launching nothing (a view of its input's bytes)
};

// `p` placed on `device` and the host ("cpu"): instruction i where where[i] says, copies and
// host mirrors added where values cross. Each instruction that launches something gets stream 0
// and no waits (stream_plan.h assigns streams), one that launches nothing stream -1. A kiln::Error
// if `where` does not match p or p is placed already.
plan::ExecutablePlan place_on_devices(const plan::ExecutablePlan& p, const std::vector<Where>& where,
                                      const std::string& device);

// Per placed plan (signature 0, 1, ...), how many instructions run where and what the copies
// move: "signature 0: 73 instructions on the GPU, 2 on the CPU (Pad, Resize); 2 copies to the host
// (360 bytes), 2 to the device (1536 bytes); 3 streams". With `every`, then a line per
// instruction: index, op, node, device, stream and waits, and for a copy what it moves.
std::string placement_report(const std::vector<plan::ExecutablePlan>& placed, bool every);

}  // namespace kiln::codegen
