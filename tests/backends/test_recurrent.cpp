// The cpu backend's RNN, GRU and LSTM against the reference kernels: both GRU reset forms, every
// direction, both layouts, initial states, LSTM peepholes and input_forget, two threads; and the
// forms left to the reference kernel.
#include "kernel_check.h"

namespace kiln {
namespace {

using kernel_check::Case;
using kernel_check::check;

ir::Attribute strings(std::vector<std::string> v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::Strings;
  a.strings = std::move(v);
  return a;
}

ir::Attributes attrs(int64_t hidden, const std::string& direction, ir::Attributes more = {}) {
  more["hidden_size"] = ir::Attribute::of_int(hidden);
  more["direction"] = ir::Attribute::of_string(direction);
  return more;
}

// X, W, R, B, sequence_lens (left out), initial_h[, initial_c, P] for `dirs` directions.
Case rnn(const std::string& op, int64_t seq, int64_t batch, int64_t input, int64_t H, const std::string& direction,
         bool batch_major, ir::Attributes more = {}, bool states = true, bool peepholes = false) {
  const int64_t dirs = direction == "bidirectional" ? 2 : 1, G = op == "RNN" ? 1 : op == "GRU" ? 3 : 4;
  const std::vector<int64_t> x = batch_major ? std::vector<int64_t>{batch, seq, input} : std::vector<int64_t>{seq, batch, input};
  const std::vector<int64_t> state = batch_major ? std::vector<int64_t>{batch, dirs, H} : std::vector<int64_t>{dirs, batch, H};
  const std::vector<int64_t> y = batch_major ? std::vector<int64_t>{batch, seq, dirs, H} : std::vector<int64_t>{seq, dirs, batch, H};
  if (batch_major) more["layout"] = ir::Attribute::of_int(1);
  Case c{op, "", {x, {dirs, G * H, input}, {dirs, G * H, H}, {dirs, 2 * G * H}, {batch}, state},
         {false, true, true, true, false, false}, {y, state}, attrs(H, direction, more)};
  c.opset = 14;
  c.unset_inputs = {4};
  if (!states) c.unset_inputs.push_back(5);
  if (op == "LSTM") {
    c.in_dims.push_back(state);  // initial_c
    c.constant.push_back(false);
    if (!states) c.unset_inputs.push_back(6);
    c.out_dims.push_back(state);  // Y_c
    if (peepholes) {
      c.in_dims.push_back({dirs, 3 * H});
      c.constant.push_back(true);
    }
  }
  return c;
}

TEST(CpuRecurrent, GruBothResetFormsEveryDirection) {
  check(rnn("GRU", 5, 2, 7, 6, "forward", false));
  check(rnn("GRU", 5, 2, 7, 6, "forward", false, {{"linear_before_reset", ir::Attribute::of_int(1)}}));
  Case bi = rnn("GRU", 4, 1, 5, 19, "bidirectional", false, {{"linear_before_reset", ir::Attribute::of_int(1)}}, false);
  bi.threads = 2;
  bi.concurrent = true;
  check(bi);
  check(rnn("GRU", 6, 3, 4, 17, "reverse", true));
}

// Inputs and gate rows wider than the projection's 64-output blocks and input ranges, with rows
// of X shared unevenly between two threads and the directions.
TEST(CpuRecurrent, WideProjections) {
  Case gru = rnn("GRU", 7, 2, 130, 50, "bidirectional", false, {{"linear_before_reset", ir::Attribute::of_int(1)}});
  gru.threads = 2;
  gru.tol = 2e-4f;
  check(gru);
  Case lstm = rnn("LSTM", 5, 3, 70, 33, "bidirectional", true);
  lstm.threads = 2;
  lstm.tol = 2e-4f;
  check(lstm);
  check(rnn("LSTM", 9, 1, 200, 64, "reverse", false));
}

TEST(CpuRecurrent, LstmPeepholesInputForgetAndLayouts) {
  check(rnn("LSTM", 5, 2, 7, 6, "forward", false, {}, true, true));
  check(rnn("LSTM", 3, 3, 4, 18, "bidirectional", true, {{"input_forget", ir::Attribute::of_int(1)}}));
  Case rev = rnn("LSTM", 7, 1, 9, 33, "reverse", false, {}, false);
  rev.threads = 2;
  check(rev);
}

TEST(CpuRecurrent, RnnEveryDirectionAndLayout) {
  check(rnn("RNN", 5, 2, 7, 6, "forward", false));
  check(rnn("RNN", 4, 3, 5, 19, "bidirectional", true));
  check(rnn("RNN", 6, 1, 40, 33, "reverse", false, {}, false));
  Case wide = rnn("RNN", 7, 2, 130, 50, "bidirectional", false);
  wide.threads = 2;
  check(wide);
  check(rnn("RNN", 3, 1, 4, 5, "bidirectional", false, {{"activations", strings({"Tanh", "Tanh"})}}));
  check(rnn("RNN", 3, 1, 4, 5, "forward", false, {{"activations", strings({"Relu"})}}), false);
}

TEST(CpuRecurrent, SpelledOutDefaultActivationsAreTaken) {
  check(rnn("GRU", 3, 1, 4, 5, "bidirectional", false,
            {{"activations", strings({"Sigmoid", "Tanh", "Sigmoid", "Tanh"})}}));
}

TEST(CpuRecurrent, Declines) {
  check(rnn("GRU", 3, 1, 4, 5, "forward", false, {{"clip", ir::Attribute::of_float(2.f)}}), false);
  check(rnn("GRU", 3, 1, 4, 5, "forward", false, {{"activations", strings({"Relu", "Tanh"})}}), false);
}

}  // namespace
}  // namespace kiln
