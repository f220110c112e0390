// The lowered program: instructions in execution order, each naming the buffers it reads and
// writes. A buffer is one value's storage; views (Reshape, Squeeze, Identity, ...) and in-place
// elementwise ops alias the buffer of their input instead of owning one.
//
//   buffers:  b0 input  b1 const  b2 ─┐ arena   b3 alias(b2)   b4 output (heap)
//   instrs:   Conv(b0,b1) -> b2 ; Reshape(b2) -> b3 ; Relu(b3) -> b4
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln::backends {
class Kernel;
}

namespace kiln::lower {

enum class BufferKind {
  Input,         // caller's memory
  Constant,      // weights, read-only, live for the session
  Intermediate,  // placed in the arena by the memory plan
  Output,        // graph output: own allocation, handed to the caller
  Dynamic,       // size unknown until run time (data-dependent shapes): own allocation
};
const char* buffer_kind_name(BufferKind k);

struct Buffer {
  int id = -1;
  const ir::Value* value = nullptr;
  BufferKind kind = BufferKind::Intermediate;
  int64_t bytes = 0;   // static size (Intermediate/Output); -1 when unknown
  int alias_of = -1;   // storage shared with this buffer (a view or an in-place result)
  bool in_place = false;  // alias made by an op writing over a dying input (not a view)
};

struct Instruction {
  const ir::Node* node = nullptr;
  std::string backend = "reference";
  std::shared_ptr<const backends::Kernel> kernel;  // null: the node's reference kernel
  std::vector<int> inputs;   // buffer ids, -1 = absent optional input
  std::vector<int> outputs;  // buffer ids, -1 = output not requested
};

struct Program {
  std::vector<Buffer> buffers;
  std::vector<Instruction> instructions;
  std::vector<int> graph_inputs, graph_outputs;  // buffer ids
  int root(int id) const;  // follows alias_of to the owning buffer
};

struct LowerOptions {
  bool in_place = true;  // let elementwise ops reuse a dying input's buffer
  // Whether node n's kernel may write its output over its input k (Kernel::writes_over): the
  // plan then gives that output the input's storage where the input dies at n. Unset: only
  // elementwise ops do.
  std::function<bool(const ir::Node& n, int k)> writes_over;
  // Values the caller wants back besides the graph outputs: own allocations, never reused.
  std::vector<const ir::Value*> keep;
};

// Whether elementwise op n's output may overwrite its input k: same dtype and element count,
// and every kernel of the op reads element i before writing element i.
bool elementwise_overwrites(const ir::Node& n, int k);

// Lowers a graph whose types are inferred (static where the plan should place buffers).
Program lower(const ir::Graph& g, const LowerOptions& opts = {});

}  // namespace kiln::lower
