// The form of an RNN, GRU or LSTM node that kiln's fast recurrent kernels take (the CPU
// backend's and the code generation targets'): float32 with constant W, R, B and
// P, the default activations (tanh for RNN; sigmoid gates, tanh candidates), any direction,
// either layout, initial states, LSTM peepholes and input_forget, GRU's linear_before_reset.
// sequence_lens, clip and other activations are the reference kernel's (src/ops/rnn.cpp holds
// the semantics).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln::ops {

struct RecurrentForm {
  bool lstm = false;  // else GRU or (rnn) the plain RNN
  bool rnn = false;
  int64_t gates = 3;  // G: 1 (RNN's h), 3 (z r h) or 4 (i o f c)
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1;
  bool reverse_only = false, batch_major = false, linear_before_reset = false, input_forget = false;
  // Per direction, W's and R's biases [dirs][G * hidden] (zeros when B is absent), and the
  // peepholes [dirs][3 * hidden] (empty when P is absent).
  std::vector<float> w_bias, r_bias, peepholes;
};

// The node's form, or nullopt with `why` saying what keeps it off the fast kernels.
std::optional<RecurrentForm> recurrent_form(const ir::Node& n, std::string* why = nullptr);

}  // namespace kiln::ops
