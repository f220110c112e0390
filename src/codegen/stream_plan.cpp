#include "codegen/stream_plan.h"

#include <kiln/error.h>

#include <algorithm>
#include <cstdint>

#include "codegen/stream_memory.h"
#include "codegen/streams.h"

namespace kiln::codegen {

namespace {

// What a launching instruction touches: regions for the scheduler, the device arena roots for
// stream_memory.h (a host mirror's access counts as its original's: they share offsets).
struct Access {
  int index = -1;  // the instruction
  std::vector<Region> reads, writes;
  std::vector<int> roots;
};

// Address spaces of regions: the device arena, its host mirror, the CPU instructions' token,
// then per input and per output one on the device and one on the host.
constexpr int kDeviceArena = 0, kHostArena = 1, kHostToken = 2, kFirstIo = 3;

class AccessWalk : public Emitter {
 public:
  AccessWalk(const plan::ExecutablePlan& p, bool by_buffer) : p_(p), by_buffer_(by_buffer) {}
  std::vector<Access> steps;

  void begin(int, const PlanSource&, const std::vector<Operand>&, const std::vector<Operand>&) override {}
  void end() override {}
  void step(const Step& s) override {
    const plan::PlanInstruction& pi = *s.instruction;
    if (pi.stream < 0) return;
    Access a;
    a.index = s.index;
    a.reads = regions(s.inputs);
    a.writes = regions(s.outputs);
    if (pi.device == "cpu" && !pi.is_copy()) a.writes.push_back({kHostToken, 0, 1});
    for (const std::vector<Operand>* ops : {&s.inputs, &s.outputs})
      for (const Operand& o : *ops)
        if (o.buffer >= 0 && o.storage.kind == StorageKind::Arena) a.roots.push_back(device_root(o.buffer));
    steps.push_back(std::move(a));
  }

 private:
  int device_root(int id) const {
    for (size_t hops = 0; hops <= 2 * p_.buffers.size(); ++hops) {
      const plan::PlanBuffer& b = p_.buffers.at(static_cast<size_t>(id));
      if (b.alias_of >= 0)
        id = b.alias_of;
      else if (b.mirror_of >= 0)
        id = b.mirror_of;
      else
        return id;
    }
    throw Error("stream assignment: buffer aliases or mirrors form a cycle");
  }

  std::vector<Region> regions(const std::vector<Operand>& operands) const {
    constexpr int64_t kWhole = INT64_MAX;
    std::vector<Region> r;
    for (const Operand& o : operands) {
      if (o.buffer < 0) continue;
      const int host = o.storage.host ? 1 : 0;
      switch (o.storage.kind) {
        case StorageKind::Constant: break;  // weights are read-only
        case StorageKind::Input: r.push_back({kFirstIo + 4 * o.storage.index + host, 0, kWhole}); break;
        case StorageKind::Output: r.push_back({kFirstIo + 4 * o.storage.index + 2 + host, 0, kWhole}); break;
        case StorageKind::Arena:
          if (by_buffer_)
            r.push_back({-1 - o.root, 0, 1});  // a mirror's root is a buffer of its own
          else
            r.push_back({host ? kHostArena : kDeviceArena, o.storage.offset,
                         o.storage.offset + std::max<int64_t>({o.root_bytes, o.bytes(), 1})});
          break;
      }
    }
    return r;
  }

  const plan::ExecutablePlan& p_;
  bool by_buffer_;
};

std::vector<Access> accesses(const plan::ExecutablePlan& p, const PlanSource& source, bool by_buffer) {
  PlanSource s = source;
  s.plan = &p;
  AccessWalk w(p, by_buffer);
  walk_plan(0, s, w);
  return w.steps;
}

}  // namespace

void assign_streams(std::vector<plan::ExecutablePlan>& placed, const std::vector<PlanSource>& sources, int max_streams) {
  if (placed.size() != sources.size()) throw Error("stream assignment: plans and sources differ in number");
  for (size_t g = 0; g < placed.size(); ++g) {
    plan::ExecutablePlan& p = placed[g];
    std::vector<int> given;  // per launching instruction, the dataflow schedule's stream
    if (max_streams > 1) {
      const std::vector<Access> flow = accesses(p, sources[g], true);
      StreamScheduler scheduler(max_streams);
      std::vector<ScheduledAccess> scheduled;
      for (size_t k = 0; k < flow.size(); ++k) {
        StreamStep st = scheduler.add(static_cast<int>(k), flow[k].reads, flow[k].writes);
        given.push_back(st.stream);
        scheduled.push_back({std::move(st), flow[k].roots});
      }
      place_for_streams(p, scheduled);
    }
    const std::vector<Access> bytes = accesses(p, sources[g], false);
    StreamScheduler scheduler(max_streams);
    for (size_t k = 0; k < bytes.size(); ++k) {
      const StreamStep st =
          scheduler.add(static_cast<int>(k), bytes[k].reads, bytes[k].writes, given.empty() ? -1 : given.at(k));
      plan::PlanInstruction& ins = p.instructions.at(static_cast<size_t>(bytes[k].index));
      ins.stream = st.stream;
      ins.after.clear();
      for (int w : st.waits) ins.after.push_back(bytes.at(static_cast<size_t>(w)).index);
      std::sort(ins.after.begin(), ins.after.end());
    }
  }
}

}  // namespace kiln::codegen
