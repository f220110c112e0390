// kiln.ConvChain (lower/fuse_conv_chain.cpp) as banded code on the schedule kiln's CPU backend
// runs it with (kernels/chain_schedule.h, planned here at compile time and written into the code
// as tables of steps): the last layer's output a band of rows at a time, each intermediate
// tensor only a window of the rows its consumer still needs, so the wide intermediate tensors
// stay in the cache (mobilenet_v2's 112x112x96). Windows between two row kernels that read their
// input where it is (depthwise, stem, 1x1: window_call.h's `rows`) are rings; the other layers
// are their kernel call on a band (the shape shrunk to the rows held) with the window's rows
// moved forward between bands. Each thread of the team runs the whole chain on its own share of
// the output rows. A pooled chain's global average pool is summed band by band.
#include <string>
#include <vector>

#include "codegen/cpp/code_text.h"
#include "codegen/cpp/op_emitters.h"
#include "codegen/cpp/window_call.h"
#include "kernels/chain_schedule.h"

namespace kiln::codegen::cpp {

namespace {

struct Layer {
  const ir::Node* node;
  std::vector<int64_t> in, out;  // NHWC
  WindowCall call;
  int z_input = -1;       // the chain input that is its residual, or -1
  bool planar_in = false;  // reads the chain's NCHW input (a stem, or the Transpose's rows)
};

std::string step_text(const kiln_kernels::ChainStep& s) {
  return "{" + std::to_string(s.layer) + ", " + std::to_string(s.window) + ", " + i64(s.row) + ", " + i64(s.rows) + ", " +
         i64(s.src_offset) + ", " + i64(s.dst_offset) + ", " + i64(s.src_row0) + ", " + i64(s.in_rows) + ", " +
         i64(s.pad_top) + ", " + i64(s.pad_bottom) + ", " + i64(s.shift) + "}";
}

}  // namespace

void emit_conv_chain(EmitContext& ctx) {
  const ir::Node& n = ctx.node;
  auto it = n.attrs.find("body");
  if (it == n.attrs.end() || !it->second.g) throw ctx.unsupported("has no body graph");
  const ir::Graph& body = *it->second.g;
  const std::vector<ir::Node*> all = body.nodes();
  std::vector<const ir::Node*> nodes(all.begin(), all.end());
  const bool pooled = !nodes.empty() && nodes.back()->op_type() == "NhwcGlobalAveragePool";
  if (pooled) nodes.pop_back();
  if (nodes.empty()) throw ctx.unsupported("an empty chain");
  auto input_index = [&](const ir::Value* v) {
    for (size_t k = 0; k < body.inputs().size(); ++k)
      if (body.inputs()[k] == v) return static_cast<int>(k);
    return -1;
  };
  // The chain's input is NCHW where the body starts with the layout's Transpose to NHWC.
  const bool nchw_input = nodes[0]->op_type() == "Transpose" &&
                          nodes[0]->attr_ints("perm") == std::vector<int64_t>{0, 2, 3, 1} && nodes.size() > 1;
  std::vector<Layer> layers;
  for (size_t l = 0; l < nodes.size(); ++l) {
    const ir::Node* m = nodes[l];
    const ir::Value* x = m->input(0);
    if (l == 0 ? input_index(x) != 0 : x != nodes[l - 1]->output(0))
      throw ctx.unsupported("member " + m->describe() + " does not read the layer before it");
    Layer L{m, x->type.static_dims(), m->output(0)->type.static_dims(), {}, -1, false};
    if (m->op_type() == "FusedConv" && m->num_inputs() > 3 && m->has_input(3)) {
      L.z_input = input_index(m->input(3));
      if (L.z_input < 0) throw ctx.unsupported("member " + m->describe() + " adds a residual computed inside the chain");
    }
    if (l == 0 && nchw_input) {
      // A stem reads the image's planes itself; else the Transpose is a layer of 1x1 windows
      // writing the rows of its band channels-last.
      const int64_t N = L.in[0], C = L.in[1], H = L.in[2], W = L.in[3];
      const ir::Node* next = nodes[1];
      try {
        WindowCall stem = window_call(ctx, *next, {N, H, W, C}, next->output(0)->type.static_dims(), false, true);
        if (next->op_type() == "FusedConv" && !(next->num_inputs() > 3 && next->has_input(3)) && stem.rows) {
          Layer S{next, {N, H, W, C}, next->output(0)->type.static_dims(), std::move(stem), -1, true};
          layers.push_back(std::move(S));
          ++l;
          continue;
        }
      } catch (const UnsupportedError&) {  // not a stem: transpose the rows first
      }
      L.call.shape_type = "kiln_kernels::TransposeRows";
      L.call.shape_init = "{" + i64(N) + ", " + i64(H) + ", " + i64(W) + ", " + i64(C) + ", " + i64(H) + ", 0}";
      L.call.call = [](const std::string& sv, const std::string& xv, const std::string&, const std::string& yv,
                       const std::string&) { return "kiln_kernels::nchw_rows_to_nhwc(" + sv + ", " + xv + ", " + yv + ");"; };
      L.in = {N, H, W, C};  // the band arithmetic counts rows of the NHWC view
      L.out = L.in;
      L.planar_in = true;
      ctx.use_kernel("layout.h");
      layers.push_back(std::move(L));
      continue;
    }
    try {
      L.call = window_call(ctx, *m, L.in, L.out, false);
    } catch (const UnsupportedError& e) {
      throw UnsupportedError(std::string(e.what()) + " (chain member " + m->describe() + ")");
    }
    if (L.call.winograd) throw ctx.unsupported("a Winograd layer in a chain");
    layers.push_back(std::move(L));
  }
  const int last = static_cast<int>(layers.size()) - 1;
  const int64_t N = layers[0].in[0], OH = layers[last].out[1], OW = layers[last].out[2], M = layers[last].out[3];

  // The schedule, as kiln's CPU backend plans it: the plan's band budget and team.
  const plan::KernelSpec& spec = ctx.step.instruction->spec;
  const int64_t budget = spec.params.count("band_bytes") ? spec.get_int("band_bytes") : int64_t{512} << 10;
  const int64_t band_rows = spec.params.count("band_rows") ? spec.get_int("band_rows") : 0;
  std::vector<kiln_kernels::ChainLayer> rows;
  for (const Layer& L : layers) {
    const WindowCall& c = L.call;
    rows.push_back({L.in[1], L.out[1], (c.kh - 1) * c.dh + 1, c.sh, c.ph, L.out[2] * L.out[3], static_cast<bool>(c.rows),
                    c.pointwise});
  }
  const kiln_kernels::ChainSchedule sched(rows, std::max(1, spec.threads), band_rows, budget);
  ctx.use_kernel("chain_schedule.h");

  // Each thread's windows in one buffer, 64-byte aligned.
  std::vector<int64_t> window_at(layers.size(), 0);
  int64_t floats = 0;
  for (int t = 1; t <= last; ++t) {
    window_at[t] = floats;
    floats += (sched.capacity(t) * layers[t - 1].out[2] * layers[t - 1].out[3] + 15) / 16 * 16;
  }
  const bool has_y = ctx.step.outputs.at(0).buffer >= 0;
  const bool has_pool = pooled && ctx.step.outputs.size() > 1 && ctx.step.outputs[1].buffer >= 0;
  if (!has_y && !has_pool) return;
  const int parts = sched.parts();
  for (int p = 0; p < parts; ++p) {
    const std::vector<kiln_kernels::ChainStep>& steps = sched.steps(p);
    ctx.line("static const kiln_kernels::ChainStep steps" + std::to_string(p) + "[] = {");
    for (size_t i = 0; i < steps.size(); ++i) ctx.line("    " + step_text(steps[i]) + (i + 1 < steps.size() ? "," : ""));
    ctx.line("};");
  }
  std::string list, counts;
  for (int p = 0; p < parts; ++p) {
    list += (p ? ", steps" : "steps") + std::to_string(p);
    counts += (p ? ", " : "") + i64(static_cast<int64_t>(sched.steps(p).size()));
  }
  ctx.line("static const kiln_kernels::ChainStep* const parts[] = {" + list + "};");
  ctx.line("static const int64_t counts[] = {" + counts + "};");
  for (int l = 0; l <= last; ++l)
    if (!layers[l].call.rows)
      ctx.line("static const " + layers[l].call.shape_type + " s" + std::to_string(l) + layers[l].call.shape_init + ";");
  const int64_t in_image = layers[0].in[1] * layers[0].in[2] * layers[0].in[3], out_row = OW * M;
  ctx.line("float* y = " + std::string(has_y ? ctx.out(0) : "nullptr") + ";");
  // Without the conv output (only the pool is used) the last layer writes a window of its band.
  const int64_t last_rows = has_y ? 0 : sched.band();
  if (has_pool) ctx.line("std::vector<float> sums(" + i64(parts * M) + ");  // per part, the channel sums");
  ctx.line("for (int64_t n = 0; n < " + i64(N) + "; ++n) {");
  ctx.line("  const float* x = " + ctx.in(0) + " + n * " + i64(in_image) + ";");
  for (int l = 0; l <= last; ++l)
    if (layers[l].z_input >= 0)
      ctx.line("  const float* z" + std::to_string(l) + " = " + ctx.in(layers[l].z_input) + " + n * " +
               i64(layers[l].out[1] * layers[l].out[2] * layers[l].out[3]) + ";");
  if (has_pool) ctx.line("  std::fill(sums.begin(), sums.end(), 0.f);");
  ctx.line("  kiln_kernels::parallel_for(c.team, " + std::to_string(parts) + ", [&](int64_t p0, int64_t p1) {");
  const int64_t buffer = floats + last_rows * out_row;
  ctx.line("    float* windows = kiln_kernels::chain_windows(" + i64(buffer) + ");");
  ctx.line("    for (int64_t p = p0; p < p1; ++p) {");
  ctx.line("      for (int64_t i = 0; i < counts[p]; ++i) {");
  ctx.line("        const kiln_kernels::ChainStep& st = parts[p][i];");
  ctx.line("        switch (st.layer) {");
  ctx.line("          case -1: {  // rows two bands share move to the window's front");
  ctx.line("            static const int64_t at[] = {" + [&] {
    std::string s;
    for (int t = 0; t <= last; ++t) s += (t ? ", " : "") + i64(window_at[t]);
    return s;
  }() + "};");
  ctx.line("            static const int64_t row[] = {" + [&] {
    std::string s = "0";
    for (int t = 1; t <= last; ++t) s += ", " + i64(layers[t - 1].out[2] * layers[t - 1].out[3]);
    return s;
  }() + "};");
  ctx.line("            float* w = windows + at[st.window];");
  ctx.line("            std::memmove(w, w + st.shift * row[st.window], st.rows * row[st.window] * sizeof(float));");
  ctx.line("            break;");
  ctx.line("          }");
  for (int l = 0; l <= last; ++l) {
    const Layer& L = layers[l];
    const WindowCall& c = L.call;
    const int64_t in_row = L.in[2] * L.in[3], row_floats = L.out[2] * L.out[3];
    const std::string base = l == 0 ? "x" : "(windows + " + i64(window_at[l]) + ")";
    const std::string row0 = l == 0 ? "0" : "st.src_row0";
    const std::string ring = l > 0 && sched.ring(l) ? i64(sched.capacity(l)) : "0";
    // The first input row read: a planar input's rows are W floats apart within a plane.
    const std::string at = base + " + st.src_offset * " + i64(L.planar_in ? L.in[2] : in_row);
    const std::string dst = l < last ? "windows + " + i64(window_at[l + 1]) + " + st.dst_offset * " + i64(row_floats)
                            : has_y  ? "y + (n * " + i64(OH) + " + st.dst_offset) * " + i64(out_row)
                                     : "windows + " + i64(floats);
    const std::string z = L.z_input >= 0 ? "z" + std::to_string(l) + " + st.row * " + i64(row_floats) : "nullptr";
    ctx.line("          case " + std::to_string(l) + ": {  // " + L.node->op_type() + " '" + L.node->name() + "'");
    if (c.rows) {
      const std::string code = c.rows(L.planar_in ? "x" : base, row0, at, "dst", "st.row", "st.row + st.rows", ring, z);
      ctx.line("            float* dst = " + dst + ";");
      size_t from = 0;
      for (size_t nl; (nl = code.find('\n', from)) != std::string::npos; from = nl + 1)
        ctx.line("            " + code.substr(from, nl - from));
      ctx.line("            " + code.substr(from));
    } else {
      ctx.line("            " + c.shape_type + " s = s" + std::to_string(l) + ";");
      ctx.line("            s.N = 1;");
      ctx.line("            s.H = st.in_rows;");
      ctx.line("            s.PH = st.pad_top;");
      ctx.line("            s.OH = st.rows;");
      ctx.line("            " + c.call("s", at, z, dst, "nullptr"));
    }
    if (has_pool && l == last) {
      ctx.line("            const float* r = " + dst + ";");
      ctx.line("            float* part = sums.data() + p * " + i64(M) + ";");
      ctx.line("            for (int64_t q = 0; q < st.rows * " + i64(OW) + "; ++q)");
      ctx.line("              for (int64_t m = 0; m < " + i64(M) + "; ++m) part[m] += r[q * " + i64(M) + " + m];");
    }
    ctx.line("            break;");
    ctx.line("          }");
  }
  ctx.line("        }");
  ctx.line("      }");
  ctx.line("    }");
  ctx.line("  });");
  if (has_pool) {
    ctx.line("  float* pooled = " + ctx.out(1) + " + n * " + i64(M) + ";");
    ctx.line("  for (int64_t m = 0; m < " + i64(M) + "; ++m) {");
    ctx.line("    float total = 0.f;");
    ctx.line("    for (int64_t p = 0; p < " + std::to_string(parts) + "; ++p) total += sums[p * " + i64(M) + " + m];");
    ctx.line("    pooled[m] = total / " + literal_float(static_cast<float>(OH * OW)) + ";");
    ctx.line("  }");
  }
  ctx.line("}");
}

}  // namespace kiln::codegen::cpp
