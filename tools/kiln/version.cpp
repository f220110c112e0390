// kiln --version: the version, the commit it was configured at, the oneDNN it runs on and the
// CPU features kiln's kernels choose by.
#include <oneapi/dnnl/dnnl.h>

#include <string>

#include "commands.h"

namespace kiln::cli {

std::string version_text() {
  std::string s = std::string("kiln ") + KILN_VERSION + " (" + KILN_GIT_HASH + ")";
  const dnnl_version_t* d = dnnl_version();
  s += ", oneDNN " + std::to_string(d->major) + "." + std::to_string(d->minor) + "." + std::to_string(d->patch);
  std::string features;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) features += " avx512f";
  if (__builtin_cpu_supports("avx512bw")) features += " avx512bw";
  if (__builtin_cpu_supports("avx512vnni")) features += " avx512vnni";
  if (__builtin_cpu_supports("avx2")) features += " avx2";
  if (__builtin_cpu_supports("fma")) features += " fma";
  return s + ", CPU:" + (features.empty() ? " baseline x86-64" : features);
}

}  // namespace kiln::cli
