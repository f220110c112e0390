// The cpu backend's Gelu against the reference kernel.
#include "kernel_check.h"

namespace kiln {
namespace {

using kernel_check::Case;
using kernel_check::check;

TEST(CpuGelu, ErfAndTanhForms) {
  auto spread = [](size_t, Tensor& t) {  // cover the saturated tails too
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] *= 8.f;
  };
  for (const char* approx : {"none", "tanh"}) {
    SCOPED_TRACE(approx);
    Case c{"Gelu", "", {{3, 5, 7}}, {false}, {{3, 5, 7}}, {{"approximate", ir::Attribute::of_string(approx)}}};
    c.fill = spread;
    check(c);
  }
  Case ms{"Gelu", "com.microsoft", {{3, 5, 7}}, {false}, {{3, 5, 7}}};
  ms.fill = spread;
  check(ms);
  Case big{"Gelu", "", {{5, 10007}}, {false}, {{5, 10007}}};  // several chunks, two threads
  big.threads = 2;
  big.concurrent = true;
  big.in_place = true;
  check(big);
}

TEST(CpuGelu, Declines) { check({"Gelu", "", {{0, 3}}, {false}, {{0, 3}}}, false); }

}  // namespace
}  // namespace kiln
