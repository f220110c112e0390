#include "codegen/streams.h"

#include <algorithm>

namespace kiln::codegen {

namespace {

bool overlap(const std::vector<Region>& a, const std::vector<Region>& b) {
  for (const Region& x : a)
    for (const Region& y : b)
      if (x.space == y.space && x.begin < y.end && y.begin < x.end) return true;
  return false;
}

// Elementwise maximum of two vector clocks (per stream, the steps known ended).
void merge(std::vector<int>& into, const std::vector<int>& from) {
  if (into.size() < from.size()) into.resize(from.size(), 0);
  for (size_t s = 0; s < from.size(); ++s) into[s] = std::max(into[s], from[s]);
}

int at(const std::vector<int>& clock, int stream) {
  return stream < static_cast<int>(clock.size()) ? clock[static_cast<size_t>(stream)] : 0;
}

}  // namespace

StreamStep StreamScheduler::add(int id, const std::vector<Region>& reads, const std::vector<Region>& writes,
                                int stream) {
  // Its dependencies, latest first, and what their ends imply ended.
  std::vector<int> deps;
  std::vector<int> implied;
  for (int k = static_cast<int>(steps_.size()) - 1; k >= 0; --k) {
    const Entry& e = steps_[static_cast<size_t>(k)];
    if (overlap(e.writes, reads) || overlap(e.writes, writes) || overlap(e.reads, writes)) {
      deps.push_back(k);
      merge(implied, e.done);
    }
  }
  // A free stream: all of its steps precede this one already.
  int chosen = stream, chosen_tail = -1;
  while (streams() <= stream) tail_.push_back(-1);
  for (int t = 0; t < streams() && stream < 0; ++t) {
    if (tail_[static_cast<size_t>(t)] < 0) {  // an empty stream (only with given streams)
      if (chosen < 0) chosen = t;
      continue;
    }
    const Entry& tail = steps_[static_cast<size_t>(tail_[static_cast<size_t>(t)])];
    if (at(implied, t) < tail.position) continue;
    const bool continues = std::find(deps.begin(), deps.end(), tail_[static_cast<size_t>(t)]) != deps.end();
    const int rank = continues ? tail_[static_cast<size_t>(t)] : -1;  // the latest dependency's stream first
    if (chosen < 0 || rank > chosen_tail) chosen = t, chosen_tail = rank;
  }
  if (chosen < 0 && streams() < max_streams_) {
    chosen = streams();
    tail_.push_back(-1);
  }
  if (chosen < 0) {  // every stream busy with unrelated work: the one that took its last step earliest
    chosen = 0;
    for (int t = 1; t < streams(); ++t)
      if (tail_[static_cast<size_t>(t)] < tail_[static_cast<size_t>(chosen)]) chosen = t;
  }

  Entry e;
  e.id = id;
  e.stream = chosen;
  e.reads = reads;
  e.writes = writes;
  const int tail = tail_[static_cast<size_t>(chosen)];
  if (tail >= 0) {
    e.done = steps_[static_cast<size_t>(tail)].done;
    e.position = steps_[static_cast<size_t>(tail)].position + 1;
  } else {
    e.position = 1;
  }
  StreamStep out;
  out.stream = chosen;
  for (int k : deps) {  // latest first: a later wait's clock often covers the earlier ones
    const Entry& d = steps_[static_cast<size_t>(k)];
    if (at(e.done, d.stream) >= d.position) continue;
    out.waits.push_back(d.id);
    merge(e.done, d.done);
  }
  if (static_cast<int>(e.done.size()) <= chosen) e.done.resize(static_cast<size_t>(chosen) + 1, 0);
  out.position = e.position;
  out.clock = e.done;
  e.done[static_cast<size_t>(chosen)] = e.position;
  tail_[static_cast<size_t>(chosen)] = static_cast<int>(steps_.size());
  steps_.push_back(std::move(e));
  std::reverse(out.waits.begin(), out.waits.end());
  return out;
}

}  // namespace kiln::codegen
