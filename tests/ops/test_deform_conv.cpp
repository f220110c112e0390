// DeformConv against hand-computed values and a direct evaluation of its definition here:
// each output a sum over taps of weight * mask * X sampled by recursive linear interpolation.
#include <kiln/error.h>

#include <cmath>
#include <random>

#include "op_test_util.h"

namespace kiln::testing {

namespace {
using A = ir::Attribute;

struct Case {
  std::vector<int64_t> x, w;  // X [N, C, in...], W [oC, C / group, k...]
  int64_t group = 1, offset_group = 1;
  std::vector<int64_t> strides, dilations, pads;  // empty: the defaults
  bool bias = false, mask = false;
  double offset_range = 1.5;
};

std::vector<int64_t> spatial_out(const Case& c) {
  const size_t nsp = c.x.size() - 2;
  std::vector<int64_t> out;
  for (size_t i = 0; i < nsp; ++i) {
    const int64_t s = c.strides.empty() ? 1 : c.strides[i], d = c.dilations.empty() ? 1 : c.dilations[i];
    const int64_t pads = c.pads.empty() ? 0 : c.pads[i] + c.pads[i + nsp];
    out.push_back((c.x[i + 2] + pads - (d * (c.w[i + 2] - 1) + 1)) / s + 1);
  }
  return out;
}

int64_t count(const std::vector<int64_t>& d, size_t from = 0) {
  int64_t n = 1;
  for (size_t i = from; i < d.size(); ++i) n *= d[i];
  return n;
}

// X's channel `xc` (extents `in`) at fractional position p: linear along axis `axis` between
// the two neighbouring grid points, recursively; points outside X are zero.
double sample(const double* xc, const std::vector<int64_t>& in, const std::vector<double>& p, size_t axis, int64_t base) {
  if (axis == in.size()) return xc[base];
  const double lo = std::floor(p[axis]), f = p[axis] - lo;
  double v = 0;
  for (int up = 0; up < 2; ++up) {
    const double q = lo + up, weight = up ? f : 1 - f;
    if (q < 0 || q >= static_cast<double>(in[axis]) || weight == 0) continue;
    v += weight * sample(xc, in, p, axis + 1, base * in[axis] + static_cast<int64_t>(q));
  }
  return v;
}

// Y by the definition, in doubles.
std::vector<double> direct(const Case& c, const std::vector<double>& x, const std::vector<double>& w,
                           const std::vector<double>& off, const std::vector<double>& b, const std::vector<double>& mask) {
  const size_t nsp = c.x.size() - 2;
  const std::vector<int64_t> in(c.x.begin() + 2, c.x.end()), k(c.w.begin() + 2, c.w.end()), out = spatial_out(c);
  const int64_t N = c.x[0], C = c.x[1], M = c.w[0], Cg = C / c.group, Mg = M / c.group;
  const int64_t IS = count(in), KS = count(k), OS = count(out);
  std::vector<double> y(static_cast<size_t>(N * M * OS), 0);
  std::vector<int64_t> o(nsp), t(nsp);
  std::vector<double> p(nsp);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t oi = 0; oi < OS; ++oi) {
        for (size_t d = nsp, r = oi; d-- > 0;) o[d] = r % out[d], r /= out[d];
        double acc = b.empty() ? 0 : b[m];
        const int64_t grp = m / Mg;
        for (int64_t cg = 0; cg < Cg; ++cg) {
          const int64_t ch = grp * Cg + cg, og = ch / (C / c.offset_group);
          for (int64_t ti = 0; ti < KS; ++ti) {
            for (size_t d = nsp, r = ti; d-- > 0;) t[d] = r % k[d], r /= k[d];
            for (size_t d = 0; d < nsp; ++d) {
              const int64_t s = c.strides.empty() ? 1 : c.strides[d], dl = c.dilations.empty() ? 1 : c.dilations[d];
              const int64_t pb = c.pads.empty() ? 0 : c.pads[d];
              const int64_t channel = ((og * KS + ti) * static_cast<int64_t>(nsp) + static_cast<int64_t>(d));
              p[d] = static_cast<double>(o[d] * s - pb + t[d] * dl) +
                     off[(n * c.offset_group * KS * static_cast<int64_t>(nsp) + channel) * OS + oi];
            }
            const double scale = mask.empty() ? 1 : mask[((n * c.offset_group + og) * KS + ti) * OS + oi];
            acc += w[(m * Cg + cg) * KS + ti] * scale * sample(&x[(n * C + ch) * IS], in, p, 0, 0);
          }
        }
        y[(n * M + m) * OS + oi] = acc;
      }
  return y;
}

Tensor of(DType t, const std::vector<int64_t>& dims, const std::vector<double>& v) {
  Tensor out(t, dims);
  for (int64_t i = 0; i < out.numel(); ++i) {
    if (t == DType::Float) out.data<float>()[i] = static_cast<float>(v[i]);
    if (t == DType::Double) out.data<double>()[i] = v[i];
    if (t == DType::Float16) out.data<Float16>()[i] = Float16(static_cast<float>(v[i]));
    if (t == DType::BFloat16) out.data<BFloat16>()[i] = BFloat16(static_cast<float>(v[i]));
  }
  return out;
}

// Values exact in every float dtype: multiples of 1/8 (offsets: 1/16) in a small range.
std::vector<double> grid_values(std::mt19937& rng, int64_t n, double range, double step) {
  std::uniform_int_distribution<int> u(static_cast<int>(-range / step), static_cast<int>(range / step));
  std::vector<double> v(static_cast<size_t>(n));
  for (double& e : v) e = u(rng) * step;
  return v;
}

ir::Attributes attrs_of(const Case& c) {
  ir::Attributes a = {{"group", A::of_int(c.group)}, {"offset_group", A::of_int(c.offset_group)}};
  if (!c.strides.empty()) a["strides"] = A::of_ints(c.strides);
  if (!c.dilations.empty()) a["dilations"] = A::of_ints(c.dilations);
  if (!c.pads.empty()) a["pads"] = A::of_ints(c.pads);
  return a;
}

// Runs the case on random data in dtype t and compares with direct().
void check(const Case& c, DType t, uint32_t seed, double atol, double rtol) {
  std::mt19937 rng(seed);
  const size_t nsp = c.x.size() - 2;
  const std::vector<int64_t> out = spatial_out(c);
  const int64_t KS = count(c.w, 2), N = c.x[0];
  std::vector<int64_t> od = {N, c.offset_group * KS * static_cast<int64_t>(nsp)}, md = {N, c.offset_group * KS};
  od.insert(od.end(), out.begin(), out.end());
  md.insert(md.end(), out.begin(), out.end());
  const std::vector<double> x = grid_values(rng, count(c.x), 2, 0.125), w = grid_values(rng, count(c.w), 1, 0.125);
  const std::vector<double> off = grid_values(rng, count(od), c.offset_range, 0.0625);
  const std::vector<double> b = c.bias ? grid_values(rng, c.w[0], 1, 0.125) : std::vector<double>();
  const std::vector<double> mask = c.mask ? grid_values(rng, count(md), 1, 0.125) : std::vector<double>();
  std::vector<Tensor> inputs = {of(t, c.x, x), of(t, c.w, w), of(t, od, off), Tensor(), Tensor()};
  if (c.bias) inputs[3] = of(t, {c.w[0]}, b);
  if (c.mask) inputs[4] = of(t, md, mask);
  if (!c.mask) inputs.pop_back();
  if (!c.mask && !c.bias) inputs.pop_back();
  std::vector<int64_t> yd = {N, c.w[0]};
  yd.insert(yd.end(), out.begin(), out.end());
  auto y = run_op({.op = "DeformConv", .inputs = inputs, .attrs = attrs_of(c), .opset = 22});
  expect_near(y[0], of(t, yd, direct(c, x, w, off, b, mask)), atol, rtol);
}

std::vector<Tensor> run(const std::vector<Tensor>& inputs, const ir::Attributes& attrs, int opset = 19) {
  return run_op({.op = "DeformConv", .inputs = inputs, .attrs = attrs, .opset = opset});
}
}  // namespace

// The ONNX examples, by hand. X = 0..8 in a 3x3 grid, W = ones(2x2): each output is the sum
// of its four taps. Tap (0,0) of output (0,0) moves down by 0.5 (X 1.5 instead of 0), tap
// (1,0) of output (0,1) left by 0.1 (X 3.9 instead of 4).
TEST(DeformConv, OnnxExamplesByHand) {
  Tensor x = Tensor::from_vector<float>({1, 1, 3, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8});
  Tensor w = Tensor::from_vector<float>({1, 1, 2, 2}, {1, 1, 1, 1});
  Tensor off(DType::Float, {1, 8, 2, 2});
  off.data<float>()[0] = 0.5f;           // tap (0,0), axis y, output (0,0)
  off.data<float>()[5 * 4 + 1] = -0.1f;  // tap (1,0), axis x, output (0,1)
  const ir::Attributes k22 = {{"kernel_shape", A::of_ints({2, 2})}};
  expect_near(run({x, w, off}, k22)[0], Tensor::from_vector<float>({1, 1, 2, 2}, {9.5f, 11.9f, 20, 24}));

  // Bias 1 and the mask 0.2 on tap (1,0) of output (1,1): 1 + 4 + 5 + 0.2 * 7 + 8.
  Tensor mask = Tensor::from_vector<float>({1, 4, 2, 2}, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0.2f, 1, 1, 1, 1});
  expect_near(run({x, w, off, Tensor::from_vector<float>({1}, {1}), mask}, k22)[0],
              Tensor::from_vector<float>({1, 1, 2, 2}, {10.5f, 12.9f, 21, 19.4f}));

  // Pads of 1 all round: a 4x4 output whose corners see one pixel each; output (0,0)'s first
  // tap now samples (-0.5, -1), one pixel outside: zero.
  Tensor offp(DType::Float, {1, 8, 4, 4});
  offp.data<float>()[0] = 0.5f;
  ir::Attributes padded = k22;
  padded["pads"] = A::of_ints({1, 1, 1, 1});
  expect_near(run({x, w, offp}, padded)[0],
              Tensor::from_vector<float>({1, 1, 4, 4}, {0, 1, 3, 2, 3, 8, 12, 7, 9, 20, 24, 13, 6, 13, 15, 8}));

  // Two offset groups: channel 0 takes the 0.5 shift (output (0,0): 9.5 + 8 + 7 + 5 + 4),
  // channel 1 (X reversed) the -0.1 (output (0,1): 1 + 2 + 4 + 5 + 7 + 6 + 4.1 + 3).
  Tensor x2 = Tensor::from_vector<float>({1, 2, 3, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 8, 7, 6, 5, 4, 3, 2, 1, 0});
  Tensor w2 = Tensor::from_vector<float>({1, 2, 2, 2}, {1, 1, 1, 1, 1, 1, 1, 1});
  Tensor off2(DType::Float, {1, 16, 2, 2});
  off2.data<float>()[0] = 0.5f;
  off2.data<float>()[13 * 4 + 1] = -0.1f;
  ir::Attributes og = k22;
  og["offset_group"] = A::of_int(2);
  expect_near(run({x2, w2, off2}, og)[0], Tensor::from_vector<float>({1, 1, 2, 2}, {33.5f, 32.1f, 32, 32}));
}

// With zero offsets it is a plain convolution (groups, strides, dilations, uneven pads).
TEST(DeformConv, ZeroOffsetsAreAConvolution) {
  Case c{.x = {2, 6, 5, 7}, .w = {4, 3, 3, 2}, .group = 2, .strides = {2, 1}, .dilations = {1, 2}, .pads = {1, 0, 2, 1}};
  c.bias = true;
  c.offset_range = 0;
  check(c, DType::Float, 3, 1e-5, 1e-5);
}

// Random fractional offsets, reaching past the borders, on 1-, 2- and 3-D odd shapes.
TEST(DeformConv, RandomOffsetsMatchTheDefinition) {
  check({.x = {2, 3, 9}, .w = {5, 3, 3}, .strides = {2}, .pads = {2, 1}, .offset_range = 2.5}, DType::Float, 1, 1e-5, 1e-5);
  check({.x = {1, 4, 5, 6}, .w = {6, 2, 2, 3}, .group = 2, .offset_group = 4, .dilations = {2, 1}, .pads = {0, 1, 1, 0},
         .bias = true, .mask = true},
        DType::Float, 2, 1e-5, 1e-5);
  check({.x = {2, 6, 4, 5}, .w = {3, 2, 3, 3}, .group = 3, .offset_group = 2, .strides = {1, 2}, .pads = {1, 1, 1, 1},
         .mask = true},
        DType::Double, 3, 1e-12, 1e-12);
  check({.x = {1, 2, 3, 4, 5}, .w = {2, 2, 2, 2, 3}, .offset_group = 2, .pads = {0, 1, 1, 1, 0, 0}, .bias = true, .mask = true},
        DType::Float, 4, 1e-5, 1e-5);
}

TEST(DeformConv, HalfPrecisionTypes) {
  const Case c{.x = {1, 2, 4, 4}, .w = {2, 2, 2, 2}, .pads = {1, 1, 0, 0}, .bias = true, .mask = true};
  check(c, DType::Float16, 5, 0.02, 0.01);
  check(c, DType::BFloat16, 6, 0.1, 0.02);
}

TEST(DeformConv, ShapeInference) {
  // Static spatial extents from X, symbolic batch.
  auto t = infer_op("DeformConv", {T(DType::Float, {S("n"), 4, 9, 8}), T(DType::Float, {6, 2, 3, 3}), T(DType::Float, {S("n"), 18, 4, 6})},
                    {{"group", A::of_int(2)}, {"strides", A::of_ints({2, 1})}, {"pads", A::of_ints({0, 0, 0, 0})}}, 1, 19);
  EXPECT_EQ(t[0].str(), "float[n,6,4,6]");
  // X's spatial extents unknown: the offset's give the output's.
  t = infer_op("DeformConv", {T(DType::Float, {S("n"), 4, S("h"), S("w")}), T(DType::Float, {6, 4, 3, 3}),
                              T(DType::Float, {S("n"), 18, 7, 5})},
               {}, 1, 22);
  EXPECT_EQ(t[0].str(), "float[n,6,7,5]");
}

TEST(DeformConv, BadInputs) {
  Tensor x(DType::Float, {1, 4, 5, 5}), w(DType::Float, {2, 4, 3, 3}), off(DType::Float, {1, 18, 3, 3});
  auto fails = [](const std::vector<Tensor>& in, const ir::Attributes& attrs, const std::string& what) {
    expect_error([&] { run(in, attrs); }, what);
  };
  ASSERT_EQ(run({x, w, off}, {})[0].dims(), (std::vector<int64_t>{1, 2, 3, 3}));
  fails({x, w, Tensor(DType::Float, {1, 16, 3, 3})}, {}, "(DeformConv): offset has 16 at axis 1 where offset_group * prod(kernel_shape)");
  fails({x, w, Tensor(DType::Float, {1, 18, 3, 4})}, {}, "offset has 4 at axis 3 where the convolution's output extent gives 3");
  fails({x, w, Tensor(DType::Float, {2, 18, 3, 3})}, {}, "offset has 2 at axis 0 where X's batch gives 1");
  fails({x, w, off, Tensor(), Tensor(DType::Float, {1, 18, 3, 3})}, {}, "mask has 18 at axis 1");
  fails({x, w, off, Tensor(DType::Float, {3})}, {}, "bias B has 3 at axis 0 where W's output channel count gives 2");
  fails({x, w, Tensor(DType::Float, {1, 36, 3, 3})}, {{"offset_group", A::of_int(3)}}, "not divisible by offset_group 3");
  fails({x, w, off}, {{"group", A::of_int(2)}}, "X has 4 channels but W expects 4 per group x 2 groups");
  fails({x, Tensor(DType::Float, {3, 2, 3, 3}), off}, {{"group", A::of_int(2)}}, "W's 3 output channels are not divisible by group 2");
  fails({x, w, off}, {{"kernel_shape", A::of_ints({3, 2})}}, "kernel_shape [3,2] does not match W's spatial dims [3,3]");
  fails({x, w, off}, {{"strides", A::of_ints({0, 1})}}, "must be >= 1");
  fails({x, w, off}, {{"pads", A::of_ints({-1, 0, 0, 0})}}, "must be >= 0");
  fails({x, w, off}, {{"dilations", A::of_ints({3, 1})}}, "kernel extent 7 (kernel 3, dilation 3) exceeds the padded input extent 5");
  fails({x, w, Tensor(DType::Double, {1, 18, 3, 3})}, {}, "offset is double[1,18,3,3] but X is float[1,4,5,5]");
  fails({Tensor(DType::Int32, {1, 4, 5, 5}), Tensor(DType::Int32, {2, 4, 3, 3}), Tensor(DType::Int32, {1, 18, 3, 3})}, {},
        "X must be floating-point");
  fails({Tensor(DType::Float, {4, 5}), Tensor(DType::Float, {2, 4}), Tensor(DType::Float, {1, 18})}, {}, "X must have rank >= 3");
  fails({x, Tensor(DType::Float, {2, 4, 3}), off}, {}, "W has rank 3 but X has rank 4");
}

}  // namespace kiln::testing
