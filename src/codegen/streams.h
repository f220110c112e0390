// Streams for a plan's independent branches: which instructions an accelerator may run at the
// same time (Rammer's inter-operator parallelism), and the waits that keep everything else in
// order.
//
//   step 3  Conv 'a'       stream 0
//   step 4  Conv 'b1'      stream 0                 reads a
//   step 5  Conv 'b2'      stream 1  after 3        reads a; stream 0 is busy with b1
//   step 6  Concat 'cat'   stream 1  after 4        reads b1 and b2
//
// An instruction depends on every earlier one that wrote bytes it reads or writes, or read bytes
// it writes: dataflow, and the memory plan's reuse of bytes by a later value alike, so the plan's
// offsets stay valid whatever runs concurrently. Each instruction goes to a stream whose
// instructions all precede it already (no false order), preferring the stream of its latest
// dependency (a chain continues without a wait); a new stream is opened only when none is free,
// up to the limit, beyond which the stream whose last instruction came earliest takes it. A
// dependency on another stream becomes a wait unless the streams' vector clocks show it already
// done before.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln::codegen {

// Bytes an instruction touches: [begin, end) of one address space (the arena, an input, ...).
struct Region {
  int space = 0;
  int64_t begin = 0, end = 0;
};

struct StreamStep {
  int stream = 0;
  std::vector<int> waits;  // ids of earlier steps on other streams that must end before this one
  int position = 0;        // its place on its stream: 1 for the stream's first step
  std::vector<int> clock;  // per stream, how many of its steps have ended when this one starts
  // Whether step `a` (scheduled before this one) has ended when this one starts.
  bool after(const StreamStep& a) const {
    return a.stream < static_cast<int>(clock.size()) && clock[static_cast<size_t>(a.stream)] >= a.position;
  }
};

class StreamScheduler {
 public:
  // At most `max_streams` streams (1: everything on stream 0, in order).
  explicit StreamScheduler(int max_streams) : max_streams_(max_streams < 1 ? 1 : max_streams) {}

  // Schedules the next step (ids increase along the plan) that reads and writes these regions,
  // on `stream` when that is given (>= 0; a schedule made before, its waits derived here).
  StreamStep add(int id, const std::vector<Region>& reads, const std::vector<Region>& writes, int stream = -1);
  int streams() const { return static_cast<int>(tail_.size()); }

 private:
  struct Entry {
    int id = -1, stream = 0, position = 0;  // position: 1 for a stream's first step
    std::vector<Region> reads, writes;
    std::vector<int> done;  // per stream, how many of its steps have ended when this one has
  };
  int max_streams_;
  std::vector<Entry> steps_;
  std::vector<int> tail_;  // per stream: the index in steps_ of its last step
};

}  // namespace kiln::codegen
