#include "backends/kernel_selection.h"

#include <kiln/error.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>

#include "ir/printer.h"

namespace kiln::backends {

namespace {

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      auto p = line.find(':');
      return p == std::string::npos ? line : line.substr(p + 2);
    }
  return "unknown cpu";
}

// One JSON object {key: implementation} per file, shared by every session of the process.
class TuneCache {
 public:
  static TuneCache& at(const std::string& path) {
    static std::mutex mu;
    static std::map<std::string, std::unique_ptr<TuneCache>> caches;
    std::lock_guard<std::mutex> lock(mu);
    auto& c = caches[path];
    if (!c) c.reset(new TuneCache(path));
    return *c;
  }
  std::string lookup(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(key);
    return it == entries_.end() || !it->is_string() ? "" : it->get<std::string>();
  }
  void store(const std::string& key, const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    entries_[key] = name;
    // Write a temporary file and rename it, so a reader never sees half a file. A cache that
    // cannot be written only costs the next session its timing.
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path_).parent_path(), ec);
    const std::string tmp = path_ + ".tmp" + std::to_string(reinterpret_cast<uintptr_t>(this));
    {
      std::ofstream f(tmp);
      if (!f) return;
      f << entries_.dump(1) << "\n";
    }
    std::filesystem::rename(tmp, path_, ec);
  }

 private:
  explicit TuneCache(std::string path) : path_(std::move(path)) {
    std::ifstream f(path_);
    if (!f) return;
    // A damaged cache is ignored (and rewritten), never an error: it only holds timings.
    entries_ = nlohmann::json::parse(f, nullptr, false);
    if (!entries_.is_object()) entries_ = nlohmann::json::object();
  }
  std::mutex mu_;
  std::string path_;
  nlohmann::json entries_ = nlohmann::json::object();
};

// The best of three runs (after a warm-up) on random data in the node's shapes.
double time_kernel(const Kernel& k, const ir::Node& node) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  // Reserve first: in_ptrs points into ins.
  std::vector<Tensor> ins;
  ins.reserve(node.inputs().size());
  std::vector<const Tensor*> in_ptrs;
  for (const ir::Value* v : node.inputs()) {
    if (!v) { in_ptrs.push_back(nullptr); continue; }
    if (v->is_constant()) { in_ptrs.push_back(&v->constant()); continue; }
    Tensor t(v->type.dtype, v->type.static_dims());
    if (t.dtype() == DType::Float)
      for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
    ins.push_back(std::move(t));
    in_ptrs.push_back(&ins.back());
  }
  std::vector<Tensor> outs;
  std::vector<Tensor*> out_ptrs;
  for (const ir::Value* v : node.outputs()) outs.emplace_back(v ? v->type.dtype : DType::Float, v ? v->type.static_dims() : std::vector<int64_t>{0});
  for (size_t i = 0; i < outs.size(); ++i) out_ptrs.push_back(node.output(static_cast<int>(i)) ? &outs[i] : nullptr);
  double best = 1e30;
  for (int r = 0; r < 4; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    k.run(in_ptrs, out_ptrs);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r > 0) best = std::min(best, s);  // the first run warms caches and page-faults outputs
  }
  return best;
}

}  // namespace

std::string tune_cache_path(const TuneOptions& t) {
  if (!t.cache_path.empty()) return t.cache_path;
  if (const char* d = std::getenv("KILN_CACHE_DIR"); d && *d) return std::string(d) + "/kernels.json";
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return std::string(d) + "/kiln/kernels.json";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/kiln/kernels.json";
  return "kiln-kernels.json";
}

std::string tune_key(const ir::Node& node, int threads) {
  static const std::string cpu = cpu_model();
  std::string k = cpu + "|threads=" + std::to_string(threads) + "|" + node.domain() + "." + node.op_type() + "|";
  for (const ir::Value* v : node.inputs()) k += (v ? v->type.str() : "-") + (v && v->is_constant() ? "c" : "") + ";";
  k += "|";
  for (const auto& [name, a] : node.attrs) k += name + "=" + ir::print_attribute(a) + ";";
  return k;
}

SelectedKernel select_kernel(const Backend& backend, const ir::Node& node, int threads) {
  SelectedKernel sel;
  auto take = [&](std::unique_ptr<Kernel> k, const KernelCandidate& c) {
    sel.kernel = std::move(k);
    sel.spec = c.spec;
    sel.name = c.spec.impl;
  };
  std::vector<KernelCandidate> cands = backend.candidates(node);
  if (!backend.tuning().enabled || cands.size() == 1) {
    for (const auto& c : cands)  // the first candidate that accepts, without building the others
      if (auto k = c.make()) {
        take(std::move(k), c);
        break;
      }
    return sel;
  }
  TuneCache& cache = TuneCache::at(tune_cache_path(backend.tuning()));
  const std::string key = tune_key(node, threads);
  const std::string known = cache.lookup(key);
  for (const auto& c : cands)
    if (!known.empty() && c.spec.impl == known)
      if (auto k = c.make()) {  // only the remembered winner is built (and prepacked)
        take(std::move(k), c);
        return sel;
      }
  double best = 1e30;
  for (const auto& c : cands) {
    std::unique_ptr<Kernel> k = c.make();
    if (!k) continue;
    double t;
    try {
      t = time_kernel(*k, node);
    } catch (const Error&) {
      continue;  // a candidate that cannot run these inputs is not chosen
    }
    if (t < best || !sel.kernel) {
      best = t;
      take(std::move(k), c);
    }
  }
  if (sel.kernel) cache.store(key, sel.name);
  sel.timed = sel.kernel != nullptr;
  return sel;
}

}  // namespace kiln::backends
