#include "runtime/input_check.h"

#include <kiln/error.h>

namespace kiln::runtime {

std::map<std::string, int64_t> check_inputs(const ir::Graph& g, const std::vector<Tensor>& inputs) {
  if (inputs.size() != g.inputs().size())
    throw Error("the model takes " + std::to_string(g.inputs().size()) + " inputs, got " +
                std::to_string(inputs.size()));
  std::map<std::string, int64_t> bound;
  std::map<std::string, std::string> bound_by;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::Value& v = *g.inputs()[i];
    const Tensor& t = inputs[i];
    const std::string what = "input '" + v.name() + "'";
    if (!t.defined()) throw Error(what + ": no tensor given");
    if (t.is_none()) {
      if (!v.type.is_optional) throw Error(what + ": expected " + v.type.str() + ", got an empty optional");
      continue;
    }
    if (t.is_sequence() != v.type.is_sequence)
      throw Error(what + ": expected " + v.type.str() + ", got " + t.describe());
    if (v.type.dtype != DType::Undefined && t.dtype() != DType::Undefined && v.type.dtype != t.dtype())
      throw Error(what + ": expected dtype " + dtype_name(v.type.dtype) + ", got " + dtype_name(t.dtype()));
    if (!v.type.rank_known || t.is_sequence()) continue;
    if (v.type.rank() != t.rank())
      throw Error(what + ": expected shape " + v.type.str() + " (rank " + std::to_string(v.type.rank()) +
                  "), got " + t.describe());
    for (int d = 0; d < t.rank(); ++d) {
      const ir::Dim& want = v.type.dims[d];
      if (want.is_static() && want.value != t.dim(d))
        throw Error(what + ": expected shape " + v.type.str() + ", got " + t.describe() + " (dim " +
                    std::to_string(d) + " must be " + std::to_string(want.value) + ")");
      if (want.is_symbolic()) {
        auto [it, fresh] = bound.emplace(want.symbol, t.dim(d));
        if (fresh) {
          bound_by[want.symbol] = v.name();
        } else if (it->second != t.dim(d)) {
          throw Error(what + ": dim " + std::to_string(d) + " ('" + want.symbol + "') is " + std::to_string(t.dim(d)) +
                      " but input '" + bound_by[want.symbol] + "' binds '" + want.symbol + "' to " +
                      std::to_string(it->second));
        }
      }
    }
  }
  return bound;
}

}  // namespace kiln::runtime
