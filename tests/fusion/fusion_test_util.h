// Helpers for fusion tests: a graph builder with named single-output nodes (types come from
// shape inference, so the pattern rules see shapes), groups as lists of node names, and the
// partition invariants every result must satisfy.
#pragma once
#include <gtest/gtest.h>
#include <kiln/tensor.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fusion/indexed_forward_graph.h"
#include "fusion/partitioner.h"
#include "ir/graph.h"
#include "ops/core/infer_graph.h"

namespace kiln::fusion::testing {

struct Net {
  std::unique_ptr<ir::Graph> g = std::make_unique<ir::Graph>();
  explicit Net(int opset = 13) { g->opsets[""] = opset; }

  ir::Value* in(const std::string& name, std::vector<int64_t> dims) {
    return g->add_input(name, ir::TensorType::from_dims(DType::Float, dims));
  }
  ir::Value* sym_in(const std::string& name, std::vector<ir::Dim> dims) {
    return g->add_input(name, ir::TensorType(DType::Float, std::move(dims)));
  }
  ir::Value* weight(std::vector<int64_t> dims) {
    Tensor t(DType::Float, dims);
    return g->add_constant(g->unique_name("w"), std::move(t));
  }
  ir::Value* ints(std::vector<int64_t> v) {
    return g->add_constant(g->unique_name("i"), Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v));
  }
  // One node named `name` whose single output is also called `name`.
  ir::Value* op(const std::string& type, const std::string& name, std::vector<ir::Value*> ins, ir::Attributes attrs = {}) {
    ir::Value* o = g->add_value(name + "_out");
    g->add_node(type, std::move(ins), {o}, std::move(attrs), name);
    return o;
  }
  // 3x3 same-padding conv keeping the channel count.
  ir::Value* conv(const std::string& name, ir::Value* x, int64_t c) {
    return op("Conv", name, {x, weight({c, c, 3, 3})}, {{"pads", ir::Attribute::of_ints({1, 1, 1, 1})}});
  }
  void out(ir::Value* v) { g->add_output(v); }
  ir::Graph& infer() {
    ops::ShapeInference().run(*g);
    return *g;
  }
  ir::Node* node(const std::string& name) const {
    for (ir::Node* n : g->nodes())
      if (n->name() == name) return n;
    return nullptr;
  }
};

using Names = std::vector<std::vector<std::string>>;

inline Names names(const std::vector<Group>& groups) {
  Names r;
  for (const Group& grp : groups) {
    r.emplace_back();
    for (const ir::Node* n : grp.nodes) r.back().push_back(n->name());
  }
  return r;
}

// Every node in exactly one group, members in topological order, at most one anchor, and each
// group reads only values of graph inputs, constants, earlier groups or itself.
inline void expect_valid(const ir::Graph& g, const std::vector<Group>& groups, int max_group_size = 1 << 30) {
  std::map<const ir::Node*, size_t> group_of;
  std::map<const ir::Node*, size_t> position;
  const auto order = g.nodes();
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    EXPECT_LE(static_cast<int>(groups[gi].nodes.size()), max_group_size);
    int anchors = 0;
    for (size_t k = 0; k < groups[gi].nodes.size(); ++k) {
      const ir::Node* n = groups[gi].nodes[k];
      EXPECT_TRUE(group_of.emplace(n, gi).second) << n->name() << " is in two groups";
      if (k > 0) {
        EXPECT_LT(position.at(groups[gi].nodes[k - 1]), position.at(n)) << "group not in topological order";
      }
      if (node_pattern(*n) == ops::PatternKind::OutEWiseFusable) ++anchors;
    }
    EXPECT_LE(anchors, 1) << "two anchors in group " << gi;
  }
  EXPECT_EQ(group_of.size(), g.num_nodes()) << "some node is in no group";
  for (const ir::Node* n : order)
    for (const ir::Value* v : n->inputs()) {
      if (!v || !v->producer()) continue;
      ASSERT_TRUE(group_of.count(v->producer()));
      EXPECT_LE(group_of.at(v->producer()), group_of.at(n))
          << n->name() << " reads " << v->name() << " from a later group";
    }
}

}  // namespace kiln::fusion::testing
