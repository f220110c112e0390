// Runs an ir::Graph node by node on the reference kernels. Values are freed after their last
// use. Subgraphs (If/Loop/Scan) run through the same executor, seeing the enclosing graph's
// values as outer scope.
#pragma once
#include <kiln/tensor.h>

#include <unordered_map>
#include <vector>

#include "ir/graph.h"

namespace kiln::runtime {

using ValueMap = std::unordered_map<const ir::Value*, Tensor>;

class ReferenceExecutor {
 public:
  // `keep` values are not freed and are copied into *kept after the run.
  ReferenceExecutor(const ir::Graph& g, std::vector<const ir::Value*> keep = {});

  // inputs: one tensor per graph input, in order. Returns one tensor per graph output.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const ValueMap* outer = nullptr,
                          ValueMap* kept = nullptr) const;

 private:
  const ir::Graph& g_;
  std::vector<const ir::Value*> keep_;
  // For each node (by position), the values whose last use it is.
  std::vector<std::vector<const ir::Value*>> frees_;
};

}  // namespace kiln::runtime
