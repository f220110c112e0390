// libFuzzer target: arbitrary bytes as a model file through everything a session does before
// its first run: parse, import (initializers, subgraphs), verify, shape inference and the
// optimizer at level 3. Any kiln::Error is a correct answer; a crash, a sanitizer report, a
// hang, another exception type or memory past the RSS limit is a bug (see docs/reliability.md).
#include <kiln/error.h>
#include <kiln/session.h>

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kiln::SessionOptions opts;
  opts.opt_level = 3;
  // The reference kernels: the CPU backend only prepares kernels for plans, which never
  // get built here, and oneDNN's JIT would slow every execution down.
  opts.backend = "reference";
  // Far below -rss_limit_mb, so a model that asks for too much meets the cap, not the limit.
  opts.memory_cap_bytes = int64_t{256} << 20;
  opts.max_loop_iterations = 1000;
  try {
    // No such folder: external data can never resolve to a real file.
    kiln::Session::create_from_bytes(std::string(reinterpret_cast<const char*>(data), size), opts,
                                     "/nonexistent/kiln-fuzz");
  } catch (const kiln::Error&) {
  }
  return 0;
}
