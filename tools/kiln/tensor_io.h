// Small CLI helpers: random inputs for a model's inputs and short printing of tensors.
#pragma once
#include <kiln/session.h>

#include <map>
#include <string>

namespace kiln::cli {

// A random tensor of the input's dtype and shape; symbolic dims take `dims[symbol]` or 1.
// Integers lie in [0, int_bound) (input_ranges.h says where a model's should).
Tensor random_input(const TensorInfo& info, const std::map<std::string, int64_t>& dims, uint32_t seed,
                    int64_t int_bound = 100);
// "float[1,1000] = [0.12, -0.5, ...]" with at most `count` values.
std::string preview(const Tensor& t, int count = 8);
// "[3: 9.81, 17: 4.2, ...]": the k largest values of the last axis of the first row (a float
// or integer tensor), with their indices, largest first.
std::string top_k(const Tensor& t, int k);

}  // namespace kiln::cli
