// Layout assignment: where the backend prefers channels-last activations (oneDNN's brgconv
// runs NHWC at the same speed as its blocked formats, and NCHW reorders cost a large share of a
// conv's time, ../shared/peers/KERNELS.md), convolutions and pooling switch to their NHWC
// forms and the layout changes move through the graph until they cancel.
#pragma once
#include <memory>

#include "ir/graph.h"
#include "passes/pass.h"

namespace kiln::lower {

struct LayoutStats {
  int channels_last_ops = 0;  // convs and pools now running on NHWC
  int transposes = 0;         // layout changes (reorders) left in the graph
  int blocked_values = 0;     // activations kept in nChw16c between convs (blocked_layout.h)
  int conv_concats = 0;       // Concats whose convs write their slices (fuse_conv_concat.h)
  int concat_readers = 0;     // Concats gathered by the elementwise group reading them (fuse_concat_elementwise.h)
  int conv_chains = 0;        // conv chains run in bands of rows (fuse_conv_chain.h)
  int conv_prologues = 0;     // 1x1 convs computing their elementwise input (fuse_conv_prologue.h)
  int channel_scales = 0;     // Muls folded into the next conv's weights (fold_channel_scale.h)
  int gemv_chains = 0;        // one-row products run in pairs (fuse_gemv_chain.h)
  int attention_transposes = 0;  // kiln.Attention operands read in place (fold_attention_layout.h)
};

// Rewrites a graph whose types are static (a compiled plan's specialized clone). Types are
// re-inferred afterwards by the caller.
LayoutStats assign_channels_last(ir::Graph& g);

// Transposes in g (each one a reorder between layouts, or a model's own).
int count_transposes(const ir::Graph& g);

// As a lowering pass: "channels_last"; fills stats->channels_last_ops and ->transposes.
std::unique_ptr<passes::Pass> make_channels_last_pass(LayoutStats* stats);

}  // namespace kiln::lower
