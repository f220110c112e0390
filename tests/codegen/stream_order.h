// For the stream tests: which scheduled steps end before each one starts, from the schedule's
// stream order and waits alone (closed transitively), built apart from the scheduler's clocks.
#pragma once
#include <set>
#include <vector>

#include "codegen/streams.h"

namespace kiln::codegen {

// before[i]: the steps (indices into `steps`, whose waits name indices too) that end before step i.
inline std::vector<std::set<int>> happens_before(const std::vector<StreamStep>& steps, int streams) {
  std::vector<std::set<int>> before(steps.size());
  std::vector<int> last_on(static_cast<size_t>(streams), -1);
  for (size_t i = 0; i < steps.size(); ++i) {
    auto add = [&](int j) {
      before[i].insert(j);
      before[i].insert(before[static_cast<size_t>(j)].begin(), before[static_cast<size_t>(j)].end());
    };
    const size_t s = static_cast<size_t>(steps[i].stream);
    if (last_on[s] >= 0) add(last_on[s]);
    for (int w : steps[i].waits) add(w);
    last_on[s] = static_cast<int>(i);
  }
  return before;
}

}  // namespace kiln::codegen
