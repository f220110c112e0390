// Conv chains run band by band: a run of channels-last FusedConvs, each feeding only the next
// (mobilenet_v2's stem -> depthwise -> project -> expand -> depthwise -> project, an
// inverted-residual block's expand -> depthwise -> project), whose intermediate tensors are too
// big for the L2 cache, becomes one kiln.ConvChain node with the convs in its `body` graph
// (src/ops/kiln_fused.cpp). The CPU backend (conv_chain.cpp) computes the last conv's output a
// band of rows at a time, each intermediate kept only as the rows its consumer still needs, so
// the wide tensors never leave the cache; the reference kernel runs the body node by node.
// A channels-last max or average pool may follow a conv as a layer of the chain (squeezenet's
// and resnet18's stem -> max pool: the 3 MB stem output stays in bands), never start one. A
// channels-last global average pool of the last output joins the chain as its second output
// (summed band by band), and then a single conv with a big output forms a chain as well.
// With a team whose backend splits chains by channels (backends/cpu/conv_chain_channels.cpp),
// inverted-residual blocks (1x1 -> depthwise -> 1x1) may form chains marked `split_channels`,
// squeeze-excitation blocks included (the depthwise output's global pool -> fc1 -> fc2 giving
// the project's channel scale: the six nodes one chain, whose reference kernel runs them in turn;
// there a grouped 3x3 conv of 2-16 channels a group may stand for the depthwise, RegNet's).
#pragma once
#include <cstdint>
#include <functional>

#include <memory>

#include "ir/graph.h"
#include "passes/pass.h"

namespace kiln::lower {

// A link is formed where the intermediate tensor has at least this many bytes.
constexpr int64_t kConvChainMinBytes = 1 << 20;
// From this many between two light layers (a 1x1 conv, a depthwise conv or pool of at most 3x3
// taps, a stem: mobilenet_v2's 28x28 and 14x14 blocks):
// with two or more threads a chain's threads each run their rows through the whole block without
// meeting, where separate convs synchronize at every op and hand rows between cores. At 1
// thread they pay too, the chain's 1x1 layers being kiln's pointwise kernel. From 128 KiB the
// 7x7 blocks (188 KiB links) chain too at 1 thread (at 2 their 7 rows split unevenly, so they
// stay separate convs); links from 64 KiB measured slower. Measured paired on the shared
// models: bench/results/history-code-comments.md.
constexpr int64_t kConvChainLightMinBytes = 128 * 1024;

// What a float one core reads of another's writes costs, in multiply-adds of a thread's share:
// an inverted-residual chain (1x1 -> depthwise -> 1x1) is marked `split_channels` where its
// team, splitting the middle channels instead of rows (backends/cpu/conv_chain_channels.cpp),
// shares the work more evenly with that exchange counted. Measured on mobilenet_v2's blocks at
// 2 threads on a 2-vCPU Xeon: the channel split's time over its even share fitted 29 (a 64-byte
// line ~460 multiply-adds, ~7 ns; bench/results/experiments-20261206-session38.md).
constexpr double kCrossCoreMacsPerFloat = 29.0;

// Rewrites a channels-last graph with static types; returns how many chains were formed.
// `pools`: max and average pools may join. Sessions let them at any thread count: with a 1 MiB
// L2 squeezenet1_1's stem -> pool -> squeeze chain beats a 2-thread stem, pool and squeeze, and
// resnet18's is level (with a 2 MiB L2 the 2-thread chains gained nothing;
// bench/results/history-code-comments.md).
// `threads`: the team the kernel will split rows across; chains whose work splits unevenly (an
// even share under 90% of the largest, counting the rows around each share's edges that both
// neighbours compute in the layers before a taller kernel) are not formed, but for the
// inverted-residual ones that split more evenly by their middle channels (kCrossCoreMacsPerFloat),
// which are marked `split_channels`; with a team such a block is a chain whatever its links' size.
// `input_transpose`: the layout's Transpose of an NCHW input that only a chain's stem (a conv on
// at most 8 channels, at most 3x3) reads joins the chain in front, and the stem reads the NCHW
// planes.
// `channels`: the backend splits inverted-residual chains by channels (else none is marked and
// every chain must split its rows evenly enough).
// `takes_prologue`: whether the backend runs a FusedConv with its elementwise input as a prologue
// (fuse_conv_prologue, which runs after this pass): such a conv starts no chain. Empty: none does.
int fuse_conv_chains(ir::Graph& g, int64_t min_bytes = kConvChainMinBytes,
                     int64_t light_min_bytes = kConvChainMinBytes, bool pools = true, int threads = 1,
                     bool input_transpose = true, bool channels = false,
                     const std::function<bool(const ir::Node&)>& takes_prologue = {});
// As a lowering pass: "conv_chain" with the default link sizes and pools; *chains = how many it
// formed.
std::unique_ptr<passes::Pass> make_conv_chain_pass(int threads, bool input_transpose, bool channels,
                                                   std::function<bool(const ir::Node&)> takes_prologue, int* chains);

}  // namespace kiln::lower
