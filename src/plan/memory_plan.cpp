#include "plan/memory_plan.h"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <random>

namespace kiln::plan {

namespace {

int64_t align(int64_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

bool overlaps_in_time(const Placement& a, const Placement& b) { return a.first <= b.last && b.first <= a.last; }

// For each buffer, the buffers whose live ranges overlap its own (a sweep in first-use order).
std::vector<std::vector<int>> time_conflicts(const std::vector<Placement>& ps) {
  std::vector<int> by_first(ps.size());
  std::iota(by_first.begin(), by_first.end(), 0);
  std::stable_sort(by_first.begin(), by_first.end(), [&](int a, int b) { return ps[a].first < ps[b].first; });
  std::vector<std::vector<int>> adj(ps.size());
  std::vector<int> active;
  for (int i : by_first) {
    std::erase_if(active, [&](int j) { return ps[j].last < ps[i].first; });
    for (int j : active) {
      adj[i].push_back(j);
      adj[j].push_back(i);
    }
    active.push_back(i);
  }
  return adj;
}

enum class Fit {
  Best,    // the smallest gap that holds the buffer (TFLite's greedy-by-size)
  Lowest,  // the lowest gap that holds it
};

// Places the buffers in `order`, each in a gap between the already-placed buffers whose live
// ranges overlap its own, or on top of them when no gap holds it. The first `from` buffers of
// `order` keep the offsets they have in `ps`. Returns the arena size, or something above
// `limit` as soon as the arena grows past it.
int64_t place(std::vector<Placement>& ps, const std::vector<std::vector<int>>& conflicts,
              const std::vector<int>& order, Fit fit, int64_t limit = INT64_MAX, size_t from = 0) {
  std::vector<char> placed(ps.size(), 0);
  std::vector<std::pair<int64_t, int64_t>> busy;
  int64_t arena = 0;
  for (size_t k = 0; k < from; ++k) {
    placed[order[k]] = 1;
    arena = std::max(arena, ps[order[k]].offset + ps[order[k]].size);
  }
  for (size_t k = from; k < order.size(); ++k) {
    Placement& p = ps[order[k]];
    busy.clear();
    for (int j : conflicts[order[k]])
      if (placed[j]) busy.push_back({ps[j].offset, ps[j].offset + ps[j].size});
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0, best = -1, best_gap = INT64_MAX;
    for (auto [lo, hi] : busy) {
      if (lo - offset >= p.size && lo - offset < best_gap) {
        best = offset;
        best_gap = lo - offset;
        if (fit == Fit::Lowest) break;
      }
      offset = std::max(offset, hi);
    }
    p.offset = best >= 0 ? best : offset;
    arena = std::max(arena, p.offset + p.size);
    if (arena > limit) return arena;
    placed[order[k]] = 1;
  }
  return arena;
}

// Local search over placement orders, decoded with Fit::Lowest. Any placement is reproduced or
// improved by placing its buffers in increasing offset order at the lowest fitting gap (each
// buffer's old offset stays free, since the buffers placed before it only moved down), so the
// search starts from `ps` at no loss, and some order reaches the optimum. A move takes a buffer
// that ends at the arena's top and places it earlier, or moves one of the buffers live with it
// elsewhere in the order; only the order's suffix from the first moved position is re-placed,
// and a move that does not grow the arena is kept. Deterministic (fixed seed), bounded by work
// (buffers and conflicts visited), stops at `lower_bound`. Returns the arena size and leaves
// the best placement found in `ps`; INT64_MAX (and `ps` untouched) when the program is too
// large for a useful number of moves within the budget.
int64_t search(std::vector<Placement>& ps, const std::vector<std::vector<int>>& conflicts, int64_t lower_bound) {
  constexpr int64_t kWorkBudget = int64_t{1} << 18;  // a few milliseconds
  const int n = static_cast<int>(ps.size());
  int64_t cost = n;  // work of placing every buffer once
  for (const auto& c : conflicts) cost += static_cast<int64_t>(c.size());
  if (cost * 16 > kWorkBudget) return INT64_MAX;  // too few moves affordable to be worth it
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return ps[a].offset < ps[b].offset; });
  int64_t arena = place(ps, conflicts, order, Fit::Lowest);
  const int patience = std::max(1000, 4 * n);  // moves without a strict improvement
  std::mt19937 rng(0x6b696c6e);
  std::vector<int> top, trial;
  std::vector<Placement> trial_ps;
  int64_t work = cost;
  for (int stale = 0; arena > lower_bound && work < kWorkBudget && stale < patience; ++stale) {
    top.clear();
    for (int i = 0; i < n; ++i)
      if (ps[i].offset + ps[i].size == arena) top.push_back(i);
    int pick = top[rng() % top.size()];
    int pos = static_cast<int>(std::find(order.begin(), order.end(), pick) - order.begin());
    int from = pos, to = pos;
    if (rng() % 2 == 0 && pos > 0) {
      to = static_cast<int>(rng() % pos);
    } else if (!conflicts[pick].empty()) {
      int other = conflicts[pick][rng() % conflicts[pick].size()];
      from = static_cast<int>(std::find(order.begin(), order.end(), other) - order.begin());
      to = static_cast<int>(rng() % n);
    }
    work += n + cost * (n - std::min(from, to)) / n;
    if (from == to) continue;
    trial = order;
    int moved = trial[from];
    trial.erase(trial.begin() + from);
    trial.insert(trial.begin() + to, moved);
    trial_ps = ps;
    int64_t a = place(trial_ps, conflicts, trial, Fit::Lowest, arena, std::min(from, to));
    if (a > arena) continue;
    if (a < arena) stale = -1;
    arena = a;
    order.swap(trial);
    ps.swap(trial_ps);
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
  // Live bytes per step: +size where a range starts, -size after it ends.
  std::vector<int64_t> live(p.instructions.size() + 1, 0);
  for (const Placement& pl : ps) {
    m.naive_bytes += pl.size;
    live[pl.first] += pl.size;
    live[pl.last + 1] -= pl.size;
  }
  for (size_t s = 1; s < live.size(); ++s) live[s] += live[s - 1];
  m.lower_bound_bytes = *std::max_element(live.begin(), live.end());

  const std::vector<std::vector<int>> conflicts = time_conflicts(ps);
  auto life = [&](int i) { return static_cast<int64_t>(ps[i].last - ps[i].first + 1); };
  struct Order {
    const char* name;
    std::function<bool(int, int)> before;
  };
  const Order orders[] = {
      {"size", [&](int a, int b) {
         return ps[a].size != ps[b].size ? ps[a].size > ps[b].size : ps[a].first < ps[b].first;
       }},
      {"first-use", [&](int a, int b) {
         return ps[a].first != ps[b].first ? ps[a].first < ps[b].first : ps[a].size > ps[b].size;
       }},
      {"area", [&](int a, int b) {
         int64_t x = ps[a].size * life(a), y = ps[b].size * life(b);
         return x != y ? x > y : ps[a].size > ps[b].size;
       }},
      {"lifetime", [&](int a, int b) { return life(a) != life(b) ? life(a) > life(b) : ps[a].size > ps[b].size; }},
  };
  m.arena_bytes = INT64_MAX;
  for (const Order& o : orders) {
    if (m.arena_bytes == m.lower_bound_bytes) break;  // optimal
    std::vector<int> order(ps.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), o.before);
    for (Fit fit : {Fit::Best, Fit::Lowest}) {
      std::vector<Placement> trial = ps;
      int64_t arena = place(trial, conflicts, order, fit, m.arena_bytes);
      if (arena >= m.arena_bytes) continue;
      m.arena_bytes = arena;
      m.placements = std::move(trial);
      m.strategy = std::string("greedy-by-") + o.name + (fit == Fit::Best ? ", best fit" : ", lowest fit");
    }
  }
  if (m.arena_bytes > m.lower_bound_bytes) {
    std::vector<Placement> improved = m.placements;
    int64_t arena = search(improved, conflicts, m.lower_bound_bytes);
    if (arena < m.arena_bytes) {
      m.arena_bytes = arena;
      m.placements = std::move(improved);
      m.strategy += " + local search";
    }
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
  // A view or an in-place result lives in its root's storage: it must fit there.
  for (const lower::Buffer& b : p.buffers) {
    if (b.alias_of < 0) continue;
    const lower::Buffer& r = p.buffers[p.root(b.id)];
    if (r.kind == lower::BufferKind::Intermediate && b.bytes > r.bytes)
      return "buffer " + std::to_string(b.id) + " (" + std::to_string(b.bytes) + " bytes) lives in buffer " +
             std::to_string(r.id) + ", which holds " + std::to_string(r.bytes);
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
