// Static memory planning: every arena buffer of a Program gets an offset in one 64-byte
// aligned arena such that no two buffers live at the same time overlap.
//
//   step:     0    1    2    3    4
//   b2        ████████████                 live [0, 2]
//   b5                  ████████████       live [2, 4]  -> may not share bytes with b2
//   b7                            ██       live [4, 4]  -> may reuse b2's bytes
//
// A buffer is live from the instruction that writes it to the last instruction that reads it
// or any alias of it (views, in-place results). Placement: greedy passes (buffers by size, first
// use, size x lifetime, lifetime; each at the best-fitting or the lowest gap among the buffers
// live with it) keep the smallest arena; when that is above the lower bound, a bounded local
// search over the placement order improves it. check_plan proves the result.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "lower/program.h"

namespace kiln::plan {

constexpr int64_t kAlignment = 64;

struct Placement {
  int buffer = -1;
  int64_t offset = 0, size = 0;  // size rounded up to kAlignment
  int first = 0, last = 0;       // live range in instruction steps (inclusive)
};

struct MemoryPlan {
  std::vector<Placement> placements;  // one per arena (root, Intermediate) buffer
  int64_t arena_bytes = 0;
  int64_t lower_bound_bytes = 0;  // max over steps of the live bytes
  int64_t naive_bytes = 0;        // every buffer on its own
  std::string strategy;
  // offset_of[buffer id] for every buffer whose root is in the arena, else -1.
  std::vector<int64_t> offset_of;
};

// Live ranges of the arena buffers (roots), extended over their aliases' uses.
std::vector<Placement> live_ranges(const lower::Program& p);
MemoryPlan plan_memory(const lower::Program& p);
// Independent check: every arena buffer placed inside the arena, aligned, and no two
// buffers with overlapping live ranges share a byte. Returns "" when fine, else the problem.
std::string check_plan(const lower::Program& p, const MemoryPlan& m);

}  // namespace kiln::plan
