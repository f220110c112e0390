#include "runtime/input_check.h"

#include <kiln/error.h>

namespace kiln::runtime {

namespace {
// Checks dims against v's declared shape and binds its symbols, consistently across inputs.
// `got()` describes what was given, for an error only: a run checks its inputs every time, and
// a small model's whole run takes a few microseconds.
template <typename Got>
void bind_dims(const ir::Value& v, const std::vector<int64_t>& dims, const Got& got,
               std::map<std::string, int64_t>& bound, std::map<std::string, std::string>& bound_by) {
  auto what = [&] { return "input '" + v.name() + "'"; };
  if (v.type.rank() != static_cast<int>(dims.size()))
    throw Error(what() + ": expected shape " + v.type.str() + " (rank " + std::to_string(v.type.rank()) + "), got " +
                got());
  for (size_t d = 0; d < dims.size(); ++d) {
    const ir::Dim& want = v.type.dims[d];
    if (dims[d] < 0) throw Error(what() + ": dim " + std::to_string(d) + " is negative in " + got());
    if (want.is_static() && want.value != dims[d])
      throw Error(what() + ": expected shape " + v.type.str() + ", got " + got() + " (dim " + std::to_string(d) +
                  " must be " + std::to_string(want.value) + ")");
    if (want.is_symbolic()) {
      auto [it, fresh] = bound.emplace(want.symbol, dims[d]);
      if (fresh) {
        bound_by[want.symbol] = v.name();
      } else if (it->second != dims[d]) {
        throw Error(what() + ": dim " + std::to_string(d) + " ('" + want.symbol + "') is " + std::to_string(dims[d]) +
                    " but input '" + bound_by[want.symbol] + "' binds '" + want.symbol + "' to " +
                    std::to_string(it->second));
      }
    }
  }
}

std::string dims_str(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}
}  // namespace

std::map<std::string, int64_t> check_input_dims(const ir::Graph& g, const std::vector<std::vector<int64_t>>& dims) {
  if (dims.size() != g.inputs().size())
    throw Error("the model takes " + std::to_string(g.inputs().size()) + " inputs, got shapes for " +
                std::to_string(dims.size()));
  std::map<std::string, int64_t> bound;
  std::map<std::string, std::string> bound_by;
  for (size_t i = 0; i < dims.size(); ++i) {
    const ir::Value& v = *g.inputs()[i];
    if (!v.type.is_tensor() || v.type.is_sequence || !v.type.rank_known)
      throw Error("input '" + v.name() + "' is " + v.type.str() + ": only tensors of known rank take fixed shapes");
    bind_dims(v, dims[i], [&] { return "shape " + dims_str(dims[i]); }, bound, bound_by);
  }
  return bound;
}

std::map<std::string, int64_t> check_inputs(const ir::Graph& g, const std::vector<Tensor>& inputs) {
  if (inputs.size() != g.inputs().size())
    throw Error("the model takes " + std::to_string(g.inputs().size()) + " inputs, got " +
                std::to_string(inputs.size()));
  std::map<std::string, int64_t> bound;
  std::map<std::string, std::string> bound_by;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::Value& v = *g.inputs()[i];
    const Tensor& t = inputs[i];
    auto what = [&] { return "input '" + v.name() + "'"; };
    if (!t.defined()) throw Error(what() + ": no tensor given");
    if (t.is_none()) {
      if (!v.type.is_optional) throw Error(what() + ": expected " + v.type.str() + ", got an empty optional");
      continue;
    }
    if (t.is_sequence() != v.type.is_sequence)
      throw Error(what() + ": expected " + v.type.str() + ", got " + t.describe());
    if (v.type.dtype != DType::Undefined && t.dtype() != DType::Undefined && v.type.dtype != t.dtype())
      throw Error(what() + ": expected dtype " + dtype_name(v.type.dtype) + ", got " + dtype_name(t.dtype()));
    if (!v.type.rank_known || t.is_sequence()) continue;
    bind_dims(v, t.dims(), [&] { return t.describe(); }, bound, bound_by);
  }
  return bound;
}

}  // namespace kiln::runtime
