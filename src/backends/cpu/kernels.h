// The CPU backend's kernel table. Each kernel file adds its factories here (one entry per op).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"

namespace kiln::backends::cpu {

struct KernelFactory {
  std::string domain;  // "" = ai.onnx, "kiln" for kiln's fused ops
  std::string op;
  // nullptr = declined (unsupported form); the reference kernel runs the node instead.
  // Implementations without parameters (choose unset) are built from the node and the thread
  // count; those with parameters from the node and the spec (make_spec).
  std::function<std::unique_ptr<Kernel>(const ir::Node& node, int threads)> make;
  // The implementation's name when an op has several ("onednn_nhwc", "onednn_any"): kernel
  // selection (src/backends/kernel_selection.h) times them under --tune. Empty = "kiln".
  std::string name = "";
  // For implementations with parameters: the rule's choices for a node (written into its
  // spec), the kernel built from a spec whose parameters it takes as given, and every valid
  // value of each parameter for a node.
  std::function<std::map<std::string, plan::ParamValue>(const ir::Node& node, int threads)> choose = nullptr;
  std::function<std::unique_ptr<Kernel>(const ir::Node& node, const plan::KernelSpec& spec)> make_spec = nullptr;
  std::function<plan::ParamChoices(const ir::Node& node, int threads)> choices = nullptr;
  // The parameters choose() derives from the thread count (a plan made for another team size
  // takes them from choose() again).
  std::vector<std::string> thread_params = {};
};

const std::vector<KernelFactory>& kernel_factories();

// oneDNN 2.x's Winograd convolution (AVX-512 only) works on 16-channel blocks of the input: with
// fewer input channels most of its transforms and products are of padding (a 3-channel image:
// 13 lanes of 16), so kiln does not ask for it there (onednn_conv.cpp).
constexpr int64_t kOnednnWinogradMinChannels = 16;

// Whether kiln.PrologueConv (prologue_conv.cpp) runs this FusedConv with its elementwise input:
// a 1x1 conv kiln's 1x1 kernel takes (pointwise_conv_shape), without a channel scale, while
// kiln_pointwise is enabled.
bool prologue_conv_takes(const ir::Node& conv);

// Whether a kernel implementation may be used (not in SessionOptions::disabled_kernels), for
// composite kernels choosing their members' implementations (kiln.ConvConcat): the cpu backend
// holds a DisabledKernels scope around each factory call.
bool kernel_enabled(const std::string& name);
// Whether kiln_gemv_chain runs `first` -> `second` (one-row products, the second reading the
// first's output) as one kiln.GemvChain on a team of `threads`: gemv_chain.cpp.
bool gemv_chain_takes(const ir::Node& first, const ir::Node& second, int threads);
// Whether kiln_chain_channels runs here (AVX-512, not disabled): conv_chain_channels.cpp.
bool chain_channels_available();
class DisabledKernels {
 public:
  explicit DisabledKernels(const std::vector<std::string>* names);
  ~DisabledKernels();
  DisabledKernels(const DisabledKernels&) = delete;
  DisabledKernels& operator=(const DisabledKernels&) = delete;

 private:
  const std::vector<std::string>* previous_;
};

}  // namespace kiln::backends::cpu
