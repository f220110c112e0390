// The arena of a plan whose instructions run on several streams. The memory plan places buffers
// for one instruction at a time: a buffer's bytes go to a later one once its last reader has run
// in plan order. On streams that reuse would order branches that dataflow leaves independent (a
// wait for the last reader before the next writer), so the target places the arena again for the
// schedule: two buffers share bytes only when every access of one happens before every access
// of the other (stream order and waits, as the schedule's vector clocks say).
//
//   stream 0:  a = conv(x)   b = conv(a)            cat(b, c)
//   stream 1:                c = conv(a)            (after a; cat after c)
//   b and c may be live at once: never the same bytes; a and cat's output: a ends before cat
//   starts on every stream, so they may.
#pragma once
#include <vector>

#include "codegen/streams.h"
#include "plan/executable_plan.h"

namespace kiln::codegen {

// One scheduled instruction and the arena buffers (plan buffer ids of roots) it touches.
struct ScheduledAccess {
  StreamStep step;
  std::vector<int> roots;
};

// Places every device arena root of `plan` at new offsets (its arena grows as needed; `steps`
// say when each is touched): largest first, each at the lowest offset clear of every buffer it
// may be live with. Aliases follow their roots, host mirrors (device_plan.h) their originals.
// A kiln::Error if a root `steps` name is not a device arena buffer.
void place_for_streams(plan::ExecutablePlan& plan, const std::vector<ScheduledAccess>& steps);

}  // namespace kiln::codegen
