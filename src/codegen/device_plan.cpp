#include "codegen/device_plan.h"

#include <kiln/error.h>

#include <algorithm>
#include <map>
#include <set>

namespace kiln::codegen {

namespace {

using plan::ExecutablePlan;
using plan::PlanBuffer;
using plan::PlanInstruction;

class Placing {
 public:
  Placing(ExecutablePlan& e, const std::string& device) : e_(e), device_(device) {}

  int root(int id) const {
    for (size_t hops = 0; e_.buffers.at(static_cast<size_t>(id)).alias_of >= 0; ++hops) {
      if (hops > e_.buffers.size()) throw Error("device placement: buffer aliases form a cycle");
      id = e_.buffers[static_cast<size_t>(id)].alias_of;
    }
    return id;
  }
  bool constant(int id) const { return e_.buffers.at(static_cast<size_t>(id)).kind == lower::BufferKind::Constant; }

  // Buffer `id`'s host mirror, made at its first use: an alias mirrors as an alias of its root's
  // mirror (made first, so that aliases point back), an arena buffer lives in the host arena at
  // its own offset.
  int mirror(int id) {
    if (auto it = mirrors_.find(id); it != mirrors_.end()) return it->second;
    PlanBuffer m = e_.buffers.at(static_cast<size_t>(id));
    if (m.alias_of >= 0) m.alias_of = mirror(m.alias_of);
    if (m.arena >= 0) m.arena = host_arena();
    m.mirror_of = id;
    m.id = static_cast<int>(e_.buffers.size());
    e_.buffers.push_back(m);
    mirrors_[id] = m.id;
    return m.id;
  }

  // A copy of root `from` into `to`, named after the value `needed` that made it.
  PlanInstruction copy(int from, int to, bool to_host, int needed) const {
    PlanInstruction c;
    c.node = e_.buffers.at(static_cast<size_t>(needed)).value;
    c.domain = "kiln";
    c.op = "Copy";
    c.spec.backend = "copy";
    c.spec.impl = to_host ? "to_host" : "to_device";
    c.inputs = {from};
    c.outputs = {to};
    c.device = device_;
    c.stream = 0;
    return c;
  }

 private:
  int host_arena() {
    if (e_.arenas.size() < 2) e_.arenas.push_back({"cpu", e_.arenas.empty() ? 0 : e_.arenas[0].bytes});
    return 1;
  }

  ExecutablePlan& e_;
  std::string device_;
  std::map<int, int> mirrors_;
};

}  // namespace

ExecutablePlan place_on_devices(const ExecutablePlan& p, const std::vector<Where>& where, const std::string& device) {
  if (where.size() != p.instructions.size())
    throw Error("device placement: " + std::to_string(where.size()) + " places for " +
                std::to_string(p.instructions.size()) + " instructions");
  if (p.placed()) throw Error("device placement: the plan is placed already");
  ExecutablePlan e = p;
  e.target = device;
  e.instructions.clear();
  for (plan::PlanArena& a : e.arenas) a.device = device;
  Placing placing(e, device);
  std::set<int> host_valid;           // roots whose host mirror holds their current bytes
  std::map<int, int> device_stale;     // roots whose current bytes are on the host only: the value written
  for (size_t i = 0; i < p.instructions.size(); ++i) {
    PlanInstruction ins = p.instructions[i];
    ins.device = device;
    ins.stream = where[i] == Where::Nothing ? -1 : 0;
    if (where[i] != Where::Host) {
      if (where[i] == Where::Accelerator) {  // (what launches nothing reads and writes nothing)
        for (int in : ins.inputs) {
          if (in < 0) continue;
          auto stale = device_stale.find(placing.root(in));
          if (stale == device_stale.end()) continue;
          e.instructions.push_back(placing.copy(placing.mirror(stale->first), stale->first, false, stale->second));
          device_stale.erase(stale);
        }
        for (int o : ins.outputs)
          if (o >= 0) {  // written on the device
            host_valid.erase(placing.root(o));
            device_stale.erase(placing.root(o));
          }
      }
      e.instructions.push_back(std::move(ins));
      continue;
    }
    std::set<int> listed;
    for (int in : p.instructions[i].inputs) {
      if (in < 0 || placing.constant(in)) continue;
      const int r = placing.root(in);
      if (host_valid.count(r) || !listed.insert(r).second) continue;
      e.instructions.push_back(placing.copy(r, placing.mirror(r), true, in));
      host_valid.insert(r);
    }
    ins.device = "cpu";
    for (int& in : ins.inputs)
      if (in >= 0 && !placing.constant(in)) in = placing.mirror(in);
    for (int& o : ins.outputs)
      if (o >= 0) o = placing.mirror(o);
    e.instructions.push_back(std::move(ins));
    listed.clear();
    for (int o : p.instructions[i].outputs) {
      if (o < 0) continue;
      const int r = placing.root(o);
      if (!listed.insert(r).second) continue;
      host_valid.insert(r);
      device_stale[r] = o;
      if (e.buffers[static_cast<size_t>(r)].kind == lower::BufferKind::Output) {  // the caller's: back now
        e.instructions.push_back(placing.copy(placing.mirror(r), r, false, o));
        device_stale.erase(r);
      }
    }
  }
  return e;
}

namespace {

int position(const std::vector<int>& ids, int id) {
  auto it = std::find(ids.begin(), ids.end(), id);
  return it == ids.end() ? -1 : static_cast<int>(it - ids.begin());
}

// "arena+4096", "input 0": where a copy's device side is.
std::string device_place(const ExecutablePlan& e, int id) {
  const PlanBuffer& b = e.buffers.at(static_cast<size_t>(id));
  switch (b.kind) {
    case lower::BufferKind::Input: return "input " + std::to_string(position(e.graph_inputs, id));
    case lower::BufferKind::Output: return "output " + std::to_string(position(e.graph_outputs, id));
    default: return "arena+" + std::to_string(b.offset);
  }
}

std::string op_name(const PlanInstruction& i) { return i.domain.empty() ? i.op : i.domain + "." + i.op; }

// What a copy of buffer `id` moves: its bytes (a caller's input or output is sized by its type).
int64_t bytes_of(const ExecutablePlan& e, int id) {
  const PlanBuffer& b = e.buffers.at(static_cast<size_t>(id));
  if (b.bytes > 0) return b.bytes;
  int64_t n = static_cast<int64_t>(dtype_size(b.dtype));
  for (int64_t d : b.dims) n *= std::max<int64_t>(d, 0);
  return n;
}

}  // namespace

std::string placement_report(const std::vector<ExecutablePlan>& placed, bool every) {
  std::string s;
  for (size_t sig = 0; sig < placed.size(); ++sig) {
    const ExecutablePlan& e = placed[sig];
    int gpu = 0, cpu = 0, to_host = 0, to_device = 0, streams = 1;
    int64_t host_bytes = 0, device_bytes = 0;
    std::set<std::string> cpu_ops;
    for (const PlanInstruction& i : e.instructions) {
      streams = std::max(streams, i.stream + 1);
      if (i.is_copy()) {
        const bool host = i.spec.impl == "to_host";
        (host ? to_host : to_device) += 1;
        (host ? host_bytes : device_bytes) += bytes_of(e, i.inputs.at(0));
      } else if (i.device == "cpu") {
        ++cpu;
        cpu_ops.insert(op_name(i));
      } else {
        ++gpu;
      }
    }
    std::string ops;
    for (const std::string& o : cpu_ops) ops += (ops.empty() ? "" : ", ") + o;
    s += "signature " + std::to_string(sig) + ": " + std::to_string(gpu) + " instructions on the GPU, " +
         std::to_string(cpu) + " on the CPU" + (ops.empty() ? "" : " (" + ops + ")") + "; " + std::to_string(to_host) +
         (to_host == 1 ? " copy" : " copies") + " to the host (" + std::to_string(host_bytes) + " bytes), " + std::to_string(to_device) +
         " to the device (" + std::to_string(device_bytes) + " bytes); " + std::to_string(streams) +
         (streams == 1 ? " stream\n" : " streams\n");
    if (!every) continue;
    for (size_t k = 0; k < e.instructions.size(); ++k) {
      const PlanInstruction& i = e.instructions[k];
      s += "  " + std::to_string(k) + "  " + op_name(i) + " '" + i.node + "'  " + i.device;
      if (i.stream >= 0) s += "  stream " + std::to_string(i.stream);
      for (size_t w = 0; w < i.after.size(); ++w) s += (w ? ", " : " after ") + std::to_string(i.after[w]);
      if (i.is_copy()) {
        const bool host = i.spec.impl == "to_host";
        const int on_device = host ? i.inputs.at(0) : i.outputs.at(0);
        s += std::string(host ? "  to host: " : "  to device: ") + device_place(e, on_device) + " (" +
             std::to_string(bytes_of(e, on_device)) + " bytes)";
      }
      s += "\n";
    }
  }
  return s;
}

}  // namespace kiln::codegen
