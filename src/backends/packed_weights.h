// Packed weights as data: the buffers a kernel builds from its constants (a reordered,
// blocked or transformed copy of a weight) can be recorded when a plan is saved and replayed
// when it is loaded, so that a .kiln file's kernels start from its stored buffers (views of
// the file's memory) instead of packing again.
//
// Every packing site in a backend allocates through packed_buffer(), naming the buffer's
// format in a key. Outside a scope it allocates and fills. Inside a PackedWeightsScope on the
// calling thread it either records each buffer (kernel instantiated for saving) or replays the
// scope's buffers in the order they were recorded: the next one is used, unfilled, when its key
// and size match, and from the first that does not the kernel packs for itself again (a plan
// edited, loaded with another oneDNN or thread count). Kernels built inside a scope build
// everything eagerly on the calling thread (no background upgrades), so that the order in which
// they pack is the same when recording and replaying.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kiln::backends {

struct PackedBuffer {
  std::string key;  // the site and everything that decides the layout of its bytes
  size_t bytes = 0;
  std::shared_ptr<void> mem;  // 64-byte aligned
};

// One kernel's packed buffers in the order it built them, and the spec they were built for.
struct PackedWeights {
  std::string spec;
  std::vector<PackedBuffer> buffers;
};

class PackedWeightsScope {
 public:
  enum class Mode { Record, Replay };
  // Replaying, `w` is used only when `spec` is the spec it was recorded for.
  PackedWeightsScope(PackedWeights& w, Mode mode, const std::string& spec);
  ~PackedWeightsScope();
  PackedWeightsScope(const PackedWeightsScope&) = delete;
  PackedWeightsScope& operator=(const PackedWeightsScope&) = delete;
  // Replaying: how many buffers were used as stored, and whether the kernel packed any itself.
  size_t replayed() const { return replayed_; }
  bool repacked() const { return repacked_; }

 private:
  friend std::shared_ptr<void> packed_buffer(size_t, const std::string&, const std::function<void(void*)>&);
  PackedWeights& w_;
  Mode mode_;
  bool usable_;
  size_t replayed_ = 0;
  bool repacked_ = false;
  PackedWeightsScope* outer_;
};

// `bytes` of zeroed, 64-byte aligned memory that fill() writes once (ir/zeroed_memory.h), or a
// stored buffer of the same key in its place (fill not called) while a scope replays.
std::shared_ptr<void> packed_buffer(size_t bytes, const std::string& key, const std::function<void(void*)>& fill);

// Whether a PackedWeightsScope is active on this thread: kernels then build eagerly.
bool packing_in_scope();

}  // namespace kiln::backends
