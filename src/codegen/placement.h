// Placement of a plan's instructions on two devices, the accelerator and the host CPU, and the
// copies that keep every value where its readers run: the CUDA target runs each instruction it
// has a kernel for on the GPU and the rest on the CPU (the C++ target's code for it), copying
// around them.
//
//   instruction 7   Pad 'pad0'      cpu    to host: arena+4096 (1536 bytes)   to device: arena+8192
//
// Every value's home is the device: the plan's arena is the device arena, the host arena mirrors
// it at the same offsets, the caller's inputs and outputs have host mirrors. A CPU instruction
// reads host copies of its inputs, made before it unless still valid since a previous copy or
// CPU write, and its outputs are copied back to the device right after it. Copies move whole
// buffers (an alias's root), never parts.
#pragma once
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "codegen/plan_walk.h"

namespace kiln::codegen {

// A buffer's storage and size: what a copy moves.
struct CopyRegion {
  Storage storage;
  int64_t bytes = 0;
  std::string value;  // the value of the operand that needed it (for reports)
};

struct PlacedStep {
  int index = -1;           // the instruction
  bool on_host = false;     // runs on the CPU
  std::vector<CopyRegion> to_host;    // copied device -> host before it
  std::vector<CopyRegion> to_device;  // copied host -> device after it
};

// A placed instruction, for reports: which signature, op and node; on the accelerator, its
// stream and the instructions on other streams it waits for (streams.h).
struct PlacedInstruction {
  int signature = 0;
  std::string op, node;
  PlacedStep step;
  int stream = -1;         // -1: launches nothing (a view)
  std::vector<int> after;  // instruction indices
};

class Placer {
 public:
  // Places step s: on the accelerator unless `on_host`. Call for every step of a signature in
  // order; reset() between signatures.
  PlacedStep place(const Step& s, bool on_host);
  void reset() { host_valid_.clear(); }

 private:
  using Key = std::tuple<int, int, int64_t>;  // Storage: kind, index, offset
  static Key key(const Storage& s) { return {static_cast<int>(s.kind), s.index, s.offset}; }
  std::set<Key> host_valid_;  // storages whose host copy holds the current bytes
};

// "h (input 1, 120 bytes), Pad0_out (arena+4096, 1536 bytes)": a list of regions for reports.
std::string describe_regions(const std::vector<CopyRegion>& regions);

// Per signature, how many instructions run where and what the copies move: "signature 0: 73 on
// the GPU, 2 on the CPU (Pad, Resize); 2 copies to the host (360 bytes), 2 to the device
// (1536 bytes); 3 streams". With `every`, then a line per instruction: index, op, node, device,
// stream and waits, copies.
std::string placement_report(const std::vector<PlacedInstruction>& placed, bool every);

}  // namespace kiln::codegen
