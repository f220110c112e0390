// place_for_cuda's streams, read back from the placed plan alone: every two instructions that
// touch the same bytes (device arena, host mirror, a caller's buffer) with at least one writing,
// and every two CPU instructions, are ordered by their streams and waits; host mirrors keep their
// originals' offsets after the arena is placed for the streams. On a model whose branches meet,
// with instructions on the CPU (Dropout's mask has no CUDA kernel) in two of them.
#include <gtest/gtest.h>

#include <algorithm>

#include "codegen/cuda/cuda_project.h"
#include "project_build.h"
#include "runtime/session_access.h"
#include "stream_order.h"

namespace kiln::codegen {
namespace {

using plan::ExecutablePlan;

std::unique_ptr<ir::Graph> branches() {
  auto g = std::make_unique<ir::Graph>();
  g->opsets[""] = 17;
  ir::Value* x = g->add_input("x", ir::TensorType::from_dims(DType::Float, {4, 16}));
  std::mt19937 rng(3);
  auto node = [&](const std::string& op, std::vector<ir::Value*> ins, int outputs = 1) {
    std::vector<ir::Value*> outs;
    for (int k = 0; k < outputs; ++k) outs.push_back(g->add_value(op + std::to_string(g->nodes().size()) + "_" + std::to_string(k)));
    g->add_node(op, ins, outs, {}, op + std::to_string(g->nodes().size()));
    return outs;
  };
  ir::Value* r = node("Relu", {x})[0];
  const auto d1 = node("Dropout", {node("Sigmoid", {r})[0]}, 2);
  ir::Value* b2 = node("Tanh", {r})[0];
  const auto d2 = node("Dropout", {b2}, 2);
  ir::Value* s = node("Add", {d1[0], d2[0]})[0];
  ir::Value* t = node("MatMul", {r, g->add_constant("w", random_tensor({16, 16}, rng))})[0];
  for (ir::Value* v : {node("Add", {t, s})[0], d1[1], d2[1], b2}) g->add_output(v);
  return g;
}

// Where a buffer's bytes are: an address space and a range (none for weights).
struct Bytes {
  int space = -1;
  int64_t begin = 0, end = 0;
  bool meets(const Bytes& o) const { return space >= 0 && space == o.space && begin < o.end && o.begin < end; }
};

Bytes bytes_of(const ExecutablePlan& p, int id) {
  if (id < 0) return {};
  while (p.buffers.at(static_cast<size_t>(id)).alias_of >= 0) id = p.buffers[static_cast<size_t>(id)].alias_of;
  const plan::PlanBuffer& b = p.buffers[static_cast<size_t>(id)];
  const int host = b.mirror_of >= 0 ? 1 : 0;
  const int original = host ? b.mirror_of : id;
  auto at = [](const std::vector<int>& v, int x) { return static_cast<int>(std::find(v.begin(), v.end(), x) - v.begin()); };
  switch (b.kind) {
    case lower::BufferKind::Constant: return {};
    case lower::BufferKind::Input: return {10 + 4 * at(p.graph_inputs, original) + host, 0, 1};
    case lower::BufferKind::Output: return {12 + 4 * at(p.graph_outputs, original) + host, 0, 1};
    default: return {host, b.offset, b.offset + b.bytes};
  }
}

bool conflict(const ExecutablePlan& p, const plan::PlanInstruction& a, const plan::PlanInstruction& b) {
  if (a.device == "cpu" && b.device == "cpu" && !a.is_copy() && !b.is_copy()) return true;  // one host mirror
  auto any = [&](const std::vector<int>& x, const std::vector<int>& y) {
    for (int i : x)
      for (int j : y)
        if (bytes_of(p, i).meets(bytes_of(p, j))) return true;
    return false;
  };
  return any(a.outputs, b.inputs) || any(a.outputs, b.outputs) || any(a.inputs, b.outputs);
}

TEST(StreamPlan, EveryConflictIsOrderedByTheStreamsAndWaits) {
  const fs::path dir = scratch("stream-plan");
  auto g = branches();
  std::mt19937 rng(5);
  write_model_with_data(*g, dir, {random_tensor({4, 16}, rng)});
  SessionOptions o;
  o.disabled_passes = cuda_disabled_passes();
  std::shared_ptr<Session> s = Session::create((dir / "model.onnx").string(), o);
  s->prepare({{4, 16}});
  std::vector<PlanSource> plans;
  for (const auto& cp : SessionAccess::plans(*s)) plans.push_back({cp->graph.get(), &cp->plan, cp->input_dims});
  ASSERT_EQ(plans.size(), 1u);
  for (int streams : {1, 2, 4}) {
    SCOPED_TRACE(std::to_string(streams) + " streams");
    const std::vector<ExecutablePlan> placed = place_for_cuda(plans, streams);
    ASSERT_EQ(placed.size(), 1u);
    const ExecutablePlan& p = placed[0];
    int on_cpu = 0, copies = 0, used = 1;
    std::vector<int> launching, position(p.instructions.size(), -1);
    for (size_t i = 0; i < p.instructions.size(); ++i) {
      const plan::PlanInstruction& ins = p.instructions[i];
      on_cpu += ins.device == "cpu" ? 1 : 0;
      copies += ins.is_copy() ? 1 : 0;
      if (ins.stream < 0) continue;
      EXPECT_LT(ins.stream, streams);
      used = std::max(used, ins.stream + 1);
      position[i] = static_cast<int>(launching.size());
      launching.push_back(static_cast<int>(i));
    }
    EXPECT_EQ(on_cpu, 2);  // the Dropouts
    EXPECT_GE(copies, 4);
    if (streams > 1) {
      EXPECT_GT(used, 1);
    }
    std::vector<StreamStep> steps;
    for (int i : launching) {
      StreamStep st;
      st.stream = p.instructions[static_cast<size_t>(i)].stream;
      for (int w : p.instructions[static_cast<size_t>(i)].after) {
        EXPECT_GE(position[static_cast<size_t>(w)], 0) << "a wait for an instruction that launches nothing";
        EXPECT_NE(p.instructions[static_cast<size_t>(w)].stream, st.stream) << "a wait on its own stream";
        st.waits.push_back(position[static_cast<size_t>(w)]);
      }
      steps.push_back(st);
    }
    const std::vector<std::set<int>> before = happens_before(steps, streams);
    for (size_t b = 0; b < launching.size(); ++b)
      for (size_t a = 0; a < b; ++a)
        if (conflict(p, p.instructions[static_cast<size_t>(launching[a])], p.instructions[static_cast<size_t>(launching[b])])) {
          EXPECT_TRUE(before[b].count(static_cast<int>(a)))
              << "instructions " << launching[a] << " and " << launching[b] << " touch the same bytes unordered";
        }
    for (const plan::PlanBuffer& b : p.buffers)
      if (b.mirror_of >= 0 && b.arena >= 0) {
        EXPECT_EQ(b.offset, p.buffers[static_cast<size_t>(b.mirror_of)].offset);
      }
    ASSERT_EQ(p.arenas.size(), 2u);
    EXPECT_EQ(p.arenas[1].bytes, p.arenas[0].bytes);
  }
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace kiln::codegen
