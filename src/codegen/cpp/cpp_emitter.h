// The C++ target's Emitter: each step's body from its op emitter (op_emitters.h) wrapped in a
// function named after the node, and per signature a run function calling them in order.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "codegen/cpp/emit_context.h"
#include "codegen/cpp/weights_blob.h"
#include "codegen/plan_walk.h"

namespace kiln::codegen::cpp {

// What model.h and main.cpp need to know of one signature's inputs or outputs.
struct TensorDecl {
  std::string name;
  DType dtype = DType::Undefined;
  std::vector<int64_t> dims;
};

struct SignatureCode {
  std::vector<TensorDecl> inputs, outputs;
  int64_t arena_bytes = 0;
  std::vector<std::string> functions;  // one per instruction, in order
  std::vector<std::string> names;      // their names
};

class CppEmitter : public Emitter {
 public:
  // isa: the CPU features the emitted kernels may use (ExecutablePlan::isa's names); onednn:
  // whether the ops the plan runs on oneDNN are written as oneDNN calls.
  explicit CppEmitter(const std::vector<std::string>& isa, bool onednn = false);
  void begin(int signature, const PlanSource& source, const std::vector<Operand>& inputs,
             const std::vector<Operand>& outputs) override;
  void step(const Step& s) override;
  void end() override {}

  std::vector<SignatureCode> signatures;
  WeightsBlob weights;
  std::set<std::string> kernels;
  std::vector<StateDecl> states;  // what the model keeps across runs, in instruction order
  int views = 0;

 private:
  int signature_ = 0;
  int panel_;
  bool avx512_, onednn_;
  std::set<std::string> used_names_;
};

// "features.0/Conv" -> "features_0_Conv": a C identifier fragment, at most 40 characters.
std::string identifier(const std::string& s);
// The comment above an instruction's function: its op, node, kernel spec and operands.
std::string instruction_comment(const Step& s);
// "s0_12_features_0_Conv": the function of instruction s of a signature, unique among `used`.
std::string function_name(int signature, const Step& s, std::set<std::string>& used);

}  // namespace kiln::codegen::cpp
