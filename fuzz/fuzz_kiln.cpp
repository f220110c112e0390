// libFuzzer target: arbitrary bytes as a .kiln file, through loading and one run. The bytes
// are resealed first (runtime/kiln_file.h), so mutations reach the manifest, the executable
// plan's checks (buffer ids, offsets, node references, specs, ISA features) and the kernel
// factories rather than stopping at the checksum; a plan that loads, with an arena of at most
// 1 MiB, then runs once on zero inputs, so whatever the checks let through meets the executor.
// (Larger plans, the shared models', would take minutes under the sanitizers once a mutated
// spec moves their convolutions to the reference kernels.) Any kiln::Error is a correct
// answer; a crash, a sanitizer report, a hang or another exception type is a bug.
#include <kiln/error.h>
#include <kiln/session.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/kiln_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  kiln::SessionOptions opts;
  opts.threads = 1;
  opts.memory_cap_bytes = int64_t{256} << 20;  // far below -rss_limit_mb
  opts.max_loop_iterations = 1000;
  try {
    if (kiln::runtime::looks_like_kiln_file(bytes)) kiln::runtime::reseal_kiln_file(bytes);
    auto s = kiln::Session::create_from_bytes(bytes, opts, "/nonexistent/kiln-fuzz");
    if (s->arena_bytes() > (int64_t{1} << 20)) return 0;
    std::vector<kiln::Tensor> ins;
    for (const kiln::TensorInfo& in : s->inputs()) {
      if (in.is_sequence || in.is_optional || !in.rank_known || in.dtype == kiln::DType::String) return 0;
      std::vector<int64_t> dims;
      int64_t n = 1;
      for (int64_t d : in.dims) {
        if (d < 0 || d > (1 << 20)) return 0;
        dims.push_back(d);
        n *= d;
        if (n > (1 << 22)) return 0;
      }
      ins.emplace_back(in.dtype, dims);
    }
    s->run(ins);
  } catch (const kiln::Error&) {
  }
  return 0;
}
