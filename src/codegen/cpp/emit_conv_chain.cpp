// kiln.ConvChain (lower/fuse_conv_chain.cpp) as banded code: the last layer's output a band of
// rows at a time, each earlier layer computing only the rows the next one needs into a buffer
// of its own, so the wide intermediate tensors stay in the cache (mobilenet_v2's 112x112x96) as
// in the CPU backend's kernel. Each layer is the kernel call it would be alone (window_call.h)
// on its shape shrunk to the band: the rows held, the top pad left, the output rows. Rows two
// bands share are computed by both; the team's threads split the bands. A pooled chain's global
// average pool is summed band by band.
#include <string>
#include <vector>

#include "codegen/cpp/code_text.h"
#include "codegen/cpp/op_emitters.h"
#include "codegen/cpp/window_call.h"

namespace kiln::codegen::cpp {

namespace {

// The bytes of intermediate rows one band may hold: a share of a core's L2 (1-2 MiB on the x86
// cores kiln targets), leaving room for the band's input and output rows.
constexpr int64_t kBandBytes = 512 << 10;

struct Layer {
  const ir::Node* node;
  std::vector<int64_t> in, out;  // NHWC
  WindowCall call;
  int z_input = -1;  // the chain input that is its residual, or -1
};

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
  std::vector<Layer> layers;
  for (size_t l = 0; l < nodes.size(); ++l) {
    const ir::Node* m = nodes[l];
    const ir::Value* x = m->input(0);
    if (l == 0 ? input_index(x) != 0 : x != nodes[l - 1]->output(0))
      throw ctx.unsupported("member " + m->describe() + " does not read the layer before it");
    Layer L{m, x->type.static_dims(), m->output(0)->type.static_dims(), {}, -1};
    if (m->op_type() == "FusedConv" && m->num_inputs() > 3 && m->has_input(3)) {
      L.z_input = input_index(m->input(3));
      if (L.z_input < 0) throw ctx.unsupported("member " + m->describe() + " adds a residual computed inside the chain");
    }
    if (l == 0 && m->op_type() == "Transpose" && m->attr_ints("perm") == std::vector<int64_t>{0, 2, 3, 1}) {
      // The layout's NCHW -> NHWC Transpose of the input, taken into the chain (conv_chain_input):
      // a layer of 1x1 windows that writes the rows of its band channels-last.
      const int64_t H = L.in[2], W = L.in[3], C = L.in[1];
      L.call.shape_type = "kiln_kernels::TransposeRows";
      L.call.shape_init = "{" + i64(L.in[0]) + ", " + i64(H) + ", " + i64(W) + ", " + i64(C) + ", " + i64(H) + ", 0}";
      L.call.call = [](const std::string& sv, const std::string& xv, const std::string&, const std::string& yv,
                       const std::string&) { return "kiln_kernels::nchw_rows_to_nhwc(" + sv + ", " + xv + ", " + yv + ");"; };
      L.in = {L.in[0], H, W, C};  // the band arithmetic counts rows of the NHWC view
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
  const size_t last = layers.size() - 1;
  const int64_t N = layers[0].in[0], OH = layers[last].out[1], OW = layers[last].out[2], M = layers[last].out[3];

  // Rows each layer's output needs for `rows` rows of the last output, and their bytes.
  auto rows_for = [&](int64_t rows) {
    std::vector<int64_t> r(layers.size());
    r[last] = rows;
    for (size_t l = last; l > 0; --l)
      r[l - 1] = std::min(layers[l].in[1], (r[l] - 1) * layers[l].call.sh + (layers[l].call.kh - 1) * layers[l].call.dh + 1);
    return r;
  };
  auto bytes_for = [&](const std::vector<int64_t>& r) {
    int64_t b = 0;
    for (size_t l = 0; l < last; ++l) b += r[l] * layers[l].out[2] * layers[l].out[3] * 4;
    return b;
  };
  int64_t band = OH;
  while (band > 1 && bytes_for(rows_for(band)) > kBandBytes) --band;
  const int64_t bands = (OH + band - 1) / band;
  const std::vector<int64_t> cap = rows_for(band);

  const bool has_y = ctx.step.outputs.at(0).buffer >= 0;
  const bool has_pool = pooled && ctx.step.outputs.size() > 1 && ctx.step.outputs[1].buffer >= 0;
  for (size_t l = 0; l < layers.size(); ++l)
    ctx.line("static const " + layers[l].call.shape_type + " s" + std::to_string(l) + layers[l].call.shape_init + ";");
  ctx.line("const float* x = " + ctx.in(0) + ";");
  for (size_t l = 0; l < layers.size(); ++l)
    if (layers[l].z_input >= 0) ctx.line("const float* z" + std::to_string(l) + " = " + ctx.in(layers[l].z_input) + ";");
  ctx.line(std::string("float* y = ") + (has_y ? ctx.out(0) : "nullptr") + ";");
  if (has_pool) ctx.line("std::vector<float> sums(" + i64(N * bands * M) + ");  // per band, the channel sums");
  ctx.line("kiln_kernels::parallel_for(c.team, " + i64(N * bands) + ", [&](int64_t b0, int64_t b1) {");
  for (size_t l = 0; l < layers.size(); ++l) {
    if (l == last && has_y) continue;
    ctx.line("  thread_local std::vector<float> t" + std::to_string(l) + "(" +
             i64(cap[l] * layers[l].out[2] * layers[l].out[3]) + ");");
  }
  // Rows a layer's buffer already holds from the thread's previous band (of the same image):
  // kept, moved to the front, so that only the new rows are computed (windows sliding down).
  for (size_t l = 0; l < last; ++l) ctx.line("  int64_t have_lo" + std::to_string(l) + " = -1, have_hi" + std::to_string(l) + " = -1;");
  ctx.line("  for (int64_t band = b0; band < b1; ++band) {");
  ctx.line("    const int64_t n = band / " + i64(bands) + ";");
  ctx.line("    if (band % " + i64(bands) + " == 0) {  // a new image: nothing to keep");
  for (size_t l = 0; l < last; ++l) ctx.line("      have_lo" + std::to_string(l) + " = have_hi" + std::to_string(l) + " = -1;");
  ctx.line("    }");
  const std::string L = std::to_string(last);
  ctx.line("    int64_t lo" + L + " = band % " + i64(bands) + " * " + i64(band) + ", hi" + L + " = std::min<int64_t>(" +
           i64(OH) + ", lo" + L + " + " + i64(band) + ");");
  // Rows each earlier layer's output must hold, last to first, then the chain input's.
  for (size_t l = last + 1; l-- > 0;) {
    const WindowCall& c = layers[l].call;
    const std::string in_lo = l == 0 ? "lox" : "lo" + std::to_string(l - 1), in_hi = l == 0 ? "hix" : "hi" + std::to_string(l - 1);
    const std::string lo = "lo" + std::to_string(l), hi = "hi" + std::to_string(l);
    const std::string in_hi_expr = "std::min<int64_t>(" + i64(layers[l].in[1]) + ", (" + hi + " - 1) * " + i64(c.sh) +
                                   " - " + i64(c.ph) + " + " + i64((c.kh - 1) * c.dh + 1) + ")";
    if (l == 0) {  // the chain input is read where it is: only its end matters
      ctx.line("    const int64_t hix = " + in_hi_expr + ";");
      continue;
    }
    ctx.line("    const int64_t " + in_lo + " = std::max<int64_t>(0, " + lo + " * " + i64(c.sh) + " - " + i64(c.ph) + "), " +
             in_hi + " = " + in_hi_expr + ";");
  }
  for (size_t l = 0; l < layers.size(); ++l) {
    const WindowCall& c = layers[l].call;
    const std::string S = std::to_string(l);
    const std::string in_lo = l == 0 ? "lox" : "lo" + std::to_string(l - 1), in_hi = l == 0 ? "hix" : "hi" + std::to_string(l - 1);
    const std::string lo = "lo" + S, hi = "hi" + S;
    const std::vector<int64_t>& in = layers[l].in;
    const std::vector<int64_t>& out = layers[l].out;
    const int64_t in_row = in[2] * in[3], out_row = out[2] * out[3];
    const bool buffered = !(l == last && has_y);
    ctx.line("    {");
    // `from`: the first output row to compute; rows [lo, from) are kept from the last band.
    if (buffered && l < last) {
      ctx.line("      int64_t from = " + lo + ";");
      ctx.line("      if (have_lo" + S + " <= " + lo + " && " + lo + " < have_hi" + S + ") {");
      ctx.line("        std::memmove(t" + S + ".data(), t" + S + ".data() + (" + lo + " - have_lo" + S + ") * " + i64(out_row) +
               ", (have_hi" + S + " - " + lo + ") * " + i64(out_row) + " * sizeof(float));");
      ctx.line("        from = have_hi" + S + ";");
      ctx.line("      }");
      ctx.line("      have_lo" + S + " = " + lo + ";");
      ctx.line("      have_hi" + S + " = " + hi + ";");
    } else {
      ctx.line("      const int64_t from = " + lo + ";");
    }
    ctx.line("      if (from < " + hi + ") {");
    // The input rows output rows [from, hi) read, inside the rows [in_lo, in_hi) held.
    ctx.line("        const int64_t first = std::max<int64_t>(0, from * " + i64(c.sh) + " - " + i64(c.ph) + ");");
    const bool planar = c.shape_type == "kiln_kernels::TransposeRows";
    const std::string src = planar ? "x + n * " + i64(in[1] * in_row) + " + first * " + i64(in[2])
                            : l == 0 ? "x + (n * " + i64(in[1]) + " + first) * " + i64(in_row)
                                   : "t" + std::to_string(l - 1) + ".data() + (first - " + in_lo + ") * " + i64(in_row);
    const std::string dst = !buffered ? "y + (n * " + i64(OH) + " + from) * " + i64(OW * M)
                                      : "t" + S + ".data() + (from - " + lo + ") * " + i64(out_row);
    const std::string z = layers[l].z_input >= 0 ? "z" + S + " + (n * " + i64(out[1]) + " + from) * " + i64(out_row) : "nullptr";
    ctx.line("        " + c.shape_type + " s = s" + S + ";");
    ctx.line("        s.N = 1;");
    ctx.line("        s.H = " + in_hi + " - first;");
    ctx.line("        s.PH = " + i64(c.ph) + " - from * " + i64(c.sh) + " + first;");
    ctx.line("        s.OH = " + hi + " - from;");
    ctx.line("        " + c.call("s", src, z, dst, "nullptr"));
    ctx.line("      }");
    ctx.line("    }");
  }
  if (has_pool) {
    const std::string rows = std::string(has_y ? "y + (n * " + i64(OH) + " + lo" + L + ") * " + i64(OW * M) : "t" + L + ".data()");
    ctx.line("    float* part = sums.data() + band * " + i64(M) + ";");
    ctx.line("    const float* r = " + rows + ";");
    ctx.line("    for (int64_t p = 0; p < (hi" + L + " - lo" + L + ") * " + i64(OW) + "; ++p)");
    ctx.line("      for (int64_t m = 0; m < " + i64(M) + "; ++m) part[m] += r[p * " + i64(M) + " + m];");
  }
  ctx.line("  }");
  ctx.line("});");
  if (has_pool) {
    ctx.line("float* pooled = " + ctx.out(1) + ";");
    ctx.line("for (int64_t n = 0; n < " + i64(N) + "; ++n)");
    ctx.line("  for (int64_t m = 0; m < " + i64(M) + "; ++m) {");
    ctx.line("    float total = 0.f;");
    ctx.line("    for (int64_t b = 0; b < " + i64(bands) + "; ++b) total += sums[(n * " + i64(bands) + " + b) * " + i64(M) + " + m];");
    ctx.line("    pooled[n * " + i64(M) + " + m] = total / " + literal_float(static_cast<float>(OH * OW)) + ";");
    ctx.line("  }");
  }
}

}  // namespace kiln::codegen::cpp
