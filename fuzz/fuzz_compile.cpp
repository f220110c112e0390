// libFuzzer target: arbitrary bytes as a model file through session creation on the CPU
// backend. For a model whose inputs are all static this builds its plan: the optimizer,
// layout assignment, the channel-shuffle lowering, fusion and collapse (access plans,
// FusedReduce), lowering, the CPU backend's kernel factories (oneDNN primitives, weight
// prepacking, the background Winograd transform) and the memory plan. No run. Any kiln::Error
// is a correct answer; a crash, a sanitizer report, a hang or another exception type is a bug.
#include <kiln/error.h>
#include <kiln/session.h>

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kiln::SessionOptions opts;
  opts.opt_level = 3;
  opts.backend = "cpu";
  opts.threads = 1;
  opts.memory_cap_bytes = int64_t{256} << 20;  // far below -rss_limit_mb
  opts.max_loop_iterations = 1000;
  try {
    auto s = kiln::Session::create_from_bytes(std::string(reinterpret_cast<const char*>(data), size), opts,
                                              "/nonexistent/kiln-fuzz");
    s->wait_ready();
  } catch (const kiln::Error&) {
  }
  return 0;
}
