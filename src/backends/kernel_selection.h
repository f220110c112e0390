// Kernel selection: which implementation runs each instruction. By rule, the backend's first
// candidate (its factories are ordered by preference). With tuning on, a node with several
// candidates has each one timed on its real shapes and the fastest kept; the choice is stored
// in a persistent cache keyed by CPU, thread count, op, shapes and attributes, so later
// sessions (and later shapes of this one) read it back instead of timing again.
#pragma once
#include <memory>
#include <string>

#include "backends/backend.h"

namespace kiln::backends {

struct SelectedKernel {
  std::shared_ptr<const Kernel> kernel;  // null: the backend declined every form
  plan::KernelSpec spec;                           // the implementation chosen and its choices
  std::string name;                                // spec.impl
  bool timed = false;                              // true when chosen by timing just now
};

SelectedKernel select_kernel(const Backend& backend, const ir::Node& node, int threads);

// The cache file tuning uses: TuneOptions::cache_path, else $KILN_CACHE_DIR/kernels.json, else
// $XDG_CACHE_HOME/kiln/kernels.json, else ~/.cache/kiln/kernels.json.
std::string tune_cache_path(const TuneOptions& t);

// The cache key for `node` (exposed for tests).
std::string tune_key(const ir::Node& node, int threads);

}  // namespace kiln::backends
