// The cpu backend's Softmax against the reference kernel.
#include "kernel_check.h"

namespace kiln {
namespace {

using kernel_check::Case;
using kernel_check::check;

ir::Attributes axis(int64_t a) { return {{"axis", ir::Attribute::of_int(a)}}; }

TEST(CpuSoftmax, Opset13Axes) {
  for (int64_t a : {-1, 0, 1, 2, -2}) {
    SCOPED_TRACE(a);
    check({"Softmax", "", {{3, 5, 7}}, {false}, {{3, 5, 7}}, axis(a)});
  }
  check({"Softmax", "", {{3, 5, 7}}, {false}, {{3, 5, 7}}});  // default: last axis
  // Long rows (vector body and tail) and a wide strided block (several column chunks).
  check({"Softmax", "", {{4, 1000}}, {false}, {{4, 1000}}});
  check({"Softmax", "", {{3, 600}}, {false}, {{3, 600}}, axis(0)});
}

TEST(CpuSoftmax, LegacyFlattens) {
  for (int64_t a : {0, 1, 2, 3, -1}) {
    SCOPED_TRACE(a);
    Case c{"Softmax", "", {{3, 5, 7}}, {false}, {{3, 5, 7}}, axis(a)};
    c.opset = 11;
    check(c);
  }
  Case d{"Softmax", "", {{3, 5, 7}}, {false}, {{3, 5, 7}}};  // default axis 1
  d.opset = 11;
  check(d);
}

TEST(CpuSoftmax, LargeValuesAndThreads) {
  Case c{"Softmax", "", {{33, 17}}, {false}, {{33, 17}}};
  c.fill = [](size_t, Tensor& t) {
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] *= 80.f;
  };
  c.threads = 2;
  c.concurrent = true;
  c.in_place = true;
  check(c);
}

TEST(CpuSoftmax, Declines) { check({"Softmax", "", {{0, 5}}, {false}, {{0, 5}}}, false); }

}  // namespace
}  // namespace kiln
