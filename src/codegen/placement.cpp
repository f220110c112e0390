#include "codegen/placement.h"

#include <algorithm>

namespace kiln::codegen {

namespace {

CopyRegion region_of(const Operand& o) {
  CopyRegion r{o.storage, o.root_bytes, o.value ? o.value->name() : ""};
  if (r.bytes <= 0) r.bytes = o.bytes();
  return r;
}

}  // namespace

PlacedStep Placer::place(const Step& s, bool on_host) {
  PlacedStep p;
  p.index = s.index;
  p.on_host = on_host;
  if (!on_host) {
    // Written on the device: host copies of what it writes are stale.
    for (const Operand& o : s.outputs)
      if (o.buffer >= 0) host_valid_.erase(key(o.storage));
    return p;
  }
  std::set<Key> listed;
  for (const Operand& o : s.inputs) {
    if (o.buffer < 0 || o.storage.kind == StorageKind::Constant) continue;  // weights are on both
    const Key k = key(o.storage);
    if (host_valid_.count(k) || !listed.insert(k).second) continue;
    p.to_host.push_back(region_of(o));
    host_valid_.insert(k);
  }
  listed.clear();
  for (const Operand& o : s.outputs) {
    if (o.buffer < 0) continue;
    const Key k = key(o.storage);
    if (!listed.insert(k).second) continue;
    p.to_device.push_back(region_of(o));
    host_valid_.insert(k);
  }
  return p;
}

std::string describe_regions(const std::vector<CopyRegion>& regions) {
  std::string s;
  for (const CopyRegion& r : regions) {
    std::string where;
    switch (r.storage.kind) {
      case StorageKind::Input: where = "input " + std::to_string(r.storage.index); break;
      case StorageKind::Output: where = "output " + std::to_string(r.storage.index); break;
      case StorageKind::Arena: where = "arena+" + std::to_string(r.storage.offset); break;
      case StorageKind::Constant: where = "weights"; break;
    }
    s += (s.empty() ? "" : ", ") + r.value + " (" + where + ", " + std::to_string(r.bytes) + " bytes)";
  }
  return s;
}

std::string placement_report(const std::vector<PlacedInstruction>& placed, bool every) {
  std::string s;
  for (size_t at = 0; at < placed.size();) {
    const int sig = placed[at].signature;
    size_t end = at;
    int gpu = 0, cpu = 0, to_host = 0, to_device = 0, streams = 1;
    int64_t host_bytes = 0, device_bytes = 0;
    std::set<std::string> cpu_ops;
    for (; end < placed.size() && placed[end].signature == sig; ++end) {
      const PlacedStep& p = placed[end].step;
      (p.on_host ? cpu : gpu) += 1;
      streams = std::max(streams, placed[end].stream + 1);
      if (p.on_host) cpu_ops.insert(placed[end].op);
      to_host += static_cast<int>(p.to_host.size());
      to_device += static_cast<int>(p.to_device.size());
      for (const CopyRegion& r : p.to_host) host_bytes += r.bytes;
      for (const CopyRegion& r : p.to_device) device_bytes += r.bytes;
    }
    std::string ops;
    for (const std::string& o : cpu_ops) ops += (ops.empty() ? "" : ", ") + o;
    s += "signature " + std::to_string(sig) + ": " + std::to_string(gpu) + " instructions on the GPU, " +
         std::to_string(cpu) + " on the CPU" + (ops.empty() ? "" : " (" + ops + ")") + "; " + std::to_string(to_host) +
         " copies to the host (" + std::to_string(host_bytes) + " bytes), " + std::to_string(to_device) +
         " to the device (" + std::to_string(device_bytes) + " bytes); " + std::to_string(streams) +
         (streams == 1 ? " stream\n" : " streams\n");
    if (every)
      for (size_t k = at; k < end; ++k) {
        const PlacedStep& p = placed[k].step;
        s += "  " + std::to_string(p.index) + "  " + placed[k].op + " '" + placed[k].node + "'  " + (p.on_host ? "cpu" : "cuda");
        if (placed[k].stream >= 0) s += "  stream " + std::to_string(placed[k].stream);
        for (size_t w = 0; w < placed[k].after.size(); ++w)
          s += (w ? ", " : " after ") + std::to_string(placed[k].after[w]);
        if (!p.to_host.empty()) s += "  to host: " + describe_regions(p.to_host);
        if (!p.to_device.empty()) s += "  to device: " + describe_regions(p.to_device);
        s += "\n";
      }
    at = end;
  }
  return s;
}

}  // namespace kiln::codegen
