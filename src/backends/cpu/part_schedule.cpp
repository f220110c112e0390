#include "backends/cpu/part_schedule.h"

#include <algorithm>
#include <numeric>

namespace kiln::backends::cpu {

std::vector<std::vector<int>> deal_parts(const std::vector<double>& costs, int threads) {
  std::vector<std::vector<int>> by_thread(static_cast<size_t>(std::max(1, threads)));
  std::vector<double> load(by_thread.size(), 0.0);
  std::vector<int> order(costs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return costs[a] > costs[b]; });
  for (int part : order) {
    const size_t t = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    by_thread[t].push_back(part);
    load[t] += costs[static_cast<size_t>(part)];
  }
  return by_thread;
}

double dealt_imbalance(const std::vector<double>& costs, const std::vector<std::vector<int>>& by_thread) {
  const double total = std::accumulate(costs.begin(), costs.end(), 0.0);
  if (total <= 0 || by_thread.empty()) return 1.0;
  double largest = 0;
  for (const std::vector<int>& parts : by_thread) {
    double load = 0;
    for (int p : parts) load += costs[static_cast<size_t>(p)];
    largest = std::max(largest, load);
  }
  return largest / (total / static_cast<double>(by_thread.size()));
}

std::string part_schedule_rule(const std::vector<double>& costs, int threads) {
  if (threads < 2 || costs.size() < 2) return "split";
  return dealt_imbalance(costs, deal_parts(costs, threads)) <= kDealtMaxImbalance ? "parts" : "split";
}

}  // namespace kiln::backends::cpu
