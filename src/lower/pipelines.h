// The lowering pipelines: the one place that says which rewrites turn an optimized graph into
// the graph a target's kernels run, and in what order (as passes/pipelines.h does for the
// optimizer's levels). They run on a compiled plan's clone, whose input shapes are bound.
//
//   cpu        materialize_constants, channels_last, channel_shuffle, anchor_epilogues,
//              collapse_groups, channel_scale, conv_concat (+ conv_concat_branches),
//              concat_elementwise, conv_chain
//              (+ conv_chain_input), conv_prologue, blocked_layout, gemv_chain
//   reference  materialize_constants only when a backend runs the plan; nothing otherwise
//
// Every rewrite is a passes::Pass on the optimizer's PassManager, so each one is timed and
// counted (`kiln inspect --plan` prints the stats) and any one can be skipped by name.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "fusion/collapse_groups.h"
#include "ir/graph.h"
#include "lower/layout_assignment.h"
#include "passes/pass_manager.h"

namespace kiln::lower {

// What lowering needs to know of the backend that will run the plan.
struct LoweringTarget {
  std::string backend;        // "" = no backend: the reference kernels run the graph as it is
  bool channels_last = false;  // convs and pools prefer NHWC activations (the cpu backend)
  int threads = 1;             // the plan's intra-op threads (conv chains split rows by it)
  int fusion_level = 3;        // 0 none ... 3 with epilogues (docs/fusion.md)
  // Which nodes the backend's fused kernels compute (Backend::can_fuse).
  std::function<bool(const ir::Node&)> can_fuse;
  // Which channels-last convs the backend runs in nChw16c (Backend::runs_blocked); empty: all
  // that blocked_layout's shape rule admits.
  std::function<bool(const ir::Node&)> runs_blocked;
  // Which channels-last FusedConvs the backend runs with their elementwise input computed
  // inside (Backend::takes_conv_prologue, kiln.PrologueConv); empty: none.
  std::function<bool(const ir::Node&)> takes_conv_prologue;
  // Whether the backend runs inverted-residual conv chains split by their middle channels
  // (Backend::splits_chain_channels; the pass option "conv_chain_channels" turns it off).
  bool chain_channels = false;
  // Whether the backend's kiln.Attention reads its operands through q_perm / k_perm / v_perm /
  // out_perm (Backend::reads_attention_layouts), so the head Transposes fold into it.
  bool attention_layouts = false;
  // Whether the backend runs two one-row products in a row as one kiln.GemvChain
  // (Backend::chains_gemvs); empty: never.
  std::function<bool(const ir::Node&, const ir::Node&)> chains_gemvs;
  // Whether the backend runs a kiln.ConvConcat with these branches (chains of nodes, each ending
  // in the conv writing its slice) dealt out whole to its threads (Backend::deals_branches);
  // empty: never, and a ConvConcat's body holds the slice convs only.
  std::function<bool(const std::vector<std::vector<const ir::Node*>>&)> deals_branches;
  // Passes (and pass options: "conv_chain_input", "conv_concat_branches") to skip, by name (lowering_pass_names()).
  std::vector<std::string> disabled;
};

struct LoweringStats {
  LayoutStats layout;            // what the layout rewrites changed
  fusion::CollapseStats fusion;  // fusion groups turned into single kernels
  std::vector<passes::PassStats> passes;  // per pass: runs, changes, nodes, time
};

// The pipeline for `target`; the passes write their counts into *stats, which must outlive it.
passes::PassManager make_lowering_pipeline(const LoweringTarget& target, LoweringStats* stats);

// Runs it on g (types inferred, input shapes bound) and returns the stats.
LoweringStats run_lowering(ir::Graph& g, const LoweringTarget& target);

// The names `disabled` may hold, in pipeline order: the cpu pipeline's passes that may be
// skipped, and pass options.
const std::vector<std::string>& lowering_pass_names();

}  // namespace kiln::lower
