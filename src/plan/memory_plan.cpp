#include "plan/memory_plan.h"

#include <algorithm>
#include <map>

namespace kiln::plan {

namespace {

int64_t align(int64_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

bool overlaps_in_time(const Placement& a, const Placement& b) { return a.first <= b.last && b.first <= a.last; }

// Places buffers in the given order, each at the lowest offset that fits between the
// already-placed buffers whose live ranges overlap its own (best gap first-fit).
int64_t place(std::vector<Placement>& ps, const std::vector<size_t>& order) {
  std::vector<size_t> placed;
  int64_t arena = 0;
  for (size_t i : order) {
    Placement& p = ps[i];
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (size_t j : placed)
      if (overlaps_in_time(p, ps[j])) busy.push_back({ps[j].offset, ps[j].offset + ps[j].size});
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0, best = -1, best_gap = INT64_MAX;
    for (auto [lo, hi] : busy) {
      if (lo - offset >= p.size && lo - offset < best_gap) {
        best = offset;
        best_gap = lo - offset;
      }
      offset = std::max(offset, hi);
    }
    p.offset = best >= 0 ? best : offset;
    arena = std::max(arena, p.offset + p.size);
    placed.push_back(i);
  }
  return arena;
}

}  // namespace

std::vector<Placement> live_ranges(const lower::Program& p) {
  std::map<int, Placement> by_root;
  auto touch = [&](int id, int step) {
    if (id < 0) return;
    int r = p.root(id);
    const lower::Buffer& b = p.buffers[r];
    if (b.kind != lower::BufferKind::Intermediate) return;
    auto [it, fresh] = by_root.try_emplace(r);
    Placement& pl = it->second;
    if (fresh) {
      pl.buffer = r;
      pl.size = align(std::max<int64_t>(b.bytes, 1));
      pl.first = pl.last = step;
    }
    pl.first = std::min(pl.first, step);
    pl.last = std::max(pl.last, step);
  };
  for (size_t s = 0; s < p.instructions.size(); ++s) {
    const auto& ins = p.instructions[s];
    for (int id : ins.outputs) touch(id, static_cast<int>(s));
    for (int id : ins.inputs) touch(id, static_cast<int>(s));
  }
  std::vector<Placement> out;
  for (auto& [r, pl] : by_root) out.push_back(pl);
  return out;
}

MemoryPlan plan_memory(const lower::Program& p) {
  MemoryPlan m;
  std::vector<Placement> ps = live_ranges(p);
  int steps = static_cast<int>(p.instructions.size());
  std::vector<int64_t> live(std::max(steps, 1), 0);
  for (const Placement& pl : ps) {
    m.naive_bytes += pl.size;
    for (int s = pl.first; s <= pl.last; ++s) live[s] += pl.size;
  }
  m.lower_bound_bytes = ps.empty() ? 0 : *std::max_element(live.begin(), live.end());

  std::vector<size_t> by_size(ps.size()), by_first(ps.size());
  for (size_t i = 0; i < ps.size(); ++i) by_size[i] = by_first[i] = i;
  std::stable_sort(by_size.begin(), by_size.end(), [&](size_t a, size_t b) {
    return ps[a].size != ps[b].size ? ps[a].size > ps[b].size : ps[a].first < ps[b].first;
  });
  std::stable_sort(by_first.begin(), by_first.end(), [&](size_t a, size_t b) {
    return ps[a].first != ps[b].first ? ps[a].first < ps[b].first : ps[a].size > ps[b].size;
  });
  std::vector<Placement> a = ps, b = ps;
  int64_t size_a = place(a, by_size), size_b = place(b, by_first);
  if (size_a <= size_b) {
    m.placements = std::move(a);
    m.arena_bytes = size_a;
    m.strategy = "greedy-by-size";
  } else {
    m.placements = std::move(b);
    m.arena_bytes = size_b;
    m.strategy = "greedy-by-first-use";
  }
  m.offset_of.assign(p.buffers.size(), -1);
  std::map<int, int64_t> root_offset;
  for (const Placement& pl : m.placements) root_offset[pl.buffer] = pl.offset;
  for (const lower::Buffer& buf : p.buffers) {
    auto it = root_offset.find(p.root(buf.id));
    if (it != root_offset.end()) m.offset_of[buf.id] = it->second;
  }
  return m;
}

std::string check_plan(const lower::Program& p, const MemoryPlan& m) {
  std::vector<Placement> expect = live_ranges(p);
  if (expect.size() != m.placements.size())
    return "plan places " + std::to_string(m.placements.size()) + " buffers, program has " +
           std::to_string(expect.size());
  for (const Placement& pl : m.placements) {
    const lower::Buffer& b = p.buffers[pl.buffer];
    if (pl.offset % kAlignment) return "buffer " + std::to_string(pl.buffer) + " is not aligned";
    if (pl.size < b.bytes) return "buffer " + std::to_string(pl.buffer) + " is smaller than its value";
    if (pl.offset < 0 || pl.offset + pl.size > m.arena_bytes)
      return "buffer " + std::to_string(pl.buffer) + " lies outside the arena";
  }
  // Recompute live ranges independently of the stored ones.
  std::map<int, const Placement*> by_buffer;
  for (const Placement& pl : m.placements) by_buffer[pl.buffer] = &pl;
  for (const Placement& e : expect) {
    auto it = by_buffer.find(e.buffer);
    if (it == by_buffer.end()) return "buffer " + std::to_string(e.buffer) + " is not placed";
  }
  for (size_t i = 0; i < expect.size(); ++i)
    for (size_t j = i + 1; j < expect.size(); ++j) {
      if (!overlaps_in_time(expect[i], expect[j])) continue;
      const Placement& a = *by_buffer[expect[i].buffer];
      const Placement& b = *by_buffer[expect[j].buffer];
      if (a.offset < b.offset + b.size && b.offset < a.offset + a.size)
        return "buffers " + std::to_string(a.buffer) + " and " + std::to_string(b.buffer) +
               " are live at the same time and overlap in the arena";
    }
  return "";
}

}  // namespace kiln::plan
