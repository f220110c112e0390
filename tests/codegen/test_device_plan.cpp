// place_on_devices: a plan placed on the accelerator and the host, as plan data. Checked by
// running placed plans symbolically: every value has a version on each device, an instruction
// must read the current one on its own device, and copies are the only way versions cross. On a
// hand-made chain and on random plans (views, in-place results, inputs, outputs, weights).
#include "codegen/device_plan.h"

#include <gtest/gtest.h>
#include <kiln/error.h>

#include <functional>
#include <map>
#include <random>

namespace kiln::codegen {
namespace {

using lower::BufferKind;
using plan::ExecutablePlan;
using plan::PlanBuffer;
using plan::PlanInstruction;

struct Builder {
  ExecutablePlan p;
  int64_t offset = 0;
  Builder() { p.arenas.push_back({"cpu", 0}); }
  int buffer(BufferKind kind, int alias_of = -1, bool in_place = false) {
    PlanBuffer b;
    b.id = static_cast<int>(p.buffers.size());
    b.value = "v" + std::to_string(b.id);
    b.kind = kind;
    b.dtype = DType::Float;
    b.dims = {4};
    b.bytes = 16;
    b.alias_of = alias_of;
    b.in_place = in_place;
    if (kind == BufferKind::Intermediate) {
      b.arena = 0;
      b.offset = alias_of >= 0 ? p.buffers[static_cast<size_t>(alias_of)].offset : offset;
      if (alias_of < 0) offset += 64;
      p.arenas[0].bytes = offset;
    }
    if (kind == BufferKind::Input) p.graph_inputs.push_back(b.id);
    if (kind == BufferKind::Output) p.graph_outputs.push_back(b.id);
    if (kind == BufferKind::Constant) p.constants.push_back(b.id);
    p.buffers.push_back(b);
    return b.id;
  }
  void instruction(const std::vector<int>& in, const std::vector<int>& out) {
    PlanInstruction i;
    i.node_index = static_cast<int>(p.instructions.size());
    i.node = "n" + std::to_string(i.node_index);
    i.op = "Op";
    i.inputs = in;
    i.outputs = out;
    p.instructions.push_back(i);
  }
};

int root(const ExecutablePlan& p, int id) {
  while (p.buffers.at(static_cast<size_t>(id)).alias_of >= 0) id = p.buffers[static_cast<size_t>(id)].alias_of;
  return id;
}

// The original buffer a (maybe mirror) buffer stands for, and its root.
int original_root(const ExecutablePlan& p, int id) {
  const int mirror = p.buffers.at(static_cast<size_t>(id)).mirror_of;
  return root(p, mirror >= 0 ? mirror : id);
}

// Runs `placed` symbolically and checks it computes what `p` does: a FAILURE naming the
// instruction otherwise. Returns the number of copies.
int check_placed(const ExecutablePlan& p, const ExecutablePlan& placed, const std::vector<Where>& where) {
  EXPECT_TRUE(placed.placed());
  EXPECT_EQ(placed.target, "cuda");
  // Mirrors: of a buffer that is no mirror, same value, size and offset, in the host arena when
  // the original is in an arena, aliasing the mirror of the original's alias.
  for (const PlanBuffer& b : placed.buffers) {
    if (b.mirror_of < 0) continue;
    const PlanBuffer& o = placed.buffers.at(static_cast<size_t>(b.mirror_of));
    EXPECT_LT(b.mirror_of, b.id);
    EXPECT_EQ(o.mirror_of, -1);
    EXPECT_EQ(b.value, o.value);
    EXPECT_EQ(b.bytes, o.bytes);
    EXPECT_EQ(b.kind, o.kind);
    EXPECT_EQ(b.arena, o.arena >= 0 ? 1 : -1);
    EXPECT_EQ(b.offset, o.offset);
    if (o.alias_of >= 0) {
      EXPECT_GE(b.alias_of, 0);
      if (b.alias_of >= 0) {
        EXPECT_EQ(placed.buffers.at(static_cast<size_t>(b.alias_of)).mirror_of, o.alias_of);
      }
    }
  }
  if (placed.arenas.size() > 1) {
    EXPECT_EQ(placed.arenas[1].device, "cpu");
    EXPECT_EQ(placed.arenas[1].bytes, placed.arenas[0].bytes);
  }
  std::map<int, int> current, device, host;  // per root: its latest version, the device's, the host's
  for (int id : p.graph_inputs) current[id] = device[id] = 1;
  int copies = 0;
  size_t next = 0;  // the next instruction of p
  for (size_t k = 0; k < placed.instructions.size(); ++k) {
    const PlanInstruction& i = placed.instructions[k];
    SCOPED_TRACE("placed instruction " + std::to_string(k));
    EXPECT_FALSE(i.device.empty());
    if (i.is_copy()) {
      ++copies;
      EXPECT_EQ(i.device, "cuda");
      EXPECT_EQ(i.stream, 0);
      const int from = i.inputs.at(0), to = i.outputs.at(0);
      const bool to_host = i.spec.impl == "to_host";
      EXPECT_EQ(i.spec.backend, "copy");
      const int mirror = to_host ? to : from, original = to_host ? from : to;
      EXPECT_EQ(placed.buffers.at(static_cast<size_t>(mirror)).mirror_of, original);
      EXPECT_EQ(placed.buffers.at(static_cast<size_t>(original)).alias_of, -1) << "copies move roots";
      EXPECT_NE(placed.buffers.at(static_cast<size_t>(original)).kind, BufferKind::Constant);
      if (to_host) {
        EXPECT_NE(host[original], current[original]) << "a copy of what the host holds already";
        EXPECT_EQ(device[original], current[original]) << "a copy of a stale value";
        host[original] = device[original];
      } else {
        EXPECT_NE(device[original], current[original]) << "a copy of what the device holds already";
        EXPECT_EQ(host[original], current[original]);
        device[original] = host[original];
      }
      continue;
    }
    if (next >= p.instructions.size()) {
      ADD_FAILURE() << "more instructions than the plan's";
      return copies;
    }
    const PlanInstruction& o = p.instructions[next];
    EXPECT_EQ(i.node, o.node);
    const bool on_host = where[next] == Where::Host;
    EXPECT_EQ(i.device, on_host ? "cpu" : "cuda");
    EXPECT_EQ(i.stream, where[next] == Where::Nothing ? -1 : 0);
    std::map<int, int>& mine = on_host ? host : device;
    for (size_t a = 0; a < i.inputs.size(); ++a) {
      if (i.inputs[a] < 0) continue;
      const PlanBuffer& b = placed.buffers.at(static_cast<size_t>(i.inputs[a]));
      EXPECT_EQ(b.value, p.buffers.at(static_cast<size_t>(o.inputs[a])).value);
      if (b.kind == BufferKind::Constant) {
        EXPECT_EQ(b.mirror_of, -1) << "weights are on both devices";
        continue;
      }
      EXPECT_EQ(b.mirror_of >= 0, on_host) << "input " << a;
      const int r = original_root(placed, i.inputs[a]);
      if (where[next] != Where::Nothing) {  // what launches nothing reads nothing
        EXPECT_EQ(mine[r], current[r]) << "input " << a << " ('" << b.value << "') is stale on its device";
      }
    }
    for (size_t a = 0; a < i.outputs.size(); ++a) {
      const PlanBuffer& b = placed.buffers.at(static_cast<size_t>(i.outputs[a]));
      EXPECT_EQ(b.value, p.buffers.at(static_cast<size_t>(o.outputs[a])).value);
      EXPECT_EQ(b.mirror_of >= 0, on_host) << "output " << a;
      const int r = original_root(placed, i.outputs[a]);
      if (where[next] != Where::Nothing) mine[r] = ++current[r];  // what launches nothing writes nothing
    }
    ++next;
  }
  EXPECT_EQ(next, p.instructions.size());
  for (int id : placed.graph_outputs) EXPECT_EQ(device[root(placed, id)], current[root(placed, id)]) << "output " << id;
  return copies;
}

TEST(PlaceOnDevices, CopiesWhatTheHostReadsAndWritesBackWhatItWrites) {
  Builder b;
  const int x = b.buffer(BufferKind::Input), w = b.buffer(BufferKind::Constant);
  const int t1 = b.buffer(BufferKind::Intermediate), t2 = b.buffer(BufferKind::Intermediate);
  const int view = b.buffer(BufferKind::Intermediate, t2), t3 = b.buffer(BufferKind::Intermediate);
  const int y = b.buffer(BufferKind::Output);
  const int out2 = b.buffer(BufferKind::Output);
  b.instruction({x, w}, {t1});            // gpu
  b.instruction({t1, x}, {t2});           // cpu: t1 and x to the host; t2 not back, no gpu reads it
  b.instruction({t2}, {view});            // a view on the gpu: launches nothing
  b.instruction({view, t1}, {t3, out2});  // cpu: everything still valid on the host; out2 back at once
  b.instruction({t3, w}, {y});            // gpu: t3 back first
  const std::vector<Where> where{Where::Accelerator, Where::Host, Where::Nothing, Where::Host, Where::Accelerator};
  const ExecutablePlan placed = place_on_devices(b.p, where, "cuda");
  EXPECT_EQ(check_placed(b.p, placed, where), 4);
  std::vector<std::string> ops;
  for (const PlanInstruction& i : placed.instructions) ops.push_back(i.is_copy() ? i.spec.impl + " " + i.node : i.node);
  EXPECT_EQ(ops, (std::vector<std::string>{"n0", "to_host v2", "to_host v0", "n1", "n2", "n3", "to_device v7",
                                           "to_device v5", "n4"}));
  ASSERT_EQ(placed.arenas.size(), 2u);
  // The report counts them.
  const std::string report = placement_report({placed}, true);
  EXPECT_NE(report.find("3 instructions on the GPU, 2 on the CPU (Op); 2 copies to the host (32 bytes), 2 to the device (32 bytes)"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("kiln.Copy 'v0'  cuda  stream 0  to host: input 0 (16 bytes)"), std::string::npos) << report;

  // As data: it survives JSON, and the runtime does not take it.
  const ExecutablePlan again = plan::executable_plan_from_json(plan::to_json(placed));
  EXPECT_EQ(plan::to_json(again), plan::to_json(placed));
  EXPECT_EQ(again.buffers.at(static_cast<size_t>(placed.instructions[1].outputs[0])).mirror_of, t1);
  ir::Graph g;
  EXPECT_THROW(plan::program_of(placed, g), Error);
  EXPECT_THROW(place_on_devices(placed, std::vector<Where>(placed.instructions.size()), "cuda"), Error);
  EXPECT_THROW(place_on_devices(b.p, {Where::Host}, "cuda"), Error);
}

// A damaged or hand-edited placed plan: a clear error for each field that does not hold.
TEST(PlaceOnDevices, ItsJsonRejectsWhatDoesNotHold) {
  Builder b;
  const int x = b.buffer(BufferKind::Input), t = b.buffer(BufferKind::Intermediate), y = b.buffer(BufferKind::Output);
  b.instruction({x}, {t});
  b.instruction({t}, {y});
  const ExecutablePlan placed = place_on_devices(b.p, {Where::Accelerator, Where::Host}, "cuda");
  const nlohmann::json good = plan::to_json(placed);
  ASSERT_EQ(good["instructions"][1]["op"], "Copy");
  ASSERT_TRUE(good["buffers"][3].contains("mirror_of"));
  std::vector<std::pair<std::string, std::function<void(nlohmann::json&)>>> edits = {
      {"a node-less instruction that is no copy", [](nlohmann::json& j) { j["instructions"][0]["node_index"] = -1; }},
      {"a copy without a device", [](nlohmann::json& j) { j["instructions"][1].erase("device"); }},
      {"a copy with two inputs", [](nlohmann::json& j) { j["instructions"][1]["inputs"] = {0, 1}; }},
      {"a wait for a later instruction", [](nlohmann::json& j) { j["instructions"][1]["after"] = {3}; }},
      {"an empty device", [](nlohmann::json& j) { j["instructions"][0]["device"] = ""; }},
      {"a stream that is no number", [](nlohmann::json& j) { j["instructions"][0]["stream"] = "one"; }},
      {"a mirror of a later buffer", [](nlohmann::json& j) { j["buffers"][3]["mirror_of"] = 5; }},
      {"an arena that is not there", [](nlohmann::json& j) { j["buffers"][1]["arena"] = 2; }},
      {"no arena", [](nlohmann::json& j) { j["arenas"] = nlohmann::json::array(); }},
  };
  for (auto& [what, edit] : edits) {
    nlohmann::json j = good;
    edit(j);
    EXPECT_THROW(plan::executable_plan_from_json(j), Error) << what;
  }
}

TEST(PlaceOnDevices, AnUnplacedPlanGetsNoCopiesAndOneArena) {
  Builder b;
  const int x = b.buffer(BufferKind::Input), t = b.buffer(BufferKind::Intermediate), y = b.buffer(BufferKind::Output);
  b.instruction({x}, {t});
  b.instruction({t}, {y});
  const std::vector<Where> where(2, Where::Accelerator);
  const ExecutablePlan placed = place_on_devices(b.p, where, "cuda");
  EXPECT_EQ(check_placed(b.p, placed, where), 0);
  EXPECT_EQ(placed.arenas.size(), 1u);
  EXPECT_EQ(placed.buffers.size(), b.p.buffers.size());
}

TEST(PlaceOnDevices, RandomPlansComputeWhatTheirPlanDoes) {
  std::mt19937 rng(17);
  for (int trial = 0; trial < 300; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    Builder b;
    std::vector<int> readable;  // buffers an instruction may read
    for (int k = 0; k < 1 + static_cast<int>(rng() % 3); ++k) readable.push_back(b.buffer(BufferKind::Input));
    for (int k = 0; k < static_cast<int>(rng() % 3); ++k) readable.push_back(b.buffer(BufferKind::Constant));
    const int n = 2 + static_cast<int>(rng() % 12);
    std::vector<Where> where;
    for (int i = 0; i < n; ++i) {
      std::vector<int> in;
      for (int k = 0; k < 1 + static_cast<int>(rng() % 3); ++k) in.push_back(readable[rng() % readable.size()]);
      if (rng() % 5 == 0) in.push_back(-1);  // an absent optional input
      std::vector<int> out;
      const int kind = static_cast<int>(rng() % 6);
      const int r = root(b.p, in[0]);
      const bool writable = b.p.buffers[static_cast<size_t>(r)].kind == BufferKind::Intermediate;
      if (kind == 0 && writable) {
        out.push_back(b.buffer(BufferKind::Intermediate, r, true));  // in place
      } else if (kind == 1 && writable) {
        out.push_back(b.buffer(BufferKind::Intermediate, in[0]));  // a view
      } else {
        for (int k = 0; k < 1 + static_cast<int>(rng() % 2); ++k)
          out.push_back(b.buffer(rng() % 4 == 0 ? BufferKind::Output : BufferKind::Intermediate));
      }
      b.instruction(in, out);
      for (int o : out) readable.push_back(o);
      const int w = static_cast<int>(rng() % 3);
      where.push_back(kind == 1 && writable && w == 2 ? Where::Nothing : w == 1 ? Where::Host : Where::Accelerator);
    }
    const ExecutablePlan placed = place_on_devices(b.p, where, "cuda");
    check_placed(b.p, placed, where);
    EXPECT_EQ(plan::to_json(plan::executable_plan_from_json(plan::to_json(placed))), plan::to_json(placed));
    if (HasFailure()) break;
  }
}

}  // namespace
}  // namespace kiln::codegen
