// Where random integer inputs should lie, read off how the model uses them (kiln run and bench
// make random inputs for those not given): an index into a Gather stays below the gathered
// axis's extent; a value only ever turned into a float and used in arithmetic (an attention
// mask, say) is 0 or 1. Other integers take [0, 100).
#pragma once
#include <map>
#include <string>

namespace kiln::cli {

// Per integer input of the ONNX model at `path`, the exclusive upper bound of its random values
// (inputs without one are absent; a .kiln file or a model that fails to load gives none).
std::map<std::string, int64_t> integer_input_bounds(const std::string& path);

}  // namespace kiln::cli
