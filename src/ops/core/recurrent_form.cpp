#include "ops/core/recurrent_form.h"

namespace kiln::ops {

namespace {

bool constant_float(const ir::Value* v) {
  return v && v->is_constant() && v->type.dtype == DType::Float && v->type.is_static();
}

// The default activations, spelled out or not.
bool default_activations(const ir::Node& n, bool lstm, int64_t dirs) {
  if (!n.has_attr("activations")) return true;
  const std::vector<std::string> names = n.attr_strings("activations");
  const std::vector<std::string> one = n.op_type() == "RNN" ? std::vector<std::string>{"Tanh"}
                                       : lstm               ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                                            : std::vector<std::string>{"Sigmoid", "Tanh"};
  if (names.size() != one.size() * static_cast<size_t>(dirs)) return false;
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] != one[i % one.size()]) return false;
  return true;
}

std::optional<RecurrentForm> refuse(std::string* why, const std::string& reason) {
  if (why) *why = reason;
  return std::nullopt;
}

}  // namespace

std::optional<RecurrentForm> recurrent_form(const ir::Node& n, std::string* why) {
  RecurrentForm f;
  f.lstm = n.op_type() == "LSTM";
  f.rnn = n.op_type() == "RNN";
  if (!n.domain().empty() || (!f.lstm && !f.rnn && n.op_type() != "GRU")) return refuse(why, "not an RNN, GRU or LSTM");
  f.gates = f.lstm ? 4 : f.rnn ? 1 : 3;
  if (n.num_inputs() < 3) return refuse(why, "W and R are needed");
  if (n.num_inputs() > 4 && n.input(4)) return refuse(why, "sequence_lens is the reference kernel's");
  if (n.has_attr("clip")) return refuse(why, "clip is the reference kernel's");
  const ir::Value* x = n.input(0);
  if (!x || x->type.dtype != DType::Float || !x->type.is_static()) return refuse(why, "X is not float32 of a static shape");
  if (!constant_float(n.input(1)) || !constant_float(n.input(2))) return refuse(why, "W and R are not float32 constants");
  for (int i = 0; i < n.num_outputs(); ++i)
    if (n.output(i) && n.output(i)->type.dtype != DType::Float) return refuse(why, "an output is not float32");
  const std::string direction = n.attr_string("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    return refuse(why, "direction '" + direction + "'");
  f.dirs = direction == "bidirectional" ? 2 : 1;
  f.reverse_only = direction == "reverse";
  f.batch_major = n.attr_int("layout", 0) == 1;
  f.linear_before_reset = !f.lstm && n.attr_int("linear_before_reset", 0) != 0;
  f.input_forget = f.lstm && n.attr_int("input_forget", 0) != 0;
  if (!default_activations(n, f.lstm, f.dirs)) return refuse(why, "activations other than the defaults");
  const std::vector<int64_t> xd = x->type.static_dims(), wd = n.input(1)->type.static_dims(),
                             rd = n.input(2)->type.static_dims();
  if (xd.size() != 3 || wd.size() != 3 || rd.size() != 3) return refuse(why, "X, W or R is not of rank 3");
  f.seq = xd[f.batch_major ? 1 : 0];
  f.batch = xd[f.batch_major ? 0 : 1];
  f.input = xd[2];
  f.hidden = n.attr_int("hidden_size", rd[2]);
  const int64_t GH = f.gates * f.hidden;
  if (f.hidden <= 0 || f.seq <= 0 || f.batch <= 0 || f.input <= 0 ||
      wd != std::vector<int64_t>{f.dirs, GH, f.input} || rd != std::vector<int64_t>{f.dirs, GH, f.hidden})
    return refuse(why, "X, W and R disagree on the shapes");
  f.w_bias.assign(static_cast<size_t>(f.dirs * GH), 0.f);
  f.r_bias = f.w_bias;
  if (n.num_inputs() > 3 && n.input(3)) {
    if (!constant_float(n.input(3)) || n.input(3)->type.static_dims() != std::vector<int64_t>{f.dirs, 2 * GH})
      return refuse(why, "B is not a float32 constant [dirs, 2 * gates * hidden]");
    const float* b = n.input(3)->constant().data<float>();
    for (int64_t d = 0; d < f.dirs; ++d)
      for (int64_t k = 0; k < GH; ++k) {
        f.w_bias[static_cast<size_t>(d * GH + k)] = b[d * 2 * GH + k];
        f.r_bias[static_cast<size_t>(d * GH + k)] = b[d * 2 * GH + GH + k];
      }
  }
  const std::vector<int64_t> state = f.batch_major ? std::vector<int64_t>{f.batch, f.dirs, f.hidden}
                                                   : std::vector<int64_t>{f.dirs, f.batch, f.hidden};
  for (int i = 5; i <= (f.lstm ? 6 : 5) && i < n.num_inputs(); ++i) {
    const ir::Value* s = n.input(i);
    if (s && (s->type.dtype != DType::Float || !s->type.is_static() || s->type.static_dims() != state))
      return refuse(why, "an initial state is not float32 [dirs, batch, hidden] in the layout");
  }
  if (f.lstm && n.num_inputs() > 7 && n.input(7)) {
    if (!constant_float(n.input(7)) || n.input(7)->type.static_dims() != std::vector<int64_t>{f.dirs, 3 * f.hidden})
      return refuse(why, "P is not a float32 constant [dirs, 3 * hidden]");
    const Tensor& p = n.input(7)->constant();
    f.peepholes.assign(p.data<float>(), p.data<float>() + p.numel());
  }
  return f;
}

}  // namespace kiln::ops
