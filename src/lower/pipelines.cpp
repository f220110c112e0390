#include "lower/pipelines.h"

#include <algorithm>

#include "fusion/anchor_epilogues.h"
#include "lower/blocked_layout.h"
#include "lower/fold_attention_layout.h"
#include "lower/fold_channel_scale.h"
#include "lower/fuse_channel_shuffle.h"
#include "lower/fuse_conv_chain.h"
#include "lower/fuse_concat_elementwise.h"
#include "lower/fuse_conv_concat.h"
#include "lower/fuse_conv_prologue.h"
#include "lower/fuse_gemv_chain.h"
#include "lower/materialize_constants.h"
#include "passes/pass.h"

namespace kiln::lower {

const std::vector<std::string>& lowering_pass_names() {
  static const std::vector<std::string> names = {"channels_last", "channel_shuffle", "attention_layout", "channel_scale", "conv_concat", "conv_concat_branches",
                                                 "concat_elementwise", "conv_chain", "conv_chain_input", "conv_chain_channels",
                                                 "conv_prologue", "blocked_layout", "gemv_chain"};
  return names;
}

passes::PassManager make_lowering_pipeline(const LoweringTarget& t, LoweringStats* st) {
  auto on = [&](const char* name) { return std::find(t.disabled.begin(), t.disabled.end(), name) == t.disabled.end(); };
  // Passes re-infer types after each change; the verifier runs in the optimizer's tests.
  passes::PassManager pm(passes::PassManager::Options{.verify = false, .max_iterations = 1, .infer = true});
  if (t.backend.empty()) return pm;
  pm.add(make_materialize_constants_pass());
  // The input shapes are bound here: the shape arithmetic of a model with symbolic dims (Shape ->
  // Slice -> Concat -> Reshape or Resize) folds to constants, which the kernels want for their
  // shapes, sizes and pads.
  pm.add(passes::make_constant_folding(4096));
  pm.add(passes::make_dce());
  if (t.channels_last && on("channels_last")) pm.add(make_channels_last_pass(&st->layout));
  if (on("channel_shuffle")) pm.add(make_channel_shuffle_pass(&st->layout));
  // Before fusion, which would take the head Transposes into elementwise groups.
  if (t.attention_layouts && on("attention_layout"))
    pm.add(make_attention_layout_pass(&st->layout.attention_transposes));
  if (t.fusion_level >= 3) pm.add(fusion::make_anchor_epilogues_pass());
  if (t.fusion_level > 0) {
    fusion::FusionOptions fo;
    fo.level = t.fusion_level;
    pm.add(fusion::make_collapse_groups_pass(fo, t.can_fuse, &st->fusion));
  }
  // Then Concats of conv outputs (which must not be blocked: fused first), and after fusion,
  // which forms the residual convs whose Z the blocked-layout pass must see.
  if (t.channels_last) {
    if (on("channel_scale")) pm.add(make_channel_scale_pass(&st->layout.channel_scales));
    if (t.fusion_level > 0 && on("conv_concat")) pm.add(make_conv_concat_pass(on("conv_concat_branches") ? t.deals_branches : DealsBranches{},
                                   &st->layout.conv_concats));
    if (t.fusion_level > 0 && on("concat_elementwise"))
      pm.add(make_concat_elementwise_pass(&st->layout.concat_readers));
    if (t.fusion_level > 0 && on("conv_chain"))
      pm.add(make_conv_chain_pass(
          t.threads, on("conv_chain_input"), t.chain_channels && on("conv_chain_channels"),
          on("conv_prologue") ? t.takes_conv_prologue : std::function<bool(const ir::Node&)>{}, &st->layout.conv_chains));
    // After the chains, which take 1x1 convs of their own, and the Concats' readers, whose
    // gathers a prologue keeps.
    if (t.fusion_level > 0 && t.takes_conv_prologue && on("conv_prologue"))
      pm.add(make_conv_prologue_pass(t.takes_conv_prologue, &st->layout.conv_prologues));
    if (on("blocked_layout")) pm.add(make_blocked_layout_pass(t.runs_blocked, &st->layout.blocked_values));
  }
  if (t.fusion_level > 0 && t.chains_gemvs && on("gemv_chain"))
    pm.add(make_gemv_chain_pass(t.chains_gemvs, &st->layout.gemv_chains));
  return pm;
}

LoweringStats run_lowering(ir::Graph& g, const LoweringTarget& target) {
  LoweringStats st;
  passes::PassManager pm = make_lowering_pipeline(target, &st);
  pm.run(g);
  st.passes = pm.stats();
  return st;
}

}  // namespace kiln::lower
