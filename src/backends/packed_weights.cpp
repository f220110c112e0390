#include "backends/packed_weights.h"

#include "ir/zeroed_memory.h"

namespace kiln::backends {

namespace {
thread_local PackedWeightsScope* current = nullptr;
}

PackedWeightsScope::PackedWeightsScope(PackedWeights& w, Mode mode, const std::string& spec)
    : w_(w), mode_(mode), usable_(mode == Mode::Record || w.spec == spec), outer_(current) {
  if (mode == Mode::Record) {
    w_.spec = spec;
    w_.buffers.clear();
  }
  current = this;
}

PackedWeightsScope::~PackedWeightsScope() { current = outer_; }

bool packing_in_scope() { return current != nullptr; }

std::shared_ptr<void> packed_buffer(size_t bytes, const std::string& key, const std::function<void(void*)>& fill) {
  PackedWeightsScope* s = current;
  if (s && s->mode_ == PackedWeightsScope::Mode::Replay && s->usable_) {
    if (s->replayed_ < s->w_.buffers.size()) {
      const PackedBuffer& b = s->w_.buffers[s->replayed_];
      if (b.key == key && b.bytes == bytes && b.mem) {
        ++s->replayed_;
        return b.mem;
      }
    }
    s->usable_ = false;  // from here on the kernel packs for itself
  }
  std::shared_ptr<void> mem = allocate_zeroed(bytes);
  fill(mem.get());
  if (s && s->mode_ == PackedWeightsScope::Mode::Replay) s->repacked_ = true;
  if (s && s->mode_ == PackedWeightsScope::Mode::Record) s->w_.buffers.push_back({key, bytes, mem});
  return mem;
}

}  // namespace kiln::backends
