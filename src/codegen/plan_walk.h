// The walk over an executable plan that every code generation target shares: each instruction
// in order, with its node and every operand resolved to where its bytes live at run time.
//
//   instruction 4  kiln.FusedConv 'conv1'   in: [input 0] [constant 3] [constant 4]
//                                           out: [arena + 802816, float [1,112,112,32]]
//
// A target implements Emitter and gets begin(), one step() per instruction and end() for each
// compiled plan (one per input-shape signature). Storage follows the plan's buffers: an alias
// (a view, an in-place result) resolves to its root's storage, so a view of an arena buffer is
// the same arena offset; a host mirror (a placed plan's, device_plan.h) to its original's
// storage marked host, so that code for the CPU reads it as the CPU plan's. The walk decides
// nothing about kernels: that is the target's.
#pragma once
#include <kiln/dtype.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "plan/executable_plan.h"

namespace kiln::codegen {

enum class StorageKind {
  Input,     // the caller's input `index`
  Output,    // the caller's output `index`
  Constant,  // a weight: `value`'s constant tensor
  Arena,     // `offset` bytes into the plan's arena
};

struct Storage {
  StorageKind kind = StorageKind::Arena;
  int index = -1;      // Input / Output: the position among the graph's inputs / outputs
  int64_t offset = 0;  // Arena: the byte offset
  bool host = false;   // a placed plan's host mirror of that storage (PlanBuffer::mirror_of)
  bool operator==(const Storage&) const = default;
};

struct Operand {
  int buffer = -1;                  // the plan's buffer id
  const ir::Value* value = nullptr;  // the value it holds (its name, type; a constant's tensor)
  DType dtype = DType::Undefined;
  std::vector<int64_t> dims;
  Storage storage;
  int root = -1;            // the buffer whose storage it is (itself unless an alias)
  int64_t root_bytes = 0;   // that buffer's bytes
  int64_t numel() const;
  int64_t bytes() const;
};

struct Step {
  int index = -1;  // the instruction's position in the plan
  const plan::PlanInstruction* instruction = nullptr;
  const ir::Node* node = nullptr;  // null for a copy between devices (PlanInstruction::is_copy)
  std::vector<Operand> inputs, outputs;  // per node input / output; buffer -1 = absent
  bool same_storage(const Operand& a, const Operand& b) const { return a.storage == b.storage; }
};

// One compiled plan: the lowered graph it runs and its executable plan.
struct PlanSource {
  const ir::Graph* graph = nullptr;
  const plan::ExecutablePlan* plan = nullptr;
  std::vector<std::vector<int64_t>> input_dims;  // the input-shape signature it was made for
};

class Emitter {
 public:
  virtual ~Emitter() = default;
  // Before the first step of plan `signature` (0, 1, ... in the order the plans are given).
  virtual void begin(int signature, const PlanSource& source, const std::vector<Operand>& inputs,
                     const std::vector<Operand>& outputs) = 0;
  virtual void step(const Step& s) = 0;
  virtual void end() = 0;
};

// Walks `source` into `e`. A kiln::Error naming the instruction when the plan has what no source
// can be emitted for: a buffer whose size is only known at run time, or an instruction whose node
// the graph lacks (copies have none).
void walk_plan(int signature, const PlanSource& source, Emitter& e);

}  // namespace kiln::codegen
