#include "codegen/stream_memory.h"

#include <kiln/error.h>

#include <algorithm>
#include <map>

#include "plan/memory_plan.h"

namespace kiln::codegen {

void place_for_streams(plan::ExecutablePlan& plan, const std::vector<ScheduledAccess>& steps) {
  // Per root, the steps that touch it, in order.
  std::map<int, std::vector<int>> access;
  for (size_t id = 0; id < plan.buffers.size(); ++id) {  // every arena root, touched or not
    const plan::PlanBuffer& b = plan.buffers[id];
    if (b.arena >= 0 && b.alias_of < 0 && b.mirror_of < 0) access[static_cast<int>(id)];
  }
  for (size_t k = 0; k < steps.size(); ++k)
    for (int r : steps[k].roots) {
      std::vector<int>& a = access[r];
      if (a.empty() || a.back() != static_cast<int>(k)) a.push_back(static_cast<int>(k));
    }
  struct Root {
    int id;
    int64_t size;
    const std::vector<int>* steps;
  };
  std::vector<Root> roots;
  for (const auto& [id, a] : access) {
    const plan::PlanBuffer& b = plan.buffers.at(static_cast<size_t>(id));
    if (b.arena < 0 || b.alias_of >= 0 || b.mirror_of >= 0 || b.bytes < 0)
      throw Error("code generation: buffer " + std::to_string(id) + " ('" + b.value + "') is not a device arena root");
    roots.push_back({id, (std::max<int64_t>(b.bytes, 1) + plan::kAlignment - 1) / plan::kAlignment * plan::kAlignment, &a});
  }
  // Whether every access of x has ended before any access of y starts.
  auto before = [&](const Root& x, const Root& y) {
    for (int b : *y.steps)
      for (int a : *x.steps)
        if (a == b || !steps[static_cast<size_t>(b)].step.after(steps[static_cast<size_t>(a)].step)) return false;
    return true;
  };
  std::stable_sort(roots.begin(), roots.end(), [](const Root& a, const Root& b) { return a.size > b.size; });
  struct Placed {
    int64_t offset, end;
    size_t root;
  };
  std::vector<Placed> placed;
  std::map<int, int64_t> moved;  // root -> how far it moved
  int64_t arena = 0;
  for (size_t i = 0; i < roots.size(); ++i) {
    std::vector<std::pair<int64_t, int64_t>> taken;  // bytes of the buffers it may be live with
    for (const Placed& p : placed)
      if (!before(roots[p.root], roots[i]) && !before(roots[i], roots[p.root])) taken.emplace_back(p.offset, p.end);
    std::sort(taken.begin(), taken.end());
    int64_t offset = 0;
    for (const auto& [b, e] : taken) {
      if (b >= offset + roots[i].size) break;
      offset = std::max(offset, e);
    }
    placed.push_back({offset, offset + roots[i].size, i});
    arena = std::max(arena, offset + roots[i].size);
    plan::PlanBuffer& b = plan.buffers[static_cast<size_t>(roots[i].id)];
    moved[roots[i].id] = offset - b.offset;
    b.offset = offset;
  }
  for (plan::PlanBuffer& b : plan.buffers) {  // aliases keep their place in their roots
    if (b.alias_of < 0 || b.arena < 0 || b.offset < 0 || b.mirror_of >= 0) continue;
    int root = b.alias_of;
    for (size_t hops = 0; plan.buffers.at(static_cast<size_t>(root)).alias_of >= 0 && hops <= plan.buffers.size(); ++hops)
      root = plan.buffers[static_cast<size_t>(root)].alias_of;
    if (auto it = moved.find(root); it != moved.end()) b.offset += it->second;
  }
  for (plan::PlanBuffer& b : plan.buffers)  // host mirrors keep their originals' offsets
    if (b.mirror_of >= 0 && b.arena >= 0) b.offset = plan.buffers.at(static_cast<size_t>(b.mirror_of)).offset;
  for (plan::PlanArena& a : plan.arenas) a.bytes = arena;  // the host mirror is the device arena's size
}

}  // namespace kiln::codegen
