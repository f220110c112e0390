// kiln.NhwcDepthToSpace / NhwcSpaceToDepth (depth_to_space.cpp) against the reference kernels
// (the ONNX ops between two layout changes): DCR and CRD, block sizes 2 and 3, odd channel
// counts, batches and two threads.
#include "kernel_check.h"

namespace kiln {
namespace {

using kernel_check::Case;
using kernel_check::check;
using A = ir::Attribute;

TEST(DepthSpace, DepthToSpaceBothModes) {
  for (const char* mode : {"DCR", "CRD"})
    for (int threads : {1, 2}) {
      SCOPED_TRACE(std::string(mode) + " threads " + std::to_string(threads));
      Case c{"NhwcDepthToSpace", "kiln", {{2, 5, 3, 12}}, {false}, {{2, 10, 6, 3}},
             {{"blocksize", A::of_int(2)}, {"mode", A::of_string(mode)}}};
      c.threads = threads;
      check(c);
      Case big{"NhwcDepthToSpace", "kiln", {{1, 31, 33, 45}}, {false}, {{1, 93, 99, 5}},
               {{"blocksize", A::of_int(3)}, {"mode", A::of_string(mode)}}};
      big.threads = threads;
      check(big);
    }
}

TEST(DepthSpace, SpaceToDepth) {
  for (int threads : {1, 2}) {
    Case c{"NhwcSpaceToDepth", "kiln", {{2, 6, 9, 7}}, {false}, {{2, 2, 3, 63}}, {{"blocksize", A::of_int(3)}}};
    c.threads = threads;
    check(c);
  }
}

}  // namespace
}  // namespace kiln
