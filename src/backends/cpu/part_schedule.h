// How a kernel made of independent parts (kiln.ConvConcat's convs, each writing its own slice
// of the output) uses a team: every part split across all threads one after another ("split"),
// or each part run whole by one thread, the parts dealt out by their cost ("parts"). Dealt, a
// part runs at its one-thread speed with no hand-offs inside it (oneDNN's convs then need no
// OpenMP region of their own), and the threads meet once at the end; it pays where the parts
// can be dealt evenly, as in Inception's blocks of three or four branches.
#pragma once
#include <string>
#include <vector>

namespace kiln::backends::cpu {

// Parts dealt to `threads` threads, largest cost first, each to the thread with the least so
// far (longest processing time first): the parts of thread t, in the order dealt.
std::vector<std::vector<int>> deal_parts(const std::vector<double>& costs, int threads);

// The dealt threads' largest total over an even share (total / threads): 1 is perfectly even.
double dealt_imbalance(const std::vector<double>& costs, const std::vector<std::vector<int>>& by_thread);

// A kernel split across a team does its share at roughly 90% of its one-thread speed (hand-offs,
// shares of uneven size, both cores reading the same weights): the deal is chosen while its
// slowest thread carries at most this much over an even share. `--tune` times both.
constexpr double kDealtMaxImbalance = 1.10;

// "parts" or "split" for parts of these costs on `threads` threads.
std::string part_schedule_rule(const std::vector<double>& costs, int threads);

}  // namespace kiln::backends::cpu
