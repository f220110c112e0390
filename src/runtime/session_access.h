// What kiln's tests and tools may see of a session beyond its public API: the compiled plans
// (their kernels and executable plans), one per input-shape signature.
#pragma once
#include <kiln/session.h>

#include <memory>
#include <vector>

#include "runtime/compiled_plan.h"

namespace kiln {

struct SessionAccess {
  static std::vector<std::shared_ptr<runtime::CompiledPlan>> plans(const Session& s);
};

}  // namespace kiln
