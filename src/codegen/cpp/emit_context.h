// What an op emitter of the C++ target sees of one instruction, and how it writes code: lines
// of the instruction's function body, pointer expressions for its operands, weights it packs
// into weights.bin, and the kernel headers it calls.
//
// The generated function of an instruction has the run's context `c` in scope:
//   c.arena (unsigned char*), c.w (const unsigned char*: weights.bin's payload),
//   c.in (const void* const*), c.out (void* const*).
#pragma once
#include <kiln/error.h>

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/cpp/weights_blob.h"
#include "codegen/plan_walk.h"

namespace kiln::codegen::cpp {

// The C++ type of an element of `t` ("float", "int64_t", "bool"); a kiln::Error for a type
// generated code does not handle yet.
std::string ctype(DType t);
// A C++ literal of `v` as type `t` ("1.5f", "INFINITY", "int64_t(-3)").
std::string literal(DType t, double v);
std::string literal_float(float v);
// s as a C string literal, quotes included.
std::string c_string(const std::string& s);

// An object the emitted model keeps from kiln_model_create to kiln_model_destroy for one
// instruction (a oneDNN primitive with its weights in the primitive's layout): a member `name`
// of the model's State, constructed as `type(args)`, where args may read the weights as c.w.
struct StateDecl {
  std::string type, name, args;
};

class EmitContext {
 public:
  EmitContext(const Step& s, WeightsBlob& weights, std::set<std::string>& kernels, int panel, bool avx512 = false)
      : step(s), node(*s.node), panel(panel), avx512(avx512), weights_(weights), kernels_(kernels) {}

  const Step& step;
  const ir::Node& node;
  const int panel;  // the matrix kernels' panel width for the target's CPU (weight_packing.h)
  // Whether the target's CPU runs AVX-512F: then the kernels written in its intrinsics, which
  // kiln's CPU backend runs too (depthwise_rows.h), serve the ops they take.
  const bool avx512;

  // A pointer expression to operand o's first element, typed by its dtype (const unless
  // `writable`): "reinterpret_cast<float*>(c.arena + 4096)".
  std::string ptr(const Operand& o, bool writable = false) const;
  std::string in(int i) const { return ptr(step.inputs.at(i)); }
  std::string out(int i) const { return ptr(step.outputs.at(i), true); }
  bool has_input(int i) const { return i < static_cast<int>(step.inputs.size()) && step.inputs[i].buffer >= 0; }
  bool has_output(int i) const { return i < static_cast<int>(step.outputs.size()) && step.outputs[i].buffer >= 0; }
  // Adds bytes (elements of type t) to weights.bin under `key`; returns a const pointer expression.
  std::string weights(const std::string& key, std::string_view bytes, DType t);
  std::string weights(const std::string& key, const std::vector<float>& v) {
    return weights(key, std::string_view(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)),
                   DType::Float);
  }
  // A constant input's data (a kiln::Error naming the node when input i is not a constant).
  const Tensor& constant(int i) const;
  bool is_constant(int i) const { return has_input(i) && step.inputs[i].storage.kind == StorageKind::Constant; }

  // Declares a StateDecl for this instruction; returns the expression naming it in the function
  // (c.state->NAME). A kiln::Error where the target keeps no state (the CUDA target).
  std::string state(const std::string& type, const std::string& args);
  // Whether the project may call oneDNN (kiln compile without --no-onednn): then the ops the
  // plan runs on oneDNN are written as oneDNN calls (kernels/onednn_conv.h).
  bool onednn = false;
  std::vector<StateDecl>* states = nullptr;  // where state() declares (null: no state)

  // Marks a kernel header (a file under src/kernels/) as used: it is copied into the
  // project and included by model.cpp.
  void use_kernel(const std::string& header) { kernels_.insert(header); }
  void line(const std::string& s) { lines.push_back(s); }
  // The error for something about this node generated code cannot do.
  UnsupportedError unsupported(const std::string& why) const;

  std::vector<std::string> lines;

  // The CUDA target (codegen/cuda/) writes with the same context: then `lines` is the host
  // function that launches, on the stream c.stream, the __global__ kernels in `device`, and the
  // loop nests (loop_nest.h) become kernels. kernel_name() names the next one after `function`.
  bool cuda = false;
  std::string function;
  std::vector<std::string> device;
  int64_t scratch_bytes = 0;  // the scratch buffer (c.workspace) its kernels need
  std::vector<std::string>* conv_table = nullptr;  // the model's convolutions' shapes (c.convs[i])
  std::vector<std::string>* pool_table = nullptr;  // the model's pools (PoolSpec initializers, c.pools[i])
  std::string kernel_name() { return "k_" + function + (kernels_made_++ ? "_" + std::to_string(kernels_made_) : ""); }

 private:
  int kernels_made_ = 0;
  int state_made_ = 0;
  WeightsBlob& weights_;
  std::set<std::string>& kernels_;
};

// An op emitter writes the body of one instruction's function (op_emitters.h).
using OpEmitFn = void (*)(EmitContext&);

}  // namespace kiln::codegen::cpp
