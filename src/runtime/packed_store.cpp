#include "runtime/packed_store.h"

#include <kiln/error.h>

#include <cstdint>
#include <cstring>

#include "ir/zeroed_memory.h"

namespace kiln::runtime {

std::string packing_identity(const plan::KernelSpec& spec) { return spec.str() + "@" + std::to_string(spec.threads); }

nlohmann::json record_packed_weights(const CompiledPlan& cp, const backends::Backend& backend,
                                     onnx_fe::ExternalSectionWriter& section) {
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < cp.program.instructions.size(); ++i) {
    const lower::Instruction& ins = cp.program.instructions[i];
    const plan::KernelSpec& spec = cp.plan.instructions[i].spec;
    if (!ins.kernel || spec.on_reference()) {
      out.push_back(nullptr);
      continue;
    }
    backends::PackedWeights w;
    {
      backends::PackedWeightsScope scope(w, backends::PackedWeightsScope::Mode::Record, packing_identity(spec));
      std::unique_ptr<backends::Kernel> k = backend.instantiate(*ins.node, spec);
      if (k) k->wait_ready();
    }
    if (w.buffers.empty()) {
      out.push_back(nullptr);
      continue;
    }
    nlohmann::json buffers = nlohmann::json::array();
    for (const backends::PackedBuffer& b : w.buffers)
      buffers.push_back({{"key", b.key}, {"offset", section.add(b.mem.get(), b.bytes)}, {"bytes", b.bytes}});
    out.push_back({{"spec", w.spec}, {"buffers", std::move(buffers)}});
  }
  return out;
}

std::vector<backends::PackedWeights> packed_weights_from_json(const nlohmann::json& j, size_t instructions,
                                                              std::string_view section, const std::shared_ptr<void>& owner) {
  auto bad = [](const std::string& why) { return Error(".kiln file: packed weights: " + why); };
  if (!j.is_array() || j.size() != instructions)
    throw bad("need one entry per instruction (" + std::to_string(instructions) + ")");
  std::vector<backends::PackedWeights> out(instructions);
  for (size_t i = 0; i < instructions; ++i) {
    const nlohmann::json& e = j[i];
    if (e.is_null()) continue;
    const std::string at = "instruction " + std::to_string(i);
    if (!e.is_object() || !e.contains("spec") || !e["spec"].is_string() || !e.contains("buffers") || !e["buffers"].is_array())
      throw bad(at + ": needs \"spec\" and \"buffers\"");
    out[i].spec = e["spec"].get<std::string>();
    for (const nlohmann::json& b : e["buffers"]) {
      if (!b.is_object() || !b.contains("key") || !b["key"].is_string() || !b.contains("offset") ||
          !b["offset"].is_number_unsigned() || !b.contains("bytes") || !b["bytes"].is_number_unsigned())
        throw bad(at + ": a buffer needs \"key\", \"offset\" and \"bytes\"");
      const uint64_t off = b["offset"].get<uint64_t>(), n = b["bytes"].get<uint64_t>();
      if (off > section.size() || n > section.size() - off || n == 0)
        throw bad(at + ": buffer [" + std::to_string(off) + ", +" + std::to_string(n) + ") lies outside the section (" +
                  std::to_string(section.size()) + " bytes)");
      const char* p = section.data() + off;
      backends::PackedBuffer pb{b["key"].get<std::string>(), static_cast<size_t>(n), nullptr};
      if (owner && reinterpret_cast<uintptr_t>(p) % 64 == 0) {
        pb.mem = std::shared_ptr<void>(owner, const_cast<char*>(p));
      } else {
        pb.mem = allocate_zeroed(pb.bytes);
        std::memcpy(pb.mem.get(), p, pb.bytes);
      }
      out[i].buffers.push_back(std::move(pb));
    }
  }
  return out;
}

}  // namespace kiln::runtime
