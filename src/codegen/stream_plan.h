// The accelerator's streams for placed plans (device_plan.h), stored in them: each instruction
// that launches something gets its stream (PlanInstruction::stream) and the earlier instructions
// on other streams it must wait for (after).
//
// With more than one stream, a first schedule (streams.h) sees dataflow alone: an arena operand
// is its buffer, not its bytes, so the memory plan's reuse of bytes orders nothing yet. The
// device arena is then placed again for that schedule (stream_memory.h; the host mirrors follow
// their originals), and a second schedule over the placed bytes keeps the first one's streams and
// derives the waits. A CPU instruction also writes a token every CPU instruction shares, so that
// they run one after another (they share the host mirror and its error slot).
#pragma once
#include <vector>

#include "codegen/plan_walk.h"
#include "plan/executable_plan.h"

namespace kiln::codegen {

// Assigns streams (at most `max_streams`; 1: every instruction in plan order on stream 0) to
// each placed[g], whose graph is sources[g].graph; may move placed[g]'s device arena buffers.
void assign_streams(std::vector<plan::ExecutablePlan>& placed, const std::vector<PlanSource>& sources, int max_streams);

}  // namespace kiln::codegen
